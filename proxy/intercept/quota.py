"""`QuotaWatch`: the app's quota calls to Cloud Code (Antigravity's `retrieveUserQuotaSummary`,
`fetchAvailableModels`, Code Assist's `retrieveUserQuota`) pass untouched; their answers are read on
the way into the quota board (quota_board.py: `/metrics`, `/inspect`; not under client keys, the
account being no key's), and the flow is an exchange of the journal with a `quota` decision naming
what was left."""

import logging
from typing import TYPE_CHECKING

import orjson
from mitmproxy import http

from proxy import quota_board
from proxy.intercept.flow_selection import destination
from proxy.intercept.targets import Target
from proxy.journal import exchange
from proxy.pattern_rules import matches

if TYPE_CHECKING:
    from proxy.intercept.options import Options

log = logging.getLogger(__name__)
QUOTA = "gtp_quota"  # the flow's kind of quota call, for the journal (journal_addon.py)


def account_of(body: bytes | None) -> str:
    """The Cloud Code project the call names (the account's), or "-"."""
    try:
        data = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return "-"
    project = data.get("project") if isinstance(data, dict) else None
    return project[:64] if isinstance(project, str) and project else "-"


def quota_target(kind: str) -> Target:
    return Target("cloudcode", None, {"summary": "retrieveUserQuotaSummary", "models": "fetchAvailableModels",
                                      "quota": "retrieveUserQuota"}[kind])


class QuotaWatch:
    def __init__(self, options: "Options") -> None:
        self.options = options

    def request(self, flow: http.HTTPFlow) -> None:
        kind = quota_board.PATHS.get(flow.request.path.split("?", 1)[0])
        if kind is None or flow.request.method != "POST" or flow.response is not None:
            return
        host = destination(flow)
        if host is not None and matches(host, self.options.flow.intercept_hosts):
            flow.metadata[QUOTA] = kind

    def response(self, flow: http.HTTPFlow) -> None:
        kind = flow.metadata.get(QUOTA)
        if kind is None or flow.response is None or flow.response.status_code != 200:
            return
        try:
            answer = orjson.loads(flow.response.get_content(strict=False) or b"null")
        except orjson.JSONDecodeError:
            log.warning("unreadable %s answer: its quota is not shown", flow.request.path)
            return
        buckets = quota_board.buckets_of(kind, answer, account_of(flow.request.raw_content))
        # Under client keys the account is no key's: its quota stays out of /metrics (every key's to read)
        # and /inspect/api/quota; the flow's own journal exchange still says what it reported.
        kept = buckets if self.options.keys else quota_board.BOARD.update(buckets)
        if kept:
            exchange.note("quota", f"{flow.request.path.removeprefix('/v1internal:')}: {quota_board.describe(kept)}",
                          buckets=[{"bucket": b.bucket, "remaining": b.remaining, "reset": b.reset} for b in kept])
