"""Tails under concurrency (issue 62 item 3): added latency p50 and p99 at concurrency 1, 4, 16 and
64, the proxy against the null aiohttp hop (scripts/null_hop.py) in the same run, for small and large
Responses, Chat and Anthropic Messages requests, and mitmdump with the addon against plain mitmdump
(native generateContent over TLS, bench_mitm.py's processes); LiteLLM's proxy too where bench.sh
installed it (BENCH_LITELLM_BIN).

How: at each concurrency c, c workers each send rounds of one request to every target (the proxy, the
null hop, the mock called directly with the very body the proxy sent it: the baseline), the order of
the targets rotated from round to round, so every target sees the same machine, the same mock load
and the same drift. Added p50/p99 = that percentile of a target's latencies minus the same percentile
of the direct calls' latencies in the same rotation (BerriAI/ai-gateway-bench's "added p99"). At c=1
the paired median (proxy - hop, request by request, as bench.py's "beyond the hop") is printed too.

'Large' is what an agent sends: a 50-message stateless history made of tool calls and their results
(function_call/function_call_output, tool_calls/role tool, tool_use/tool_result), the client's own
system prompt, and 20 real tool schemas (tests/fixtures/tool-schemas, or ../shared/fixtures/tool-schemas:
Codex's for Responses and Chat, Claude Code's for Anthropic, Gemini CLI's for the MITM's native body).
`--factors` measures, at c=1, which of those makes the difference against bench.py's old 'large'
(lorem-ipsum text, a synthetic tool repeated 20 times).

    python scripts/bench_tails.py [--write] [--factors] [--only small|large] [--kinds responses,chat,...]

BENCH_TAILS_N: rounds per concurrency (600), BENCH_TAILS_CONC: the concurrencies ("1,4,16,64"),
BENCH_TAILS_SETTLE: seconds between two requests of a round at c=1 (0.003).
"""

import argparse
import asyncio
import base64
import json
import os
import random
import re
import shutil
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.bench import KEY, LITELLM_KEY, TURN, cpu_seconds, last_sent, numbered  # noqa: E402
from scripts.doc_section import machine, put_section  # noqa: E402
from tests.servers import Process, free_port  # noqa: E402

N = int(os.environ.get("BENCH_TAILS_N", "600"))
FACTOR_N = int(os.environ.get("BENCH_TAILS_FACTOR_N", "400"))
VERSUS_WARM = 100  # rounds each versus target serves before it is measured
SETTLE = float(os.environ.get("BENCH_TAILS_SETTLE", "0.003"))  # seconds between two requests of a round at c=1
CONC = tuple(int(c) for c in os.environ.get("BENCH_TAILS_CONC", "1,4,16,64").split(","))
SCHEMAS = next((p for p in (ROOT / "tests" / "fixtures" / "tool-schemas",  # main keeps a copy there
                            *(up / "shared" / "fixtures" / "tool-schemas" for up in ROOT.parents[:2]),
                            Path("/work/shared/fixtures/tool-schemas")) if p.is_dir()), None)
MODEL = "gemini-2.5-flash"
DOC = ROOT / "docs" / "benchmarks.md"
PLOT = ROOT / "docs" / "benchmarks-tails.png"
START, END = "<!-- bench_tails: start -->", "<!-- bench_tails: end -->"
PATHS = {"responses": "/v1/responses", "chat": "/v1/chat/completions", "anthropic": "/v1/messages",
         "native": f"/v1beta/models/{MODEL}:generateContent"}


# -- bodies ---------------------------------------------------------------------------------------

def real_tools(client: str, n: int = 20) -> list[dict]:
    """`n` tool definitions as the client sends them (name, description, JSON Schema), the newest
    version of each name first. Codex: its function tools (the MCP ones named server/tool as Codex
    names them), without the empty-schema test fixture."""
    if SCHEMAS is None:
        raise SystemExit("error: ../shared/fixtures/tool-schemas (the real clients' tool schemas) is not here")
    entries = json.loads((SCHEMAS / f"{client}.json").read_text())
    seen, out = set(), []
    for e in entries:
        if e["name"] in seen or e["name"] == "server/no_props" or not isinstance(e["parameters"], dict):
            continue
        seen.add(e["name"])
        out.append({"name": e["name"], "description": e["description"], "parameters": e["parameters"]})
    return out[:n]


def synthetic_tools(n: int) -> list[dict]:
    """bench.py's tools(n): one small schema repeated under n names."""
    from scripts.bench import tools
    return [{k: v for k, v in t.items() if k != "type"} for t in tools(n)]


def _source_text() -> str:
    """Tool results read from the project's own source: code, with its quotes and newlines (JSON escapes)."""
    files = sorted((ROOT / "proxy").rglob("*.py"))
    return "".join(f.read_text() for f in files[:40])


SOURCE = _source_text()
SYSTEM = (ROOT / "README.md").read_text()[:8000]  # a client's system prompt: ~8 KB of prose and markdown
SIZES = (400, 1200, 2500, 800)
CALLS = {"openai-codex": [("exec_command", lambda i: {"cmd": f"rg -n 'def .*' proxy/part{i}.py", "workdir": "/repo",
                                                        "yield_time_ms": 10000}),
                          ("read_file", lambda i: {"file_path": f"/repo/proxy/part{i}.py", "offset": 1, "limit": 200}),
                          ("grep_files", lambda i: {"pattern": f"part{i}", "path": "/repo", "limit": 50}),
                          ("list_dir", lambda i: {"dir_path": f"/repo/proxy/dir{i}", "depth": 2})],
         "claude-code": [("Bash", lambda i: {"command": f"rg -n 'def .*' proxy/part{i}.py",
                                             "description": "Find the definitions"}),
                         ("Read", lambda i: {"file_path": f"/repo/proxy/part{i}.py"}),
                         ("Grep", lambda i: {"pattern": f"part{i}", "path": "/repo", "output_mode": "content"}),
                         ("Glob", lambda i: {"pattern": f"proxy/**/part{i}*.py"})],
         "gemini-cli": [("run_shell_command", lambda i: {"command": f"rg -n 'def .*' proxy/part{i}.py",
                                                         "description": "Find the definitions"}),
                        ("read_file", lambda i: {"absolute_path": f"/repo/proxy/part{i}.py"}),
                        ("grep_search", lambda i: {"pattern": f"part{i}", "dir_path": "/repo"}),
                        ("glob", lambda i: {"pattern": f"proxy/**/part{i}*.py"})]}


def events(history: str, client: str, rounds: int = 24) -> list[tuple]:
    """The conversation in neutral form: ("user"|"assistant", text), ("call", id, name, args),
    ("result", id, text). history "calls": a task, `rounds` tool rounds (an assistant remark every
    third), the next user turn; 50 Chat messages. "text": bench.py's old 50 lorem-ipsum messages."""
    if history == "text1":  # bench.py's small
        return [("user", f"message {TURN}: " + "lorem ipsum " * 70)]
    if history == "text":
        return [("user" if i % 2 == 0 else "assistant", f"message {i}: " + "lorem ipsum " * 70) for i in range(49)] + [
            ("user", f"message {TURN}: " + "lorem ipsum " * 70)]
    out: list[tuple] = [("user", "Refactor the request parser so that it streams; keep every test green. " * 4)]
    pos = 0
    for i in range(rounds):
        if i % 3 == 0:
            out.append(("assistant", f"Step {i}: I will look at the next part of the parser before changing it."))
        name, args = CALLS[client][i % len(CALLS[client])]
        size = SIZES[i % len(SIZES)]
        out.append(("call", f"call_{i:03d}_{'x' * 18}", name, args(i)))
        out.append(("result", f"call_{i:03d}_{'x' * 18}", SOURCE[pos:pos + size]))
        pos += size
    out.append(("user", f"Turn {TURN}: good, now the next step."))
    return out


def png(width: int = 320, height: int = 240) -> str:
    """A noise PNG (incompressible, as a screenshot's detail is): ~300 KB of base64."""
    rnd = random.Random(0)
    rows = b"".join(b"\x00" + rnd.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return base64.b64encode(raw).decode()


@dataclass(frozen=True)
class Shape:
    """What a request carries: real or synthetic tools, a tool-call or text history, a system prompt,
    an image in the last user turn, stored (Responses' store: true) or stateless."""
    tools: str = "real"       # "real" | "synthetic" (20) | "synthetic1" | "one" (the client's shell tool)
    history: str = "calls"    # "calls" | "text" (50 lorem-ipsum messages) | "text1" (one) | "one" (a short ask)
    system: bool = True
    image: bool = False
    store: bool = False


SMALL = Shape(tools="one", history="one", system=False)
LARGE = Shape()
OLD_LARGE = Shape(tools="synthetic", history="text", system=False, store=True)  # bench.py's large (store defaulted on)
FACTORS = [("bench.py's small (one synthetic tool, one 850-character message, stored)",
            Shape(tools="synthetic1", history="text1", system=False, store=True)),
           ("agent small (the client's shell tool, a short ask, stateless)", SMALL),
           ("bench.py's large (text history, synthetic tools, stored)", OLD_LARGE),
           ("+ stateless (store false)", Shape(tools="synthetic", history="text", system=False)),
           ("+ real tools (text history)", Shape(tools="real", history="text", system=False)),
           ("+ tool-call history (synthetic tools)", Shape(tools="synthetic", history="calls", system=False)),
           ("+ system prompt", Shape(tools="synthetic", history="text", system=True)),
           ("agent large (all of them, stateless)", LARGE),
           ("agent large, stored", Shape(store=True)),
           ("agent large + a screenshot", Shape(image=True))]
CLIENT = {"responses": "openai-codex", "chat": "openai-codex", "anthropic": "claude-code", "native": "gemini-cli"}


def body(kind: str, shape: Shape) -> dict:
    client = CLIENT[kind]
    if shape.tools == "real":
        fns = real_tools(client)
    elif shape.tools.startswith("synthetic"):
        fns = synthetic_tools(int(shape.tools.removeprefix("synthetic") or 20))
    else:  # the client's shell tool
        fns = [t for t in real_tools(client) if t["name"] == CALLS[client][0][0]]
    if shape.history == "one":
        evs: list[tuple] = [("user", f"Turn {TURN}: list the files in the current directory.")]
    else:
        evs = events(shape.history, client)
    image = png() if shape.image else None
    if kind == "responses":
        return _responses(fns, evs, shape, image)
    if kind == "chat":
        return _chat(fns, evs, shape, image)
    if kind == "anthropic":
        return _anthropic(fns, evs, shape, image)
    return _native(fns, evs, shape, image)


def _responses(fns: list[dict], evs: list[tuple], shape: Shape, image: str | None) -> dict:
    items = []
    for i, e in enumerate(evs):
        if e[0] in ("user", "assistant"):
            kind = "input_text" if e[0] == "user" else "output_text"
            content = [{"type": kind, "text": e[1]}]
            if image and i == len(evs) - 1:
                content.append({"type": "input_image", "image_url": f"data:image/png;base64,{image}"})
            items.append({"type": "message", "role": e[0], "content": content})
        elif e[0] == "call":
            items.append({"type": "function_call", "call_id": e[1], "name": e[2], "arguments": json.dumps(e[3])})
        else:
            items.append({"type": "function_call_output", "call_id": e[1], "output": e[2]})
    out = {"model": MODEL, "input": items, "tools": [{"type": "function", **f} for f in fns], "tool_choice": "auto",
           "parallel_tool_calls": False, "store": shape.store}
    if shape.system:
        out["instructions"] = SYSTEM
    return out


def _chat(fns: list[dict], evs: list[tuple], shape: Shape, image: str | None) -> dict:
    msgs: list[dict] = [{"role": "system", "content": SYSTEM}] if shape.system else []
    for i, e in enumerate(evs):
        if e[0] == "user":
            content: object = e[1]
            if image and i == len(evs) - 1:
                content = [{"type": "text", "text": e[1]},
                           {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}}]
            msgs.append({"role": "user", "content": content})
        elif e[0] == "assistant":
            msgs.append({"role": "assistant", "content": e[1]})
        elif e[0] == "call":
            call = {"id": e[1], "type": "function", "function": {"name": e[2], "arguments": json.dumps(e[3])}}
            if msgs and msgs[-1]["role"] == "assistant" and "tool_calls" not in msgs[-1]:
                msgs[-1]["tool_calls"] = [call]
            else:
                msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        else:
            msgs.append({"role": "tool", "tool_call_id": e[1], "content": e[2]})
    return {"model": MODEL, "messages": msgs, "tools": [{"type": "function", "function": f} for f in fns],
            "tool_choice": "auto"}


def _anthropic(fns: list[dict], evs: list[tuple], shape: Shape, image: str | None) -> dict:
    msgs: list[dict] = []

    def add(role: str, block: dict) -> None:
        if msgs and msgs[-1]["role"] == role:
            msgs[-1]["content"].append(block)
        else:
            msgs.append({"role": role, "content": [block]})
    for i, e in enumerate(evs):
        if e[0] in ("user", "assistant"):
            add(e[0], {"type": "text", "text": e[1]})
            if image and i == len(evs) - 1:
                add("user", {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}})
        elif e[0] == "call":
            add("assistant", {"type": "tool_use", "id": "toolu_" + e[1][5:], "name": e[2], "input": e[3]})
        else:
            add("user", {"type": "tool_result", "tool_use_id": "toolu_" + e[1][5:], "content": e[2]})
    out = {"model": MODEL, "max_tokens": 32000, "messages": msgs,
           "tools": [{"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
                     for f in fns]}
    if shape.system:
        out["system"] = [{"type": "text", "text": SYSTEM}]
    return out


def _native(fns: list[dict], evs: list[tuple], shape: Shape, image: str | None) -> dict:
    contents: list[dict] = []
    names = {}

    def add(role: str, part: dict) -> None:
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].append(part)
        else:
            contents.append({"role": role, "parts": [part]})
    for i, e in enumerate(evs):
        if e[0] in ("user", "assistant"):
            add("user" if e[0] == "user" else "model", {"text": e[1]})
            if image and i == len(evs) - 1:
                add("user", {"inlineData": {"mimeType": "image/png", "data": image}})
        elif e[0] == "call":
            names[e[1]] = e[2]
            add("model", {"functionCall": {"name": e[2], "args": e[3]}})
        else:
            add("user", {"functionResponse": {"name": names[e[1]], "response": {"output": e[2]}}})
    out = {"contents": contents, "tools": [{"functionDeclarations": [
        {"name": f["name"], "description": f["description"], "parametersJsonSchema": f["parameters"]} for f in fns]}]}
    if shape.system:
        out["systemInstruction"] = {"parts": [{"text": SYSTEM}]}
    return out


# -- the rotation ---------------------------------------------------------------------------------

@dataclass
class Target:
    name: str
    url: str
    body: dict
    headers: dict[str, str] = field(default_factory=dict)
    via: str | None = None
    ssl: object = True
    server_hostname: str | None = None

    def __post_init__(self) -> None:
        self.content = numbered(self.body)


def pct(xs: list[float], q: float) -> float:
    """The q-quantile (0..1) of xs, linear between the closest ranks, in ms."""
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return (s[lo] + (s[hi] - s[lo]) * (k - lo)) * 1000


async def rotation(targets: list[Target], conc: int, rounds: int, warm: int = 3,
                   pids: dict[str, int] | None = None) -> dict:
    """`conc` workers take round numbers until `rounds` are done; a round sends one request to each
    target, one after the other, starting from target (round // 2 % len), every other round in the
    reverse order: none is always first, and none always follows the same other. At c=1 each request
    waits SETTLE after the one before: what a server does once its answer is on its way (the journal,
    the usage row) is done before the next target is timed. In a fixed order, the target after the
    proxy ran beside that work: two fresh processes of the very same proxy read 0.15-0.3 ms apart.
    Returns each target's latencies in seconds, under "pairs" the rounds' (a - b) for the first two,
    and under "cpu" the CPU ms per request of the processes in `pids` (name: pid) over the timed rounds.
    Before the warm-up, `conc` requests at once to each target open as many connections to it as the
    timed rounds can ever use: otherwise the first timed rounds' burst opened a few more, and a new
    connection through mitmdump (CONNECT, then TLS on both sides) took 70-430 ms at c=64, which made
    the p99 of whichever target drew them (the addon's in one run, plain mitmdump's in the next)."""
    lat: dict[str, list[float]] = {t.name: [] for t in targets}
    pairs: list[float] = []
    counter = [0]
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, force_close=False)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as s:
        async def one(t: Target, n: int) -> float:
            headers = {**KEY, "content-type": "application/json", **t.headers}
            kw = {"server_hostname": t.server_hostname} if t.server_hostname else {}
            start = time.perf_counter()
            async with s.post(t.url, data=t.content(n), headers=headers, proxy=t.via, ssl=t.ssl, **kw) as r:
                data = await r.read()
                took = time.perf_counter() - start
                if r.status != 200:
                    raise RuntimeError(f"{t.name} {t.url}: {r.status} {data[:400]!r}")
            return took

        async def worker(timed: bool, quota: int) -> None:
            while counter[0] < quota:
                n = counter[0]
                counter[0] += 1
                got = {}
                k = n // 2 % len(targets)
                order = targets[k:] + targets[:k]
                for t in order[::-1] if n % 2 else order:
                    if got and conc == 1:
                        await asyncio.sleep(SETTLE)
                    got[t.name] = await one(t, n)
                if timed:
                    for name, v in got.items():
                        lat[name].append(v)
                    pairs.append(got[targets[0].name] - got[targets[1].name])
        for t in targets:  # conc connections to each target, all open before anything is timed (below)
            await asyncio.gather(*(one(t, 0) for _ in range(conc)))
        await asyncio.gather(*(worker(False, warm * conc) for _ in range(conc)))
        counter[0] = 0
        cpu0 = {name: cpu_seconds(pid) for name, pid in (pids or {}).items()}
        await asyncio.gather(*(worker(True, rounds) for _ in range(conc)))
        cpu = {name: (cpu_seconds(pid) - cpu0[name]) * 1000 / rounds for name, pid in (pids or {}).items()}
    return {**lat, "pairs": pairs, "cpu": cpu}


def paired(lat: dict, a: str, b: str) -> float:
    """The median, in ms, of a's latency minus b's, round by round (the same rotation)."""
    return statistics.median(x - y for x, y in zip(lat[a], lat[b], strict=True)) * 1000


def summarize(lat: dict[str, list[float]], base: str = "direct") -> dict[str, dict[str, float]]:
    out = {}
    for name, xs in lat.items():
        if name in ("pairs", "cpu"):
            continue
        out[name] = {"p50": pct(xs, 0.5), "p99": pct(xs, 0.99), "n": len(xs)}
    for name, r in out.items():
        b = out[base]
        r["added_p50"], r["added_p99"] = r["p50"] - b["p50"], r["p99"] - b["p99"]
        # The p99 of each round's added latency (the target's minus its baseline's in the same round):
        # a difference of two p99s is near zero, either sign, when the hop adds little to the mock's
        # own tail, and a ratio to it says nothing; each round's added time is never below the target's cost.
        own = lat.get(f"{name}_direct") or lat[base]
        r["round_p99"] = pct([x - y for x, y in zip(lat[name], own, strict=True)], 0.99) if name != base else 0.0
    out["pairs"] = {"median": statistics.median(lat["pairs"]) * 1000}
    for name, ms in lat.get("cpu", {}).items():
        if name in out:  # (the floor's process runs in every rotation, a target of some)
            out[name]["cpu_ms"] = ms
    return out


# -- the servers ----------------------------------------------------------------------------------

class Servers:
    def __init__(self, tmp: Path) -> None:
        self.tmp, self.procs = tmp, []
        mport = free_port()
        self.mock = self._start("tails-mock", [sys.executable, "-m", "proxy", "mock", "--port", str(mport)], "ready")
        self.mock_url = f"http://127.0.0.1:{mport}"
        hport = free_port()
        self.hop = self._start("tails-hop", [sys.executable, str(ROOT / "scripts" / "null_hop.py"), str(hport),
                                              self.mock_url], "ready")
        self.hop_url = f"http://127.0.0.1:{hport}"
        fport = free_port()  # the translating hop: the floor of any translator in Python (issue 62 item 3)
        self.floor = self._start("tails-floor", [sys.executable, str(ROOT / "scripts" / "translating_hop.py"),
                                                 str(fport), self.mock_url], "ready")
        self.floor_url = f"http://127.0.0.1:{fport}"
        pport = free_port()
        self.proxy = self._start("tails-proxy", [sys.executable, "-m", "proxy", "--log-level", "WARNING", "serve",
                                                 "--port", str(pport), "--upstream", self.mock_url], "ready")
        self.proxy_url = f"http://127.0.0.1:{pport}"
        self.litellm_url = None
        binary = os.environ.get("BENCH_LITELLM_BIN")
        if binary and Path(binary).exists():
            config = tmp / "tails-litellm.yaml"
            config.write_text(f"""model_list:
  - model_name: {MODEL}
    litellm_params: {{model: gemini/{MODEL}, api_base: "{self.mock_url}/v1beta", api_key: bench-key}}
litellm_settings: {{drop_params: true}}
router_settings: {{disable_cooldowns: true}}
general_settings: {{master_key: {LITELLM_KEY}}}
""")
            port = free_port()
            self._start("tails-litellm", [binary, "--config", str(config), "--port", str(port), "--host", "127.0.0.1",
                                          "--num_workers", "1"], "Uvicorn running", timeout=240)
            self.litellm_url = f"http://127.0.0.1:{port}"

    def pids(self) -> dict[str, int]:
        return {"proxy": self.proxy.proc.pid, "hop": self.hop.proc.pid, "floor": self.floor.proc.pid}

    def _start(self, name: str, cmd: list[str], ready: str, timeout: float = 30) -> Process:
        proc = Process(self.tmp, name, cmd, ready, timeout=timeout)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()

    async def sent_for(self, url: str, client_body: dict, headers: dict[str, str] | None = None) -> dict:
        """One request through `url` (TURN left as it is); the body the mock received for it."""
        await send(Target("probe", url, client_body, headers or {}))
        return (await last_sent(self.mock_url))["body"]

    def targets(self, kind: str, client_body: dict, floor: bool = False) -> list[Target]:
        """The proxy, the null hop (and with `floor` the translating hop, sent the client's body) and
        the mock called directly with the body the proxy sent it."""
        sent = asyncio.run(self.sent_for(self.proxy_url + PATHS[kind], client_body))
        if TURN not in json.dumps(sent):
            raise RuntimeError(f"{kind}: the turn marker did not reach the mock")
        floors = []
        if floor:  # the floor sends a body of its own (leaner: the mock spends less on it), so its own baseline
            theirs = asyncio.run(self.sent_for(self.floor_url + PATHS[kind], client_body))
            floors = [Target("floor", self.floor_url + PATHS[kind], client_body),
                      Target("floor_direct", self.mock_url + PATHS["native"], theirs)]
        return [Target("proxy", self.proxy_url + PATHS[kind], client_body),
                Target("hop", self.hop_url + PATHS["native"], sent), *floors,
                Target("direct", self.mock_url + PATHS["native"], sent)]

    def litellm_targets(self, kind: str, client_body: dict) -> list[Target]:
        """LiteLLM and the mock called directly with the body LiteLLM sent (a rotation of their own:
        a tenth as fast, LiteLLM would hold the other targets' clients back)."""
        auth = {"authorization": f"Bearer {LITELLM_KEY}"}
        theirs = asyncio.run(self.sent_for(self.litellm_url + PATHS[kind], client_body, auth))
        return [Target("litellm", self.litellm_url + PATHS[kind], client_body, auth),
                Target("direct", self.mock_url + PATHS["native"], theirs)]


async def send(t: Target) -> None:
    """One request as it is (TURN unreplaced: what reaches the mock then shows where it went)."""
    kw = {"server_hostname": t.server_hostname} if t.server_hostname else {}
    async with aiohttp.ClientSession() as s, s.post(
            t.url, data=json.dumps(t.body).encode(), proxy=t.via, ssl=t.ssl,
            headers={**KEY, "content-type": "application/json", **t.headers}, **kw) as r:
        if r.status != 200:
            raise RuntimeError(f"{t.url}: {r.status} {(await r.text())[:400]}")
        await r.read()


def run_rows(servers: Servers, workloads: list[str], kinds: list[str]) -> list[dict]:
    rows = []
    for workload in workloads:
        shape = SMALL if workload == "small" else LARGE
        for kind in kinds:
            b = body(kind, shape)
            targets = servers.targets(kind, b, floor=True)
            theirs_targets, refused = None, None
            if servers.litellm_url and kind in ("responses", "chat"):
                try:
                    theirs_targets = servers.litellm_targets(kind, b)
                except RuntimeError as e:  # what LiteLLM answers the body with, in the table's note
                    refused = re.sub(r"\s+", " ", str(e).split(": ", 1)[-1])[:240]
                    print(f"LiteLLM refused {workload} {kind}: {refused}", flush=True)
            for c in CONC:
                lat = asyncio.run(rotation(targets, c, N, pids=servers.pids()))
                r = summarize(lat)
                # The floor against the mock called with its own body, as the hop against the direct calls.
                r["floor_pairs"] = {"median": paired(lat, "floor", "floor_direct") - paired(lat, "hop", "direct"),
                                    "added_p50": r["floor"]["p50"] - r["floor_direct"]["p50"],
                                    "added_p99": r["floor"]["p99"] - r["floor_direct"]["p99"]}
                if theirs_targets:
                    r["litellm"] = summarize(asyncio.run(rotation(theirs_targets, c, max(50, N // 4))))["litellm"]
                if refused:
                    r["litellm_refused"] = refused
                rows.append({"workload": workload, "kind": kind, "c": c, "bytes": len(json.dumps(b)), **r})
                print(_line(rows[-1]), flush=True)
    return rows


def _line(r: dict) -> str:
    s = (f"{r['workload']:5} {r['kind']:9} c={r['c']:<2} direct p50 {r['direct']['p50']:6.2f} p99 "
         f"{r['direct']['p99']:6.2f} | added p50/p99 proxy {r['proxy']['added_p50']:+6.2f}/"
         f"{r['proxy']['added_p99']:+6.2f} hop {r['hop']['added_p50']:+6.2f}/{r['hop']['added_p99']:+6.2f}"
         f" | paired proxy-hop {r['pairs']['median']:+.2f}")
    if "floor_pairs" in r:
        f = r["floor_pairs"]
        s += f" | floor added {f['added_p50']:+.2f}/{f['added_p99']:+.2f}, beyond the hop {f['median']:+.2f}"
    if "litellm" in r:
        s += f" | litellm {r['litellm']['added_p50']:+.2f}/{r['litellm']['added_p99']:+.2f}"
    return s


def factor_rows(servers: Servers, kinds: list[str]) -> list[dict]:
    """At c=1: the paired median of (proxy - hop) and of (proxy - direct) for each shape of body."""
    out = []
    for label, shape in FACTORS:
        for kind in kinds:
            if shape.store and kind != "responses":
                continue
            b = body(kind, shape)
            targets = servers.targets(kind, b)
            lat = asyncio.run(rotation(targets, 1, FACTOR_N, pids=servers.pids()))
            r = summarize(lat)
            direct_pairs = [a - d for a, d in zip(lat["proxy"], lat["direct"], strict=True)]
            out.append({"label": label, "kind": kind, "bytes": len(json.dumps(b)), "beyond": r["pairs"]["median"],
                        "added": statistics.median(direct_pairs) * 1000,
                        "hop": statistics.median(h - d for h, d in zip(lat["hop"], lat["direct"], strict=True)) * 1000,
                        "cpu": r["proxy"]["cpu_ms"], "hop_cpu": r["hop"]["cpu_ms"]})
            print(f"{label:58} {kind:9} {out[-1]['bytes']:>7} B  beyond hop {out[-1]['beyond']:+.2f}  "
                  f"added {out[-1]['added']:+.2f}  hop {out[-1]['hop']:+.2f}  CPU ms/req proxy {out[-1]['cpu']:.2f} "
                  f"hop {out[-1]['hop_cpu']:.2f}", flush=True)
    return out


def versus_rows(servers: Servers, rev: str, kinds: list[str]) -> list[dict]:
    """The proxy at `rev` (git archive into .bench/, run by the same interpreter) beside today's, in
    the same rotation with the null hop and the mock, at c=1: did the code change, or the bodies?
    Today's is a process of its own started with the old one, and each gets the same warm-up (VERSUS_WARM
    rounds of each body): the rows' proxy, warm from hundreds of requests, read 0.15-0.2 ms faster
    than a fresh process of the very same code."""
    old_dir = ROOT / ".bench" / f"proxy-at-{rev}"
    if not (old_dir / "proxy").is_dir():
        old_dir.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "proxy"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(old_dir)], input=archive.stdout, check=True)
    ports, pids = {}, {}
    for name, cwd in (("new", ROOT), ("old", old_dir)):
        ports[name] = free_port()
        servers.procs.append(Process(servers.tmp, f"tails-proxy-{name}-{rev}",
                                     [sys.executable, "-m", "proxy", "--log-level", "WARNING", "serve", "--port",
                                      str(ports[name]), "--upstream", servers.mock_url], "ready", cwd=cwd))
        pids["proxy" if name == "new" else "old"] = servers.procs[-1].proc.pid
    out = []
    for label, shape in (FACTORS[0], FACTORS[1], FACTORS[2], ("agent large", LARGE)):
        for kind in kinds:
            if kind == "anthropic" and rev_lacks_anthropic(old_dir):
                continue
            b = body(kind, shape)
            _, hop, direct = servers.targets(kind, b)
            proxy = Target("proxy", f"http://127.0.0.1:{ports['new']}" + PATHS[kind], b)
            old = Target("old", f"http://127.0.0.1:{ports['old']}" + PATHS[kind], b)
            asyncio.run(rotation([proxy, old], 1, VERSUS_WARM))
            lat = asyncio.run(rotation([proxy, old, hop, direct], 1, FACTOR_N, pids=pids))
            out.append({"label": label, "kind": kind, "rev": rev, "new_old": paired(lat, "proxy", "old"),
                        "new_hop": paired(lat, "proxy", "hop"), "old_hop": paired(lat, "old", "hop"),
                        "new_cpu": lat["cpu"]["proxy"], "old_cpu": lat["cpu"]["old"]})
            v = out[-1]
            print(f"{label:58} {kind:9} today − {rev} {v['new_old']:+.2f}  today − hop {v['new_hop']:+.2f}  "
                  f"{rev} − hop {v['old_hop']:+.2f}  CPU ms/req today {v['new_cpu']:.2f} {rev} {v['old_cpu']:.2f}",
                  flush=True)
    return out


def rev_lacks_anthropic(old_dir: Path) -> bool:
    return not (old_dir / "proxy" / "anthropic").is_dir()


# -- the MITM -------------------------------------------------------------------------------------

def mitm_rows(tmp: Path, workloads: list[str]) -> list[dict]:
    """mitmdump + the addon (no session: the app's own tools, repaired) against plain mitmdump, both
    against the TLS mock called directly, native generateContent. bench_mitm.py's processes."""
    from scripts.bench_mitm import GL, MitmBench
    bench = MitmBench(tmp)
    rows = []
    try:
        plain, plain_url = bench.plain()
        addon, addon_url, _ = bench.addon()
        host = GL.removeprefix("https://")
        upstream = ssl.create_default_context(cafile=str(tmp / "upstream-ca" / "mitmproxy-ca-cert.pem"))
        url = GL + PATHS["native"]
        for workload in workloads:
            b = body("native", SMALL if workload == "small" else LARGE)
            # The addon repairs the app's tools: the mock is called directly with what the addon sent it.
            asyncio.run(send(Target("addon", url, b, via=addon_url, ssl=bench.client_ssl)))
            sent = asyncio.run(_mitm_last(bench.mock_route, upstream, host))
            if TURN not in json.dumps(sent):
                raise RuntimeError("mitm: the turn marker did not reach the mock")
            targets = [Target("proxy", url, b, via=addon_url, ssl=bench.client_ssl),
                       Target("hop", url, b, via=plain_url, ssl=bench.client_ssl),
                       Target("direct", f"https://{bench.mock_route}" + PATHS["native"], sent, ssl=upstream,
                              server_hostname=host)]
            for c in CONC:
                pids = {"proxy": addon.proc.pid, "hop": plain.proc.pid}
                r = summarize(asyncio.run(rotation(targets, c, N, pids=pids)))
                rows.append({"workload": workload, "kind": "mitm", "c": c, "bytes": len(json.dumps(b)), **r})
                print(_line(rows[-1]), flush=True)
    finally:
        bench.stop()
    return rows


async def _mitm_last(route: str, ctx: ssl.SSLContext, host: str) -> dict:
    async with aiohttp.ClientSession() as s, s.get(f"https://{route}/mock/last", ssl=ctx, server_hostname=host) as r:
        return (await r.json())["body"]


# -- the report -----------------------------------------------------------------------------------

NAMES = {"responses": "Responses", "chat": "Chat", "anthropic": "Anthropic", "mitm": "MITM (native, TLS)"}


def table(runs: list[list[dict]]) -> list[str]:
    """One line per workload x API x concurrency: the median of the runs, with their range for the p99s."""
    lines = ["| workload | API | c | direct p50 / p99 ms | proxy added p50 | hop added p50 | proxy added p99 "
             "(runs' range) | hop added p99 (runs' range) | p99 added, proxy / hop (goal ≤ 2) | "
             "paired proxy − hop p50 (goal ≤ 0.5 small, ≤ 1.0 large at c=1) | the floor beyond the hop, paired "
             "p50 | the floor's p99 added / hop's | each round's added latency, p99: proxy / hop ms (ratio) | "
             "CPU ms/req, proxy / floor / hop | LiteLLM added p50 / p99 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    keyed: dict[tuple, list[dict]] = {}
    for run in runs:
        for r in run:
            keyed.setdefault((r["workload"], r["kind"], r["c"]), []).append(r)
    for (w, k, c), rs in keyed.items():
        def med(path: tuple[str, str], rs: list[dict] = rs) -> float:
            return statistics.median(r[path[0]][path[1]] for r in rs)

        def rng(path: tuple[str, str], rs: list[dict] = rs) -> str:
            xs = sorted(r[path[0]][path[1]] for r in rs)
            return f"{med(path):+.2f} ({xs[0]:+.2f}…{xs[-1]:+.2f})" if len(xs) > 1 else f"{xs[0]:+.2f}"
        hop99 = med(("hop", "added_p99"))
        ratio = med(("proxy", "added_p99")) / hop99 if hop99 > 0 else float("nan")
        pair = statistics.median(r["pairs"]["median"] for r in rs)
        goal = (0.5 if w == "small" else 1.0) if c == 1 else None
        mark = lambda ok: "" if ok else " ✗"  # noqa: E731
        floored = all("floor_pairs" in r for r in rs)
        floor_cpu = f"{med(('floor', 'cpu_ms')):.2f}" if floored else "—"
        cpu = (f"{med(('proxy', 'cpu_ms')):.2f} / {floor_cpu} / {med(('hop', 'cpu_ms')):.2f}"
               if all("cpu_ms" in r["proxy"] for r in rs) else "—")
        floor_ratio = med(("floor_pairs", "added_p99")) / hop99 if floored and hop99 > 0 else float("nan")
        floor = (f"{statistics.median(r['floor_pairs']['median'] for r in rs):+.2f} | "
                 f"{'—' if floor_ratio != floor_ratio else f'{floor_ratio:.2f}'}") if floored else "— | —"
        lite = (f"{med(('litellm', 'added_p50')):+.1f} / {med(('litellm', 'added_p99')):+.1f}"
                if all("litellm" in r for r in rs) else "refused the body (400)¹" if any(
                    "litellm_refused" in r for r in rs) else "—")
        rounds = "—"
        if all("round_p99" in r["proxy"] for r in rs):
            p, h = med(("proxy", "round_p99")), med(("hop", "round_p99"))
            rounds = f"{p:+.2f} / {h:+.2f} ({_ratio(p / h if h > 0 else float('nan'))})"
        lines.append(f"| {w} | {NAMES[k]} | {c} | {med(('direct', 'p50')):.2f} / {med(('direct', 'p99')):.2f} | "
                     f"{med(('proxy', 'added_p50')):+.2f} | {med(('hop', 'added_p50')):+.2f} | "
                     f"{rng(('proxy', 'added_p99'))} | {rng(('hop', 'added_p99'))} | {_ratio(ratio)} | "
                     f"{pair:+.2f}{'' if goal is None else mark(pair <= goal)} | {floor} | {rounds} | {cpu} | "
                     f"{lite} |")
    return lines


def refusals(runs: list[list[dict]]) -> list[str]:
    seen = {(r["workload"], r["kind"]): r["litellm_refused"] for run in runs for r in run if "litellm_refused" in r}
    if not seen:
        return []
    (w, k), text = next(iter(seen.items()))
    return [f"¹ LiteLLM answered {', '.join(f'{w} {NAMES[k]}' for w, k in seen)} with a 400, e.g. ({w} {NAMES[k]}): "
            f"`{text}` — it passes Codex's MCP tool names (`dash/search`) to Gemini as they are.", ""]


def _ratio(x: float) -> str:
    """proxy p99 added / hop p99 added; "—" when the hop's p99 was no slower than direct (no ratio)."""
    return "—" if x != x else f"{x:.2f}" + ("" if x <= 2 else " ✗")


def _added(row: dict, who: str, q: str) -> float:
    """A target's added p50/p99 in a row: the floor's against the mock called with its own body."""
    if who == "floor" and "floor_direct" in row:
        return row["floor"][q[-3:]] - row["floor_direct"][q[-3:]]
    return row[who][q]


def plot(runs: list[list[dict]]) -> None:
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    kinds = [k for k in NAMES if any(r["kind"] == k for run in runs for r in run)]
    workloads = [w for w in ("small", "large") if any(r["workload"] == w for run in runs for r in run)]
    fig, axes = plt.subplots(len(workloads), len(kinds), figsize=(4 * len(kinds), 3.4 * len(workloads)),
                             squeeze=False, sharex=True)
    for i, w in enumerate(workloads):
        for j, k in enumerate(kinds):
            ax = axes[i][j]
            mitm = k == "mitm"
            for who, colour, label in (("proxy", "tab:blue", "mitmdump + addon" if mitm else "gemini-tool-proxy"),
                                       ("hop", "tab:gray", "plain mitmdump" if mitm else "null aiohttp hop"),
                                       ("floor", "tab:green", "the floor (translating hop)"),
                                       ("litellm", "tab:red", "LiteLLM proxy")):
                for q, style in (("added_p99", "-"), ("added_p50", ":")):
                    pts = {}
                    for run in runs:
                        for r in run:
                            if r["workload"] == w and r["kind"] == k and who in r:
                                pts.setdefault(r["c"], []).append(_added(r, who, q))
                    if not pts:
                        continue
                    cs = sorted(pts)
                    ys = [statistics.median(pts[c]) for c in cs]
                    ax.plot(cs, ys, style, marker="o" if style == "-" else None, color=colour,
                            label=f"{label} {q[-3:]}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("symlog", linthresh=1)
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_xticks(list(CONC), [str(c) for c in CONC])
            ax.set_title(f"{w} · {NAMES[k]}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            if j == 0:
                ax.set_ylabel("added latency, ms")
            if i == len(workloads) - 1:
                ax.set_xlabel("concurrency")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Added latency against the mock called directly (median of the runs; p99 solid, p50 dotted; "
                 "linear below 1 ms)",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)


def load() -> str:
    """uptime's line; where there is no uptime (the image), the time and /proc/loadavg's three loads."""
    if shutil.which("uptime"):
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    a, b, c = Path("/proc/loadavg").read_text().split()[:3]
    return f"{datetime.now(UTC):%H:%M:%S} load average: {a}, {b}, {c}"


def _kept_subsections(text: str, factors: list[dict], versus: list[dict]) -> list[str]:
    """The section's factor and versus tables as they were, for a run that measured neither again."""
    if START not in text or END not in text:
        return []
    old = text[text.index(START):text.index(END)]
    kept = []
    for heading, measured in (("### What makes the agent body harder", factors), ("### Today's proxy against", versus)):
        if measured or heading not in old:
            continue
        block = old[old.index(heading):]
        nxt = block.find("\n### ", 1)
        kept += (block if nxt < 0 else block[:nxt + 1]).rstrip("\n").split("\n") + [""]
    return kept


def write(runs: list[list[dict]], factors: list[dict], loads: list[str], versus: list[dict]) -> None:
    sizes = {}
    for run in runs:
        for r in run:
            sizes[(r["workload"], r["kind"])] = r["bytes"]
    size_text = ", ".join(f"{w} {NAMES[k].split(' ')[0]} {b / 1000:.1f} KB" for (w, k), b in sizes.items())
    lines = [START, "## Tails under concurrency (issue 62 item 3)", "",
             f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_tails.py` (run by `scripts/bench.sh`) "
             f"on {machine()}; {len(runs)} run(s), the load before each: " + "; ".join(f"`{x}`" for x in loads) + ".",
             "",
             f"At each concurrency c, c clients each send rounds of one request to every target — the proxy, the "
             f"null aiohttp hop, the mock called directly with the very body the proxy sent it (the baseline) — the "
             f"order rotated from round to round and reversed every other round (no target always follows the "
             f"same other), and at c=1 each request sent {SETTLE * 1000:g} ms after the one before (what a server "
             f"does once its answer is on its way is over before the next target is timed); {N} rounds per "
             f"concurrency, on connections kept alive: c requests at once to each target open, before the "
             f"warm-up, all the connections the timed rounds can use. Added p50/p99 is that percentile of a "
             f"target's latencies minus the same percentile of the direct calls in the same rotation (as "
             f"BerriAI/ai-gateway-bench publishes \"added p99\"). Figures are the median of the runs; the p99 columns "
             f"show the runs' range. The paired column is the median of request-by-request differences proxy − hop "
             f"within a round. 'Each round's added latency, p99' is the p99 over the rounds of a target's latency "
             f"minus the direct call's in the same round: where the hop adds little to the mock's own tail, the "
             f"difference of two p99s is near zero, of either sign, and a ratio to it says nothing. "
             f"MITM: mitmdump with the addon (no session) against plain mitmdump, native "
             f"generateContent over TLS, the TLS mock called directly as the baseline. LiteLLM (one worker) where "
             f"bench.sh installed it, against the mock called with the body LiteLLM sent. The floor: "
             f"scripts/translating_hop.py in the same rotation, sent the client's body — an aiohttp server that "
             f"does only what no translator to Gemini can skip (orjson in, one pass to Gemini's contents and "
             f"declarations, orjson out, and back), without the proxy's validation, repairs, store, auth, "
             f"metrics, journal or pricing. It sends the mock a leaner body than the proxy's, so it is measured "
             f"against the mock called directly with its own body (a target of the same rotation): 'beyond the "
             f"hop' is the paired median of (floor − its direct) minus that of (hop − direct).",
             "",
             "Bodies: 'small' is one user message and one of the client's real tools; 'large' is what an agent sends "
             "— its system prompt (8 KB), a stateless 50-message history of 24 tool calls with their results "
             "(function_call/function_call_output, tool_calls/role tool, tool_use/tool_result, functionCall/"
             "functionResponse; the results are source code, 400 B–2.5 KB) and 20 real tool schemas "
             "(../shared/fixtures/tool-schemas: Codex's for Responses and Chat, Claude Code's for Anthropic, "
             f"Gemini CLI's for the MITM). Sizes: {size_text}.", "", *table(runs), "",
             *refusals(runs), f"![added latency by concurrency]({PLOT.name})", ""]
    if factors:
        lines += ["### What makes the agent body harder than bench.py's 'large'", "",
                  f"At c=1, {FACTOR_N} rounds each, one factor at a time from bench.py's old 'large' (50 lorem-ipsum "
                  "messages, one small synthetic schema under 20 names; Responses' `store` left at its default, on) to "
                  "the agent body. Paired medians, ms.", "",
                  "| body | API | bytes | proxy − hop | proxy − direct | hop − direct | proxy CPU ms/req | "
                  "hop CPU ms/req |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {f['label']} | {NAMES[f['kind']]} | {f['bytes']:,} | {f['beyond']:+.2f} | {f['added']:+.2f} | "
                  f"{f['hop']:+.2f} | {f['cpu']:.2f} | {f['hop_cpu']:.2f} |" for f in factors]
        lines.append("")
    if versus:
        rev = versus[0]["rev"]
        lines += [f"### Today's proxy against the one at {rev}", "",
                  f"The proxy at {rev} (`git archive`, the same interpreter and packages) beside today's, both in the "
                  f"same rotation with the null hop and the mock, c=1, {FACTOR_N} rounds; paired medians, ms.",
                  "", f"| body | API | today − {rev} | today − hop | {rev} − hop | CPU ms/req, today / {rev} |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {v['label']} | {NAMES[v['kind']]} | {v['new_old']:+.2f} | {v['new_hop']:+.2f} | "
                  f"{v['old_hop']:+.2f} | {v.get('new_cpu', 0):.2f} / {v.get('old_cpu', 0):.2f} |" for v in versus]
        lines.append("")
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    lines += _kept_subsections(text, factors, versus)
    lines.append(END)
    put_section(DOC, START, END, "\n".join(lines))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help="write docs/benchmarks.md's section and the plot")
    p.add_argument("--runs", type=int, default=1, help="whole runs, reported as their median and range")
    p.add_argument("--factors", action="store_true", help="also measure which part of the agent body costs what")
    p.add_argument("--no-rows", action="store_true", help="only the factors")
    p.add_argument("--only", choices=("small", "large"))
    p.add_argument("--kinds", default="responses,chat,anthropic,mitm")
    p.add_argument("--json", type=Path, help="keep the raw figures here")
    p.add_argument("--versus", metavar="REV", help="also today's proxy against the one at git revision REV (c=1)")
    args = p.parse_args()
    kinds = args.kinds.split(",")
    workloads = [args.only] if args.only else ["small", "large"]
    runs, factors, loads, versus = [], [], [], []
    for i in range(args.runs):
        loads.append(load())
        print(f"run {i + 1}/{args.runs}: {loads[-1]}", flush=True)
        tmp = Path(tempfile.mkdtemp(prefix="gtp-tails-"))
        servers = Servers(tmp)
        rows: list[dict] = []
        try:
            if not args.no_rows:
                rows += run_rows(servers, workloads, [k for k in kinds if k != "mitm"])
            if args.factors and i == 0:
                factors = factor_rows(servers, [k for k in kinds if k != "mitm"])
            if args.versus and i == 0:
                versus = versus_rows(servers, args.versus, [k for k in kinds if k != "mitm"])
        finally:
            servers.stop()
        if "mitm" in kinds and not args.no_rows:
            rows += mitm_rows(tmp, workloads)
        runs.append(rows)
        if args.json:
            args.json.write_text(json.dumps({"runs": runs, "factors": factors, "loads": loads, "versus": versus}))
    if not args.no_rows:
        print("\n".join(table(runs)))
    if args.write:
        if not args.no_rows:
            plot(runs)
        write(runs, factors, loads, versus)


if __name__ == "__main__":
    main()
