"""The repairs every request gets on its way to Gemini, from the front-end and the interceptor alike.

- no trailing text-only model turn for models that refuse one ("prefill");
- adjacent model turns (chunks of one streamed answer, as google-genai's automatic function calling
  stores them) merged into one, a call part stored twice dropped when the answers say so;
- for models that need them (Claude on Antigravity's wire: tools/call_ids.py), an id on every
  functionCall that has none;
- a functionResponse without the id of the call it answers given that id (google-genai omits it;
  Gemini 3 then answers with nothing);
- each call turn's function responses in call order (by id, then by name);
- a `$ref` key inside a function result sent as an opaque JSON string (the proxy's own references
  to `functionResponse.parts` excepted);
- media in function results as sibling parts for models that refuse `functionResponse.parts`;
- Google Search's toolCall/toolResponse parts (from a Gemini 3 turn) left out for models that take
  no server-side tool invocations: the conversation moved to an older model, whose history can
  hold only the answer the search led to.
Signing (the sentinel for unsigned calls) is left to the caller: its scope differs per path.
"""

import hashlib
import json
import logging
from typing import Any

from proxy.from_gemini.server_tools import SERVER_PARTS, is_server_part
from proxy.journal import exchange
from proxy.pattern_rules import matches
from proxy.to_gemini.tool_result_media import media_as_siblings, parts_in_results
from proxy.tools.call_ids import needs_call_ids
from proxy.tools.hosted_tools import combines_search

log = logging.getLogger(__name__)

# "Requests ending with a model turn are not supported" on Gemini 3.5 Flash-Lite, 3.6 Flash and later
# (Google's latest-model page via translators.md §4); CLIProxyAPI drops the trailing prefill turn.
PREFILL_REJECTED = ("gemini-3.5*", "gemini-3.6*", "gemini-3.7*", "gemini-3.8*", "gemini-3.9*", "gemini-4*")


def rejects_prefill(model: str) -> bool:
    return matches(model, PREFILL_REJECTED)


def drop_trailing_prefill(contents: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Remove a trailing text-only model turn for models that refuse one (never a call turn)."""
    if contents and rejects_prefill(model) and contents[-1].get("role") == "model" and all(
            "functionCall" not in p for p in contents[-1].get("parts") or []):
        return contents[:-1]
    return contents


def _calls(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in content.get("parts") or [] if isinstance(p.get("functionCall"), dict)]


def _answers(content: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [p for p in (content or {}).get("parts") or [] if isinstance(p.get("functionResponse"), dict)]


def merge_chunk_turns(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One model turn per answer. google-genai's streaming AFC keeps each chunk as a turn of its own,
    and before 2.18, from its second round, stores the call chunk twice (tests/recorded/ holds what 2.17.0
    sent); Gemini then 400s "the number of function
    response parts is equal to the number of function call parts". A repeated call part is dropped
    only while the turn has more calls than the next turn has answers: real repeated calls have
    answers of their own."""
    merged: list[dict[str, Any]] = []
    for i, content in enumerate(contents):
        if not (merged and content.get("role") == "model" and merged[-1].get("role") == "model"):
            merged.append(content)
            continue
        parts = list(merged[-1].get("parts") or [])
        answers = len(_answers(contents[i + 1] if i + 1 < len(contents) else None))
        for part in content.get("parts") or []:
            calls = sum(1 for p in parts if "functionCall" in p)
            if "functionCall" in part and part in parts and calls >= answers:
                continue
            parts.append(part)
        merged[-1] = {**merged[-1], "parts": parts}
    return merged


def fill_call_ids(contents: list[dict[str, Any]]) -> int:
    """Give each id-less functionCall an id of its own, the same on every request for the same history
    (its turn, its place and its name), for models that pair calls and responses by id only; the
    responses follow (fill_response_ids). Returns how many were given one."""
    given = 0
    for i, content in enumerate(contents):
        if content.get("role") != "model":
            continue
        for j, part in enumerate(_calls(content)):
            fc = part["functionCall"]
            if not fc.get("id"):
                digest = hashlib.sha256(f"{i}:{j}:{fc.get('name')}".encode()).hexdigest()[:24]
                part["functionCall"] = {**fc, "id": f"call_{digest}"}
                given += 1
    return given


def fill_response_ids(contents: list[dict[str, Any]]) -> None:
    """Give each id-less functionResponse the id of the call it answers (same name, in order)."""
    for i in range(len(contents) - 1):
        if contents[i].get("role") != "model":
            continue
        answers = _answers(contents[i + 1])
        if all(a["functionResponse"].get("id") for a in answers):
            continue  # (the front-ends' own histories: every response names its call)
        open_calls = [p["functionCall"] for p in _calls(contents[i]) if p["functionCall"].get("id")]
        answered = {a["functionResponse"].get("id") for a in answers}
        open_calls = [c for c in open_calls if c["id"] not in answered]
        for answer in answers:
            fr = answer["functionResponse"]
            if fr.get("id"):
                continue
            match = next((c for c in open_calls if c.get("name") == fr.get("name")), None)
            if match is not None:
                open_calls.remove(match)
                answer["functionResponse"] = {**fr, "id": match["id"]}


def order_function_responses(contents: list[dict[str, Any]]) -> None:
    """Put each call turn's function responses in call order, matching by id, then by name.

    Gemini CLI answers parallel calls in completion order (docs/wire.md#gemini-pairing); Gemini pairs by
    position. Responses that match no call keep their place after the matched ones.
    """
    for i in range(len(contents) - 1):
        nxt = contents[i + 1]
        if contents[i].get("role") != "model" or nxt.get("role") != "user":
            continue
        calls = [p["functionCall"] for p in _calls(contents[i])]
        if len(calls) < 2:
            continue
        parts = nxt.get("parts") or []
        answers = _answers(nxt)
        if len(answers) != len(parts):
            continue
        remaining, ordered = list(answers), []
        for call in calls:
            match = next((a for a in remaining if call.get("id") and a["functionResponse"].get("id") == call["id"]),
                         None) or next((a for a in remaining if not (call.get("id") and a["functionResponse"].get("id"))
                                        and a["functionResponse"].get("name") == call.get("name")), None)
            if match is not None:
                remaining.remove(match)
                ordered.append(match)
        contents[i + 1] = {**nxt, "parts": ordered + remaining}


def _has_ref_key(value: Any, labels: frozenset[str] = frozenset()) -> bool:
    """True when `value` holds a `$ref` key other than a bare reference to one of `labels`."""
    stack = [value]
    while stack:  # iterative: results can be deep, and this runs on every request
        node = stack.pop()
        if isinstance(node, dict):
            if "$ref" in node and not (len(node) == 1 and isinstance(node["$ref"], str) and node["$ref"] in labels):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _plain_text(response: Any) -> bool:
    """A response of text values only (the front-ends' `{"output": text}`): no key below it. (A loop:
    half the time of all() over a generator, once per result of every request.)"""
    if type(response) is not dict or "$ref" in response:
        return False
    for value in response.values():  # noqa: SIM110 (the loop is the point)
        if type(value) is not str:
            return False
    return True


def escape_response_refs(contents: list[dict[str, Any]]) -> None:
    """Gemini 3 reads a `$ref` key inside functionResponse.response as a reference to one of the
    response's parts and 400s (LiteLLM#38223); such output goes as an opaque JSON string instead."""
    for content in contents:
        for part in content.get("parts") or []:
            fr = part.get("functionResponse")
            if not isinstance(fr, dict) or not _has_ref_key(fr.get("response")):
                continue  # (no `$ref` key at all: the labels below could only excuse one)
            labels = frozenset(d.get("displayName") for m in fr.get("parts") or [] if isinstance(m, dict)
                               for d in m.values() if isinstance(d, dict) and isinstance(d.get("displayName"), str))
            if _has_ref_key(fr.get("response"), labels):
                fr["response"] = {"output": json.dumps(fr["response"], ensure_ascii=False)}


def drop_server_parts(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without toolCall/toolResponse parts; a turn that held nothing else goes too."""
    kept = []
    for content in contents:
        parts = content.get("parts") or []
        rest = [p for p in parts if not is_server_part(p)]
        if len(rest) != len(parts):
            log.info("left %d server-side tool part(s) out of the history: the model takes none",
                     len(parts) - len(rest))
            if not rest:
                continue
            content["parts"] = rest
        kept.append(content)
    return kept


def repair_history(contents: list[dict[str, Any]], model: str, *, result_parts: bool | None = None,
                   survey: "Survey | None" = None) -> list[dict[str, Any]]:
    """Apply the repairs above. Modifies the contents in place; returns them (one shorter when a
    prefill turn was dropped). The contents must have passed the Gemini wire model (wire/gemini.py).
    `result_parts`: whether the model takes functionResponse.parts (None: its default). `survey`:
    the caller's Survey of these contents, which spares the walk when no turn was merged or dropped."""
    given = len(contents)
    contents = drop_trailing_prefill(merge_chunk_turns(contents), model)
    if len(contents) != given:
        exchange.note("history", f"{given} turns became {len(contents)}: streamed chunks of one model turn merged, "
                                 "or a trailing model prefill dropped")
        survey = None  # (a merge may have dropped a repeated call part)
    if survey is None:
        survey = Survey(contents)
    if survey.server_parts and not combines_search(model):
        contents = drop_server_parts(contents)
        exchange.note("history", f"Google Search parts dropped from the history: {model} cannot combine them "
                                 "with function calls")
    ids_given = 0
    if needs_call_ids(model) and (ids_given := fill_call_ids(contents)):
        exchange.note("history", f"{ids_given} call(s) without an id given one: {model} pairs calls and results by id")
    if not survey.responses:  # the rest only touch function responses
        return contents
    if survey.without_id and (survey.call_ids or ids_given):  # (a response only takes the id of a call that has one)
        fill_response_ids(contents)
    if survey.parallel:  # (only a turn of two calls or more has answers to put in order)
        order_function_responses(contents)
    if survey.structured:
        escape_response_refs(contents)
    if survey.media and not _parts_in_results(model, result_parts) and media_as_siblings(contents):
        exchange.note("history", f"media returned by tools sent as parts after the function responses: {model} "
                                 "takes no functionResponse.parts")
    return contents


def _parts_in_results(model: str, result_parts: bool | None) -> bool:
    return parts_in_results(model) if result_parts is None else result_parts


class Survey:
    """One pass over every part: which of the passes above could change anything. A conversation
    without tool results (most chat turns) skips them all; one whose results are all text with ids
    (the front-ends' own histories) skips the passes over every result; one whose calls carry no
    ids (Gemini CLI's) skips fill_response_ids, and one without parallel calls the ordering of
    their answers. `in_place` tells a caller whether the contents it hands over can be shared with
    a body it must not change."""

    __slots__ = ("call_ids", "calls_without_id", "media", "parallel", "responses", "server_parts", "structured",
                 "unsigned", "without_id")

    def __init__(self, contents: list[dict[str, Any]]) -> None:
        self.responses = self.server_parts = self.without_id = self.structured = self.media = False
        self.call_ids = self.calls_without_id = self.unsigned = self.parallel = False
        for content in contents:
            calls, signed = 0, False
            for part in content.get("parts") or ():
                if _ACTED_ON.isdisjoint(part):
                    continue
                if "functionCall" in part:  # (as sentinel.sign_unsigned_turns counts them)
                    calls += 1
                    signed = signed or bool(part.get("thoughtSignature"))
                    fc = part["functionCall"]
                    if isinstance(fc, dict):
                        if fc.get("id"):
                            self.call_ids = True
                        else:
                            self.calls_without_id = True
                if not _SERVER_PARTS.isdisjoint(part):
                    self.server_parts = True
                if "functionResponse" not in part:
                    continue
                self.responses = True
                fr = part["functionResponse"]
                if not isinstance(fr, dict):
                    continue  # (each pass leaves such a part as it is)
                if not fr.get("id"):
                    self.without_id = True
                if not self.structured and not _plain_text(fr.get("response")):
                    self.structured = True
                if fr.get("parts"):
                    self.media = True
            if calls and content.get("role") == "model":
                self.unsigned = self.unsigned or not signed
                self.parallel = self.parallel or calls > 1

    def joined(self, other: "Survey") -> "Survey":
        """The survey of both surveys' contents, one list after the other (each flag is per part or per
        turn: a turn must be surveyed whole, in one of them)."""
        out = Survey([])
        for name in self.__slots__:
            setattr(out, name, getattr(self, name) or getattr(other, name))
        return out

    def in_place(self, model: str, result_parts: bool | None = None, signs: bool = False) -> bool:
        """Whether repair_history (and, when `signs`, the sentinel on unsigned calls) could change a
        part or a turn of these contents in place, rather than only put new turns in their list.
        Never False when one could: a merge or a dropped turn only removes what was surveyed."""
        return (self.server_parts and not combines_search(model)
                or self.calls_without_id and needs_call_ids(model)
                or self.responses and (self.without_id and self.call_ids or self.structured
                                       or self.media and not _parts_in_results(model, result_parts))
                or signs and self.unsigned)


_SERVER_PARTS = frozenset(SERVER_PARTS)
_ACTED_ON = frozenset({"functionCall", "functionResponse", *SERVER_PARTS})
