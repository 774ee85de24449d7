"""An OpenAI Chat Completions answer (whole or streamed) as Gemini's: reasoning as thought parts,
content as text, tool calls as functionCall parts, finish reasons and usage mapped. A stream that
ends without a finish reason stays without one (the front-end reports it as cut, never as done).
Pure; the StreamTranslator is fed parsed chunks and returns Gemini chunks."""

import json
from typing import Any

from proxy.errors import UpstreamError

FINISH = {"stop": "STOP", "tool_calls": "STOP", "function_call": "STOP", "length": "MAX_TOKENS",
          "content_filter": "SAFETY"}


def _bad(message: str) -> UpstreamError:
    return UpstreamError(f"The OpenAI-compatible upstream sent {message}.", status=502, type="server_error")


def _call_part(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    raw = fn.get("arguments") or "{}"
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise _bad(f"arguments of {fn.get('name')!r} that are not JSON: {str(raw)[:200]!r}") from None
    if not isinstance(args, dict):
        raise _bad(f"arguments of {fn.get('name')!r} that are not an object")
    part: dict[str, Any] = {"functionCall": {"name": fn.get("name") or "", "args": args}}
    if call.get("id"):
        part["functionCall"]["id"] = call["id"]
    return part


def usage(u: Any) -> dict[str, Any] | None:
    if not isinstance(u, dict):
        return None
    prompt, completion = int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
    return {"promptTokenCount": prompt, "candidatesTokenCount": completion,
            "totalTokenCount": int(u.get("total_tokens") or prompt + completion)}


def _reasoning(message: dict[str, Any]) -> str:
    value = message.get("reasoning_content") or message.get("reasoning")
    return value if isinstance(value, str) else ""


def gemini_answer(answer: Any, model: str) -> dict[str, Any]:
    """A whole chat.completion as a GenerateContentResponse."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise _bad("an answer without choices")
    message = choices[0].get("message") or {}
    parts: list[dict[str, Any]] = []
    if _reasoning(message):
        parts.append({"text": _reasoning(message), "thought": True})
    if isinstance(message.get("content"), str) and message["content"]:
        parts.append({"text": message["content"]})
    parts += [_call_part(c) for c in message.get("tool_calls") or []]
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    finish = choices[0].get("finish_reason")
    if finish:
        cand["finishReason"] = FINISH.get(finish, "OTHER")
    out: dict[str, Any] = {"candidates": [cand], "modelVersion": answer.get("model") or model}
    if usage(answer.get("usage")):
        out["usageMetadata"] = usage(answer.get("usage"))
    return out


class StreamTranslator:
    """chat.completion.chunk objects in, Gemini chunks out. Calls are emitted whole when the choice
    finishes (their arguments arrive in pieces); the finishing chunk waits for the usage chunk that
    `stream_options.include_usage` sends after it, or for the end."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.calls: dict[int, dict[str, Any]] = {}
        self.final: dict[str, Any] | None = None

    def _chunk(self, parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return {"candidates": [cand], "modelVersion": self.model}

    def feed(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        if isinstance(chunk.get("error"), dict):
            err = chunk["error"]
            code = err.get("code")
            code = code if isinstance(code, int) and 400 <= code < 600 else 502
            return [{"error": {"code": code, "status": "UNAVAILABLE", "message": str(err.get("message") or err)}}]
        out: list[dict[str, Any]] = []
        if usage(chunk.get("usage")) and self.final is not None:
            self.final["usageMetadata"] = usage(chunk["usage"])
            out.append(self.final)
            self.final = None
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            parts: list[dict[str, Any]] = []
            if _reasoning(delta):
                parts.append({"text": _reasoning(delta), "thought": True})
            if isinstance(delta.get("content"), str) and delta["content"]:
                parts.append({"text": delta["content"]})
            for tc in delta.get("tool_calls") or []:
                entry = self.calls.setdefault(int(tc.get("index", len(self.calls))),
                                              {"id": None, "function": {"name": "", "arguments": ""}})
                entry["id"] = tc.get("id") or entry["id"]
                fn = tc.get("function") or {}
                entry["function"]["name"] += fn.get("name") or ""
                entry["function"]["arguments"] += fn.get("arguments") or ""
            if parts:
                out.append(self._chunk(parts))
            if choice.get("finish_reason"):
                calls = [_call_part(self.calls[i]) for i in sorted(self.calls)]
                self.calls = {}
                self.final = self._chunk(calls, FINISH.get(choice["finish_reason"], "OTHER"))
                if usage(chunk.get("usage")):
                    self.final["usageMetadata"] = usage(chunk["usage"])
                    out.append(self.final)
                    self.final = None
        return out

    def close(self) -> list[dict[str, Any]]:
        """At the end of the stream: the finishing chunk if it still waits (no usage came)."""
        final, self.final = self.final, None
        return [final] if final is not None else []
