"""Text dialects: the formats of docs/wire.md#dialects
(as the models' own templates write them, and our own vectors), every chunking of an
answer parsed like the whole (hypothesis), and rendered calls parsed back to what was rendered."""

import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.dialects import DIALECTS, Call, ToolSpec, dialect
from proxy.dialects.base import Result
from proxy.dialects.text_parser import parse_text, summarize

NAMES = ["searchTool", "getOpenIncidentsTool", "parserTool", "get_weather", "get_time", "final_answer", "search",
         "test", "format", "get_current_weather", "grep", "add", "update", "process", "set_status",
         "complex_function", "set_optional", "get-weather", "get_status", "bash", "google:mcp:lookup", "fs.read"]
TOOLS = {n: ToolSpec(n) for n in NAMES}
TOOLS["bash"] = ToolSpec("bash", "", {"type": "object", "properties": {"command": {"type": "string"}}})
TOOLS["zip"] = ToolSpec("zip", "", {"type": "object", "properties": {"code": {"type": "string"}}})

W = "get_weather"
# (dialect, model text, calls as (name, arguments), content, reasoning)
VECTORS = [
    # FunctionGemma (§1)
    ("functiongemma", "<start_function_call>call:get_current_weather{location:<escape>Tokyo, Japan<escape>}"
                      "<end_function_call>", [("get_current_weather", {"location": "Tokyo, Japan"})], "", None),
    ("functiongemma", "<start_function_call>call:add{a:1,b:2}<end_function_call>", [("add", {"a": 1, "b": 2})], "",
     None),
    ("functiongemma", "<start_function_call>call:update{data:{name:<escape>test<escape>,value:42}}<end_function_call>",
     [("update", {"data": {"name": "test", "value": 42}})], "", None),
    ("functiongemma", "<start_function_call>call:process{items:[<escape>a<escape>,<escape>b<escape>,<escape>c<escape>]}"
                      "<end_function_call>", [("process", {"items": ["a", "b", "c"]})], "", None),
    ("functiongemma", "Let me check the weather for you. <start_function_call>call:get_weather{location:<escape>Paris"
                      "<escape>}<end_function_call>", [(W, {"location": "Paris"})], "Let me check the weather for you.",
     None),
    ("functiongemma", "<start_function_call>call:get_weather{location:<escape>London<escape>}<end_function_call>"
                      "<start_function_call>call:get_time{timezone:<escape>UTC<escape>}<end_function_call>",
     [(W, {"location": "London"}), ("get_time", {"timezone": "UTC"})], "", None),
    # Gemma 4 (§2)
    ("gemma4", '<|tool_call>call:get_weather{location:<|"|>Paris<|"|>,units:<|"|>metric<|"|>}<tool_call|>',
     [(W, {"location": "Paris", "units": "metric"})], "", None),
    ("gemma4", "<|tool_call>call:set_status{is_active:true,count:42,score:3.14}<tool_call|>",
     [("set_status", {"is_active": True, "count": 42, "score": 3.14})], "", None),
    ("gemma4", '<|tool_call>call:complex_function{nested:{inner:<|"|>value<|"|>},list:[<|"|>a<|"|>,<|"|>b<|"|>]}'
               "<tool_call|>", [("complex_function", {"nested": {"inner": "value"}, "list": ["a", "b"]})], "", None),
    ("gemma4", "<|tool_call>call:set_optional{value:null,nested:{value:null}}<tool_call|>",
     [("set_optional", {"value": None, "nested": {"value": None}})], "", None),
    ("gemma4", '<|tool_call>call:search{query:<|"|>say "hello"<|"|>}<tool_call|>',
     [("search", {"query": 'say "hello"'})], "", None),
    ("gemma4", '<|tool_call>call:search{query:<|"|>a \\" b<|"|>}<tool_call|>', [("search", {"query": 'a \\" b'})], "",
     None),
    ("gemma4", '<|channel>thought\nI need to check the weather<channel|><|tool_call>call:get_weather{location:<|"|>'
               'Paris<|"|>}<tool_call|>', [(W, {"location": "Paris"})], "", "I need to check the weather"),
    ("gemma4", '<|tool_call>call:get_weather{location:<|"|>Paris<|"|>}<tool_call|><tool_call|>Done.',
     [(W, {"location": "Paris"})], "Done.", None),
    ("gemma4", '<|tool_call>call:get-weather{location:<|"|>London<|"|>}<tool_call|>',
     [("get-weather", {"location": "London"})], "", None),
    ("gemma4", "<|tool_call>call:get_status{}<tool_call|>", [("get_status", {})], "", None),
    ("gemma4", '<|tool_call>call:bash{command:<|"|>ls}<tool_call|>', [("bash", {"command": "ls"})], "", None),
    ("gemma4", "<|channel>thought\nLet me think about this...<channel|>The answer is 42.", [], "The answer is 42.",
     "Let me think about this..."),
    # our own: drift models really write, delimiters and unicode inside strings, names, text around
    ("gemma4", '<|tool_call>call:search(query: "cats")<tool_call|>', [("search", {"query": "cats"})], "", None),
    ("gemma4", "<|tool_call>call:search{query='x'}<tool_call|>", [("search", {"query": "x"})], "", None),
    ("gemma4", '<|tool_call>call:bash{command:<|"|>look<|"|>angle:90}<tool_call|>',
     [("bash", {"command": "look", "angle": 90})], "", None),
    ("gemma4", '<|tool_call>call:search{q:<|"|>a}b{c,d:e\n"f"\u00e9\u4e2d<tool_call><|"|>}<tool_call|>',
     [("search", {"q": 'a}b{c,d:e\n"f"\u00e9\u4e2d<tool_call>'})], "", None),
    ("gemma4", '<|tool_call>call:google:mcp:lookup{k:<|"|>v<|"|>}<tool_call|>', [("google:mcp:lookup", {"k": "v"})],
     "", None),
    ("gemma4", "<|tool_call>call:fs.read{path:[1,[2,{x:[]}]],ok:false}<tool_call|>",
     [("fs.read", {"path": [1, [2, {"x": []}]], "ok": False})], "", None),
    ("gemma4", "<|tool_call>call:zip{code:02134}<tool_call|>", [("zip", {"code": "02134"})], "", None),
    ("gemma4", 'Before <|tool_call>call:search{q:<|"|>a<|"|>}<tool_call|> between <|tool_call>call:search{q:1}'
               "<tool_call|> after", [("search", {"q": "a"}), ("search", {"q": 1})], "Beforebetweenafter", None),
    ("gemma4", '<|tool_call>call:nope{q:<|"|>a<|"|>}<tool_call|>', [],
     '<|tool_call>call:nope{q:<|"|>a<|"|>}<tool_call|>', None),
    ("gemma4", '<|tool_call>call:search{q:<|"|>a<|"|>', [("search", {"q": "a"})], "", None),  # EOS, never closed
    # Hermes / Qwen (§3)
    ("hermes", '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>',
     [("final_answer", {"trigger": True})], "", None),
    ("hermes", 'Sure, let me check the weather.<tool_call>{"name": "get_weather", "arguments": {"city": "NYC"}}'
               "</tool_call>", [(W, {"city": "NYC"})], "Sure, let me check the weather.", None),
    ("hermes", '<tool_call>{"name": "search", "arguments": {"q": "cats"}}</tool_call><tool_call>{"name": "search", '
               '"arguments": {"q": "dogs"}}</tool_call>', [("search", {"q": "cats"}), ("search", {"q": "dogs"})], "",
     None),
    ("hermes", '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}',
     [("final_answer", {"trigger": True})], "", None),
    ("hermes", '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}', [],
     '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}', None),
    ("hermes", '<tool_call>{"name": "search", "arguments": "{\\"q\\": \\"x</tool_call>\\"}"}</tool_call>',
     [("search", {"q": "x</tool_call>"})], "", None),
    ("hermes", "I write <tool_call> tags in prose.", [], "I write <tool_call> tags in prose.", None),
    ("hermes", '<think>I should search</think>\n\n<tool_call>{"name": "search", "arguments": {}}</tool_call>',
     [("search", {})], "", "I should search"),
    ("hermes", "<think>a</think>b", [], "b", "a"),
    ("hermes", "\n<thinking>a</think>b</thinking>\n\nc", [], "c", "a</think>b"),
    # a call inside an unclosed thought ends the thought there (Ollama's Qwen3 parser; tests/peer_vectors/hermes.json)
    ("hermes", '<think>call it <tool_call>{"name": "search", "arguments": {"q": 1}}</tool_call>',
     [("search", {"q": 1})], "", "call it"),
    # Qwen3-Coder
    ("qwen3coder", "Let me look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                   "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
     # no schema declares `days`: vLLM and Ollama keep the text "3" (tests/peer_vectors/qwen3coder.json)
     [(W, {"city": "Paris", "days": "3"})], "Let me look.", None),
    ("qwen3coder", "<tool_call>\n<function=bash>\n<parameter=command>\n007\n</parameter>\n</function>\n</tool_call>",
     [("bash", {"command": "007"})], "", None),
    # Llama 3 (§4)
    ("llama3", '{"name": "searchTool", "parameters": {"query": "test query", "limit": 10}}',
     [("searchTool", {"query": "test query", "limit": 10})], "", None),
    # Marker-less calls are calls only as the whole message (issue 23): JSON inside prose stays prose.
    ("llama3", 'Here is the result: {"name": "getOpenIncidentsTool", "parameters": {}} Would you like to know more?',
     [], 'Here is the result: {"name": "getOpenIncidentsTool", "parameters": {}} Would you like to know more?', None),
    ("llama3", 'The record is {"name": "get_marker"}.', [], 'The record is {"name": "get_marker"}.', None),
    ("llama3", '{"name": "get_marker", "content": "quoted tool output"}', [],
     '{"name": "get_marker", "content": "quoted tool output"}', None),
    ("llama3", '{"name": "searchTool", "parameters": {"query": "test1"}}; {"name": "getOpenIncidentsTool", '
               '"parameters": {}}; {"name": "searchTool", "parameters": {"query": "test2"}}',
     [("searchTool", {"query": "test1"}), ("getOpenIncidentsTool", {}), ("searchTool", {"query": "test2"})], "", None),
    ("llama3", '{"name": "parserTool", "parameters": {"text": "He said \\"Hello {world}\\""}}',
     [("parserTool", {"text": 'He said "Hello {world}"'})], "", None),
    ("llama3", '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>',
     [(W, {"city": "Paris"})], "", None),
    ("llama3", 'An answer with JSON: {"name": "bob", "age": 3}.', [], 'An answer with JSON: {"name": "bob", "age": 3}.',
     None),
    # Mistral (§5)
    ("mistral", '[TOOL_CALLS]get_weather[ARGS]{"location": "San Francisco"}', [(W, {"location": "San Francisco"})],
     "", None),
    ("mistral", '[TOOL_CALLS]get_weather[ARGS]{"location": "NYC"}[TOOL_CALLS]get_time[ARGS]{"timezone": "EST"}',
     [(W, {"location": "NYC"}), ("get_time", {"timezone": "EST"})], "", None),
    # issue 23: a closing [/TOOL_CALLS] (some Magistral builds write one) is a stray marker, not content
    ("mistral", '[TOOL_CALLS]get_weather[ARGS]{"location": "NYC"}[/TOOL_CALLS]', [(W, {"location": "NYC"})], "", None),
    ("mistral", '[TOOL_CALLS]format[ARGS]{"template": "Hello {name}!"}', [("format", {"template": "Hello {name}!"})],
     "", None),
    ("mistral", '[TOOL_CALLS]test[ARGS]{"a": 1}some content after', [("test", {"a": 1})], "some content after", None),
    ("mistral", '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", '
                '"arguments": {"tz": "CET"}}]', [(W, {"city": "Paris"}), ("get_time", {"tz": "CET"})], "", None),
    ("mistral", '[TOOL_CALLS]get_weather{"location": "x"}', [(W, {"location": "x"})], "", None),
    ("mistral", '[TOOL_CALLS]get_weather[CALL_ID]abc123def[ARGS]{"location": "x"}', [(W, {"location": "x"})], "", None),
    ("mistral", "[THINK]hmm[/THINK]Fine.", [], "Fine.", "hmm"),
    # Harmony (§6)
    # issue 23: the completion's first message is the call, recipient before the channel (as harmony renders it)
    ("harmony", ' to=functions.get_weather<|channel|>commentary json<|message|>{"location": "SF"}<|call|>',
     [(W, {"location": "SF"})], "", None),
    ("harmony", 'assistant to=functions.get_weather<|channel|>commentary json<|message|>{"location": "SF"}<|call|>',
     [(W, {"location": "SF"})], "", None),
    ("harmony", '<|channel|>analysis<|message|>User asks weather in SF.<|end|><|start|>assistant<|channel|>commentary '
                'to=functions.get_current_weather <|constrain|>json<|message|>{"location":"San Francisco, CA"}<|call|>',
     [("get_current_weather", {"location": "San Francisco, CA"})], "", "User asks weather in SF."),
    ("harmony", '<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>'
                '{"city":"Paris"}<|call|>', [(W, {"city": "Paris"})], "", None),
    ("harmony", "<|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{}"
                "<|call|>", [(W, {})], "", None),
    ("harmony", "<|start|>assistant<|channel|>final<|message|>This tool call will get the weather.<|return|>", [],
     "This tool call will get the weather.", None),
    ("harmony", '<|channel|>analysis to=functions.grep code<|message|>{"pattern":"foo"}<|call|>',
     [("grep", {"pattern": "foo"})], "", None),
    # pythonic and Gemma 3
    ("pythonic", '[get_weather(city="Paris"), get_time(tz="CET")]',
     [(W, {"city": "Paris"}), ("get_time", {"tz": "CET"})], "", None),
    ("pythonic", "See [1, 2] and [note] here.", [], "See [1, 2] and [note] here.", None),
    ("pythonic", "[search(q='it\\'s ]', n=None, ok=true)] done", [],
     "[search(q='it\\'s ]', n=None, ok=true)] done", None),  # text after the list: not a call (vLLM agrees)
    ("pythonic", "[search(q='it\\'s ]', n=None, ok=true)]", [("search", {"q": "it's ]", "n": None, "ok": True})],
     "", None),
    ("gemma3", '```tool_code\nget_weather(city="Paris")\n```', [(W, {"city": "Paris"})], "", None),
    ("gemma3", 'Calling: [get_weather(city="Paris")]', [], 'Calling: [get_weather(city="Paris")]', None),
    ("gemma3", 'The record is {"name": "get_weather", "content": "sunny"}.', [],
     'The record is {"name": "get_weather", "content": "sunny"}.', None),
    ("gemma3", '{"name": "get_weather", "content": "sunny"}', [], '{"name": "get_weather", "content": "sunny"}', None),
    ("gemma3", '{"name": "get_weather", "parameters": {"city": "P"}}', [(W, {"city": "P"})], "", None),
]


def _expected(calls, content, reasoning):
    return {"calls": [{"name": n, "arguments": a} for n, a in calls], "content": content, "reasoning": reasoning}


def _result(events):
    out = summarize(events)
    out.pop("warnings")
    return out


@pytest.mark.parametrize(("name", "text", "calls", "content", "reasoning"), VECTORS)
def test_vectors(name, text, calls, content, reasoning):
    assert _result(parse_text(dialect(name), TOOLS, text)) == _expected(calls, content, reasoning)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize(("name", "text", "calls", "content", "reasoning"), VECTORS)
def test_every_chunking_parses_like_the_whole(name, text, calls, content, reasoning, data):
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=12)))
    chunks = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    parser = dialect(name).parser(TOOLS)
    events = [e for c in chunks for e in parser.feed(c)] + parser.close()
    assert _result(events) == _expected(calls, content, reasoning)


def test_cut_by_length_inside_a_call_is_text_with_a_warning():
    out = summarize(parse_text(dialect("gemma4"), TOOLS, 'Sure <|tool_call>call:search{q:<|"|>a', finish="length"))
    assert out["calls"] == [] and out["content"] == 'Sure <|tool_call>call:search{q:<|"|>a'
    assert out["warnings"]


def test_think_tags_at_the_edges():
    h = dialect("hermes")
    assert _result(parse_text(h, TOOLS, "<think>abc", finish="length")) == _expected([], "", "abc")
    assert _result(parse_text(h, TOOLS, "a</think>b", think_open=True)) == _expected([], "b", "a")
    assert _result(parse_text(h, TOOLS, "answer", think_open=True)) == _expected([], "answer", None)
    assert _result(parse_text(h, TOOLS, "x <think>not reasoning</think>")) == _expected(
        [], "x <think>not reasoning</think>", None)  # an opener is honoured only at the start


def test_a_huge_block_is_kept_as_text():
    d = dialect("gemma4")
    parser = d.parser(TOOLS)
    parser.max_block = 1000
    text = "<|tool_call>call:search{q:" + "x" * 5000
    events = parser.feed(text) + parser.close()
    assert _result(events)["content"] == text and any(k == "warning" for k, _ in events)


# --- rendering: what a dialect writes, its parser reads back -----------------------------------------
SAFE = st.text(st.characters(codec="utf-8", exclude_characters="<>`\x00"), max_size=12)
KEYS = st.text(string.ascii_letters + "_", min_size=1, max_size=8)
SCALARS = st.one_of(SAFE, st.integers(-10**9, 10**9), st.booleans(), st.none(),
                    st.floats(allow_nan=False, allow_infinity=False, width=32))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=8)
ARGS = st.dictionaries(KEYS, VALUES, max_size=4)


def _schema(value):
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int | float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if value is None:
        return {"type": "null"}
    if isinstance(value, list):
        return {"type": "array"}
    return {"type": "object", "properties": {k: _schema(v) for k, v in value.items()}}


def _same(a, b):
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) or a == b


@settings(max_examples=80, deadline=None)
@given(args=st.lists(ARGS, min_size=1, max_size=3), before=SAFE)
@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_rendered_calls_parse_back(name, args, before):
    d = dialect(name)
    if name == "qwen3coder":  # its values are raw text typed by the schema: one level of scalars
        args = [{k: v for k, v in a.items() if isinstance(v, str | bool | int) and not (isinstance(v, str) and
                                                                                        v != v.strip("\n"))}
                for a in args]
    if d.single_call:
        args = args[:1]
    tools = {f"tool_{i}": ToolSpec(f"tool_{i}", "", _schema(a)) for i, a in enumerate(args)}
    calls = [Call(f"tool_{i}", a) for i, a in enumerate(args)]
    prose = "" if d.bare else before.strip(" \t\r\n[{")  # marker-less calls are the whole message
    text = (prose + " " if prose else "") + d.render_calls(calls)
    out = summarize(parse_text(d, tools, text))
    assert [c["name"] for c in out["calls"]] == [c.name for c in calls], text
    for got, want in zip(out["calls"], calls, strict=True):
        assert _same(got["arguments"], want.arguments), text


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_every_dialect_renders_declarations_and_results(name):
    d = dialect(name)
    tools = [ToolSpec("get_weather", "Weather for a city", {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]})]
    text = d.render_tools(tools, forced=["get_weather"])
    assert "get_weather" in text and "city" in text and "get_weather now" in text
    assert "18" in d.render_results([Result("get_weather", {"output": '{"temp": 18}'})])


def test_gemma4_declarations_match_googles_template():
    tools = [ToolSpec("get_weather", "Get current weather", {"type": "object", "properties": {
        "days": {"type": "integer"}, "location": {"type": "string", "description": "City name"},
        "opts": {"type": "object", "properties": {"detailed": {"type": "boolean"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]})]
    assert dialect("gemma4").render_tools(tools) == (
        '<|tool>declaration:get_weather{description:<|"|>Get current weather<|"|>,parameters:{properties:{days:{type:'
        '<|"|>INTEGER<|"|>},location:{description:<|"|>City name<|"|>,type:<|"|>STRING<|"|>},opts:{properties:'
        '{detailed:{type:<|"|>BOOLEAN<|"|>}},type:<|"|>OBJECT<|"|>},tags:{items:{type:<|"|>STRING<|"|>},type:<|"|>'
        'ARRAY<|"|>},unit:{enum:[<|"|>celsius<|"|>,<|"|>fahrenheit<|"|>],type:<|"|>STRING<|"|>}},required:[<|"|>'
        'location<|"|>],type:<|"|>OBJECT<|"|>}}<tool|>')
    calls = [Call("get_weather", {"location": "Paris", "days": 2, "opts": {"detailed": True}, "tags": ["a", "b"]}),
             Call("get_weather", {"location": "London"})]
    assert dialect("gemma4").render_calls(calls) == (
        '<|tool_call>call:get_weather{days:2,location:<|"|>Paris<|"|>,opts:{detailed:true},tags:[<|"|>a<|"|>,<|"|>b'
        '<|"|>]}<tool_call|><|tool_call>call:get_weather{location:<|"|>London<|"|>}<tool_call|>')
    assert dialect("gemma4").render_results([Result("get_weather", {"temp": 18}), Result("get_weather", "rainy")]) == (
        '<|tool_response>response:get_weather{temp:18}<tool_response|><|tool_response>response:get_weather{value:'
        '<|"|>rainy<|"|>}<tool_response|>')


def test_a_list_with_an_unreadable_call_is_still_held_to_the_whole_message_rule() -> None:
    """The readable calls of a pythonic list with one unreadable call go out only when the list is the
    whole message; followed by prose, the list is text (and its good call is not sent)."""
    d = dialect("pythonic")
    alone = summarize(parse_text(d, {}, "[bad(x=b'z'), get_weather(city='Oslo')]"))
    assert alone["calls"] == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    assert alone["content"] == "bad(x=b'z')" and alone["warnings"]
    prose = summarize(parse_text(d, {}, "[bad(x=b'z'), get_weather(city='Oslo')] is what I would call"))
    assert prose["calls"] == [] and prose["content"] == "[bad(x=b'z'), get_weather(city='Oslo')] is what I would call"


# Ollama's TestTryRepairBraces (ollama/ollama harmony/harmonyparser_test.go, 09ccded8): what is added.
@pytest.mark.parametrize(("body", "closers"), [
    ('{"a":"b"}', None),                                    # complete: nothing to close
    ('{"a":{"b":"c"}', "}"),
    ('{"a":{"b":{"c":"d"', "}}}"),
    ('{"a":"{{{}","b":"c"', "}"),                           # brackets inside strings do not count
    ('{"a":"say \\"hi\\"","b":{"c":"d"', "}}"),             # nor escaped quotes
    ('{"a":["x", {"y": 1', "}]}"),
    ('{"a":"open string', None), ('{"a":1,', None), ('{"a":', None), ('{"a"]', None), ('[1, 2', None),
])
def test_left_open_names_only_missing_closers(body: str, closers: str | None) -> None:
    from proxy.dialects.brackets import left_open

    assert left_open(body) == closers


def test_harmony_closes_a_call_left_open_at_the_end_and_says_so() -> None:
    parser = DIALECTS["harmony"].parser({"get_weather": ToolSpec("get_weather")})
    head = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    events = parser.feed(head + '{"location":"SF","options":{"units":"metric"') + parser.close("stop")
    out = summarize(events)
    assert [(c["name"], c["arguments"]) for c in out["calls"]] == [
        ("get_weather", {"location": "SF", "options": {"units": "metric"}})]
    assert any(kind == "warning" and "'}}' open" in str(value) for kind, value in events)
    # Cut by the token limit, nothing says only brackets were lost: the body stays text.
    parser = DIALECTS["harmony"].parser({"get_weather": ToolSpec("get_weather")})
    out = summarize(parser.feed(head + '{"location":"SF"') + parser.close("length"))
    assert out["calls"] == [] and '{"location":"SF"' in out["content"]
    # A body that is not JSON short of brackets stays text, as before.
    parser = DIALECTS["harmony"].parser({"get_weather": ToolSpec("get_weather")})
    out = summarize(parser.feed(head + '{"location":SF}<|call|>') + parser.close("stop"))
    assert out["calls"] == [] and "SF" in out["content"]
