"""Local OpenAI-compatible servers behind `--openai-upstream`: the mock local server (a vLLM without a
tool parser refuses `tools`; models answer in their family's dialect) gives the strict openai SDK
correct calls in every dialect, streamed and not; two-pass thinking; a single-call model with
parallel calls; a native server with a parser, and one whose parser misses the calls (rescued)."""

import json
import urllib.error
import urllib.request

import openai
import pytest

from proxy.mock.local_server import LOCAL_RECEIVED, NO_PARSER, REASONING, start_local_mock
from proxy.model_rules import ModelRules
from proxy.upstream.openai.client import OpenAIUpstream
from proxy.upstream.openai.two_pass import CUT_THINKING, first_pass, prefill
from proxy.upstream.routes import RoutedUpstream
from tests.harness import LoopThread, Stack
from tests.test_text_calls_gemini import chat_turn

MODELS = {"hermes": "qwen2.5-7b", "qwen3coder": "qwen3-coder-30b", "llama3": "llama-3.1-8b",
          "mistral": "mistral-small-3", "harmony": "gpt-oss-20b", "pythonic": "pythonic-1b",
          "functiongemma": "functiongemma-270m", "gemma4": "gemma-4-e2b", "gemma3": "gemma-3-1b"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Time", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
RESPONSES_TOOLS = [{"type": "function", **t["function"]} for t in TOOLS]


@pytest.fixture(scope="module")
def local():
    lt = LoopThread()
    runner, url, app = lt.run(start_local_mock())
    rules = ModelRules.parse(
        tool_modes=[f"{m}={d}" for d, m in MODELS.items()] + ["qwen3-*-think*=hermes", "*-toolparser=native",
                                                             "*-brokenparser=native", "qwen-plain=native"],
        rescue_text_calls=["qwen3-8b-brokenparser=hermes"], think_open=["*-preopen"])

    def wrap(gemini):
        server = OpenAIUpstream(url, two_pass=[("qwen3-8b-think", 20), ("qwen3-32b-think", 500),
                                               ("qwen3-4b-think-preopen", 20)], think_open=("*-preopen",))
        return RoutedUpstream(gemini, [("gemini-*", gemini), ("*", server)])

    stack = Stack(wrap=wrap, rules=rules, journal=True)
    stack.local_app, stack.local_url = app, url
    yield stack
    stack.close()
    lt.run(runner.cleanup())
    lt.stop()


@pytest.fixture
def oai(local) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{local.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)


def _received(local) -> list[dict]:
    return local.local_app[LOCAL_RECEIVED]


def _chat(oai, model, messages, stream):
    return chat_turn(oai, model, messages, TOOLS, stream)


def test_native_mode_passes_a_parserless_servers_refusal_on(oai):
    with pytest.raises(openai.BadRequestError) as e:  # native mode for a parserless server: its refusal, truthfully
        oai.chat.completions.create(model="qwen-plain", messages=[{"role": "user", "content": "get_weather"}],
                                    tools=TOOLS)
    assert NO_PARSER in str(e.value)


@pytest.mark.parametrize("dialect", sorted(MODELS))
@pytest.mark.parametrize("stream", [False, True])
def test_every_dialect_on_a_local_server_completes_a_tool_loop(local, oai, dialect, stream):
    model = MODELS[dialect]
    messages = [{"role": "system", "content": "Answer well."},
                {"role": "user", "content": "get_weather get_time city=Kyoto"}]
    calls, content, finish = _chat(oai, model, messages, stream)
    assert finish == "tool_calls" and content is None
    assert [(n, a) for _, n, a in calls] == [("get_weather", {"city": "Kyoto"}), ("get_time", {"city": "Kyoto"})]
    sent = _received(local)[-1]
    assert "tools" not in sent and sent["model"] == model
    messages += [{"role": "assistant", "tool_calls": [
        {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls]},
        *[{"role": "tool", "tool_call_id": i, "content": f"{n} says ok"} for i, n, _ in calls]]
    calls, content, finish = _chat(oai, model, messages, stream)
    assert finish == "stop" and not calls and content.startswith("Tool results:")
    if dialect == "llama3":  # the template refuses parallel calls in history: one call per turn was sent
        roles = [m["role"] for m in _received(local)[-1]["messages"]]
        assert roles == ["system", "user", "assistant", "user", "assistant", "user"]


@pytest.mark.parametrize("stream", [False, True])
def test_two_pass_thinking_cut_by_the_budget(local, oai, stream):
    kw = {"model": "qwen3-8b-think", "input": "get_weather city=Nara", "tools": RESPONSES_TOOLS}
    before = len(_received(local))
    if stream:
        with oai.responses.stream(**kw) as s:
            r = s.get_final_response()
    else:
        r = oai.responses.create(**kw)
    kinds = [o.type for o in r.output]
    assert kinds == ["reasoning", "function_call"]
    assert r.output[0].summary[0].text.startswith("Let me think about this step by step.")
    assert json.loads(r.output[1].arguments) == {"city": "Nara"}
    first, second = _received(local)[before:]
    assert first["max_tokens"] == 20 and first["stop"] == ["</think>"] and not first.get("stream")
    assert second["continue_final_message"] is True and second["add_generation_prompt"] is False
    assert second["messages"][-1]["content"].endswith(f"{CUT_THINKING}\n</think>\n\n")


def test_two_pass_thinking_closed_within_the_budget(local, oai):
    before = len(_received(local))
    r = oai.responses.create(model="qwen3-32b-think", input="get_weather city=Nara", tools=RESPONSES_TOOLS)
    assert [o.type for o in r.output] == ["reasoning", "function_call"]
    first, second = _received(local)[before:]
    assert second["messages"][-1]["content"] == f"<think>\n{REASONING.strip()}\n</think>\n\n"


@pytest.mark.parametrize("stream", [False, True])
def test_a_template_that_pre_opens_the_think_tag(local, oai, stream):
    """Qwen3-thinking-2507's template ends the prompt with `<think>`: the answer shows only `</think>`.
    With --think-open the reasoning is reasoning, not content with a stray tag."""
    model = "qwen3-30b-think-preopen"
    kw = {"model": model, "input": "get_weather city=Nara", "tools": RESPONSES_TOOLS}
    if stream:
        with oai.responses.stream(**kw) as s:
            r = s.get_final_response()
    else:
        r = oai.responses.create(**kw)
    assert [o.type for o in r.output] == ["reasoning", "function_call"]
    assert "</think>" not in r.output[0].summary[0].text
    r = oai.responses.create(**{**kw, "model": "qwen3-4b-think-preopen"})  # and two-pass on such a template
    assert [o.type for o in r.output] == ["reasoning", "function_call"]
    assert _received(local)[-1]["messages"][-1]["content"].endswith(f"{CUT_THINKING}\n</think>\n\n")


@pytest.mark.parametrize("stream", [False, True])
def test_the_journal_keeps_what_the_local_server_got_and_sent(local, oai, stream):
    """The upstream bodies the journal shows are the server's own: the Chat Completions request the
    proxy sent (the tools rendered into the prompt, for a server without a tool parser), and the
    answer as the server wrote it (the calls as Hermes text); the summary has the calls the proxy
    read from it. Before, it showed the Gemini-shaped body the proxy translated from, and the
    translated answer."""
    calls, _, _ = _chat(oai, MODELS["hermes"], [{"role": "user", "content": "get_weather city=Oslo"}], stream)
    assert [n for _, n, _ in calls] == ["get_weather"]
    doc = local.exchange()
    [up] = doc["upstream"]
    assert up["wire"] == "chat_completions" and [a["status"] for a in up["attempts"]] == [200]
    sent = up["request"]
    assert sent == _received(local)[-1] and "tools" not in sent and "<tools>" in json.dumps(sent["messages"])
    if stream:
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in up["chunks"] if c.get("choices"))
        assert up["answer"] is None  # a Chat Completions stream is shown as it came, not merged as Gemini's
    else:
        text = up["answer"]["choices"][0]["message"]["content"]
    assert "<tool_call>" in text and "get_weather" in text
    assert [c["name"] for c in doc["calls"]] == ["get_weather"] and doc["finish_reasons"]


def test_the_journal_keeps_both_passes_of_two_pass_thinking(local, oai):
    _chat(oai, "qwen3-8b-think", [{"role": "user", "content": "think about get_weather city=Oslo"}], False)
    first, second = local.exchange()["upstream"]
    assert first["request"]["max_tokens"] == 20 and first["request"]["stop"] == ["</think>"]
    assert "choices" in first["answer"] and first["wire"] == second["wire"] == "chat_completions"
    assert second["request"]["continue_final_message"] is True
    assert second["request"]["messages"][-1]["role"] == "assistant"


def test_first_pass_edges():
    assert first_pass("<think>\nabc", "length", None, False).reasoning == "abc"
    fp = first_pass("<think>abc", "stop", "</think>", False)
    assert fp.closed and prefill(fp) == "<think>\nabc\n</think>\n\n"
    assert first_pass("just an answer", "stop", None, False).reasoning is None  # the model did not think
    unterminated = first_pass("pre-opened thinking", "length", None, True)
    assert prefill(unterminated).endswith(f"{CUT_THINKING}\n</think>\n\n")  # a safe, closed block


@pytest.mark.parametrize("stream", [False, True])
def test_native_server_with_a_parser_and_a_broken_one(local, oai, stream):
    messages = [{"role": "user", "content": "get_weather city=Lima"}]
    calls, _, finish = _chat(oai, "qwen3-8b-toolparser", messages, stream)
    assert finish == "tool_calls" and [(n, a) for _, n, a in calls] == [("get_weather", {"city": "Lima"})]
    assert _received(local)[-1]["tools"][0]["function"]["name"] == "get_weather"  # passed through
    calls, content, finish = _chat(oai, "qwen3-8b-brokenparser", messages, stream)
    assert finish == "tool_calls" and content is None
    assert [(n, a) for _, n, a in calls] == [("get_weather", {"city": "Lima"})]


def test_local_mock_answers_like_vllm(local):
    req = urllib.request.Request(f"{local.local_url}/chat/completions", headers={"content-type": "application/json"},
                                 data=json.dumps({"model": "qwen-plain", "tools": TOOLS,
                                                  "messages": [{"role": "user", "content": "hi"}]}).encode())
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 400 and json.loads(e.value.read())["message"] == NO_PARSER
