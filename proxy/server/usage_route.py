"""`GET /v1/usage` (and `/inspect/api/usage`, the inspector's Usage view with its sign-in cookie):
usage and cost per key id x model x UTC day, as the ledger counted them (usage/ledger.py).

`from`, `to`: UTC days (YYYY-MM-DD, both included; default the last 30 days), at most 400 days.
`group_by`: key, model, day, comma separated or repeated (default all three); other columns are
summed away. `key`: one key id only. Under client keys a key reads its own usage; an admin key
(--admin-key) reads every key's. Without client keys (loopback) there is nobody to keep apart.
"""

from datetime import UTC, date, datetime, timedelta
from typing import Any

from aiohttp import web

from proxy.errors import ProxyError
from proxy.server.auth import SCOPE
from proxy.server.context import CONTEXT, Context
from proxy.usage.limits import key_id
from proxy.usage.meter import FIELDS, NANO

GROUPS = ("key", "model", "day")
MAX_DAYS = 400
# The counters' fields as the answer names them.
NAMES = {"requests": "requests", "input": "input_tokens", "cached": "cached_tokens", "thinking": "thinking_tokens",
         "output": "output_tokens", "tool_calls": "tool_calls", "errors": "errors", "unpriced": "unpriced_requests"}


def _day(request: web.Request, name: str, default: date) -> date:
    text = request.query.get(name)
    if text is None:
        return default
    try:
        return date.fromisoformat(text) if len(text) == 10 else _bad(name, text)
    except ValueError:
        return _bad(name, text)


def _bad(name: str, text: str) -> Any:
    raise ProxyError(f"Invalid '{name}': {text[:40]!r} is not a UTC day as YYYY-MM-DD.", param=name,
                     code="invalid_value")


def _groups(request: web.Request) -> list[str]:
    asked = [g.strip() for value in request.query.getall("group_by", []) for g in value.split(",") if g.strip()]
    for g in asked:
        if g not in GROUPS:
            raise ProxyError(f"Invalid 'group_by': {g[:40]!r} is not one of {', '.join(GROUPS)}.", param="group_by",
                             code="invalid_value")
    return [g for g in GROUPS if g in asked] if asked else list(GROUPS)


def _row(counts: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {NAMES[f]: counts.get(f, 0) for f in FIELDS if f != "cost_nusd"}
    out["cost_usd"] = float(counts.get("cost_nusd", 0) / NANO)
    return out


async def usage(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    today = datetime.now(UTC).date()
    end = _day(request, "to", today)
    start = _day(request, "from", end - timedelta(days=29))
    if start > end:
        raise ProxyError(f"Invalid 'from': {start} is after 'to' ({end}).", param="from", code="invalid_value")
    if (end - start).days >= MAX_DAYS:
        raise ProxyError(f"Invalid 'from': at most {MAX_DAYS} days can be read at once.", param="from",
                         code="invalid_value")
    groups = _groups(request)
    own = request.get(SCOPE)
    admin = not ctx.keys or (own is not None and key_id(own) in ctx.usage.admins)
    asked = request.query.get("key")
    if asked is not None and not admin and asked != key_id(own or ""):
        raise ProxyError("Only an admin key (--admin-key) reads another key's usage.", status=403, param="key",
                         code="permission_denied", type="permission_error")
    key = asked if asked is not None else None if admin else key_id(own or "")
    await ctx.usage.flush()  # the answers already given are counted before they are read
    rows = await ctx.usage.rows(start.isoformat(), end.isoformat(), key)
    sums: dict[tuple[str, ...], dict[str, int]] = {}
    totals: dict[str, int] = dict.fromkeys(FIELDS, 0)
    for row in rows:
        group = sums.setdefault(tuple(row[g] for g in groups), dict.fromkeys(FIELDS, 0))
        for f in FIELDS:
            group[f] += row.get(f, 0)
            totals[f] += row.get(f, 0)
    data = [{**dict(zip(groups, k, strict=True)), **_row(v)} for k, v in sorted(sums.items())]
    return web.json_response({"object": "usage", "from": start.isoformat(), "to": end.isoformat(),
                              "group_by": groups, "currency": "USD", "price_source": ctx.usage.prices.source,
                              "data": data, "totals": _row(totals)}, headers={"cache-control": "no-store"})


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/usage", usage)
    app.router.add_get("/inspect/api/usage", usage)
