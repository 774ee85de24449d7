"""Identifier minting. OpenAI clients cap call ids at 40 (Chat) / 64 (Responses) characters."""

import secrets

MAX_CALL_ID_LEN = 40  # Chat Completions' limit (LiteLLM#11392); the tighter of the two.


def _token(n: int = 24) -> str:
    return secrets.token_hex(n // 2)


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
