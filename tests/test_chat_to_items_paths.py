"""chat_messages_to_items writes a field's path only where it is needed (parts to convert, a 400, a call's
arguments that only the standard parse can judge): the items and the errors are those of before."""

from typing import Any

import pytest

from proxy.chat.to_items import chat_messages_to_items
from proxy.errors import ProxyError


def call(arguments: Any, cid: str = "c1") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "f", "arguments": arguments}}


def test_items_of_every_content() -> None:
    got = chat_messages_to_items([
        {"role": "system", "content": "s"}, {"role": "developer", "content": [{"type": "text", "text": "d"}]},
        {"role": "user", "content": "u"}, {"role": "user", "content": None},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "b"}]},
        {"role": "assistant", "content": None, "tool_calls": [call('{"x": 1}'), call("", "c2"), call(None, "c3")]},
        {"role": "assistant", "content": ""}, {"role": "assistant", "content": [{"type": "text", "text": "t"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"}, {"role": "tool", "tool_call_id": "c2"},
        {"role": "assistant", "tool_calls": [call("not json", "c4")]}])
    assert got == [
        {"type": "message", "role": "system", "content": "s"}, {"type": "message", "role": "developer", "content": "d"},
        {"type": "message", "role": "user", "content": "u"}, {"type": "message", "role": "user", "content": ""},
        {"type": "message", "role": "user", "content": "ab"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x": 1}'},
        {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c3", "name": "f", "arguments": "{}"},
        {"type": "message", "role": "assistant", "content": "t"},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        {"type": "function_call_output", "call_id": "c2", "output": ""},
        {"type": "function_call", "call_id": "c4", "name": "f", "arguments": "not json"}]


@pytest.mark.parametrize("messages, param", [
    ([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [call("{}"), call('{"n": NaN}')]}],
     "messages[1].tool_calls[1].function.arguments"),
    ([{"role": "assistant", "tool_calls": [call('{"n": 1e400}')]}], "messages[0].tool_calls[0].function.arguments"),
    ([{"role": "user", "content": "x"}, {"role": "tool", "content": "r"}], "messages[1].tool_call_id"),
    ([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "input_audio"}]}],
     "messages[0].content[1].input_audio.data"),
    ([{"role": "system", "content": [{"type": "image_url"}]}], "messages[0].content[0]"),
    ([{"role": "user", "content": "x"}, {"role": "assistant", "content": [{"type": "other"}]}],
     "messages[1].content[0]"),
])
def test_a_400_names_its_field(messages: list[dict[str, Any]], param: str) -> None:
    with pytest.raises(ProxyError) as e:
        chat_messages_to_items(messages)
    assert e.value.param == param
