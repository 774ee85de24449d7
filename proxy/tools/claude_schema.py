"""The schema subset Claude takes on Antigravity's wire.

Google serves Claude there in Gemini's format, and Claude checks every tool's schema itself when the
request's function calling mode is VALIDATED (which the Antigravity emulators set for Claude: CLIProxyAPI
`antigravity_executor_request.go`, opencode-antigravity-auth 1.6.0 `request.js`). CLIProxyAPI's
`CleanJSONSchemaForAntigravity` (internal/util/gemini_schema.go) drops the validation keywords "Claude
rejects in VALIDATED mode": string lengths and patterns, numeric exclusive bounds, array sizes and
uniqueness, formats, defaults and examples. The proxy drops the same from the declarations it sends a
Claude model (the session's, and the app's own): a looser schema, never a wrong one. The model still
sees each keyword's meaning in the property's description where one was written.
"""

from typing import Any

from proxy.tools.call_ids import needs_call_ids

DROPPED = frozenset({"minLength", "maxLength", "exclusiveMinimum", "exclusiveMaximum", "pattern", "minItems",
                     "maxItems", "uniqueItems", "format", "default", "examples", "example"})


def _clean(schema: Any) -> Any:
    """The schema without the dropped keywords, at every level (property names are names, not keywords)."""
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k not in DROPPED}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {name: _clean(sub) for name, sub in out["properties"].items()}
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), dict):
            out[key] = _clean(out[key])
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(out.get(key), list):
            out[key] = [_clean(sub) for sub in out[key]]
    for key in ("$defs", "definitions"):
        if isinstance(out.get(key), dict):
            out[key] = {name: _clean(sub) for name, sub in out[key].items()}
    return out


def for_model(tools: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """The tools as a Claude model takes them (the same list for every other model)."""
    if not needs_call_ids(model):
        return tools
    out = []
    for tool in tools:
        decls = tool.get("functionDeclarations")
        if not isinstance(decls, list):
            out.append(tool)
            continue
        cleaned = []
        for decl in decls:
            if isinstance(decl, dict):
                decl = dict(decl)
                for key in ("parameters", "parametersJsonSchema", "response", "responseJsonSchema"):
                    if isinstance(decl.get(key), dict):
                        decl[key] = _clean(decl[key])
            cleaned.append(decl)
        out.append({**tool, "functionDeclarations": cleaned})
    return out
