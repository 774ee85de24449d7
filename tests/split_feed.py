"""Re-feed a stream cut anywhere: seeded random splits of bytes or text, and the proxy's own decoders
fed with them (the SGLang #31915 method: the same calls must come out however the stream was cut).

`cuts(data, rng)` cuts one way: single bytes, 1-4 bytes (an SGLang-style split), up to 64 bytes, or
at event boundaries moved by a few bytes either way (whole events and several events at once, as a
speculative-decoding server sends them). The feeders return what a consumer would act on, so a split
that loses, merges or reorders a call shows up as a difference from the unsplit feed.
"""

import json
import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from proxy.dialects.base import Dialect, ToolSpec
from proxy.dialects.parse_answer import AnswerParser
from proxy.intercept.capture_calls import CallCapture, SSETap
from proxy.intercept.text_calls import SSERewriter
from proxy.upstream.interactions.answer import StreamTranslator
from proxy.upstream.interactions.client import _event
from proxy.wire.merge_chunks import merge_chunks
from proxy.wire.sse import SSEDecoder

REC = Path(__file__).with_name("recorded")


def cuts[S: (bytes, str)](data: S, rng: random.Random, boundaries: Sequence[int] = ()) -> list[S]:
    """`data` in pieces, cut one of four ways chosen by `rng`."""
    how = rng.choice(("small", "medium", "events", "events"))
    if how == "events" and boundaries:
        points = sorted({max(1, min(len(data) - 1, b + rng.randint(-3, 3)))
                         for b in boundaries if rng.random() < 0.6})
    else:
        top = 4 if how == "small" else 64
        points, at = [], 0
        while (at := at + rng.randint(1, top)) < len(data):
            points.append(at)
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]


def single[S: (bytes, str)](data: S) -> list[S]:
    return [data[i:i + 1] for i in range(len(data))]


def boundaries_of(data: bytes) -> list[int]:
    """Where events end (after each blank line)."""
    out, at = [], 0
    for sep in (b"\r\n\r\n", b"\n\n"):
        at = 0
        while (i := data.find(sep, at)) != -1:
            out.append(i + len(sep))
            at = i + len(sep)
    return sorted(set(out))


# -- recorded streams -------------------------------------------------------------------------------

def sse(events: Sequence[str], sep: bytes = b"\r\n\r\n") -> bytes:
    return b"".join(b"data: " + e.encode() + sep for e in events)


def recorded_streams() -> Iterator[tuple[str, str, bytes]]:
    """(file name, "gemini" | "interactions", SSE bytes) of every recorded stream under tests/recorded/:
    `.jsonl` (one chunk or event a line, framed as Gemini frames them: CRLF; Vertex's as LF), `.sse`
    (the bytes as recorded) and `*.array.json` (the JSON array streamGenerateContent sends without
    alt=sse, one event per element). Globbed: a fixture added later is fed too."""
    for path in sorted(REC.rglob("*")):
        name = str(path.relative_to(REC))
        if path.suffix == ".jsonl":
            lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
            data = sse(lines, b"\n\n" if path.name.startswith("vertex-") else b"\r\n\r\n")
        elif path.suffix == ".sse":
            data = path.read_bytes()
        elif path.name.endswith(".array.json"):
            data = sse([json.dumps(c, ensure_ascii=False) for c in json.loads(path.read_text())])
        else:
            continue
        yield name, ("interactions" if b'"event_type"' in data else "gemini"), data


def decoded(pieces: Sequence[bytes]) -> list[str]:
    """The SSE decoder every upstream and the MITM use (proxy/wire/sse.py)."""
    d = SSEDecoder()
    return [e for p in pieces for e in d.feed(p)] + d.close()


def calls_of(capture: CallCapture) -> list[tuple[Any, ...]]:
    return [(c.gemini_id, c.gemini_name, c.args, c.signature) for c in capture.calls]


def gemini_feed(pieces: Sequence[bytes]) -> dict[str, Any]:
    """A Gemini stream as the MITM's SSE tap records its calls (proxy/intercept/capture_calls.py: the
    decoder, streamed-argument joining), and as the chunk merger answers generateContent."""
    capture = CallCapture()
    tap = SSETap(capture)
    for p in pieces:
        assert tap(p) == p, "the tap passes every byte on unchanged"
    tap(b"")
    chunks = [json.loads(e) for e in decoded(pieces)]
    return {"calls": calls_of(capture), "chunks": len(chunks), "merged": merge_chunks(chunks) if chunks else {}}


def interactions_feed(pieces: Sequence[bytes]) -> dict[str, Any]:
    """An Interactions stream as the Interactions upstream turns it into Gemini chunks
    (proxy/upstream/interactions/client.py `_event`, proxy/upstream/interactions/answer.py)."""
    t, capture, chunks = StreamTranslator(), CallCapture(), []
    for payload in decoded(pieces):
        event = _event(payload)
        if event is None:
            continue
        for chunk in t.event(event):
            capture.feed(chunk)
            chunks.append(chunk)
    return {"calls": calls_of(capture), "merged": merge_chunks(chunks) if chunks else {}}


FEEDERS: dict[str, Callable[[Sequence[bytes]], dict[str, Any]]] = {"gemini": gemini_feed,
                                                                   "interactions": interactions_feed}


# -- text dialects ----------------------------------------------------------------------------------

def parse_pieces(d: Dialect, tools: dict[str, ToolSpec], pieces: Sequence[str]) -> dict[str, Any]:
    """A model's text answer fed to the dialect's parser piece by piece (proxy/dialects/text_parser.py)."""
    parser = d.parser(tools)
    events = [e for p in pieces for e in parser.feed(p)] + parser.close("stop")
    return {"calls": [(c.name, c.arguments) for k, c in events if k == "call"],
            "text": "".join(v for k, v in events if k == "text"),
            "warnings": [v for k, v in events if k == "warning"]}


def text_stream(pieces: Sequence[str]) -> bytes:
    """Text pieces as Gemini streams them: one chunk each, the last one finished."""
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}]} for p in pieces]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    return sse([json.dumps(c, ensure_ascii=False) for c in chunks])


def mitm_text_calls(d: Dialect, tools: list[ToolSpec], data_pieces: Sequence[bytes]) -> list[tuple[Any, ...]]:
    """The MITM's text-call path end to end: Gemini SSE carrying dialect text, rewritten event by event
    into functionCall parts (proxy/intercept/text_calls.py), then recorded by the capture tap."""
    rewriter, capture = SSERewriter(AnswerParser(d, tools)), CallCapture()
    tap = SSETap(capture)
    for p in [*data_pieces, b""]:
        out = rewriter(p)
        for piece in out if isinstance(out, list) else [out]:
            if piece:
                tap(piece)
    tap(b"")
    assert not rewriter.broken
    return [(c.gemini_name, c.args) for c in capture.calls]
