"""Start an SSE response and write events as they are produced (never buffered whole)."""

import json
from typing import Any

from aiohttp import web


async def open_sse(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"content-type": "text/event-stream; charset=utf-8",
                                       "cache-control": "no-cache", "x-accel-buffering": "no"})
    await resp.prepare(request)
    return resp


async def write_events(resp: web.StreamResponse, events: list[dict[str, Any]], named: bool = True) -> None:
    """Responses events carry `event: <type>`; Gemini chunks are bare `data:` lines with CRLF."""
    if not events:
        return
    if named:
        data = "".join(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)
    else:
        data = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\r\n\r\n" for e in events)
    await resp.write(data.encode())
