"""Front-end authentication: who is calling, and which sessions are theirs.

With no keys configured the front-end is a loopback tool for one user (the CLI refuses a
non-loopback bind then, unless told `--allow-unauthenticated`). With keys, every route but
`/healthz`, `/readyz`, `/favicon.ico` and the inspector's own files needs one, in the header the caller's protocol
uses (`Authorization: Bearer`, `x-goog-api-key`, `?key=`; the inspector takes no `?key=`); the key
then only admits the client, and Gemini is called with the server's own key. Each key is a
principal: its sessions, stored responses and conversations live under a scope derived from the
key (`c-` + 12 hex digits of its SHA-256, the same on every instance), so two clients never share
`default` and never see each other's state.
"""

import hashlib
import hmac
import ipaddress
import os
import re
from collections.abc import Iterable
from pathlib import Path

from aiohttp import web

from proxy.defaults import CLIENT_KEYS_ENV as KEYS_ENV  # noqa: E402 (the options' default)
from proxy.errors import ProxyError
from proxy.journal import exchange
from proxy.signatures.carrier_keys import CarrierKeys
from proxy.wire.client_key import key_in

SESSION_NAME = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")  # as session markers spell them
SCOPED_NAME = re.compile(r"c-[0-9a-f]{12}:")  # scoped_session's names for keyed clients (scope_of)
# A key shorter than this is refused: guessable keys on a network port spend the operator's quota.
MIN_KEY_LENGTH = 16


def scope_of(key: str) -> str:
    return "c-" + hashlib.sha256(key.encode()).hexdigest()[:12]


class ClientKeys:
    """The keys that admit clients; looked up by digest, compared in constant time."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._by_digest: dict[bytes, str] = {}
        self._cookies: tuple[bytes, dict[str, str]] = (b"", {})  # (the secret, cookie -> scope) last used
        for key in keys:
            if len(key) < MIN_KEY_LENGTH:
                raise ValueError(f"an API key must be at least {MIN_KEY_LENGTH} characters "
                                 f"(one given has {len(key)})")
            self._by_digest[hashlib.sha256(key.encode()).digest()] = scope_of(key)

    def __bool__(self) -> bool:
        return bool(self._by_digest)

    def __len__(self) -> int:
        return len(self._by_digest)

    def scope(self, presented: str | None) -> str | None:
        """The presented key's scope, or None when it admits no one."""
        if not presented:
            return None
        digest = hashlib.sha256(presented.encode()).digest()
        for known, scope in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return scope
        return None


    def cookie_for(self, key: str, secret: bytes) -> str | None:
        """The inspector's sign-in cookie for a key this admits: an HMAC of the key's digest under
        `secret` (cookie_secret), so not the key, and void once the secret changes."""
        return _cookie(secret, hashlib.sha256(key.encode()).digest()) if self.scope(key) is not None else None

    def cookie_scope(self, cookie: str | None, secret: bytes) -> str | None:
        if not cookie:
            return None
        if self._cookies[0] != secret:
            self._cookies = (secret, {_cookie(secret, d): scope for d, scope in self._by_digest.items()})
        for known, scope in self._cookies[1].items():
            if hmac.compare_digest(known, cookie):
                return scope
        return None


def _cookie(secret: bytes, digest: bytes) -> str:
    return hmac.new(secret, digest, hashlib.sha256).hexdigest()


def cookie_secret(carrier: CarrierKeys) -> bytes:
    """The inspector cookies' secret: from the sealing carrier key, the same on every instance that
    shares the carrier keys; `gemini-tool-proxy carrier-key --rotate` and a restart sign every
    browser out without changing a client key."""
    return carrier.derive(b"inspect sign-in")


INSPECT_COOKIE = "gtp_inspect"
COOKIE_SECRET = web.AppKey("cookie_secret", bytes)  # the app's cookie_secret (make_app)


def load_keys(keys: Iterable[str] = (), keys_file: str | None = None, env: dict[str, str] | None = None) -> ClientKeys:
    """Keys from `--api-key`, a keys file (one per line, `#` comments) and `$GTP_API_KEYS`
    (comma or whitespace separated). A bad file or short key is a ValueError naming it."""
    found = [k.strip() for k in keys if k.strip()]
    if keys_file:
        try:
            text = Path(keys_file).read_text()
        except OSError as e:
            raise ValueError(f"cannot read the API keys file {keys_file}: {e.strerror or e}") from None
        found += [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    found += re.split(r"[\s,]+", (env if env is not None else os.environ).get(KEYS_ENV, "").strip())
    return ClientKeys(k for k in found if k)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def refuse_open_bind(host: str, keys: ClientKeys, allow_unauthenticated: bool, flag: str) -> str | None:
    """The message that stops a start-up binding `host` with no keys, or None when it may go on."""
    if keys or allow_unauthenticated or is_loopback(host):
        return None
    return (f"refusing to listen on {host} without authentication: anyone who reaches it could spend the "
            f"operator's Gemini key and read every session. Give client keys (--api-key, --api-keys-file or "
            f"${KEYS_ENV}), bind 127.0.0.1, or pass {flag} if something in front of it authenticates.")


def presented_key(request: web.BaseRequest) -> str | None:
    """The key in the caller's usual place: `Authorization: Bearer` (OpenAI, Claude Code), `x-goog-api-key`
    or `?key=` (Gemini), `x-api-key` (the anthropic SDKs)."""
    return key_in(request.headers, request.query.get("key"))


SCOPE = web.RequestKey("scope", str)  # the authenticated client's scope (absent when auth is off)
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/favicon.ico"})  # (the favicon: no content, routes.favicon)


def authenticate(request: web.Request, keys: ClientKeys, secret: bytes = b"") -> None:
    """Admit the request or raise a 401 (rendered in the caller's protocol: errors.answered).
    The inspector takes a key in a header or its sign-in cookie (under `secret`), never in its URL:
    a URL stays in the browser's history and in logs."""
    if not keys or request.path in OPEN_PATHS or request.path.startswith("/inspect/static/"):
        return  # the health checks, and the inspector's own files (the sign-in page's style: no data)
    inspector = request.path.startswith("/inspect")
    presented = key_in(request.headers, None) if inspector else presented_key(request)
    if inspector and presented is None:
        scope = keys.cookie_scope(request.cookies.get(INSPECT_COOKIE), secret)  # a browser signed in
        if scope is not None:
            admit(request, scope)
            return
        if request.path == "/inspect":
            return  # the sign-in form, which takes the key it posts (inspect/routes.py)
    scope = keys.scope(presented)
    if scope is None:
        given = presented is not None
        where = ("'Authorization: Bearer KEY' (or sign in at /inspect; the inspector takes no key in its URL)"
                 if inspector else "'Authorization: Bearer KEY', 'x-goog-api-key' or '?key='")
        raise ProxyError("Incorrect API key provided." if given else f"Missing API key: send it as {where}.",
                         status=401, code="invalid_api_key", type="invalid_request_error")
    admit(request, scope)


def admit(request: web.Request, scope: str) -> None:
    """The client's scope, for the routes (request[SCOPE]) and for the request's exchange in the
    journal (set there now: reading it back from the request costs more than the journal's own work)."""
    request[SCOPE] = scope
    ex = exchange.CURRENT.get()
    if ex is not None:
        ex.scope = scope


def scoped_session(request: web.Request, name: str, param: str) -> str:
    """The store's name for a client's session: the client's scope, then the name it used."""
    if not SESSION_NAME.fullmatch(name):
        raise ProxyError(f"Invalid session name {name[:80]!r}: 1 to 128 letters, digits or '_.:-'.",
                         param=param, code="invalid_value")
    scope = request.get(SCOPE)
    if not scope and SCOPED_NAME.match(name):
        raise ProxyError(f"Invalid session name {name[:80]!r}: names 'c-' + 12 hex digits + ':' are the sessions of "
                         "clients with keys, which a client without one cannot name.", param=param,
                         code="invalid_value")
    return f"{scope}:{name}" if scope else name
