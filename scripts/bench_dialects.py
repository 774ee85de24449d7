"""How the text-dialect parser scales: an answer with one large call (a file written by a tool)
parsed whole and fed in small chunks, per dialect. Reports ratios against the whole parse measured
in the same run (a streamed parse must stay linear: same order of cost as the whole).

    .venv/bin/python scripts/bench_dialects.py [--kb 256] [--chunk 64]
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxy.dialects import DIALECTS, Call, ToolSpec  # noqa: E402


def _time(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _parse(d, tools, chunks) -> None:  # noqa: ANN001
    p = d.parser(tools)
    for chunk in chunks:
        p.feed(chunk)
    p.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb", type=int, default=256, help="size of the call's argument")
    ap.add_argument("--chunk", type=int, default=64, help="characters per streamed chunk")
    args = ap.parse_args()
    content = ("def f(x):\n    return {'a': [x, \"y\"]}\n" * (args.kb * 1024 // 36))[:args.kb * 1024]
    tools = {"write_file": ToolSpec("write_file", "", {"type": "object", "properties": {
        "path": {"type": "string"}, "content": {"type": "string"}}})}
    print(f"one call with a {args.kb} KB argument, streamed in {args.chunk}-character chunks")
    print(f"{'dialect':14} {'whole ms':>9} {'streamed / whole':>17}")
    for name, d in sorted(DIALECTS.items()):
        text = "Writing it now. " + d.render_calls([Call("write_file", {"path": "a.py", "content": content})])

        w, s = _time(lambda d=d, text=text: _parse(d, tools, [text])), _time(
            lambda d=d, text=text: _parse(d, tools, [text[i:i + args.chunk] for i in range(0, len(text), args.chunk)]),
            1)
        print(f"{name:14} {w * 1000:9.1f} {s / w:17.1f}")


if __name__ == "__main__":
    main()
