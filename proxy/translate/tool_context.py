"""A session's tool context for intercepted traffic, and the rewrite that applies it to a Gemini request.

One function serves the addon and the front-end (ARCHITECTURE.md "Rules of thumb"):
- tools: the session's functionDeclarations replace the app's own (or are merged with them);
  its toolConfig goes along;
- history: every model turn that is only the placeholder text (what a relay app was told instead
  of the real call) becomes that round's real functionCall parts, signatures on the same parts,
  followed by a user turn of functionResponse parts in call order. Calls and results pair by id,
  then by position; a placeholder with no captured round is refused, never forwarded malformed;
- repairs, with or without a session: `parameters` schemas Gemini would reject are sanitized and
  the current turn's first unsigned functionCall gets the documented sentinel on gemini-3.
"""

import copy
import fnmatch
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from proxy.errors import ProxyError
from proxy.translate.json_schema_to_gemini import json_schema_to_gemini
from proxy.translate.signatures import sign_current_turn

DEFAULT_PLACEHOLDER = "Tool call completed"
DUMMY_TEXTS = frozenset({"", "."})  # AGCC and zerogravity send "." as the relay app's prompt
NO_HISTORY = ("Tool results were provided, but no captured functionCall history was available for replay. "
              "Refusing to forward a malformed tool-result turn.")


@dataclass
class CapturedCall:
    call_id: str                 # what clients see: Gemini's functionCall.id, else minted
    name: str                    # Gemini's function name
    args: dict[str, Any]
    gemini_id: str | None = None
    signature: str | None = None

    def part(self) -> dict[str, Any]:
        call: dict[str, Any] = {"name": self.name, "args": self.args}
        if self.gemini_id:
            call["id"] = self.gemini_id
        part: dict[str, Any] = {"functionCall": call}
        if self.signature:
            part["thoughtSignature"] = self.signature
        return part


@dataclass
class ToolRound:
    calls: list[CapturedCall]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # call_id -> functionResponse.response


@dataclass
class ToolContext:
    declarations: list[dict[str, Any]] = field(default_factory=list)
    tool_config: dict[str, Any] | None = None
    client_names: dict[str, str] = field(default_factory=dict)  # Gemini name -> the client's name
    rounds: list[ToolRound] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ToolContext":
        rounds = [ToolRound([CapturedCall(**c) for c in r["calls"]], dict(r.get("results") or {}))
                  for r in d.get("rounds") or []]
        return cls(list(d.get("declarations") or []), d.get("tool_config"), dict(d.get("client_names") or {}),
                   rounds)

    def find_call(self, call_id: str) -> tuple[ToolRound, CapturedCall] | None:
        for rnd in reversed(self.rounds):
            for call in rnd.calls:
                if call.call_id == call_id:
                    return rnd, call
        return None


def pair_outputs(ctx: ToolContext | None, outputs: list[tuple[str | None, dict[str, Any]]]
                 ) -> dict[str, dict[str, Any]]:
    """Match outputs to captured calls: by call_id first, then the rest by position among the latest
    round's calls that have no output yet. An unknown id, or more outputs than open calls, is a 400."""
    paired: dict[str, dict[str, Any]] = {}
    positional = []
    for call_id, response in outputs:
        if call_id is None:
            positional.append(response)
        elif ctx is None or ctx.find_call(call_id) is None:
            raise ProxyError(f"No tool call found for function call output with call_id {call_id}.",
                             param="outputs")
        else:
            paired[call_id] = response
    if positional:
        latest = ctx.rounds[-1] if ctx and ctx.rounds else None
        open_calls = [c.call_id for c in latest.calls if c.call_id not in latest.results
                      and c.call_id not in paired] if latest else []
        if len(positional) > len(open_calls):
            raise ProxyError(f"{len(positional)} output(s) without call_id, but only {len(open_calls)} captured "
                             "call(s) are waiting for one.", param="outputs")
        paired.update(zip(open_calls, positional, strict=False))
    return paired


def _pop(d: dict[str, Any], camel: str, snake: str) -> Any:
    """Remove a field in either spelling (proto JSON accepts both); return its value."""
    a, b = d.pop(camel, None), d.pop(snake, None)
    return a if a is not None else b


def _repaired(tools: list[Any]) -> list[Any]:
    out = []
    for tool in tools:
        if not isinstance(tool, dict):
            out.append(tool)
            continue
        tool = dict(tool)
        decls = _pop(tool, "functionDeclarations", "function_declarations")
        if decls is not None:
            tool["functionDeclarations"] = [_repair_declaration(d) for d in decls]
        out.append(tool)
    return out


def _repair_declaration(decl: Any) -> Any:
    if not isinstance(decl, dict) or "parameters" not in decl:
        return decl  # parametersJsonSchema takes real JSON Schema: leave it as the app wrote it
    decl = dict(decl)
    schema = json_schema_to_gemini(decl.pop("parameters"))
    if schema is not None:
        decl["parameters"] = schema
    return decl


def _declared_names(tools: list[Any]) -> set[str]:
    return {d.get("name") for t in tools if isinstance(t, dict) for d in t.get("functionDeclarations") or []
            if isinstance(d, dict)}


def _is_placeholder(content: dict[str, Any], placeholder: str) -> bool:
    parts = content.get("parts") or []
    if content.get("role") != "model" or not parts:
        return False
    texts = [p.get("text") for p in parts if isinstance(p, dict) and not p.get("thought")]
    return all(isinstance(t, str) for t in texts) and "".join(texts).strip() == placeholder


def _results_turn(rnd: ToolRound) -> dict[str, Any]:
    parts = []
    for call in rnd.calls:
        if call.call_id not in rnd.results:
            raise ProxyError(f"No tool output found for function call {call.call_id} ({call.name}); send it before "
                             "the next turn.", param="input")
        response: dict[str, Any] = {"name": call.name, "response": rnd.results[call.call_id]}
        if call.gemini_id:
            response["id"] = call.gemini_id
        parts.append({"functionResponse": response})
    return {"role": "user", "parts": parts}


def rewrite_history(contents: list[dict[str, Any]], rounds: list[ToolRound],
                    placeholder: str = DEFAULT_PLACEHOLDER) -> list[dict[str, Any]]:
    """Replace placeholder model turns with the captured rounds (the latest placeholders get the latest rounds)."""
    marks = [i for i, c in enumerate(contents) if isinstance(c, dict) and _is_placeholder(c, placeholder)]
    if not marks:
        return contents
    usable = [r for r in rounds if r.calls]  # an empty round would make an empty model turn (zerogravity#73)
    if len(usable) < len(marks):
        raise ProxyError(NO_HISTORY)
    aligned = dict(zip(marks, usable[len(usable) - len(marks):], strict=True))
    out: list[dict[str, Any]] = []
    for i, content in enumerate(contents):
        if i in aligned:
            rnd = aligned[i]
            out.append({"role": "model", "parts": [c.part() for c in rnd.calls]})
            out.append(_results_turn(rnd))
        elif i - 1 in aligned and _is_dummy(content):
            continue  # the app's "go on" after the placeholder: the function responses say it now
        else:
            out.append(content)
    return out


def _is_dummy(content: dict[str, Any]) -> bool:
    """A user turn holding only the relay prompt's dummy text ("." once its marker is gone)."""
    parts = content.get("parts") or []
    texts = [p.get("text") for p in parts if isinstance(p, dict)]
    return (content.get("role") == "user" and bool(parts) and all(isinstance(t, str) for t in texts)
            and "".join(texts).strip() in DUMMY_TEXTS)


def order_function_responses(contents: list[dict[str, Any]]) -> None:
    """Put each call turn's function responses in call order, matching by id, then by name.

    Gemini CLI answers parallel calls in completion order (reference/clients.md); Gemini pairs by
    position. Responses that match no call keep their place after the matched ones.
    """
    for i in range(len(contents) - 1):
        calls = [p["functionCall"] for p in contents[i].get("parts") or []
                 if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)]
        nxt = contents[i + 1]
        parts = nxt.get("parts") or []
        if contents[i].get("role") != "model" or len(calls) < 2 or nxt.get("role") != "user":
            continue
        answers = [p for p in parts if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]
        if len(answers) != len(parts):
            continue
        remaining, ordered = list(answers), []
        for call in calls:
            match = next((a for a in remaining if call.get("id") and a["functionResponse"].get("id") == call["id"]),
                         None) or next((a for a in remaining if not (call.get("id") and a["functionResponse"].get("id"))
                                        and a["functionResponse"].get("name") == call.get("name")), None)
            if match is not None:
                remaining.remove(match)
                ordered.append(match)
        contents[i + 1] = {**nxt, "parts": ordered + remaining}


# "Requests ending with a model turn are not supported" on Gemini 3.5 Flash-Lite, 3.6 Flash and later
# (Google's latest-model page via translators.md §4); CLIProxyAPI drops the trailing prefill turn.
PREFILL_REJECTED = ("gemini-3.5*", "gemini-3.6*", "gemini-3.7*", "gemini-3.8*", "gemini-3.9*", "gemini-4*")


def rejects_prefill(model: str) -> bool:
    return any(fnmatch.fnmatch(model, p) for p in PREFILL_REJECTED)


def drop_trailing_prefill(contents: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Remove a trailing text-only model turn for models that refuse one (never a call turn)."""
    if contents and rejects_prefill(model) and contents[-1].get("role") == "model" and all(
            isinstance(p, dict) and "functionCall" not in p for p in contents[-1].get("parts") or []):
        return contents[:-1]
    return contents


def _has_ref_key(value: Any) -> bool:
    if isinstance(value, dict):
        return "$ref" in value or any(_has_ref_key(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_ref_key(v) for v in value)
    return False


def escape_response_refs(contents: list[dict[str, Any]]) -> None:
    """Gemini 3 reads a `$ref` key inside functionResponse.response as a reference to one of the
    response's parts and 400s (LiteLLM#38223); such output goes as an opaque JSON string instead."""
    for content in contents:
        for part in content.get("parts") or []:
            fr = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(fr, dict) and _has_ref_key(fr.get("response")):
                fr["response"] = {"output": json.dumps(fr["response"], ensure_ascii=False)}


def repair_history(contents: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """The repairs every request gets on its way to Gemini (signing is left to the caller's scope):
    no trailing prefill where refused, responses in call order, `$ref` keys in results made opaque.
    Modifies the contents in place; returns them (one shorter when a prefill turn was dropped)."""
    contents = drop_trailing_prefill(contents, model)
    order_function_responses(contents)
    escape_response_refs(contents)
    return contents


def apply_tool_context(body: dict[str, Any], ctx: ToolContext | None, model: str, *, merge: bool = False,
                       placeholder: str = DEFAULT_PLACEHOLDER) -> dict[str, Any]:
    """The request with the session's tools, rewritten history and repairs; `body` is not modified."""
    out = copy.copy(body)
    tools = _repaired(_pop(out, "tools", "tools") or [])
    config = _pop(out, "toolConfig", "tool_config")
    if ctx is not None and ctx.declarations:
        session_names = {d["name"] for d in ctx.declarations}
        if merge:
            mine = [dict(t, functionDeclarations=[d for d in t.get("functionDeclarations") or []
                                                  if d.get("name") not in session_names])
                    for t in tools if isinstance(t, dict)]
            mine = [t for t in mine if t.get("functionDeclarations") or len(t) > 1]
            tools = mine + [{"functionDeclarations": copy.deepcopy(ctx.declarations)}]
        else:
            tools = [{"functionDeclarations": copy.deepcopy(ctx.declarations)}]
            config = None  # the app's config may name functions that are gone
        if ctx.tool_config:
            config = copy.deepcopy(ctx.tool_config)
    if tools:
        out["tools"] = tools
    if config is not None and _declared_names(tools):
        out["toolConfig"] = config
    contents = _pop(out, "contents", "contents") or []
    contents = rewrite_history(contents, ctx.rounds if ctx else [], placeholder)
    contents = repair_history(copy.deepcopy(contents), model)
    sign_current_turn(contents, model)
    out["contents"] = contents
    return out
