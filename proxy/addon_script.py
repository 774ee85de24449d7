"""The mitmdump script inside the installed package: `mitmdump -s <this file>` (what `gemini-tool-proxy
mitm` runs). A checkout's `addons/gemini_tools.py` is the same addon for a source tree; this one needs no
checkout, so the wheel alone can run the MITM."""

from proxy.intercept.addon import GeminiTools

addons = [GeminiTools()]
