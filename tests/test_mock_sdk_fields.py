"""Issue 59 item 7: the strict mock keeps up with google-genai by construction.

Its one table of request fields (proxy/mock/wire_fields.py) is compared with what the INSTALLED SDK
emits, derived from the SDK's pydantic types and its own request converters (tests/genai_wire.py), so
a field a new SDK emits fails here until the mock knows it; requests the real `genai.Client` builds
with every field set reach the mock on the Developer API and Vertex paths (and the proxy's
Gemini-native route, which passes them through) and are answered; what no SDK knows is still refused.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from google import genai
from google.genai import errors, types
from google.oauth2 import service_account

from proxy.mock import wire_fields
from proxy.mock.validate import GeminiRejection, validate_request
from tests import genai_wire
from tests.test_vertex_pool import service_account as service_account_file

APIS = ("mldev", "vertex")


def _derived() -> dict[tuple[str, str], tuple[str | None, set[str]]]:
    found: dict[tuple[str, str], tuple[str | None, set[str]]] = {}
    for api in APIS:
        for key, kind in genai_wire.emitted(genai_wire.probes(api).bodies).items():
            found.setdefault(key, (kind, set()))[1].add(api)
            assert found[key][0] == kind, f"{key}: {kind} on {api}, {found[key][0]} elsewhere"
    return found


@pytest.fixture(scope="module")
def derived() -> dict[tuple[str, str], tuple[str | None, set[str]]]:
    return _derived()


def test_the_mock_accepts_every_field_the_installed_sdk_emits(derived) -> None:
    """A field the SDK puts on the wire for an API, which the mock would refuse there, fails here
    (unless the real API refuses it: REAL_REFUSALS, each with its source)."""
    missing = []
    for (message, name), (kind, apis) in sorted(derived.items()):
        for api in apis:
            if wire_fields.REAL_REFUSALS.get((message, name)) == api:
                continue
            known = wire_fields.fields(message, api) if message in wire_fields.MESSAGES else {}
            if known.get(name) != (kind or ""):
                missing.append(f"{message}.{name} ({kind or 'scalar'}) on {api}")
    assert not missing, "the SDK emits fields the mock's table lacks:\n" + "\n".join(missing)


def test_the_table_holds_nothing_the_sdk_does_not_emit_unless_sourced(derived) -> None:
    """The table is the SDK's, per API: a field only one API has is marked so, and what the mock takes
    beyond the SDK is an EXTRAS entry with its source; a stale entry fails here too."""
    stale = []
    for message, fields in wire_fields.MESSAGES.items():
        for name, spec in fields.items():
            kind, _, only = spec.partition("@")
            apis = {only} if only else set(APIS)
            if derived.get((message, name)) != ((kind or None), apis):
                stale.append(f"{message}.{name}: table {spec!r}, SDK {derived.get((message, name))}")
    assert not stale, "\n".join(stale)
    referenced = {k.removeprefix(wire_fields.MAP) for (_, _), (k, _) in derived.items()
                  if k and k != wire_fields.STRUCT}
    assert referenced <= set(wire_fields.MESSAGES), referenced - set(wire_fields.MESSAGES)


@pytest.mark.parametrize(("api", "body", "name"), [
    ("mldev", {"bogusField": 1}, "bogusField"),
    ("mldev", {"generationConfig": {"thinkingConfig": {"thinkingBudget": 0, "bogus_field": 1}}}, "bogus_field"),
    ("mldev", {"generationConfig": {"speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"bogus": 1}}}}},
     "bogus"),
    ("mldev", {"tools": [{"googleSearch": {"bogus": 1}}]}, "bogus"),
    ("mldev", {"tools": [{"functionDeclarations": [{"name": "f", "parameters": {
        "type": "OBJECT", "properties": {"a": {"type": "STRING", "const": "x"}}}}]}]}, "const"),
    # one API's field on the other (google/genai/models.py: _GenerateContentConfig_to_mldev raises on
    # model_selection_config, _to_vertex on store; Part.toolCall is the Developer API's only)
    ("mldev", {"generationConfig": {"modelConfig": {"featureSelectionPreference": "BALANCED"}}}, "modelConfig"),
    ("mldev", {"generationConfig": {"translationConfig": {"targetLanguageCode": "fr"}}}, "translationConfig"),
    ("vertex", {"store": True}, "store"),
    ("vertex", {"contents": [{"role": "user", "parts": [{"toolCall": {"id": "x"}}]}]}, "toolCall"),
    ("vertex", {"contents": [{"role": "user", "parts": [{"text": "hi", "mediaProcessing": "x"}]}]}, None),
])
def test_a_field_no_sdk_emits_is_still_refused(api, body, name) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **body}
    if name is None:  # mediaProcessing is a Part field on both APIs; only FunctionResponsePart's is mldev's
        validate_request(body, "gemini-3-pro-preview", api=api)
        return
    with pytest.raises(GeminiRejection) as e:
        validate_request(body, "gemini-3-pro-preview", api=api)
    assert e.value.status == 400 and f'Unknown name "{name}"' in e.value.message, e.value.message


# -- requests the real SDK builds, over HTTP ------------------------------------------------------------

# What the mock refuses of SDK-built requests because the real API does: (routes, a word of the
# request's label, the error's words, the source). Each is a real refusal, not a stale mock.
REAL_API_REFUSES = [
    ({"mldev", "proxy"}, "additional_properties", 'Unknown name "additional_properties"',
     "google/adk-python #2734: the SDK's own function declarations, refused by the Developer API"),
]


@pytest.fixture(scope="module")
def sa_info(tmp_path_factory) -> dict[str, Any]:
    path = Path(tmp_path_factory.mktemp("sa")) / "sa.json"
    return json.loads(Path(service_account_file(path, "http://unused/token", "sdk@p.iam.example", "p")).read_text())


def _client(route: str, stack, sa_info) -> genai.Client:
    if route == "vertex":
        creds = service_account.Credentials.from_service_account_info(
            {**sa_info, "token_uri": f"{stack.mock_url}/token"},
            scopes=["https://www.googleapis.com/auth/cloud-platform"])
        return genai.Client(vertexai=True, project="p", location="us-central1", credentials=creds,
                            http_options=types.HttpOptions(base_url=stack.mock_url))
    base = stack.mock_url if route == "mldev" else stack.url
    return genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=base))


def _sent(api: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each SDK request on `api`; a config the SDK refuses there is split until each field either goes
    or is the one the SDK refuses (tests/genai_wire.py `_split`)."""
    client = genai_wire.clients()[api]
    for kind, label, kwargs in genai_wire.sdk_requests():
        if kind == "count" and api == "mldev":  # the Developer API's countTokens takes no config (models.py)
            yield kind, label, {"contents": kwargs["contents"]}
            continue
        out = genai_wire.Probes([], [])
        cfg = kwargs.get("config")
        params_cls = types._CountTokensParameters if kind == "count" else types._GenerateContentParameters
        convert = _converter(api, kind, client)
        if cfg is None:
            try:
                convert(params_cls(model=genai_wire.MODEL, contents=kwargs["contents"]))
            except ValueError:
                continue  # a part only the other API has (tool_call on Vertex: models.py _Part_to_vertex)
            yield kind, label, kwargs
            continue
        contents = kwargs["contents"]

        def wrap(c: Any, params_cls: Any = params_cls, contents: Any = contents) -> Any:
            return params_cls(model=genai_wire.MODEL, contents=contents, config=c)
        genai_wire._split(convert, cfg, wrap, label, out, "")
        for _root, sub, _body, params in out.bodies:
            yield kind, sub, {"contents": kwargs["contents"], "config": params.config}


def _converter(api: str, kind: str, client: Any) -> Any:
    from google.genai import _common, models
    fn = {("mldev", "generate"): models._GenerateContentParameters_to_mldev,
          ("vertex", "generate"): models._GenerateContentParameters_to_vertex,
          ("vertex", "count"): models._CountTokensParameters_to_vertex}[(api, kind)]
    return lambda params: _common.convert_to_dict(fn(client, params, None, params))


@pytest.mark.parametrize("route", ["mldev", "vertex", "proxy"])
def test_requests_the_sdk_builds_with_every_field_are_answered(route, stack, sa_info) -> None:
    """google-genai's own Client, every config field, group alternative and kind of part (tests/genai_wire.py
    `sdk_requests`), against the mock on the Developer API and Vertex paths and through the proxy's
    Gemini-native route: each is answered, or refused only where the real API refuses it."""
    api = "vertex" if route == "vertex" else "mldev"
    client = _client(route, stack, sa_info)
    sent, refused = 0, []
    for kind, label, kwargs in _sent(api):
        sent += 1
        try:
            if kind == "count":
                assert client.models.count_tokens(model=genai_wire.MODEL, **kwargs).total_tokens > 0
            else:
                r = client.models.generate_content(model=genai_wire.MODEL, **kwargs)
                assert r.candidates, label
        except errors.APIError as e:
            if not any(route in routes and word in label and text in (e.message or "")
                       for routes, word, text, _source in REAL_API_REFUSES):
                refused.append(f"{label}: {e.code} {(e.message or '')[:300]}")
        except pydantic.ValidationError as e:  # the SDK could not read the answer
            refused.append(f"{label}: the SDK refused the answer: {str(e)[:200]}")
    assert sent >= 50, sent
    assert not refused, f"{len(refused)} of {sent} SDK-built requests refused:\n" + "\n".join(refused)


def test_the_sdk_sends_the_wire_names_the_table_checks(stack, sa_info) -> None:
    """The fields the issue names arrive under their wire names: Part.audioTranscription,
    mediaProcessing, labels; on Vertex generationConfig.modelConfig (model_selection_config),
    responseFormat and translationConfig (countTokens' GenerationConfig)."""
    for route, kwargs in [
        ("mldev", {"contents": [types.Content(role="user", parts=[types.Part(
            text="hi", media_processing="x", audio_transcription=types.Transcription(text="t"))])],
            "config": types.GenerateContentConfig(labels={"team": "a"})}),
        ("vertex", {"contents": "hi", "config": types.GenerateContentConfig(
            model_selection_config=types.ModelSelectionConfig(
                feature_selection_preference=types.FeatureSelectionPreference.BALANCED))}),
    ]:
        client = _client(route, stack, sa_info)
        client.models.generate_content(model=genai_wire.MODEL, **kwargs)
        body = stack.last_body()
        if route == "mldev":
            part = body["contents"][0]["parts"][0]
            assert part["mediaProcessing"] == "x" and part["audioTranscription"] == {"text": "t"}
            assert body["labels"] == {"team": "a"}
        else:
            assert body["generationConfig"]["modelConfig"] == {"feature_selection_preference": "BALANCED"}
    client = _client("vertex", stack, sa_info)
    client.models.count_tokens(model=genai_wire.MODEL, contents="hi", config=types.CountTokensConfig(
        generation_config=types.GenerationConfig(
            translation_config=types.TranslationConfig(target_language_code="fr"),
            response_format=[types.ResponseFormat(text=types.TextResponseFormat(mime_type="text/plain"))])))
    last = stack.received[-1]
    assert last["method"] == "countTokens" and "/projects/p/locations/us-central1/" in last["path"]
    gen = last["body"]["generationConfig"]
    assert gen["translationConfig"] == {"targetLanguageCode": "fr"}
    assert gen["responseFormat"] == [{"text": {"mime_type": "text/plain"}}]
