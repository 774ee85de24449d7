"""Per-session state shared by the front-end and (later) the MITM addon."""

from proxy.store.base import SessionStore, StoredResponse
from proxy.store.memory import MemoryStore

__all__ = ["MemoryStore", "SessionStore", "StoredResponse"]
