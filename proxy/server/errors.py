"""Render errors in the caller's own protocol: each protocol's record (server/protocol.py) names its
paths and its error object.

Every answer the front-end gives — its own refusals, Gemini's errors, aiohttp's limit errors,
unknown paths and methods, and the unexpected — goes through here, so none is ever plain text.
"""

import asyncio
import logging
import typing
from typing import Any

from aiohttp import web
from annotated_types import MinLen
from pydantic import BaseModel, TypeAdapter, ValidationError

from proxy import malloc_tuning
from proxy.errors import ProxyError
from proxy.journal import exchange
from proxy.server.auth import SCOPE
from proxy.server.context import CONTEXT
from proxy.server.protocol import error_body
from proxy.server.workers import worker_processes
from proxy.wire.json_body import (
    check_tools,
    count_tools_in,
    may_hold_too_many_tools,
    param_path,
    parse_json,
    refuse_too_many_tools,
)
from proxy.wire.resent_items import ResentItems
from proxy.wire.shared_tools import SharedTools, parse_with_tools

log = logging.getLogger(__name__)

def render(request: web.Request, e: ProxyError) -> web.Response:
    return web.json_response(error_body(request, e), status=e.status, headers=e.headers)


async def answered(request: web.Request, inner: Any, handler: Any) -> web.StreamResponse:
    """`inner(request, handler)`'s answer, or its failure rendered in the caller's protocol; counted in
    flight while it runs (a shutdown waits for it), refused once the shutdown has begun."""
    in_flight = request.app[CONTEXT].in_flight
    if in_flight.closing:
        return render(request, in_flight.refusal())
    try:
        with in_flight.track():
            return await _handle(request, inner, handler)
    finally:
        malloc_tuning.trim_if_due(in_flight.idle)  # its parsed history is free now (malloc_tuning.transient)


async def _handle(request: web.Request, inner: Any, handler: Any) -> web.StreamResponse:
    try:
        return await inner(request, handler)
    except asyncio.CancelledError as e:  # a shutdown ends this request (anything else re-raises)
        return render(request, request.app[CONTEXT].in_flight.absorb(e))
    except ProxyError as e:
        log.info("%s %s -> %s: %s", request.method, request.path, e.status, e.message)
        exchange.failed(e)
        return render(request, e)
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[CONTEXT].max_body
        return render(request, ProxyError(f"Request body too large: the limit is {limit} bytes.", status=413))
    except web.HTTPException as e:
        if e.status < 400:
            raise
        what = {404: f"Unknown path {request.path}.", 405: f"Method {request.method} is not allowed on {request.path}."}
        return render(request, ProxyError(what.get(e.status, e.reason or "error"), status=e.status,
                                          type="not_found_error" if e.status == 404 else "invalid_request_error"))
    except ConnectionError as e:
        log.info("%s %s: the client went away", request.method, request.path)  # expected, no traceback
        e.__traceback__ = e.__context__ = e.__cause__ = None  # no cycle keeping the request's frames alive
        raise
    except Exception as e:
        log.exception("unexpected error on %s %s", request.method, request.path)
        exchange.failed(e)
        return render(request, ProxyError("The proxy failed while handling this request; see its log.",
                                          status=500, type="server_error"))


# A body larger than this is parsed and checked in a worker thread, not on the event loop.
ON_LOOP_BYTES = 256 * 1024
# A body larger than this that may declare too many tools has them counted in a worker process
# first: parsing 26 MB of small objects holds the GIL for about 0.4 s on a 2-core machine.
ELSEWHERE_BYTES = 4 * 1024 * 1024


async def read_json(request: web.Request, shared_tools: bool = False, history: str | None = None) -> Any:
    """The request body as JSON, within the edge's limits (wire/json_body.py) and the client
    timeout (a body trickled byte by byte ties up nothing for longer). `shared_tools`: the route
    never changes its tools, so a tools text seen before may be shared (wire/shared_tools.py).
    `history`: the member holding the history, which the route never changes either: an item the
    same client sent before is parsed and checked no more (wire/resent_items.py)."""
    if request.content.is_eof():  # the whole body came with the headers (most do): nothing to wait for
        raw = await request.read()  # (a timer set and cancelled cost 5 us in a loaded loop)
    else:
        timeout = request.app[CONTEXT].limits.client_timeout
        try:
            async with asyncio.timeout(timeout):
                raw = await request.read()
        except TimeoutError:
            raise ProxyError(f"The request body did not arrive within {timeout:g} seconds.", status=408,
                             code="request_timeout", headers={"Connection": "close"}) from None
    body = await parse_body(raw, shared_tools, (history, request.get(SCOPE) or "") if history else None)
    if len(raw) >= malloc_tuning.IDLE_TRIM_BYTES:
        malloc_tuning.transient(len(raw))  # parsed into objects that are freed when the request ends
    ex = exchange.CURRENT.get()
    if ex is not None:
        ex.request_body = raw  # well-formed JSON, as aiohttp read it: the journal keeps it as it is
    return body


def kept_scope(request: web.Request, history: Any) -> str | None:
    """The client's scope when `history` (the body's history member as read_json read it) came as its
    kept resent items: input_to_contents' `scope`, whose conversion then continues the client's last."""
    return (request.get(SCOPE) or "") if type(history) is ResentItems else None


async def parse_body(raw: bytes, shared_tools: bool = False, items: tuple[str, str] | None = None) -> Any:
    """A JSON body (an HTTP request's, a WebSocket message's) parsed and checked within the edge's
    limits, big ones off the event loop (whose tools and items are never shared: the caches are the
    loop's). `items`: parse_with_tools'."""
    if len(raw) <= ON_LOOP_BYTES:
        return parse_with_tools(raw, _parsed, items) if shared_tools else _parsed(raw)
    if len(raw) > ELSEWHERE_BYTES and may_hold_too_many_tools(raw):
        # Materializing this many objects holds the GIL (a thread would not help): count the tools in
        # a worker process first, and refuse without ever building them here.
        refuse_too_many_tools(await asyncio.get_running_loop().run_in_executor(worker_processes(), count_tools_in,
                                                                              raw))
    return await asyncio.to_thread(_parsed, raw)  # a big body: other clients keep their share of the loop


def _parsed(raw: bytes) -> Any:
    body = parse_json(raw)
    check_tools(body, len(raw))
    return body


def validate[M: BaseModel](model: type[M], body: Any) -> M:
    """Validate a request body, turning the first pydantic error into OpenAI's 400 wording."""
    if not isinstance(body, dict):
        raise ProxyError("The request body must be a JSON object.", code="invalid_type")
    for name, value in body.items():
        if type(value) is ResentItems and _element_check(model, name) is not None:
            return _resent_checked(model, body, name, value)
    return _with_tools(model, body)


def _with_tools[M: BaseModel](model: type[M], body: dict[str, Any], value: dict[str, Any] | None = None) -> M:
    """`value` (the body, or the body with a stand-in for its history) checked, its tools only once
    per wire model (SharedTools)."""
    value = body if value is None else value
    shared = body.get("tools")
    if type(shared) is not SharedTools or "tools" not in model.model_fields:
        return _checked(model, value, body)
    known = shared.checked.get(model)
    if known is None:
        req = _checked(model, value, body)
        shared.checked[model] = req.tools  # type: ignore[attr-defined]
        return req
    # These tools passed this model's check before: only the rest of the body is checked.
    req = _checked(model, {k: v for k, v in value.items() if k != "tools"}, body)
    req.tools = known  # type: ignore[attr-defined]
    return req


_ELEMENT_CHECKS: dict[tuple[type, str], TypeAdapter[list[Any]] | None] = {}


def _element_check(model: type[BaseModel], name: str) -> TypeAdapter[list[Any]] | None:
    """The check of a list of `model.name`'s elements, when that field is a plain `list[X]` (Chat's and
    Anthropic's messages), at most "not empty" (which its first item standing for it keeps);
    None otherwise (Responses' `input` is checked item by item by parse_input)."""
    key = (model, name)
    if key not in _ELEMENT_CHECKS:
        field = model.model_fields.get(name)
        plain = field is not None and typing.get_origin(field.annotation) is list and all(
            type(m) is MinLen and m.min_length <= 1 for m in field.metadata)
        _ELEMENT_CHECKS[key] = TypeAdapter(field.annotation) if plain else None  # type: ignore[union-attr]
    return _ELEMENT_CHECKS[key]


def _resent_checked[M: BaseModel](model: type[M], body: dict[str, Any], name: str, sent: ResentItems) -> M:
    """A body whose history (`name`) is ResentItems: the items this model checked before come from their
    `checked`, the new ones are checked together, and the rest of the body with its first item standing
    for the history (a list's own constraints, such as at least one message, hold for it). Any error:
    the whole body is checked, which names it as always."""
    new = [i for i, kept in enumerate(sent.kept) if model not in kept.checked]
    if not sent or (new and not _checked_items(model, name, sent, new)):
        return _with_tools(model, body)
    req = _with_tools(model, body, {**body, name: sent[:1]})
    setattr(req, name, [kept.checked[model] for kept in sent.kept])
    return req


def _checked_items(model: type[BaseModel], name: str, sent: ResentItems, new: list[int]) -> bool:
    """Check the new items; each passed item's checked value is kept in its `checked`."""
    try:
        values = _element_check(model, name).validate_python([sent[i] for i in new])  # type: ignore[union-attr]
    except ValidationError:
        return False
    for i, value in zip(new, values, strict=True):
        sent.kept[i].checked[model] = value
    return True


def _checked[M: BaseModel](model: type[M], value: dict[str, Any], body: dict[str, Any] | None = None) -> M:
    """`value` checked by `model`; the first error in OpenAI's wording, its path read in `body`."""
    body = value if body is None else body
    try:
        return model.model_validate(value)
    except ValidationError as e:
        err = max(e.errors(), key=lambda x: len(x["loc"]))  # the most specific of a union's errors
        where = param_path(body, err["loc"])
        if err["type"] == "missing":
            raise ProxyError(f"Missing required parameter: '{where}'.", param=where,
                             code="missing_required_parameter") from None
        raise ProxyError(f"Invalid type for '{where}': {err['msg']}.", param=where, code="invalid_type") from None


