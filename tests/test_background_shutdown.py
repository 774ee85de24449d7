"""Issue 57 item 8: SIGTERM gives background runs the shutdown's grace period, then stores those still
running as `failed` with the reason, in the shared store, so every instance reads the same at once.
They were cancelled at once and misreported: with Redis 1 in 10 read `cancelled` (nobody cancelled)
and 9 in 10 stayed `queued` until their lease ran out.

Two real `serve` processes on a real redis-server and the mock; the openai SDK (Responses) and
google-genai (Interactions) create the runs on one instance and read them through the other."""

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from google import genai

from proxy.server.background import SHUT_DOWN
from tests.servers import Process, RedisServer, mock_gemini, proxy_instance

MODEL = "gemini-2.5-flash"
SHUTDOWN = 5.0  # --shutdown-timeout: the runs' grace is 3 s of it (its last 2 s end what still runs)
QUICK = "[[mock:slow 0.6]] tell me a short story about a cat"  # a few chunks: about two seconds
LONG = "[[mock:slow 6]] tell me a long story about a dog"  # far longer than the grace


class Pair:
    def __init__(self, tmp: Path) -> None:
        self.redis = RedisServer(tmp)
        self.mock, mock_url = mock_gemini(tmp)
        store = ("--store", self.redis.url)
        self.owner: tuple[Process, str] = proxy_instance(tmp, "owner", mock_url, *store, "--shutdown-timeout",
                                                         str(SHUTDOWN))
        self.other: tuple[Process, str] = proxy_instance(tmp, "other", mock_url, *store)

    def stop(self) -> None:
        for proc, _ in (self.owner, self.other):
            proc.stop()
        self.mock.stop()
        self.redis.stop()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    p = Pair(tmp_path)
    yield p
    p.stop()


def _openai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="k", _strict_response_validation=True, max_retries=0)


def _genai(url: str) -> genai.Client:
    return genai.Client(api_key="test-key", http_options={"base_url": url, "api_version": "v1beta"})


def test_sigterm_lets_background_runs_finish_then_fails_the_rest_for_every_instance(pair: Pair) -> None:
    (owner, owner_url), (_, other_url) = pair.owner, pair.other
    mine, other = _openai(owner_url), _openai(other_url)
    long = [mine.responses.create(model=MODEL, input=LONG, background=True).id for _ in range(7)]
    owner_genai, other_genai = _genai(owner_url), _genai(other_url)  # (kept: a client let go is closed)
    interaction = owner_genai.interactions.create(model=MODEL, input=LONG, background=True).id
    quick = [mine.responses.create(model=MODEL, input=QUICK, background=True).id for _ in range(3)]
    assert other.responses.retrieve(quick[-1]).status in ("queued", "in_progress")
    start = time.monotonic()
    owner.proc.send_signal(signal.SIGTERM)
    owner.proc.wait(SHUTDOWN + 10)
    assert time.monotonic() - start < SHUTDOWN + 5  # within the bound (and the process start-up's slack)
    for rid in quick:  # finished within the grace
        assert other.responses.retrieve(rid).status == "completed"
    for rid in long:  # at once, not once the lease has run out; never `cancelled`, never `queued`
        got = other.responses.retrieve(rid)
        assert got.status == "failed", (rid, got.status)
        assert got.error is not None and got.error.message == SHUT_DOWN
    got = other_genai.interactions.get(interaction)
    assert got.status == "failed"
    assert SHUT_DOWN in str(got.model_dump(mode="json"))
