"""Issue 56 item 1: under client keys every Gemini collection is scoped or refused (fail closed).

google-genai 3.x reaches agents, environments, triggers (their executions and runs), webhooks
(`:ping`, `:rotateSigningSecret`), credentials, voices and decisions through its generated `_gaos`
client, on `v1`. The proxy keeps each client key to the objects it created (the record in the
shared store), refuses a body that names another's object before Google is asked, and refuses a
collection it does not know with a 403 naming it and `--passthrough-collection`. Driven by the
SDK's own client against the strict mock, through two real `serve` processes on a real Redis; and
every operation the installed SDK can reach is enumerated from its generated modules, so the next
release cannot open a hole silently.
"""

import importlib
import json
import pathlib
import re
import typing
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from types import UnionType

import pytest
from google import genai
from google.genai import _interactions_errors
from pydantic import BaseModel

from proxy.mock.generated_objects import BUILTIN_AGENTS, DECISION_FIELDS, KINDS
from proxy.server.collections import BUILTIN_AGENT, KNOWN, OWNED
from tests import test_tenant_objects
from tests.harness import Stack
from tests.test_tenant_objects import KEY_A, KEY_B

instances = test_tenant_objects.instances  # the same fixture: two serve processes on one Redis, two keys
warnings.filterwarnings("ignore", message=".*usage is experimental.*")
GAOS = pathlib.Path(importlib.import_module("google.genai._gaos").__file__).parent
GENAI = GAOS.parent


# -- what the installed SDK can reach ------------------------------------------------------------------

def _functions(source: str) -> Iterator[str]:
    """The text of each method of a generated module (one `def` to the next)."""
    yield from re.split(r"\n    (?:async )?def ", source)[1:]


def sdk_operations() -> set[tuple[str, str]]:
    """(method, path) of every operation google-genai's generated modules define, and the fixed
    collection paths of its hand-written modules (files, caches, batches, tunings, file search
    stores, operations, tokens)."""
    ops = set()
    for module in GAOS.glob("*.py"):
        for func in _functions(module.read_text()):
            for m in re.finditer(r'method="(\w+)",\s*path="([^"]+)"', func):
                ops.add((m.group(1), m.group(2)))
    for module in GENAI.glob("*.py"):
        for template in re.findall(r"path = '([^'{][^']*)'", module.read_text()):
            if template in ("test/path", "/"):
                continue
            template = template.replace("{{", "{").replace("}}", "}")
            path = template if template.startswith("upload/") else "{api_version}/" + template
            ops.add(("GET" if "/" in template.removeprefix("upload/{api_version}/") else "POST", "/" + path))
    return ops


def sdk_body_fields(kind: str) -> dict[str, set[str]]:
    """The JSON fields each generated create/update body type of the SDK has (`path` -> fields)."""
    out: dict[str, set[str]] = {}
    module = GAOS / f"{kind}.py"
    for func in _functions(module.read_text()):
        op = re.search(r'method="(\w+)",\s*path="([^"]+)"', func)
        body = re.search(r'"json",\s*(\w+)\.(\w+),', func)
        if op and body:
            types_module = importlib.import_module(f"google.genai._gaos.types.{body.group(1)}")
            out[f"{op.group(1)} {op.group(2)}"] = _fields(getattr(types_module, body.group(2)))
    return out


def _members(tp: typing.Any) -> list[type[BaseModel]]:
    if typing.get_origin(tp) is typing.Annotated:
        return _members(typing.get_args(tp)[0])
    if hasattr(tp, "__value__"):
        return _members(tp.__value__)
    if typing.get_origin(tp) in (typing.Union, UnionType):
        return [m for arg in typing.get_args(tp) for m in _members(arg)]
    return [tp] if isinstance(tp, type) and issubclass(tp, BaseModel) else []


def _fields(tp: typing.Any) -> set[str]:
    return {f.alias or name for model in _members(tp) for name, f in model.model_fields.items()}


def test_the_mock_knows_every_field_the_sdk_sends() -> None:
    """The mock's allowlists are the SDK's own types: a field a new release adds fails here."""
    for collection, kind in KINDS.items():
        bodies = sdk_body_fields(collection)
        create = bodies.pop(f"POST /{{api_version}}/{collection}")
        assert create == set(kind.create), (collection, create ^ kind.create)
        update = next((v for k, v in bodies.items() if k.startswith("PATCH ")), None)
        assert update == (set(kind.update) if kind.update is not None else None), collection
    assert sdk_body_fields("decisions") == {"POST /{api_version}/decisions": set(DECISION_FIELDS)}


def test_google_s_own_agents_are_the_sdk_s() -> None:
    option = importlib.import_module("google.genai._gaos.types.interactions.agentoption").AgentOption
    literal = next(arg for arg in typing.get_args(option) if typing.get_origin(arg) is typing.Literal)
    assert set(typing.get_args(literal)) == set(BUILTIN_AGENTS)
    assert all(BUILTIN_AGENT.match(name) for name in BUILTIN_AGENTS)
    assert not BUILTIN_AGENT.match("my-agent") and not BUILTIN_AGENT.match("antigravity-preview-09-2026x")


@pytest.fixture(scope="module")
def keyed() -> Iterator[Stack]:
    stack = Stack(keys=[KEY_A, KEY_B])
    yield stack
    stack.close()


def _send(url: str, method: str, path: str, key: str | None, body: bytes | None = None,
          kind: str = "application/json") -> tuple[int, dict]:
    headers = {"content-type": kind, **({"x-goog-api-key": key} if key else {})}
    req = urllib.request.Request(url + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw) if raw else {}
    except ValueError:
        return status, {"raw": raw[:200].decode(errors="replace")}


def test_every_operation_the_sdk_can_reach_is_scoped_or_refused(keyed: Stack) -> None:
    """Tenant B names objects it does not own on every path the installed SDK can reach, on v1 and
    v1beta: each is Gemini's 404 or the proxy's 403 before the mock sees it; a collection-level call
    (a list, a create) reaches Google only for a collection the proxy scopes (or Google's own
    models), the rest is refused naming the collection and the option."""
    ops = sdk_operations()
    assert {("POST", "/{api_version}/triggers/{triggerId}/executions"),
            ("POST", "/{api_version}/webhooks/{id}:rotateSigningSecret"),
            ("GET", "/{api_version}/agents"), ("POST", "/{api_version}/decisions")} <= ops, "the SDK moved"
    outcomes: dict[str, list[str]] = {"refused": [], "not found": [], "scoped": [], "stateless": []}
    for method, template in sorted(ops):
        for version in ("v1", "v1beta"):
            path = template.replace("{api_version}", version)
            names_object = "{" in path
            for placeholder in ("{file_search_store_name}", "{parent}"):  # whole resource names
                path = path.replace(placeholder, "fileSearchStores/someone-elses")
            path = re.sub(r"\{[^}]+\}", "someone-elses", path)
            collection = path.split("/")[3 if path.startswith("/upload/") else 2].split(":")[0]
            if collection in ("models", "interactions") and not path.startswith(f"/{version}/interactions/someone"
                                                                                 "-elses/auth_tokens"):
                continue  # served by the proxy itself (generate, countTokens, its own interactions)
            before = len(keyed.seen)
            body = b"{}" if method in ("POST", "PATCH", "PUT") else None
            status, answer = _send(keyed.url, method, path, KEY_B, body)
            reached = len(keyed.seen) > before
            where = f"{method} {path} -> {status} {answer}"
            if reached:  # Google was asked: only for a collection the proxy scopes, and never another's object
                assert collection in KNOWN, f"passed unscoped: {where}"
                assert not (names_object and collection in OWNED), f"another's object reached Google: {where}"
                outcomes["scoped" if collection in OWNED else "stateless"].append(path)
            elif collection not in KNOWN and (version != "v1" or status == 403):  # (v1: or a plain 404)
                # (in the Interactions API's own shape under /interactions: its `code` is the status name)
                assert status == 403 and answer["error"].get("status", answer["error"]["code"]) == \
                    "PERMISSION_DENIED", where
                assert f"'{collection}'" in answer["error"]["message"], where
                assert f"--passthrough-collection {collection}" in answer["error"]["message"], where
                outcomes["refused"].append(path)
            else:  # another's object: Gemini's 404; on v1 a path that is no Gemini collection is not found
                assert status == 404, where
                if collection in KNOWN:
                    assert answer["error"].get("status", answer["error"]["code"]) == "NOT_FOUND", where
                outcomes["not found"].append(path)
    assert all(outcomes.values()), outcomes
    assert any("/auth_tokens" in p for p in outcomes["refused"]) and any(
        "tuningJobs" in p for p in outcomes["refused"]), outcomes["refused"]


def test_a_passed_through_call_without_a_body_is_journaled() -> None:
    """A GET passed through (a list) is an exchange with its call, not a journal error."""
    stack = Stack()
    try:
        status, _ = _send(stack.url, "GET", "/v1/agents", "any-key")
        assert status == 200
        doc = stack.exchange()
        assert doc["path"] == "/v1/agents" and len(doc["upstream"]) == 1, doc
    finally:
        stack.close()


def test_a_made_up_collection_is_refused_under_keys_unless_allowed() -> None:
    path = "/v1beta/gizmos/g1:spin"
    for keys, passthrough, reaches in (([KEY_A], frozenset(), False), ([KEY_A], frozenset({"gizmos"}), True),
                                       (None, frozenset(), True)):
        stack = Stack(keys=keys, passthrough_collections=passthrough)
        try:
            status, answer = _send(stack.url, "POST", path, KEY_A if keys else "any-key", b"{}")
            reached = any("/gizmos/g1:spin" in s for s in stack.seen)
            assert reached is reaches, (keys, passthrough, status, answer)
            if not reaches:
                assert status == 403 and answer["error"]["status"] == "PERMISSION_DENIED", answer
                assert "'gizmos'" in answer["error"]["message"] and "--passthrough-collection gizmos" in \
                    answer["error"]["message"]
        finally:
            stack.close()


# -- two instances on one Redis, google-genai's own client per tenant -------------------------------------

def client(url: str, key: str) -> genai.Client:
    return genai.Client(api_key=key, http_options={"base_url": url})  # the SDK's default version (v1)


def _not_found(call) -> None:
    with pytest.raises(_interactions_errors.NotFoundError) as e:
        call()
    assert e.value.status_code == 404 and e.value.body["error"]["status"] == "NOT_FOUND", e.value.body


def test_agents_environments_and_triggers_are_their_creators(instances: list[str]) -> None:
    a, b, a2 = client(instances[0], KEY_A), client(instances[1], KEY_B), client(instances[1], KEY_A)
    env = a.environments.create(system_instruction="tenant A's sandbox")
    agent = a.agents.create(id="a-payroll-agent", system_instruction="A's secrets", base_environment=env.id)
    trigger = a.triggers.create(schedule="0 * * * *", time_zone="UTC", environment_id=env.id,
                                interaction={"agent": agent.id, "input": "run payroll"})
    # The owner sees and uses them, from either instance.
    assert agent.id in [x.id for x in a2.agents.list().agents]
    assert a2.environments.get(env.id).id == env.id and a2.triggers.get(trigger.id).id == trigger.id
    run = a2.triggers.run(trigger.id)
    assert run.trigger_id == trigger.id
    assert [x.id for x in a.triggers.list_executions(trigger.id).trigger_executions] == [run.id]
    # Another key sees none of them, and reaches none.
    assert not (b.agents.list().agents or []) and not (b.environments.list().environments or [])
    assert not (b.triggers.list().triggers or [])
    for call in (lambda: b.agents.get(agent.id), lambda: b.agents.delete(agent.id),
                 lambda: b.environments.get(env.id), lambda: b.environments.delete(env.id),
                 lambda: b.triggers.get(trigger.id), lambda: b.triggers.update(trigger.id, display_name="mine"),
                 lambda: b.triggers.run(trigger.id), lambda: b.triggers.list_executions(trigger.id),
                 lambda: b.triggers.delete(trigger.id)):
        _not_found(call)
    # Naming A's objects from B's own creates is reaching them too: refused before Google is asked.
    for call in (lambda: b.triggers.create(schedule="0 * * * *", time_zone="UTC", environment_id=env.id,
                                           interaction={"agent": "antigravity-preview-09-2026", "input": "x"}),
                 lambda: b.triggers.create(schedule="0 * * * *", time_zone="UTC",
                                           interaction={"agent": agent.id, "input": "x"}),
                 lambda: b.triggers.create(schedule="0 * * * *", time_zone="UTC",
                                           interaction={"agent": "antigravity-preview-09-2026", "input": "x",
                                                        "previous_interaction_id": run.interaction_id}),
                 lambda: b.agents.create(id="b-copy", base_agent=agent.id),
                 lambda: b.agents.create(id="b-env", base_environment=env.id),
                 lambda: b.environments.create(from_environment=env.id)):
        _not_found(call)
    # Google's own agents are anyone's; B's own objects are B's.
    b_trigger = b.triggers.create(schedule="0 * * * *", time_zone="UTC",
                                  interaction={"agent": "antigravity-preview-09-2026", "input": "x"})
    assert b.triggers.get(b_trigger.id).id == b_trigger.id
    _not_found(lambda: a.triggers.get(b_trigger.id))
    # A continues its own run's interaction; A still holds everything B tried to touch.
    a.triggers.create(schedule="0 * * * *", time_zone="UTC", interaction={
        "agent": agent.id, "input": "again", "previous_interaction_id": run.interaction_id})
    a.triggers.delete(trigger.id)
    a.agents.delete(agent.id)
    assert a2.environments.get(env.id).system_instruction == "tenant A's sandbox"


def test_webhooks_credentials_and_voices_are_their_creators(instances: list[str]) -> None:
    a, b = client(instances[1], KEY_A), client(instances[0], KEY_B)
    hook = a.webhooks.create(uri="https://a.example/hook", subscribed_events=["interaction.completed"])
    cred = a.credentials.create(id="a-github-token", type="bearer_token", token="ghp_tenantA")
    voice = a.voices.create(voice={"type": "prompted", "description": "A's brand voice"}, store=True)
    assert [x.id for x in a.webhooks.list().webhooks] == [hook.id]
    assert [x.id for x in a.credentials.list().credentials] == [cred.id]
    assert voice.id in [x.id for x in a.voices.list().voices]
    assert not (b.webhooks.list().webhooks or []) and not (b.credentials.list().credentials or [])
    assert not (b.voices.list().voices or [])
    for call in (lambda: b.webhooks.get(hook.id), lambda: b.webhooks.ping(hook.id),
                 lambda: b.webhooks.rotate_signing_secret(hook.id),
                 lambda: b.webhooks.update(hook.id, uri="https://b.example/steal"),
                 lambda: b.webhooks.delete(hook.id), lambda: b.credentials.get(cred.id),
                 lambda: b.credentials.update(cred.id, type="bearer_token", token="ghp_b"),
                 lambda: b.credentials.delete(cred.id), lambda: b.voices.get(voice.id),
                 lambda: b.voices.delete(voice.id)):
        _not_found(call)
    a.webhooks.ping(hook.id)
    assert a.webhooks.rotate_signing_secret(hook.id).secret
    assert a.webhooks.get(hook.id).uri == "https://a.example/hook"
    a.webhooks.delete(hook.id)
    a.credentials.delete(cred.id)


def test_a_stateless_decision_passes_but_not_with_another_s_file(instances: list[str]) -> None:
    """decisions keep nothing at Google: any key may call them, but a body naming another tenant's
    file is refused like a generate request's."""
    status, answer = _send(instances[0], "POST", "/v1/decisions", KEY_B, json.dumps(
        {"model": "gemini-3-flash-preview", "input": "is this spam?", "questions": []}).encode())
    assert status == 200 and "answers" in answer, answer
    status, answer = _send(instances[0], "POST", "/v1/decisions", KEY_B, json.dumps(
        {"model": "gemini-3-flash-preview", "questions": [],
         "input": [{"type": "document", "uri": "https://generativelanguage.googleapis.com/v1beta/files/a-s-file"}]}
    ).encode())
    assert status == 404 and answer["error"]["status"] == "NOT_FOUND", answer


def test_a_bad_passthrough_collection_is_one_line_before_anything_listens() -> None:
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-m", "proxy", "serve", "--port", "0", "--upstream", "mock",
                          "--passthrough-collection", "../etc"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run
    assert "--passthrough-collection must name a collection" in run.stderr and "ready" not in run.stdout, run
