"""What each Gemini model takes, by model-name pattern: the options that differ between model
families, parsed once (serve's flags, the addon's `gtp_*` options) and asked per request.

- `--tool-result-media PATTERN=parts|siblings`: media in tool results (to_gemini/tool_result_media.py);
- `--stream-arguments PATTERN`: ask for `partialArgs` (from_gemini/partial_args.py). Off by default:
  Google's Developer API documents the field as Vertex-only and may refuse it;
- `--hosted-tools PATTERN=drop|error`: what happens to a hosted tool a model cannot serve
  (tools/hosted_tools.py);
- `--tool-mode PATTERN=native|DIALECT`, `--rescue-text-calls PATTERN=DIALECT|off`, `--single-call
  PATTERN`, `--think-open PATTERN`: models that speak tools as text (dialects/tool_modes.py);
- `--fallback PATTERN=MODEL[,MODEL...]`: the models asked when one matching is refused as passing
  (upstream/fallback.py).

And one fixed table, EXPLICIT_CACHE: which models take an explicit `cachedContents` prefix and its
minimum size (what Anthropic `cache_control` maps to, anthropic/prompt_cache.py).
"""

from dataclasses import dataclass, field

from proxy.dialects.tool_modes import ToolModes
from proxy.pattern_rules import matches, rule_for
from proxy.to_gemini.tool_result_media import parse_media_rules, parts_in_results
from proxy.tools.hosted_tools import parse_hosted_rules
from proxy.upstream.fallback import parse_fallback

# Explicit context caching, first match wins: the smallest prefix (tokens) a `cachedContents` entry
# may hold, or 0 where the model has none. Google's caching guide (ai.google.dev/gemini-api/docs/
# caching, 2026-09): 4,096 on Gemini 3.x, 2,048 on 2.5 (Google's 400: "Cached content is too small.
# total_token_count=416, min_total_token_count=4096", zyddnys/manga-image-translator #929). Gemini 4
# Argon caches implicitly only (Agent Platform's Gemini 4 Argon guide); so does the Interactions API
# (its upstream never gets here). Other models (Gemma, tuned, unknown): none, rather than a guess.
EXPLICIT_CACHE: tuple[tuple[str, int], ...] = (
    ("gemini-4*", 0),
    ("gemini-3*", 4096),
    ("gemini-2.5*", 2048),
    ("gemini-2.0*", 2048),
    ("*", 0),
)


def explicit_cache_minimum(model: str) -> int:
    """The minimum tokens of an explicit cache for `model` (a bare or `models/` name); 0: no explicit cache."""
    return rule_for(model.removeprefix("models/"), EXPLICIT_CACHE) or 0


@dataclass(frozen=True)
class ModelRules:
    result_media: list[tuple[str, str]] = field(default_factory=list)
    stream_arguments: tuple[str, ...] = ()
    hosted_tools: list[tuple[str, str]] = field(default_factory=list)
    text_calls: ToolModes = field(default_factory=ToolModes)
    fallback: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    @classmethod
    def parse(cls, result_media: list[str] | tuple[str, ...] = (), stream_arguments: list[str] | tuple[str, ...] = (),
              hosted_tools: list[str] | tuple[str, ...] = (), tool_modes: list[str] | tuple[str, ...] = (),
              rescue_text_calls: list[str] | tuple[str, ...] = (), single_call: list[str] | tuple[str, ...] = (),
              think_open: list[str] | tuple[str, ...] = (), fallback: list[str] | tuple[str, ...] = ()
              ) -> "ModelRules":
        """From option values; a bad one is a ValueError naming it."""
        patterns = tuple(p.strip() for p in stream_arguments)
        if any(not p for p in patterns):
            raise ValueError("a --stream-arguments pattern must not be empty")
        return cls(parse_media_rules(result_media), patterns, parse_hosted_rules(hosted_tools),
                   ToolModes.parse(tool_modes, rescue_text_calls, single_call, think_open), parse_fallback(fallback))

    def result_parts(self, model: str) -> bool:
        return parts_in_results(model, self.result_media)

    def streams_arguments(self, model: str) -> bool:
        """Only models with native tools stream arguments (a dialect's calls come whole)."""
        return matches(model, self.stream_arguments) and self.text_calls.dialect(model) is None
