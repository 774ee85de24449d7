"""One client protocol as the front-end composes it: a typed record each protocol's folder registers
(its `protocol.py`), so the composition root (front/app.py) and the middlewares read what differs
between protocols from named fields instead of path tests and hand-ordered tuples.

The order of `front.app.PROTOCOLS` is the one order there is: routes are added in it (Gemini's
catch-all last), and a path's protocol is the first whose `owns` claims it (Interactions' paths lie
inside Gemini's, so it comes first). A path no protocol claims answers in OpenAI's shape.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

from proxy.errors import ProxyError, openai_error_body

Limits = Literal["openai", "anthropic", "gemini"]


@dataclass(frozen=True, kw_only=True)
class ClientProtocol:
    name: str
    add_routes: Callable[[web.Application], None]
    owns: Callable[[str], bool]  # the paths that answer in this protocol's shape
    error_body: Callable[[ProxyError], dict[str, Any]]  # its error object
    limits: Limits  # whose rate-limit headers and refusal it gets (server/context.py, Context.admit)
    # Whether a streamed turn asks Gemini for streamed call arguments (partialArgs, where the model has
    # them: model_rules.streams_arguments). Only protocols whose events show arguments as they come do.
    streams_arguments: bool
    request_id_header: str | None = None  # a second header carrying x-request-id, where its SDKs look
    # Whether the caller's User-Agent / x-goog-api-client go upstream (Gemini-native callers only).
    forwards_client_identity: bool = False
    tasks: web.AppKey[dict[str, Any]] | None = None  # its background runs, ended at shutdown


def openai_paths(*prefixes: str) -> Callable[[str], bool]:
    return lambda path: path.startswith(prefixes)


PROTOCOLS = web.AppKey("protocols", tuple)  # the registered records, in front.app.PROTOCOLS' order
PROTOCOL = web.RequestKey("protocol", ClientProtocol)  # a request's, once looked up (protocol_of)


def protocol_of(request: web.Request) -> ClientProtocol | None:
    """The protocol whose shape the request's answers take (None: no protocol claims the path)."""
    found = request.get(PROTOCOL)
    if found is None:
        path = request.path
        found = next((p for p in request.app.get(PROTOCOLS, ()) if p.owns(path)), None)
        if found is not None:
            request[PROTOCOL] = found
    return found


def error_body(request: web.Request, e: ProxyError) -> dict[str, Any]:
    protocol = protocol_of(request)
    return protocol.error_body(e) if protocol is not None else openai_error_body(e)
