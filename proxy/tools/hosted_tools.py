"""OpenAI's hosted tools on Gemini (`--hosted-tools [PATTERN=]drop|error`).

- Web search (Responses `web_search`, `web_search_preview` and their dated types; Chat
  `web_search_options`) becomes a `{"googleSearch": {}}` tool. Gemini 3 and later take it next to
  function declarations when `toolConfig.includeServerSideToolInvocations` is set; the answer then
  carries `toolCall`/`toolResponse` parts (from_gemini/server_tools.py). Older models take search
  only alone: with functions they answer "Tool use with function calling is unsupported by the model."
- Other hosted tools (file_search, code_interpreter, image_generation, local_shell, tool_search,
  mcp, computer use...) have no counterpart the proxy can serve.

What cannot be served follows the model's policy: `drop` (the default; the request goes without it
and the answer says so, never silently: `x-gtp-warning` and, on Responses, `metadata.gtp_warning`)
or `error` (a 400 naming `tools[i]`).
"""

from dataclasses import dataclass
from typing import Any

from proxy.errors import ProxyError
from proxy.pattern_rules import matches, parse_rules, rule_for

SEARCH_TYPES = frozenset({"web_search", "web_search_2025_08_26", "web_search_preview",
                          "web_search_preview_2025_03_11"})
POLICIES = ("drop", "error")
# Models that combine Google Search with function declarations (tool-combination, Gemini 3 onwards).
COMBINING_MODELS = ("gemini-3*", "gemini-[4-9]*", "models/gemini-3*", "models/gemini-[4-9]*")
GOOGLE_SEARCH = {"googleSearch": {}}
WARNING_HEADER = "x-gtp-warning"
WARNING_METADATA = "gtp_warning"
_METADATA_VALUE_MAX = 512  # OpenAI's limit on a metadata value


@dataclass(frozen=True)
class HostedTool:
    kind: str
    param: str  # where the client asked for it: "tools[2]", "web_search_options"


def parse_hosted_rules(specs: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    return parse_rules(specs, POLICIES, "hosted tools")


def combines_search(model: str) -> bool:
    return matches(model, COMBINING_MODELS)


def serve_hosted(hosted: list[HostedTool], has_functions: bool, model: str, rules: list[tuple[str, str]]
                 ) -> tuple[list[dict[str, Any]], bool, list[str]]:
    """(Gemini built-in tools to send, whether to set includeServerSideToolInvocations, warnings).

    Raises the 400 for the first tool that cannot be served when the model's policy is `error`."""
    policy = rule_for(model, rules) or "drop"
    builtins: list[dict[str, Any]] = []
    warnings: list[str] = []
    for tool in hosted:
        if tool.kind in SEARCH_TYPES or tool.kind == "web_search_options":
            if not has_functions or combines_search(model):
                if not builtins:
                    builtins.append(dict(GOOGLE_SEARCH))
                continue
            why = f"{model} cannot use Google Search together with function tools (Gemini 3 and later can)"
        else:
            why = f"Gemini has no counterpart for the hosted tool type {tool.kind!r}"
        if policy == "error":
            raise ProxyError(f"The tool at '{tool.param}' cannot be served: {why}. (The proxy's --hosted-tools "
                             "policy for this model is 'error'.)", param=tool.param, code="unsupported_tool")
        warnings.append(f"{tool.param} ({tool.kind}): {why}; the request was sent without it")
    return builtins, bool(builtins) and has_functions, warnings


def warning_text(warnings: list[str]) -> str:
    """One line of printable ASCII for a header or a metadata value (OpenAI caps those at 512
    characters): a tool type is the client's text, and a control character in a header is refused."""
    text = "".join(c if " " <= c <= "~" else "?" for c in "; ".join(warnings))
    return text if len(text) <= _METADATA_VALUE_MAX else text[:_METADATA_VALUE_MAX - 3] + "..."


def warning_headers(warnings: list[str]) -> dict[str, str]:
    return {WARNING_HEADER: warning_text(warnings)} if warnings else {}
