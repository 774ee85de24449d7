"""Who may drive the front-end from a browser: the Host it is reached by, the page that sends a
request (Origin, Sec-Fetch-Site), and what a JSON route's body is declared to be.

A keyless loopback proxy is one user's tool, and every page that user opens runs next to it. Three
checks keep those pages out, before any handler runs (app._admitted):
- Host: on a loopback bind only loopback names are served (localhost, *.localhost, 127.0.0.0/8,
  [::1], any port) and the `--allowed-host` patterns; DNS rebinding (attacker.example resolving to
  127.0.0.1) then reaches nothing (421). On a non-loopback bind the operator chose the network:
  any Host, unless `--allowed-host` names some (then those, the bind address and loopback names).
- Origin: a request a page sends carries the page's origin; one not this server's own (its host:port
  equal to the request's Host) nor an `--allowed-origin` is refused (403), as is a request a browser
  marks `Sec-Fetch-Site: cross-site` or `same-site` (another port of localhost is same-site) without
  such an Origin (but a link opening the inspector page in a tab). `Origin: null` is refused unless the
  browser says the request is same-origin (a form on a no-referrer page posts with `null`; a page
  cannot forge Sec-Fetch-Site). Non-browser clients send neither.
- Content-Type: a body a JSON route parses must say it is JSON (`application/json`,
  `application/*+json`), or it is refused (415): `text/plain`, form bodies and a Blob without a type
  are what a page may send without asking the server first (a CORS "simple request").
"""

import fnmatch
import functools
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from proxy.errors import ProxyError
from proxy.server.auth import is_loopback

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# Paths whose bodies are not JSON: google-genai's resumable upload sends the file's bytes as they are.
RAW_BODY_PREFIXES = ("/upload/", "/download/")
SIGN_IN = "/inspect"  # the inspector's sign-in form posts here (inspect/routes.py): a form, not JSON
REFUSED_SITES = frozenset({"cross-site", "same-site"})


@functools.lru_cache(maxsize=256)
def split_host(value: str) -> str:
    """The host name of a Host header (or an origin's authority), lower-case, without port or final dot."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    name, colon, port = value.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        value = name
    return value.rstrip(".")


@functools.lru_cache(maxsize=256)  # asked on every request, with the few Host values a proxy sees
def is_loopback_name(host: str) -> bool:
    """A name a browser only ever resolves to this machine: localhost and *.localhost (RFC 6761, as
    Chromium and Firefox do), or a loopback address."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def normal_origin(text: str) -> str:
    """An origin as browsers send it: scheme://host[:port], lower-case, no path. ValueError otherwise."""
    value = text.strip().lower().rstrip("/")
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("http", "https") or not rest or any(c in rest for c in "/?#@ "):
        raise ValueError(f"an allowed origin is scheme://host[:port], such as https://app.example, not {text!r}")
    return value


def is_json_type(content_type: str) -> bool:
    """application/json or application/*+json, parameters (charset) aside."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))


@dataclass(frozen=True)
class RequestGuard:
    """The front-end's Host and Origin allow-lists (from `--allowed-host`, `--allowed-origin` and the
    bind address); `any_host` when the operator bound beyond loopback and named no host."""

    hosts: tuple[str, ...] = ()
    origins: frozenset[str] = frozenset()
    any_host: bool = False

    @classmethod
    def configured(cls, bind: str, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> "RequestGuard":
        patterns = tuple(h.strip().lower().rstrip(".") for h in hosts if h.strip())
        if not is_loopback(bind) and bind not in ("", "0.0.0.0", "::"):
            patterns += (split_host(bind),) if patterns else ()
        return cls(patterns, frozenset(normal_origin(o) for o in origins if o.strip()),
                   any_host=(not patterns and not is_loopback(bind)) or "*" in patterns)

    def host_allowed(self, host: str | None) -> bool:
        if self.any_host or host is None:  # no Host at all: not a browser (every browser sends one)
            return True
        name = split_host(host)
        return is_loopback_name(name) or any(fnmatch.fnmatchcase(name, p) for p in self.hosts)

    def refusal(self, method: str, path: str, headers: Mapping[str, str], has_body: bool) -> ProxyError | None:
        """Why the request must not reach a handler, or None."""
        host = headers.get("host")
        if not self.host_allowed(host):
            return ProxyError(f"This proxy does not serve the host {split_host(host or '')[:100]!r}: it answers to "
                              "localhost, loopback addresses and its --allowed-host names only (a page on another name "
                              "reaching it is DNS rebinding). Add a name with --allowed-host if it fronts this proxy.",
                              status=421, code="misdirected_request")
        origin = headers.get("origin")
        site = headers.get("sec-fetch-site", "").lower()
        if origin is not None:
            if not (self._origin_allowed(origin, host) or (origin == "null" and site == "same-origin")):
                return ProxyError(f"Requests from the web page at {origin[:100]!r} are refused: a page may not drive "
                                  "this proxy unless its origin is allowed (--allowed-origin).", status=403,
                                  code="origin_not_allowed", type="permission_error")
        elif site in REFUSED_SITES and not _opens_page(method, path, headers):
            return ProxyError("Requests a browser sends for another site's page are refused (Sec-Fetch-Site: "
                              f"{headers['sec-fetch-site'][:20]}).", status=403, code="origin_not_allowed",
                              type="permission_error")
        if method in BODY_METHODS and path != SIGN_IN and not path.startswith(RAW_BODY_PREFIXES):
            kind = headers.get("content-type")
            if (has_body or kind is not None) and not is_json_type(kind or ""):
                return ProxyError(f"The request body must be JSON, sent with 'Content-Type: application/json' (this "
                                  f"one came as {(kind or 'no Content-Type')[:100]!r}).", status=415,
                                  code="unsupported_media_type")
        return None

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        try:
            normal = normal_origin(origin)
        except ValueError:
            return False  # "null" (a sandboxed frame, a file:// page, a no-referrer page's form) or worse
        if normal in self.origins:
            return True
        return host is not None and normal.partition("://")[2] == host.strip().lower()


def _opens_page(method: str, path: str, headers: Mapping[str, str]) -> bool:
    """A link on another site opening the inspector in a tab: the page it gets is the user's to read, not
    the linking site's (and its SameSite=Strict cookie stays behind, so it shows the sign-in form)."""
    return method == "GET" and path == SIGN_IN and headers.get("sec-fetch-mode", "").lower() == "navigate"
