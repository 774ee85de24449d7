"""Reject what the real Gemini API rejects, with its error texts
(docs/wire.md#gemini-schema, #gemini-pairing, #signatures).

Two stages, as Gemini reports them: JSON/proto parse errors ("Invalid JSON payload received…",
listed together) and then semantic checks ("* GenerateContentRequest.<path>: <what>", one line each).
Texts marked [inferred] were not found verbatim in public captures; the rest were.
"""

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jsonschema

from proxy.mock import wire_fields
from proxy.schema.json_pointer import resolve_ref

MOCK_SIGNING_KEY = b"gemini-tool-proxy mock signatures"
SENTINELS = frozenset({"skip_thought_signature_validator", "context_engineering_is_the_way_to_go"})
NAME_RULE = ("Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), "
             "underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.")
FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:\-]{0,63}$")
COUNT_MISMATCH = ("Please ensure that the number of function response parts is equal to the number of function "
                  "call parts of the function call turn.")
MISSING_SIGNATURE = ("Function call is missing a thought_signature in functionCall parts. This is required for tools "
                     "to work correctly, and missing thought_signature may lead to degraded model performance. "
                     "Additional data, function call `default_api:{name}` , position {position}. Please refer to "
                     "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")

@lru_cache(maxsize=1024)
def _meta_schema_problem(schema_json: str) -> str | None:
    """The meta-schema check, cached by content: it costs milliseconds per schema, and the mock is the
    benchmark's baseline, so re-checking the same declarations on every request would drown what is measured."""
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(schema_json))
    except jsonschema.SchemaError as e:
        return e.message
    return None


# The fields of each request message come from one table (proxy/mock/wire_fields.py, checked against the
# installed google-genai by tests/test_mock_sdk_fields.py); what is not in it is a 400 "Unknown name".
TYPES = {"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
MODES = {"MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"}
MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")
# Gemini 2.x answers multimodal function responses so (gemini-cli#19436).
# Built-in tools next to function declarations: Gemini 2.x (celeste-python#197, 2026) and Gemini 3
# without the flag (pydantic-ai#6051, Open-WebUI-Functions#159).
COMBINATION_UNSUPPORTED = "Tool use with function calling is unsupported by the model."
COMBINATION_NEEDS_FLAG = ("Please enable tool_config.include_server_side_tool_invocations to use Built-in tools with "
                          "Function calling.")
SERVER_SIDE_UNSUPPORTED = "Server-side tool invocations are not supported for this model."  # [inferred wording]
RESPONSE_PARTS_REFUSED = ("Unable to submit request because `function_response.parts` is not supported for this model. "
                          "Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling")
# Extra fields the Cloud Code Assist wrapper's inner request may carry (docs/wire.md#gemini-framing).
# Gemma on Gemini's API (agno-agi/agno#3505, BerriAI/litellm#10313; the system-instruction refusal for Gemma 3).
GEMMA_NO_TOOLS = "Function calling is not enabled for models/{model}"
GEMMA_NO_SYSTEM = "Developer instruction is not enabled for models/{model}"
CLOUDCODE_FIELDS = frozenset({"sessionId"})
# Recorded 400s (tests/recorded/): MINIMAL on gemini-3.7-flash (2026-09) and gemini-3.1-pro-preview
# (2026-10-09), and on 3.8 Flash and every 3.x Pro as Google's model guides say
# (docs/wire.md#reasoning); forced calling with a JSON answer
# (vercel/ai google-structured-output-with-tools-error.json).
MINIMAL_UNSUPPORTED = "Thinking level MINIMAL is not supported for this model. Please retry with other thinking level."
MINIMAL_REFUSED = re.compile(r"^gemini-(3\.[78]-flash|3(\.\d+)?-pro)")
ANY_WITH_JSON = "Forced function calling (ANY mode) with a response mime type: 'application/json' is unsupported"


@dataclass
class GeminiRejection(Exception):
    status: int
    message: str
    status_name: str = "INVALID_ARGUMENT"
    violations: list[dict[str, str]] = field(default_factory=list)
    retry_delay: str | None = None  # "1.5s": a google.rpc.RetryInfo detail, as Gemini sends on 429
    details: list[dict[str, Any]] | None = None  # details of its own (Antigravity's ErrorInfo), before RetryInfo

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.status, "message": self.message, "status": self.status_name}
        details = []
        if self.violations:
            details.append({"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": self.violations})
        if self.details is not None:
            details.extend(self.details)
        elif self.status == 429:  # Google's 429 names the quota first (tests/recorded/error-429-retry-info.json)
            details.append({"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                            "violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel"}]})
        if self.retry_delay:
            details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": self.retry_delay})
        if details:
            err["details"] = details
        return {"error": err}


_CAPITAL = re.compile(r"(?<!^)(?=[A-Z])")


@lru_cache(maxsize=4096)
def snake(name: str) -> str:
    """A proto field's snake_case name. Remembered: the checks ask it for each field of each schema of
    each declaration (20 tools made about 600 calls a request, most of the mock's time on it)."""
    return _CAPITAL.sub("_", name).lower()


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def get(d: dict[str, Any], key: str) -> Any:
    """Proto JSON accepts lowerCamelCase and the original snake_case field names."""
    return d[key] if key in d else d.get(snake(key))


def sign(model: str, name: str, args: Any) -> str:
    """The mock's thought signature: bound to the model and to the exact call it accompanies. Gemini
    binds its own to the model too: one made by another model is "Corrupted thought signature"
    (CLIProxyAPI #1538: a gemini-3-pro-preview signature replayed to Antigravity's gemini-3-pro-high;
    Roo-Code #10554: signatures cannot be reused across model versions)."""
    msg = f"{model}|{name}|{json.dumps(args, sort_keys=True, separators=(',', ':'))}".encode()
    return base64.b64encode(b"\x12\x20" + hmac.new(MOCK_SIGNING_KEY, msg, hashlib.sha256).digest()).decode()


def is_gemini3(model: str) -> bool:
    return model.startswith("gemini-3")


def call_signature(model: str, name: str, args: Any, after_search: str | None = None) -> str:
    """A functionCall's signature; a call Gemini made after a search in the same turn is bound to
    that search too, so a history that lost the search's parts fails like a corrupted one."""
    return sign(model, name, args if after_search is None else {"afterSearch": after_search, "args": args})


def search_call_id(query: str) -> str:
    return "srch" + hashlib.sha256(query.encode()).hexdigest()[:8]


def search_result(queries: Any) -> dict[str, Any]:
    """The mock's Google Search result for a toolCall's queries (what its toolResponse carries)."""
    qs = [q for q in queries if isinstance(q, str)] if isinstance(queries, list) else []
    return {"results": [{"title": "weather.example",
                         "url": "https://weather.example/" + re.sub(r"[^a-z0-9]+", "-", q.lower())} for q in qs]}


def unknown_fields(body: Any, message: str, api: str, allow: frozenset[str] = frozenset(),
                   without: frozenset[tuple[str, str]] = frozenset()) -> list[tuple[str, str]]:
    """Stage 1 over the whole body: (field path, description) for each field its message lacks on `api`
    (Gemini names the path in snake_case, map entries as `[i].value`), and for a message that is not an
    object; `without`: (message, field) pairs this model lacks there. Free-form values (arguments,
    labels, JSON schemas) are not walked."""
    out: list[tuple[str, str]] = []

    def walk(obj: Any, message: str, path: str, extra: frozenset[str] = frozenset()) -> None:
        if not isinstance(obj, dict):
            out.append((path, f"Invalid value at '{path}' (type.googleapis.com/google.protobuf.Struct), "
                              f"{json.dumps(obj)}"))
            return
        known = wire_fields.fields(message, api)
        for key, value in obj.items():
            name = key if key in known or key in extra else camel(key)
            if name not in known or (message, name) in without:
                if name not in extra:
                    where = f" at '{path}'" if path else ""
                    out.append((path, f"Invalid JSON payload received. Unknown name \"{key}\"{where}: "
                                      "Cannot find field."))
                continue
            kind, sub = known[name], f"{path}.{snake(name)}" if path else snake(name)
            if not kind or kind == wire_fields.STRUCT or value is None:
                continue
            if kind.startswith(wire_fields.MAP):
                for i, item in enumerate(value.values() if isinstance(value, dict) else []):
                    walk(item, kind.removeprefix(wire_fields.MAP), f"{sub}[{i}].value")
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    walk(item, kind, f"{sub}[{i}]")
            else:
                walk(value, kind, sub)

    walk(body, message, "", allow)
    return out


def vertex_takes_call_ids(model: str) -> bool:
    """Vertex's functionCall/functionResponse `id`: defined (and minted by Vertex) for Gemini 3.5 and
    later only (anomalyco/opencode PR #50504, live 2026-09-22); older models there answer `Unknown
    name "id"` (looplj/axonhub #874, charmbracelet/fantasy #265, vercel/ai #15664)."""
    return re.match(r"^gemini-(3\.[5-9]|[4-9])", model) is not None


class _Checker:
    def __init__(self, model: str, api: str = "mldev") -> None:
        self.model = model
        self.api = api
        self.without: frozenset[tuple[str, str]] = frozenset()
        if api == "vertex" and not vertex_takes_call_ids(model):
            self.without = frozenset({("FunctionCall", "id"), ("FunctionResponse", "id")})
        self.parse: list[tuple[str, str]] = []     # (field path, description)
        self.semantic: list[str] = []

    # -- stage 1: proto parse ------------------------------------------------------------------

    @staticmethod
    def fields(obj: Any) -> dict[str, Any]:
        """A message's fields (unknown_fields reported what is wrong with them)."""
        return obj if isinstance(obj, dict) else {}

    def schema(self, s: Any, path: str, named: str) -> None:
        s = self.fields(s)
        t = get(s, "type")
        if isinstance(t, list):
            self.parse.append((path, f"Invalid JSON payload received. Unknown name \"type\" at '{path}': "
                                     "Proto field is not repeating, cannot start list."))
        elif t is not None and (not isinstance(t, str) or t.upper() not in TYPES):
            self.parse.append((f"{path}.type", f"Invalid value at '{path}.type' "
                               f"(type.googleapis.com/google.ai.generativelanguage.v1beta.Type), {json.dumps(t)}"))
        enum = get(s, "enum")
        if isinstance(enum, list):
            for i, v in enumerate(enum):
                if not isinstance(v, str):
                    self.parse.append((f"{path}.enum[{i}]",
                                       f"Invalid value at '{path}.enum[{i}]' (TYPE_STRING), {json.dumps(v)}"))
        props = get(s, "properties")
        if props is not None:
            if not isinstance(props, dict):
                self.parse.append((f"{path}.properties", f"Invalid value at '{path}.properties' "
                                   f"(type.googleapis.com/google.protobuf.Struct), {json.dumps(props)}"))
            else:
                for i, (name, sub) in enumerate(props.items()):
                    self.schema(sub, f"{path}.properties[{i}].value", f"{named}.properties[{name}]")
        items = get(s, "items")
        if items is not None:
            self.schema(items, f"{path}.items", f"{named}.items")
        for i, sub in enumerate(get(s, "anyOf") or []):
            self.schema(sub, f"{path}.any_of[{i}]", f"{named}.any_of[{i}]")
        # stage 2 checks for this node (reported only when parsing succeeded)
        kind = t.upper() if isinstance(t, str) else None
        if kind == "ARRAY" and items is None:
            self.semantic.append(f"GenerateContentRequest.{named}.items: missing field.")
        if kind == "OBJECT" and isinstance(props, dict) and not props:
            self.semantic.append(f"GenerateContentRequest.{named}.properties: should be non-empty for OBJECT type")
        if isinstance(enum, list) and kind != "STRING":
            self.semantic.append(f"GenerateContentRequest.{named}.enum: only allowed for STRING type")
        if get(s, "anyOf") is not None and len(s) > 1:
            prop = ".".join(re.findall(r"properties\[([^\]]+)\]", named)) or "root"
            self.semantic.append(f"GenerateContentRequest.{named}: functionDeclaration parameters.{prop} schema "
                                 "specified other fields alongside any_of. When using any_of, it must be the only "
                                 "field set.")
        required = get(s, "required")
        if isinstance(required, list):
            for i, r in enumerate(required):
                if not isinstance(props, dict) or r not in props:
                    self.semantic.append(f"GenerateContentRequest.{named}.required[{i}]: property is not defined")

    def json_schema(self, s: Any, path: str) -> None:
        if not isinstance(s, dict | bool):
            self.parse.append((path, f"Invalid value at '{path}' (type.googleapis.com/google.protobuf.Value), "
                                     f"{json.dumps(s)}"))
            return

        problem = _meta_schema_problem(json.dumps(s, sort_keys=True))
        if problem:
            self.semantic.append(f"GenerateContentRequest.{path}: invalid JSON schema: {problem}")  # [inferred]
            return
        if _recursive(s):
            # gemini-cli#14945: cyclic schemas fail with this bare message.
            raise GeminiRejection(400, "Request contains an invalid argument.")

        def walk(node: Any, pointer: str) -> None:
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str):
                    extra = set(node) - {"$ref", "description", "default"}
                    if extra:
                        self.semantic.append(
                            f"GenerateContentRequest.{path}: $ref '{ref}' was set alongside unsupported fields. "
                            "If a schema node has $ref set, then only description and default can be set "
                            "alongside it")
                    if resolve_ref(s, ref) is None:
                        self.semantic.append(f"GenerateContentRequest.{path}: reference to undefined schema at "
                                             f"{pointer.lstrip('.') or '<root>'}")
                for k, v in node.items():
                    if k not in ("enum", "const", "default", "examples", "example"):
                        walk(v, f"{pointer}.{k}")
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, f"{pointer}.{i}")

        walk(s, "")

    # -- the request -----------------------------------------------------------------------------

    def request(self, body: Any, allow: frozenset[str] = frozenset(), root: str = "GenerateContentRequest") -> None:
        if not isinstance(body, dict):
            self.parse.append(("", "Invalid JSON payload received. Expected an object."))
            return
        self.parse.extend(unknown_fields(body, root, self.api, allow, self.without))
        declared = self.tools(get(body, "tools") or [])
        self.tool_config(get(body, "toolConfig"), declared)
        self.combination(get(body, "tools") or [], get(body, "toolConfig"), declared)
        self.generation(get(body, "generationConfig"))
        fcc = get(get(body, "toolConfig") or {}, "functionCallingConfig")
        gen = get(body, "generationConfig")
        if isinstance(fcc, dict) and get(fcc, "mode") == "ANY" and isinstance(gen, dict) and \
                get(gen, "responseMimeType") == "application/json":
            raise GeminiRejection(400, ANY_WITH_JSON)
        sys_inst = get(body, "systemInstruction")
        if sys_inst is not None:
            self.content(sys_inst, "system_instruction", system=True)
        contents = get(body, "contents")
        if not contents:
            self.semantic.append("GenerateContentRequest.contents: contents is not specified")
            return
        if not isinstance(contents, list):
            self.parse.append(("contents", "Invalid JSON payload received. Unknown name \"contents\": "
                                           "Proto field is not repeating, cannot start list."))
            return
        for i, c in enumerate(contents):
            self.content(c, f"contents[{i}]")

    def tools(self, tools: Any) -> list[str]:
        declared: list[str] = []
        if not isinstance(tools, list):
            self.parse.append(("tools", "Invalid JSON payload received. Unknown name \"tools\": "
                                        "Proto field is not repeating, cannot start list."))
            return declared
        for ti, tool in enumerate(tools):
            tool = self.fields(tool)
            for di, decl in enumerate(get(tool, "functionDeclarations") or []):
                path = f"tools[{ti}].function_declarations[{di}]"
                decl = self.fields(decl)
                name = get(decl, "name")
                if not isinstance(name, str) or not FUNCTION_NAME.match(name):
                    self.semantic.append(f"GenerateContentRequest.{path}.name: {NAME_RULE}")
                else:
                    declared.append(name)
                params, params_js = get(decl, "parameters"), get(decl, "parametersJsonSchema")
                if params is not None and params_js is not None:
                    self.semantic.append(f"GenerateContentRequest.{path}.parameters_json_schema: "
                                         "parameters_json_schema and parameters cannot be both set.")  # [inferred]
                if params is not None:
                    self.schema(params, f"{path}.parameters", f"{path}.parameters")
                if params_js is not None:
                    self.json_schema(params_js, f"{path}.parameters_json_schema")
        return declared

    def tool_config(self, cfg: Any, declared: list[str]) -> None:
        if cfg is None:
            return
        cfg = self.fields(cfg)
        fcc = get(cfg, "functionCallingConfig")
        if fcc is None:
            return
        fcc = self.fields(fcc)
        mode = get(fcc, "mode") or "AUTO"
        if mode not in MODES:
            self.parse.append(("tool_config.function_calling_config.mode",
                               "Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/"
                               f"google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), {json.dumps(mode)}"))
        if not declared:
            raise GeminiRejection(400, "Function calling config is set without function_declarations.")
        if get(fcc, "streamFunctionCallArguments") and not is_gemini3(self.model):
            raise GeminiRejection(400, "stream_function_call_arguments is not supported for this model.")  # [inferred]
        allowed = get(fcc, "allowedFunctionNames")
        if allowed and mode not in ("ANY", "VALIDATED"):
            self.semantic.append("GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: "
                                 "allowed_function_names is only allowed when the mode is ANY.")  # [inferred]

    def combination(self, tools: Any, cfg: Any, declared: list[str]) -> None:
        """Built-in tools (googleSearch...) next to functions: Gemini 3 with the flag only."""
        builtins = [k for t in tools if isinstance(t, dict) for k in t if camel(k) != "functionDeclarations"]
        flag = get(cfg, "includeServerSideToolInvocations") if isinstance(cfg, dict) else None
        if flag and not is_gemini3(self.model):
            raise GeminiRejection(400, SERVER_SIDE_UNSUPPORTED)
        if builtins and declared:
            if not is_gemini3(self.model):
                raise GeminiRejection(400, COMBINATION_UNSUPPORTED)
            if not flag:
                raise GeminiRejection(400, COMBINATION_NEEDS_FLAG)

    def generation(self, gen: Any) -> None:
        if gen is None:
            return
        gen = self.fields(gen)
        thinking = get(gen, "thinkingConfig")
        if thinking is not None:
            thinking = self.fields(thinking)
            budget, level = get(thinking, "thinkingBudget"), get(thinking, "thinkingLevel")
            if budget is not None and level is not None:
                raise GeminiRejection(400, "You can only set only one of thinking budget and thinking level.")
            if level is not None and not is_gemini3(self.model):
                raise GeminiRejection(400, "Thinking level is not supported for this model.")  # [inferred]
            if isinstance(level, str) and level.upper() == "MINIMAL" and MINIMAL_REFUSED.match(self.model):
                raise GeminiRejection(400, MINIMAL_UNSUPPORTED)
            lo, hi = (128, 32768) if "pro" in self.model else (0, 24576)
            if isinstance(budget, int) and budget != -1 and not lo <= budget <= hi and not is_gemini3(self.model):
                raise GeminiRejection(400, f"The thinking budget ({budget}) is invalid.")

    def content(self, c: Any, path: str, system: bool = False) -> None:
        c = self.fields(c)
        role = get(c, "role")
        if not system and role not in ("user", "model"):
            raise GeminiRejection(400, "Please use a valid role: user, model.")
        parts = get(c, "parts")
        if not parts:
            self.semantic.append(f"GenerateContentRequest.{path}.parts: contents.parts must not be empty.")
            return
        for pi, p in enumerate(parts if isinstance(parts, list) else []):
            p = self.fields(p)
            fc = get(p, "functionCall")
            if fc is not None:
                fc = self.fields(fc)
                if get(fc, "args") is not None and not isinstance(get(fc, "args"), dict):
                    self.parse.append((f"{path}.parts[{pi}].function_call.args",
                                       f"Invalid value at '{path}.parts[{pi}].function_call.args' "
                                       f"(type.googleapis.com/google.protobuf.Struct), {json.dumps(get(fc, 'args'))}"))
            self.media(p, f"{path}.parts[{pi}]")
            fr = get(p, "functionResponse")
            if fr is not None:
                fr = self.fields(fr)
                frparts = get(fr, "parts")
                if frparts:
                    if not is_gemini3(self.model):
                        raise GeminiRejection(400, RESPONSE_PARTS_REFUSED)
                    for mi, m in enumerate(frparts if isinstance(frparts, list) else []):
                        where = f"{path}.parts[{pi}].function_response.parts[{mi}]"
                        self.media(self.fields(m), where)
                if not isinstance(get(fr, "response"), dict):
                    self.parse.append((f"{path}.parts[{pi}].function_response.response",
                                       f"Invalid value at '{path}.parts[{pi}].function_response.response' "
                                       "(type.googleapis.com/google.protobuf.Struct), "
                                       f"{json.dumps(get(fr, 'response'))}"))
                if not get(fr, "name"):
                    self.semantic.append(f"GenerateContentRequest.{path}.parts[{pi}].function_response.name: "
                                         "Name cannot be empty.")  # [inferred]

    def media(self, p: dict[str, Any], path: str) -> None:
        """inlineData: base64 bytes and a MIME type; fileData: a URI (and a MIME type)."""
        blob = get(p, "inlineData")
        if blob is not None:
            blob = self.fields(blob)
            data, mime = get(blob, "data"), get(blob, "mimeType")
            if not isinstance(data, str) or _b64(data, strict=True) is None:
                self.parse.append((f"{path}.inline_data.data", f"Invalid value at '{path}.inline_data.data' "
                                   f"(TYPE_BYTES), Base64 decoding failed for \"{str(data)[:40]}\""))
            if not isinstance(mime, str) or not MIME.match(mime):
                raise GeminiRejection(400, f"Unsupported MIME type: {mime}")  # [inferred wording]
        file_data = get(p, "fileData")
        if file_data is not None:
            file_data = self.fields(file_data)
            if not isinstance(get(file_data, "fileUri"), str) or not get(file_data, "fileUri"):
                self.semantic.append(f"GenerateContentRequest.{path}.file_data.file_uri: file_uri must be set.")
            mime = get(file_data, "mimeType")
            if mime is not None and (not isinstance(mime, str) or not MIME.match(mime)):
                raise GeminiRejection(400, f"Unsupported MIME type: {mime}")  # [inferred wording]

    # -- history rules ---------------------------------------------------------------------------

    def history(self, contents: list[dict[str, Any]]) -> None:
        if contents and get(contents[-1], "role") == "model" and _prefill_rejected(self.model):
            raise GeminiRejection(400, "Requests ending with a model turn are not supported.")  # [inferred wording]
        if is_gemini3(self.model):
            for c in contents:
                for p in get(c, "parts") or []:
                    fr = get(p, "functionResponse")
                    labels = {get(d, "displayName") for m in (get(fr, "parts") or [] if isinstance(fr, dict) else [])
                              for d in (get(m, "inlineData"), get(m, "fileData")) if isinstance(d, dict)}
                    ref = _first_ref(get(fr, "response"), labels) if isinstance(fr, dict) else None
                    if ref is not None:
                        raise GeminiRejection(400, f"The referenced name '{ref}' in function_response.response does "
                                                   "not match to a display_name in the function_response.parts")
        self.server_parts(contents)
        for i, c in enumerate(contents):
            calls = [get(p, "functionCall") for p in get(c, "parts") or [] if get(p, "functionCall") is not None]
            if get(c, "role") != "model" or not calls or i + 1 >= len(contents):
                continue
            nxt = contents[i + 1]
            answers = [p for p in get(nxt, "parts") or [] if get(p, "functionResponse") is not None]
            if get(nxt, "role") != "user" or len(answers) != len(calls):
                raise GeminiRejection(400, COUNT_MISMATCH)
        self.signatures(contents)

    def server_parts(self, contents: list[dict[str, Any]]) -> None:
        """toolCall/toolResponse parts go back exactly: each toolCall signed as the mock signed it, its
        toolResponse after it in the same model turn, with the result the search gave."""
        for c in contents:
            open_calls: dict[Any, Any] = {}
            for p in get(c, "parts") or []:
                tc, tr = get(p, "toolCall"), get(p, "toolResponse")
                if tc is None and tr is None:
                    continue
                if not is_gemini3(self.model):
                    raise GeminiRejection(400, SERVER_SIDE_UNSUPPORTED)
                if tc is not None:
                    sig = get(p, "thoughtSignature")
                    if not sig:  # [inferred wording]
                        raise GeminiRejection(400, "Tool call is missing a thought_signature in toolCall parts.")
                    if sig not in SENTINELS and _b64(sig) != _b64(sign(self.model, "toolCall:" + str(get(tc, "id")),
                                                                        get(tc, "args") or {})):
                        raise GeminiRejection(400, "Corrupted thought signature.")
                    open_calls[get(tc, "id")] = tc
                else:
                    tc = open_calls.pop(get(tr, "id"), None)
                    if tc is None or get(tr, "response") != search_result((get(tc, "args") or {}).get("queries")):
                        raise GeminiRejection(400, "The tool_response does not match a preceding tool_call of the "
                                                   "same turn.")  # [inferred wording]

    def signatures(self, contents: list[dict[str, Any]]) -> None:
        for c in contents:
            search = None  # the search this turn ran before its calls
            for p in get(c, "parts") or []:
                sig, fc = get(p, "thoughtSignature"), get(p, "functionCall")
                if get(p, "toolCall") is not None:
                    search = get(get(p, "toolCall"), "id")
                if (fc is not None and sig and sig not in SENTINELS and _b64(sig) != _b64(
                        call_signature(self.model, get(fc, "name"), get(fc, "args") or {}, search))):
                    raise GeminiRejection(400, "Corrupted thought signature.")
        if not is_gemini3(self.model):
            return
        # The current turn starts at the last user content holding text (not function responses).
        start = 0
        for i, c in enumerate(contents):
            if get(c, "role") == "user" and any(get(p, "text") is not None for p in get(c, "parts") or []):
                start = i
        for i in range(start, len(contents)):
            parts = get(contents[i], "parts") or []
            first = next((p for p in parts if get(p, "functionCall") is not None), None)
            if get(contents[i], "role") == "model" and first is not None and not get(first, "thoughtSignature"):
                name = get(get(first, "functionCall"), "name")
                raise GeminiRejection(400, MISSING_SIGNATURE.format(name=name, position=i + 1))


def _prefill_rejected(model: str) -> bool:
    return re.match(r"^gemini-(3\.[5-9]|[4-9])", model) is not None


def _first_ref(value: Any, labels: set[Any]) -> str | None:
    """The first `$ref` that names none of the function response's parts."""
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str) and value["$ref"] not in labels:
            return value["$ref"]
        return next((r for v in value.values() if (r := _first_ref(v, labels)) is not None), None)
    if isinstance(value, list):
        return next((r for v in value if (r := _first_ref(v, labels)) is not None), None)
    return None


def _recursive(root: Any) -> bool:
    """True when following local $refs from the root can come back to a ref already on the path."""
    def visit(node: Any, path: tuple[str, ...]) -> bool:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                if ref in path:
                    return True
                target = resolve_ref(root, ref)
                if target is not None and visit(target, (*path, ref)):
                    return True
            return any(visit(v, path) for k, v in node.items() if k not in ("$defs", "definitions", "enum", "const"))
        if isinstance(node, list):
            return any(visit(v, path) for v in node)
        return False
    return visit(root, ())


def _b64(value: str, strict: bool = False) -> bytes | None:
    """Proto JSON `bytes` accept the standard and the URL-safe base64 alphabets (the SDKs re-encode);
    `strict`: characters outside them are an error (as for inlineData.data)."""
    try:
        text = value.replace("-", "+").replace("_", "/")
        return base64.b64decode(text + "=" * (-len(text) % 4) if strict else text + "==", validate=strict)
    except (ValueError, TypeError):
        return None


def _parse_rejection(parse: list[tuple[str, str]]) -> GeminiRejection:
    return GeminiRejection(400, "\n".join(d for _, d in parse), violations=[{"field": f, "description": d}
                                                                          for f, d in parse])


def check_fields(body: Any, message: str, api: str = "mldev") -> None:
    """Only stage 1's unknown fields, for a body whose parts are validated on their own."""
    problems = unknown_fields(body, message, api)
    if problems:
        raise _parse_rejection(problems)


def validate_request(body: Any, model: str, allow: frozenset[str] = frozenset(), api: str = "mldev",
                     root: str = "GenerateContentRequest") -> None:
    """Raise GeminiRejection exactly where Gemini would answer 400; return quietly otherwise. `api`:
    "mldev" (the Developer API, Cloud Code) or "vertex"; `root`: the request message the body is."""
    check = _Checker(model, api)
    check.request(body, allow, root)
    if check.parse:
        raise _parse_rejection(check.parse)
    if check.semantic:
        raise GeminiRejection(400, "".join(f"* {line}\n" for line in check.semantic))
    if model.startswith("gemma-"):
        if any(get(t, "functionDeclarations") for t in get(body, "tools") or []):
            raise GeminiRejection(400, GEMMA_NO_TOOLS.format(model=model))
        if model.startswith("gemma-3") and get(body, "systemInstruction") is not None:
            raise GeminiRejection(400, GEMMA_NO_SYSTEM.format(model=model))
    check.history(get(body, "contents"))
