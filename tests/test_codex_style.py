"""A Codex-style client: store=false, the whole input resent every turn, encrypted reasoning replayed,
developer messages, custom (apply_patch), namespace and hosted tools, an aliased model name."""

import json
from pathlib import Path

import openai

from proxy.mock.validate import SENTINELS, sign

CODEX = json.loads((Path(__file__).resolve().parent / "fixtures" / "tool-schemas" /
                    "openai-codex.nonfunction-tools.json").read_text())
APPLY_PATCH = next(e["tool"] for e in CODEX if e["name"] == "apply_patch")
NAMESPACE = next(e["tool"] for e in CODEX if e["name"] == "multi_agent_v1")
EXEC = {"type": "function", "name": "exec_command", "description": "Run a command", "strict": False,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"],
                       "additionalProperties": False}}
TOOLS = [EXEC, APPLY_PATCH, NAMESPACE, {"type": "web_search"}, {"type": "tool_search", "execution": "client"}]


def test_five_stateless_rounds_on_gemini3(stack) -> None:
    prompt = "[[mock:rounds 5]] exec_command apply_patch multi_agent_v1__close_agent cmd=ls input=PATCH"
    items: list = [{"role": "developer", "content": "You are Codex."},
                   {"role": "developer", "content": "Sandbox: none."},
                   {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}]
    for n in range(5):
        client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True,
                               max_retries=0, default_headers={"x-gtp-session": f"codex-round-{n}"})
        with client.responses.stream(model="gpt-5.5", input=items, tools=TOOLS, store=False,
                                     include=["reasoning.encrypted_content"], parallel_tool_calls=True,
                                     tool_choice="auto", reasoning={"effort": "medium"},
                                     extra_body={"prompt_cache_key": "abc", "client_metadata": {}}) as s:
            kinds = [e.type for e in s]
            final = s.get_final_response()
        assert final.model == "gpt-5.5" and stack.received[-1]["model"] == "gemini-3-flash-preview"
        body = stack.last_body()
        assert body["systemInstruction"] == {"parts": [{"text": "You are Codex."}, {"text": "Sandbox: none."}]}
        # web_search is Google Search next to the functions (Gemini 3); Codex's client-run tool_search is a
        # function Gemini calls (tests/test_tool_search.py); namespace members are flattened.
        assert body["tools"][1:] == [{"googleSearch": {}}] and body["toolConfig"]["includeServerSideToolInvocations"]
        assert [d["name"] for d in body["tools"][0]["functionDeclarations"]] == [
            "exec_command", "apply_patch", *[f"multi_agent_v1__{t['name']}" for t in NAMESPACE["tools"]],
            "tool_search"]
        assert body["tools"][0]["functionDeclarations"][1]["parameters"]["properties"]["input"]["type"] == "STRING"
        assert body["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "MEDIUM"}
        # Every replayed call turn carries Gemini's own signature on its first call, never the sentinel.
        for content in body["contents"]:
            calls = [p for p in content["parts"] if "functionCall" in p]
            if calls:
                first = calls[0]
                assert first["thoughtSignature"] not in SENTINELS
                assert first["thoughtSignature"] == sign("gemini-3-flash-preview", first["functionCall"]["name"],
                                                         first["functionCall"]["args"])
        by_type = {o.type: o for o in final.output}
        assert set(by_type) == {"function_call", "custom_tool_call", "reasoning"}
        assert "response.custom_tool_call_input.done" in kinds
        custom = by_type["custom_tool_call"]
        assert custom.name == "apply_patch" and custom.input == "PATCH"
        ns_call = next(o for o in final.output if o.type == "function_call" and o.namespace)
        assert (ns_call.namespace, ns_call.name) == ("multi_agent_v1", "close_agent")
        assert final.output[-1].type == "reasoning" and final.output[-1].encrypted_content.startswith("gtp.v3.")
        # Codex replays every output item, then its outputs.
        items += [o.model_dump(exclude_none=True) for o in final.output]
        for o in final.output:
            if o.type == "function_call":
                items.append({"type": "function_call_output", "call_id": o.call_id, "output": f"ok {n}"})
            elif o.type == "custom_tool_call":
                items.append({"type": "custom_tool_call_output", "call_id": o.call_id, "output": "Done!"})
    last = client.responses.create(model="gpt-5.5", input=items, tools=TOOLS, store=False,
                                   include=["reasoning.encrypted_content"])
    assert last.output_text.startswith("Tool results: exec_command returned")
    assert len([c for c in stack.last_body()["contents"] if c["role"] == "model"]) == 5


def test_a_custom_tool_inside_a_namespace_is_offered_and_called_back_with_its_namespace(stack) -> None:
    """A namespace may hold custom tools (the SDK's NamespaceToolParam): once they were left out of
    what Gemini saw without a word."""
    tools = [{"type": "namespace", "name": "edit", "description": "Editing tools",
              "tools": [{**APPLY_PATCH}, {**EXEC}]}]
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)
    out = client.responses.create(model="gemini-3-flash-preview", tools=tools,
                                  input="edit__apply_patch input=PATCH")
    assert [d["name"] for d in stack.last_body()["tools"][0]["functionDeclarations"]] == [
        "edit__apply_patch", "edit__exec_command"]
    [call] = [o for o in out.output if o.type == "custom_tool_call"]
    assert (call.namespace, call.name, call.input) == ("edit", "apply_patch", "PATCH")
    follow = client.responses.create(model="gemini-3-flash-preview", tools=tools, previous_response_id=out.id,
                                     input=[{"type": "custom_tool_call_output", "call_id": call.call_id,
                                             "output": "Done!"}])
    assert follow.status == "completed"
    [response] = [p["functionResponse"] for c in stack.last_body()["contents"] for p in c["parts"]
                  if "functionResponse" in p]
    assert response["name"] == "edit__apply_patch"
