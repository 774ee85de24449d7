"""`GeminiTools`: the mitmproxy addon (load it with `mitmdump -s addons/gemini_tools.py`).

mitmproxy's habit: several small addons, one concern each, sharing one session store. In hook order:
- Options (options.py): the `gtp_*` options, validated once;
- SharedStore (store_addon.py): `gtp_store`, memory or a Redis shared by several instances;
- Route (routing.py): `gtp_route`, for tests;
- Relay (relay_addon.py): relay turns take their request first;
- Rewrite (rewrite.py): which flows are touched (flow_selection.py), the session's tools and history;
- TextCalls (text_calls.py): tools rendered for, and calls parsed from, models that speak them as text;
- Capture (capture.py): functionCall parts captured from the answer as it streams through;
- InteractionsTraffic (interactions.py): the same for Interactions API calls (tools, placeholders, capture);
- JournalStart / JournalEnd (journal_addon.py): owned flows in the journal, before and after the others;
- Frontend (frontend.py): the aiohttp front-end in the same process.
"""

from proxy.intercept.capture import Capture
from proxy.intercept.frontend import Frontend
from proxy.intercept.interactions import InteractionsTraffic
from proxy.intercept.journal_addon import JournalEnd, JournalStart
from proxy.intercept.options import Options
from proxy.intercept.relay import RelayBroker
from proxy.intercept.relay_addon import Relay
from proxy.intercept.rewrite import Rewrite
from proxy.intercept.routing import Route
from proxy.intercept.store_addon import SharedStore
from proxy.intercept.text_calls import TextCalls
from proxy.store import MemoryStore
from proxy.store.base import SessionStore


class GeminiTools:
    def __init__(self, store: SessionStore | None = None) -> None:
        self.store: SessionStore = store or MemoryStore()
        self.relay = RelayBroker()
        self.options = Options()
        self.options.store = self.store
        self.frontend = Frontend(self.store, self.relay, self.options)
        # Route last: it reroutes a request only once every other addon has seen it as sent.
        self.addons = [self.options, SharedStore(self.store), JournalStart(self.options.recorder), Relay(self.relay),
                       Rewrite(self.store, self.options), TextCalls(self.options), Capture(self.store),
                       InteractionsTraffic(self.store), JournalEnd(self.options.recorder), self.frontend, Route()]

    @property
    def frontend_url(self) -> str | None:
        return self.frontend.url
