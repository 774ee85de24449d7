"""The translators' events are TypedDicts named after the official SDKs' classes (responses/events.py,
anthropic/events.py, interactions/events.py): their keys are the SDK models' fields, and mypy checks
every emission, so a misspelt field is a type error here, not a client's parse failure."""

import subprocess
import sys
import textwrap
import types
import typing
from pathlib import Path

import anthropic.types
import anthropic.types.beta
import google.genai.interactions
import openai.types.responses
import pytest

from proxy.anthropic import events as anthropic_events
from proxy.interactions import events as interactions_events
from proxy.responses import events as responses_events

ROOT = Path(__file__).resolve().parents[1]

# module, the union of its events, where the SDK keeps their classes, the discriminating field
PROTOCOLS = [
    (responses_events, responses_events.ResponsesEvent, [openai.types.responses], "type"),
    (anthropic_events, anthropic_events.AnthropicEvent, [anthropic.types, anthropic.types.beta], "type"),
    (interactions_events, interactions_events.InteractionsEvent, [google.genai.interactions], "event_type"),
]

# Type-checked: the translators, their events and the writers that frame them.
CHECKED = [
    "proxy/responses/events.py", "proxy/responses/translator.py", "proxy/responses/stream_writer.py",
    "proxy/anthropic/events.py", "proxy/anthropic/translator.py", "proxy/anthropic/stream_writer.py",
    "proxy/interactions/events.py", "proxy/interactions/translator.py", "proxy/interactions/stream_writer.py",
    "proxy/server/translator_writer.py",
]


def typed_dicts(module: types.ModuleType) -> list[type]:
    return [v for v in vars(module).values()
            if typing.is_typeddict(v) and v.__module__ == module.__name__ and not v.__name__.startswith("_")]


def sdk_class(name: str, homes: list[types.ModuleType]) -> type:
    for home in homes:
        if hasattr(home, name):
            return getattr(home, name)
    raise AssertionError(f"{name} is no class of the SDK ({', '.join(h.__name__ for h in homes)})")


CASES = [pytest.param(td, homes, tag, id=f"{module.__name__.split('.')[1]}.{td.__name__}")
         for module, _, homes, tag in PROTOCOLS for td in typed_dicts(module)]


@pytest.mark.parametrize(("td", "homes", "tag"), CASES)
def test_event_has_the_sdk_class_fields(td: type, homes: list[types.ModuleType], tag: str) -> None:
    """Same name, same keys (by their wire names), the same required ones (the discriminator always:
    google-genai's pydantic models default it, its own TypedDicts require it), the same event kind."""
    model = sdk_class(td.__name__, homes)
    fields = {(f.alias or n): f for n, f in model.model_fields.items()}
    keys = td.__required_keys__ | td.__optional_keys__
    assert keys == set(fields), f"{td.__name__}: only ours {keys - set(fields)}, only the SDK's {set(fields) - keys}"
    required = {n for n, f in fields.items() if f.is_required()} | {tag}
    assert td.__required_keys__ == required, td.__name__
    hints = typing.get_type_hints(td)
    assert typing.get_args(hints[tag]) == typing.get_args(fields[tag].annotation), td.__name__


@pytest.mark.parametrize(("module", "union"), [(m, u) for m, u, _, _ in PROTOCOLS],
                         ids=lambda x: getattr(x, "__name__", ""))
def test_union_holds_every_event(module: types.ModuleType, union: object) -> None:
    assert set(typing.get_args(union)) == set(typed_dicts(module))


# A file with the mistakes the types are there to catch, each on its own line (# E: what mypy's error names).
MISTAKES = '''\
from proxy.anthropic.events import AnthropicEvent, RawContentBlockDeltaEvent
from proxy.interactions.events import StepDelta
from proxy.responses.events import ResponsesEvent, ResponseTextDeltaEvent

a = ResponseTextDeltaEvent(type="response.output_text.delta", sequence_number=0, item_idd="msg_1", output_index=0, content_index=0, delta="x", logprobs=[])  # E: item_idd
b = ResponseTextDeltaEvent(type="response.output_text.delta", sequence_number=0, item_id="msg_1", output_index=0, content_index=0, delta="x")  # E: logprobs
c = RawContentBlockDeltaEvent(type="content_block_delta", indx=0, delta={})  # E: indx
d = StepDelta(event_type="step.delta", index=0, delta={}, event_idd="0.1")  # E: event_idd
e: ResponsesEvent = {"type": "response.output_text.delta", "sequence_number": 0, "item_id": "m", "output_index": 0, "content_index": 0, "delta": "x", "logprob": []}  # E: [assignment]
f: AnthropicEvent = {"type": "content_block_stopp", "index": 0}  # E: content_block_stopp
g = StepDelta(event_type="step.deltas", index=0, delta={})  # E: step.deltas
'''  # noqa: E501


# Matched by name: mypy replays a cached module's errors under the path it had when they were found.
MISTAKES_FILE = "typed_events_mistakes.py"


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One mypy run over the checked files and the mistakes (about 4 s of CPU cold, 1 s with its cache
    in .cache/mypy; imports outside the checked files are read, their errors not reported)."""
    mistakes = tmp_path_factory.mktemp("typed") / MISTAKES_FILE
    mistakes.write_text(textwrap.dedent(MISTAKES))
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports",
         "--cache-dir", str(ROOT / ".cache" / "mypy"), "--no-error-summary", "--show-error-codes",
         *CHECKED, str(mistakes)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr  # 1: errors found (the mistakes'); 2: mypy itself failed
    return out.stdout, mistakes


def test_translators_type_check(mypy_run: tuple[str, Path]) -> None:
    stdout, mistakes = mypy_run
    ours = [line for line in stdout.splitlines() if line.startswith("proxy/")]
    assert ours == [], "\n".join(ours)


def test_a_misspelt_field_is_a_type_error(mypy_run: tuple[str, Path]) -> None:
    stdout, mistakes = mypy_run
    reported: dict[int, str] = {}
    for line in stdout.splitlines():
        if f"{MISTAKES_FILE}:" in line and ": error:" in line:
            n = int(line.split(f"{MISTAKES_FILE}:")[1].split(":")[0])
            reported[n] = reported.get(n, "") + line
    for n, line in enumerate(textwrap.dedent(MISTAKES).splitlines(), start=1):
        if "# E: " in line:
            assert n in reported, f"mypy let line {n} through: {line}"
            assert line.split("# E: ")[1] in reported[n], reported[n]
        else:
            assert n not in reported, reported[n]
