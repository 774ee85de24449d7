"""Codex MultiAgentV2 on the Responses front-end: `agent_message` input items, the `encrypted` mark on
tool parameters and the `collaboration` namespace (openai/codex PRs #26210, #27830, #35845).

The item shapes are Codex's own wire: `agent_message` with `author`, `recipient` and `input_text` /
`encrypted_content` parts as captured in MetaFARS/codex-relay #60 (Codex 0.15x); the namespace and the
`message` schema with `"encrypted": true` as codex-rs `multi_agents_spec.rs` builds them
(`JsonSchema::string(...).with_encrypted()`, quoted in openai/codex #46939)."""

import json

import openai
import pytest

from proxy.errors import ProxyError
from proxy.schema.json_schema_for_gemini import json_schema_for_gemini
from proxy.schema.json_schema_to_gemini import json_schema_to_gemini, marks_encrypted
from proxy.schema.repairs import schema_repairs
from proxy.to_gemini.input_to_contents import input_to_contents, parse_input

CIPHERTEXT = "gAAAAABo" + "x" * 120  # OpenAI's Fernet-like ciphertext (openai/codex #43893: "gAAAA…")
SPAWN_PARAMS = {"type": "object", "required": ["task_name", "message"], "additionalProperties": False,
                "properties": {"task_name": {"type": "string"},
                               "message": {"type": "string", "encrypted": True,
                                           "description": "Initial plain-text task for the new agent."}}}
COLLABORATION = {"type": "namespace", "name": "collaboration", "description": "Agents",
                 "tools": [{"type": "function", "name": "spawn_agent", "description": "Spawn an agent",
                            "parameters": SPAWN_PARAMS, "strict": False}]}


def agent_message(content, author="/root", recipient="/root/worker"):
    return {"type": "agent_message", "id": "amsg_1", "author": author, "recipient": recipient, "content": content}


def test_an_agent_message_is_a_user_turn_naming_its_author_and_ciphertext_is_withheld() -> None:
    items = parse_input([agent_message([
        {"type": "input_text", "text": "Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\n"},
        {"type": "encrypted_content", "encrypted_content": CIPHERTEXT}])])
    conv = input_to_contents(items)
    [turn] = conv.contents
    text = turn["parts"][0]["text"]
    assert turn["role"] == "user" and text.startswith("Agent message from /root to /root/worker:\nMessage Type")
    assert CIPHERTEXT not in json.dumps(conv.contents)  # never given to Gemini as if it were text
    assert f"withheld: {len(CIPHERTEXT)} characters" in text  # but named, never dropped silently


def test_plain_string_and_null_content_and_an_unknown_part() -> None:
    [turn] = input_to_contents(parse_input([agent_message("done: 3 files", author="/root/worker",
                                                          recipient="/root")])).contents
    assert turn["parts"][0]["text"] == "Agent message from /root/worker to /root:\ndone: 3 files"
    [turn] = input_to_contents(parse_input([agent_message(None)])).contents
    assert turn["parts"][0]["text"] == "Agent message from /root to /root/worker:\n"
    with pytest.raises(ProxyError) as e:
        input_to_contents(parse_input([agent_message([{"type": "input_image", "image_url": "x"}])]))
    assert e.value.param == "input[0].content[0]"


def test_the_encrypted_mark_is_left_out_of_both_schema_modes_and_noted() -> None:
    assert marks_encrypted(SPAWN_PARAMS) and not marks_encrypted({"properties": {"a": {"type": "string"}}})
    assert "encrypted" not in json.dumps(json_schema_to_gemini(SPAWN_PARAMS))
    js = json_schema_for_gemini(SPAWN_PARAMS)
    assert "encrypted" not in json.dumps(js) and js["properties"]["message"]["type"] == "string"
    assert any(r["keyword"] == "encrypted" and "plain text" in r["action"] for r in schema_repairs(SPAWN_PARAMS))


@pytest.mark.parametrize("stream", [False, True])
def test_sdk_collaboration_call_is_marked_plaintext_and_an_agent_message_is_accepted(
        client: openai.OpenAI, stack, stream: bool) -> None:
    """The openai SDK (strict) sends the namespace and an agent_message; the mock sees neither the
    mark nor the ciphertext; the call comes back namespaced with `encrypted_function_args: []`."""
    before = stack.accepted
    kwargs = dict(model="gemini-3-flash-preview", tools=[COLLABORATION], store=False,
                  input=[agent_message([{"type": "encrypted_content", "encrypted_content": CIPHERTEXT}],
                                       author="/root/lead", recipient="/root"),
                         {"role": "user", "content": "Call collaboration__spawn_agent task_name=w message=hello"}])
    if stream:
        with client.responses.stream(**kwargs) as s:
            added = [e.item for e in s if e.type == "response.output_item.added" and e.item.type == "function_call"]
            final = s.get_final_response()
        assert added[0].model_extra["encrypted_function_args"] == []
    else:
        final = client.responses.create(**kwargs)
    [call] = [o for o in final.output if o.type == "function_call"]
    assert (call.namespace, call.name) == ("collaboration", "spawn_agent")
    assert call.model_extra["encrypted_function_args"] == [] and json.loads(call.arguments)["message"] == "hello"
    [sent] = stack.received[before - stack.accepted:]
    body = json.dumps(sent["body"])
    assert CIPHERTEXT not in body and '"encrypted"' not in body
    assert sent["body"]["contents"][0]["parts"][0]["text"].startswith("Agent message from /root/lead to /root:")
