"""Large bodies kept as what they add to the last one on their route (journal/splice.py): read back
byte for byte, never across client keys, counted honestly, forgotten with the exchange that kept them."""

import gc
import tracemalloc

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.fast_json import held
from proxy.journal.exchange import Exchange
from proxy.journal.kept import FROZEN, thaw
from proxy.journal.ring import Journal
from proxy.journal.splice import GRAIN, NEW_AT_MOST, SPLICE_MIN, SPLICED, Bases, common_ends, joined


def _exact_ends(new: bytes, base: bytes) -> tuple[int, int]:
    """The exact common prefix and the exact common suffix, each on its own (they may overlap)."""
    most, head = min(len(new), len(base)), 0
    while head < most and new[head] == base[head]:
        head += 1
    tail = 0
    while tail < most and new[-1 - tail] == base[-1 - tail]:
        tail += 1
    return head, tail


@settings(max_examples=300)
@given(base=st.binary(max_size=600), edits=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 700),
                                                              st.binary(min_size=1, max_size=80)), max_size=4))
def test_common_ends_are_common_and_nearly_the_longest(base: bytes, edits: list) -> None:
    """Whatever two bodies are, the ends found are shared by both, never overlap in either, and fall
    short of the exact ones by less than GRAIN bytes each (what is short is kept in the bytes between)."""
    new = bytearray(base)
    for kind, at, data in edits:
        at = min(at, len(new))
        if kind == 0:
            new[at:at] = data
        elif kind == 1:
            del new[at:at + len(data)]
        else:
            new[at:at + len(data)] = data[::-1]
    new = bytes(new)
    head, tail = common_ends(new, base)
    exact_head, exact_tail = _exact_ends(new, base)
    assert new[:head] == base[:head] and new[len(new) - tail:] == base[len(base) - tail:]
    assert exact_head - GRAIN < head <= exact_head
    room = min(exact_tail, min(len(new), len(base)) - head)  # the tail never overlaps the head
    assert room - GRAIN < tail <= room
    spliced = (base, head, new[head:len(new) - tail], tail)
    assert joined(spliced) == new


def _turn_body(turns: int) -> bytes:
    """An agent's request after `turns` turns: its history grows at the end, its tools follow."""
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}: " + "lorem ipsum " * 40}
               for i in range(turns)]
    tools = [{"type": "function", "name": f"tool_{i}", "parameters": {"type": "object"}} for i in range(40)]
    return held(orjson.dumps({"model": "gemini-2.5-flash", "input": history, "tools": tools}))


def _exchange(i: int, body: bytes, scope: str = "", sent: bytes | None = None) -> Exchange:
    ex = Exchange(id=i, kind="frontend", method="POST", path="/v1/responses", protocol="responses", scope=scope)
    ex.request_body = body
    call = ex.upstream("gemini-2.5-flash", sent if sent is not None else body.replace(b'"input"', b'"contents"'),
                       stream=False)
    call.raw = True  # the proxy's own bytes, as GeminiUpstream records them
    call.answer = b'{"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"STOP"}]}'
    ex.status = 200
    return ex


def _kept_bodies(journal: Journal, number: int) -> tuple:
    """The request body and the Gemini request body of exchange `number` as the journal holds them."""
    from proxy.journal.kept import _BODY, _FROZEN, META
    frozen = journal._entries[number][FROZEN]
    return frozen[_FROZEN.index("request_body")], frozen[META + 1 + _BODY]


def test_an_agents_turns_are_kept_as_splices_and_read_back_byte_for_byte() -> None:
    """Turn after turn the same history grows: the first body is kept whole, each next one as a
    splice of it holding only what it adds, and every exchange reads back as the bytes it was."""
    journal = Journal()
    bodies = [_turn_body(n) for n in range(20, 26)]
    assert len(bodies[0]) >= SPLICE_MIN
    for i, body in enumerate(bodies):
        journal.add(_exchange(i, body))
    first_request, first_sent = _kept_bodies(journal, 0)
    assert first_request is bodies[0]  # kept as read, and the route's base
    for i, body in enumerate(bodies):
        request, sent = _kept_bodies(journal, i)
        if i:
            assert type(request) is tuple and len(request) == SPLICED and request[0] is first_request
            assert type(sent) is tuple and sent[0] is first_sent
            assert len(request[2]) <= len(body) * NEW_AT_MOST
        ex = thaw(journal._entries[i][FROZEN])
        assert ex.request_body == body and ex.upstreams[0].body == body.replace(b'"input"', b'"contents"')
        doc = orjson.loads(journal.get("", ex.name))
        assert doc["client_request"]["body"] == orjson.loads(body)
        assert doc["upstream"][0]["request"] == orjson.loads(ex.upstreams[0].body)
    gc.collect()
    gc.collect()  # (a tuple is untracked once what it holds is: the splice's tuple first, then the entry)
    assert not any(gc.is_tracked(kept) for kept in journal._entries.values())  # splices are plain values


def test_the_journal_counts_a_base_with_every_splice_of_it() -> None:
    """A splice keeps its base alive, so the journal counts the base in each exchange whose body
    refers to it: what it holds (tracemalloc) never exceeds what it counts."""
    journal = Journal()
    gc.collect()
    tracemalloc.start()
    bodies = [_turn_body(n) for n in range(20, 60)]
    for i, body in enumerate(bodies):
        journal.add(_exchange(i, body))
    del bodies, body
    gc.collect()
    held_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert held_bytes <= journal.total, (held_bytes, journal.total)


def test_a_base_is_forgotten_with_its_exchange_and_its_splices_still_read_back() -> None:
    """When the exchange that kept a base whole leaves the journal, the route forgets the base (the
    next large body becomes one); the splices still kept read back whole (they hold their base)."""
    bodies = [_turn_body(n) for n in range(20, 30)]
    journal = Journal(max_bytes=len(bodies[-1]) * 10)  # some five exchanges of two bodies each
    for i, body in enumerate(bodies):
        journal.add(_exchange(i, body))
        assert journal.total <= journal.max_bytes
    assert 0 not in journal._entries  # the first exchange, which kept the base, is gone
    assert len(journal.bases) == 2  # the request's route and the Gemini request's, based on later bodies
    assert all(known[0] is not bodies[0] for known in journal.bases._by_route.values())
    assert journal.bases._owner.keys() <= set(journal._entries)  # only exchanges still kept own a base
    for number in journal._entries:
        assert thaw(journal._entries[number][FROZEN]).request_body == bodies[number]


def test_bodies_of_different_client_keys_never_share_a_base() -> None:
    """Splices never cross scopes: the same body under two client keys is kept whole under each."""
    journal = Journal()
    body = _turn_body(30)
    journal.add(_exchange(1, body, scope="key-a"))
    journal.add(_exchange(2, body, scope="key-b"))
    journal.add(_exchange(3, _turn_body(31), scope="key-a"))
    a, b, a2 = (_kept_bodies(journal, n)[0] for n in (1, 2, 3))
    assert type(a) is bytes and type(b) is bytes and a2[0] is a
    assert journal.get("key-b", thaw(journal._entries[3][FROZEN]).name) is None


def test_a_body_sharing_too_little_becomes_the_new_base() -> None:
    """A body that adds more than NEW_AT_MOST of itself to the base is kept whole, and the next
    bodies are spliced against it."""
    journal = Journal()
    first = _turn_body(20)
    other = held(orjson.dumps({"different": "x" * len(first)}))
    next_ = other[:-2] + b'y"}'
    for i, body in enumerate((first, other, next_)):
        journal.add(_exchange(i, body))
    kept = [_kept_bodies(journal, n)[0] for n in range(3)]
    assert kept[0] is first and kept[1] is other and kept[2][0] is other
    assert thaw(journal._entries[2][FROZEN]).request_body == next_


def test_small_bodies_and_the_apps_own_bytes_are_kept_as_before() -> None:
    """Bodies under SPLICE_MIN are kept whole (finding what they share costs more than it saves); the
    addon's bytes sent as they came are kept once, with the request, spliced or not."""
    journal = Journal()
    small = b'{"input":"hi"}'
    journal.add(_exchange(1, small))
    journal.add(_exchange(2, small))
    assert _kept_bodies(journal, 2)[0] is small and len(journal.bases) == 0
    bodies = [_turn_body(20), _turn_body(21)]
    for i, body in enumerate(bodies, start=3):
        journal.add(_exchange(i, body, sent=body))  # the addon forwarded the app's bytes unchanged
    request, sent = _kept_bodies(journal, 4)
    assert sent is request and request[0] is bodies[0]
    assert thaw(journal._entries[4][FROZEN]).upstreams[0].body == bodies[1]


def test_a_cut_exchange_leaves_no_base_behind() -> None:
    """An exchange too large for the journal keeps its summary only: the bodies it would have made
    bases of are forgotten at once (nothing holds them uncounted)."""
    body = _turn_body(40)
    journal = Journal(max_bytes=len(body) * 4 - 1)  # one exchange (two copies of the body) is over a quarter
    journal.add(_exchange(1, body))
    assert len(journal.bases) == 0 and not journal.bases._owner
    assert "cut" in orjson.loads(journal.get("", thaw(journal._entries[1][FROZEN]).name))["client_request"]["body"]


def test_bases_keep_at_most_max_bases_routes() -> None:
    from proxy.journal import splice

    bases = Bases()
    body = b"x" * SPLICE_MIN
    for i in range(splice.MAX_BASES + 10):
        bases.kept(("", None, f"/v1/{i}", 0), body, i, False)
    assert len(bases) == splice.MAX_BASES


def test_a_body_changed_before_where_the_last_one_was_is_read_back_byte_for_byte() -> None:
    """The ends the last body shared with the base are only a guess for the next one: a body changed
    earlier (a client that edits its history: compaction, a moved cache marker) or later is spliced
    by what it really shares."""
    journal = Journal()
    base = _turn_body(30)
    grown = _turn_body(31)
    early = base.replace(b"turn 3:", b"turn 3!", 1)  # changed before where `grown` left the base
    late = base[:-40] + b"x" + base[-39:]  # changed after it
    bodies = (base, grown, early, late, grown)
    for i, body in enumerate(bodies):
        journal.add(_exchange(i, body))
    for i, body in enumerate(bodies):
        request, _ = _kept_bodies(journal, i)
        assert i == 0 or request[0] is base
        assert thaw(journal._entries[i][FROZEN]).request_body == body


def test_clearing_the_journal_lets_go_of_its_bases_too() -> None:
    journal = Journal()
    for i, body in enumerate((_turn_body(20), _turn_body(21))):
        journal.add(_exchange(i, body))
    assert len(journal.bases) == 2
    journal.clear()
    assert len(journal) == 0 and journal.total == 0 and len(journal.bases) == 0 and not journal.bases._owner
