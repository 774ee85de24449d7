"""Where the addon decides to touch a flow: a POST to a Gemini generate path on an intercepted
host, with a JSON body that passes the Gemini wire model. Everything else passes through untouched.

The host is the connection's real destination: the server name mitmproxy verifies upstream (the
client's TLS server name, whatever the CONNECT target or the address the app dialled; else the
request's host), never a Host header the client wrote: a request whose Host header names another
host than where it goes is not ours.

The decision is made once per flow (the first addon to ask); the result rides in flow.metadata.
"""

import contextlib
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache
from mitmproxy import http
from mitmproxy.net.http import url

from proxy.errors import ProxyError
from proxy.intercept import headers, text_history
from proxy.intercept.capture_calls import CallCapture
from proxy.intercept.relay import RelayTurn
from proxy.intercept.session_marker import take_marker
from proxy.intercept.targets import Target, classify
from proxy.pattern_rules import matches
from proxy.session.placeholders import DEFAULT_PLACEHOLDER
from proxy.wire.gemini import check_cloudcode_request, check_generate_request
from proxy.wire.gemini_keys import parse_camel, to_camel_request
from proxy.wire.json_body import parse_json

SELECTED = "gemini_tool_proxy.selected"  # the parsed request (or None: not ours)
META = "gemini_tool_proxy"                # FlowState of a flow whose answer is tapped
REFUSED = "gtp_refused"                  # FlowState of an owned flow the proxy answered with a refusal


@dataclass
class GeminiRequest:
    """A Gemini generate call the addon owns: its body, the inner request (unwrapped from Cloud Code)
    in camelCase, and the session it belongs to."""

    target: Target
    body: dict[str, Any]
    inner: dict[str, Any]
    model: str
    session: str | None
    marked: bool  # a <session:ID> marker was removed from the contents: the bytes must change
    # The contents as the app sent them, when they are text turns nothing changes (text_history.py):
    # then `inner` holds every other member and no "contents".
    contents_raw: bytes | None = None
    rest_raw: bytes | None = None  # with contents_raw: the request's other members as sent (a JSON object)


@dataclass
class FlowState:
    target: Target
    model: str
    session: str | None
    capture: CallCapture = field(default_factory=CallCapture)
    relay: RelayTurn | None = None


def select(flow: http.HTTPFlow, hosts: list[str] | tuple[str, ...], session_header: str,
           default_session: str | None, placeholder: str = DEFAULT_PLACEHOLDER) -> GeminiRequest | None:
    """The owned request, parsed once; None for every flow the addon must leave alone."""
    if SELECTED in flow.metadata:
        return flow.metadata[SELECTED]
    found = _parse(flow, hosts, placeholder)
    if found is not None:
        header = headers.pop(flow.request.headers, session_header.encode("utf-8", "surrogateescape").lower())
        found.session = header or found.session or default_session
    flow.metadata[SELECTED] = found
    return found


def destination(flow: http.HTTPFlow) -> str | None:
    """The server name the request really goes to, or None when its Host header names another.

    That is the name mitmproxy verifies upstream: the one a mode set (reverse:https://NAME), else the
    client's TLS server name, else the request's host. Inside a CONNECT tunnel, in transparent,
    WireGuard and local mode alike, mitmproxy dials the tunnel's address (or the IP the app dialled)
    but sends and verifies the client's SNI: a CONNECT to host A whose TLS names B reaches B's
    certificate holder, so it is B that decides."""
    name = flow.server_conn.sni or flow.client_conn.sni or flow.request.host
    host = name.lower().rstrip(".")
    req = flow.request  # its host_header, with the Host header looked up in one pass
    header = (req.is_http2 or req.is_http3) and req.authority or headers.get(req.headers, b"host")
    if header and header.lower().rstrip(".") != host:  # the same name as written: nothing to parse
        try:
            claimed = url.parse_authority(header, check=True)[0].lower().rstrip(".")
        except ValueError:
            return None
        if claimed != host:
            return None
    return host


def _parse(flow: http.HTTPFlow, hosts: list[str] | tuple[str, ...], placeholder: str) -> GeminiRequest | None:
    if flow.response or flow.error or not flow.live or flow.request.method != "POST":
        return None
    host = destination(flow)
    if host is None or not _intercepted(host, hosts):
        return None
    target = classify(flow.request.path)
    if target is None:
        return None
    raw = headers.content(flow.request) or b""
    if target.kind != "cloudcode":
        if (split := text_history.members(raw)) is not None:
            return _split(target, None, (target.model or "").removeprefix("models/"), *split, placeholder)
    elif (wrapped := text_history.members(raw, "request")) is not None and (
            split := text_history.members(wrapped[1])) is not None:
        try:  # Cloud Code's own members (model, project, prompt id) are few and change with each prompt
            outer = parse_json(wrapped[0])
            check_cloudcode_request({**outer, "request": {}})
        except (ProxyError, ValueError):
            return None
        return _split(target, outer, str(outer["model"]).removeprefix("models/"), *split, placeholder)
    try:  # the front-end's parser: orjson when that is exact, the limits (nesting, surrogates, NaN) checked
        body = parse_json(raw)
    except (ProxyError, ValueError):
        return None  # not ours to judge: Gemini will answer it
    if not isinstance(body, dict):
        return None
    raw_inner = body.get("request") if target.kind == "cloudcode" else body
    if not isinstance(raw_inner, dict):
        return None
    try:
        if target.kind == "cloudcode":
            check_cloudcode_request(body)
        inner = to_camel_request(raw_inner)
        check_generate_request(inner)
    except ProxyError:
        return None  # a shape Gemini will refuse with its own words
    model = (body.get("model") if target.kind == "cloudcode" else target.model) or ""
    model = str(model).removeprefix("models/")
    session, contents = take_marker(inner.get("contents") or [])
    if session or contents != inner.get("contents"):
        inner = {**inner, "contents": contents}
    return GeminiRequest(target, body, inner, model, session, session is not None)


# Host names looked at and whether gtp_intercept_hosts names them (with the hosts they were matched
# against: new options match again). A lookup costs a fraction of the patterns' expression on a flow
# whose code and data the CPU's caches no longer hold, which at an app's pace is every flow (issue 62).
_HOSTS: dict[str, tuple[Any, bool]] = {}
_HOSTS_MAX = 1024


def _intercepted(host: str, hosts: list[str] | tuple[str, ...]) -> bool:
    known = _HOSTS.get(host)
    if known is not None and known[0] is hosts:
        return known[1]
    found = matches(host, hosts)
    if len(_HOSTS) < _HOSTS_MAX or host in _HOSTS:
        _HOSTS[host] = (hosts, found)
    return found


# The members around the contents (tools, system instruction, generation config) are the same on
# every turn of a conversation: parsed and checked once per distinct text, not on every request,
# and shared read-only (Rewrite copies what it changes, session/tool_context.py).
# Bounded by the texts' length (their objects take about six times as much).
REST_CACHE_BYTES = 1024 * 1024
_Rest = tuple[int, dict[str, Any] | None, dict[str, Any] | None]  # (its text's length, body, inner); None: refused
_rests: LRUCache[bytes, _Rest] = LRUCache(REST_CACHE_BYTES, getsizeof=lambda rest: rest[0])


def _split(target: Target, outer: dict[str, Any] | None, model: str, rest: bytes, contents_raw: bytes,
           placeholder: str) -> GeminiRequest | None:
    """_parse for a body read as its contents and the rest (text_history.members); `outer`: Cloud
    Code's members around the request (None for the other bodies). The rest is parsed and checked once per text
    (above); the contents are kept as bytes when they are text turns nothing changes, else parsed and
    checked as _parse does (inside an object, so at the same depth)."""
    found = _rests.get(rest)
    if found is None:
        try:
            body = parse_json(rest)
            found = (len(rest), body, to_camel_request(body))
            check_generate_request(found[2])
        except (ProxyError, ValueError):
            found = (len(rest), None, None)
        with contextlib.suppress(ValueError):  # larger than the whole cache: parsed again next time
            _rests[rest] = found
    _, body, inner = found
    if body is None or inner is None:
        return None
    if text_history.untouched(contents_raw, model, placeholder):
        return GeminiRequest(target, _wrapped(outer, body), inner, model, None, False, contents_raw, rest)
    try:
        contents = parse_camel(b"".join((b'{"contents":', contents_raw, b"}")))["contents"]  # (one copy, not two)
        check_generate_request({"contents": contents})
    except (ProxyError, ValueError):
        return None
    session, kept = take_marker(contents)
    return GeminiRequest(target, _wrapped(outer, {**body, "contents": contents}), {**inner, "contents": kept}, model,
                         session, session is not None)


def _wrapped(outer: dict[str, Any] | None, request: dict[str, Any]) -> dict[str, Any]:
    """The body as GeminiRequest.body holds it: Cloud Code's wrapper around the request, or the request."""
    return request if outer is None else {**outer, "request": request}
