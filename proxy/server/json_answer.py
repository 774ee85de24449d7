"""A JSON answer written by orjson: aiohttp's `json_response` encodes with the standard library,
which was a tenth of a large Responses request's time (echoed tool schemas, long outputs)."""

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from proxy import fast_json


def json_answer(data: Any, status: int = 200, headers: Mapping[str, str] | None = None,
                text: bytes | None = None) -> web.Response:
    """`text`: `data` serialized already (sent as it is)."""
    return web.Response(body=fast_json.dumps(data) if text is None else text, status=status, headers=headers,
                        content_type="application/json", charset="utf-8")
