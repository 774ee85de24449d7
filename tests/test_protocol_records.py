"""Each client protocol is one typed record (server/protocol.py), and every generating handler ends
in the one turn skeleton (server/answer_turn.py) — issue 63, item 3. What differs between
protocols is a named field: these tests hold the records to the routes they register and show that
a field, not a path test somewhere, decides."""

import ast
import dataclasses
import itertools
import json
import re
from pathlib import Path

import httpx
import pytest
from aiohttp import web

import proxy.front.app as front_app
from proxy.model_rules import ModelRules
from proxy.server.protocol import ClientProtocol
from tests.harness import Stack

PROXY = Path(__file__).resolve().parents[1] / "proxy"
FOLDERS = ("responses", "chat", "anthropic", "interactions", "gemini")
WEATHER = {"type": "function", "name": "get_weather", "description": "Current weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
G3 = "gemini-3-flash-preview"


def test_every_protocol_folder_registers_one_record() -> None:
    records = front_app.PROTOCOLS_IN_ORDER
    assert all(isinstance(r, ClientProtocol) for r in records)
    assert [r.name for r in records] == list(FOLDERS)
    for folder, record in zip(FOLDERS, records, strict=True):
        module = __import__(f"proxy.{folder}.protocol", fromlist=["PROTOCOL"])
        assert module.PROTOCOL is record


SAMPLE = {"target": "gemini-3-flash-preview:generateContent", "tail": "cachedContents/x1"}
# Served by the composition root before any protocol's routes (OpenAI's model list), so a
# protocol's route of the same path never answers it.
SHADOWED = {"/v1/models"}


def _samples(resource: web.AbstractResource) -> list[str]:
    """Concrete paths a route serves: every alternative of a `{name:a|b}`, a made-up value elsewhere."""
    info = resource.get_info()
    if "path" in info:
        return [info["path"]]
    parts = re.split(r"(\(\?P<\w+>[^()]*\))", info["pattern"].pattern)
    choices = []
    for part in parts:
        m = re.fullmatch(r"\(\?P<(\w+)>([^()]*)\)", part)
        if m is None:
            choices.append([part.replace("\\", "")])
        elif re.fullmatch(r"[\w|]+", m.group(2)):
            choices.append(m.group(2).split("|"))
        else:
            choices.append([SAMPLE.get(m.group(1), "x1")])
    return [p for p in ("".join(c) for c in itertools.product(*choices)) if p not in SHADOWED]


def test_each_route_answers_in_its_own_protocols_shape() -> None:
    """A path is its protocol's by the records' one order: a record out of order, or an `owns` that
    claims too little or too much, sends some route's errors out in another protocol's shape."""
    records = front_app.PROTOCOLS_IN_ORDER
    checked = 0
    for record in records:
        app = web.Application()
        record.add_routes(app)
        for resource in app.router.resources():
            for path in _samples(resource):
                owner = next((r for r in records if r.owns(path)), None)
                assert owner is record, f"{path} ({record.name}'s route) answers as {owner and owner.name}"
                checked += 1
    assert checked > 30


def _calls_in(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                out.append(f.id)
            elif isinstance(f, ast.Attribute):
                base = f.value.attr if isinstance(f.value, ast.Attribute) else getattr(f.value, "id", "")
                out.append(f"{base}.{f.attr}")
    return out


def test_generating_handlers_end_in_the_skeleton() -> None:
    """No protocol opens its own stream or asks the upstream for the turn: answer_turn does. (The
    compaction asks Gemini for a summary, which is not the client's turn.)"""
    allowed = {"responses/compaction.py"}
    offenders = []
    for folder in FOLDERS:
        for path in (PROXY / folder).glob("*.py"):
            rel = f"{folder}/{path.name}"
            calls = _calls_in(ast.parse(path.read_text()))
            bad = [c for c in calls if c in ("run_stream", "upstream.stream", "upstream.generate",
                                              "stream_arguments")]
            if bad and rel not in allowed:
                offenders.append(f"{rel}: {sorted(set(bad))}")
    assert not offenders, offenders


@pytest.fixture
def interactions_streaming_arguments(monkeypatch: pytest.MonkeyPatch):
    """The same front-end with one field of one record changed: Interactions asking for streamed arguments."""
    records = tuple(dataclasses.replace(r, streams_arguments=True) if r.name == "interactions" else r
                    for r in front_app.PROTOCOLS_IN_ORDER)
    monkeypatch.setattr(front_app, "PROTOCOLS_IN_ORDER", records)
    s = Stack(rules=ModelRules.parse(stream_arguments=["gemini-3*"]))
    yield s
    s.close()


@pytest.fixture
def streaming():
    s = Stack(rules=ModelRules.parse(stream_arguments=["gemini-3*"]))
    yield s
    s.close()


def _interaction(stack: Stack) -> dict:
    body = {"model": G3, "input": "call get_weather city=Oslo", "tools": [WEATHER], "stream": True}
    with httpx.stream("POST", f"{stack.url}/v1beta/interactions", json=body, headers={"x-goog-api-key": "k"},
                      timeout=30) as r:
        text = "".join(r.iter_text())
    assert r.status_code == 200 and "interaction.completed" in text, text[-500:]
    return stack.last_body()


def _chat(stack: Stack) -> dict:
    body = {"model": G3, "messages": [{"role": "user", "content": "call get_weather city=Oslo"}], "stream": True,
            "tools": [{"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}]}
    with httpx.stream("POST", f"{stack.url}/v1/chat/completions", json=body, headers={"authorization": "Bearer k"},
                      timeout=30) as r:
        text = "".join(r.iter_text())
    assert r.status_code == 200 and "[DONE]" in text, text[-500:]
    return stack.last_body()


def test_streamed_arguments_are_the_records_field(streaming: Stack, interactions_streaming_arguments: Stack) -> None:
    """Chat's record asks for streamed arguments and Interactions' does not (its events show each call
    whole); flipping that one field is all it takes to change what Gemini is asked."""
    flag = "streamFunctionCallArguments"
    assert flag in json.dumps(_chat(streaming))
    assert flag not in json.dumps(_interaction(streaming))
    assert flag in json.dumps(_interaction(interactions_streaming_arguments))
