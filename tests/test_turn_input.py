"""A Responses turn's stored input is serialized before the upstream call (entry_store.TurnInput)
and spliced into the stored response, never serialized again. The conftest checks, for every turn
stored during the run, that the document reads back as the whole turn serialized at the end."""

import asyncio
from typing import Any

import pytest

from proxy import fast_json
from proxy.errors import ProxyError
from proxy.store import MemoryStore, entry_store
from proxy.store.base import StoredResponse
from proxy.store.entry_store import _response_doc

USER = {"role": "user", "parts": [{"text": "Weather in Paris?"}]}
CALL = {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                                    "thoughtSignature": "c2ln"}]}
ITEMS = [{"type": "message", "role": "user", "content": "Weather in Paris?"}]


def _stored(contents: list[dict[str, Any]], items: list[Any] = ITEMS, system: list[Any] | None = None
            ) -> StoredResponse:
    return StoredResponse(id="resp_1", response={"id": "resp_1", "status": "completed", "output": []},
                          contents=contents, system=system or [], pending=["call_1"], parent=None, input=items)


@pytest.mark.parametrize("added,turn", [([USER], CALL), ([USER], None), ([], CALL), ([], None),
                                        ([USER, CALL, USER], CALL)])
def test_a_spliced_document_reads_back_as_the_whole_one(added: list[Any], turn: dict[str, Any] | None) -> None:
    system = [{"text": "Be brief."}]
    known = MemoryStore().turn_input(added, system, ITEMS, "This turn's input", "input")
    stored = _stored(added + ([turn] if turn else []), system=system)
    doc = _response_doc(stored, known)
    read_back = fast_json.loads(fast_json.dumps(vars(entry_store.read_response(doc))))  # its input items whole again
    assert read_back == fast_json.loads(fast_json.dumps(vars(stored)))


def test_the_known_input_is_spliced_in_not_serialized_again() -> None:
    sent = [{"type": "message", "role": "user", "content": "as sent"}]
    known = MemoryStore().turn_input([USER], [], sent, "x", "input")
    doc = fast_json.loads(_response_doc(_stored([USER, CALL]), known))
    assert doc["input"][0]["content"] == "as sent" and doc["contents"] == [USER, CALL]


def test_a_number_past_64_bits_survives_the_store() -> None:
    """The standard library writes what orjson cannot (marked by a leading space): such text is
    never spliced into orjson's output, whose reader would make the number a float."""
    big = [{"type": "function_call_output", "call_id": "call_1", "output": {"n": 2**70}}]
    for items, turn in ((big, CALL), (ITEMS, {"role": "model", "parts": [{"text": "ok", "n": 2**70}]})):
        known = MemoryStore().turn_input([USER], [], items, "x", "input")
        stored = _stored([USER, turn], items)
        store = MemoryStore()
        asyncio.run(store.put_response("s", stored, known=known))
        again = asyncio.run(store.get_response("s", "resp_1"))
        assert again is not None and vars(again) == vars(stored)


def test_an_input_too_large_to_keep_is_refused_with_its_size() -> None:
    store = MemoryStore(max_bytes=10_000, session_bytes=1_000)
    with pytest.raises(ProxyError) as e:
        store.turn_input([{"role": "user", "parts": [{"text": "x" * 2_000}]}], [], ITEMS, "This turn's input", "input")
    assert e.value.status == 413 and e.value.param == "input" and "too large to keep" in e.value.message


def test_a_long_input_is_stored_once_and_read_back_whole() -> None:
    """Issue 62: a 40 KB message was kept twice (as its input item and as a Gemini content)."""
    text = "a long message " * 3000
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
             {"type": "message", "role": "user", "content": "short"}]
    for sent, contents in ((text, [{"role": "user", "parts": [{"text": text}]}]),
                           (items, [{"role": "user", "parts": [{"text": text}, {"text": "short"}]}])):
        store = MemoryStore()
        known = store.turn_input(contents, [], sent, "This turn's input", "input")
        assert len(known.input) < 200 and text.encode() not in known.input  # the string is in the contents only
        stored = _stored(contents + [{"role": "model", "parts": [{"text": "ok"}]}], items=sent)
        doc = _response_doc(stored, known)
        assert len(text) < len(doc) < len(text) + 1000
        assert sent is not items or sent[0]["content"][0]["text"] == text  # what was sent is not changed
        asyncio.run(store.put_response("s", stored, known=known))
        back = asyncio.run(store.get_response("s", "resp_1"))
        assert back.input == sent and back.input_shared is None
        assert back.contents == stored.contents
