"""The mock's scripted model: deterministic answers that exercise tool calling.

Behaviour, driven by the latest user text of the request:
- tools declared and not disabled: call every declared tool whose name appears in the text
  (several at once = parallel calls); with mode ANY and none named, call the first allowed one;
  with none named otherwise, a plain one-line prompt without directives ("Weather in Paris?") calls
  the one tool (of at most 32) whose name's words (get_weather: "weather") or first description
  sentence share a word with it, and nothing when several do (`_asked_for`);
  arguments are generated to satisfy the declared schema (`key=value` in the text fills fields);
- after function responses: answer with text quoting every result (or call again, see `rounds`);
- otherwise: a text answer echoing the prompt, streamed in several chunks.
Directives in the text, `[[mock:NAME ARG]]`: `rounds N` (keep calling tools for N rounds),
`max_tokens`, `safety`, `block`, `malformed`, `unexpected_tool`, `finish REASON` (text, then that
finishReason), `error CODE [DELAY]` (with a delay
such as `1.5s`: Gemini's RetryInfo detail and a Retry-After header), `flaky N CODE [DELAY]` (the
first N requests with this text fail so, later ones are answered: server.py counts), `error_on MODEL
CODE` (fail so only when the request is for MODEL, a shell pattern: a fallback chain's first model,
upstream/fallback.py), `stream_error [CODE]` (a 500, or CODE, as the stream's second chunk),
`slow SECONDS` (pause between stream chunks), `bulk BYTES` (a text answer that long, in 16 KB
chunks), `empty KIND` (a 200 with nothing usable, as Gemini
sends on Gemini 3 call-id mismatches: `body` {}, `candidates` [], `parts` a STOP candidate with no
parts, `thoughts` only a thought), `cut` (the answer ends without a finishReason, as when a load
balancer closes the body early), `stringly` (every call argument sent as a string, as
models sometimes do), `ignore_choice` (answer in text despite mode ANY unless the proxy's retry
directive is in the system instruction; `ignore_choice always` ignores that too), `search QUERY`
(with a googleSearch tool, the first answer of the turn searches: on Gemini 3 with
includeServerSideToolInvocations as signed toolCall/toolResponse parts, always with groundingMetadata;
a text answer then cites the result, and later answers name the searches they see in the history),
`text_call DIALECT` (calls written as text in that dialect instead of functionCall parts),
`quote_json [whole]` (an answer quoting `{"name": TOOL, "content": ...}` mid-sentence, or as the whole
answer: how @ai-sdk/google returns tool results, which a Gemma 3 answer then repeats; never a call),
`find QUERY` (with a tool-search function declared -- tool_search*, ToolSearch -- the turn's first call
is that search, alone, with `{"query": QUERY}`; the tools named in the text are called after its result),
a request to summarize (the proxy's compaction) gets a one-line summary counting the tool results it
stands for, and `rounds` counts them as done when the turn continues from that summary,
`hops N [stuck|alternate|empty]` (the answer stopped at the decode limit N-1 times and continued when asked: hops.py).
Prompted in a text dialect (declarations rendered into the prompt), the model answers in it: dialect_model.py.
Gemini-3 model names get call ids and thought signatures like Gemini 3 (reference/protocols.md §B7).
"""

import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from proxy.mock.validate import (
    call_signature,
    camel,
    get,
    is_gemini3,
    search_call_id,
    search_result,
    sign,
    vertex_takes_call_ids,
)
from proxy.schema.json_pointer import resolve_ref
from proxy.tools.forced_choice import DIRECTIVE as FORCED_DIRECTIVE

DIRECTIVE = re.compile(r"\[\[mock:([a-z_]+)(?:\s+([^\]]*))?\]\]")
ERRORS = {  # Google's own words (tests/recorded/error-500-internal.json, error-503-overloaded.json)
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "Internal error encountered."),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
}


@dataclass
class Reply:
    chunks: list[dict[str, Any]] = field(default_factory=list)  # each a GenerateContentResponse
    error: tuple[int, str, str] | None = None                     # (http status, status name, message)
    delay: float = 0.0                                             # pause between stream chunks
    stream_error_after: int | None = None                          # send an error chunk after N chunks
    stream_error_code: int = 500                                   # ... with this code
    retry_delay: str | None = None                                 # RetryInfo.retryDelay of an error ("1.5s")


def _texts(content: dict[str, Any]) -> list[str]:
    return [get(p, "text") for p in get(content, "parts") or [] if isinstance(get(p, "text"), str)
            and not get(p, "thought")]


def _media(parts: list[dict[str, Any]]) -> list[str]:
    """What media `parts` carry, as the model would see them: MIME types (and file URIs)."""
    seen = []
    for p in parts:
        blob, file_data = get(p, "inlineData"), get(p, "fileData")
        if isinstance(blob, dict):
            seen.append(f"{get(blob, 'mimeType')} ({len(get(blob, 'data') or '') * 3 // 4} bytes)")
        if isinstance(file_data, dict):
            seen.append(f"{get(file_data, 'mimeType') or 'file'} at {get(file_data, 'fileUri')}")
    return seen


def latest_user_text(contents: list[dict[str, Any]]) -> tuple[int, str]:
    for i in range(len(contents) - 1, -1, -1):
        c = contents[i]
        if get(c, "role") == "user" and _texts(c):
            return i, " ".join(_texts(c))
    return -1, ""


def _declarations(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for t in get(body, "tools") or [] for d in get(t, "functionDeclarations") or []]


def _mentioned(names: list[str], text: str) -> list[str]:
    found = []
    for n in names:
        m = re.search(rf"(?<![\w.:\-]){re.escape(n)}(?![\w.:\-])", text)
        if m:
            found.append((m.start(), n))
    return [n for _, n in sorted(found)]


class ArgumentMaker:
    """Builds schema-valid arguments from a Gemini Schema or a JSON Schema (`parametersJsonSchema`)."""

    def __init__(self, root: dict[str, Any], hints: dict[str, str]) -> None:
        self.root, self.hints = root, hints

    def make(self, s: Any, name: str = "", depth: int = 0) -> Any:
        if not isinstance(s, dict) or depth > 12:
            return self.hints.get(name, "x")
        if isinstance(s.get("$ref"), str) and s["$ref"].startswith("#"):
            target = resolve_ref(self.root, s["$ref"])
            target = target if isinstance(target, dict) else {}
            return self.make({**target, **{k: v for k, v in s.items() if k != "$ref"}}, name, depth + 1)
        if "const" in s:
            return s["const"]
        if isinstance(s.get("enum"), list) and s["enum"]:
            hint = self.hints.get(name)
            return hint if hint in s["enum"] else s["enum"][0]
        for key in ("anyOf", "any_of", "oneOf"):
            if isinstance(s.get(key), list) and s[key]:
                branch = next((b for b in s[key] if isinstance(b, dict) and b.get("type") != "null"), s[key][0])
                return self.make(branch, name, depth + 1)
        if isinstance(s.get("allOf"), list) and s["allOf"]:
            merged: dict[str, Any] = {}
            for b in s["allOf"]:
                merged.update(b if isinstance(b, dict) else {})
            return self.make(merged, name, depth + 1)
        t = s.get("type")
        if isinstance(t, list):
            t = next((x for x in t if x != "null"), "null")
        t = (t or ("object" if "properties" in s else "string")).lower()
        if t == "object":
            props = s.get("properties") or {}
            wanted = [r for r in s.get("required") or [] if r in props]
            wanted += [p for p in props if p in self.hints and p not in wanted]
            return {p: self.make(props[p], p, depth + 1) for p in wanted}
        if t == "array":
            count = max(int(s.get("minItems") or s.get("min_items") or 1), 1)
            return [self.make(s.get("items") or {}, name, depth + 1) for _ in range(count)]
        if t in ("integer", "number"):
            lo = s.get("minimum")
            value: Any = self.hints.get(name)
            try:
                value = int(value) if t == "integer" else float(value)
            except (TypeError, ValueError):
                value = lo if isinstance(lo, int | float) else 1
            return int(value) if t == "integer" else value
        if t == "boolean":
            return self.hints.get(name, "true") != "false"
        if t == "null":
            return None
        value = self.hints.get(name) or {"date-time": "2026-01-01T00:00:00Z", "uri": "https://example.com/",
                                         "uuid": "123e4567-e89b-12d3-a456-426614174000",
                                         "email": "user@example.com"}.get(s.get("format", ""), f"{name or 'value'}-1")
        min_len = s.get("minLength") or s.get("min_length") or 0
        return value + "x" * max(0, int(min_len) - len(value))


def respond(body: dict[str, Any], model: str) -> Reply:
    contents = get(body, "contents") or []
    start, text = latest_user_text(contents)
    directives = {m.group(1): (m.group(2) or "").strip() for m in DIRECTIVE.finditer(text)}
    reply = Reply()
    if text.startswith(SUMMARIZE):  # the proxy's compaction asks for a summary (the transcript's directives
        reply.chunks = _stream_chunks([{"text": _summary(text)}], "STOP", body, model)  # are not the model's)
        return reply
    if "slow" in directives:
        reply.delay = float(directives["slow"] or 0.2)
    if "error_on" in directives:
        pattern, _, code = directives["error_on"].partition(" ")
        if fnmatch.fnmatchcase(model.removeprefix("models/"), pattern):
            directives["error"] = code.strip() or "500"
    if "error" in directives:
        code, _, delay = (directives["error"] or "500").partition(" ")
        name, msg = ERRORS.get(int(code), ERRORS[500])
        reply.error, reply.retry_delay = (int(code), name, msg), delay.strip() or None
        return reply
    if "empty" in directives:
        kind = directives["empty"] or "parts"
        reply.chunks = [{"body": {}, "candidates": {"candidates": []},
                         "thoughts": {"candidates": [{"content": {"role": "model", "parts": [
                             {"text": "thinking", "thought": True}]}, "finishReason": "STOP", "index": 0}]},
                         }.get(kind, {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP",
                                                      "index": 0}]})]
        return reply
    if "block" in directives:
        reply.chunks = [{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": _usage(body, "", 0),
                         "modelVersion": model}]
        return reply
    if "quote_json" in directives:  # text quoting JSON that names a declared tool: never a call
        names = [get(d, "name") for t in get(body, "tools") or [] for d in get(t, "functionDeclarations") or []]
        quoted = json.dumps({"name": names[0] if names else "tool", "content": "sunny, 18 C"})
        answer = quoted if directives["quote_json"] == "whole" else f"The tool answered {quoted}, so it is sunny."
        reply.chunks = _stream_chunks([{"text": answer}], "STOP", body, model)
        return reply
    if "finish" in directives:  # `finish REASON`: some text, then that finishReason (as on streams)
        reply.chunks = _stream_chunks([{"text": "Partial answer before the end"}], directives["finish"], body, model)
        return reply
    for directive, reason in (("safety", "SAFETY"), ("malformed", "MALFORMED_FUNCTION_CALL"),
                              ("unexpected_tool", "UNEXPECTED_TOOL_CALL")):
        if directive in directives:
            cand = {"finishReason": reason, "index": 0}
            if reason != "SAFETY":
                cand["finishMessage"] = f"Malformed function call: {text[:40]}"
            reply.chunks = [{"candidates": [cand], "usageMetadata": _usage(body, "", 0), "modelVersion": model}]
            return reply

    thinking = get(get(body, "generationConfig") or {}, "thinkingConfig") or {}
    parts: list[dict[str, Any]] = []
    if get(thinking, "includeThoughts"):
        parts.append({"text": f"**Considering the request** The user asked: {text[:60]}", "thought": True})
    searched = _searches(contents[start + 1:])

    last = contents[-1] if contents else {}
    responses = [get(p, "functionResponse") for p in get(last, "parts") or [] if get(p, "functionResponse")]
    rounds_done = sum(1 for c in contents[start + 1:] if get(c, "role") == "user"
                      and any(get(p, "functionResponse") for p in get(c, "parts") or []))
    rounds_done += _summarized_rounds(contents[:start], text)  # rounds a compaction's summary stands for
    rounds_wanted = int(directives.get("rounds") or 1)
    calls = _choose_calls(body, text) if rounds_done < rounds_wanted else []
    finder = _finder(body) if "find" in directives else None
    if finder is not None:  # `find QUERY`: the turn's first call is the tool search, alone
        found_yet = any(get(get(p, "functionResponse") or {}, "name") == finder["name"]
                        for c in contents[start + 1:] for p in get(c, "parts") or [])
        calls = [c for c in calls if c is not finder] if found_yet else [finder] if rounds_done < rounds_wanted else []
    search = _search(body, model, directives.get("search"), first=rounds_done == 0)
    if search is not None:
        parts += search.parts

    if responses and not calls:
        if is_gemini3(model) and _missing_response_ids(contents):
            # Gemini 3 answers an unmatched functionResponse.id with an empty turn (LiteLLM PR#34603).
            parts.append({"text": ""})
        else:
            siblings = _media(get(last, "parts") or [])
            parts.append({"text": "Tool results: " + "; ".join(
                f"{get(r, 'name')} returned {json.dumps(get(r, 'response'), sort_keys=True)}"
                + (f" with parts [{', '.join(_media(get(r, 'parts') or []))}]" if get(r, "parts") else "")
                for r in responses) + (f"; after them [{', '.join(siblings)}]" if siblings else "")
                + (f"; searched {json.dumps(searched)}" if searched else "")})
    elif calls:
        seed = hashlib.sha256(json.dumps(contents, sort_keys=True).encode()).hexdigest()
        hints = _hints(text)
        for n, decl in enumerate(calls):
            schema = get(decl, "parametersJsonSchema") or get(decl, "parameters") or {}
            args = ArgumentMaker(schema, hints).make(schema) if schema else {}
            args = args if isinstance(args, dict) else {}
            if decl is finder:
                args = {"query": directives["find"]}
            if "stringly" in directives:
                args = {k: v if isinstance(v, str) else json.dumps(v) for k, v in args.items()}
            call: dict[str, Any] = {"name": decl["name"], "args": args}
            part: dict[str, Any] = {"functionCall": call}
            if is_gemini3(model):
                # 3.5 and later mint `call_` and digits (vercel/ai google-recursive-tool-call.chunks.txt:
                # gemini-3.7-flash, "call_345658"); earlier ones here: hex of the mock's own.
                call["id"] = (f"call_{int(seed[n * 8:(n + 1) * 8], 16) % 1_000_000:06d}"
                              if vertex_takes_call_ids(model) else seed[n * 8:(n + 1) * 8])
                if n == 0:  # parallel calls: only the first is signed (bound to a search before it)
                    part["thoughtSignature"] = call_signature(model, call["name"], call["args"],
                                                              search.call_id if search else None)
            parts.append(part)
    elif isinstance(get(get(body, "generationConfig") or {}, "responseJsonSchema"), dict):
        schema = get(get(body, "generationConfig"), "responseJsonSchema")
        parts.append({"text": json.dumps(ArgumentMaker(schema, _hints(text)).make(schema))})
    elif search is not None:
        parts.append({"text": search.answer})
    else:
        answer = f"Mock Gemini ({model}) heard: {DIRECTIVE.sub('', text).strip() or '(nothing)'}"
        seen = _media(get(contents[start], "parts") or []) if start >= 0 else []
        if seen:
            answer += f" and saw [{', '.join(seen)}]"
        parts.append({"text": answer})

    finish = "STOP"
    if "max_tokens" in directives:
        parts = [{"text": "This answer was cut"}]
        finish = "MAX_TOKENS"
    reply.chunks = _stream_chunks(parts, finish, body, model)
    if search is not None:  # Gemini sends the sources with the answer's last chunk
        reply.chunks[-1]["candidates"][0]["groundingMetadata"] = search.grounding
    if "bulk" in directives:  # a long answer: N bytes of text in 16 KB chunks
        size, step = int(directives["bulk"] or 1_000_000), 16 * 1024
        text = ("all work and no play " * (size // 21 + 1))[:size]
        reply.chunks = [{"candidates": [{"content": {"role": "model", "parts": [{"text": text[i:i + step]}]},
                                         "index": 0}], "modelVersion": model} for i in range(0, size, step)]
        reply.chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    if "cut" in directives:
        del reply.chunks[-1]["candidates"][0]["finishReason"]
    if "stream_error" in directives:
        reply.stream_error_after = 1
        reply.stream_error_code = int(directives["stream_error"] or 500)
    return reply


SEARCH_FACT = "Paris — 21 °C and sunny"  # non-ASCII: citations count bytes, OpenAI counts characters


@dataclass
class _Search:
    parts: list[dict[str, Any]]  # toolCall/toolResponse (Gemini 3 with the flag), else none
    grounding: dict[str, Any]
    answer: str
    call_id: str | None


def _search(body: dict[str, Any], model: str, query: str | None, first: bool) -> _Search | None:
    """A Google Search, when asked for (`search QUERY`), offered (a googleSearch tool) and the
    turn's first answer."""
    tools = get(body, "tools") or []
    if not query or not first or not any(camel(k) == "googleSearch" for t in tools for k in t):
        return None
    cfg = get(body, "toolConfig") or {}
    answer = f"Search results for {query}: {SEARCH_FACT}."
    start = len(f"Search results for {query}: ".encode())
    url = search_result([query])["results"][0]["url"]
    grounding = {"webSearchQueries": [query],
                 "groundingChunks": [{"web": {"uri": url, "title": "weather.example"}}],
                 "groundingSupports": [{"segment": {"startIndex": start, "endIndex": start + len(SEARCH_FACT.encode()),
                                                    "text": SEARCH_FACT}, "groundingChunkIndices": [0]}]}
    if not (is_gemini3(model) and get(cfg, "includeServerSideToolInvocations")):
        return _Search([], grounding, answer, None)
    call_id = search_call_id(query)
    args = {"queries": [query]}
    parts = [{"toolCall": {"id": call_id, "toolType": "GOOGLE_SEARCH_WEB", "args": args},
              "thoughtSignature": sign(model, "toolCall:" + call_id, args)},
             {"toolResponse": {"id": call_id, "toolType": "GOOGLE_SEARCH_WEB", "response": search_result([query])}}]
    return _Search(parts, grounding, answer, call_id)


def _searches(contents: list[dict[str, Any]]) -> list[str]:
    """The queries of the searches in `contents` (the history of the current turn)."""
    return [q for c in contents for p in get(c, "parts") or [] if get(p, "toolCall") is not None
            for q in (get(get(p, "toolCall"), "args") or {}).get("queries") or []]


def _hints(text: str) -> dict[str, str]:
    """`key=value` or `key="a value with spaces"` pairs in the prompt fill matching argument fields."""
    return {k: quoted or bare for k, quoted, bare in re.findall(r'(\w+)=(?:"([^"]*)"|([^\s,;\]]+))', text)}


def _choose_calls(body: dict[str, Any], text: str) -> list[dict[str, Any]]:
    decls = _declarations(body)
    fcc = get(get(body, "toolConfig") or {}, "functionCallingConfig") or {}
    mode = get(fcc, "mode") or "AUTO"
    if not decls or mode == "NONE":
        return []
    if mode == "ANY" and "[[mock:ignore_choice" in text:
        system = json.dumps(get(body, "systemInstruction") or {})
        if "always" in text or FORCED_DIRECTIVE not in system:
            return []
    allowed = get(fcc, "allowedFunctionNames") or [d.get("name") for d in decls]
    by_name = {d.get("name"): d for d in decls if d.get("name") in allowed}
    names = _mentioned(list(by_name), DIRECTIVE.sub("", text))
    last = (get(body, "contents") or [{}])[-1]
    if (not names and mode != "ANY" and not DIRECTIVE.search(text) and len(by_name) <= ASKED_FOR_MAX_TOOLS
            and not any(get(p, "functionResponse") for p in get(last, "parts") or [])):
        names = _asked_for(list(by_name.values()), text)
    if not names and mode == "ANY":
        names = [next(iter(by_name))] if by_name else []
    return [by_name[n] for n in names]


# How the proxy's compaction asks for a summary (responses/compaction.py PROMPT) and introduces it in the
# history (to_gemini/input_to_contents.py SUMMARY_INTRO): the mock summarizes in one line that counts the
# tool results it stands for, and counts them as rounds done when a turn continues from the summary.
SUMMARIZE = "Summarize the conversation transcript below"
SUMMARY_INTRO = "[Summary of the earlier part of this conversation, compacted]"
_ROUNDS = re.compile(r"(\d+) tool results? so far")
_ASKED = re.compile(r"The user last asked: (.*?) \| (\d+) tool results? so far")


def _summary(text: str) -> str:
    """One line: the transcript's last user message and how many tool results the summary stands for."""
    results = text.count("\nresult of call ") + sum(int(n) for n in _ROUNDS.findall(text))
    asked = [line[6:] for line in text.splitlines() if line.startswith("user: ")]
    return f"The user last asked: {(asked[-1] if asked else '(nothing)')[:80]} | {results} tool results so far."


def _summarized_rounds(contents: list[dict[str, Any]], text: str) -> int:
    """Tool rounds a compaction's summary says were done for the very prompt being answered (a client
    that keeps its user messages beside the summary, as Codex does, asks it again)."""
    return sum(int(n) for c in contents if get(c, "role") == "user" for p in get(c, "parts") or []
               if isinstance(get(p, "text"), str) and get(p, "text").startswith(SUMMARY_INTRO)
               for asked, n in _ASKED.findall(get(p, "text")) if text.strip().startswith(asked.strip()))


ASKED_FOR_MAX_TOOLS = 32  # an agent's catalogue (Codex, Claude Code) is not a question to match words against
# Words that say nothing about which tool a prompt wants ("get_weather" is about "weather").
_VAGUE = frozenset((
    "get", "set", "list", "fetch", "read", "write", "make", "create", "update", "delete", "run", "call",
    "tool", "tools", "function", "use", "the", "a", "an", "of", "for", "to", "in", "on", "at", "by", "with",
    "from", "and", "or", "is", "are", "be", "it", "this", "that", "what", "which", "your", "my", "me", "you",
    "do", "how", "why", "when", "where", "who", "can", "please", "not", "all", "any", "its", "has", "have", "was",
    "will",
))


def _words(text: str) -> set[str]:
    """Lowercased words of `text`, identifiers split (get_weather, getWeather -> get, weather), a plural's
    trailing s dropped, vague words left out."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in re.findall(r"[a-z0-9]+", spaced.lower()) if len(w) > 2 and w not in _VAGUE}


def _asked_for(decls: list[dict[str, Any]], text: str) -> list[str]:
    """A plain question or request that names no tool ("Weather in Paris?") calls the one declared tool
    whose name's words, or the first sentence of whose description, it shares a word with; never when
    several tools match or the prompt is long or has several lines (a task, a pasted file: agents'
    prompts). `_choose_calls` also leaves it out with directives, mode ANY, over ASKED_FOR_MAX_TOOLS
    tools, and on a turn of function responses (whose sibling text is no prompt)."""
    if len(text) > 200 or "\n" in text.strip():
        return []
    asked = _words(text)
    matches = [get(d, "name") for d in decls
               if asked & (_words(str(get(d, "name") or ""))
                           | _words(str(get(d, "description") or "").split(". ")[0]))]
    return matches if len(matches) == 1 else []


SEARCH_TOOLS = ("tool_search", "ToolSearch")  # the proxy's and Codex's (tool_search*), Claude Code's own


def _finder(body: dict[str, Any]) -> dict[str, Any] | None:
    """The declared tool-search function, if any."""
    return next((d for d in _declarations(body) if str(d.get("name", "")).startswith(SEARCH_TOOLS)), None)


def _missing_response_ids(contents: list[dict[str, Any]]) -> bool:
    """True when the last call turn had ids that the function responses do not echo."""
    if len(contents) < 2:
        return False
    call_ids = {get(get(p, "functionCall"), "id") for p in get(contents[-2], "parts") or [] if get(p, "functionCall")}
    answer_ids = {get(get(p, "functionResponse"), "id") for p in get(contents[-1], "parts") or []
                  if get(p, "functionResponse")}
    return bool(call_ids - {None}) and not call_ids <= answer_ids


def _usage(body: dict[str, Any], out: str, thoughts: int) -> dict[str, Any]:
    prompt = max(1, len(json.dumps(get(body, "contents") or [])) // 4)
    cand = len(out) // 4
    return {"promptTokenCount": prompt, "candidatesTokenCount": cand, "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + cand + thoughts}


def _stream_chunks(parts: list[dict[str, Any]], finish: str, body: dict[str, Any], model: str
                   ) -> list[dict[str, Any]]:
    """Split the answer like Gemini streams it: text in pieces, each call whole in its own chunk."""
    pieces: list[dict[str, Any]] = []
    for p in parts:
        text = p.get("text")
        if isinstance(text, str) and len(text) > 12:
            words = text.split(" ")
            k = max(1, len(words) // 3)
            groups = [" ".join(words[i:i + k]) for i in range(0, len(words), k)]
            pieces += [{**p, "text": g + (" " if i < len(groups) - 1 else "")} for i, g in enumerate(groups)]
        else:
            pieces.append(p)
    out_text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    thoughts = sum(len(p.get("text", "")) // 4 for p in parts if p.get("thought"))
    if is_gemini3(model) and not any("functionCall" in p for p in parts):
        # Gemini 3 ends a text answer with a signature-only part.
        pieces.append({"text": "", "thoughtSignature": sign(model, "", out_text)})
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}], "modelVersion": model,
               "responseId": "mock-" + hashlib.sha256(out_text.encode()).hexdigest()[:12]} for p in pieces]
    if not chunks:
        chunks = [{"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "index": 0}]}]
    chunks[-1]["candidates"][0]["finishReason"] = finish
    for c in chunks:
        c["usageMetadata"] = _usage(body, out_text, thoughts)
    return chunks


# How long the pieces of a streamed string argument are (a 20 KB argument arrives in ~20 fragments).
FRAGMENT_CHARS = 1024


def _leaves(value: Any, path: str) -> list[tuple[str, Any]] | None:
    """(jsonPath, scalar) pairs in order; None when an empty object or list cannot be streamed."""
    if isinstance(value, dict):
        if not value:
            return None
        out: list[tuple[str, Any]] = []
        for k, v in value.items():
            quoted = k.replace("\\", "\\\\").replace("'", "\\'")
            key = f".{k}" if re.match(r"^[A-Za-z_]\w*$", k) else f"['{quoted}']"
            sub = _leaves(v, path + key)
            if sub is None:
                return None
            out += sub
        return out
    if isinstance(value, list):
        if not value:
            return None
        out = []
        for i, v in enumerate(value):
            sub = _leaves(v, f"{path}[{i}]")
            if sub is None:
                return None
            out += sub
        return out
    return [(path, value)]


def _partial(path: str, value: Any) -> list[dict[str, Any]]:
    """A leaf as Vertex streams it: a string in pieces that all say willContinue, closed by an empty
    piece without it (tests/recorded/vertex-stream-args-*.jsonl); other values in one piece."""
    if isinstance(value, str):
        pieces = [value[i:i + FRAGMENT_CHARS] for i in range(0, len(value), FRAGMENT_CHARS)]
        return [{"jsonPath": path, "stringValue": p, "willContinue": True} for p in pieces] + [
            {"jsonPath": path, "stringValue": ""}]
    if isinstance(value, bool):
        return [{"jsonPath": path, "boolValue": value}]
    if value is None:
        return [{"jsonPath": path, "nullValue": "NULL_VALUE"}]
    return [{"jsonPath": path, "numberValue": value}]


def _element(path: str) -> str:
    """The array element a leaf belongs to (its path up to the last index), '' for none."""
    end = path.rfind("]")
    return path[:end + 1] if end >= 0 else ""


def fragment_calls(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """streamFunctionCallArguments as recorded from Vertex (tests/recorded/vertex-stream-args-*.jsonl):
    each call as a naming fragment, then one partialArg per chunk (strings in pieces), a bare
    `{"willContinue": true}` after each array element, and the bare end marker `{"functionCall": {}}`
    (proto3 JSON omits `willContinue: false`)."""
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        cand = (chunk.get("candidates") or [{}])[0]
        parts = (cand.get("content") or {}).get("parts") or []
        if len(parts) != 1 or "functionCall" not in parts[0]:
            out.append(chunk)
            continue
        part, fc = parts[0], parts[0]["functionCall"]
        leaves = _leaves(fc["args"], "$") if fc.get("args") else []
        if leaves is None:  # an empty object or list inside: sent whole
            out.append(chunk)
            continue
        head = {**{k: v for k, v in part.items() if k != "functionCall"},
                "functionCall": {k: v for k, v in fc.items() if k != "args"} | {"willContinue": True}}
        pieces = [head]
        for i, (path, value) in enumerate(leaves):
            if i and _element(path) != _element(leaves[i - 1][0]):
                pieces.append({"functionCall": {"willContinue": True}})
            pieces += [{"functionCall": {"partialArgs": [pa], "willContinue": True}} for pa in _partial(path, value)]
        pieces.append({"functionCall": {}})
        for i, piece in enumerate(pieces):
            c = {k: v for k, v in chunk.items() if k != "candidates"}
            piece_cand = {k: v for k, v in cand.items() if k != "finishReason" or i == len(pieces) - 1}
            c["candidates"] = [{**piece_cand, "content": {"role": "model", "parts": [piece]}}]
            out.append(c)
    return out
