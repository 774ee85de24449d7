"""`gemini-tool-proxy usage` as an operator runs it: a real subprocess reading a real `serve --upstream
mock` subprocess with two client keys (one of them --admin-key), after answers given to the openai SDK.
The table's numbers are the /v1/usage answer's; a bad --from is one line and exit 2; a key that is not
an admin's sees only its own row."""

import json
import os
import subprocess
import sys
import urllib.request

import openai
import pytest

from proxy.server.auth import scope_of
from proxy.usage.limits import key_id as key_id_of
from tests.servers import Process, free_port

ADMIN, BOB = "admin-key-0123456789", "bob-key-0123456789ab"
MODEL = "gemini-2.5-flash"


def key_id(key: str) -> str:
    return key_id_of(scope_of(key))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("usage-cli")
    port = free_port()
    proc = Process(tmp, "proxy", [sys.executable, "-m", "proxy", "serve", "--port", str(port), "--upstream", "mock",
                                  "--carrier-keys-file", str(tmp / "carrier-keys"), "--api-key", ADMIN,
                                  "--api-key", BOB, "--admin-key", ADMIN], "ready",
                   env={"GEMINI_API_KEY": "test-key", "GTP_API_KEYS": ""})
    url = f"http://127.0.0.1:{port}"
    try:
        for key, n in ((ADMIN, 2), (BOB, 1)):
            client = openai.OpenAI(base_url=url + "/v1", api_key=key)
            for _ in range(n):
                client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hello"}])
        yield url
    finally:
        proc.stop()


def usage(url: str, *args: str, key: str | None = ADMIN) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("GTP_ADMIN_KEY", "GTP_INSPECT_KEY", "GTP_API_KEY")}
    if key:
        env["GTP_ADMIN_KEY"] = key
    return subprocess.run([sys.executable, "-m", "proxy", "usage", "--url", url, *args], capture_output=True,
                          text=True, timeout=60, env=env)


def answer(url: str, key: str, query: str = "") -> dict:
    req = urllib.request.Request(url + "/v1/usage" + query, headers={"authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def cells(line: str) -> list[str]:
    return line.split()


def test_the_admins_table_has_every_keys_numbers(served):
    doc = answer(served, ADMIN)
    run = usage(served)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"usage {doc['from']} .. {doc['to']} (UTC days)")
    assert "genai-prices 0.2.3 (bundled data)" in lines[0]
    assert cells(lines[2]) == ["key", "model", "day", "requests", "input", "cached", "thinking", "output", "tool",
                               "calls", "errors", "cost"]
    rows = {cells(line)[0]: cells(line) for line in lines[4:] if line.startswith("k-")}
    assert set(rows) == {key_id(ADMIN), key_id(BOB)}
    by_key = {r["key"]: r for r in doc["data"]}
    for kid, row in rows.items():
        want = by_key[kid]
        assert row[1] == MODEL and row[2] == want["day"]
        assert [int(c) for c in row[3:10]] == [want[f] for f in ("requests", "input_tokens", "cached_tokens",
                                                                 "thinking_tokens", "output_tokens", "tool_calls",
                                                                 "errors")]
        assert float(row[10].lstrip("$")) == pytest.approx(want["cost_usd"], rel=1e-3)
    assert rows[key_id(ADMIN)][3] == "2" and rows[key_id(BOB)][3] == "1"
    total = cells(lines[-1])
    assert total[0] == "total" and int(total[1]) == doc["totals"]["requests"] == 3
    assert int(total[2]) == doc["totals"]["input_tokens"] > 0 and int(total[5]) == doc["totals"]["output_tokens"] > 0
    assert float(total[-1].lstrip("$")) == pytest.approx(doc["totals"]["cost_usd"], rel=1e-3) and total[-1] != "$0"
    assert ADMIN not in run.stdout and BOB not in run.stdout


def test_grouped_by_model_one_row_and_json_is_the_answer(served):
    run = usage(served, "--group-by", "model")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert cells(lines[2])[0] == "model" and [line for line in lines if line.startswith(MODEL)] == [lines[4]]
    assert cells(lines[4])[1] == "3"
    raw = usage(served, "--json", "--group-by", "model,day")
    assert raw.returncode == 0, raw.stderr
    doc = json.loads(raw.stdout)
    assert doc["group_by"] == ["model", "day"] and doc["totals"] == answer(served, ADMIN)["totals"]


def test_a_key_that_is_not_an_admin_sees_only_itself(served):
    run = usage(served, "--key", BOB, key=None)
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("k-")]
    assert len(rows) == 1 and cells(rows[0])[0] == key_id(BOB) and cells(rows[0])[3] == "1"
    assert key_id(ADMIN) not in run.stdout
    assert cells(run.stdout.splitlines()[-1])[1] == "1"


@pytest.mark.parametrize(("args", "says"), [
    (("--from", "2026-13-01"), "--from: '2026-13-01' is not a UTC day as YYYY-MM-DD"),
    (("--group-by", "week"), "--group-by: 'week' is not one of key, model, day"),
    (("--from", "2026-12-05", "--to", "2026-12-01"), "answered 400: Invalid 'from': 2026-12-05 is after 'to'"),
])
def test_bad_input_is_one_line_and_exit_2(served, args, says):
    run = usage(served, *args)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and says in run.stderr, run.stderr


def test_no_proxy_there_is_one_line_and_exit_1(tmp_path):
    run = usage(f"http://127.0.0.1:{free_port()}")
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1 and "cannot read" in run.stderr
