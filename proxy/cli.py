"""`gemini-tool-proxy`: run the front-end (`serve`) or the mock Gemini (`mock`)."""

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from aiohttp import web

from proxy.mock.server import start_mock
from proxy.server import make_app
from proxy.store import MemoryStore
from proxy.upstream import DEFAULT_BASE_URL, DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, GeminiUpstream

DEFAULT_PORT = 8741
DEFAULT_MOCK_PORT = 8742
log = logging.getLogger("gemini-tool-proxy")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gemini-tool-proxy", description=__doc__)
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    sub = p.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the OpenAI Responses / Gemini-native front-end")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument("--upstream", default=DEFAULT_BASE_URL,
                       help="Gemini base URL, or 'mock' for the built-in mock Gemini (default: Google's API)")
    serve.add_argument("--connect-timeout", type=float, default=DEFAULT_CONNECT_TIMEOUT,
                       help="seconds to connect upstream")
    serve.add_argument("--read-timeout", type=float, default=DEFAULT_READ_TIMEOUT,
                       help="seconds to wait between bytes from upstream")

    mock = sub.add_parser("mock", help="run the mock Gemini API on its own")
    mock.add_argument("--host", default="127.0.0.1")
    mock.add_argument("--port", type=int, default=DEFAULT_MOCK_PORT, help=f"port (default {DEFAULT_MOCK_PORT})")
    return p


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def _start_site(app: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as e:
        await runner.cleanup()
        raise SystemExit(f"error: cannot listen on {host}:{port}: {e.strerror or e}") from None
    return runner


async def _serve(args: argparse.Namespace) -> None:
    runners = []
    base = args.upstream
    if base == "mock":
        mock_runner, base, _ = await start_mock()
        runners.append(mock_runner)
        log.info("built-in mock Gemini at %s", base)
    upstream = GeminiUpstream(base, connect_timeout=args.connect_timeout, read_timeout=args.read_timeout)
    runner = await _start_site(make_app(MemoryStore(), upstream), args.host, args.port)
    runners.append(runner)
    log.info("gemini-tool-proxy listening on http://%s:%d (upstream %s)", args.host, args.port, base)
    print(f"gemini-tool-proxy ready on http://{args.host}:{args.port}", flush=True)
    try:
        await _until_stopped()
    finally:
        for r in reversed(runners):
            await r.cleanup()


async def _mock(args: argparse.Namespace) -> None:
    runner, base, _ = await start_mock(args.host, args.port)
    print(f"mock Gemini ready on {base}", flush=True)
    try:
        await _until_stopped()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args) if args.command == "serve" else _mock(args))


if __name__ == "__main__":
    main()
