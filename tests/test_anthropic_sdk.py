"""The Anthropic Messages API front-end (proxy/anthropic/) with the official `anthropic` SDK, strictly
validating every answer and stream event, against the strict mock: tool loops sync and streamed on
2.5 and 3, parallel tool_use, tool_result images (functionResponse.parts on 3, siblings on 2.5),
is_error, every tool_choice, thinking with signatures replayed statelessly (the mock checks Gemini 3's),
count_tokens, every error status as the SDK's exception, a cut stream raising, and Claude Code's own
request (tests/recorded/claude-code-2.1.337-request.json) with its 12 tools.

Each test names the peer bug it guards against where there is one (LiteLLM #25322, #25836, #23712;
OmniRoute #12871; LiteLLM PR #32366)."""

import json
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.types import RawMessageStreamEvent
from pydantic import TypeAdapter

from proxy.anthropic import stream_writer
from proxy.mock.validate import search_call_id, sign
from proxy.model_rules import ModelRules
from proxy.server.site import ServerLimits
from tests.harness import Stack

MODELS = ["gemini-2.5-flash", "gemini-3-flash-preview"]
WEATHER = {"name": "get_weather", "description": "Get the current weather",
           "input_schema": {"type": "object", "properties": {"location": {"type": "string"}},
                            "required": ["location"]}}
TIME = {"name": "get_time", "description": "Get the local time",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ASK = "What's the weather in Paris? (get_weather)"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
CLAUDE_CODE = Path(__file__).resolve().parent / "recorded" / "claude-code-2.1.337-request.json"
SENTINEL = "skip_thought_signature_validator"


def _client(stack: Stack, **headers: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0, _strict_response_validation=True,
                               default_headers=headers or None)


def _blocks(message: Any) -> list[dict[str, Any]]:
    return [b.model_dump(exclude_none=True) for b in message.content]


def _model_parts(stack: Stack) -> list[dict[str, Any]]:
    return [p for c in stack.last_body()["contents"] if c["role"] == "model" for p in c["parts"]]


@pytest.mark.parametrize("model", MODELS)
def test_a_tool_loop_with_thinking_survives_a_stateless_resend(stack: Stack, model: str) -> None:
    """LiteLLM #25322: signatures lost across turns. The turn is resent in another session (nothing
    of it in the store, as after a restart): the thinking block's sealed signature brings Gemini's
    own thought signature back; the mock refuses a wrong one on Gemini 3."""
    client = _client(stack)
    first = client.messages.create(model=model, max_tokens=2000, tools=[WEATHER],
                                   thinking={"type": "enabled", "budget_tokens": 2000},
                                   messages=[{"role": "user", "content": ASK}])
    assert first.stop_reason == "tool_use" and first.model == model
    [use] = [b for b in first.content if b.type == "tool_use"]
    assert use.id.startswith("toolu_") and use.name == "get_weather" and use.input["location"]
    signed = [b for b in first.content if b.type == "thinking"]
    assert signed and all(b.signature.startswith("gtp.v3.") for b in signed)

    fresh = _client(stack, **{"x-gtp-session": f"elsewhere-{model}"})
    second = fresh.messages.create(model=model, max_tokens=2000, tools=[WEATHER], messages=[
        {"role": "user", "content": ASK}, {"role": "assistant", "content": _blocks(first)},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny, 21 C"}]}])
    assert second.stop_reason == "end_turn" and "Sunny, 21 C" in second.content[-1].text
    [call] = [p for p in _model_parts(stack) if "functionCall" in p]
    if model.startswith("gemini-3"):
        assert call["thoughtSignature"] != SENTINEL and call["functionCall"].get("id")
    response = stack.last_body()["contents"][-1]["parts"][0]["functionResponse"]
    assert response["name"] == "get_weather" and "Sunny, 21 C" in json.dumps(response)

    forged = [{**b, "signature": b["signature"][:-6] + "AAAAAA"} if b["type"] == "thinking" else b
              for b in _blocks(first)]
    fresh.messages.create(model=model, max_tokens=2000, tools=[WEATHER], messages=[
        {"role": "user", "content": ASK}, {"role": "assistant", "content": forged},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny"}]}])
    if model.startswith("gemini-3"):  # a forged carrier opens nothing: the sentinel stands in
        assert [p for p in _model_parts(stack) if "functionCall" in p][0]["thoughtSignature"] == SENTINEL


@pytest.mark.parametrize("model", MODELS)
def test_a_streamed_tool_loop_sends_the_arguments_as_json_deltas(stack: Stack, model: str) -> None:
    """LiteLLM #25836/#25390: streamed tool_use with `input: {}` and no input_json_delta."""
    client = _client(stack)
    with client.messages.stream(model=model, max_tokens=2000, tools=[WEATHER], thinking={"type": "adaptive"},
                                messages=[{"role": "user", "content": ASK}]) as stream:
        events = list(stream)
        final = stream.get_final_message()
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and "message_stop" in kinds
    deltas = [e.delta.partial_json for e in events if e.type == "content_block_delta"
              and e.delta.type == "input_json_delta"]
    [use] = [b for b in final.content if b.type == "tool_use"]
    assert deltas and json.loads("".join(deltas)) == use.input and use.input["location"]
    assert final.stop_reason == "tool_use"
    with client.messages.stream(model=model, max_tokens=2000, tools=[WEATHER], messages=[
            {"role": "user", "content": ASK}, {"role": "assistant", "content": _blocks(final)},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Rain"}]}]) as s:
        answer = s.get_final_message()
    assert answer.stop_reason == "end_turn" and "Rain" in answer.content[-1].text


def test_parallel_tool_use_and_disable_parallel(stack: Stack) -> None:
    client = _client(stack)
    both = client.messages.create(model="gemini-3-flash-preview", max_tokens=500, tools=[WEATHER, TIME],
                                  messages=[{"role": "user", "content": "get_weather and get_time for Oslo"}])
    uses = [b for b in both.content if b.type == "tool_use"]
    assert [u.name for u in uses] == ["get_weather", "get_time"] and len({u.id for u in uses}) == 2
    back = client.messages.create(model="gemini-3-flash-preview", max_tokens=500, tools=[WEATHER, TIME], messages=[
        {"role": "user", "content": "get_weather and get_time for Oslo"},
        {"role": "assistant", "content": _blocks(both)},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": f"result {n}"}
                                     for n, u in enumerate(uses)]}])
    assert "result 0" in back.content[-1].text and "result 1" in back.content[-1].text
    one = client.messages.create(model="gemini-3-flash-preview", max_tokens=500, tools=[WEATHER, TIME],
                                 tool_choice={"type": "auto", "disable_parallel_tool_use": True},
                                 messages=[{"role": "user", "content": "get_weather and get_time for Oslo"}])
    assert [b.name for b in one.content if b.type == "tool_use"] == ["get_weather"]


@pytest.mark.parametrize(("model", "inside"), [("gemini-3-flash-preview", True), ("gemini-2.5-flash", False)])
def test_an_image_in_a_tool_result_reaches_gemini(stack: Stack, model: str, inside: bool) -> None:
    """LiteLLM #23712: images in tool_result silently dropped."""
    client = _client(stack)
    first = client.messages.create(model=model, max_tokens=500, tools=[WEATHER],
                                   messages=[{"role": "user", "content": ASK}])
    [use] = [b for b in first.content if b.type == "tool_use"]
    client.messages.create(model=model, max_tokens=500, tools=[WEATHER], messages=[
        {"role": "user", "content": ASK}, {"role": "assistant", "content": _blocks(first)},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": [
            {"type": "text", "text": "the radar"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}]}])
    last = stack.last_body()["contents"][-1]["parts"]
    response = last[0]["functionResponse"]
    if inside:  # gemini-3: functionResponse.parts
        assert response["parts"][0]["inlineData"]["data"] == PNG
    else:  # 2.5: a sibling part after the function responses
        assert any(p.get("inlineData", {}).get("data") == PNG for p in last[1:])


def test_is_error_goes_on_the_error_side(stack: Stack) -> None:
    client = _client(stack)
    first = client.messages.create(model="gemini-2.5-flash", max_tokens=500, tools=[WEATHER],
                                   messages=[{"role": "user", "content": ASK}])
    [use] = [b for b in first.content if b.type == "tool_use"]
    client.messages.create(model="gemini-2.5-flash", max_tokens=500, tools=[WEATHER], messages=[
        {"role": "user", "content": ASK}, {"role": "assistant", "content": _blocks(first)},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "no such city",
                                      "is_error": True}]}])
    response = stack.last_body()["contents"][-1]["parts"][0]["functionResponse"]["response"]
    assert "error" in response and "no such city" in json.dumps(response["error"])


@pytest.mark.parametrize(("choice", "mode", "allowed"), [
    ({"type": "auto"}, "AUTO", None), ({"type": "any"}, "ANY", None), ({"type": "none"}, "NONE", None),
    ({"type": "tool", "name": "get_time"}, "ANY", ["get_time"])])
def test_every_tool_choice(stack: Stack, choice: dict, mode: str, allowed: list | None) -> None:
    client = _client(stack)
    m = client.messages.create(model="gemini-2.5-flash", max_tokens=500, tools=[WEATHER, TIME], tool_choice=choice,
                               messages=[{"role": "user", "content": "Oslo, please."}])
    config = stack.last_body().get("toolConfig", {}).get("functionCallingConfig", {})
    assert config.get("mode", "AUTO") == mode and config.get("allowedFunctionNames") == allowed
    if mode == "ANY":
        assert m.stop_reason == "tool_use"


def test_count_tokens_counts_the_request_gemini_would_get(stack: Stack) -> None:
    client = _client(stack)
    counted = client.messages.count_tokens(model="gemini-2.5-flash", tools=[WEATHER], system="Be brief.",
                                           messages=[{"role": "user", "content": "Hello there"}])
    assert counted.input_tokens > 0
    inner = stack.last_body()["generateContentRequest"]
    assert inner["systemInstruction"] == {"parts": [{"text": "Be brief."}]} and inner["tools"]
    # The journal has the countTokens call Gemini got, and its answer (before: no upstream call at all).
    doc = stack.exchange()
    [up] = doc["upstream"]
    assert up["request"] == stack.last_body() and up["answer"]["totalTokens"] == counted.input_tokens
    assert up["attempts"][0]["status"] == 200 and doc["gemini_model"] == "gemini-2.5-flash"


def test_the_model_list_in_anthropics_shape(stack: Stack) -> None:
    page = _client(stack).models.list()
    assert any(m.id == "gemini-2.5-flash" for m in page.data) and all(m.type == "model" for m in page.data)


@pytest.mark.parametrize(("trigger", "error"), [
    ("[[mock:error 400]]", anthropic.BadRequestError), ("[[mock:error 429]]", anthropic.RateLimitError),
    ("[[mock:error 500]]", anthropic.InternalServerError), ("[[mock:error 503]]", anthropic.InternalServerError)])
def test_upstream_errors_are_the_sdks_exceptions(stack: Stack, trigger: str, error: type) -> None:
    with pytest.raises(error) as e:
        _client(stack).messages.create(model="gemini-2.5-flash", max_tokens=100,
                                       messages=[{"role": "user", "content": f"hi {trigger}"}])
    body = e.value.body
    assert body["type"] == "error" and body["error"]["type"] and body["error"]["message"]
    status = e.value.status_code
    assert body["error"]["type"] == {400: "invalid_request_error", 429: "rate_limit_error", 500: "api_error",
                                     503: "overloaded_error"}[status]
    assert e.value.response.headers.get("request-id")


def test_bad_requests_name_the_field_and_keys_are_checked() -> None:
    keyed = Stack(keys=["anthropic-client-key-1"], limits=ServerLimits())
    try:
        with pytest.raises(anthropic.AuthenticationError) as e:
            _client(keyed).messages.create(model="gemini-2.5-flash", max_tokens=10,
                                           messages=[{"role": "user", "content": "hi"}])
        assert e.value.body["error"]["type"] == "authentication_error"
        ok = anthropic.Anthropic(base_url=keyed.url, api_key="anthropic-client-key-1", max_retries=0)
        assert ok.messages.create(model="gemini-2.5-flash", max_tokens=10,
                                  messages=[{"role": "user", "content": "hi"}]).stop_reason == "end_turn"
        with pytest.raises(anthropic.BadRequestError) as e:
            ok.messages.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": "hi"}],
                               max_tokens=10, extra_body={"max_tokens": "ten"})
        assert e.value.body["error"]["type"] == "invalid_request_error" and "max_tokens" in e.value.message
        with pytest.raises(anthropic.BadRequestError) as e:  # a tool_result that answers nothing
            ok.messages.create(model="gemini-2.5-flash", max_tokens=10, messages=[
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "x"}]}])
        assert "toolu_x" in e.value.message
    finally:
        keyed.close()


@pytest.mark.parametrize(("field", "value"), [("max_tokens", -5), ("max_tokens", 0), ("max_tokens", 10**30),
                                               ("temperature", 99), ("temperature", -0.5)])
@pytest.mark.parametrize("stream", [False, True])
def test_values_anthropic_refuses_are_refused_naming_the_field(stack: Stack, field: str, value: Any,
                                                               stream: bool) -> None:
    """Issue 57 item 10: max_tokens below 1 or past Gemini's int32, and temperature outside 0..1 (the
    SDK's own docs: "Ranges from 0.0 to 1.0"), were forwarded to Gemini; Anthropic refuses them with a
    400 invalid_request_error whose message starts with the field, and so does the proxy, before
    Gemini is asked."""
    client = _client(stack)
    # As extra_body: anthropic 2.14's create() takes no temperature any more (older SDKs and Claude Code
    # send it), and refuses a max_tokens this large itself unless streamed (its long-request check).
    args: dict[str, Any] = {"model": "gemini-2.5-flash", "max_tokens": 10, "messages": [
        {"role": "user", "content": "hi"}], "extra_body": {field: value}}
    before = stack.accepted
    with pytest.raises(anthropic.BadRequestError) as e:
        if stream:
            with client.messages.stream(**args) as s:
                s.get_final_message()
        else:
            client.messages.create(**args)
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "invalid_request_error"
    assert e.value.message.startswith(f"{field}: ") or f"'message': '{field}: " in e.value.message
    assert stack.accepted == before, "Gemini was not asked"
    assert client.messages.create(**{**args, "extra_body": {field: 1}}).stop_reason == "end_turn", "1 is in both ranges"


@pytest.mark.parametrize("trigger", ["[[mock:stream_error]]", "[[mock:cut]]", "[[mock:empty parts]]"])
def test_a_stream_that_fails_raises_in_the_sdk(stack: Stack, trigger: str) -> None:
    """Never a finished message: the error event after the start makes the SDK raise."""
    client = _client(stack)
    with pytest.raises(anthropic.APIStatusError), client.messages.stream(
            model="gemini-2.5-flash", max_tokens=100, messages=[{"role": "user", "content": f"long {trigger}"}]) as s:
        s.get_final_message()


def test_a_refusal_is_never_an_empty_end_turn(stack: Stack) -> None:
    m = _client(stack).messages.create(model="gemini-2.5-flash", max_tokens=100,
                                       messages=[{"role": "user", "content": "hi [[mock:safety]]"}])
    assert m.stop_reason == "refusal"
    m = _client(stack).messages.create(model="gemini-2.5-flash", max_tokens=100,
                                       messages=[{"role": "user", "content": "hi [[mock:max_tokens]]"}])
    assert m.stop_reason == "max_tokens"


def test_claude_codes_own_request_is_served(stack: Stack) -> None:
    """OmniRoute #12871, vibeproxy #338: Claude Code's schemas ($schema, propertyNames, exclusiveMinimum,
    additionalProperties) failing every request; LiteLLM PR #32366: cache_control mis-mapped. Its 12 tools,
    a system message in `messages`, cache_control, adaptive thinking, effort, context_management."""
    recorded = json.loads(CLAUDE_CODE.read_text())
    shape = recorded["body_shape"]
    body = {"model": "gemini-3-flash-preview", "max_tokens": shape["max_tokens"], "thinking": shape["thinking"],
            "metadata": {"user_id": "user_1"}, "tools": recorded["tools"],
            "system": [{"type": "text", "text": "You are Claude Code."},
                       {"type": "text", "text": "Be concise.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Run Bash to list files (Bash)"}]},
                         {"role": "system", "content": [{"type": "text", "text": "Environment: linux",
                                                         "cache_control": {"type": "ephemeral"}}]}]}
    client = _client(stack, **{"anthropic-beta": recorded["headers"]["anthropic-beta"] + ",made-up-beta-2099"})
    with client.messages.stream(**body, extra_query={"beta": "true"}, extra_body={  # streamed, as Claude Code does
            "context_management": shape["context_management"], "output_config": shape["output_config"]}) as s:
        m = s.get_final_message()
    assert m.stop_reason == "tool_use" and [b.name for b in m.content if b.type == "tool_use"] == ["Bash"]
    sent = stack.last_body()
    # every tool but the deferred one (its DeferredToolPlaceholder: held back until a search finds it)
    eager = [t["name"] for t in recorded["tools"] if not t.get("defer_loading")]
    assert [d["name"] for d in sent["tools"][0]["functionDeclarations"]] == eager and len(eager) == 11
    assert "Be concise." in json.dumps(sent["systemInstruction"]) and "Environment" in json.dumps(
        sent["systemInstruction"])
    assert sent["generationConfig"]["thinkingConfig"]["includeThoughts"] is True
    assert "user_1" not in json.dumps(sent)  # metadata never goes upstream


def test_a_claude_model_name_is_served_by_its_alias_and_kept_in_the_answer(stack: Stack) -> None:
    m = _client(stack).messages.create(model="claude-opus-5", max_tokens=100,
                                       messages=[{"role": "user", "content": "hi"}])
    assert m.model == "claude-opus-5" and stack.received[-1]["model"] == "gemini-3-flash-preview"


def test_streamed_arguments_arrive_as_real_increments() -> None:
    """Where the model streams call arguments (partialArgs), each fragment is its own input_json_delta."""
    streaming = Stack(rules=ModelRules.parse(stream_arguments=["gemini-3*"]))
    try:
        with _client(streaming).messages.stream(model="gemini-3-flash-preview", max_tokens=500, tools=[WEATHER],
                                                messages=[{"role": "user", "content": ASK}]) as s:
            events = list(s)
            final = s.get_final_message()
        deltas = [e.delta.partial_json for e in events if e.type == "content_block_delta"
                  and e.delta.type == "input_json_delta"]
        [use] = [b for b in final.content if b.type == "tool_use"]
        assert len(deltas) > 1 and json.loads("".join(deltas)) == use.input
        assert streaming.last_body()["toolConfig"]["functionCallingConfig"]["streamFunctionCallArguments"] is True
    finally:
        streaming.close()


def test_documents_redacted_thinking_and_web_search(stack: Stack) -> None:
    client = _client(stack)
    pdf = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoKdHJhaWxlcgo8PC9Sb290IDEgMCBSPj4KJSVFT0YK"
    client.messages.create(model="gemini-2.5-flash", max_tokens=100, messages=[{"role": "user", "content": [
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": pdf}},
        {"type": "text", "text": "Summarize it."}]}])
    parts = stack.last_body()["contents"][-1]["parts"]
    assert parts[0]["inlineData"] == {"mimeType": "application/pdf", "data": pdf}
    client.messages.create(model="gemini-2.5-flash", max_tokens=100, messages=[
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "opaque"},
                                          {"type": "text", "text": "hello"}]},
        {"role": "user", "content": "again"}])
    assert [c["role"] for c in stack.last_body()["contents"]] == ["user", "model", "user"]
    client.messages.create(model="gemini-3-flash-preview", max_tokens=100, messages=[{"role": "user", "content": "hi"}],
                           tools=[WEATHER, {"type": "web_search_20250305", "name": "web_search"}])
    assert {"googleSearch": {}} in stack.last_body()["tools"]


def test_a_body_over_the_limit_is_request_too_large() -> None:
    small = Stack(max_body=4096)
    try:
        with pytest.raises(anthropic.APIStatusError) as e:
            _client(small).messages.create(model="gemini-2.5-flash", max_tokens=10,
                                           messages=[{"role": "user", "content": "x" * 10_000}])
        assert e.value.status_code == 413 and e.value.body["error"]["type"] == "request_too_large"
    finally:
        small.close()


def test_a_quiet_stream_is_kept_alive_with_pings(stack: Stack, monkeypatch) -> None:
    """While Gemini sends nothing, `ping` events go out (Anthropic's keep-alive); the SDK reads on."""
    monkeypatch.setattr(stream_writer, "PING_SECONDS", 0.2)
    body = {"model": "gemini-2.5-flash", "max_tokens": 100, "stream": True,
            "messages": [{"role": "user", "content": "count slowly [[mock:slow 0.7]]"}]}
    req = urllib.request.Request(f"{stack.url}/v1/messages", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "x-api-key": "k"})
    with urllib.request.urlopen(req, timeout=30) as r:
        names = [line[6:].strip() for line in r.read().decode().splitlines() if line.startswith("event:")]
    assert names[0] == "message_start" and "ping" in names and names[-1] == "message_stop"
    with _client(stack).messages.stream(**{k: v for k, v in body.items() if k != "stream"}) as s:
        assert s.get_final_message().stop_reason == "end_turn"


def test_switching_model_mid_conversation_never_breaks_it(stack: Stack) -> None:
    """CLIProxyAPI #1584: a proxy-made signature turned invalid when the user switched model. The
    carrier names the model that made the calls: replayed to another, the calls go with the sentinel
    (which Gemini accepts) instead of a signature it would refuse."""
    client = _client(stack)
    first = client.messages.create(model="gemini-3-flash-preview", max_tokens=500, tools=[WEATHER],
                                   messages=[{"role": "user", "content": ASK}])
    [use] = [b for b in first.content if b.type == "tool_use"]
    other = _client(stack, **{"x-gtp-session": "switched"})
    done = other.messages.create(model="gemini-3-pro-preview", max_tokens=500, tools=[WEATHER], messages=[
        {"role": "user", "content": ASK}, {"role": "assistant", "content": _blocks(first)},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny"}]}])
    assert done.stop_reason == "end_turn"
    assert [p for p in _model_parts(stack) if "functionCall" in p][0]["thoughtSignature"] == SENTINEL


def test_consecutive_turns_of_one_role_are_merged(stack: Stack) -> None:
    _client(stack).messages.create(model="gemini-2.5-flash", max_tokens=100, messages=[
        {"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "x"},
        {"role": "assistant", "content": "y"}, {"role": "user", "content": "c"}])
    contents = stack.last_body()["contents"]
    assert [(c["role"], len(c["parts"])) for c in contents] == [("user", 2), ("model", 2), ("user", 1)]


def test_a_search_is_shown_as_web_search_blocks_and_replayed_exactly(stack: Stack) -> None:
    """Google Search on Gemini 3 as Anthropic's web search: server_tool_use and web_search_tool_result
    blocks; resent statelessly, Gemini gets its own signed toolCall/toolResponse parts back."""
    model, search = "gemini-3-flash-preview", {"type": "web_search_20250305", "name": "web_search"}
    ask = "[[mock:search weather in Paris]] tell me"
    first = _client(stack).messages.create(model=model, max_tokens=500, tools=[WEATHER, search],
                                           messages=[{"role": "user", "content": ask}])
    kinds = [b.type for b in first.content]
    assert kinds[:2] == ["server_tool_use", "web_search_tool_result"] and "text" in kinds and kinds[-1] == "thinking"
    assert first.content[0].input == {"query": "weather in Paris"}
    assert first.content[1].content[0].url == "https://weather.example/weather-in-paris"
    fresh = _client(stack, **{"x-gtp-session": "search-elsewhere"})
    fresh.messages.create(model=model, max_tokens=500, tools=[WEATHER, search], messages=[
        {"role": "user", "content": ask}, {"role": "assistant", "content": _blocks(first)},
        {"role": "user", "content": "thanks"}])
    sid = search_call_id("weather in Paris")
    turn = _model_parts(stack)
    assert turn[0]["toolCall"]["id"] == sid and turn[0]["thoughtSignature"] == sign(
        model, "toolCall:" + sid, {"queries": ["weather in Paris"]})
    assert turn[1]["toolResponse"]["id"] == sid


@pytest.mark.parametrize("model", MODELS)
def test_every_stream_event_is_one_the_sdk_types_allow(stack: Stack, model: str) -> None:
    """The raw stream of a thinking tool call, each event validated by the SDK's RawMessageStreamEvent
    union (its stream helper builds events without validating them)."""
    body = {"model": model, "max_tokens": 500, "stream": True, "tools": [WEATHER], "thinking": {"type": "adaptive"},
            "messages": [{"role": "user", "content": ASK}]}
    req = urllib.request.Request(f"{stack.url}/v1/messages", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "x-api-key": "k"})
    with urllib.request.urlopen(req, timeout=30) as r:
        blocks = r.read().decode().split("\n\n")
    adapter = TypeAdapter(RawMessageStreamEvent)
    seen = []
    for block in blocks:
        lines = block.splitlines()
        name = next((ln[6:].strip() for ln in lines if ln.startswith("event:")), None)
        data = "\n".join(ln[5:].strip() for ln in lines if ln.startswith("data:"))
        if not data:
            continue
        event = json.loads(data)
        assert name == event["type"]
        if event["type"] != "ping":
            adapter.validate_python(event, strict=True)
        seen.append(event["type"])
    assert seen[0] == "message_start" and seen[-2:] == ["message_delta", "message_stop"]
    assert {"content_block_start", "content_block_delta", "content_block_stop"} <= set(seen)
