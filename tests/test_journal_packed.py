"""The shared journal's entries (journal/packed.py): scrubbed before they leave the process, and made
into the same document and summary by any instance that reads them as by the one that served them."""

import orjson
import pytest

from proxy import ids
from proxy.journal.exchange import Exchange, pairs
from proxy.journal.kept import _FROZEN, FROZEN, META
from proxy.journal.packed import Unpackable, pack, unpack
from proxy.journal.redact import Redactor
from proxy.journal.ring import Journal

KEY = "client-key-canary-0123456789"  # presented by the request: a secret of this exchange only
KNOWN = "gemini-key-canary-9876543210"  # one the instance knows (the redactor's)
CANARIES = (KEY.encode(), KNOWN.encode(), b"AIzaSyCanary0123456789012345678901234", b"custom-credential-7")


def served(number: int | str) -> Exchange:
    """An exchange holding secrets in every place one can be: credential headers (one whose value is
    no known secret), the query, bodies (one not UTF-8, one cut), the stream, notes, the error, and an
    upstream call's body, answer, chunks and error."""
    ex = Exchange(number, "frontend", "POST", f"/v1beta/models/m:streamGenerateContent?alt=sse&key={KEY}",
                  ((b"Authorization", f"Bearer {KEY}".encode()), (b"X-Api-Key", b"custom-credential-7"),
                   (b"Content-Type", b"application/json"),
                   (b"traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")),
                  request_id="req_1", session="s1", scope="c-aaaaaaaaaaaa", client_model="gpt-5")
    ex.request_body = orjson.dumps({"input": f"my key is {KEY}, {KNOWN}", "note": CANARIES[2].decode(),
                                    "text": "caf\u00e9 \u2603"})
    ex.answer_headers = {"Content-Type": "application/json", "Set-Cookie": "session=custom-credential-7"}
    ex.answer_body = b"\xff\xfe not UTF-8 " + KEY.encode()
    ex.streamed(b"data: " + KNOWN.encode() + b"\n\n")
    ex.note("repair", f"a note quoting {KEY}", path="/tools/0")
    ex.error = {"message": f"refused {KNOWN}", "status": 400}
    call = ex.upstream("gemini-2.5-flash", {"contents": [{"parts": [{"text": KEY}]}],
                                            "tools": [{"functionDeclarations": [{"name": "f"}]}]}, stream=True)
    call.chunk({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"k": KNOWN}}}]},
                                "finishReason": "STOP"}]})
    call.error = f"upstream said {KEY}"
    call.first_byte = call.last_byte = call.start + 0.01
    call2 = ex.upstream("gemini-2.5-pro", ("x" * 10 + KEY).encode() * 20_000, stream=False)  # cut: head kept
    call2.answer = b'{"candidates":[]}'
    ex.status, ex.end = 400, ex.start + 0.02
    return ex


def entry(journal: Journal, ex: Exchange) -> tuple:
    journal.add(ex)
    return journal._entries[ex.id]


@pytest.mark.parametrize("number", [7, "ex_given"])
def test_any_instance_renders_an_entry_as_its_owner_does(number) -> None:
    owner = Journal(redactor=Redactor([KNOWN]))
    kept = entry(owner, served(number))
    exchange_id, scope, brief, packed = owner.packed(kept)
    assert exchange_id == (ids.exchange_id(7) if number == 7 else number) and scope == "c-aaaaaaaaaaaa"
    for canary in CANARIES:
        assert canary not in packed and canary not in brief
    reader = Journal()  # another instance: knows no secret, and needs none
    back = unpack(packed)
    assert orjson.loads(reader.document(back)) == orjson.loads(owner.document(kept))
    assert reader._summary(_thawed(back))[1] == owner._summary(_thawed(kept))[1]
    summary = reader._summary(_thawed(back))[1]
    assert summary["id"] == exchange_id and summary["calls"][0]["name"] == "f" and summary["error"]
    assert orjson.loads(brief) == ["s1", "gemini", "frontend", 400, "gpt-5", "gemini-2.5-pro", True]


def test_the_exchanges_own_secrets_are_blanked_even_when_short() -> None:
    journal = Journal()
    ex = Exchange(1, "frontend", "POST", "/v1/responses", ((b"Authorization", b"Bearer tiny"),))
    ex.identify()  # as when traces read it first
    assert ex.secrets == ("tiny",)
    _, _, brief, packed = journal.packed(entry(journal, ex))
    assert b"tiny" not in packed and b"tiny" not in brief


def test_bytes_come_back_as_they_were_when_nothing_is_secret() -> None:
    journal = Journal()
    ex = Exchange(2, "mitm", "POST", "/v1beta/models/m:generateContent", ((b"Accept", b"*/*"),))
    ex.request_body = b'{"contents":[{"parts":[{"text":"caf\xc3\xa9 \\" \\\\ \\n"}]}]}'
    ex.answer_body = bytes(range(256))
    kept = entry(journal, ex)
    back = unpack(journal.packed(kept)[3])
    frozen, was = back[FROZEN], kept[FROZEN]
    at = _FROZEN.index("request_body")
    assert frozen[at:at + 3] == was[at:at + 3] and frozen[META:] == was[META:] and len(back) == len(kept)
    assert pairs(frozen[at + 3]) == pairs(was[at + 3]) == (("Accept", "*/*"),)


@pytest.mark.parametrize("junk", [b"not json", b"{}", b"[1, 2]", b'["vx", 1, 2]', b'["b", 1]', b'["b", "zz"]',
                                  b'["h", [1]]'])
def test_what_is_not_a_packed_entry_is_refused(junk) -> None:
    with pytest.raises(Unpackable):
        unpack(junk)


def test_pack_scrubs_what_the_redactor_knows() -> None:
    _, brief, packed = pack(entry(Journal(), served(3)), Redactor([KNOWN]))
    assert KNOWN.encode() not in packed and b"[redacted]" in packed


def _thawed(kept: tuple) -> Exchange:
    from proxy.journal.kept import thaw
    return thaw(kept[FROZEN])
