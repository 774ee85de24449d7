"""The mock as Antigravity's Cloud Code backend (`daily-cloudcode-pa.googleapis.com/v1internal:*`):
the envelope checked strictly, the account and quota calls answered, and the rules of the non-Gemini
models Google serves on that wire in Gemini's format.

Shapes follow the emulators' code and users' captures (tests/recorded/antigravity/, SOURCES.md there):
the envelope `{model, project, requestId, userAgent: "antigravity", requestType, request:
{..., sessionId}, enabledCreditTypes?}` (CLIProxyAPI's executor, antigravity-claude-proxy 2.0.4,
opencode-antigravity-auth 1.6.0); `retrieveUserQuotaSummary` answering `{groups: [{buckets:
[{bucketId, window, remainingFraction, resetTime}]}]}` with no `response` wrapper (Antigravity-Manager,
cursor-byok); `fetchAvailableModels` with each model's `quotaInfo`; a 429 `RESOURCE_EXHAUSTED` with
ErrorInfo (`quotaResetTimeStamp`) and RetryInfo (CLIProxyAPI's tests); Claude's own errors as a 400
`INVALID_ARGUMENT` whose message is Anthropic's error JSON as a string (users' reports).

What no public source shows, and is the mock's guess: the 403 for a model outside the account's
tier (its text), and Claude's error for a `functionCall`/`functionResponse` without an id (written as
Anthropic words a missing field: "messages.N.content.M.tool_use.id: Field required").
"""

import datetime
import json
from typing import Any

from proxy.mock.validate import GeminiRejection

# The envelope's members: Gemini CLI's Code Assist (model, project, user_prompt_id, request) and
# Antigravity's (requestId, userAgent, requestType, enabledCreditTypes).
ENVELOPE = frozenset({"model", "project", "user_prompt_id", "request", "requestId", "userAgent", "requestType",
                      "enabledCreditTypes"})
# The mock account's Antigravity models (CLIProxyAPI's registry, antigravity-claude-proxy 2.0.4's
# defaults, opencode-antigravity-auth 1.6.0's ids without their prefix): others are outside its tier.
MODELS = ("gemini-3-flash", "gemini-3-flash-agent", "gemini-3-pro-high", "gemini-3-pro-low", "gemini-3.1-pro-low",
          "gemini-3.1-pro-high", "gemini-3.1-flash-lite", "gemini-3-pro-preview", "gemini-3-flash-preview",
          "gemini-2.5-flash", "gemini-2.5-pro", "claude-sonnet-4-6", "claude-sonnet-4-6-thinking",
          "claude-opus-4-6-thinking", "claude-sonnet-4-5", "claude-sonnet-4-5-thinking", "claude-opus-4-5-thinking",
          "gpt-oss-120b-medium")
_THIRD_PARTY = ("claude", "gpt-oss")


def _at(seconds: float) -> str:
    return (datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def quota_summary() -> dict[str, Any]:
    """The account's four buckets (Gemini and third-party models, five hours and a week)."""
    def bucket(bucket_id: str, window: str, fraction: float, reset: float) -> dict[str, Any]:
        label = "Five Hour Limit Remaining" if window == "5h" else "Weekly Limit Remaining"
        return {"bucketId": bucket_id, "displayName": label, "window": window, "remainingFraction": fraction,
                "resetTime": _at(reset)}
    return {"groups": [
        {"displayName": "Gemini Models", "description": "Models within this group: Gemini Flash, Gemini Pro",
         "buckets": [bucket("gemini-weekly", "weekly", 0.7836881, 79_000),
                     bucket("gemini-5h", "5h", 0.8160709, 5_500)]},
        {"displayName": "Claude and GPT models",
         "description": "Models within this group: Claude Opus, Claude Sonnet, GPT-OSS",
         "buckets": [bucket("3p-weekly", "weekly", 1, 600_000), bucket("3p-5h", "5h", 0.5, 17_000)]}],
        "description": "Within each group, models share a weekly limit and a 5-hour limit."}


def available_models() -> dict[str, Any]:
    """fetchAvailableModels: each model with its pool's quotaInfo (the pool is shared by its group)."""
    models = {}
    for name in MODELS:
        third = name.startswith(_THIRD_PARTY)
        models[name] = {"displayName": name, "supportsThinking": "thinking" in name or not third,
                        "maxTokens": 200000 if third else 1048576, "maxOutputTokens": 64000 if third else 65536,
                        "quotaInfo": {"remainingFraction": 0.5 if third else 0.8160709,
                                      "resetTime": _at(17_000 if third else 5_500)}}
    return {"models": models, "webSearchModelIds": ["gemini-3-flash"]}


ACCOUNT_ANSWERS: dict[str, Any] = {
    "retrieveUserQuotaSummary": quota_summary,
    "fetchAvailableModels": available_models,
    "fetchUserInfo": lambda: {"regionCode": "US"},
    "fetchAdminControls": lambda: {},
}


def is_antigravity(envelope: dict[str, Any]) -> bool:
    return envelope.get("userAgent") == "antigravity"


def check_envelope(envelope: dict[str, Any]) -> None:
    """Google's answer for an envelope member it does not have, and for a model outside the tier."""
    for name in envelope:
        if name not in ENVELOPE:
            raise GeminiRejection(400, f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.',
                                  "INVALID_ARGUMENT")
    model = str(envelope.get("model", "")).removeprefix("models/")
    if is_antigravity(envelope) and model not in MODELS:
        raise GeminiRejection(403, f"Permission denied: the model {model} is not available for your account's tier.",
                              "PERMISSION_DENIED")


def exhausted(model: str) -> GeminiRejection:
    """The 429 a spent quota gets, with its reset as Antigravity sends it."""
    reset = _at(3600)
    return GeminiRejection(429, "You have exhausted your capacity on this model. Your quota will reset after 1h0m0s.",
                           "RESOURCE_EXHAUSTED", retry_delay="3600s", details=[
                               {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "QUOTA_EXHAUSTED",
                                "domain": "cloudcode-pa.googleapis.com",
                                "metadata": {"model": model, "quotaResetDelay": "3600s",
                                             "quotaResetTimeStamp": reset, "uiMessage": "true"}}])


def _anthropic(message: str) -> GeminiRejection:
    """Claude's refusal as Google passes it on: Anthropic's error JSON in a Gemini 400."""
    text = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": message},
                       "request_id": "req_vrtx_mock"}, separators=(",", ":"))
    return GeminiRejection(400, text, "INVALID_ARGUMENT")


# What CLIProxyAPI's cleaner says Claude rejects in VALIDATED mode (internal/util/gemini_schema.go).
VALIDATED_REJECTS = frozenset({"minLength", "maxLength", "exclusiveMinimum", "exclusiveMaximum", "pattern",
                               "minItems", "maxItems", "uniqueItems", "format", "default", "examples", "example"})


def _keywords(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    found = set(schema) & VALIDATED_REJECTS
    properties = schema.get("properties")
    for sub in properties.values() if isinstance(properties, dict) else ():
        found |= _keywords(sub)
    for key in ("items", "additionalProperties"):
        found |= _keywords(schema.get(key))
    for sub in schema.get("anyOf") or [] if isinstance(schema.get("anyOf"), list) else []:
        found |= _keywords(sub)
    return found


def check_claude(request: dict[str, Any]) -> None:
    """Claude's rules on Gemini's format: every functionCall and functionResponse carries an id, and
    each model turn's calls are answered, id for id, by the next turn's responses; in VALIDATED mode
    a tool schema holds none of the keywords Claude rejects there (the words of that refusal are the
    mock's guess, in Anthropic's style)."""
    fcc = (request.get("toolConfig") or {}).get("functionCallingConfig") or {}
    if fcc.get("mode") == "VALIDATED":
        decls = [d for t in request.get("tools") or [] for d in t.get("functionDeclarations") or []]
        for n, decl in enumerate(decls):
            bad = _keywords(decl.get("parameters")) | _keywords(decl.get("parametersJsonSchema"))
            if bad:
                raise _anthropic(f"tools.{n}.custom.input_schema: JSON schema keyword(s) {', '.join(sorted(bad))} "
                                 "are not supported with strict tool validation")
    contents = request.get("contents") or []
    for n, content in enumerate(contents):
        parts = content.get("parts") or [] if isinstance(content, dict) else []
        for m, part in enumerate(parts):
            for kind, block in (("functionCall", "tool_use"), ("functionResponse", "tool_result")):
                if isinstance(part.get(kind), dict) and not part[kind].get("id"):
                    field = "id" if block == "tool_use" else "tool_use_id"
                    raise _anthropic(f"messages.{n}.content.{m}.{block}.{field}: Field required")
        calls = [p["functionCall"]["id"] for p in parts if isinstance(p.get("functionCall"), dict)]
        if not calls:
            continue
        following = contents[n + 1] if n + 1 < len(contents) else {}
        answered = {p["functionResponse"]["id"] for p in following.get("parts") or []
                    if isinstance(p.get("functionResponse"), dict)}
        missing = [c for c in calls if c not in answered]
        if missing and n + 1 < len(contents):
            raise _anthropic(f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately "
                             f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                             f"`tool_result` block in the next message.")


def is_third_party(model: str) -> bool:
    return model.startswith(_THIRD_PARTY)
