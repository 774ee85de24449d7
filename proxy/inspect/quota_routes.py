"""`GET /inspect/api/quota`: Antigravity's and Code Assist's quota buckets, as the intercepted apps'
own account calls last reported them (quota_board.py). The quota is the intercepted account's, which
no client key owns: under client keys it is refused, not shown to every tenant."""

from aiohttp import web

from proxy.errors import ProxyError
from proxy.quota_board import BOARD
from proxy.server.context import CONTEXT


async def quota(request: web.Request) -> web.Response:
    if request.app[CONTEXT].keys:
        raise ProxyError("The intercepted account's quota belongs to no client key: it is shown only without client "
                         "keys (the single-user proxy).", status=403, code="quota_not_scoped")
    return web.json_response({"buckets": BOARD.snapshot()}, headers={"cache-control": "no-store"})


def add_routes(app: web.Application) -> None:
    app.router.add_get("/inspect/api/quota", quota)
