"""Schema-aware argument normalization (docs/wire.md#dialects, after the EXO design).

Applied to the arguments of a call before the client sees them, against the client's own JSON
Schema for that tool:
- type fixes only where the value's type differs from the declared one: "true"/"false" -> bool,
  "42" -> 42, "4.2" -> 4.2, a JSON string -> object/array, a scalar -> [scalar] when the items fit,
  a number or bool -> string, "null" -> null when allowed, enums matched case-insensitively;
- a missing required field gets the schema's `default`; it is never invented unless the
  `fill_missing` option asks for a null placeholder;
- what still does not validate (jsonschema, regexes on RE2: argument_validator.py) is reported, not blocked.
"""

import hashlib
import json
import logging
import re
from typing import Any

from proxy.schema.argument_validator import validator_for
from proxy.schema.json_pointer import resolve_ref

log = logging.getLogger(__name__)
_INT = re.compile(r"^-?\d+$")
_MAX_DEPTH = 32


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    if "properties" in schema:
        return {"object"}
    if "items" in schema:
        return {"array"}
    return set()


_CHECKS = {"string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
           "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
           "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
           "object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
           "null": lambda v: v is None}


def _fits(value: Any, types: set[str]) -> bool:
    return any(_CHECKS[t](value) for t in types if t in _CHECKS)


class _Normalizer:
    def __init__(self, root: dict[str, Any], fill_missing: bool) -> None:
        self.root, self.fill_missing = root, fill_missing

    def deref(self, schema: Any, depth: int = 0) -> Any:
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and depth < _MAX_DEPTH:
            target = resolve_ref(self.root, schema["$ref"])
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}} if isinstance(target, dict) else {}
            depth += 1
        return schema

    def value(self, value: Any, schema: Any, depth: int = 0) -> Any:
        schema = self.deref(schema)
        if not isinstance(schema, dict) or depth > _MAX_DEPTH:
            return value
        branches = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(branches, list) and branches:
            if any(self._valid(value, b) for b in branches):
                return value
            for b in branches:
                fixed = self.value(value, b, depth + 1)
                if self._valid(fixed, b):
                    return fixed
            return value
        types = _types(schema)
        value = self._scalar(value, schema, types, depth)
        if isinstance(value, dict):
            return self._object(value, schema, depth)
        if isinstance(value, list) and isinstance(schema.get("items"), dict | bool):
            return [self.value(v, schema["items"], depth + 1) for v in value]
        return value

    def _scalar(self, value: Any, schema: dict[str, Any], types: set[str], depth: int) -> Any:
        enum = schema.get("enum")
        if isinstance(value, str) and isinstance(enum, list) and value not in enum:
            match = [e for e in enum if isinstance(e, str) and e.lower() == value.lower()]
            if len(match) == 1:
                return match[0]
        if not types or _fits(value, types):
            return value
        if isinstance(value, str):
            text = value.strip()
            if "boolean" in types and text.lower() in ("true", "false"):
                return text.lower() == "true"
            if "integer" in types and _INT.match(text):
                return int(text)
            if "number" in types:
                try:
                    number = float(text)
                    return int(number) if _INT.match(text) else number
                except ValueError:
                    pass
            if "null" in types and text in ("null", "None"):
                return None
            if types & {"object", "array"}:
                try:
                    parsed = json.loads(text)
                except json.JSONDecodeError:
                    parsed = None
                if _fits(parsed, types & {"object", "array"}):
                    return parsed
        if "string" in types and isinstance(value, bool):
            return "true" if value else "false"
        if "string" in types and isinstance(value, int | float):
            return json.dumps(value)
        if "integer" in types and isinstance(value, float) and value.is_integer():
            return int(value)
        if "array" in types and not isinstance(value, list) and isinstance(schema.get("items"), dict):
            item = self.value(value, schema["items"], depth + 1)
            if self._valid(item, schema["items"]):
                return [item]
        return value

    def _object(self, value: dict[str, Any], schema: dict[str, Any], depth: int) -> dict[str, Any]:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        extra = schema.get("additionalProperties")
        out = {k: self.value(v, props.get(k, extra), depth + 1) if k in props or isinstance(extra, dict)
               else v for k, v in value.items()}
        required = schema.get("required")
        for name in required if isinstance(required, list) else []:
            if not isinstance(name, str) or name in out:
                continue
            prop = self.deref(props.get(name))
            if isinstance(prop, dict) and "default" in prop:
                out[name] = prop["default"]
            elif self.fill_missing:
                out[name] = None
        return out

    def _valid(self, value: Any, schema: Any) -> bool:
        return not _errors(value, schema, self.root)


def _errors(value: Any, schema: Any, root: dict[str, Any]) -> list[str]:
    if not isinstance(schema, dict | bool) or _surely_valid(value, schema, top=True):
        return []
    if isinstance(schema, dict) and root is not schema:
        schema = {**schema, "$defs": root.get("$defs", {}), "definitions": root.get("definitions", {})}
    try:
        return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:200]}"
                for e in validator_for(schema).iter_errors(value)]
    except Exception as e:  # noqa: BLE001 - a schema jsonschema cannot use (a JS-style pattern, an odd keyword)
        _skip_once(schema, f"validation skipped: {type(e).__name__}: {e}")
        return []  # validates nothing: the arguments pass through


# What a schema may hold for `_surely_valid` to answer: annotations (nothing to check) and a few
# keywords whose meaning is the same in every draft from 6 to 2020-12.
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly"})
_DRAFTS = frozenset({"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/schema",
                     "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema",
                     "http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-06/schema"})
# A JSON type's values, by their exact Python types (what jsonschema decides otherwise -- 1.0 as an
# integer, a subclass -- is left to it).
_TYPE_OF: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,), "integer": (int,),
                                         "number": (int, float), "object": (dict,), "array": (list,),
                                         "null": (type(None),)}


def _surely_valid(value: Any, schema: Any, top: bool = False) -> bool:
    """True only when `value` is valid against `schema` for jsonschema too, without asking it (its
    check of one call's arguments cost 25 us; a tool's schema is most often a flat object of typed
    properties). False means "not sure": anything outside the few keywords above, a type or an enum
    it would have to think about, a schema it might refuse; jsonschema then decides, and words the
    errors."""
    if type(schema) is not dict:
        return False
    for key, rule in schema.items():  # (loops, not all(...): a generator costs more than these checks)
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            fits = False
            for name in (rule,) if type(rule) is str else rule if type(rule) is list else ():
                kinds = _TYPE_OF.get(name) if type(name) is str else None
                if kinds is None:  # an unknown one: jsonschema raises
                    return False
                fits = fits or type(value) in kinds
            if not fits:
                return False
        elif key == "properties":
            if type(rule) is not dict:
                return False
            if type(value) is dict:
                for k, v in value.items():
                    if k in rule and not _surely_valid(v, rule[k]):
                        return False
        elif key == "required":
            if type(rule) is not list:
                return False
            for name in rule:
                if type(name) is not str or type(value) is dict and name not in value:
                    return False
        elif key == "additionalProperties":  # argument_validator.py's: the keys not in `properties`
            props = schema.get("properties", {})
            if not (rule is True or rule is False or type(rule) is dict) or type(props) is not dict:
                return False
            if type(value) is dict and rule is not True:
                for k, v in value.items():
                    if k not in props and (rule is False or not _surely_valid(v, rule)):
                        return False
        elif key == "items":
            if type(rule) is not dict:
                return False
            if type(value) is list:
                for v in value:
                    if not _surely_valid(v, rule):
                        return False
        elif key == "enum":
            if type(rule) is not list or type(value) is not str:
                return False
            for e in rule:
                if type(e) is str and e == value:
                    break
            else:
                return False
        elif not top or not (key in ("$defs", "definitions")
                             or key == "$schema" and type(rule) is str and rule in _DRAFTS):
            return False
    return True


def normalize_arguments(args: dict[str, Any], schema: dict[str, Any] | None, *, fill_missing: bool = False
                        ) -> tuple[dict[str, Any], list[str]]:
    """Return (arguments fixed where the schema is sure, the violations that remain).

    Never raises: a schema it cannot handle skips the fix-up (logged once per schema) and the
    arguments go to the client exactly as Gemini sent them."""
    if not isinstance(schema, dict):
        return args, []
    try:
        fixed = _Normalizer(schema, fill_missing).value(args, schema)
        fixed = fixed if isinstance(fixed, dict) else args
        return fixed, _errors(fixed, schema, schema)
    except Exception as e:  # noqa: BLE001 - a call is never lost to a schema the normalizer cannot read
        _skip_once(schema, f"normalization skipped: {type(e).__name__}: {e}")
        return args, []


# Schemas already reported, by fingerprint: a tool sent with every request is logged once, not per call.
_REPORTED: set[str] = set()
_MAX_REPORTED = 1024


def _skip_once(schema: Any, why: str) -> None:
    key = hashlib.sha256(repr(schema).encode(errors="replace")).hexdigest()[:16]
    if key in _REPORTED:
        return
    if len(_REPORTED) >= _MAX_REPORTED:
        _REPORTED.clear()
    _REPORTED.add(key)
    log.warning("argument check %s (schema %s)", why[:300], key)
