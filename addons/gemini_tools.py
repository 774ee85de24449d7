"""mitmdump entry: `mitmdump -s addons/gemini_tools.py [--set gtp_...=...]`.

The addon lives in the `proxy` package (proxy/intercept/addon.py); run mitmdump from the project's
virtual environment (`.venv/bin/mitmdump`) so that package is importable. `mitmdump --options`
lists every `gtp_*` option with its help text.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without `pip install -e .`

from proxy.addon_script import addons  # noqa: E402, F401  (the same script the installed package runs)
