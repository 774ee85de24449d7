"""Issue 57 item 10: a 100 MB whole answer stalled every other request for over a second (orjson
holds the GIL for a whole parse, on the loop or in a thread). It is parsed a slice at a time now
(fast_json.loads_cooperatively), the loop serving others between slices, and its check and its
writing are two stretches with the loop served between them.

Measured here (2 cores, load about 4): /healthz answered at worst after 1.12 s before the change
to the check and the writing, and after over 2 s with the whole parse on the loop as well; 0.44 s
with both (the rest is writing the 100 MB answer out). The bound leaves room for a loaded machine."""

import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from proxy import fast_json
from tests.servers import Process, proxy_instance

pytestmark = pytest.mark.serial
ROOT = Path(__file__).resolve().parents[1]
BOUND = 0.8  # seconds /healthz may wait while the proxy handles a 100 MB answer
# Issue 60 item 7, with 2 busy loops beside the serial pass on 2 cores (load average 5-12): 0.31, 0.38, 0.54,
# 0.82, 0.89 and 2.05 s (three over the bound). Not widened: 25 % over those would be past the 1.12 s the regression
# this catches (the check and the writing in one stretch) took at load 4; a machine that loaded fails it.


def test_a_large_answer_parses_as_orjson_does() -> None:
    import asyncio
    import json

    value = {"candidates": [{"content": {"parts": [{"text": "é\u2028" * 10, "n": 1.5, "big": 2 ** 70}] * 90_000}}]}
    raw = json.dumps(value, ensure_ascii=False).encode()
    assert len(raw) > fast_json.LARGE
    assert asyncio.run(fast_json.loads_cooperatively(raw)) == json.loads(raw)
    with pytest.raises(json.JSONDecodeError):
        asyncio.run(fast_json.loads_cooperatively(raw[:-1]))
    with pytest.raises(json.JSONDecodeError):
        asyncio.run(fast_json.loads_cooperatively(raw + b" {}"))


def test_a_100_mb_answer_does_not_stall_another_request(tmp_path: Path) -> None:
    upstream = Process(tmp_path, "upstream", [sys.executable, str(ROOT / "tests" / "big_answer_upstream.py"),
                                              "--mb", "100"], "ready", timeout=60)
    proc, url = proxy_instance(tmp_path, "proxy", upstream.url(), "--journal", "off")
    try:
        done, worst, got = threading.Event(), [0.0], []

        def big() -> None:
            req = urllib.request.Request(url + "/v1beta/models/gemini-2.5-flash:generateContent",
                                         data=b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}',
                                         headers={"content-type": "application/json", "x-goog-api-key": "k"})
            with urllib.request.urlopen(req, timeout=300) as r:
                got.append(len(r.read()))
            done.set()

        worker = threading.Thread(target=big)
        worker.start()
        while not done.wait(0.02):
            start = time.perf_counter()
            with urllib.request.urlopen(url + "/healthz", timeout=60) as r:
                r.read()
            worst[0] = max(worst[0], time.perf_counter() - start)
        worker.join()
        assert got and got[0] > 100_000_000, "the whole answer reached the client"
        assert worst[0] < BOUND, f"/healthz waited {worst[0]:.2f} s behind a 100 MB answer"
    finally:
        proc.stop()
        upstream.stop()
