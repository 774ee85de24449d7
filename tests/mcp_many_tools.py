"""A small MCP server over stdio (JSON-RPC 2.0, one message a line, protocol 2025-06-18) holding many
tools, for the real clients' deferred-tool tests: Claude Code and Codex defer MCP tools and find them
through tool search. `python tests/mcp_many_tools.py N` serves N tools named tool_000...; each
answers a call with a line naming it and its arguments. Every call is appended to $MCP_CALLS_LOG
(one JSON line) so a test can see what the client really ran.

Kept to the handful of methods the clients use (initialize, tools/list, tools/call, ping); anything
else is JSON-RPC's -32601.
"""

import json
import os
import sys

TOPICS = ["invoice", "calendar", "weather", "ticket", "deploy", "backup", "metrics", "payroll", "inventory",
          "shipping", "email", "contract"]


def tools(n: int) -> list[dict]:
    out = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        out.append({"name": f"tool_{i:03d}", "description": f"Operation {i} of the {topic} service: reads or "
                    f"changes {topic} records for the account given, and returns the {topic} record as text.",
                    "inputSchema": {"type": "object", "properties": {
                        "account": {"type": "string", "description": f"The account whose {topic} records to use"},
                        "note": {"type": "string", "description": "A free-form note kept with the change"}},
                        "required": ["account"]}})
    return out


def main() -> None:
    listed = tools(int(sys.argv[1]) if len(sys.argv) > 1 else 120)
    log = os.environ.get("MCP_CALLS_LOG")
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:  # a notification (notifications/initialized...)
            continue
        if method == "initialize":
            result = {"protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-06-18"),
                      "capabilities": {"tools": {"listChanged": False}},
                      "serverInfo": {"name": "many-tools", "version": "1.0.0"}}
        elif method == "tools/list":
            result = {"tools": listed}
        elif method == "tools/call":
            params = msg.get("params") or {}
            if log:
                with open(log, "a") as f:
                    f.write(json.dumps(params) + "\n")
            text = f"{params.get('name')} ran with {json.dumps(params.get('arguments') or {}, sort_keys=True)}"
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        elif method == "ping":
            result = {}
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {
                "code": -32601, "message": f"Method not found: {method}"}}) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
