"""`GeminiTools`: the mitmproxy addon (load it with `mitmdump -s addons/gemini_tools.py`).

mitmproxy's habit: several small parts, one concern each, sharing one session store. In hook order:
- Options (options.py): the `gtp_*` options, validated once;
- SharedStore (store_addon.py): `gtp_store`, memory or a Redis shared by several instances;
- JournalStart / JournalEnd (journal_addon.py): owned flows in the journal, before and after the others;
- Relay (relay_addon.py): relay turns take their request first;
- Rewrite (rewrite.py): which flows are touched (flow_selection.py), the session's tools and history;
- QuotaWatch (quota.py): Antigravity's and Code Assist's quota, read from the app's account calls;
- TextCalls (text_calls.py): tools rendered for, and calls parsed from, models that speak them as text;
- Capture (capture.py): functionCall parts captured from the answer as it streams through;
- InteractionsTraffic (interactions.py): the same for Interactions API calls (tools, placeholders, capture);
- Frontend (frontend.py): the aiohttp front-end in the same process;
- Route (routing.py): `gtp_route`, for tests.

The parts are not registered with mitmproxy one by one: `GeminiTools` is the one addon mitmproxy
sees, and it calls its parts' hooks in that order. mitmproxy looks every hook of every flow up on
every registered addon and its children (a `getattr`, a generator and the hook's arguments rebuilt
from its dataclass fields for each), which cost about 40 % of the addon's CPU per request when the
parts were eleven addons. An exception in a part stops the rest of that hook, as it did for the
children of one addon.
"""

import inspect
from collections.abc import Callable
from typing import Any

from mitmproxy import http
from mitmproxy.proxy import server_hooks

from proxy.intercept.capture import Capture
from proxy.intercept.frontend import Frontend
from proxy.intercept.interactions import InteractionsTraffic
from proxy.intercept.journal_addon import JournalEnd, JournalStart
from proxy.intercept.options import Options
from proxy.intercept.quota import QuotaWatch
from proxy.intercept.relay import RelayBroker
from proxy.intercept.relay_addon import Relay
from proxy.intercept.rewrite import Rewrite
from proxy.intercept.routing import Route
from proxy.intercept.store_addon import SharedStore
from proxy.intercept.text_calls import TextCalls
from proxy.store import MemoryStore
from proxy.store.base import SessionStore

# Every hook a part implements; GeminiTools defines each (tests/test_addon_hooks.py checks the list).
HOOKS = ("load", "configure", "running", "done", "request", "responseheaders", "response", "error", "server_connect")
Hook = tuple[Callable[..., Any], bool]  # a part's hook, and whether it is a coroutine function


class GeminiTools:
    def __init__(self, store: SessionStore | None = None) -> None:
        self.store: SessionStore = store or MemoryStore()
        self.relay = RelayBroker()
        self.options = Options()
        self.options.store = self.store
        self.frontend = Frontend(self.store, self.relay, self.options)
        # Route last: it reroutes a request only once every other part has seen it as sent.
        o = self.options
        self.parts = [o, SharedStore(self.store), JournalStart(o.recorder), Relay(self.relay, o),
                      Rewrite(self.store, o), QuotaWatch(o), TextCalls(o), Capture(self.store),
                      InteractionsTraffic(self.store, o),
                      JournalEnd(o.recorder), self.frontend, Route(o)]
        self._hooks: dict[str, tuple[Hook, ...]] = {
            name: tuple((f, inspect.iscoroutinefunction(f)) for f in (getattr(p, name, None) for p in self.parts)
                        if f is not None) for name in HOOKS}

    @property
    def frontend_url(self) -> str | None:
        return self.frontend.url

    def _sync(self, name: str, *args: Any) -> None:
        for hook, _ in self._hooks[name]:
            hook(*args)

    async def _async(self, name: str, *args: Any) -> None:
        for hook, is_async in self._hooks[name]:
            if is_async:
                await hook(*args)
            else:
                hook(*args)

    def load(self, loader: Any) -> None:
        self._sync("load", loader)

    def configure(self, updated: set[str]) -> None:
        self._sync("configure", updated)

    async def running(self) -> None:
        await self._async("running")

    async def done(self) -> None:
        await self._async("done")

    async def request(self, flow: http.HTTPFlow) -> None:
        await self._async("request", flow)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        self._sync("responseheaders", flow)

    async def response(self, flow: http.HTTPFlow) -> None:
        await self._async("response", flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._sync("error", flow)

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        self._sync("server_connect", data)
