"""Per-model options written `[PATTERN=]MODE`: shell patterns on the Gemini model name, first match
wins, a bare mode applies to every model (`--schema-mode`, `--tool-result-media`)."""

import fnmatch


def parse_rules(specs: list[str] | tuple[str, ...], modes: tuple[str, ...], what: str) -> list[tuple[str, str]]:
    """`["gemini-3*=json", "parameters"]` -> [(pattern, mode)]; a bad entry is a ValueError naming it."""
    rules = []
    for spec in specs:
        pattern, _, mode = spec.rpartition("=") if "=" in spec else ("*", "=", spec)
        if mode not in modes or not pattern:
            choices = " or ".join(repr(m) for m in modes)
            raise ValueError(f"{what} must be {choices} (optionally PATTERN=MODE), not {spec!r}")
        rules.append((pattern, mode))
    return rules


def rule_for(model: str, rules: list[tuple[str, str]]) -> str | None:
    """The mode of the first rule whose pattern matches `model`, or None."""
    return next((mode for pattern, mode in rules if fnmatch.fnmatch(model, pattern)), None)
