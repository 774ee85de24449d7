"""Deferred tools (pure): which of a request's tools Gemini is declared, and the catalog a search reads.

Clients with hundreds of MCP tools mark them deferred -- Anthropic `defer_loading: true`, the
Responses API's `defer_loading` on functions and namespace members -- and send a tool-search tool.
Gemini has no deferral, so the proxy keeps deferred tools out of `functionDeclarations` until a
search found them (tool_search.py): a tool is *loaded* once a search result in the history names it
(a `tool_reference`, a `tool_search_output`, the proxy's own search), or once the history calls it,
so every call in the history stays declared across the change of tool set. Codex (client-run
search) leaves deferred tools out of `tools` entirely and sends their definitions in its
`tool_search_output`: those definitions (`found`) are declared as they are.

Tools are in the core's (Responses) shape: functions, custom tools, namespaces of them, hosted tools.
"""

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from proxy.tools.tool_names import ToolNames, qualified
from proxy.tools.tool_search import SearchEntry, entry_of
from proxy.wire.shared_tools import SharedTools

SEARCH_TYPE = "tool_search"  # the core's search tool: Responses `tool_search`, Anthropic's mapped onto it


@dataclass
class Deferral:
    """A request's deferred tools, by flat client name (`ns__name` for a namespace member)."""

    tools: dict[str, tuple[str | None, dict[str, Any], dict[str, Any] | None]] = field(default_factory=dict)
    # ^ name -> (its namespace, its definition, the namespace's own fields without members)
    loaded: set[str] = field(default_factory=set)

    @property
    def entries(self) -> list[SearchEntry]:
        """What a search reads, in declaration order."""
        return [entry_of(name, d.get("description"), d.get("parameters")) for name, (_, d, _) in self.tools.items()]

    def definitions(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """The tools named, as the core declares them (a namespace member inside its namespace)."""
        out: list[dict[str, Any]] = []
        spaces: dict[str, dict[str, Any]] = {}
        for name in dict.fromkeys(names):
            if name not in self.tools:
                continue
            namespace, definition, space = self.tools[name]
            if namespace is None:
                out.append(definition)
            elif namespace in spaces:
                spaces[namespace]["tools"].append(definition)
            else:
                spaces[namespace] = {**(space or {}), "type": "namespace", "name": namespace, "tools": [definition]}
                out.append(spaces[namespace])
        return out

    def held_back(self) -> list[str]:
        return [n for n in self.tools if n not in self.loaded]

    def tokens_saved(self) -> int:
        """The input tokens the held-back declarations would cost: a quarter of their JSON's bytes
        (token_estimate.py's rule)."""
        return len(json.dumps([self.tools[n][1] for n in self.held_back()], ensure_ascii=False).encode()) // 4


def found_tools(tools: list[dict[str, Any]]) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(name, namespace, definition) of each tool in a search's result (functions, namespaces of them)."""
    out = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            out += [(m["name"], tool.get("name"), m) for m in tool.get("tools") or []
                    if isinstance(m, dict) and isinstance(m.get("name"), str)]
        elif isinstance(tool.get("name"), str):
            out.append((tool["name"], None, tool))
    return out


def called_by_items(items: Iterable[Any]) -> set[str]:
    """Flat names the input's calls called or its searches found: what deferral keeps declared. Items
    are the core's (wire/responses.py InputItem)."""
    names: set[str] = set()
    for item in items:
        kind = getattr(item, "type", None)
        if kind in ("function_call", "custom_tool_call"):
            names.add(qualified(item.name, item.namespace))
        elif kind == "tool_search_output":
            tools = [t for t in item.tools if isinstance(t, dict)]
            names |= {qualified(n, space) for n, space, _ in found_tools(tools)}
    return names


def found_by_items(items: Iterable[Any]) -> list[dict[str, Any]]:
    """The definitions the input's client-run searches returned (declared as the client gave them)."""
    found: list[dict[str, Any]] = []
    for item in items:
        if getattr(item, "type", None) == "tool_search_output" and item.execution == "client":
            found += [t for t in item.tools if isinstance(t, dict)]
    return found


def loaded_in_contents(contents: list[dict[str, Any]]) -> set[str]:
    """Gemini names a stored history loaded: what its calls called, so a called tool stays declared,
    and what the proxy's searches in it found."""
    names: set[str] = set()
    for content in contents:
        for part in content.get("parts") or []:
            fc = part.get("functionCall") if isinstance(part, dict) else None
            if isinstance(fc, dict) and isinstance(fc.get("name"), str):
                names.add(fc["name"])
            fr = part.get("functionResponse") if isinstance(part, dict) else None
            found = (fr.get("response") or {}).get("tools") if isinstance(fr, dict) else None
            if isinstance(found, list):
                names |= {t["name"] for t in found if isinstance(t, dict) and isinstance(t.get("name"), str)}
    return names


def _deferred(tool: dict[str, Any]) -> bool:
    return tool.get("defer_loading") is True


def _any_deferred(tools: list[dict[str, Any]] | None) -> bool:
    """Whether any tool (or namespace member) is deferred; of a tools text seen before, found once
    (wire/shared_tools.py: the list never changes)."""
    if type(tools) is SharedTools:
        known = tools.facts.get(_ANY_DEFERRED)
        if known is None:
            known = tools.facts[_ANY_DEFERRED] = _scan_deferred(tools)
        return known
    return _scan_deferred(tools)


_ANY_DEFERRED = "any_deferred"  # its key in SharedTools.facts


def _scan_deferred(tools: list[dict[str, Any]] | None) -> bool:
    return any(_deferred(t) or (t.get("type") == "namespace" and any(
        isinstance(m, dict) and _deferred(m) for m in t.get("tools") or [])) for t in tools or []
        if isinstance(t, dict))


def split_deferred(tools: list[dict[str, Any]] | None, loaded: Callable[[], Iterable[str]] = tuple,
                   found: Iterable[dict[str, Any]] = ()) -> tuple[list[dict[str, Any]] | None, Deferral | None]:
    """(the tools to declare now, the deferral) -- the list as it is and None when nothing is deferred
    and nothing was found, so the common request pays one scan (of the tools: `loaded`, the flat
    names the history loaded, is only asked for when something is deferred: an agent's history names
    every call it made); `found`: definitions a client-run search returned (declared, and loaded)."""
    found = list(found)
    if not found and not _any_deferred(tools):
        return tools, None
    deferral = Deferral()
    now: list[dict[str, Any]] = []
    for tool in tools or []:
        if not isinstance(tool, dict):
            now.append(tool)  # prepare_tools says what is wrong with it
        elif tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
            whole = _deferred(tool)
            space = {k: v for k, v in tool.items() if k != "tools"}
            kept = []
            for member in tool["tools"]:
                name = member.get("name") if isinstance(member, dict) else None
                if isinstance(name, str) and (whole or _deferred(member)):
                    deferral.tools[qualified(name, tool.get("name"))] = (tool.get("name"), member, space)
                else:
                    kept.append(member)
            if kept:
                now.append({**tool, "tools": kept})
        elif _deferred(tool) and isinstance(tool.get("name"), str) and tool.get("type", "function") in (
                "function", "custom"):
            deferral.tools[tool["name"]] = (None, tool, None)
        else:
            now.append(tool)
    names_loaded = set(loaded())  # flat client names, or the Gemini names a stored history holds
    names = ToolNames()
    deferral.loaded = {n for n in deferral.tools if n in names_loaded or names.to_gemini(n) in names_loaded}
    now = _merged(now, deferral.definitions(n for n in deferral.tools if n in deferral.loaded))
    for definition in found:  # a client-run search's result: declared as the client gave it
        now = _merged(now, [definition])
        deferral.loaded |= {qualified(n, space) for n, space, _ in found_tools([definition])}
    return now, deferral


def _merged(tools: list[dict[str, Any]], more: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`more` added to `tools`: a namespace's members joined into the namespace already there, a tool
    already declared (by name) not declared twice."""
    out = list(tools)
    for tool in more:
        if tool.get("type") == "namespace":
            at = next((i for i, t in enumerate(out) if t.get("type") == "namespace" and t.get("name") == tool.get(
                "name")), None)
            if at is None:
                out.append(tool)
                continue
            have = {m.get("name") for m in out[at].get("tools") or [] if isinstance(m, dict)}
            extra = [m for m in tool.get("tools") or [] if isinstance(m, dict) and m.get("name") not in have]
            out[at] = {**out[at], "tools": [*out[at].get("tools", []), *extra]}
        elif not any(t.get("name") == tool.get("name") and t.get("type") != "namespace" for t in out):
            out.append(tool)
    return out
