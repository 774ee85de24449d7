"""Which models speak tools natively and which in a text dialect, by model-name pattern
(`--tool-mode PATTERN=native|DIALECT`, first match wins, then the defaults below), and where text
calls are rescued from a native model's answer (`--rescue-text-calls PATTERN=DIALECT|off`)."""

from dataclasses import dataclass, field

# Gemini's API refuses native tools for Gemma ("Function calling is not enabled for models/gemma-...").
from proxy.defaults import DEFAULT_TOOL_MODES  # noqa: E402, F401 (owned by the options' defaults)
from proxy.dialects import DIALECTS, Dialect, dialect
from proxy.pattern_rules import matches, parse_rules, rule_for

NATIVE = "native"


def _model_id(model: str) -> str:
    return model.removeprefix("models/")


@dataclass(frozen=True)
class ToolModes:
    modes: list[tuple[str, str]] = field(default_factory=list)
    rescue: list[tuple[str, str]] = field(default_factory=list)
    single_call: tuple[str, ...] = ()
    think_open: tuple[str, ...] = ()

    @classmethod
    def parse(cls, tool_modes: list[str] | tuple[str, ...] = (), rescue: list[str] | tuple[str, ...] = (),
              single_call: list[str] | tuple[str, ...] = (), think_open: list[str] | tuple[str, ...] = ()
              ) -> "ToolModes":
        """From option values; a bad one is a ValueError naming it."""
        modes = parse_rules(list(tool_modes), (NATIVE, *DIALECTS), "--tool-mode")
        rescues = parse_rules(list(rescue), ("off", *DIALECTS), "--rescue-text-calls")
        return cls(modes + DEFAULT_TOOL_MODES, rescues, _patterns(single_call, "--single-call"),
                   _patterns(think_open, "--think-open"))

    def dialect(self, model: str) -> Dialect | None:
        """The dialect `model` is prompted in, or None for native tools."""
        mode = rule_for(_model_id(model), self.modes or DEFAULT_TOOL_MODES)
        return None if mode in (None, NATIVE) else dialect(mode)

    def rescue_dialect(self, model: str) -> Dialect | None:
        """For a native model: the dialect whose complete calls are rescued from its text."""
        mode = rule_for(_model_id(model), self.rescue)
        return None if mode in (None, "off") else dialect(mode)

    def single(self, model: str) -> bool:
        return matches(_model_id(model), self.single_call)

    def thinks_open(self, model: str) -> bool:
        """The model's template ends the prompt with an open think tag (Qwen3-thinking-2507,
        DeepSeek-R1, GLM-4.5): its answer starts inside reasoning and shows only the closing tag."""
        return matches(_model_id(model), self.think_open)


def _patterns(specs: list[str] | tuple[str, ...], option: str) -> tuple[str, ...]:
    patterns = tuple(p.strip() for p in specs)
    if any(not p for p in patterns):
        raise ValueError(f"a {option} pattern must not be empty")
    return patterns
