"""Where a client presents its key, read once for the front-end's authentication (server/auth.py)
and the journal's record of an exchange (journal/exchange.py), which stand on different floors."""

from collections.abc import Mapping


def key_in(headers: Mapping[str, str], query_key: str | None) -> str | None:
    """The key in a client's usual places: `headers` (looked up by lower-case name) and the query's `key`: also
    what the journal reads of a finished exchange (journal/exchange.py)."""
    auth = headers.get("authorization") or ""
    if auth[:7].lower() == "bearer " and auth[7:].strip():
        return auth[7:].strip()
    return headers.get("x-goog-api-key") or headers.get("x-api-key") or query_key or None
