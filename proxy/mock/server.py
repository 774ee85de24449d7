"""The mock Gemini as an aiohttp app: `/v1beta/models/{model}:generateContent` and friends.

Runs as a server of its own (`gemini-tool-proxy mock`) or inside the proxy (`--upstream mock`).
Requests it accepted are kept in `app[RECEIVED]` (most recent last) so tests can see what the
proxy really sent upstream.
"""

import asyncio
import collections
import functools
import hashlib
import json
import math
import re
import ssl
from typing import Any

from aiohttp import web

from proxy.mock import antigravity, generated_objects, interactions, oauth, objects
from proxy.mock import hops as long_answers
from proxy.mock.dialect_model import TEXT_CALL, calls_as_text, detect, dialect_reply
from proxy.mock.model import ERRORS, Reply, fragment_calls, latest_user_text, respond
from proxy.mock.validate import CLOUDCODE_FIELDS, GeminiRejection, check_fields, validate_request, vertex_takes_call_ids
from proxy.wire.merge_chunks import merge_chunks

RECEIVED = web.AppKey("received", collections.deque)
ACCEPTED = web.AppKey("accepted", list)  # [count]: every request accepted, unlike RECEIVED which keeps the last 256
# generateContent's continuation tokens (hops.key) -> (the planned answer, the hop, the part it resumes from)
CONTINUATIONS = web.AppKey("continuations", dict)
FLAKY = web.AppKey("flaky", dict)  # request text -> how many times a `flaky` directive was seen
SEEN = web.AppKey("seen", collections.deque)  # every request that reached the mock at all: "METHOD path?query"
MODEL_NAME = re.compile(r"^(gemini|gemma)-[A-Za-z0-9.\-]+$")
# Gemini's 403 for a request without a key, saying what to do about it (any key works with the mock).
NO_KEY = ("No API key was sent (Gemini answers: Method doesn't allow unregistered callers). Set one with the "
          "x-goog-api-key header, ?key= or Authorization: Bearer; through gemini-tool-proxy, with GEMINI_API_KEY "
          "or --gemini-key, or as the client's own key (OPENAI_API_KEY, ANTHROPIC_API_KEY...). Any value works "
          "with the mock.")
MODELS = ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview", "gemini-3-flash-preview", "gemma-3-27b-it"]
EMBEDDING_MODELS = ["gemini-embedding-001"]
GENERATE_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]
# One stored file, for the passed-through files API.
FILES = {"files/mockfile1": {"name": "files/mockfile1", "displayName": "notes.txt", "mimeType": "text/plain",
                             "sizeBytes": "11", "uri": "https://generativelanguage.googleapis.com/v1beta/files/mockfile1",
                             "state": "ACTIVE"}}


ACCOUNT_ANSWERS: dict[str, dict[str, Any]] = {
    "loadCodeAssist": {"currentTier": {"id": "standard-tier", "name": "Gemini Code Assist",
                                       "userDefinedCloudaicompanionProject": False},
                       "allowedTiers": [{"id": "standard-tier", "isDefault": True}],
                       "cloudaicompanionProject": "mock-project"},
    "onboardUser": {"done": True, "response": {"cloudaicompanionProject": {"id": "mock-project"}}},
    "retrieveUserQuota": {"buckets": []},
    "listExperiments": {"experimentIds": [], "flags": []},
}


async def userinfo(request: web.Request) -> web.Response:
    """Google's OAuth userinfo, which Gemini CLI asks before its Code Assist calls."""
    return web.json_response({"id": "1", "email": "user@example.com", "verified_email": True})


def _error(e: GeminiRejection) -> web.Response:
    headers = {}
    if e.retry_delay:  # Google's front ends send both on quota errors
        headers["retry-after"] = str(math.ceil(float(e.retry_delay.rstrip("s"))))
    return web.json_response(e.body(), status=e.status, headers=headers)


def _interactions_error(e: GeminiRejection) -> web.Response:
    """The Interactions API's error object: its `code` is the status name (google-genai's type is a string)."""
    return web.json_response({"error": {"code": e.status_name, "message": e.message}}, status=e.status)


def _flaky(request: web.Request, body: dict[str, Any]) -> GeminiRejection | None:
    """`[[mock:flaky N CODE [DELAY]]]`: the first N requests with the same text fail with CODE."""
    text = json.dumps(body.get("contents") or [])
    found = re.search(r"\[\[mock:flaky (\d+) (\d{3})(?: ([0-9.]+s))?\]\]", text)
    if not found:
        return None
    seen = request.app[FLAKY]
    seen[text] = seen.get(text, 0) + 1
    if seen[text] > int(found.group(1)):
        return None
    code = int(found.group(2))
    name, message = ERRORS.get(code, ERRORS[500])
    return GeminiRejection(code, message, name, retry_delay=found.group(3))


def _exhausted(request: web.Request, cloudcode_model: str | None = None) -> GeminiRejection | None:
    """A key named `exhausted-*` is out of quota, as a real one is: 429 with a RetryInfo of 30s (on
    Cloud Code, Antigravity's 429 with the quota's reset)."""
    if not (_api_key(request) or "").startswith("exhausted-"):
        return None
    if cloudcode_model is not None:
        return antigravity.exhausted(cloudcode_model)
    return GeminiRejection(429, "You exceeded your current quota, please check your plan and billing details.",
                           "RESOURCE_EXHAUSTED", retry_delay="30s")


def _api_key(request: web.Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return (request.headers.get("x-goog-api-key") or request.query.get("key")
            or (auth[7:] if auth.lower().startswith("bearer ") else None))


async def generate(request: web.Request) -> web.StreamResponse:
    """generativelanguage `/{version}/models/{model}:{method}` and Vertex `…/publishers/google/models/…`."""
    model, _, method = request.match_info["target"].rpartition(":")
    if "project" in request.match_info and (problem := oauth.token_problem(request)):
        return _error(GeminiRejection(401, problem, "UNAUTHENTICATED"))
    return await _answer(request, model, method, request.match_info.get("version", "v1"), cloudcode=False)


async def cloudcode(request: web.Request) -> web.StreamResponse:
    """Cloud Code Assist `/v1internal:{method}`: `{model, project, request: {...}}` in, `{response, traceId}` out."""
    method = request.match_info["method"]
    if method not in ("generateContent", "streamGenerateContent"):
        # Account set-up calls (loadCodeAssist, retrieveUserQuota, listExperiments, and Antigravity's
        # quota and model calls): fixed answers shaped like Code Assist's, and the raw request kept so
        # tests can check it arrived untouched.
        raw = await request.read()
        request.app[RECEIVED].append({"model": None, "method": method, "raw": raw, "path": request.path_qs,
                                      "headers": dict(request.headers), "body": None, "key": None})
        if method in antigravity.ACCOUNT_ANSWERS:
            return web.json_response(antigravity.ACCOUNT_ANSWERS[method]())
        return web.json_response(ACCOUNT_ANSWERS.get(method, {}))
    return await _answer(request, None, method, "v1internal", cloudcode=True)


def _remember(request: web.Request, model: str | None, method: str, body: Any, **extra: Any) -> dict[str, Any]:
    """Keep an accepted request where tests can see what really arrived (and, for one that names a
    cache, `answered`: the request the cache's prefix made of it; once answered, `usage`: the
    usageMetadata it billed)."""
    record = {"model": model, "method": method, "body": body, "key": _api_key(request), "path": request.path_qs,
              "headers": dict(request.headers), **extra}
    request.app[RECEIVED].append(record)
    return record


def _key_problem(request: web.Request) -> GeminiRejection | None:
    key = _api_key(request)
    if not key:
        return GeminiRejection(403, NO_KEY, "PERMISSION_DENIED")
    if key.startswith("bad"):
        return GeminiRejection(400, "API key not valid. Please pass a valid API key.")
    return None


def _not_supported(model: str, version: str, method: str) -> GeminiRejection:
    return GeminiRejection(404, f"models/{model} is not found for API version {version}, or is not supported for "
                                f"{method}. Call ListModels to see the list of available models and their supported "
                                "methods.", "NOT_FOUND")


async def _model_method(request: web.Request, model: str, method: str, version: str,
                        vertex: bool = False) -> web.Response:
    """countTokens, embedContent, batchEmbedContents: as strict as generateContent about their bodies."""
    try:
        body = json.loads(await request.read())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(GeminiRejection(400, "Invalid JSON payload received. Unexpected token."))
    _remember(request, model, method, body)
    embedding = model in EMBEDDING_MODELS
    try:
        if method == "countTokens":
            if embedding:
                raise _not_supported(model, version, method)
            if vertex:  # Vertex's CountTokensRequest holds contents, systemInstruction, tools, generationConfig
                inner = body
                validate_request(body, model, api="vertex", root="CountTokensRequest")
            else:
                inner = body.get("generateContentRequest") or {"contents": body.get("contents")}
                if "generateContentRequest" in body and inner.get("model") != f"models/{model}":
                    raise GeminiRejection(400, "* CountTokensRequest.generate_content_request.model: the model "
                                               f"must match the request's model, models/{model}\n")  # [inferred]
                check_fields(body, "CountTokensRequest")
                validate_request({k: v for k, v in inner.items() if k != "model"}, model)
            tokens = max(1, len(json.dumps(inner.get("contents"))) // 4)
            return web.json_response({"totalTokens": tokens,
                                      "promptTokensDetails": [{"modality": "TEXT", "tokenCount": tokens}]})
        if not embedding:
            raise _not_supported(model, version, method)
        requests = body.get("requests") if method == "batchEmbedContents" else [{**body, "model": f"models/{model}"}]
        if not isinstance(requests, list) or not requests:
            raise GeminiRejection(400, "* BatchEmbedContentsRequest.requests: requests must not be empty\n")
        embeddings = []
        for i, sub in enumerate(requests):
            if not isinstance(sub, dict) or sub.get("model") != f"models/{model}":
                named = sub.get("model") if isinstance(sub, dict) else sub
                raise GeminiRejection(400, f"Model in request {i} ({named}) doesn't match the model in the URL "
                                           f"(models/{model}).")  # [inferred]
            content = sub.get("content")
            texts = [p.get("text", "") for p in (content or {}).get("parts") or [] if isinstance(p, dict)]
            if not texts:
                raise GeminiRejection(400, "* EmbedContentRequest.content: contents is not specified\n")
            seed = hashlib.sha256(" ".join(texts).encode()).digest()
            size = int(sub.get("outputDimensionality") or 8)
            embeddings.append({"values": [round(seed[j % 32] / 255 - 0.5, 6) for j in range(size)]})
    except GeminiRejection as e:
        return _error(e)
    return web.json_response({"embedding": embeddings[0]} if method == "embedContent" else {"embeddings": embeddings})


async def _answer(request: web.Request, model: str | None, method: str, version: str,
                  cloudcode: bool) -> web.StreamResponse:
    if method not in ("generateContent", "streamGenerateContent", "countTokens", "embedContent",
                      "batchEmbedContents") or (cloudcode and method not in GENERATE_METHODS):
        return _error(GeminiRejection(404, f"Method {method} not found.", "NOT_FOUND"))
    problem = _key_problem(request)
    if problem:
        return _error(problem)
    if method in ("countTokens", "embedContent", "batchEmbedContents"):
        assert model is not None
        if not MODEL_NAME.match(model):
            return _error(_not_supported(model, version, method))
        return await _model_method(request, model, method, version, vertex="project" in request.match_info)
    raw = await request.read()
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(GeminiRejection(400, "Invalid JSON payload received. Unexpected token."))
    envelope = None
    if cloudcode:
        if not isinstance(body, dict) or not isinstance(body.get("request"), dict):
            return _error(GeminiRejection(400, "Invalid JSON payload received. Unknown name \"contents\": "
                                               "Cannot find field."))
        try:
            antigravity.check_envelope(body)
        except GeminiRejection as e:
            return _error(e)
        envelope, model, body = body, str(body.get("model", "")).removeprefix("models/"), body["request"]
    assert model is not None
    if not MODEL_NAME.match(model) and not (envelope is not None and antigravity.is_antigravity(envelope)):
        return _error(GeminiRejection(404, f"models/{model} is not found for API version {version}, or is not "
                                           "supported for generateContent. Call ListModels to see the list of "
                                           "available models and their supported methods.", "NOT_FOUND"))
    try:
        validate_request(body, model, allow=CLOUDCODE_FIELDS if cloudcode else frozenset(),
                         api="vertex" if "project" in request.match_info else "mldev")
        if envelope is not None and antigravity.is_third_party(model):
            antigravity.check_claude(body)
        answered, cached = (objects.use_cache(request.app, body, model) if not cloudcode and body.get("cachedContent")
                            else (body, 0))
    except GeminiRejection as e:
        return _error(e)
    record = _remember(request, model, method, body,
                       **({"envelope": {k: v for k, v in envelope.items() if k != "request"}, "raw": raw}
                          if envelope is not None else {}), **({"answered": answered} if answered is not body else {}))
    request.app[ACCEPTED][0] += 1
    flaky = _flaky(request, body) or _exhausted(request, model if envelope is not None else None)
    if flaky:
        return _error(flaky)
    if not cloudcode and body.get("continuationToken") is not None:
        try:
            reply = _continued(request.app, body, model)
        except GeminiRejection as e:
            return _error(e)
    else:
        reply = _reply(request.app, answered, model, cloudcode)
        if cached:
            _count_cached(reply, answered, cached)
    if "project" in request.match_info and not vertex_takes_call_ids(model):
        reply.chunks = [_without_call_ids(c) for c in reply.chunks]
    fcc = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    if method == "streamGenerateContent" and fcc.get("streamFunctionCallArguments"):
        reply.chunks = fragment_calls(reply.chunks)
    if reply.error:
        status, name, message = reply.error
        return _error(GeminiRejection(status, message, name, retry_delay=reply.retry_delay))
    billed = [c["usageMetadata"] for c in reply.chunks if isinstance(c.get("usageMetadata"), dict)]
    record["usage"] = billed[-1] if billed else None

    def wrap(chunk: dict[str, Any]) -> dict[str, Any]:
        return {"response": chunk, "traceId": "mock-trace"} if cloudcode and "error" not in chunk else chunk

    if method == "generateContent":
        if reply.delay:  # `slow`: a whole answer takes as long as its stream would
            await asyncio.sleep(reply.delay * max(1, len(reply.chunks) - 1))
        return web.json_response(wrap(merge_chunks(reply.chunks)))
    return await _stream(request, reply, wrap)


def _without_call_ids(chunk: dict[str, Any]) -> dict[str, Any]:
    """A chunk as Vertex sends it for models before 3.5: calls without an id (tests/recorded/vertex-*)."""
    for cand in chunk.get("candidates") or []:
        for part in (cand.get("content") or {}).get("parts") or []:
            if isinstance(part.get("functionCall"), dict):
                part["functionCall"].pop("id", None)
    return chunk


def _reply(app: web.Application, body: dict[str, Any], model: str, cloudcode: bool) -> Reply:
    spoken = detect(body)
    reply = dialect_reply(body, model, spoken) if spoken else respond(body, model)
    text_call = TEXT_CALL.search(latest_user_text(body.get("contents") or [])[1])
    if text_call and not spoken:
        reply = calls_as_text(reply, text_call.group(1))
    if not cloudcode and not reply.error and reply.chunks:
        merged = merge_chunks(reply.chunks)
        cand = (merged.get("candidates") or [{}])[0]
        hops = long_answers.split(body, (cand.get("content") or {}).get("parts") or [])
        if len(hops) > 1:  # `[[mock:hops N]]`: stopped at the decode limit, continued when asked
            plan = {"hops": hops, "model": model, "body": body, "finish": cand.get("finishReason") or "STOP",
                    "usage": merged.get("usageMetadata"), "mode": long_answers.mode(body)}
            reply.chunks = long_answers.generate_hop(plan, 0, 0, None, app[CONTINUATIONS])
    return reply


def _count_cached(reply: Reply, answered: dict[str, Any], cached: int) -> None:
    """The usage of an answer whose prompt began with a cache: the cache's tokens are in
    promptTokenCount (the cache's system prompt and tools added to the mock's count of the contents)
    and are its cachedContentTokenCount, as Gemini reports them."""
    extra = objects.cache_tokens({k: answered[k] for k in objects.CACHED if k in answered}) \
        if any(k in answered for k in objects.CACHED) else 0
    for chunk in reply.chunks:
        meta = chunk.get("usageMetadata")
        if isinstance(meta, dict):
            prompt = max(int(meta.get("promptTokenCount") or 0) + extra, cached)
            meta["totalTokenCount"] = int(meta.get("totalTokenCount") or 0) + prompt - int(meta.get("promptTokenCount")
                                                                                         or 0)
            meta["promptTokenCount"], meta["cachedContentTokenCount"] = prompt, cached


def _continued(app: web.Application, body: dict[str, Any], model: str) -> Reply:
    """The hop a continuationToken asks for, checked as the mock guesses the server does (hops.py): the
    token known, and the request the same as the one it continues (empty fields aside: google-genai
    sends `generationConfig: {}` with the token where the first request had none)."""
    token = body["continuationToken"]
    found = app[CONTINUATIONS].get(long_answers.key(token))
    if found is None:
        raise GeminiRejection(400, "Invalid value at 'continuation_token': unknown or expired token.")
    plan, k, start = found
    same = {n: v for n, v in body.items() if n != "continuationToken" and v not in ({}, [], None)}
    if model != plan["model"] or same != {n: v for n, v in plan["body"].items() if v not in ({}, [], None)}:
        raise GeminiRejection(400, "Invalid value at 'continuation_token': it continues another request; send the "
                                   "same request again with it.")
    return Reply(chunks=long_answers.generate_hop(plan, k, start, token, app[CONTINUATIONS]))


async def _stream(request: web.Request, reply: Reply, wrap: Any) -> web.StreamResponse:
    sse = request.query.get("alt") == "sse"
    resp = web.StreamResponse(headers={"content-type": "text/event-stream" if sse else "application/json"})
    await resp.prepare(request)
    for i, chunk in enumerate(reply.chunks):
        if i and reply.delay:
            await asyncio.sleep(reply.delay)
        failing = reply.stream_error_after is not None and i == reply.stream_error_after
        if failing:
            name, message = ERRORS.get(reply.stream_error_code, ERRORS[500])
            chunk = {"error": {"code": reply.stream_error_code, "message": message, "status": name}}
        data = json.dumps(wrap(chunk), ensure_ascii=False)
        if sse:
            await resp.write(f"data: {data}\r\n\r\n".encode())
        else:
            await resp.write((("[" if i == 0 else ",\r\n") + data).encode())
        if failing:
            break
    if not sse:
        await resp.write(b"]")
    await resp.write_eof()
    return resp


def _model_entry(model: str) -> dict[str, Any]:
    methods = ["embedContent", "batchEmbedContents"] if model in EMBEDDING_MODELS else GENERATE_METHODS
    return {"name": f"models/{model}", "version": "001", "displayName": model, "description": f"Mock {model}",
            "inputTokenLimit": 1048576, "outputTokenLimit": 65536 if model not in EMBEDDING_MODELS else 1,
            "supportedGenerationMethods": methods}


async def list_models(request: web.Request) -> web.Response:
    problem = _key_problem(request)
    if problem:
        return _error(problem)
    return web.json_response({"models": [_model_entry(m) for m in MODELS + EMBEDDING_MODELS]})


async def get_model(request: web.Request) -> web.Response:
    problem = _key_problem(request)
    if problem:
        return _error(problem)
    model = request.match_info["model"]
    if model not in MODELS + EMBEDDING_MODELS:
        return _error(GeminiRejection(404, f"models/{model} is not found for API version "
                                           f"{request.match_info['version']}, or is not supported for GET.",
                                      "NOT_FOUND"))
    _remember(request, model, "get", None)
    return web.json_response(_model_entry(model))


@web.middleware
async def _record(request: web.Request, handler: Any) -> web.StreamResponse:
    request.app[SEEN].append(f"{request.method} {request.raw_path}")
    return await handler(request)


def make_mock_app() -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[_record])
    app[SEEN] = collections.deque(maxlen=1024)
    app[FLAKY] = {}
    app[RECEIVED] = collections.deque(maxlen=256)
    app[ACCEPTED] = [0]
    app.router.add_post("/{version:v1|v1beta|v1alpha}/models/{target}", generate)
    app[interactions.STORE] = {}
    app[interactions.PENDING] = {}
    app[CONTINUATIONS] = {}
    one = "/{version:v1|v1beta|v1alpha}/interactions/{interaction_id}"
    app.router.add_post("/{version:v1|v1beta|v1alpha}/interactions",
                        functools.partial(interactions.create, key_problem=_key_problem, remember=_remember,
                                          error=_interactions_error))
    for add, handler in ((app.router.add_get, interactions.get), (app.router.add_delete, interactions.delete)):
        add(one, functools.partial(handler, key_problem=_key_problem, error=_interactions_error))
    app.router.add_post(one + "/cancel", functools.partial(interactions.cancel, key_problem=_key_problem,
                                                           error=_interactions_error))
    app.router.add_get("/{version:v1|v1beta|v1alpha}/models", list_models)
    app.router.add_get("/{version:v1|v1beta|v1alpha}/models/{model}", get_model)
    objects.install(app, _key_problem, _error, _remember, FILES)
    generated_objects.install(app, _key_problem, _error, _remember)
    app.router.add_post("/v1internal:{method}", cloudcode)
    app.router.add_get("/oauth2/v2/userinfo", userinfo)
    app[oauth.ISSUED] = set()
    app.router.add_post("/token", oauth.token)
    app.router.add_post(
        "/{version:v1|v1beta1}/projects/{project}/locations/{location}/publishers/google/models/{target}", generate)
    app.router.add_get("/mock/last", last_received)
    # Anything else (the test stand-in for unrelated traffic): echo what arrived, byte for byte.
    app.router.add_route("*", "/echo/{tail:.*}", echo)
    return app


async def last_received(request: web.Request) -> web.Response:
    """What the mock accepted last (for tests that run it as a process of its own)."""
    received = request.app[RECEIVED]
    last = received[-1] if received else {}
    return web.json_response({"model": last.get("model"), "body": last.get("body"), "path": last.get("path"),
                              "answered": last.get("answered"),  # a request naming a cache: with its prefix
                              "key": last.get("key"), "accepted": request.app[ACCEPTED][0],
                              "seen": list(request.app[SEEN])})


async def echo(request: web.Request) -> web.Response:
    body = await request.read()
    kind = request.headers.get("content-type", "application/octet-stream")
    return web.Response(body=body, headers={"x-echo-method": request.method, "x-echo-path": request.path_qs,
                                            "content-type": kind})


async def start_mock(host: str = "127.0.0.1", port: int = 0, ssl_context: ssl.SSLContext | None = None,
                     app: web.Application | None = None) -> tuple[web.AppRunner, str, web.Application]:
    """Start the mock (or `app`: a test's stand-in, such as a server replaying recorded answers) on
    loopback; returns (runner, base URL, app). Port 0 picks a free port."""
    app = app if app is not None else make_mock_app()
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"{'https' if ssl_context else 'http'}://{host}:{bound}", app

