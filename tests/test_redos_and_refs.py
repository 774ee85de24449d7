"""Issue 8 item 4: a client's schema cannot stall the event loop or make the proxy fetch a URL."""

import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import openai
import pytest

from proxy.schema.argument_validator import compile_pattern, validator_for
from proxy.schema.normalize_arguments import normalize_arguments
from tests.harness import Stack

EVIL = "^(a+)+$"
LONG = "a" * 48 + "!"  # 2^48 backtracking steps in Python's re: it would never finish


def test_backtracking_patterns_match_in_linear_time() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": EVIL}},
              "patternProperties": {"^(x+)+$": {"type": "string"}}, "additionalProperties": False}
    _, errors = normalize_arguments({"q": LONG, "x" * 40 + "!": "v"}, schema)
    assert any("does not match" in e for e in errors)
    assert any("Additional properties" in e for e in errors)
    _, errors = normalize_arguments({"q": "aaaa", "xxxx": "v"}, schema)
    assert errors == []


def test_patterns_re2_cannot_run_are_skipped_not_backtracked() -> None:
    assert compile_pattern(r"^(?=a)(a+)+\1$") is None  # look-ahead and back-reference: not RE2
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": r"^(?=a)(a+)+\1$"}}}
    assert normalize_arguments({"q": LONG}, schema) == ({"q": LONG}, [])


def test_re2_errors_go_through_the_log_only() -> None:
    """Issue 57 item 10: RE2 wrote its own error line to stderr (`re2.cc:242] Error parsing ...`) for
    every pattern it could not compile, outside the log's format (JSON here) and its rate limit. Now
    each is one warning of the proxy's log, limited like any other (log_limits.BURST per window)."""
    import json
    import subprocess
    import sys

    code = ("from proxy import log_limits; from proxy.logs import setup_logging; setup_logging('INFO', 'json'); "
            "log_limits.install(); from proxy.schema.argument_validator import compile_pattern; "
            "[compile_pattern(f'^(?=a{i})x$') for i in range(20)]")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stderr
    lines = err.splitlines()
    assert lines and all(json.loads(line)["level"] == "WARNING" for line in lines), err[:500]
    assert len(lines) <= 5, "rate-limited as every repeated log line is"


def test_validators_are_built_once_per_schema() -> None:
    a = {"type": "object", "properties": {"n": {"type": "integer"}}}
    b = {"properties": {"n": {"type": "integer"}}, "type": "object"}  # equal, another object
    assert validator_for(a) is validator_for(b)


class _Counter(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's spelling
        _Counter.hits.append(self.path)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"type": "integer"}')

    def log_message(self, *args: object) -> None:
        pass


def test_remote_refs_are_never_retrieved() -> None:
    server = HTTPServer(("127.0.0.1", 0), _Counter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/schema.json"
        urllib.request.urlopen(url).read()  # the server answers when asked...
        assert _Counter.hits == ["/schema.json"]
        for schema in ({"type": "object", "properties": {"n": {"$ref": url}}},
                       {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                        "properties": {"n": {"$ref": url + "#/x"}}},
                       {"type": "object", "properties": {"n": {"$ref": "file:///etc/passwd"}}}):
            args, errors = normalize_arguments({"n": "3"}, schema)
            assert args == {"n": "3"} and errors == []  # unresolvable: not checked, never fetched
        assert _Counter.hits == ["/schema.json"]  # ...but the validator never asked
    finally:
        server.shutdown()


def test_redos_schema_through_the_front_end_while_another_client_is_served() -> None:
    stack = Stack()
    try:
        c = openai.OpenAI(base_url=stack.url + "/v1", api_key="k", _strict_response_validation=True, timeout=60)
        tool = {"type": "function", "name": "probe", "parameters": {
            "type": "object", "properties": {"text": {"type": "string", "pattern": EVIL}}, "required": ["text"]}}
        served: list[float] = []

        def other_client() -> None:
            for _ in range(20):
                with urllib.request.urlopen(stack.url + "/healthz", timeout=30) as r:
                    assert r.status == 200
                served.append(time.monotonic())

        t = threading.Thread(target=other_client)
        t.start()
        r = c.responses.create(model="gemini-2.5-flash", input=f"call probe text={LONG}", tools=[tool])
        t.join(60)
        call = next(o for o in r.output if o.type == "function_call")
        assert call.name == "probe" and LONG in call.arguments  # the call reached the client, in full
        assert len(served) == 20
    finally:
        stack.close()


@pytest.mark.parametrize("pattern", ["(", "[z-a]", "\\"])
def test_broken_patterns_never_break_a_call(pattern: str) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}}
    assert normalize_arguments({"q": "x"}, schema) == ({"q": "x"}, [])
