"""Identifier minting. OpenAI clients cap call ids at 40 (Chat) / 64 (Responses) characters."""

import hashlib
import itertools
import os

MAX_CALL_ID_LEN = 40  # Chat Completions' limit (LiteLLM#11392); the tighter of the two.

# Random bytes are drawn from the OS a few KiB at a time: one getrandom call per id cost more than
# the rest of minting it (an answer mints several).
_POOL_BYTES = 4096
_pool = memoryview(b"")


def _token(n: int = 24) -> str:
    global _pool
    size = n // 2
    if len(_pool) < size:
        _pool = memoryview(os.urandom(_POOL_BYTES))
    out, _pool = _pool[:size], _pool[size:]
    return out.hex()


# Exchange ids: this process's random prefix and a count (see exchange_id).
_exchange_prefix = os.urandom(8).hex()
# An exchange's number, minted on every request's path (a C call); its id is made of it when read.
exchange_number = itertools.count().__next__


def _after_fork() -> None:
    """A forked child must not mint its parent's next ids: a new pool and exchange prefix."""
    global _pool, _exchange_prefix
    _pool = memoryview(b"")
    _exchange_prefix = os.urandom(8).hex()


os.register_at_fork(after_in_child=_after_fork)


def derived(prefix: str, owner: str, index: int) -> str:
    """A stable id for the `index`-th item of `owner` (a stored response's input items): the same on
    every read, on every instance, without being stored."""
    return f"{prefix}_{hashlib.blake2b(f'{owner}:{index}'.encode(), digest_size=16).hexdigest()}"


def answer_id() -> str:
    """A usage row's answer id: 32 random hex digits (as uuid4().hex was), from the pool (no syscall)."""
    return _token(32)


def request_id() -> str:
    return "req_" + _token(12)


def response_id() -> str:
    return f"resp_{_token(32)}"


def message_id() -> str:
    return f"msg_{_token(32)}"


def function_item_id() -> str:
    return f"fc_{_token(32)}"


def reasoning_id() -> str:
    return f"rs_{_token(32)}"


def call_id() -> str:
    """A fresh call_id for a Gemini functionCall that came without an id (Gemini 2.5)."""
    return f"call_{_token(24)}"  # 29 characters, well under MAX_CALL_ID_LEN


def web_search_id() -> str:
    return f"ws_{_token(32)}"


def interaction_id() -> str:
    """Google's interaction ids start with the API generation ("v1_...")."""
    return f"v1_{_token(40)}"


def compaction_id() -> str:
    return f"cmp_{_token(32)}"


def exchange_id(number: int) -> str:
    """The id of this process's exchange `number` (journal/recorder.py): unique across instances
    sharing a journal (64 random bits per process), made only when someone reads the exchange. It
    need not be unguessable: an exchange is read only under its client's key (journal/ring.py)."""
    return f"ex_{_exchange_prefix}{number:08x}"


def exchange_number_of(exchange_id: str) -> int | None:
    """The number exchange_id() was given, for an id of this process's (else None)."""
    head = f"ex_{_exchange_prefix}"
    count = exchange_id[len(head):]
    if not exchange_id.startswith(head) or not 8 <= len(count) <= 16 or count.strip("0123456789abcdef"):
        return None
    return int(count, 16)
