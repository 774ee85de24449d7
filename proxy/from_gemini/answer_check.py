"""What a Gemini answer amounted to, fed chunk by chunk: its finish, whether anything usable came,
and the token usage it reported last.

h11's rule for a body that ends early ("peer unexpectedly closed connection") applied to Gemini:
an answer that ends without a finishReason was cut off, and is never reported as complete. An
answer that finishes STOP with nothing in it (Gemini 3 does this on call-id mismatches) is never a
success either. A blocked prompt or a MAX_TOKENS/SAFETY finish is a real answer: each protocol
maps it to its own incomplete/filtered shape.
"""

from typing import Any

from proxy.errors import ProxyError
from proxy.from_gemini.server_tools import SERVER_PARTS
from proxy.wire.gemini import first_candidate_parts

NO_CANDIDATE = "Gemini answered without any candidate (no content, no finish reason and no block reason)."
TRUNCATED = ("Gemini's answer ended without a finish reason: it was cut off before the end (the upstream "
             "connection closed early).")
EMPTY = "Gemini finished its answer (finishReason {}) without any content: no text and no function call."
_CLEAN = ("STOP", "FINISH_REASON_UNSPECIFIED")


def usable(part: dict[str, Any]) -> bool:
    """A part a client can act on: non-thought text, a call, or any other non-text part (images, code...)."""
    if part.get("thought"):
        return False
    if "text" in part:
        return bool(part["text"])
    # A search Gemini ran (toolCall/toolResponse) is not an answer by itself.
    return bool(set(part) - {"thoughtSignature", "thought", "partMetadata", *SERVER_PARTS})


class AnswerCheck:
    def __init__(self) -> None:
        self.candidates = False
        self.finish: str | None = None
        self.finish_message: str | None = None
        self.block: str | None = None
        self.usable = False
        self.called = False
        self.usage: dict[str, Any] | None = None  # the latest usageMetadata (Gemini repeats it, growing)

    def feed(self, chunk: dict[str, Any]) -> None:
        """`chunk` must have passed wire.gemini.check_answer."""
        if chunk.get("usageMetadata"):
            self.usage = chunk["usageMetadata"]
        block = (chunk.get("promptFeedback") or {}).get("blockReason")
        if block:
            self.block = block
        cands = chunk.get("candidates") or []
        if not cands:
            return
        self.candidates = True
        for part in first_candidate_parts(chunk):
            self.usable = self.usable or usable(part)
            self.called = self.called or "functionCall" in part
        if cands[0].get("finishReason"):
            self.finish = cands[0]["finishReason"]
            self.finish_message = cands[0].get("finishMessage")

    def problem(self) -> str | None:
        """Why the answer must be reported as a failure, or None when its finish tells the truth."""
        if self.block:
            return None
        if not self.candidates:
            return NO_CANDIDATE
        if self.finish is None:
            return TRUNCATED
        if self.finish in _CLEAN and not self.usable:
            return EMPTY.format(self.finish)
        return None

    def answered_in_text(self) -> bool:
        """A clean text answer without a call: what a forced tool choice retries."""
        return self.finish in _CLEAN and self.usable and not self.called and not self.block


# Answer parts the OpenAI protocols cannot carry yet (issue: images and files): refused, never dropped.
UNREPRESENTED = ("inlineData", "fileData", "executableCode", "codeExecutionResult")


def refuse_unrepresented(part: dict[str, Any], protocol: str) -> None:
    for key in UNREPRESENTED:
        if key in part:
            raise ProxyError(f"Gemini answered with a {key} part, which this proxy cannot represent in the {protocol} "
                             "API yet; the answer is refused rather than passed on without it.", status=502,
                             type="server_error", code="unsupported_answer_part")
