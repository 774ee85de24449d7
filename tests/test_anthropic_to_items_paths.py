"""messages_to_items' shortcuts on a long history (a text result taken as it is, a block's path
written only for its 400) give the items and the errors they gave before."""

import pytest

from proxy.anthropic.to_items import LOADED_NOTE, messages_to_items
from proxy.errors import ProxyError
from proxy.wire.anthropic import Message


def items(*messages: dict) -> list[dict]:
    return messages_to_items([Message.model_validate(m) for m in messages])


def test_tool_results_of_every_content() -> None:
    ref = {"type": "tool_reference", "tool_name": "Grep"}
    got = items({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "text"},
        {"type": "tool_result", "tool_use_id": "b", "content": ""},
        {"type": "tool_result", "tool_use_id": "c"},
        {"type": "tool_result", "tool_use_id": "d", "content": [{"type": "text", "text": "t"}], "is_error": True},
        {"type": "tool_result", "tool_use_id": "e", "content": [ref]}]})
    assert [(i["call_id"], i["output"], i["is_error"], i.get("result_object")) for i in got] == [
        ("a", "text", False, None), ("b", "", False, None), ("c", "", False, None), ("d", "t", True, None),
        ("e", LOADED_NOTE.format("Grep"), False, {"output": LOADED_NOTE.format("Grep"), "tools": [{"name": "Grep"}]})]


@pytest.mark.parametrize("block, message, param", [
    ({"type": "tool_use", "id": "x"}, "messages[1].content[1]: a tool_use block needs an id and a name.",
     "messages[1].content[1]"),
    ({"type": "image", "source": {}}, "Content blocks of type 'image' are not supported in an assistant turn "
     "('messages[1].content[1]').", "messages[1].content[1].type"),
])
def test_an_assistant_block_s_400_names_it(block: dict, message: str, param: str) -> None:
    with pytest.raises(ProxyError) as e:
        items({"role": "user", "content": "hi"},
              {"role": "assistant", "content": [{"type": "text", "text": "ok"}, block]})
    assert (e.value.message, e.value.param) == (message, param)


def test_a_result_object_is_refused_by_name() -> None:
    with pytest.raises(ProxyError) as e:
        items({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": {"x": 1}}]})
    assert e.value.param == "messages[0].content[0].content"


def test_referenced_tools_are_found_in_results_and_search_results_only() -> None:
    from proxy.anthropic.to_items import referenced_tools

    ref = {"type": "tool_reference", "tool_name": "Grep"}
    messages = [Message.model_validate(m) for m in (
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [ref]},
                                     {"type": "tool_result", "tool_use_id": "b", "content": "Grep"},
                                     {"type": "text", "text": "x"}]},
        {"role": "assistant", "content": [{"type": "tool_search_tool_result", "tool_use_id": "s", "content": {
            "type": "tool_search_tool_search_result", "tool_references": [{**ref, "tool_name": "Read"}]}},
            {"type": "text", "text": "y", "content": [ref | {"tool_name": "NotAResult"}]}]},
        {"role": "user", "content": "plain"})]
    assert referenced_tools(messages) == {"Grep", "Read"}


@pytest.mark.parametrize("content, param", [
    ([{"type": "text"}], "messages[1].content[0].text"),
    ([{"type": "text", "text": "a"}, {"type": "tool_use", "id": "x", "name": "f"}], "messages[1].content[1].type"),
    ([{"type": "text", "text": "a"}, {"type": "image", "source": {"type": "base64"}}], "messages[1].content[1].source"),
    ([{"type": "tool_result"}], "messages[1].content[0].tool_use_id"),
    ([{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "tool_reference"}]}],
     "messages[1].content[0].content[0].tool_name"),
    ([{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text"}]}],
     "messages[1].content[0].content[0].text"),
])
def test_a_user_block_s_400_names_it(content: list, param: str) -> None:
    with pytest.raises(ProxyError) as e:
        items({"role": "user", "content": "hi"}, {"role": "user", "content": content})
    assert e.value.param == param


def test_user_texts_and_media() -> None:
    got = items({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image", "source": {
        "type": "url", "url": "https://x/i.png"}}]}, {"role": "user", "content": [{"type": "text", "text": "b"}]})
    assert got == [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "https://x/i.png"},
        {"type": "input_text", "text": "b"}]}]
