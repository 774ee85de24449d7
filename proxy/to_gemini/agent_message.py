"""Codex MultiAgentV2 `agent_message` items -> the user text Gemini reads.

Codex (>= 0.146, openai/codex PRs #26210, #27830) hands one agent's message to another as an
`agent_message` input item: `author` and `recipient` are agent paths (`/root`, `/root/worker`), the
content is `input_text` parts (a child's completion, Codex's own "Message Type: NEW_TASK ..." header)
and `encrypted_content` parts (a `spawn_agent`/`send_message`/`followup_task` message OpenAI's
Responses API encrypted: only OpenAI can open it). Gemini has no such item, so the message becomes a
user turn naming its author (as inspect_ai PRs #4776/#4787 render it). Ciphertext is never given to
Gemini as if it were text: each encrypted part is named as withheld, with its size, so neither the
model nor the reader is told a message was empty when it was not. The proxy's own calls never make
ciphertext: it marks the collaboration calls it returns plaintext (`encrypted_function_args: []`,
openai/codex PR #35845), so Codex delivers their messages as `input_text`.
"""


from proxy.errors import ProxyError
from proxy.wire.responses import AgentMessageItem

WITHHELD = ("[encrypted message part withheld: {size} characters sealed by the sender's provider (OpenAI's "
            "Responses API), which only that provider can open; ask the sender to resend it in plain text]")


def agent_message_text(item: AgentMessageItem, index: int) -> str:
    """The text of `input[index]`, an agent_message, as the user turn Gemini gets."""
    author = item.author if isinstance(item.author, str) and item.author else "another agent"
    head = f"Agent message from {author}"
    if isinstance(item.recipient, str) and item.recipient:
        head += f" to {item.recipient}"
    content = item.content
    if content is None or isinstance(content, str):
        return f"{head}:\n{content or ''}"
    texts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "text", "output_text") and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "encrypted_content" and isinstance(part.get("encrypted_content"), str):
            texts.append(WITHHELD.format(size=len(part["encrypted_content"])))
        else:
            where = f"input[{index}].content[{j}]"
            raise ProxyError(f"Content parts of type {kind!r} are not supported in an agent_message ('{where}'); "
                             "the request is refused rather than sent without it.", param=where,
                             code="unsupported_content")
    return f"{head}:\n" + "".join(texts)
