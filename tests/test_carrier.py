"""Issue 8 item 8: the stateless carrier is sealed (AES-256-GCM), survives restarts, rotates, and a
forged or tampered one is ignored, never trusted. Issue 24: it opens only for the client (scope) it
was sealed for, and its signatures go only to the model that made them."""

import base64
import json
import os
import stat
import subprocess
import sys
from types import SimpleNamespace

import openai

from proxy.mock.validate import SENTINELS
from proxy.signatures.call_record import CallRecord
from proxy.signatures.carrier import PREFIX, CarrierSeal
from proxy.signatures.carrier_keys import CarrierKeys, load_carrier_keys, new_key, rotate
from tests.harness import Stack
from tests.mitm_harness import ROOT

REC = CallRecord(call_id="call_1", gemini_name="get_weather", name="get_weather", args={"city": "Paris"},
                 signature="REAL-SIGNATURE", gemini_id="g1")


def item(content: str) -> SimpleNamespace:
    return SimpleNamespace(type="reasoning", encrypted_content=content)


def encode_carrier(calls: list[CallRecord], keys: CarrierKeys, scope: str = "", model: str = "m") -> str:
    return CarrierSeal(keys, scope, model).encode(calls)


def decode_carriers(items: list, keys: CarrierKeys, scope: str = "", model: str = "m") -> dict[str, CallRecord]:
    return CarrierSeal(keys, scope, model).decode(items)


def test_sealed_not_readable_and_round_trips() -> None:
    keys = CarrierKeys.ephemeral()
    token = encode_carrier([REC], keys)
    assert token.startswith(PREFIX)
    assert b"REAL-SIGNATURE" not in base64.urlsafe_b64decode(token.rsplit(".", 1)[1] + "==")
    assert "Paris" not in token and "get_weather" not in token
    assert decode_carriers([item(token)], keys)["call_1"].signature == "REAL-SIGNATURE"


def test_a_records_every_field_is_kept_and_read_back() -> None:
    """CallRecord.to_dict (what the store and carriers keep) names every field, so a field added to the
    record is never left out of what is kept; from_dict reads each back."""
    from dataclasses import fields
    full = CallRecord("c1", "ls", "ls_g", "gid", "sig", {"path": [1, {"deep": 10**30}]},
                      [{"toolCall": {"id": "t"}}], "gemini-3-flash-preview")
    assert set(full.to_dict()) == {f.name for f in fields(CallRecord)}
    assert CallRecord.from_dict(json.loads(json.dumps(full.to_dict()))) == full
    bare = CallRecord("c2", "ls", "ls", None, None)
    assert CallRecord.from_dict(bare.to_dict()) == bare and "server_parts" not in bare.to_dict()


def test_tampered_forged_and_foreign_carriers_are_ignored() -> None:
    keys = CarrierKeys.ephemeral()
    token = encode_carrier([REC], keys)
    head, body = token.rsplit(".", 1)
    flipped = body[:20] + ("A" if body[20] != "A" else "B") + body[21:]
    forged_v1 = "gtp.v1." + base64.urlsafe_b64encode(json.dumps([{**REC.to_dict(), "signature": "FORGED"}])
                                                      .encode()).decode()
    for bad in (head + "." + flipped, head + "." + body[:-4], token.replace(head.split(".")[-1], "deadbeef"),
                forged_v1, PREFIX + "x", PREFIX, "gtp.v3.....", encode_carrier([REC], CarrierKeys.ephemeral()),
                token.replace(PREFIX, "gtp.v2.", 1)):
        assert decode_carriers([item(bad)], keys) == {}, bad


def test_rotation_keeps_old_carriers_opening(tmp_path) -> None:
    path = tmp_path / "carrier-keys"
    first = load_carrier_keys([], path, env={})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    old_token = encode_carrier([REC], first)
    again = load_carrier_keys([], path, env={})  # a restart, or a second instance sharing the file
    assert decode_carriers([item(old_token)], again)["call_1"].signature == "REAL-SIGNATURE"
    rotated = rotate(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and rotated.count == 2
    assert decode_carriers([item(old_token)], rotated)  # the old key still opens
    new_token = encode_carrier([REC], rotated)
    assert decode_carriers([item(new_token)], rotated) and not decode_carriers([item(new_token)], first)


def test_configured_keys_win_and_bad_keys_are_refused(tmp_path) -> None:
    k = new_key()
    a = load_carrier_keys([k], tmp_path / "unused", env={})
    b = load_carrier_keys([], tmp_path / "unused", env={"GTP_CARRIER_KEYS": f"{new_key()},{k}"})
    assert decode_carriers([item(encode_carrier([REC], a))], b)
    assert not (tmp_path / "unused").exists()
    for bad in ("short", "!" * 43, base64.urlsafe_b64encode(b"x" * 16).decode()):
        try:
            CarrierKeys([bad])
        except ValueError as e:
            assert "32 bytes" in str(e)
        else:
            raise AssertionError(bad)


def test_carrier_key_command(tmp_path) -> None:
    path = tmp_path / "k"
    run = [sys.executable, "-m", "proxy", "carrier-key", "--file", str(path)]
    assert "1 key(s)" in subprocess.run(run, capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert "2 key(s)" in subprocess.run([*run, "--rotate"], capture_output=True, text=True, cwd=ROOT,
                                        check=True).stdout
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


def test_forged_carrier_through_the_front_end_is_not_trusted() -> None:
    """A stateless client replays a carrier it altered: Gemini gets the sentinel, not its signature."""
    stack = Stack()
    try:
        c = openai.OpenAI(base_url=stack.url + "/v1", api_key="k", _strict_response_validation=True, max_retries=0)
        tool = {"type": "function", "name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
        items = [{"role": "user", "content": "call get_weather city=Paris"}]
        first = c.responses.create(model="gemini-3-flash-preview", input=items, tools=[tool], store=False,
                                   include=["reasoning.encrypted_content"], extra_headers={"x-gtp-session": "s1"})
        call = next(o for o in first.output if o.type == "function_call")
        carrier = next(o for o in first.output if o.type == "reasoning").encrypted_content
        forged = "gtp.v1." + base64.urlsafe_b64encode(json.dumps([{
            "call_id": call.call_id, "gemini_name": "get_weather", "name": "get_weather",
            "args": {"city": "Paris"}, "signature": "FORGED-SIGNATURE"}]).encode()).decode()
        for replay in (forged, carrier[:-6] + "AAAAAA"):
            replayed = [*items, {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": replay},
                        call.model_dump(exclude_none=True),
                        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
            # Another session: this process's own records cannot help, only the carrier could.
            r = c.responses.create(model="gemini-3-flash-preview", input=replayed, tools=[tool], store=False,
                                   include=["reasoning.encrypted_content"], extra_headers={"x-gtp-session": "s2"})
            assert r.status == "completed"
            sent = [p for content in stack.last_body()["contents"] for p in content["parts"] if "functionCall" in p]
            assert sent[0]["thoughtSignature"] in SENTINELS
        # The genuine carrier does restore Gemini's own signature.
        replayed = [*items, {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": carrier},
                    call.model_dump(exclude_none=True),
                    {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
        c.responses.create(model="gemini-3-flash-preview", input=replayed, tools=[tool], store=False,
                           include=["reasoning.encrypted_content"], extra_headers={"x-gtp-session": "s3"})
        sent = [p for content in stack.last_body()["contents"] for p in content["parts"] if "functionCall" in p]
        assert sent[0]["thoughtSignature"] not in SENTINELS
    finally:
        stack.close()


def test_a_carrier_opens_only_for_its_scope_and_signs_only_for_its_model() -> None:
    keys = CarrierKeys.ephemeral()
    token = encode_carrier([REC], keys, scope="tenant-a", model="gemini-3-flash-preview")
    assert decode_carriers([item(token)], keys, "tenant-a", "gemini-3-flash-preview")["call_1"].signature == \
        "REAL-SIGNATURE"
    assert decode_carriers([item(token)], keys, "tenant-b", "gemini-3-flash-preview") == {}, "another tenant's"
    assert decode_carriers([item(token)], keys, "", "gemini-3-flash-preview") == {}, "a keyless client's"
    other = decode_carriers([item(token)], keys, "tenant-a", "gemini-3-pro-preview")["call_1"]
    assert other.signature is None and other.gemini_name == "get_weather", "the call, without the signature"


def _tool_loop(c: openai.OpenAI, stack: Stack, carrier_from: openai.OpenAI, model: str, replay_model: str,
               session: str) -> str | None:
    """One client makes a call (sealed carrier), another replays it: the signature Gemini then gets."""
    tool = {"type": "function", "name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    items = [{"role": "user", "content": "call get_weather city=Paris"}]
    first = carrier_from.responses.create(model=model, input=items, tools=[tool], store=False,
                                          include=["reasoning.encrypted_content"],
                                          extra_headers={"x-gtp-session": session + "-a"})
    call = next(o for o in first.output if o.type == "function_call")
    carrier = next(o for o in first.output if o.type == "reasoning").encrypted_content
    replayed = [*items, {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": carrier},
                call.model_dump(exclude_none=True),
                {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
    r = c.responses.create(model=replay_model, input=replayed, tools=[tool], store=False,
                           include=["reasoning.encrypted_content"], extra_headers={"x-gtp-session": session + "-b"})
    assert r.status == "completed"
    sent = [p for content in stack.last_body()["contents"] for p in content["parts"] if "functionCall" in p]
    return sent[0].get("thoughtSignature")


def test_another_tenant_replaying_a_carrier_gets_the_sentinel() -> None:
    keys = ["tenant-a-key-0123456789abcdef", "tenant-b-key-0123456789abcdef"]
    stack = Stack(keys=keys)
    try:
        a, b = (openai.OpenAI(base_url=stack.url + "/v1", api_key=k, _strict_response_validation=True,
                              max_retries=0) for k in keys)
        model = "gemini-3-flash-preview"
        assert _tool_loop(a, stack, a, model, model, "own") not in SENTINELS, "its own client: Gemini's signature"
        assert _tool_loop(b, stack, a, model, model, "foreign") in SENTINELS, "another tenant: as if forged"
    finally:
        stack.close()


def test_a_carrier_replayed_to_another_model_sends_the_sentinel() -> None:
    """Signatures are bound to their model (Gemini answers another model's with 400 "Corrupted thought
    signature"): replayed to another model, the call goes with the sentinel, and the mock accepts it."""
    stack = Stack()
    try:
        c = openai.OpenAI(base_url=stack.url + "/v1", api_key="k", _strict_response_validation=True, max_retries=0)
        assert _tool_loop(c, stack, c, "gemini-3-flash-preview", "gemini-3-pro-preview", "models") in SENTINELS
    finally:
        stack.close()
