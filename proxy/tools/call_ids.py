"""Which models need an id on every functionCall and functionResponse part.

Google serves Anthropic's Claude on Antigravity's Cloud Code wire in Gemini's format, and Claude
pairs each `tool_use` with its `tool_result` by id: a part without one is refused (a 400 carrying
Claude's own error; AIClient2API #652, Aether #163). The emulators that speak that wire write the
ids for Claude models only (antigravity-claude-proxy 2.0.4 `src/format/content-converter.js`: "For
Claude models, include the id field"; CLIProxyAPI's Claude translator). Gemini 3 sends ids itself
and takes them back; older Gemini models take parts without.
"""


def needs_call_ids(model: str) -> bool:
    return model.removeprefix("models/").lower().startswith("claude")
