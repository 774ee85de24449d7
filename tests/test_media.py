"""Images and files: in user messages and in tool results, through the openai SDK (strict) to the mock,
in the form each model takes (issue 9, item 1). The mock refuses `functionResponse.parts` on 2.5
and broken base64 / MIME types as Gemini does, so a wrong form fails here."""

import base64
import json

import openai
import pytest

from proxy.mock.validate import RESPONSE_PARTS_REFUSED
from proxy.to_gemini.tool_result_media import media_as_siblings, parse_media_rules, parts_in_results
from tests.conftest import WEATHER

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(64))).decode()
PDF = base64.b64encode(b"%PDF-1.4 a tiny pdf").decode()
DATA_URL = f"data:image/png;base64,{PNG}"
CHAT_WEATHER = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k not in ("type", "strict")}}


def _media_parts(body: dict) -> list[dict]:
    return [p for c in body["contents"] for p in c["parts"] if "inlineData" in p or "fileData" in p]


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-flash-preview"])
def test_responses_user_image_and_file(client: openai.OpenAI, stack, model: str) -> None:
    r = client.responses.create(model=model, input=[{"role": "user", "content": [
        {"type": "input_text", "text": "what is this"},
        {"type": "input_image", "image_url": DATA_URL, "detail": "auto"},
        {"type": "input_file", "filename": "notes.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
        {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "low"},
        {"type": "input_file", "file_url": "gs://bucket/report.pdf"}]}])
    assert r.status == "completed"
    user = stack.last_body()["contents"][0]["parts"]
    assert user == [{"text": "what is this"},
                    {"inlineData": {"mimeType": "image/png", "data": PNG}},
                    {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
                    {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.jpg"}},
                    {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://bucket/report.pdf"}}]
    assert "saw [image/png (72 bytes), application/pdf" in r.output_text


def test_chat_user_image_and_audio(client: openai.OpenAI, stack) -> None:
    wav = base64.b64encode(b"RIFF....WAVEfmt ").decode()
    r = client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": [
        {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": DATA_URL}},
        {"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}},
        {"type": "file", "file": {"filename": "a.pdf", "file_data": f"data:application/pdf;base64,{PDF}"}}]}])
    assert "saw [image/png" in r.choices[0].message.content
    assert [p for p in stack.last_body()["contents"][0]["parts"] if "inlineData" in p] == [
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"inlineData": {"mimeType": "audio/wav", "data": wav}},
        {"inlineData": {"mimeType": "application/pdf", "data": PDF}}]


def _responses_tool_loop(client: openai.OpenAI, model: str) -> openai.types.responses.Response:
    r1 = client.responses.create(model=model, input="call get_weather city=Oslo", tools=[WEATHER])
    [call] = [o for o in r1.output if o.type == "function_call"]
    return client.responses.create(model=model, previous_response_id=r1.id, tools=[WEATHER], input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": [
            {"type": "input_text", "text": "radar image:"},
            {"type": "input_image", "image_url": DATA_URL, "detail": "auto"},
            {"type": "input_file", "file_url": "https://example.com/forecast.pdf"}]}])


def test_tool_result_media_in_function_response_parts_on_gemini3(client: openai.OpenAI, stack) -> None:
    r = _responses_tool_loop(client, "gemini-3-flash-preview")
    assert r.status == "completed"
    [fr] = [p["functionResponse"] for p in stack.last_body()["contents"][-1]["parts"]]
    labels = [next(iter(m.values()))["displayName"] for m in fr["parts"]]
    assert fr["response"] == {"output": "radar image:", "attachments": [{"$ref": lbl} for lbl in labels]}
    assert fr["parts"][0]["inlineData"]["data"] == PNG and fr["parts"][0]["inlineData"]["mimeType"] == "image/png"
    assert fr["parts"][1]["fileData"]["fileUri"] == "https://example.com/forecast.pdf"
    assert "with parts [image/png (72 bytes), application/pdf at https://example.com/forecast.pdf]" in r.output_text


def test_tool_result_media_as_siblings_on_gemini25(client: openai.OpenAI, stack) -> None:
    r = _responses_tool_loop(client, "gemini-2.5-flash")
    assert r.status == "completed"
    body = stack.last_body()
    assert not any("parts" in p.get("functionResponse", {}) for c in body["contents"] for p in c["parts"])
    last = body["contents"][-1]["parts"]
    assert "functionResponse" in last[0] and last[0]["functionResponse"]["response"]["output"] == "radar image:"
    assert last[1]["text"].startswith("Attachment ") and last[2] == {"inlineData": {"mimeType": "image/png",
                                                                                   "data": PNG}}
    assert last[4] == {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/forecast.pdf"}}
    assert "after them [image/png (72 bytes)" in r.output_text


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview"])
def test_chat_tool_message_with_image(client: openai.OpenAI, stack, model: str) -> None:
    messages = [{"role": "user", "content": "call get_weather city=Rome"}]
    r1 = client.chat.completions.create(model=model, messages=messages, tools=[CHAT_WEATHER])
    msg = r1.choices[0].message
    result = [{"type": "text", "text": "map"}, {"type": "image_url", "image_url": {"url": DATA_URL}}]
    messages += [msg.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": result}]
    r2 = client.chat.completions.create(model=model, messages=messages, tools=[CHAT_WEATHER])
    assert "image/png (72 bytes)" in r2.choices[0].message.content
    in_parts = any("parts" in p.get("functionResponse", {}) for p in stack.last_body()["contents"][-1]["parts"])
    assert in_parts == model.startswith("gemini-3")  # a 2.5 model never receives functionResponse.parts


@pytest.mark.parametrize("bad, param", [
    ({"type": "input_image", "image_url": "data:image/png;base64,not base64!!"}, "input[0].content[0].image_url"),
    ({"type": "input_image", "image_url": "data:nonsense;base64," + PNG}, "input[0].content[0].image_url"),
    ({"type": "input_image", "file_id": "file-123"}, "input[0].content[0].file_id"),
    ({"type": "input_image", "image_url": "ftp://example.com/x.png"}, "input[0].content[0].image_url"),
    ({"type": "input_file", "file_url": "https://example.com/no-extension"}, "input[0].content[0].file_url"),
    ({"type": "input_file", "filename": "x.unknownext", "file_data": PDF}, "input[0].content[0].file_data"),
    ({"type": "input_video", "url": "x"}, "input[0].content[0]"),
])
def test_unrepresentable_media_is_a_400_naming_the_part(client: openai.OpenAI, stack, bad: dict, param: str) -> None:
    before = stack.accepted
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gemini-2.5-flash", input=[{"role": "user", "content": [bad]}])
    assert e.value.body["param"] == param and param in e.value.body["message"]
    assert stack.accepted == before


def test_chat_bad_image_names_the_message_part(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="gemini-2.5-flash", messages=[
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,%%%"}}]}])
    assert e.value.body["param"] == "messages[0].content[0].image_url"


def test_media_in_a_system_message_is_refused(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gemini-2.5-flash", input=[
            {"role": "developer", "content": [{"type": "input_image", "image_url": DATA_URL}]},
            {"role": "user", "content": "hi"}])
    assert e.value.body["param"] == "input[0].content[0]"


def test_native_paths_convert_parts_for_25_and_mock_refuses_them(stack) -> None:
    """A Gemini-native client sending functionResponse.parts to 2.5 gets the sibling form; sent raw,
    the mock (like Gemini) refuses it."""
    from google import genai
    from google.genai import types
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}
    answer = {"functionResponse": {"name": "get_weather", "response": {"output": "see image"},
                                   "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}]}}
    contents = [{"role": "user", "parts": [{"text": "weather?"}]}, {"role": "model", "parts": [call]},
                {"role": "user", "parts": [answer]}]
    tools = [{"functionDeclarations": [{"name": "get_weather", "parameters": {
        "type": "OBJECT", "properties": {"city": {"type": "STRING"}}}}]}]
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=stack.url))
    r = client.models.generate_content(model="gemini-2.5-flash", contents=contents,
                                       config=types.GenerateContentConfig(tools=tools))
    assert "after them [image/png (72 bytes)]" in r.text
    direct = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=stack.mock_url))
    with pytest.raises(genai.errors.ClientError) as e:
        direct.models.generate_content(model="gemini-2.5-flash", contents=contents,
                                       config=types.GenerateContentConfig(tools=tools))
    assert e.value.code == 400 and RESPONSE_PARTS_REFUSED in str(e.value)


def test_mock_refuses_bad_base64_and_mime(stack) -> None:
    import urllib.error
    import urllib.request
    for blob, expect in (({"mimeType": "image/png", "data": "@@@"}, "Base64 decoding failed"),
                         ({"mimeType": "png", "data": PNG}, "Unsupported MIME type: png")):
        body = {"contents": [{"role": "user", "parts": [{"text": "x"}, {"inlineData": blob}]}]}
        req = urllib.request.Request(f"{stack.mock_url}/v1beta/models/gemini-2.5-flash:generateContent",
                                     data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json", "x-goog-api-key": "k"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req)
        assert e.value.code == 400 and expect in e.value.read().decode()


def test_rules_and_sibling_rewrite() -> None:
    assert parts_in_results("gemini-3-pro-preview") and parts_in_results("gemini-4-ultra")
    assert not parts_in_results("gemini-2.5-pro") and not parts_in_results("gemma-3-27b-it")
    rules = parse_media_rules(["gemini-2.5-pro=parts", "gemini-3*=siblings"])
    assert parts_in_results("gemini-2.5-pro", rules) and not parts_in_results("gemini-3-flash", rules)
    with pytest.raises(ValueError, match="parts' or 'siblings"):
        parse_media_rules(["gemini-3*=inline"])
    contents = [{"role": "user", "parts": [
        {"functionResponse": {"name": "a", "id": "1", "response": {"output": "x", "attachments": [{"$ref": "1-1.png"}]},
                              "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG,
                                                        "displayName": "1-1.png"}}]}},
        {"functionResponse": {"name": "b", "response": {"output": "y"}}}]}]
    media_as_siblings(contents)
    parts = contents[0]["parts"]
    assert [next(iter(p)) for p in parts] == ["functionResponse", "functionResponse", "text", "inlineData"]
    assert parts[0]["functionResponse"]["response"] == {"output": "x",
                                                        "attachments": ["1-1.png (follows the function responses)"]}
    assert parts[2]["text"] == "Attachment 1-1.png of the result of a (1):"
    assert parts[3] == {"inlineData": {"mimeType": "image/png", "data": PNG}}


def test_wrapped_url_safe_unpadded_base64_reaches_gemini_standard(client: openai.OpenAI, stack) -> None:
    """Base64 as some clients write it -- wrapped at 76 columns (newlines, CRLF, tabs, spaces, a
    Unicode space), the URL-safe alphabet, the padding left off -- reaches Gemini as standard padded
    base64 of the same bytes; a character outside both alphabets is still a 400."""
    raw = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 3
    standard = base64.b64encode(raw).decode()
    safe = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    seps = ["\n", "\r\n", "\t", " ", "\u2003"]
    wrapped = "".join(safe[i:i + 76] + seps[(i // 76) % len(seps)] for i in range(0, len(safe), 76))
    assert "-" in wrapped and "_" in wrapped and "\n" in wrapped
    client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{wrapped}"}}]}])
    assert _media_parts(stack.last_body()) == [{"inlineData": {"mimeType": "image/png", "data": standard}}]
    with pytest.raises(openai.BadRequestError, match="not valid base64"):
        client.chat.completions.create(model="gemini-2.5-flash", messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{safe[:40]}*{safe[41:80]}"}}]}])
