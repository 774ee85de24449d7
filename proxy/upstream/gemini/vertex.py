"""`--vertex-credentials FILE` (repeatable): Gemini on Vertex AI instead of the Developer API.

Each credentials file is one entry of the key pool, with the project it bills (its own, or
`--vertex-project`): the URL names that project, so spreading requests over credentials of several
projects spreads them over several projects' quotas, and a credential Vertex answers 429 for rests
as a rate-limited API key does. The body and the answer are Gemini's own (protocols.md B10), so
everything else is the Developer API client's, except `id` on functionCall/functionResponse, which
goes only to the models that take it here (VERTEX_CALL_IDS).
"""

import re
from collections.abc import Callable, Mapping
from typing import Any, cast

import aiohttp
from yarl import URL

from proxy import fast_json
from proxy.errors import ProxyError
from proxy.journal.exchange import UpstreamCall
from proxy.pattern_rules import matches
from proxy.upstream.gemini.client import LOOKUP, Forwarded, GeminiUpstream, Target
from proxy.upstream.gemini.credentials import Credential, GoogleCredential
from proxy.wire.model_name import model_resource

# Google Cloud locations (`us-central1`, `europe-west4`, `global`) and project ids (6-30 lowercase
# letters, digits and hyphens; legacy ones behind a `domain:`): both become URL path segments.
LOCATION = re.compile(r"[a-z][a-z0-9-]{0,62}")
PROJECT = re.compile(r"(?:[a-z0-9.-]{1,63}:)?[a-z][a-z0-9-]{4,61}[a-z0-9]")
# What a Vertex publisher model answers among the Gemini methods the proxy passes through.
PASSED_METHODS = ("countTokens",)
# `id` on functionCall / functionResponse, per upstream (tests/recorded/SOURCES.md, "functionCall.id"):
# - Vertex answered both with `Unknown name "id" at 'contents[1].parts[1].function_call': Cannot find
#   field.` into August 2026 (looplj/axonhub #874, 2026-02-20; charmbracelet/fantasy #265, 2026-06-02;
#   vercel/ai #15664, 2026-07-02; LiteLLM PR #28268, 2026-05-20, on 3.5 Flash; opencode #44454,
#   2026-08-23), and its recorded answers for models before 3.5 carry no id (tests/recorded/vertex-*:
#   3.1-pro-preview, 3-flash-preview, 3.1-flash-lite);
# - since Vertex's discovery revision 20260921 both messages define `id` in v1 and v1beta1, and
#   gemini-3.5-flash mints ids there and takes them back on the call, the response or both
#   (anomalyco/opencode PR #50504, live on four endpoints, 2026-09-22); LiteLLM PR #34603 sends none
#   to Vertex for 2.5.
# So ids go to Vertex for the models that mint them (3.5 and later) and are left out for the others,
# which pair responses with calls by position: repair_history has already put each turn's responses
# in call order (by id, then by name), so parallel calls of one name stay paired. The Developer API
# takes ids on every model (tests/recorded/pdf-tool-result-exchange-2.5-flash-lite.json: client-minted
# ids on 2.5-flash-lite) and mints its own from 3.5 (gemini37-flash-call-id-stream.sse).
VERTEX_CALL_IDS = ("gemini-3.[5-9]*", "gemini-[4-9]*")


def vertex_takes_call_ids(model: str) -> bool:
    return matches(model.removeprefix("models/"), VERTEX_CALL_IDS)


def without_call_ids(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with no `id` on any functionCall or functionResponse (a copy where one had one; the
    caller's body, which the journal and the session keep, stays as it was)."""
    contents = body.get("contents")
    if not isinstance(contents, list) or not any(
            isinstance(p, dict) and any(isinstance(p.get(k), dict) and "id" in p[k] for k in FUNCTION_PARTS)
            for c in contents if isinstance(c, dict) for p in c.get("parts") or []):
        return body

    def part(p: Any) -> Any:
        if not isinstance(p, dict):
            return p
        return {k: {f: x for f, x in v.items() if f != "id"} if k in FUNCTION_PARTS and isinstance(v, dict) else v
                for k, v in p.items()}
    return {**body, "contents": [{**c, "parts": [part(p) for p in c.get("parts") or []]} if isinstance(c, dict)
                                 else c for c in contents]}


FUNCTION_PARTS = ("functionCall", "functionResponse", "function_call", "function_response")


def vertex_base_url(location: str) -> str:
    """Vertex's regional host (`global` has its own, unprefixed)."""
    return "https://aiplatform.googleapis.com" if location == "global" else f"https://{location}-aiplatform.googleapis.com"


def vertex_credentials(paths: list[str], project: str | None, location: str, prefix: str = "--vertex-"
                       ) -> list[GoogleCredential]:
    """The credentials files, each with the project it bills; a bad file, project or location is a
    ValueError naming the option (`prefix`: the command line's, or the addon's `gtp_vertex_`)."""
    if not LOCATION.fullmatch(location):
        raise ValueError(f"{prefix}location must be a Google Cloud location such as us-central1 or global, "
                         f"not {location!r}")
    out = [GoogleCredential(path, project, f"{prefix}credentials") for path in paths]
    for cred, path in zip(out, paths, strict=True):
        if not PROJECT.fullmatch(cred.project or ""):
            raise ValueError(f"{prefix}credentials {path}: {cred.project!r} is not a Google Cloud project id")
    return out


class VertexUpstream(GeminiUpstream):
    def __init__(self, base_url: str | None, credentials: list[GoogleCredential], location: str = "global",
                 **kwargs: Any) -> None:
        if not credentials:
            raise ValueError("the Vertex upstream needs at least one --vertex-credentials file")
        super().__init__(base_url or vertex_base_url(location), api_version="v1", keys=list(credentials), **kwargs)
        self.location = location

    async def _post(self, model: str, body: dict[str, Any], api_key: str | None, stream: bool,
                    deadline: float, journal: UpstreamCall | None = LOOKUP) -> aiohttp.ClientResponse:
        if not vertex_takes_call_ids(model):
            body = without_call_ids(body)
        return await super()._post(model, body, api_key, stream, deadline, journal)

    async def forward(self, method: str, url: Target, body: bytes, headers: Mapping[str, str],
                      api_key: str | None = None, model: str = "") -> Forwarded:
        """countTokens (the proxy's own and a native client's) without ids where generateContent has none."""
        if body and model and b'"id"' in body and not vertex_takes_call_ids(model):
            try:
                data = fast_json.loads(body)
            except ValueError:
                data = None
            if isinstance(data, dict):
                inner = data.get("generateContentRequest")
                out = without_call_ids(data)
                if isinstance(inner, dict):
                    out = {**out, "generateContentRequest": without_call_ids(inner)}
                body = body if out == data else fast_json.dumps(out)
        return await super().forward(method, url, body, headers, api_key, model)

    def _credential(self, api_key: str | None, model: str = "") -> Credential | None:
        """Always the pool's: a client's Gemini API key names no Vertex project."""
        return super()._credential(None, model)

    def _model_url(self, model: str, method: str) -> Callable[[Credential | None], URL]:
        collection, model_id = model_resource(model)  # a 400 before any request otherwise
        if collection != "models":
            raise ProxyError(f"Vertex AI serves Google's publisher models here, not {model!r}.", param="model",
                             code="invalid_model")

        def url(key: Credential | None) -> URL:
            project = cast(GoogleCredential, key).project
            return URL(self.base_url).joinpath(self.api_version, "projects", project, "locations", self.location,
                                               "publishers", "google", "models", f"{model_id}:{method}")
        return url

    def _url(self, model: str, stream: bool) -> Target:
        if not stream:
            return self._model_url(model, "generateContent")
        url = self._model_url(model, "streamGenerateContent")
        return lambda key: url(key).with_query(alt="sse")

    def path_url(self, prefix: tuple[str, ...], segments: list[str], query: Mapping[str, str]) -> Target:
        """countTokens has a Vertex twin; the Developer API's collections (files, cachedContents,
        tunedModels, the model list) do not, and say so."""
        if len(segments) == 2 and segments[0] == "models":
            model, _, method = segments[1].rpartition(":")
            if method in PASSED_METHODS:
                return self._model_url(model, method)
        raise ProxyError(f"'{'/'.join(segments)[:120]}' is a method of Gemini's Developer API; this proxy's upstream "
                         f"is Vertex AI, where it serves generateContent, streamGenerateContent and "
                         f"{', '.join(PASSED_METHODS)}.", status=501, code="not_supported_upstream")
