"""The JSON Schema validator for call arguments: never backtracks, never fetches, built once.

A client's schema is untrusted input. jsonschema matches `pattern`, `patternProperties` and the
pattern side of `additionalProperties` with Python's backtracking `re`, so `^(a+)+$` against a
30-character argument would block the event loop for minutes; Gemini itself uses RE2, which cannot
backtrack. Here those keywords match with RE2 (`google-re2`); a pattern RE2 cannot compile
(look-around, back-references) is not checked, logged once. The registry never retrieves: a remote
`$ref` is unresolvable (the check is skipped), never an `urlopen` on the event loop.
`unevaluatedProperties` is not checked (its pattern walk is jsonschema's own `re`; Gemini ignores it).
Validators are cached by the schema's fingerprint: a tool sent with every request is compiled once.
"""

import functools
import hashlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import re2
from jsonschema import ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import NoSuchResource

log = logging.getLogger(__name__)
# Distinct schemas kept compiled; an agent sends a few dozen tools, a busy proxy a few hundred.
MAX_CACHED_VALIDATORS = 1024
# RE2 memory budget per pattern (bytes): a pattern needing more is not checked rather than slow.
RE2_MAX_MEM = 8 << 20


def _never_retrieve(uri: str) -> Any:
    raise NoSuchResource(ref=uri)


REGISTRY: Registry = Registry(retrieve=_never_retrieve)  # type: ignore[call-arg]


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any | None:
    """The RE2 program for a schema pattern, or None (logged once) when RE2 cannot run it."""
    options = re2.Options()
    options.max_mem = RE2_MAX_MEM
    options.log_errors = False  # RE2's own logging writes to stderr, past the log's format and its rate limit
    try:
        return re2.compile(pattern, options)
    except Exception as e:  # noqa: BLE001 - re2.error and friends: an ECMA feature RE2 lacks
        log.warning("schema pattern %r not checked: RE2 cannot compile it (%s)", pattern[:100], e)
        return None


def _search(pattern: str, text: str) -> bool | None:
    rx = compile_pattern(pattern)
    return None if rx is None else rx.search(text) is not None


def _pattern(validator: Validator, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and isinstance(pattern, str) and _search(pattern, instance) is False:
        yield ValidationError(f"{instance[:100]!r} does not match {pattern!r}")


def _pattern_properties(validator: Validator, patterns: Any, instance: Any, schema: Any
                        ) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, dict):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Validator, extra: Any, instance: Any, schema: Any
                           ) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    props = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in props and not any(_search(p, k) is not False for p in patterns)]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif extra is False and extras:
        yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, sorted(extras)))} "
                              f"{'was' if len(extras) == 1 else 'were'} unexpected)")


def _not_checked(validator: Validator, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    return iter(())


_RE2_KEYWORDS = {"pattern": _pattern, "patternProperties": _pattern_properties,
                 "additionalProperties": _additional_properties, "unevaluatedProperties": _not_checked}


@functools.cache
def _dialect(cls: type[Validator]) -> type[Validator]:
    """A jsonschema dialect with the regex keywords on RE2 (`_RE2_KEYWORDS`)."""
    return validators.extend(cls, {k: v for k, v in _RE2_KEYWORDS.items() if k in cls.VALIDATORS})


_CACHE: dict[str, Validator] = {}
# The same schema object as last time (a tool's parameters, prepared once and shared by the requests
# that send the same tools: wire/shared_tools.py): its validator without hashing it again. The entry
# holds the schema, so its id is not reused while it is here.
_BY_ID: dict[int, tuple[dict[str, Any], Validator]] = {}


def validator_for(schema: dict[str, Any] | bool) -> Validator:
    """A validator for `schema`, shared by every call with the same schema."""
    seen = _BY_ID.get(id(schema))
    if seen is not None and seen[0] is schema:
        return seen[1]
    key = hashlib.sha256(json.dumps(schema, sort_keys=True, default=repr).encode()).hexdigest()
    found = _CACHE.pop(key, None)
    if found is None:
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        found = _dialect(cls)(schema, registry=REGISTRY)
    _CACHE[key] = found  # most recently used last
    while len(_CACHE) > MAX_CACHED_VALIDATORS:
        del _CACHE[next(iter(_CACHE))]
    if isinstance(schema, dict):
        _BY_ID[id(schema)] = (schema, found)
        while len(_BY_ID) > MAX_CACHED_VALIDATORS:
            del _BY_ID[next(iter(_BY_ID))]
    return found
