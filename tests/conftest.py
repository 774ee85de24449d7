import json
from pathlib import Path

import openai
import pytest

from tests.harness import Stack

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "tool-schemas"
LOCAL_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tool-schemas"


def fixture_dir() -> Path:
    """The shared tool-schema corpus (../shared in CI and on developer machines), else a vendored copy."""
    return FIXTURES if FIXTURES.is_dir() else LOCAL_FIXTURES


def fixture_tools() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(fixture_dir().glob("*.json")):
        for entry in json.loads(path.read_text()):
            if entry.get("parameters") is not None or "nonfunction" not in path.name:
                out.append((f"{path.stem}:{entry['name']}", entry))
    return out


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
