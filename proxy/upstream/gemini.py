"""HTTP client for the Gemini API (or any server speaking it: the mock, a local gateway)."""

import json
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from yarl import URL

from proxy.errors import UpstreamError
from proxy.wire.model_name import model_resource
from proxy.wire.sse import SSEDecoder

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_CONNECT_TIMEOUT = 10.0
# Between two bytes of a stream; thinking models can pause for a long time before the first token.
DEFAULT_READ_TIMEOUT = 300.0


class GeminiUpstream:
    def __init__(self, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None, api_version: str = "v1beta",
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, read_timeout: float = DEFAULT_READ_TIMEOUT) -> None:
        base = URL(base_url.rstrip("/"))
        if base.scheme not in ("http", "https") or not base.host or base.query_string or base.fragment:
            raise ValueError(f"the Gemini base URL must be http(s)://host[:port][/path], not {base_url!r}")
        self.base_url = str(base)
        self.api_key = api_key if api_key is not None else os.environ.get("GEMINI_API_KEY")
        self.api_version = api_version
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, sock_read=read_timeout)
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout, auto_decompress=True)
        return self._session

    def _url(self, model: str, stream: bool) -> URL:
        """Built from validated parts only: the model is checked against Gemini's grammar (a 400
        before any request otherwise) and becomes one path segment; the query is ours alone."""
        collection, model_id = model_resource(model)
        method = "streamGenerateContent" if stream else "generateContent"
        url = URL(self.base_url).joinpath(self.api_version, collection, f"{model_id}:{method}")
        return url.with_query(alt="sse") if stream else url

    def _headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        key = api_key or self.api_key
        if key:
            headers["x-goog-api-key"] = key
        return headers

    async def _post(self, model: str, body: dict[str, Any], api_key: str | None,
                    stream: bool) -> aiohttp.ClientResponse:
        url = self._url(model, stream)
        try:
            resp = await self._http().post(url, data=json.dumps(body, ensure_ascii=False).encode(),
                                           headers=self._headers(api_key))
        except TimeoutError as e:
            raise UpstreamError(f"Gemini did not answer in time ({self.base_url}).", status=504,
                                type="server_error") from e
        except aiohttp.ClientError as e:
            raise UpstreamError(f"Could not reach Gemini at {self.base_url}: {e}", status=502,
                                type="server_error") from e
        if resp.status != 200:
            text = await resp.text(errors="replace")
            resp.release()
            raise _error_from(resp.status, text)
        return resp

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        resp = await self._post(model, body, api_key, stream=False)
        try:
            return await resp.json(content_type=None)
        except (json.JSONDecodeError, aiohttp.ClientError, TimeoutError) as e:
            raise UpstreamError(f"Gemini sent an unreadable answer: {e}", status=502, type="server_error") from e
        finally:
            resp.release()

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        """Open the stream (raising UpstreamError before any chunk) and return a chunk iterator."""
        resp = await self._post(model, body, api_key, stream=True)
        return self._chunks(resp)

    async def _chunks(self, resp: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
        decoder = SSEDecoder()
        try:
            async for data in resp.content.iter_any():
                for payload in decoder.feed(data):
                    yield _parse_chunk(payload)
            for payload in decoder.close():
                yield _parse_chunk(payload)
        except (TimeoutError, aiohttp.ClientError, ValueError) as e:
            yield {"error": {"code": 502, "status": "UNAVAILABLE", "message": f"Gemini stream broke off: {e}"}}
        finally:
            resp.release()


def _parse_chunk(payload: str) -> dict[str, Any]:
    try:
        chunk = json.loads(payload)
    except json.JSONDecodeError:
        return {"error": {"code": 502, "status": "INTERNAL", "message": "Gemini sent an unreadable stream chunk"}}
    return chunk if isinstance(chunk, dict) else {"error": {"code": 502, "message": "unexpected stream chunk"}}


def _error_from(status: int, text: str) -> UpstreamError:
    err: dict[str, Any] | None = None
    try:
        body = json.loads(text)
        if isinstance(body, list) and body:  # some endpoints wrap the error in a list
            body = body[0]
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            err = body["error"]
    except json.JSONDecodeError:
        pass
    return UpstreamError.from_gemini(err, status, fallback=text[:500])
