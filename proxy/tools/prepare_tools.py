"""OpenAI tools and tool_choice -> Gemini `tools[].functionDeclarations` and `toolConfig`.

Accepts the flat Responses function tool and the nested Chat-style `{type, function: {...}}`
(real clients send both; docs/wire.md#responses-requests, #chat). Tool choice mapping: #tool-choice.
"""

from dataclasses import dataclass, field
from typing import Any, Literal

from cachetools import LRUCache

from proxy.errors import ProxyError
from proxy.journal.exchange import notes_json
from proxy.schema.json_schema_for_gemini import json_schema_for_gemini
from proxy.schema.json_schema_to_gemini import json_schema_to_gemini, marks_encrypted
from proxy.schema.repairs import repair_note, schema_repairs
from proxy.tools.conversion_cache import MAX_ENTRIES, ConversionCache, content_digest
from proxy.tools.deferral import SEARCH_TYPE
from proxy.tools.hosted_tools import HostedTool, serve_hosted
from proxy.tools.tool_names import ToolNames, qualified


@dataclass
class PreparedTools:
    declarations: list[dict[str, Any]] = field(default_factory=list)
    names: ToolNames = field(default_factory=ToolNames)
    # Function tools in the flat Responses shape, echoed on the response object.
    echo: list[dict[str, Any]] = field(default_factory=list)
    strict: bool = False  # a tool asked for strict arguments: Gemini's VALIDATED mode constrains them
    json_schema_mode: bool = False  # declare parametersJsonSchema instead of the OpenAPI-subset parameters
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)  # Gemini name -> the client's JSON Schema
    fill_missing: bool = False  # opt-in: a null placeholder for a missing required argument
    hosted: list[HostedTool] = field(default_factory=list)  # OpenAI's hosted tools asked for (hosted_tools.py)
    builtins: list[dict[str, Any]] = field(default_factory=list)  # Gemini's built-in tools serving them
    server_side: bool = False  # toolConfig.includeServerSideToolInvocations: built-ins next to functions
    warnings: list[str] = field(default_factory=list)  # hosted tools the request goes without, and why
    memo: dict[str, Any] = field(default_factory=dict)  # what is worked out once per cached tool list
    # Tool-search tools by Gemini name -> how the search runs: "regex" or "bm25" in the proxy, or
    # "client" (the client runs it: Codex's tool_search); deferral.py's Deferral when tools are deferred.
    searches: dict[str, str] = field(default_factory=dict)
    deferral: Any = None

    def schema_repairs(self) -> list[dict[str, Any]]:
        """What converting each tool's schema repairs (schema/repairs.py), by the client's tool name:
        worked out once per tool list (the cache's hits share it), for the journal."""
        if "repairs" not in self.memo:
            self.memo["repairs"] = [{"tool": self.names.to_client.get(name, name), **r}
                                    for name, schema in self.schemas.items() for r in schema_repairs(schema)]
        return self.memo["repairs"]

    def schema_repair_notes(self) -> tuple[list[dict[str, Any]], bytes | None]:
        """The repairs as the journal's notes, and their JSON (Exchange.note_all's arguments): made once
        per tool list (notes are never changed once made)."""
        if "repair_notes" not in self.memo:
            notes = [repair_note(r["tool"], r) for r in self.schema_repairs()]
            self.memo["repair_notes"] = notes, notes_json(notes)
        return self.memo["repair_notes"]

    def encrypted_params(self) -> frozenset[str]:
        """Gemini names of the tools whose schema marks a parameter `encrypted` (the Responses API's
        extension: OpenAI encrypts that argument; Codex MultiAgentV2's `message`). Gemini gets the
        schema without the mark; the calls go back marked plain text (responses/translator.py)."""
        if "encrypted" not in self.memo:
            self.memo["encrypted"] = frozenset(name for name, schema in self.schemas.items()
                                               if marks_encrypted(schema))
        return self.memo["encrypted"]

    def gemini_tools(self) -> list[dict[str, Any]]:
        decls = [{"functionDeclarations": self.declarations}] if self.declarations else []
        return decls + [dict(b) for b in self.builtins]

    def load(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Declare tools a search found in the middle of an answer (server/search_hops.py): their
        Gemini declarations, added here too so the answer's calls to them map back to the client's
        names. A tool already declared is not declared again."""
        before = len(self.declarations)
        for tool in tools:
            members = tool.get("tools") if tool.get("type") == "namespace" else [tool]
            space = tool.get("name") if tool.get("type") == "namespace" else None
            for member in members or []:
                declared = self.names.to_gemini_map
                if not isinstance(member, dict) or qualified(str(member.get("name")), space) in declared:
                    continue
                if member.get("type") == "custom":
                    _add_function(_custom_fields(member, 0), self, 0, namespace=space, kind="custom")
                else:
                    fn = _function_fields({**member, "type": "function"}, 0)
                    assert fn is not None
                    _add_function(fn, self, 0, namespace=space)
        return self.declarations[before:]

    def serve_hosted(self, model: str, rules: list[tuple[str, str]]) -> "PreparedTools":
        """Decide, for `model`, which hosted tools go to Gemini and which are dropped (or a 400)."""
        self.builtins, self.server_side, self.warnings = serve_hosted(self.hosted, bool(self.declarations), model,
                                                                      rules)
        return self


def _function_fields(tool: dict[str, Any], index: int) -> dict[str, Any] | None:
    if tool.get("type", "function") != "function":
        return None
    fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise ProxyError(f"Missing required parameter: 'tools[{index}].name'.", param=f"tools[{index}].name",
                         code="missing_required_parameter")
    params = fn.get("parameters")
    if params is not None and not isinstance(params, dict):
        raise ProxyError(f"Invalid type for 'tools[{index}].parameters': expected an object.",
                         param=f"tools[{index}].parameters", code="invalid_type")
    desc = fn.get("description")
    return {"name": name, "description": desc if isinstance(desc, str) else None, "parameters": params,
            "strict": fn.get("strict") if isinstance(fn.get("strict"), bool) else None}


# A `custom` tool takes free-form text (Codex's apply_patch: a Lark grammar). Gemini gets a function
# with one string argument; the call goes back to the client as a custom_tool_call with that text.
# Written once as JSON Schema; it goes through the same converters as every function's schema.
CUSTOM_INPUT = {"type": "object", "required": ["input"], "properties": {"input": {
    "type": "string", "description": "The tool's whole raw input as free-form text, exactly as its format requires "
                                     "(not JSON-encoded)."}}}


def _custom_fields(tool: dict[str, Any], index: int) -> dict[str, Any]:
    """A custom tool as a function of one string, its input grammar (if any) in the description."""
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ProxyError(f"Missing required parameter: 'tools[{index}].name'.", param=f"tools[{index}].name",
                         code="missing_required_parameter")
    desc = tool.get("description") if isinstance(tool.get("description"), str) else ""
    fmt = tool.get("format") if isinstance(tool.get("format"), dict) else {}
    if fmt.get("type") == "grammar" and isinstance(fmt.get("definition"), str):
        desc += f"\n\nThe input must follow this {fmt.get('syntax', '')} grammar:\n{fmt['definition']}"
    return {"name": name, "description": desc.strip() or None, "parameters": CUSTOM_INPUT, "strict": None}


_SCHEMAS = ConversionCache()  # a client's schema -> Gemini's, converted once per content


def _add_function(fn: dict[str, Any], prepared: PreparedTools, index: int, namespace: str | None = None,
                  kind: Literal["function", "custom", "search"] = "function") -> None:
    if qualified(fn["name"], namespace) in prepared.names.to_gemini_map:
        raise ProxyError(f"Duplicate tool name '{fn['name']}' in 'tools'.", param=f"tools[{index}].name")
    decl: dict[str, Any] = {"name": prepared.names.add(fn["name"], namespace, kind)}
    if fn["description"]:
        decl["description"] = fn["description"]
    if isinstance(fn["parameters"], dict):
        prepared.schemas[decl["name"]] = fn["parameters"]
    try:
        params = fn["parameters"]
        if prepared.json_schema_mode:
            js = _SCHEMAS.get(params, ("json",), lambda: json_schema_for_gemini(params))
            if js is not None:
                decl["parametersJsonSchema"] = js
        else:
            schema = _SCHEMAS.get(params, ("parameters",), lambda: json_schema_to_gemini(params))
            if schema is not None:
                decl["parameters"] = schema
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as e:
        # What the converters cannot read is not JSON Schema: say so (OpenAI answers the same way).
        raise ProxyError(f"Invalid schema for function '{fn['name']}': the proxy could not read it "
                         f"({type(e).__name__}: {e}).", param=f"tools[{index}].parameters",
                         code="invalid_function_parameters") from None
    prepared.declarations.append(decl)
    prepared.strict = prepared.strict or fn["strict"] is True


@dataclass(frozen=True)
class _Prepared:
    """A prepared tool list as kept in the cache. Each hit gets its own lists, dicts and name maps;
    the schemas inside are shared, as nothing downstream changes a schema in place (the request
    body, the echo and the argument check only read them: tests/test_prepare_tools_cache.py)."""
    declarations: tuple[dict[str, Any], ...]
    echo: tuple[dict[str, Any], ...]
    schemas: dict[str, dict[str, Any]]
    names: ToolNames
    strict: bool
    hosted: tuple[HostedTool, ...]
    searches: dict[str, str]
    memo: dict[str, Any]  # shared by every hit (PreparedTools.memo)

    @classmethod
    def keep(cls, p: PreparedTools) -> "_Prepared":
        return cls(tuple(dict(d) for d in p.declarations), tuple(dict(e) for e in p.echo), dict(p.schemas),
                   p.names.copy(), p.strict, tuple(p.hosted), dict(p.searches), p.memo)

    def fresh(self, json_schema_mode: bool, fill_missing: bool) -> PreparedTools:
        return PreparedTools(declarations=[dict(d) for d in self.declarations], names=self.names.copy(),
                             echo=[dict(e) for e in self.echo], strict=self.strict,
                             json_schema_mode=json_schema_mode, schemas=dict(self.schemas),
                             fill_missing=fill_missing, hosted=list(self.hosted), searches=dict(self.searches),
                             memo=self.memo)


# Whole tool lists by content: an agent sends the same list every turn, and building it again (20
# tools: names, schema conversions, echo) was a tenth of a large request's CPU. Errors are not kept.
_PREPARED: LRUCache[bytes, _Prepared] = LRUCache(MAX_ENTRIES)


def prepare_tools(tools: list[dict[str, Any]] | None, json_schema_mode: bool = False,
                  fill_missing: bool = False, web_search: bool = False,
                  digests: dict[tuple[bool, bool], bytes] | None = None) -> PreparedTools:
    """`json_schema_mode` picks `parametersJsonSchema` over `parameters` (see schema_mode_for);
    `web_search`: Chat's `web_search_options` was given. Hosted tools are only collected here:
    `PreparedTools.serve_hosted` decides for the model. Each call gets its own PreparedTools.
    `digests`: where this very list keeps its cache key per (mode, web_search), worked out once (a
    list shared by every request that sends the same text: wire/shared_tools.py)."""
    if not tools and not web_search:
        return PreparedTools(json_schema_mode=json_schema_mode, fill_missing=fill_missing)
    digest = content_digest([tools, json_schema_mode, web_search], digests, (json_schema_mode, web_search))
    if digest is None:  # not JSON (only a direct caller can pass that): no caching
        return _prepare(tools, json_schema_mode, fill_missing, web_search)
    kept = _PREPARED.get(digest)
    if kept is None:
        prepared = _prepare(tools, json_schema_mode, fill_missing, web_search)
        _PREPARED[digest] = _Prepared.keep(prepared)
        return prepared
    return kept.fresh(json_schema_mode, fill_missing)


def _add_namespace(tool: dict[str, Any], prepared: PreparedTools, index: int) -> None:
    """A namespace's functions and custom tools, each under its name; anything else in it is a 400
    (a member left out would be a tool the model silently never sees)."""
    members, where = tool.get("tools"), f"tools[{index}].tools"
    if not isinstance(members, list):
        raise ProxyError(f"Invalid type for '{where}': expected an array of function or custom tools.",
                         param=where, code="invalid_type")
    namespace = str(tool.get("name") or "")
    for j, member in enumerate(members):
        kind = member.get("type", "function") if isinstance(member, dict) else None
        if kind == "custom":
            _add_function(_custom_fields(member, index), prepared, index, namespace=namespace, kind="custom")
        elif kind == "function":
            fn = _function_fields(member, index)
            assert fn is not None
            _add_function(fn, prepared, index, namespace=namespace)
        else:
            raise ProxyError(f"Invalid value for '{where}[{j}]': a namespace holds function and custom tools.",
                             param=f"{where}[{j}]", code="invalid_value")


# The proxy's own search tools (deferral.py): what Gemini is told to send. A client-run search (Codex)
# declares its own parameters instead.
SEARCH_PARAMETERS = {
    "regex": {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string", "description": "A regular expression (Python re syntax) searched for in each "
                                                   "tool's name, description and parameter names; (?i) makes it "
                                                   "case-insensitive."},
        "limit": {"type": "integer", "description": "At most this many tools (default 5)."}}},
    "bm25": {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string", "description": "What the tool should do, in words: tools are ranked by BM25 "
                                                   "over their names, descriptions and parameter names."},
        "limit": {"type": "integer", "description": "At most this many tools (default 5)."}}},
}
SEARCH_DESCRIPTION = ("Search the deferred tools: those not declared yet. The tools found are declared to you "
                      "right after the search, under their own names; call them then.")


def _add_search(tool: dict[str, Any], prepared: PreparedTools, index: int) -> None:
    """A tool-search tool as a function Gemini calls: run by the client (`execution: "client"`,
    Codex), else by the proxy over the request's deferred tools (`gtp_search`: regex or bm25; the
    Responses API's hosted search ranks by words, so bm25)."""
    run = "client" if tool.get("execution") == "client" else tool.get("gtp_search", "bm25")
    if run == "client":
        params = tool.get("parameters") if isinstance(tool.get("parameters"), dict) else SEARCH_PARAMETERS["bm25"]
        desc = tool.get("description") if isinstance(tool.get("description"), str) else SEARCH_DESCRIPTION
    else:
        params, desc = SEARCH_PARAMETERS[run], SEARCH_DESCRIPTION
    name = tool.get("name") if isinstance(tool.get("name"), str) and tool.get("name") else SEARCH_TYPE
    _add_function({"name": name, "description": desc, "parameters": params, "strict": None}, prepared, index,
                  kind="search")
    prepared.searches[prepared.names.to_gemini(name)] = run


def _prepare(tools: list[dict[str, Any]] | None, json_schema_mode: bool, fill_missing: bool,
             web_search: bool) -> PreparedTools:
    prepared = PreparedTools(json_schema_mode=json_schema_mode, fill_missing=fill_missing)
    if web_search:
        prepared.hosted.append(HostedTool("web_search_options", "web_search_options"))
    for i, tool in enumerate(tools or []):
        if not isinstance(tool, dict):
            raise ProxyError(f"Invalid type for 'tools[{i}]': expected an object.", param=f"tools[{i}]",
                             code="invalid_type")
        kind = tool.get("type", "function")
        if kind == "custom":
            _add_function(_custom_fields(tool, i), prepared, i, kind="custom")
            prepared.echo.append(tool)
        elif kind == "namespace":
            _add_namespace(tool, prepared, i)
            prepared.echo.append(tool)
        elif kind == SEARCH_TYPE:
            _add_search(tool, prepared, i)
            prepared.echo.append(tool)
        elif kind == "function":
            fn = _function_fields(tool, i)
            assert fn is not None
            _add_function(fn, prepared, i)
            prepared.echo.append({"type": "function", **fn})
        else:  # a hosted tool (web_search, file_search, local_shell, ...): see hosted_tools.py
            prepared.hosted.append(HostedTool(str(kind), f"tools[{i}]"))
            prepared.echo.append(tool)
    return prepared
