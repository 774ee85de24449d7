"""A stand-in Gemini that answers every generateContent with one whole answer of about `--mb`
megabytes of text parts (for tests/test_large_answer.py); prints "ready on http://HOST:PORT"."""

import argparse
import asyncio
import json

from aiohttp import web


def answer(mb: int) -> bytes:
    part = {"text": ("lorem ipsum dolor sit amet " * 40)[:1000]}
    return json.dumps({"candidates": [{"content": {"role": "model", "parts": [part] * (mb * 1000)},
                                       "finishReason": "STOP", "index": 0}],
                       "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
                       "modelVersion": "gemini-2.5-flash"}).encode()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=int, default=100)
    body = answer(p.parse_args().mb)

    async def generate(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1beta/models/{target}", generate)
    runner = web.AppRunner(app)

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(f"ready on http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", flush=True)  # type: ignore
        await asyncio.Event().wait()

    asyncio.run(start())


if __name__ == "__main__":
    main()
