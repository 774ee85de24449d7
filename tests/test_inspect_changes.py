"""The inspector's "changed" marks (proxy/inspect/changes.py): a structural diff that marks what the
proxy changed, never the translation from one format to another."""

from proxy.inspect.changes import Diff, changes, request_changes

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"},
                                           "days": {"type": "integer", "exclusiveMinimum": 0}},
          "required": ["city"], "additionalProperties": False}
SENT_SCHEMA = {"type": "OBJECT", "properties": {"city": {"type": "STRING"},
                                                "days": {"type": "INTEGER", "description": "(exclusiveMinimum: 0)"}},
               "required": ["city"]}


def marks(entries, side):
    return {(e["op"], e[side]) for e in entries if e[side] is not None}


def test_a_responses_request_marks_the_schema_repairs_and_signatures_only():
    client = {"model": "m", "input": [{"type": "function_call_output", "call_id": "c1", "output": "18C"}],
              "previous_response_id": "resp_1",
              "tools": [{"type": "function", "name": "get_weather", "description": "Weather", "parameters": SCHEMA}]}
    sent = {"contents": [{"role": "user", "parts": [{"text": "hi"}]},
                         {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}, "id": "c1"},
                                                      "thoughtSignature": "sig"}]},
                         {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "id": "c1",
                                                                          "response": {"output": "18C"}}}]}],
            "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather",
                                                 "parameters": SENT_SCHEMA}]}],
            "generationConfig": {"temperature": 1}}
    found = request_changes("responses", "frontend", client, sent)
    assert marks(found, "b") == {("added", "/tools/0/functionDeclarations/0/parameters/properties/days/description"),
                                 ("added", "/contents/1/parts/0/thoughtSignature")}
    assert marks(found, "a") == {("removed", "/tools/0/parameters/properties/days/exclusiveMinimum"),
                                 ("removed", "/tools/0/parameters/additionalProperties")}
    # the types' case, the input's mapping to contents, the options: the format, unmarked


def test_each_protocol_finds_its_tools_and_a_renamed_one_is_a_change():
    sent = {"tools": [{"functionDeclarations": [{"name": "my_tool", "parameters": {"type": "OBJECT", "properties": {
        "q": {"type": "STRING"}}}}]}]}
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    chat = {"tools": [{"type": "function", "function": {"name": "my tool", "parameters": schema}}]}
    assert request_changes("chat", "frontend", chat, sent) == [
        {"op": "changed", "a": "/tools/0/function/name", "b": "/tools/0/functionDeclarations/0/name",
         "was": "my tool"}]
    anthropic = {"tools": [{"name": "my_tool", "description": "", "input_schema": schema}]}
    assert request_changes("anthropic", "frontend", anthropic, sent) == []  # an empty description: nothing lost
    spaced = {"tools": [{"type": "namespace", "name": "my", "tools": [{"type": "function", "name": "tool",
                                                                     "parameters": schema}]}]}
    assert request_changes("responses", "frontend", spaced, sent) == []  # no client tool of that name: unmarked
    sent["tools"][0]["functionDeclarations"][0]["name"] = "my__tool"
    assert request_changes("responses", "frontend", spaced, sent) == []  # the namespace's flat name: the format


def test_a_gemini_clients_request_is_compared_whole():
    client = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}],
              "tools": [{"functionDeclarations": [{"name": "lookup", "parameters": {
                  "type": "object", "properties": {"n": {"type": "integer", "default": 1}}}}]}]}
    sent = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}],
            "tools": [{"functionDeclarations": [{"name": "lookup", "parameters": {
                "type": "OBJECT", "properties": {"n": {"type": "INTEGER", "description": "(default: 1)"}}}}]}]}
    found = request_changes("gemini", "frontend", client, sent)
    assert marks(found, "a") == {("removed", "/tools/0/functionDeclarations/0/parameters/properties/n/default")}
    assert marks(found, "b") == {("added", "/tools/0/functionDeclarations/0/parameters/properties/n/description")}


def test_type_case_is_ignored_only_inside_a_schema():
    client = {"contents": [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"type": "object"}}}]}]}
    sent = {"contents": [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"type": "OBJECT"}}}]}]}
    assert request_changes("gemini", "frontend", client, sent) == [
        {"op": "changed", "a": "/contents/0/parts/0/functionCall/args/type",
         "b": "/contents/0/parts/0/functionCall/args/type", "was": "object"}]  # a call's arguments are data


def test_arrays_align_on_equal_elements():
    turn = {"role": "user", "parts": [{"text": "a"}]}
    diff = Diff()
    diff.compare([turn, {"role": "model", "parts": [{"text": "b"}]}, {"role": "model", "parts": [{"text": "c"}]},
                  turn], [turn, {"role": "model", "parts": [{"text": "b"}, {"text": "c"}]}, turn], (), ())
    assert {(e["op"], e["a"], e["b"]) for e in diff.out} == {
        ("added", None, "/1/parts/1"), ("removed", "/2", None)}  # two streamed chunks merged into one turn
    diff = Diff()
    diff.compare([1, 2, 3], [1, 3], (), ())
    assert diff.out == [{"op": "removed", "a": "/1", "b": None}]
    diff = Diff()
    diff.compare([True], [1], ("x/y~",), ("x",))
    assert diff.out == [{"op": "changed", "a": "/x~1y~0/0", "b": "/x/0", "was": True}]  # RFC 6901 escapes


def test_a_translated_answer_has_no_marks_and_a_gemini_answer_its_changes():
    doc = {"protocol": "responses", "kind": "frontend", "client_request": {"body": {"input": "hi"}},
           "upstream": [{"request": {"contents": []}, "answer": {"candidates": []}, "stream": False}],
           "client_answer": {"body": {"output": []}}}
    assert changes(doc) == {"request": [], "answer": []}
    answer = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "my_tool", "args": {}}}]}}]}
    doc.update(protocol="gemini", upstream=[{"request": {}, "answer": answer, "stream": False}],
               client_answer={"body": {"candidates": [{"content": {"parts": [{"functionCall": {
                   "name": "my tool", "args": {}}}]}}]}})
    assert changes(doc)["answer"] == [{"op": "changed", "a": "/candidates/0/content/parts/0/functionCall/name",
                                       "b": "/candidates/0/content/parts/0/functionCall/name", "was": "my_tool"}]
    doc["upstream"][0]["stream"] = True
    assert changes(doc)["answer"] == []  # a stream's answer is events: not compared
