"""Run the mock Gemini and the front-end on loopback in a background event loop.

The official SDKs are synchronous here, so the servers live on their own thread and loop;
tests talk to them over real HTTP exactly as a user's client would.
"""

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Coroutine
from typing import Any

from aiohttp import web

from proxy.front.app import make_app
from proxy.journal.recorder import Recorder
from proxy.journal.ring import Journal
from proxy.mock.server import ACCEPTED, RECEIVED, SEEN, start_mock
from proxy.model_rules import ModelRules
from proxy.server.auth import ClientKeys
from proxy.server.context import CONTEXT
from proxy.server.guard import RequestGuard
from proxy.server.site import ServerLimits, start_site
from proxy.store import MemoryStore
from proxy.upstream.gemini.client import GeminiUpstream


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run[T](self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class Stack:
    """Mock Gemini + front-end, both on ephemeral loopback ports."""

    def __init__(self, max_body: int | None = None, wrap: Any = None, keys: list[str] | None = None,
                 limits: ServerLimits | None = None, rules: ModelRules | None = None, journal: bool = True,
                 passthrough_collections: frozenset[str] = frozenset(), guard: RequestGuard | None = None,
                 usage: Any = None) -> None:
        """`wrap(upstream) -> upstream` puts a stand-in between the front-end and the mock (fault injection).
        `journal`: exchanges are recorded, as `serve` records them by default (read them with `exchange()`).
        `guard`: the Host and Origin allow-lists (default: a loopback bind's)."""
        self.lt = LoopThread()
        self.mock_runner, self.mock_url, self.mock_app = self.lt.run(start_mock())
        self.store = MemoryStore()
        self.upstream = GeminiUpstream(self.mock_url, api_key="test-key")
        kwargs: dict[str, Any] = {"max_body": max_body} if max_body else {}
        if keys:
            kwargs["keys"] = ClientKeys(keys)
        if limits:
            kwargs["limits"] = limits
        if rules:
            kwargs["rules"] = rules
        if guard:
            kwargs["guard"] = guard
        if journal:
            kwargs["recorder"] = Recorder(Journal())
        if passthrough_collections:
            kwargs["passthrough_collections"] = passthrough_collections
        if usage is not None:
            kwargs["usage"] = usage  # a usage.ledger.Ledger (limits, prices, admin keys, a Redis)
        # gemini-3-pro-preview declares tools as parametersJsonSchema here, every other model as `parameters`.
        upstream = wrap(self.upstream) if wrap else self.upstream
        # Codex's and Claude Code's model names, served by Gemini models (--model-alias).
        self.app = make_app(self.store, upstream, aliases={"gpt-5.5": "gemini-3-flash-preview",
                                                           "claude-opus-5": "gemini-3-flash-preview"},
                            schema_modes=[("gemini-3-pro*", "json")], **kwargs)
        self.runner, self.url = self.lt.run(self._start(self.app))

    @staticmethod
    async def _start(app: web.Application) -> tuple[web.AppRunner, str]:
        runner, site = await start_site(app, "127.0.0.1", 0, app[CONTEXT].limits)
        return runner, f"http://127.0.0.1:{site.bound_port}"

    @property
    def accepted(self) -> int:
        """How many requests the mock accepted so far (RECEIVED keeps only the latest)."""
        return self.mock_app[ACCEPTED][0]

    @property
    def seen(self) -> list[str]:
        """Every request that reached the mock at all ("METHOD raw-path"), oldest first."""
        return list(self.mock_app[SEEN])

    @property
    def received(self) -> list[dict[str, Any]]:
        """Requests the mock accepted, oldest first."""
        return list(self.mock_app[RECEIVED])

    def last_body(self) -> dict[str, Any]:
        return self.received[-1]["body"]

    def exchange(self, back: int = 0) -> dict[str, Any]:
        """The journal's document of the latest exchange (`back`: that many before it)."""
        def get(path: str) -> Any:
            with urllib.request.urlopen(self.url + path, timeout=10) as r:
                return json.loads(r.read())
        row = get("/inspect/api/exchanges")["exchanges"][back]
        return get(f"/inspect/api/exchanges/{row['id']}")

    def close(self) -> None:
        self.lt.run(self.runner.cleanup())
        self.lt.run(self.mock_runner.cleanup())
        self.lt.stop()


def post_json(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST a JSON body with a Gemini key header, as a plain HTTP client would: the status and the
    JSON answer, an error's too."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json",
                                                                               "x-goog-api-key": "k"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
