"""`gemini-tool-proxy inspect`: the journal of a running proxy as readable text, for servers without
a browser. It reads the inspector's API (`/inspect/api/...`) with the client key, like the page."""

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from typing import Any, TextIO

KEY_ENV = "GTP_INSPECT_KEY"
# What the upstream spoke (the document's `wire`), as the titles of its two bodies say it.
WIRES = {"generate_content": "Gemini", "interactions": "Gemini Interactions",
         "chat_completions": "upstream (Chat Completions)"}


def _get(url: str, key: str | None) -> Any:
    req = urllib.request.Request(url, headers={"authorization": f"Bearer {key}"} if key else {})
    with urllib.request.urlopen(req, timeout=10) as r:  # noqa: S310 - the operator's own proxy
        return json.loads(r.read())


def _line(s: dict[str, Any]) -> str:
    when = datetime.fromtimestamp(s["time"], UTC).strftime("%H:%M:%S")
    calls = ", ".join(c.get("name") or "?" for c in s.get("calls") or []) or "-"
    tokens = f"{s.get('input_tokens')}/{s.get('output_tokens')}" if s.get("input_tokens") is not None else "-"
    err = f"  ! {s['error']}" if s.get("error") else ""
    kind = s.get("kind")  # as the page says it (static/inspect.js, where())
    where = "mitm · gemini" if kind == "mitm" else f"{s['protocol']} · background" if kind == "background" \
        else s["protocol"]
    return (f"{when} {s['id']} {s['status']} {s['method']} {s['path']} [{where}] "
            f"{s.get('client_model') or '-'} -> {s.get('gemini_model') or '-'} calls: {calls} "
            f"proxy {s['proxy_ms']} ms, upstream {s['upstream_ms']} ms, tokens {tokens}, "
            f"{s.get('notes', 0)} decision(s){err}")


def _body(value: Any, limit: int) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def _one(doc: dict[str, Any], out: TextIO, limit: int) -> None:
    out.write(_line(doc) + "\n")
    out.write(f"session: {doc.get('session') or '-'}  request id: {doc.get('request_id') or '-'}\n")
    for i, up in enumerate(doc.get("upstream") or [], 1):
        attempts = "; ".join(f"{a.get('status')} key {a.get('key') or '-'}" + (f" ({str(a['error'])[:100]})"
                                                                             if a.get("error") else "")
                             for a in up.get("attempts") or [])
        out.write(f"upstream call {i}: {up['model']} first byte {up.get('first_byte_ms')} ms, last byte "
                  f"{up.get('last_byte_ms')} ms; attempts: {attempts or '-'}\n")
    out.write("decisions:\n")
    for n in doc.get("decisions") or []:
        out.write(f"  - [{n['kind']}] {n['message']}\n")
    if not doc.get("decisions"):
        out.write("  (none: the request went as sent)\n")
    ups = doc.get("upstream") or [{}]
    wire = WIRES.get(ups[-1].get("wire"), "Gemini")
    for title, value in (("client request", (doc.get("client_request") or {}).get("body")),
                         (f"{wire} request", ups[-1].get("request")),
                         (f"{wire} answer", ups[-1].get("answer") or ups[-1].get("chunks")),
                         ("client answer", (doc.get("client_answer") or {}).get("body"))):
        out.write(f"--- {title} ---\n{_body(value, limit)}\n")


def run(url: str, key: str | None, last: int, exchange_id: str | None, session: str | None, status: str | None,
        limit: int, out: TextIO = sys.stdout) -> int:
    key = key or os.environ.get(KEY_ENV)
    base = url.rstrip("/") + "/inspect/api/exchanges"
    try:  # only the reading: a closed stdout (BrokenPipeError, an OSError) is the CLI's (cli.main), not this
        doc, rows = None, None
        if exchange_id:
            doc = _get(f"{base}/{urllib.parse.quote(exchange_id)}", key)
        else:
            query = urllib.parse.urlencode({k: v for k, v in (("limit", str(last)), ("session", session),
                                                              ("status", status)) if v})
            rows = _get(f"{base}?{query}", key)["exchanges"]
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", "replace")[:300]
        print(f"error: {url} answered {e.code}: {detail}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as e:
        print(f"error: cannot reach the proxy at {url}: {getattr(e, 'reason', e)}", file=sys.stderr)
        return 1
    if rows is None:
        _one(doc or {}, out, limit)
        return 0
    for s in reversed(rows):
        out.write(_line(s) + "\n")
    if not rows:
        out.write("(no exchanges in the journal)\n")
    return 0
