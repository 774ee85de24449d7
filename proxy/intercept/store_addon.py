"""`SharedStore`: the `gtp_store` option (declared in proxy/options.py) — where the addon and its
front-end keep sessions: this process's memory (the default) or a Redis shared with other instances
(open_store.py)."""

import logging
from typing import Any

from mitmproxy import ctx, exceptions

from proxy.store.entry_store import EntryStore
from proxy.store.open_store import check_store_url, open_store

log = logging.getLogger(__name__)


class SharedStore:
    def __init__(self, store: Any) -> None:
        self.store = store
        self._memory = store.backend if isinstance(store, EntryStore) else None

    def configure(self, updated: set[str]) -> None:
        if "gtp_store" not in updated:
            return
        url = ctx.options.gtp_store
        try:
            check_store_url(url)
        except ValueError as e:
            raise exceptions.OptionsError(f"gtp_store: {e}") from None
        if not isinstance(self.store, EntryStore):
            return  # a store handed in by the embedding code stays
        if url == "memory":
            if self._memory is not None:
                self.store.backend = self._memory
            return
        self.store.backend = open_store(url).backend
        log.info("sessions are kept in %s", url.split("@")[-1])  # never the password

    async def done(self) -> None:
        if isinstance(self.store, EntryStore):
            await self.store.close()
