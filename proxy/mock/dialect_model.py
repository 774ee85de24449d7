"""The mock model, prompted in a text dialect: it reads the declarations rendered into its prompt,
sees earlier calls and results as text, and answers with calls written the way each model family
writes them. Written apart from the proxy's renderers and parsers (its own markers, its own writers),
so a bug there shows up as a failed tool loop, not as two wrongs agreeing.

The scripted behaviour is the native mock's (model.py): the prompt is turned back into the native
request it stands for and answered by `respond`; only the calls change form.
"""

import json
import re
from typing import Any

from proxy.mock.model import Reply, respond
from proxy.mock.validate import get

# `[[mock:text_call DIALECT]]`: a native model writes its calls as text (models sometimes do).
TEXT_CALL = re.compile(r"\[\[mock:text_call (\w+)\]\]")
# Each dialect's tell-tale in a prompt: where a proxy (or a template) rendered its tools.
MARKERS = {
    "gemma4": "<|tool>declaration:",
    "functiongemma": "<start_function_declaration>declaration:",
    "gemma3": "You have access to functions. If you decide to invoke any of the function(s)",
    "hermes": "You are provided with function signatures within <tools></tools> XML tags",
    "qwen3coder": "<tools>\n<function>\n<name>",
    "llama3": "Given the following functions, please respond with a JSON for a function call",
    "mistral": "[AVAILABLE_TOOLS]",
    "harmony": "namespace functions {",
    "pythonic": "You are an expert in composing functions.",
}


def _all_texts(body: dict[str, Any]) -> list[str]:
    out = []
    system = get(body, "systemInstruction")
    for c in ([system] if isinstance(system, dict) else []) + list(get(body, "contents") or []):
        out += [get(p, "text") for p in get(c, "parts") or [] if isinstance(get(p, "text"), str)]
    return out


def detect(body: dict[str, Any]) -> str | None:
    """The dialect whose declarations the prompt carries, if any."""
    texts = _all_texts(body)
    return next((name for name, marker in MARKERS.items() if any(marker in t for t in texts)), None)


def _gemma_to_json(text: str, quote: str) -> str:
    """Gemma's `{key:<|"|>v<|"|>}` as JSON: strings quoted, bare keys quoted."""
    pieces = text.split(quote)
    out = []
    for n, piece in enumerate(pieces):
        if n % 2:
            out.append(json.dumps(piece))
        else:
            out.append(re.sub(r"([{,])([A-Za-z_$][\w$.\-]*):", r'\1"\2":', piece))
    return "".join(out)


def _balanced(text: str, start: int) -> str:
    depth, i, in_string = 0, start, False
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
        i += 1
    return text[start:]


def declarations(dialect: str, text: str) -> list[dict[str, Any]]:
    """The functions declared in `text`, as native declarations (name, parametersJsonSchema)."""
    decls: list[dict[str, Any]] = []
    if dialect in ("gemma4", "functiongemma"):
        quote = '<|"|>' if dialect == "gemma4" else "<escape>"
        for m in re.finditer(r"declaration:([^{]+)\{", text):
            try:  # a schema the mock cannot read (an empty property name...) leaves the model guessing
                body = json.loads(_gemma_to_json(_balanced(text, m.end() - 1), quote))
            except ValueError:
                body = {}
            params = body.get("parameters") or {} if isinstance(body, dict) else {}
            decls.append({"name": m.group(1), "parametersJsonSchema": _lower(params)})
    elif dialect == "qwen3coder":
        for m in re.finditer(r"<function>\n<name>(.*?)</name>(.*?)</function>", text, re.S):
            props = {p: {"type": t} for p, t in re.findall(r"<parameter>\n<name>(.*?)</name>\n<type>(.*?)</type>",
                                                            m.group(2))}
            req = re.search(r"<required>(.*?)</required>", m.group(2))
            decls.append({"name": m.group(1), "parametersJsonSchema": {
                "type": "object", "properties": props, "required": json.loads(req.group(1)) if req else []}})
    elif dialect == "harmony":
        for m in re.finditer(r"type (\S+) = \((?:_: \{\n(.*?)\n?\})?\) => any;", text, re.S):
            fields = re.findall(r"^(\w+)(\??): ([^,\n]+),", m.group(2) or "", re.M)
            types = {"string": "string", "number": "number", "boolean": "boolean"}
            decls.append({"name": m.group(1), "parametersJsonSchema": {
                "type": "object", "properties": {f: {"type": types.get(t.strip(), "string")} for f, _, t in fields},
                "required": [f for f, opt, _ in fields if not opt]}})
    else:  # JSON declarations: one object per tool, or a list of them
        i = text.find(MARKERS[dialect])
        while (m := re.compile(r"[\[{]").search(text, i)) is not None:
            chunk = _balanced(text, m.start())
            i = m.start() + 1
            try:
                value = json.loads(chunk)
            except ValueError:
                continue
            i = m.start() + len(chunk)
            for item in value if isinstance(value, list) else [value]:
                fn = item.get("function", item) if isinstance(item, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("name"), str) and "parameters" in fn:
                    decls.append({"name": fn["name"], "parametersJsonSchema": fn.get("parameters") or {}})
    return decls


def _lower(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower(v) for v in schema]
    return schema


def _called(text: str, names: list[str]) -> list[str]:
    """Declared names a model turn's text calls, in order (the mock reads history loosely)."""
    found = sorted((m.start(), n) for n in names for m in re.finditer(rf"(?<![\w\-]){re.escape(n)}(?![\w\-])", text))
    return [n for _, n in found]


def native_body(body: dict[str, Any], dialect: str) -> dict[str, Any]:
    """The native request a prompt in `dialect` stands for: declarations as tools, the prompt text
    without them, call turns as functionCall parts, the turns after them as functionResponses."""
    texts = _all_texts(body)
    decl_text = next(t for t in texts if MARKERS[dialect] in t)
    decls = declarations(dialect, decl_text)
    names = [d["name"] for d in decls]
    contents = []
    called: list[str] = []
    for c in get(body, "contents") or []:
        parts = [p for p in get(c, "parts") or [] if MARKERS[dialect] not in (get(p, "text") or "")]
        text = "".join(get(p, "text") or "" for p in parts if not get(p, "thought"))
        if get(c, "role") == "model":
            called = _called(text, names)
            contents.append({"role": "model", "parts": [{"functionCall": {"name": n, "args": {}}} for n in called]
                             or [{"text": text}]})
        elif called:
            contents.append({"role": "user", "parts": [{"functionResponse": {"name": n, "response": {"output": text}}}
                                                       for n in called]})
            called = []
        else:
            contents.append({"role": "user", "parts": parts or [{"text": ""}]})
    native: dict[str, Any] = {"contents": contents, "tools": [{"functionDeclarations": decls}] if decls else []}
    forced = re.search(r"You must call (?:the function (\S+) now|one of these functions now: (.*))\.", decl_text)
    if forced:
        allowed = [forced.group(1)] if forced.group(1) else forced.group(2).split(", ")
        native["toolConfig"] = {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": allowed}}
    for key in ("generationConfig",):
        if get(body, key) is not None:
            native[key] = get(body, key)
    return native


def _gemma_value(v: Any, q: str) -> str:
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(x, q)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_gemma_value(x, q) for x in v) + "]"
    if isinstance(v, str):
        return q + v + q
    return json.dumps(v)


def write_calls(dialect: str, calls: list[dict[str, Any]]) -> str:
    """Calls the way each model family writes them (docs/wire.md#dialects)."""
    def js(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False)
    if dialect == "gemma4":
        return "".join(f"<|tool_call>call:{c['name']}{_gemma_value(c['args'], '<|\"|>')}<tool_call|>" for c in calls)
    if dialect == "functiongemma":
        return "".join(f"<start_function_call>call:{c['name']}{_gemma_value(c['args'], '<escape>')}<end_function_call>"
                       for c in calls)
    if dialect == "hermes":
        return "\n".join(f'<tool_call>\n{{"name": {js(c["name"])}, "arguments": {js(c["args"])}}}\n</tool_call>'
                         for c in calls)
    if dialect == "qwen3coder":
        return "\n".join("<tool_call>\n<function=" + c["name"] + ">\n" + "".join(
            f"<parameter={k}>\n{v if isinstance(v, str) else js(v)}\n</parameter>\n" for k, v in c["args"].items())
            + "</function>\n</tool_call>" for c in calls)
    if dialect == "llama3":
        return "; ".join(js({"name": c["name"], "parameters": c["args"]}) for c in calls)
    if dialect == "mistral":
        return "".join(f"[TOOL_CALLS]{c['name']}[ARGS]{js(c['args'])}" for c in calls)
    if dialect == "harmony":
        return "".join(f"<|channel|>analysis<|message|>I should call {c['name']}.<|end|><|start|>assistant"
                       f"<|channel|>commentary to=functions.{c['name']} <|constrain|>json<|message|>{js(c['args'])}"
                       "<|call|>" for c in calls)
    pythonic = "[" + ", ".join(f"{c['name']}(" + ", ".join(f"{k}={v!r}" for k, v in c["args"].items()) + ")"
                               for c in calls) + "]"
    return f"```tool_code\n{pythonic}\n```" if dialect == "gemma3" else pythonic


def dialect_reply(body: dict[str, Any], model: str, dialect: str) -> Reply:
    """Answer a prompt in `dialect`: the native answer, its calls written as text."""
    return calls_as_text(respond(native_body(body, dialect), model), dialect)


def calls_as_text(reply: Reply, dialect: str) -> Reply:
    """The reply with its functionCall parts written as `dialect` text instead (also what the
    `text_call DIALECT` directive makes a native model do, as models sometimes do)."""
    calls = [get(p, "functionCall") for c in reply.chunks for cand in c.get("candidates") or []
             for p in (cand.get("content") or {}).get("parts") or [] if get(p, "functionCall")]
    if not calls:
        return reply
    last = reply.chunks[-1]
    text = write_calls(dialect, [{"name": c["name"], "args": c.get("args") or {}} for c in calls])
    pieces = [text[i:i + 7] for i in range(0, len(text), 7)]  # markers split across chunks, as real streams do
    reply.chunks = [{**last, "candidates": [{"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}]}
                    for p in pieces]
    reply.chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    return reply
