"""Which requests are Gemini generate calls, and in which dialect (docs/wire.md#gemini-framing, #interception)."""

import re
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["generativelanguage", "cloudcode", "vertex"]

# generativelanguage: /v1beta/models/gemini-2.5-flash:streamGenerateContent (also v1, v1alpha, tunedModels)
_GL = re.compile(r"^/(v1|v1beta|v1alpha)/(?:models|tunedModels)/([^/:]+):(generateContent|streamGenerateContent)$")
# Cloud Code Assist (Gemini CLI's Code Assist path, Antigravity): /v1internal:streamGenerateContent
_CC = re.compile(r"^/v1internal:(generateContent|streamGenerateContent)$")
# Vertex AI: /v1/projects/P/locations/L/publishers/google/models/M:generateContent
_VX = re.compile(r"^/(v1|v1beta1)/projects/[^/]+/locations/[^/]+/publishers/google/models/([^/:]+):"
                 r"(generateContent|streamGenerateContent)$")


@dataclass(frozen=True)
class Target:
    kind: Kind
    model: str | None  # None for Cloud Code: the model is in the body
    method: str

    @property
    def stream(self) -> bool:
        return self.method == "streamGenerateContent"


# Paths classified (without their query: it may hold a key) and what they name: an app sends a few
# paths over and over. A lookup costs a fraction of the three expressions and a Target on a flow whose
# code and data the CPU's caches no longer hold, which at an app's pace is every flow (issue 62).
# Full, it stops growing (a Target is frozen: shared).
_SEEN: dict[str, "Target | None"] = {}
_SEEN_MAX = 1024
_UNSEEN: Any = object()


def classify(path: str) -> Target | None:
    """The generate call a request path names, or None for every other path (passed through untouched)."""
    path = path.partition("?")[0]
    found = _SEEN.get(path, _UNSEEN)
    if found is _UNSEEN:
        found = _classify(path)
        if len(_SEEN) < _SEEN_MAX:
            _SEEN[path] = found
    return found


def _classify(path: str) -> Target | None:
    if m := _GL.match(path):
        return Target("generativelanguage", m.group(2), m.group(3))
    if m := _CC.match(path):
        return Target("cloudcode", None, m.group(1))
    if m := _VX.match(path):
        return Target("vertex", m.group(2), m.group(3))
    return None
