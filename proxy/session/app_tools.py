"""The app's own tools in an intercepted request: `parameters` schemas Gemini would reject are
sanitized (parametersJsonSchema is real JSON Schema and stays as the app wrote it)."""

from typing import Any

from proxy.schema.json_schema_to_gemini import json_schema_to_gemini
from proxy.tools.conversion_cache import ConversionCache
from proxy.wire.shared_tools import SharedTools

_CACHE = ConversionCache()


def repair_app_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The app's tools with their schemas repaired; the same tools are repaired once per process.
    Declarations in `parametersJsonSchema` alone (Gemini CLI's) need no repair: the tools are
    handed back at once, without the cache's serialization and hash."""
    if not tools:
        return []
    if not any("parameters" in d for t in tools for d in t.get("functionDeclarations") or ()):
        return tools
    return _CACHE.get(tools, (), lambda: _repair_tools(tools), tools.facts if type(tools) is SharedTools else None)


def _repair_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        decls = tool.get("functionDeclarations")
        if decls is not None:
            tool = {**tool, "functionDeclarations": [_repair_declaration(d) for d in decls]}
        out.append(tool)
    return out


def _repair_declaration(decl: dict[str, Any]) -> dict[str, Any]:
    if "parameters" not in decl:
        return decl
    try:
        schema = json_schema_to_gemini(decl["parameters"])
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError):
        return decl  # not a schema the repair can read: Gemini judges it as the app wrote it
    decl = dict(decl)
    del decl["parameters"]
    if schema is not None:
        decl["parameters"] = schema
    return decl


def declared_names(tools: list[dict[str, Any]]) -> set[str]:
    return {d.get("name") for t in tools for d in t.get("functionDeclarations") or []}
