"""The mock calls the one declared tool a plain question is about ("Weather in Paris?" -> get_weather),
so the README's first example reads naturally; it stays narrow, so prompts that merely share a word
with a tool among many, or carry directives, keep their text answers."""

from proxy.mock.model import respond


def _tool(name: str, description: str = "") -> dict:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def _answer(text: str, *tools: dict, mode: str = "AUTO") -> list[dict]:
    body = {"contents": [{"role": "user", "parts": [{"text": text}]}], "tools": [{"functionDeclarations": list(tools)}],
            "toolConfig": {"functionCallingConfig": {"mode": mode}}}
    return [p for c in respond(body, "gemini-2.5-flash").chunks for cand in c.get("candidates", [])
            for p in cand["content"]["parts"]]


def test_a_plain_question_calls_the_tool_it_is_about() -> None:
    [part] = _answer("Weather in Paris?", _tool("get_weather", "Weather for a city"), _tool("send_email", "Mail"))
    assert part["functionCall"]["name"] == "get_weather"


def test_the_description_counts_and_key_value_fills_arguments() -> None:
    [part] = _answer("How warm is it? city=Lyon", _tool("lookup", "Temperature and warm spells"))
    assert part["functionCall"] == {"name": "lookup", "args": {"city": "Lyon"}}


def test_two_matching_tools_several_lines_or_directives_keep_the_text_answer() -> None:
    both = (_tool("get_weather"), _tool("weather_alerts"))
    for text, tools in (("Weather in Paris?", both), ("Weather in Paris?\nand more", both[:1]),
                        ("Weather in Paris? [[mock:slow 0]]", both[:1]), ("Say hello", both[:1])):
        assert all("text" in p for p in _answer(text, *tools)), text


def test_a_catalogue_of_tools_is_not_matched_against() -> None:
    many = [_tool("get_weather")] + [_tool(f"tool_{i}") for i in range(40)]
    assert all("text" in p for p in _answer("Weather in Paris?", *many))
