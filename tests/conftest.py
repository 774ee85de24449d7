import json
import os
from pathlib import Path

import openai
import pytest
from hypothesis import settings

from proxy import fast_json
from proxy.responses import routes as responses_routes
from proxy.store import entry_store
from proxy.to_gemini import kept_conversion
from proxy.tools import prepare_tools
from proxy.wire import resent_items
from tests.harness import Stack
from tests.shared_tools_check import changed_kept_conversions, changed_resent_items, changed_shared_tools

# CI must be reproducible: hypothesis explores from a fixed seed there (derandomize) and keeps no
# example database between runs; locally it keeps searching at random. HYPOTHESIS_PROFILE picks one.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tool-schemas"


def fixture_dir() -> Path:
    """The corpus of real clients' tool schemas (tests/fixtures/tool-schemas: its README says where each came from)."""
    return FIXTURES


def fixture_tools() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(fixture_dir().glob("*.json")):
        for entry in json.loads(path.read_text()):
            if entry.get("parameters") is not None or "nonfunction" not in path.name:
                out.append((f"{path.stem}:{entry['name']}", entry))
    return out


@pytest.fixture(autouse=True, scope="session")
def cached_tool_lists_stay_unchanged():
    """Every tool list prepare_tools caches during the whole run, checked at its end: the schemas in
    it are shared by later requests, so no route, translator or upstream may have changed them."""
    kept: list[tuple[prepare_tools._Prepared, bytes]] = []
    original = prepare_tools._Prepared.keep

    def keep(p: prepare_tools.PreparedTools) -> prepare_tools._Prepared:
        entry = original(p)
        kept.append((entry, _state(entry)))
        return entry

    prepare_tools._Prepared.keep = keep  # type: ignore[method-assign]
    yield
    prepare_tools._Prepared.keep = original  # type: ignore[method-assign]
    changed = [json.loads(before) for entry, before in kept if _state(entry) != before]
    assert not changed, f"a cached tool list was changed in place: {changed[0]}"


def _state(entry) -> bytes:
    return fast_json.dumps([entry.declarations, entry.echo, entry.schemas])


@pytest.fixture(autouse=True, scope="session")
def stored_turns_are_what_serializing_them_whole_gives():
    """Every Responses turn stored during the run, its input spliced in as serialized before the
    upstream call (entry_store.TurnInput), reads back as the whole turn serialized at the end would:
    nothing changed the turn's contents, system parts or input items while Gemini was asked. And a
    whole answer sent as the bytes stored with it (Turn.answer_json) is the response as it is then."""
    original, answer = entry_store._response_doc, responses_routes.json_answer

    def checked(stored, known, response_json=None):
        doc = original(stored, known, response_json)
        if known is not None:
            read_back = fast_json.loads(fast_json.dumps(vars(entry_store.read_response(doc))))  # items whole again
            assert read_back == fast_json.loads(fast_json.dumps(vars(stored))), stored.id
        return doc

    def checked_answer(data, status=200, headers=None, text=None):
        if text is not None:
            assert fast_json.loads(text) == fast_json.loads(fast_json.dumps(data))
        return answer(data, status, headers, text)

    entry_store._response_doc, responses_routes.json_answer = checked, checked_answer
    yield
    entry_store._response_doc, responses_routes.json_answer = original, answer


@pytest.fixture(autouse=True, scope="session")
def every_history_is_resent():
    """In-process stacks take every Responses, Chat and Anthropic history through wire/resent_items.py,
    however short (tests' histories mostly are): the check below then sees what each route does with
    the items it shares (a `serve` subprocess keeps the real threshold; test_resent_items.py tests it),
    and every history of two items or more continues the conversion of its client's last one
    (to_gemini/kept_conversion.py; MIN_ITEMS alike)."""
    saved = resent_items.RESENT_MIN_BYTES, kept_conversion.MIN_ITEMS
    resent_items.RESENT_MIN_BYTES, kept_conversion.MIN_ITEMS = 0, 2
    yield
    resent_items.RESENT_MIN_BYTES, kept_conversion.MIN_ITEMS = saved


@pytest.fixture(autouse=True)
def shared_tools_stay_unchanged():
    """After each test, every tool list kept by wire/shared_tools.py (and each wire model's checked
    copy) still equals the text it was parsed from: later requests of any client key get them."""
    yield
    changed = changed_shared_tools() + changed_resent_items() + changed_kept_conversions()
    assert not changed, f"changed in place: {changed[0]}"


@pytest.fixture(scope="session")
def stack():
    s = Stack()
    yield s
    s.close()


@pytest.fixture
def client(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.url}/v1", api_key="test-key", _strict_response_validation=True,
                         max_retries=0)


WEATHER = {"type": "function", "name": "get_weather", "description": "Current weather for a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                          "additionalProperties": False}, "strict": True}
TIME = {"type": "function", "name": "get_time", "description": "Local time in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                        "format": {"type": "string", "enum": ["12h", "24h"]}},
                       "required": ["city"]}}
