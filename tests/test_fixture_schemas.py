"""Every real client tool schema in ../shared/fixtures converts to a declaration the strict mock accepts."""

import json

import openai
import pytest

from proxy.mock.validate import GeminiRejection, validate_request
from proxy.tools.prepare_tools import prepare_tools
from tests.conftest import fixture_dir, fixture_tools

TOOLS = fixture_tools()


def _request(declarations_tools: list[dict]) -> dict:
    return {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": declarations_tools}


def test_corpus_is_present() -> None:
    assert len(TOOLS) >= 300, f"tool-schema corpus missing or short at {fixture_dir()}"


@pytest.mark.parametrize("json_mode", [False, True], ids=["parameters", "parametersJsonSchema"])
@pytest.mark.parametrize(("label", "entry"), TOOLS, ids=[t[0] for t in TOOLS])
def test_converted_schema_is_accepted(label: str, entry: dict, json_mode: bool) -> None:
    tool = {"type": "function", "name": entry["name"], "description": entry.get("description"),
            "parameters": entry.get("parameters")}
    before = json.dumps(tool, sort_keys=True)
    prepared = prepare_tools([tool], json_schema_mode=json_mode)
    assert json.dumps(tool, sort_keys=True) == before, "the client's tool must not be modified"
    validate_request(_request(prepared.gemini_tools()), "gemini-2.5-flash")
    validate_request(_request(prepared.gemini_tools()), "gemini-3-pro-preview")
    [decl] = prepared.declarations
    assert prepared.names.client(decl["name"]) == entry["name"]


REJECTED = [e for e in json.loads((fixture_dir() / "gemini-rejections-from-issues.json").read_text())]


def test_cyclic_schema_is_refused_raw_and_accepted_converted() -> None:
    entry = next(e for e in REJECTED if e["name"] == "cyclic_parent_ref")
    raw = {"functionDeclarations": [{"name": "t", "parametersJsonSchema": entry["parameters"]}]}
    with pytest.raises(GeminiRejection) as info:
        validate_request(_request([raw]), "gemini-3-pro-preview")
    assert info.value.message == "Request contains an invalid argument."
    prepared = prepare_tools([{"type": "function", "name": "t", "parameters": entry["parameters"]}],
                             json_schema_mode=True)
    validate_request(_request(prepared.gemini_tools()), "gemini-3-pro-preview")
    converted = json.dumps(prepared.declarations[0]["parametersJsonSchema"])
    assert "$ref" not in converted and "(recursive structure: data)" in converted


@pytest.mark.parametrize("entry", REJECTED, ids=[e["name"] for e in REJECTED])
def test_raw_schemas_from_issues_are_rejected_by_the_mock(entry: dict) -> None:
    """The mock is strict: the schemas users saw Gemini reject are rejected unconverted."""
    raw = {"functionDeclarations": [{"name": entry["name"], "parameters": entry["parameters"]}]}
    with pytest.raises(GeminiRejection) as info:
        validate_request(_request([raw]), "gemini-2.5-flash")
    assert info.value.status == 400


@pytest.mark.parametrize("path", sorted(fixture_dir().glob("*.json")), ids=lambda p: p.stem)
def test_whole_client_tool_sets_through_the_front_end(client: openai.OpenAI, stack, path) -> None:
    """One request per client with all its tools; a forced call comes back under the client's own name."""
    entries = [e for e in json.loads(path.read_text()) if e.get("parameters") is not None]
    if not entries:
        pytest.skip("no function tools in this file")
    seen, tools = set(), []
    for e in entries:
        if e["name"] not in seen:
            seen.add(e["name"])
            tools.append({"type": "function", "name": e["name"], "description": e.get("description") or "",
                          "parameters": e["parameters"], "strict": False})
    target = tools[-1]["name"]
    r = client.responses.create(model="gemini-2.5-flash", input="go", tools=tools,
                                tool_choice={"type": "function", "name": target})
    [call] = r.output
    assert call.type == "function_call" and call.name == target
    assert isinstance(json.loads(call.arguments), dict)
    assert len(stack.last_body()["tools"][0]["functionDeclarations"]) == len(tools)
