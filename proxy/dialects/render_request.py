"""A Gemini request with function tools, rewritten for a model that speaks a text dialect: the
declarations rendered into the system turn (or the first user turn, where the model's template puts
them or the model has no system turn), earlier calls and results rendered into history as the
model's own text, `toolConfig`'s function calling turned into words. Pure: body in, body out.
"""

from typing import Any

from proxy import fast_json
from proxy.dialects.base import Call, Dialect, Result, ToolSpec
from proxy.schema.gemini_to_json_schema import gemini_to_json_schema

# Gemini accepts at most 5 stop sequences; the dialect's are added only while there is room.
MAX_STOP_SEQUENCES = 5


def tool_specs(body: dict[str, Any]) -> list[ToolSpec]:
    """The request's function declarations as a dialect renders them."""
    specs = []
    for tool in body.get("tools") or []:
        for decl in (tool.get("functionDeclarations") if isinstance(tool, dict) else None) or []:
            if not isinstance(decl, dict):
                continue
            params = decl.get("parametersJsonSchema")
            params = params if isinstance(params, dict) else gemini_to_json_schema(decl.get("parameters"))
            specs.append(ToolSpec(decl.get("name", ""), decl.get("description") or "",
                                  params if isinstance(params, dict) else None))
    return specs


def _texts(parts: list[dict[str, Any]]) -> str:
    return "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))


def _model_parts(parts: list[dict[str, Any]], d: Dialect) -> list[dict[str, Any]]:
    """A model turn: calls as the dialect's text; earlier reasoning left out (the templates strip it)."""
    out: list[dict[str, Any]] = []
    calls: list[Call] = []
    for p in parts:
        if isinstance(p.get("functionCall"), dict):
            fc = p["functionCall"]
            calls.append(Call(str(fc.get("name", "")), fc["args"] if isinstance(fc.get("args"), dict) else {}))
            continue
        if calls:
            out.append({"text": d.render_calls(calls)})
            calls = []
        if p.get("thought") or "toolCall" in p or "toolResponse" in p:
            continue
        kept = {k: v for k, v in p.items() if k != "thoughtSignature"}
        if kept and kept != {"text": ""}:
            out.append(kept)
    if calls:
        out.append({"text": d.render_calls(calls)})
    return out


def _user_parts(parts: list[dict[str, Any]], d: Dialect) -> list[dict[str, Any]]:
    """A user turn: function responses as the dialect's result text, their media after it."""
    out: list[dict[str, Any]] = []
    results: list[Result] = []
    media: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p.get("functionResponse"), dict):
            fr = p["functionResponse"]
            results.append(Result(fr.get("name", ""), fr.get("response")))
            media += [m for m in fr.get("parts") or [] if isinstance(m, dict)]
            continue
        if results:
            out += [{"text": d.render_results(results)}, *media]
            results, media = [], []
        out.append(p)
    if results:
        out += [{"text": d.render_results(results)}, *media]
    return out


def _one_call_per_turn(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parallel calls as one call and its result per turn, for templates that refuse several
    (Llama 3.1: "This model only supports single tool-calls at once!"; the EXO design). When the
    results do not pair up one to one, they stay together in one user turn after all the calls."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(contents):
        c = contents[i]
        calls = [p for p in c.get("parts") or [] if isinstance(p.get("functionCall"), dict)]
        nxt = contents[i + 1] if i + 1 < len(contents) else None
        answers = [p for p in (nxt or {}).get("parts") or [] if isinstance(p.get("functionResponse"), dict)]
        if c.get("role") == "model" and len(calls) > 1 and nxt is not None and len(answers) == len(calls):
            by_id = {p["functionResponse"].get("id"): p for p in answers if p["functionResponse"].get("id")}
            paired = [by_id.get(p["functionCall"].get("id")) or answers[n] for n, p in enumerate(calls)]
            others = [p for p in c["parts"] if not isinstance(p.get("functionCall"), dict)]
            rest = [p for p in nxt["parts"] if not isinstance(p.get("functionResponse"), dict)]
            for n, (call, answer) in enumerate(zip(calls, paired, strict=True)):
                out.append({"role": "model", "parts": (others if n == 0 else []) + [call]})
                out.append({"role": nxt.get("role", "user"), "parts": [answer] + (rest if n == len(calls) - 1 else [])})
            i += 2
            continue
        out.append(c)
        i += 1
    return out


def render_request(body: dict[str, Any], d: Dialect, *, fold_system: bool = False,
                   single_call: bool = False) -> dict[str, Any]:
    """`body` for a model that speaks `d` (`fold_system`: the upstream refuses a system instruction,
    as Gemini does for Gemma 3; `single_call`: the model takes one call per turn)."""
    body = fast_json.clone(body)
    specs = tool_specs(body)
    tool_config = body.get("toolConfig") or {}
    fcc = tool_config.pop("functionCallingConfig", None) or {}
    mode = str(fcc.get("mode") or "AUTO").upper()
    forced = (fcc.get("allowedFunctionNames") or [s.name for s in specs]) if mode == "ANY" and specs else None
    if fcc.get("allowedFunctionNames"):
        specs = [s for s in specs if s.name in fcc["allowedFunctionNames"]]
    if not tool_config:
        body.pop("toolConfig", None)
    body["tools"] = [t for t in body.get("tools") or [] if set(t) - {"functionDeclarations"}]
    body["tools"] = [{k: v for k, v in t.items() if k != "functionDeclarations"} for t in body["tools"]]
    if not body["tools"]:
        body.pop("tools")
    declarations = d.render_tools(specs, forced) if specs and mode != "NONE" else ""

    contents = body.get("contents") or []
    if single_call or d.single_call:
        contents = _one_call_per_turn(contents)
    rendered = []
    for c in contents:
        parts = c.get("parts") or []
        parts = _model_parts(parts, d) if c.get("role") == "model" else _user_parts(parts, d)
        rendered.append({**c, "parts": parts or [{"text": ""}]})
    body["contents"] = rendered

    system = body.get("systemInstruction")
    system_text = _texts(system.get("parts") or []) if isinstance(system, dict) else ""
    into_user = []
    if fold_system or not d.system_turn:
        body.pop("systemInstruction", None)
        into_user = [t for t in (system_text, declarations) if t]
    elif d.declarations_in_user:
        into_user = [declarations] if declarations else []
    elif declarations:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(t for t in (system_text, declarations) if t)}]}
    if into_user:
        first = next((c for c in rendered if c.get("role", "user") == "user"), None)
        if first is None:
            first = {"role": "user", "parts": []}
            rendered.insert(0, first)
        first["parts"] = [{"text": "\n\n".join(into_user) + "\n\n"}, *first["parts"]]

    stops = [s for s in d.stops if specs]
    if stops:
        config = body.setdefault("generationConfig", {})
        existing = list(config.get("stopSequences") or [])
        wanted = existing + [s for s in stops if s not in existing]
        if len(wanted) <= MAX_STOP_SEQUENCES:
            config["stopSequences"] = wanted
    return body
