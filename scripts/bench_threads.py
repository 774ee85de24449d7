"""Server-held Anthropic threads against the stateless replay they replace: the anthropic SDK's
`beta.messages.tool_runner()` runs a ROUNDS-round tool loop (each result about 1.4 KB) through the
proxy in-process on the mock, with threads (the SDK's default since 2.14) and with `thread=False`
(the whole history every turn), alternately REPEAT times. Prints the bytes the client sent and the
median wall time of each, and their ratios. `python scripts/bench_threads.py`."""

import json
import os
import statistics
import sys
import time
from pathlib import Path

import anthropic
from anthropic import beta_tool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness import Stack  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_THREAD_ROUNDS", "8"))
REPEAT = 5


@beta_tool
def get_weather(location: str) -> str:
    """Get the current weather in a place."""
    return f"Sunny in {location}." + " A long forecast line." * 64


def loop(url: str, threaded: bool) -> tuple[int, float]:
    sent: list[int] = []
    http = anthropic.DefaultHttpxClient(event_hooks={"request": [lambda r: sent.append(len(r.content))]})
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0, http_client=http)
    started = time.perf_counter()
    client.beta.messages.tool_runner(
        model="gemini-3-flash-preview", max_tokens=500, tools=[get_weather], **({} if threaded else {"thread": False}),
        messages=[{"role": "user", "content": f"Weather in Paris? get_weather [[mock:rounds {ROUNDS}]]"}]).until_done()
    assert len(sent) == ROUNDS + 1
    return sum(sent), time.perf_counter() - started


def main() -> None:
    stack = Stack(journal=False)
    try:
        loop(stack.url, True)  # warm up
        runs: dict[bool, list[tuple[int, float]]] = {True: [], False: []}
        for i in range(REPEAT * 2):
            threaded = i % 2 == 0
            runs[threaded].append(loop(stack.url, threaded))
        row = {}
        for threaded, got in runs.items():
            row["threaded" if threaded else "replayed"] = {"bytes": got[0][0],
                                                           "ms": round(statistics.median(t for _, t in got) * 1000, 1)}
        row["bytes ratio"] = round(row["threaded"]["bytes"] / row["replayed"]["bytes"], 3)
        row["time ratio"] = round(row["threaded"]["ms"] / row["replayed"]["ms"], 2)
        print(json.dumps({"rounds": ROUNDS, **row}))
    finally:
        stack.close()


if __name__ == "__main__":
    main()
