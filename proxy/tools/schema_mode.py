"""Which models get `parametersJsonSchema` and which the OpenAPI-subset `parameters` (`--schema-mode`)."""

import fnmatch


def schema_mode_for(model: str, rules: list[tuple[str, str]]) -> bool:
    """True when `model` should get parametersJsonSchema: the first matching `pattern=mode` rule wins.

    The default (no rule) is `parameters`, the OpenAPI-subset Schema every Gemini model and API
    accepts (the Live API and older models refuse parametersJsonSchema, livekit/agents#3135).
    """
    for pattern, mode in rules:
        if fnmatch.fnmatch(model, pattern):
            return mode == "json"
    return False


def parse_schema_modes(specs: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """`["gemini-3*=json", "*=parameters"]` -> rules; a bare mode applies to every model."""
    rules = []
    for spec in specs:
        pattern, sep, mode = spec.rpartition("=") if "=" in spec else ("*", "=", spec)
        if mode not in ("json", "parameters") or not pattern:
            raise ValueError(f"schema mode must be 'json' or 'parameters' (optionally PATTERN=MODE), not {spec!r}")
        rules.append((pattern, mode))
    return rules
