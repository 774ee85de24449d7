"""Render errors in the caller's own protocol: OpenAI's error object or Gemini's."""

import json
import logging
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ValidationError

from proxy.errors import ProxyError, UpstreamError
from proxy.server.context import CONTEXT

log = logging.getLogger(__name__)

_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "UNAVAILABLE",
                  503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
BAD_JSON = ("We could not parse the JSON body of your request. The proxy expects a JSON payload, but what was "
            "sent was not valid JSON.")


def is_gemini_path(path: str) -> bool:
    return path.startswith("/v1/gemini") or ":generateContent" in path or ":streamGenerateContent" in path


def openai_error(e: ProxyError) -> web.Response:
    body = {"error": {"message": e.message, "type": e.type, "param": e.param, "code": e.code}}
    return web.json_response(body, status=e.status)


def gemini_error(e: ProxyError) -> web.Response:
    if isinstance(e, UpstreamError) and e.gemini_error:
        return web.json_response({"error": e.gemini_error}, status=e.status)
    body = {"error": {"code": e.status, "message": e.message, "status": _GEMINI_STATUS.get(e.status, "UNKNOWN")}}
    return web.json_response(body, status=e.status)


def render(request: web.Request, e: ProxyError) -> web.Response:
    return gemini_error(e) if is_gemini_path(request.path) else openai_error(e)


@web.middleware
async def error_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        return await handler(request)
    except ProxyError as e:
        log.info("%s %s -> %s: %s", request.method, request.path, e.status, e.message)
        return render(request, e)
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[CONTEXT].max_body
        return render(request, ProxyError(f"Request body too large: the limit is {limit} bytes.", status=413))
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return render(request, ProxyError(e.reason or "error", status=e.status,
                                          type="not_found_error" if e.status == 404 else "invalid_request_error"))
    except (ConnectionResetError, ConnectionAbortedError):
        raise
    except Exception:
        log.exception("unexpected error on %s %s", request.method, request.path)
        return render(request, ProxyError("The proxy failed while handling this request; see its log.",
                                          status=500, type="server_error"))


async def read_json(request: web.Request) -> Any:
    raw = await request.read()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ProxyError(BAD_JSON) from None


def validate[M: BaseModel](model: type[M], body: Any) -> M:
    """Validate a request body, turning the first pydantic error into OpenAI's 400 wording."""
    if not isinstance(body, dict):
        raise ProxyError("The request body must be a JSON object.", code="invalid_type")
    try:
        return model.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        where = _param_path(body, err["loc"])
        if err["type"] == "missing":
            raise ProxyError(f"Missing required parameter: '{where}'.", param=where,
                             code="missing_required_parameter") from None
        raise ProxyError(f"Invalid type for '{where}': {err['msg']}.", param=where, code="invalid_type") from None


def _param_path(body: Any, loc: tuple[Any, ...]) -> str:
    """The request field an error is about; pydantic adds union-member tags to `loc` that are not fields."""
    path, node = [], body
    for i, p in enumerate(loc):
        if isinstance(node, dict) and p in node or isinstance(node, list) and isinstance(p, int) and p < len(node):
            node = node[p]
        elif i == 0 or (isinstance(node, dict) and isinstance(p, str) and "[" not in p and i == len(loc) - 1):
            pass  # a missing field: still name it
        else:
            break
        path.append(f"[{p}]" if isinstance(p, int) else f".{p}")
    return "".join(path).lstrip(".") or "body"
