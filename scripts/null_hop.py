"""The floor of any HTTP proxy: an aiohttp server that forwards each POST to the mock as it is
(no parsing). `python scripts/null_hop.py PORT UPSTREAM_URL`."""

import sys

import aiohttp
from aiohttp import web


async def make(upstream: str) -> web.Application:
    app = web.Application(client_max_size=64 << 20)
    session: list[aiohttp.ClientSession] = []

    async def forward(request: web.Request) -> web.Response:
        if not session:
            session.append(aiohttp.ClientSession())
        async with session[0].post(upstream + request.path_qs, data=await request.read(),
                                   headers={"content-type": "application/json",
                                            "x-goog-api-key": request.headers.get("x-goog-api-key", "")}) as r:
            return web.Response(body=await r.read(), status=r.status, content_type="application/json")

    app.router.add_post("/{tail:.*}", forward)
    return app


if __name__ == "__main__":
    web.run_app(make(sys.argv[2]), host="127.0.0.1", port=int(sys.argv[1]), print=lambda *_: print("ready", flush=True))
