"""What the installed google-genai puts on the wire, derived from its own types and request converters.

`sample(cls)` fills every field of a pydantic type with a value of its type (one level of recursion
for self-nesting types like Schema). `probes(api)` turns a fully set GenerateContentConfig and Content
into wire bodies with the SDK's own `_GenerateContentParameters_to_mldev` / `_to_vertex` (and Vertex
countTokens with a full GenerationConfig): where a converter raises because one API lacks a field, the
value is split field by field until each field either converts or is the one the SDK refuses there.
`emitted(bodies)` walks the bodies alongside the SDK types and names each field as (message, wire key,
child kind) — the vocabulary of `proxy/mock/wire_fields.py`.
"""

import base64
import datetime
import enum
import types as pytypes
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pydantic
from google import genai
from google.auth.credentials import AnonymousCredentials
from google.genai import _common, models, types

from proxy.mock.wire_fields import MAP, STRUCT

MODEL = "gemini-3-flash-preview"  # a model that takes every thinking level (3.x Pro refuses MINIMAL, tests/recorded)
# Client-side settings that never reach the wire.
CLIENT_ONLY = frozenset({"http_options", "should_return_http_response", "automatic_function_calling",
                         "automatic_continuation"})
# SDK classes whose wire message has another name (the proto's).
MESSAGE_OF = {"GenerateContentConfig": "GenerationConfig"}
# Wire keys the converters spell unlike the field they come from (models.py `setv(..., ['modelConfig'], ...)`).
RENAMES = {("GenerateContentConfig", "modelConfig"): "model_selection_config",
           ("GenerationConfig", "modelConfig"): "model_selection_config",
           ("GenerateContentConfig", "outputConfig"): "generation_output_config"}


# Fields typed loosely in the SDK (a validator makes them so): what they hold on the wire.
FIELD_TYPES = {("GenerateContentConfig", "tools"): list[types.Tool], ("CountTokensConfig", "tools"): list[types.Tool],
               ("GenerateContentConfig", "system_instruction"): types.Content,
               ("CountTokensConfig", "system_instruction"): types.Content}


def _annotation(cls: type[pydantic.BaseModel], name: str) -> Any:
    return FIELD_TYPES.get((cls.__name__, name), cls.model_fields[name].annotation)


def _is_model(a: Any) -> bool:
    return isinstance(a, type) and issubclass(a, pydantic.BaseModel)


def _value(ann: Any, seen: tuple[type, ...]) -> Any:
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Annotated:
        return _value(args[0], seen)
    if origin is typing.Literal:
        return args[0]
    if origin in (typing.Union, pytypes.UnionType):
        for a in sorted((a for a in args if a is not type(None)), key=lambda a: not _is_model(a)):
            if (v := _value(a, seen)) is not None:
                return v
        return None
    if origin is list:
        v = _value(args[0], seen) if args else "x"
        return None if v is None else [v]
    if origin is dict:
        v = _value(args[1], seen) if len(args) == 2 else "v"
        return None if v is None else {"k": v}
    if ann is typing.Any:
        return {"k": "v"}
    if isinstance(ann, type) and issubclass(ann, enum.Enum):
        members = [m for m in ann if "UNSPECIFIED" not in m.name]
        return (members or list(ann))[0]
    if _is_model(ann):
        return sample(ann, seen)
    return {bool: True, int: 1, float: 0.5, str: "x", bytes: b"x",
            datetime.datetime: datetime.datetime(2026, 1, 1)}.get(ann)


def sample(cls: type[pydantic.BaseModel], seen: tuple[type, ...] = ()) -> Any:
    """An instance with every wire field set (a value per field type)."""
    if seen.count(cls) >= 2:
        return None
    values = {name: _value(_annotation(cls, name), (*seen, cls)) for name in cls.model_fields
              if name not in CLIENT_ONLY}
    return cls(**{k: v for k, v in values.items() if v is not None})


def clients() -> dict[str, Any]:
    return {"mldev": genai.Client(api_key="k")._api_client,
            "vertex": genai.Client(vertexai=True, project="p", location="us-central1",
                                   credentials=AnonymousCredentials())._api_client}


@dataclass
class Probes:
    bodies: list[tuple[str, str, dict[str, Any], Any]]  # (root message, label, wire body, the SDK parameters)
    refused: list[tuple[str, str]]                 # (field path, the SDK's error) where the SDK itself refuses


def _split(convert: Callable[[Any], dict[str, Any]], inst: Any, wrap: Callable[[Any], Any], label: str,
           out: Probes, root: str) -> None:
    """Convert wrap(inst); where the SDK refuses, keep the fields it takes together and split each field
    it refuses (with those beside it) until the refused leaf is found."""
    try:
        params = wrap(inst)
        out.bodies.append((root, label, convert(params), params))
        return
    except (ValueError, pydantic.ValidationError):
        pass
    cls = type(inst)
    good: dict[str, Any] = {}
    bad: list[str] = []
    for name in cls.model_fields:
        if getattr(inst, name) is None:
            continue
        try:
            convert(wrap(cls(**{name: getattr(inst, name)})))
            good[name] = getattr(inst, name)
        except (ValueError, pydantic.ValidationError):
            bad.append(name)
    before = len(out.bodies)
    for name in bad:
        v = getattr(inst, name)

        def one(s: Any, name: str = name) -> Any:
            return wrap(cls(**good, **{name: s}))
        if isinstance(v, pydantic.BaseModel):
            _split(convert, v, one, f"{label}.{name}", out, root)
        elif isinstance(v, list) and v and isinstance(v[0], pydantic.BaseModel):
            _split(convert, v[0], lambda s, one=one: one([s]), f"{label}.{name}[]", out, root)
        else:
            try:
                convert(one(v))
            except (ValueError, pydantic.ValidationError) as e:
                out.refused.append((f"{label}.{name}", str(e).splitlines()[0]))
    if good and len(out.bodies) == before:  # (a split field's bodies carry the good ones beside it)
        try:
            params = wrap(cls(**good))
            out.bodies.append((root, label, convert(params), params))
        except (ValueError, pydantic.ValidationError):  # fields the SDK takes alone but not together
            for name, v in good.items():
                params = wrap(cls(**{name: v}))
                out.bodies.append((root, f"{label}.{name}", convert(params), params))


def probes(api: str) -> Probes:
    """Every field of a generateContent request (and of Vertex countTokens) as the SDK converts it."""
    client = clients()[api]
    to_wire = (models._GenerateContentParameters_to_vertex if api == "vertex"
               else models._GenerateContentParameters_to_mldev)

    def convert(params: Any) -> dict[str, Any]:
        body = to_wire(client, params, None, params)
        body.pop("_url", None)
        body.pop("config", None)
        return _common.encode_unserializable_types(_common.convert_to_dict(body))

    out = Probes([], [])
    root = "GenerateContentRequest"
    _split(convert, sample(types.GenerateContentConfig),
           lambda c: types._GenerateContentParameters(model=MODEL, contents="hi", config=c), "config", out, root)
    _split(convert, sample(types.Content),
           lambda c: types._GenerateContentParameters(model=MODEL, contents=[c]), "contents[]", out, root)
    count_wire = (models._CountTokensParameters_to_vertex if api == "vertex"
                  else models._CountTokensParameters_to_mldev)

    def count(params: Any) -> dict[str, Any]:
        body = count_wire(client, params, None, params)
        body.pop("_url", None)
        return _common.encode_unserializable_types(_common.convert_to_dict(body))

    params = types._CountTokensParameters(model=MODEL, contents="hi")
    out.bodies.append(("CountTokensRequest", "count_tokens", count(params), params))
    if api == "vertex":  # only Vertex's countTokens takes a config (models.py _CountTokensConfig_to_mldev raises)
        _split(count, sample(types.CountTokensConfig),
               lambda c: types._CountTokensParameters(model=MODEL, contents="hi", config=c),
               "count_tokens.config", out, "CountTokensRequest")
    return out


def _field(cls: type[pydantic.BaseModel], key: str) -> str | None:
    name = RENAMES.get((cls.__name__, key))
    if name is not None:
        return name
    for name in cls.model_fields:
        if key in (name, _camel(name)):
            return name
    return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _child(ann: Any) -> Any:
    """The SDK type a field's wire value is read as: a model class, (MAP, class), STRUCT or None (a scalar)."""
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Annotated:
        return _child(args[0])
    if origin in (typing.Union, pytypes.UnionType):
        kinds = [_child(a) for a in args if a is not type(None)]
        return next((k for k in kinds if _is_model(k) or isinstance(k, tuple)), next(
            (k for k in kinds if k is STRUCT), None))
    if origin is list:
        return _child(args[0]) if args else None
    if origin is dict:
        return (MAP, args[1]) if len(args) == 2 and _is_model(args[1]) else STRUCT
    if ann is typing.Any:
        return STRUCT
    return ann if _is_model(ann) else None


def _kind(child: Any) -> str | None:
    if isinstance(child, tuple):
        return f"{MAP}{MESSAGE_OF.get(child[1].__name__, child[1].__name__)}"
    if _is_model(child):
        return MESSAGE_OF.get(child.__name__, child.__name__)
    return child


def emitted(bodies: list[tuple[str, str, dict[str, Any], Any]]) -> dict[tuple[str, str], str | None]:
    """{(message, wire key): child kind} for every field the bodies carry."""
    found: dict[tuple[str, str], str | None] = {}

    def walk(value: Any, child: Any, message: str | None) -> None:
        if isinstance(value, list):
            for v in value:
                walk(v, child, message)
            return
        if not isinstance(value, dict) or child is STRUCT or child is None:
            return
        if isinstance(child, tuple):
            for v in value.values():
                walk(v, child[1], None)
            return
        cls = child
        msg = message or MESSAGE_OF.get(cls.__name__, cls.__name__)
        for key, v in value.items():
            name = _field(cls, key)
            if name is None:
                raise AssertionError(f"{msg}.{key}: the SDK emits a key no field of {cls.__name__} is named for "
                                     "(add it to tests/genai_wire.py RENAMES)")
            sub = _child(_annotation(cls, name))
            found[(msg, _camel(key))] = _kind(sub)
            walk(v, sub, None)

    for root, _label, body, _params in bodies:
        for key, v in body.items():
            if key == "contents":
                sub: Any = types.Content
            elif key == "generationConfig":
                sub = types.GenerateContentConfig if root == "GenerateContentRequest" else types.GenerationConfig
            else:
                cfg = types.GenerateContentConfig if root == "GenerateContentRequest" else types.CountTokensConfig
                name = _field(cfg, key)
                assert name is not None, f"{root}.{key}: no field of {cfg.__name__}"
                sub = _child(_annotation(cfg, name))
            found[(root, _camel(key))] = _kind(sub)
            walk(v, sub, None)
    return found


def iter_messages(found: dict[tuple[str, str], str | None]) -> Iterator[str]:
    yield from sorted({m for m, _ in found})


# -- requests the SDK builds with sane values, for the mock to answer over HTTP -----------------------

# Values where the API has a rule about them (a role, a MIME type, a declared name); the rest stays
# one value per type.
VALUES: dict[tuple[str, str], Any] = {
    ("Content", "role"): "user", ("Blob", "mime_type"): "image/png", ("FileData", "mime_type"): "image/png",
    ("FunctionResponseBlob", "mime_type"): "image/png", ("FunctionResponseFileData", "mime_type"): "image/png",
    ("FunctionCall", "name"): "get_weather", ("FunctionResponse", "name"): "get_weather",
    ("FunctionDeclaration", "name"): "get_weather", ("Schema", "required"): ["k"],
    ("FunctionCallingConfig", "mode"): types.FunctionCallingConfigMode.ANY,
    ("FunctionCallingConfig", "allowed_function_names"): ["get_weather"],
    ("GenerateContentConfig", "candidate_count"): 1,
}
# Fields of which a request sets one (Gemini refuses both: "You can only set only one of thinking
# budget and thinking level", "parameters_json_schema and parameters cannot be both set", a Part holds
# one kind of data, any_of must be a schema's only field): the first is in the main sample, each other
# one in a variant of its own.
ONE_OF: dict[str, list[list[str]]] = {
    "ThinkingConfig": [["thinking_level", "thinking_budget"]],
    "FunctionDeclaration": [["parameters", "parameters_json_schema"], ["response", "response_json_schema"]],
    "GenerateContentConfig": [["response_schema", "response_json_schema"]],
    "Part": [["text", "inline_data", "file_data", "function_call", "function_response", "executable_code",
              "code_execution_result", "tool_call", "tool_response"]],
    "Tool": [list(types.Tool.model_fields)],  # built-in tools next to functions need a flag of their own
}
SCHEMA_ALONE = "any_of"
# additionalProperties goes in a variant of its own: the Developer API refuses it (wire_fields.REAL_REFUSALS).
SCHEMA_APART = "additional_properties"


def _sane_value(cls: type[pydantic.BaseModel], name: str, seen: tuple[type, ...]) -> Any:
    if (cls.__name__, name) in VALUES:
        return VALUES[(cls.__name__, name)]
    ann = _annotation(cls, name)
    child = _child(ann)
    model = child[1] if isinstance(child, tuple) else child
    if _is_model(model):
        inner = sane(model, (*seen, cls))
        if inner is None:
            return None
        if isinstance(child, tuple):
            return {"k": inner}
        return [inner] if _is_list(ann) else inner
    return _value(ann, (*seen, cls))


def _is_list(ann: Any) -> bool:
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin in (typing.Union, pytypes.UnionType, typing.Annotated):
        return any(_is_list(a) for a in args if a is not type(None))
    return origin is list or ann is list


def _excluded(cls: type[pydantic.BaseModel]) -> set[str]:
    out = {m for group in ONE_OF.get(cls.__name__, []) for m in group[1:]}
    return out | ({SCHEMA_ALONE, SCHEMA_APART} if cls is types.Schema else set())


def sane(cls: type[pydantic.BaseModel], seen: tuple[type, ...] = ()) -> Any:
    """Every field set with a value the API takes, one of each ONE_OF group."""
    if seen.count(cls) >= 2:
        return None
    skip = _excluded(cls) | CLIENT_ONLY
    values = {n: _sane_value(cls, n, seen) for n in cls.model_fields if n not in skip}
    if cls is types.Schema and values.get("properties") is None:  # required names a property
        values["required"] = None
    return cls(**{k: v for k, v in values.items() if v is not None})


def variants(cls: type[pydantic.BaseModel]) -> Iterator[tuple[str, Any]]:
    """(label, instance): the sane sample, then one per other member of each ONE_OF group."""
    main = sane(cls)
    groups = ONE_OF.get(cls.__name__, [])
    yield (f".{groups[0][0]}" if cls in (types.Tool, types.Part) else ""), main
    for group in groups:
        for alt in group[1:]:
            rest = {n: getattr(main, n) for n in cls.model_fields if getattr(main, n) is not None
                    and n not in group}
            yield f".{alt}", cls(**rest, **{alt: _sane_value(cls, alt, ())})
    if cls is types.Schema:
        yield f".{SCHEMA_ALONE}", types.Schema(any_of=[types.Schema(type=types.Type.STRING)])
        yield f".{SCHEMA_APART}", types.Schema(type=types.Type.OBJECT, additional_properties=False,
                                               properties={"k": types.Schema(type=types.Type.STRING)})


USER_TEXT = types.Content(role="user", parts=[types.Part(text="hi")])
DECLARED = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="get_weather", parameters=types.Schema(type=types.Type.OBJECT,
                                                properties={"k": types.Schema(type=types.Type.STRING)}))])


def _signed(name: str, args: Any) -> bytes:
    """The signature the mock gave this call (it checks them as Gemini does; the SDK sends bytes base64'd)."""
    from proxy.mock.validate import sign
    return base64.b64decode(sign(MODEL, name, args))


def _conversation(label: str, part: Any) -> list[Any]:
    """A history a part of this kind can stand in: calls in a model turn answered by the next user turn."""
    call = types.Part(function_call=types.FunctionCall(name="get_weather", args={"k": "v"}, id="x"),
                      thought_signature=_signed("get_weather", {"k": "v"}))
    answer = types.Part(function_response=types.FunctionResponse(name="get_weather", response={"k": "v"}, id="x"))
    if label == ".function_call":
        fc = part.function_call
        signed = part.model_copy(update={"thought_signature": _signed(fc.name, fc.args)})
        return [USER_TEXT, types.Content(role="model", parts=[signed]), types.Content(role="user", parts=[answer])]
    if label == ".function_response":
        return [USER_TEXT, types.Content(role="model", parts=[call]), types.Content(role="user", parts=[part])]
    if label in (".tool_call", ".tool_response"):  # a server-side search as Gemini returned it (the mock's signature)
        from proxy.mock.validate import search_result
        tc = types.ToolCall(id="x", tool_type=part.tool_call.tool_type if part.tool_call else None, args={"k": "v"})
        signed = types.Part(tool_call=tc, thought_signature=_signed("toolCall:x", {"k": "v"}))
        tr = types.Part(tool_response=types.ToolResponse(id="x", tool_type=tc.tool_type,
                                                         response=search_result(None)))
        return [USER_TEXT, types.Content(role="model", parts=[signed, tr, types.Part(text="done")]),
                types.Content(role="user", parts=[types.Part(text="thanks")])]
    return [types.Content(role="user", parts=[part])]


def sdk_requests() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(kind, label, keyword arguments of generate_content / count_tokens): every field of the config,
    each group alternative and each kind of part, with the context the API needs for it."""
    for name in types.GenerateContentConfig.model_fields:
        if name in CLIENT_ONLY or name in ("continuation_token", "cached_content"):
            continue
        main = sane(types.GenerateContentConfig)
        for label, value in _field_variants(types.GenerateContentConfig, name, getattr(main, name)):
            extra = {"tools": [DECLARED]} if name == "tool_config" else {}
            yield "generate", f"config.{name}{label}", {
                "contents": [USER_TEXT], "config": types.GenerateContentConfig(**{name: value}, **extra)}
    alt = next(v for label, v in variants(types.GenerateContentConfig) if label == ".response_json_schema")
    yield "generate", "config.response_json_schema", {
        "contents": [USER_TEXT], "config": types.GenerateContentConfig(response_json_schema=alt.response_json_schema)}
    for label, part in variants(types.Part):
        yield "generate", f"contents.parts{label}", {"contents": _conversation(label, part)}
    for label, cfg in variants(types.CountTokensConfig):
        yield "count", f"count_tokens.config{label}", {"contents": [USER_TEXT], "config": cfg}


def _field_variants(cls: type[pydantic.BaseModel], name: str, value: Any,
                    seen: tuple[type, ...] = ()) -> Iterator[tuple[str, Any]]:
    """A field's sane value, then its value with each nested ONE_OF alternative (one level of nesting
    below lists: tools[] get one request per kind of tool). Contents are left whole: the parts' kinds
    are requests of their own, in a history that fits them."""
    if value is None:
        return
    many = isinstance(value, list)
    inner = value[0] if many else value
    if not isinstance(inner, pydantic.BaseModel) or type(inner) in seen or type(inner) is types.Content:
        yield "", value
        return
    for label, v in variants(type(inner)):
        yield label, [v] if many else v
        for sub in type(inner).model_fields:
            sv = getattr(v, sub)
            if sv is None:
                continue
            for sl, alt in _field_variants(type(inner), sub, sv, (*seen, type(inner))):
                if sl:
                    yield f"{label}.{sub}{sl}", [v.model_copy(update={sub: alt})] if many else v.model_copy(
                        update={sub: alt})
