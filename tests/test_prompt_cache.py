"""Anthropic `cache_control` served by a Gemini explicit cache (server/prompt_cache.py), with the
official `anthropic` SDK (strict validation) against the strict mock, which serves cachedContents
as Google does: a request naming a cache gets its contents as a prefix and may not repeat its
system prompt or tools (Google's 400), the cached prefix is counted in cachedContentTokenCount, a
cache below the model's minimum is Google's 400, and a cache that is gone is a 403.

Each test is plain and streamed. What the mock answers where Google's wire is not on record (the 403
rather than a 404 for a gone cache) is marked as the mock's guess in proxy/mock/objects.py."""

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import pytest

from proxy.mock.objects import CACHE_BODIES, CACHES
from tests.harness import Stack

MODEL = "gemini-3-flash-preview"
KEY_A, KEY_B = "tenant-a-key-0123456789abcdef", "tenant-b-key-0123456789abcdef"
# A prefix past Gemini 3's minimum of 4,096 tokens (about 6,000 by a token per four characters).
LONG = "You are a careful coding agent. Follow the repository's conventions and explain each change. " * 260
TOOL = {"name": "read_file", "description": "Read a file", "cache_control": {"type": "ephemeral", "ttl": "1h"},
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}


def _client(stack: Stack, key: str = "k") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stack.url, api_key=key, max_retries=0, _strict_response_validation=True)


def _ask(client: anthropic.Anthropic, stream: bool, messages: list[dict[str, Any]], system: str = LONG,
         model: str = MODEL) -> Any:
    kwargs: dict[str, Any] = {"model": model, "max_tokens": 500, "tools": [TOOL], "messages": messages,
                              "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]}
    if not stream:
        return client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as s:
        return s.get_final_message()


def _turns(n: int) -> list[dict[str, Any]]:
    """A conversation of n user turns (each answered but the last), Claude Code's breakpoint on the last."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        if i:
            out.append({"role": "assistant", "content": f"Answer {i}."})
        out.append({"role": "user", "content": [{"type": "text", "text": f"Question {i + 1}?",
                                                 **({"cache_control": {"type": "ephemeral"}} if i == n - 1 else {})}]})
    return out


def _generated(stack: Stack) -> list[dict[str, Any]]:
    return [r["body"] for r in stack.received if r.get("method") in ("generateContent", "streamGenerateContent")]


def _cache_posts(stack: Stack) -> int:
    return sum(1 for s in stack.seen if s.startswith("POST /v1beta/cachedContents"))


def _get_cache(stack: Stack, name: str, key: str) -> int:
    req = urllib.request.Request(f"{stack.url}/v1beta/{name}", headers={"x-goog-api-key": key})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_second_request_reads_the_cached_prefix(stream: bool) -> None:
    stack = Stack()
    try:
        client = _client(stack)
        first = _ask(client, stream, _turns(1))
        assert first.content[-1].text
        [cache] = stack.mock_app[CACHES].values()
        held = cache["usageMetadata"]["totalTokenCount"]
        # The request names the cache and leaves to it what it holds (else Google's 400).
        sent = _generated(stack)[-1]
        assert sent["cachedContent"] == cache["name"] and not {"systemInstruction", "tools", "toolConfig"} & set(sent)
        assert first.usage.cache_creation_input_tokens == held and first.usage.cache_read_input_tokens == 0
        # ttl: the longest breakpoint's at that prefix (the tool's 1h)
        assert any("ttl 3600s" in n.get("message", "") for n in stack.exchange()["decisions"])

        second = _ask(client, stream, _turns(2))
        assert second.content[-1].text and _cache_posts(stack) == 1
        assert _generated(stack)[-1]["cachedContent"] == cache["name"]
        assert second.usage.cache_read_input_tokens == held > 4096 and second.usage.cache_creation_input_tokens == 0
        # Anthropic's input_tokens leaves the cache out; Gemini's promptTokenCount had it in.
        assert second.usage.input_tokens > 0
    finally:
        stack.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_another_client_key_never_reads_it(stream: bool) -> None:
    stack = Stack(keys=[KEY_A, KEY_B])
    try:
        _ask(_client(stack, KEY_A), stream, _turns(1))
        [a_cache] = stack.mock_app[CACHES]
        b = _ask(_client(stack, KEY_B), stream, _turns(2))
        assert b.usage.cache_read_input_tokens == 0 and b.usage.cache_creation_input_tokens > 0
        b_cache = _generated(stack)[-1]["cachedContent"]
        assert b_cache != a_cache and len(stack.mock_app[CACHES]) == 2
        assert _get_cache(stack, a_cache, KEY_B) == 404 and _get_cache(stack, a_cache, KEY_A) == 200
        assert _get_cache(stack, b_cache, KEY_A) == 404
    finally:
        stack.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_stale_cache_is_forgotten_and_the_request_sent_uncached(stream: bool) -> None:
    stack = Stack()
    try:
        client = _client(stack)
        _ask(client, stream, _turns(1))
        [name] = list(stack.mock_app[CACHES])
        del stack.mock_app[CACHES][name]  # expired, or deleted behind the proxy's back
        second = _ask(client, stream, _turns(2))
        assert second.content[-1].text and second.usage.cache_read_input_tokens == 0
        retried = _generated(stack)[-1]
        assert "cachedContent" not in retried and retried["systemInstruction"] and retried["tools"]
        assert any(s.startswith("POST /v1beta/models/") for s in stack.seen[-2:])
        third = _ask(client, stream, _turns(3))  # forgotten: a new cache, not the gone one again
        assert third.usage.cache_creation_input_tokens > 0 and _generated(stack)[-1]["cachedContent"] != name
    finally:
        stack.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_short_prefix_or_gemini_4_sends_no_cache(stream: bool) -> None:
    stack = Stack()
    try:
        client = _client(stack)
        for system, model in (("Be brief.", MODEL), (LONG, "gemini-4-argon-preview")):
            answer = _ask(client, stream, _turns(2), system=system, model=model)
            assert answer.content[-1].text and answer.usage.cache_read_input_tokens == 0
            assert answer.usage.cache_creation_input_tokens == 0
            sent = _generated(stack)[-1]
            assert "cachedContent" not in sent and sent["systemInstruction"] and sent["tools"]
        assert _cache_posts(stack) == 0
    finally:
        stack.close()


def test_the_mock_refuses_what_google_refuses() -> None:
    """The mock's side: Google's 400s for a cache too small and for a request that names a cache and
    sets a system prompt beside it, so the proxy's tests above cannot pass by sending either."""
    stack = Stack()
    try:
        def post(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            req = urllib.request.Request(f"{stack.mock_url}/v1beta/{path}", data=json.dumps(body).encode(),
                                         headers={"content-type": "application/json", "x-goog-api-key": "k"})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                return e.code, json.loads(e.read())

        status, small = post("cachedContents", {"model": f"models/{MODEL}", "contents": [
            {"role": "user", "parts": [{"text": "short"}]}]})
        assert status == 400 and small["error"]["message"].startswith("Cached content is too small. total_token_count=")
        status, cache = post("cachedContents", {"model": f"models/{MODEL}", "ttl": "300s",
                                                "systemInstruction": {"parts": [{"text": LONG}]}, "contents": []})
        assert status == 200
        user = [{"role": "user", "parts": [{"text": "hi"}]}]
        status, both = post(f"models/{MODEL}:generateContent", {"cachedContent": cache["name"], "contents": user,
                                                                "systemInstruction": {"parts": [{"text": "x"}]}})
        assert status == 400 and "CachedContent can not be used with GenerateContent" in both["error"]["message"]
        status, ok = post(f"models/{MODEL}:generateContent", {"cachedContent": cache["name"], "contents": user})
        assert status == 200 and ok["usageMetadata"]["cachedContentTokenCount"] == \
            cache["usageMetadata"]["totalTokenCount"] <= ok["usageMetadata"]["promptTokenCount"]
    finally:
        stack.close()


def test_a_growing_conversation_reads_the_longest_prefix_an_earlier_turn_cached() -> None:
    """Claude Code's breakpoint moves to the newest turn each request: the prefix an earlier turn
    cached is still a prefix of this one and is read from its lineage, and a longer cache is made
    only once what the read leaves out is as large as what it holds (each creation is billed in full)."""
    stack = Stack()
    try:
        client = _client(stack)
        big = [{"type": "text", "text": LONG * 2}]
        history = [{"role": "user", "content": big}]
        _ask(client, False, history)  # the system prompt and tools: the first cache
        history += [{"role": "assistant", "content": "Read."}, {"role": "user", "content": "Now fix it."}]
        grown = _ask(client, False, _turns_marked(history))  # 2 contents twice the first cache's size: a second
        assert len(stack.mock_app[CACHES]) == 2 and grown.usage.cache_creation_input_tokens > 0
        second = _generated(stack)[-1]["cachedContent"]
        assert len(stack.mock_app[CACHE_BODIES][second]["contents"]) == 2
        history += [{"role": "assistant", "content": "Fixed."}, {"role": "user", "content": "Thanks, and the test?"}]
        third = _ask(client, False, _turns_marked(history))
        assert _generated(stack)[-1]["cachedContent"] == second and len(stack.mock_app[CACHES]) == 2
        assert third.usage.cache_read_input_tokens == stack.mock_app[CACHES][second]["usageMetadata"]["totalTokenCount"]
    finally:
        stack.close()


def _turns_marked(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history with Claude Code's breakpoint on its last block only."""
    out = [dict(m) for m in history]
    last = out[-1]["content"]
    blocks = [{"type": "text", "text": last}] if isinstance(last, str) else [dict(b) for b in last]
    blocks[-1]["cache_control"] = {"type": "ephemeral"}
    out[-1] = {**out[-1], "content": blocks}
    return out


def test_a_pool_of_server_keys_sends_no_cache() -> None:
    """Under client keys the proxy calls Google with its own keys; a pool of them may be several
    projects, and a cache made with one key is not there for the next: no cache is made."""
    from proxy.upstream.gemini.key_pool import KeyPool

    stack = Stack(keys=[KEY_A])
    try:
        stack.upstream.pool = KeyPool(["server-key-1", "server-key-2"])
        for turns in (1, 2):
            answer = _ask(_client(stack, KEY_A), False, _turns(turns))
            assert answer.content[-1].text and not answer.usage.cache_creation_input_tokens
        assert _cache_posts(stack) == 0 and "cachedContent" not in _generated(stack)[-1]
    finally:
        stack.close()


def test_breakpoints_map_onto_gemini_contents_run_by_run() -> None:
    """The pure core (to_gemini/cached_prefix.py): a turn's breakpoint ends the prefix at the end of
    its run of the same role; the last run is never cached; runs that do not line up give no cache;
    the cache and the rest make up the request exactly."""
    from proxy.to_gemini.cached_prefix import prefix_sizes, run_ends, split

    assert run_ends(["user", "user", "model", "user"]) == [2, 3, 4]
    contents = [{"role": "user", "parts": [{"text": "a"}]}, {"role": "user", "parts": [{"text": "b"}]},
                {"role": "model", "parts": [{"text": "c"}]}, {"role": "user", "parts": [{"text": "d"}]}]
    roles = ["user", "model", "user"]  # the client's turns (a user turn's results and text: two contents)
    assert prefix_sizes([None, 0, 1, 2], contents, roles) == [0, 2, 3, 3]
    assert prefix_sizes([0], contents, ["user", "model"]) == [None]  # 2 runs against Gemini's 3: no guess
    body = {"contents": contents, "systemInstruction": {"parts": [{"text": "s"}]}, "tools": [{}],
            "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}, "generationConfig": {"temperature": 0}}
    cache, rest = split(body, 3, "models/m", 300)
    assert cache["ttl"] == "300s" and cache["model"] == "models/m"
    assert {**rest, **{k: cache[k] for k in ("systemInstruction", "tools", "toolConfig")},
            "contents": cache["contents"] + rest["contents"]} == body


def test_every_protocol_reports_gemini_s_cached_tokens() -> None:
    """Gemini's cachedContentTokenCount (an explicit cache, or its implicit caching on 2.5+, Gemini 4
    and the Interactions API) is each protocol's cached count: Responses' input_tokens_details,
    Chat's prompt_tokens_details (both within the input total, as OpenAI counts), Anthropic's
    cache_read_input_tokens (outside input_tokens, as Anthropic counts)."""
    from proxy.anthropic.translator import usage_of
    from proxy.chat.translator import ChatTranslator
    from proxy.from_gemini.usage import map_usage

    meta = {"promptTokenCount": 9000, "cachedContentTokenCount": 6000, "candidatesTokenCount": 10,
            "totalTokenCount": 9010}
    assert map_usage(meta)["input_tokens"] == 9000 and map_usage(meta)["input_tokens_details"]["cached_tokens"] == 6000
    chat = ChatTranslator("m")
    chat.feed({"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
               "usageMetadata": meta})
    usage = chat.completion()["usage"]
    assert usage["prompt_tokens"] == 9000 and usage["prompt_tokens_details"]["cached_tokens"] == 6000
    assert usage_of(meta) == {"input_tokens": 3000, "output_tokens": 10, "cache_read_input_tokens": 6000,
                              "cache_creation_input_tokens": 0}
    assert usage_of(meta, written=True)["cache_creation_input_tokens"] == 6000
