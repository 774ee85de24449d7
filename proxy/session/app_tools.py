"""The app's own tools in an intercepted request: `parameters` schemas Gemini would reject are
sanitized (parametersJsonSchema is real JSON Schema and stays as the app wrote it)."""

from collections.abc import Collection
from typing import Any

from cachetools import LRUCache

from proxy.journal import exchange
from proxy.journal.exchange import notes_json
from proxy.schema.json_schema_to_gemini import json_schema_to_gemini
from proxy.schema.repairs import repair_note, schema_repairs
from proxy.tools.conversion_cache import MAX_ENTRIES, ConversionCache, content_digest
from proxy.wire.shared_tools import SharedTools

_CACHE = ConversionCache()
_NOTES: LRUCache[bytes, tuple[list[dict[str, Any]], bytes | None]] = LRUCache(MAX_ENTRIES)


def repair_app_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The app's tools with their schemas repaired; the same tools are repaired once per process.
    Declarations in `parametersJsonSchema` alone (Gemini CLI's) need no repair: the tools are
    handed back at once, without the cache's serialization and hash."""
    if not tools:
        return []
    if not _any_parameters(tools):
        return tools
    return _CACHE.get(tools, (), lambda: _repair_tools(tools), tools.facts if type(tools) is SharedTools else None)


def note_repairs(tools: list[dict[str, Any]], dropped: Collection[str] = ()) -> None:
    """Note on the current exchange what repair_app_tools changes in the tools' `parameters` schemas
    (as for a client's tools, prepare_tools.py), but for the tools named in `dropped` (not sent)."""
    if not tools or not exchange.recording() or not _any_parameters(tools):
        return
    notes, json = _repair_notes(tools, tools.facts if type(tools) is SharedTools else None)
    if dropped:
        notes, json = [n for n in notes if n["tool"] not in dropped], None
    exchange.note_all(notes, json)


def _any_parameters(tools: list[dict[str, Any]]) -> bool:
    return any("parameters" in d for t in tools for d in t.get("functionDeclarations") or ())


def _repair_notes(tools: list[dict[str, Any]], facts: dict | None) -> tuple[list[dict[str, Any]], bytes | None]:
    """The notes and their JSON (Exchange.note_all's arguments), worked out once per tools' content."""
    digest = content_digest(tools, facts, "repair notes")
    made = _NOTES.get(digest) if digest is not None else None
    if made is None:
        notes = [repair_note(d.get("name"), r) for t in tools for d in t.get("functionDeclarations") or ()
                 if isinstance(d, dict) for r in schema_repairs(d.get("parameters"))]
        made = notes, notes_json(notes)
        if digest is not None:
            _NOTES[digest] = made
    return made


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
