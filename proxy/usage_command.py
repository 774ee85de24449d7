"""`gemini-tool-proxy usage`: a running proxy's usage and cost (GET /v1/usage) as a table in the
terminal. It reads with a client key, like `gemini-tool-proxy inspect`: an admin key (--admin-key)
sees every key's rows, any other key only its own."""

import json
import math
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import date
from typing import Any, TextIO

# The key read with, when --key is not given: an admin's first, then the inspector's, then a client's.
KEY_ENVS = ("GTP_ADMIN_KEY", "GTP_INSPECT_KEY", "GTP_API_KEY")
GROUPS = ("key", "model", "day")
# The answer's counters, as the table's columns name them.
COLUMNS = (("requests", "requests"), ("input_tokens", "input"), ("cached_tokens", "cached"),
           ("thinking_tokens", "thinking"), ("output_tokens", "output"), ("tool_calls", "tool calls"),
           ("errors", "errors"))


class BadInput(ValueError):
    """What the operator asked cannot be read: one line, exit 2."""


def groups_of(values: list[str] | None) -> list[str]:
    """--group-by, repeatable and comma separated, in the server's order; the server's default is all."""
    asked = [g.strip() for v in values or [] for g in v.split(",") if g.strip()]
    for g in asked:
        if g not in GROUPS:
            raise BadInput(f"--group-by: {g!r} is not one of {', '.join(GROUPS)}")
    return [g for g in GROUPS if g in asked]


def day_of(name: str, text: str | None) -> str | None:
    if text is None:
        return None
    try:
        if len(text) == 10:
            return date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise BadInput(f"--{name}: {text[:40]!r} is not a UTC day as YYYY-MM-DD")


def money(value: float) -> str:
    """USD with 4 significant digits (at least cents), trailing zeros dropped: $0.000057, $12.35."""
    if value == 0:
        return "$0"
    places = max(2, 3 - math.floor(math.log10(abs(value))))
    text = f"{value:.{places}f}"
    if "." in text:
        whole, frac = text.split(".")
        frac = frac.rstrip("0").ljust(2, "0")
        text = f"{whole}.{frac}"
    return "$" + text


def table(doc: dict[str, Any]) -> str:
    groups = list(doc.get("group_by") or [])
    head = [*groups, *(title for _, title in COLUMNS), "cost"]
    body = [[str(r.get(g, "")) for g in groups] + [str(r.get(f, 0)) for f, _ in COLUMNS] + [money(r["cost_usd"])]
            for r in doc.get("data") or []]
    totals = doc["totals"]
    foot = (["total"] + [""] * (len(groups) - 1) if groups else []) + [str(totals.get(f, 0)) for f, _ in COLUMNS] \
        + [money(totals["cost_usd"])]
    if not groups:  # everything summed into one row: the total is that row
        body = []
        head = ["", *head]
        foot = ["total", *foot]
    widths = [max(len(row[i]) for row in (head, *body, foot)) for i in range(len(head))]
    first = len(groups) or 1  # the group columns are text (left), the counters numbers (right)

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < first else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                  strict=True))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [f"usage {doc['from']} .. {doc['to']} (UTC days), by {', '.join(groups) or 'nothing'}; cost in "
           f"{doc.get('currency', 'USD')} from {doc.get('price_source', '?')}", "", line(head), rule]
    out += [line(r) for r in body]
    if not body and groups:
        out.append("(no usage in this range)")
    out += [rule, line(foot)]
    if totals.get("unpriced_requests"):
        out.append(f"{totals['unpriced_requests']} request(s) of a model without a price are not in the cost")
    return "\n".join(out) + "\n"


def _get(url: str, key: str | None) -> Any:
    req = urllib.request.Request(url, headers={"authorization": f"Bearer {key}"} if key else {})
    with urllib.request.urlopen(req, timeout=10) as r:  # noqa: S310 - the operator's own proxy
        return json.loads(r.read())


def _message(body: str) -> str:
    try:
        error = json.loads(body).get("error")
        text = error.get("message") if isinstance(error, dict) else error
        if text:
            return " ".join(str(text).split())
    except (ValueError, AttributeError):
        pass
    return " ".join(body.split())[:300]


def run(url: str, key: str | None, start: str | None, end: str | None, group_by: list[str] | None, raw: bool,
        out: TextIO = sys.stdout) -> int:
    try:
        query = [("from", day_of("from", start)), ("to", day_of("to", end))]
        groups = groups_of(group_by)
    except BadInput as e:
        print(f"gemini-tool-proxy usage: error: {e}", file=sys.stderr)
        return 2
    if groups:
        query.append(("group_by", ",".join(groups)))
    key = key or next((os.environ[k] for k in KEY_ENVS if os.environ.get(k)), None)
    address = url.rstrip("/") + "/v1/usage?" + urllib.parse.urlencode([(k, v) for k, v in query if v])
    try:
        doc = _get(address, key)
    except urllib.error.HTTPError as e:
        detail = _message(e.read().decode("utf-8", "replace"))
        print(f"gemini-tool-proxy usage: error: {url} answered {e.code}: {detail}", file=sys.stderr)
        return 2 if e.code == 400 else 1
    except (urllib.error.URLError, OSError, ValueError) as e:
        print(f"gemini-tool-proxy usage: error: cannot read {url}: {getattr(e, 'reason', e)}", file=sys.stderr)
        return 1
    out.write(json.dumps(doc, indent=2) + "\n" if raw else table(doc))
    return 0
