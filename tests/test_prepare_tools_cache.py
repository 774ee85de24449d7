"""Whole tool lists are prepared once per content (prepare_tools._PREPARED): a hit is the same as
preparing again, each caller gets its own lists and name maps, and what fails is never kept. The
conftest checks, over the whole run, that no request changed a cached list in place."""

import pytest

from proxy.errors import ProxyError
from proxy.tools.prepare_tools import _prepare, prepare_tools

TOOLS = [
    {"type": "function", "name": "read.file", "description": "Read", "strict": True,
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax": "lark", "definition": "x"}},
    {"type": "namespace", "name": "fs", "tools": [{"type": "function", "name": "ls", "parameters": {
        "type": "object", "properties": {}}}]},
    {"type": "web_search"},
]


def _same(a, b) -> None:
    assert (a.declarations, a.echo, a.schemas, a.strict, a.hosted) == (b.declarations, b.echo, b.schemas, b.strict,
                                                                        b.hosted)
    assert (a.names.to_client, a.names.to_gemini_map, a.names.refs) == (b.names.to_client, b.names.to_gemini_map,
                                                                        b.names.refs)


@pytest.mark.parametrize("json_mode", [False, True])
def test_a_hit_is_what_preparing_again_gives(json_mode: bool) -> None:
    first = prepare_tools(TOOLS, json_schema_mode=json_mode)
    hit = prepare_tools(TOOLS, json_schema_mode=json_mode, fill_missing=True)
    _same(hit, _prepare(TOOLS, json_mode, True, False))
    _same(first, hit)
    assert hit.fill_missing and not first.fill_missing and hit.json_schema_mode is json_mode
    assert ("parametersJsonSchema" in hit.declarations[0]) is json_mode, "the mode is part of the key"


def test_each_caller_gets_its_own_lists_and_maps() -> None:
    a = prepare_tools(TOOLS)
    a.declarations.append({"name": "extra"})
    a.declarations[0]["name"] = "renamed"
    a.echo.clear()
    a.names.add("added")
    a.serve_hosted("gemini-3-pro-preview", [])
    b = prepare_tools(TOOLS)
    assert [d["name"] for d in b.declarations] == ["read.file", "apply_patch", "fs__ls"]
    assert len(b.echo) == 4 and "added" not in b.names.to_gemini_map and not b.builtins


def test_failures_are_never_kept() -> None:
    bad = [{"type": "function", "name": "f", "parameters": "not an object"}]
    for _ in range(2):
        with pytest.raises(ProxyError, match="tools\\[0\\].parameters"):
            prepare_tools(bad)
    duplicate = [TOOLS[0], TOOLS[0]]
    for _ in range(2):
        with pytest.raises(ProxyError, match="Duplicate tool name"):
            prepare_tools(duplicate)
