"""Which models get `parametersJsonSchema` and which the OpenAPI-subset `parameters` (`--schema-mode`)."""

from proxy.pattern_rules import parse_rules, rule_for


def schema_mode_for(model: str, rules: list[tuple[str, str]]) -> bool:
    """True when `model` should get parametersJsonSchema: the first matching `pattern=mode` rule wins.

    The default (no rule) is `parameters`, the OpenAPI-subset Schema every Gemini model and API
    accepts (the Live API and older models refuse parametersJsonSchema, livekit/agents#3135).
    """
    return rule_for(model, rules) == "json"


def parse_schema_modes(specs: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """`["gemini-3*=json", "*=parameters"]` -> rules; a bare mode applies to every model."""
    return parse_rules(specs, ("json", "parameters"), "schema mode")
