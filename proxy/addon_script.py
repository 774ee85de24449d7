"""The mitmdump script inside the installed package: `mitmdump -s <this file>` (what `gemini-tool-proxy
mitm` runs). A checkout's `addons/gemini_tools.py` is the same addon for a source tree; this one needs no
checkout, so the wheel alone can run the MITM."""

import sys

try:
    from proxy.intercept.addon import GeminiTools
except ModuleNotFoundError as e:  # a mitmdump of its own (pipx, brew...): mitmdump then exits, saying what to run
    raise ModuleNotFoundError(
        f"gemini-tool-proxy's addon cannot load: {e}. This mitmdump runs Python from {sys.prefix}, which lacks "
        "the proxy's dependencies: run `gemini-tool-proxy mitm`, the project's .venv/bin/mitmdump, or install "
        "gemini-tool-proxy into the environment this mitmdump runs in", name=e.name) from e

addons = [GeminiTools()]
