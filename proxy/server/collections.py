"""Which of Gemini's collections a client key may reach through the proxy, and on what terms.

With client keys the proxy calls Google as itself for every tenant, so a collection it cannot scope
would be shared by all of them. The rule is fail closed: a collection is served only if the proxy
knows it —

- OWNED: its objects belong to the key that created them through the proxy (object_owners.py);
  sub-resources and custom methods (`triggers/t/executions`, `webhooks/w:ping`) follow their parent;
- SHARED: Google's own, the same for everyone (the models);
- STATELESS: methods that keep nothing at Google (their bodies are still checked for names of
  another tenant's objects);

— or an operator allowed it unscoped (`--passthrough-collection NAME`). Anything else is refused
with a 403 naming the collection and that option. Without client keys (one tenant, or each client
with its own Google key) every path passes.

The collections are those google-genai 3.6 reaches (its `files`, `caches`, `batches`, `tunings`,
`file_search_stores`, `documents`, `operations` modules and the generated `_gaos/*.py`:
agents, environments, triggers, webhooks, credentials, voices, decisions); a test enumerates the
installed SDK's operations so that a new release cannot open one silently
(tests/test_collections_scoped.py).
"""

import re
from typing import Any

from proxy.errors import ProxyError

OWNED = frozenset({"files", "cachedContents", "batches", "tunedModels", "corpora", "fileSearchStores",
                   "generatedFiles", "operations", "agents", "environments", "triggers", "webhooks",
                   "credentials", "voices"})
SHARED = frozenset({"models"})
STATELESS = frozenset({"decisions"})
KNOWN = OWNED | SHARED | STATELESS
PASSTHROUGH_OPTION = "--passthrough-collection"

# A collection's name as it may appear in a path (Gemini's collections are lowerCamelCase words).
COLLECTION = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")

# Fields of a create or update body that name another object by its bare id: it must be the
# caller's own (google-genai 3.6's types: Agent.base_agent / base_environment,
# CreateEnvironmentRequest.from_environment, Trigger.environment_id / previous_interaction_id and
# its CreateAgentInteraction's agent / environment / previous_interaction_id). Names written out
# whole (`files/x`, a file's URI, `cachedContents/y`) are found anywhere in a body (names_in).
REFERENCES: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "agents": ((("base_agent",), "agents"), (("base_environment",), "environments")),
    "environments": ((("from_environment",), "environments"),),
    "triggers": ((("environment_id",), "environments"), (("previous_interaction_id",), "interactions"),
                 (("interaction", "agent"), "agents"), (("interaction", "environment"), "environments"),
                 (("interaction", "previous_interaction_id"), "interactions")),
}
# Google's own agents, which a trigger or an agent may name without owning them: google-genai 3.6's
# AgentOption (deep-research-*, antigravity-preview-*). An id a tenant created through the proxy is
# its own whatever it looks like (its record is checked first).
BUILTIN_AGENT = re.compile(r"^(?:agents/)?(?:deep-research-[a-z0-9-]+|antigravity-preview-[0-9]{2}-[0-9]{4})$")

_OWNED_NAME = re.compile(r"^(?:https://generativelanguage\.googleapis\.com/(?:v1[a-z0-9]*/)?)?("
                         + "|".join(sorted(OWNED)) + r")/([A-Za-z0-9_\-.]+)$")


def collection_of(segments: list[str]) -> str:
    """`triggers` for `triggers/t/executions`, `files` for `files:register`."""
    return segments[0].split(":", 1)[0]


def refusal(collection: str) -> ProxyError:
    """The answer for a collection the proxy cannot scope, in Gemini's shape (a 403)."""
    return ProxyError(f"The Gemini collection '{collection}' is not served to client keys: this proxy cannot keep "
                      f"its objects per client key, and would share them between tenants. An operator can allow it "
                      f"unscoped with {PASSTHROUGH_OPTION} {collection} (addon: gtp_passthrough_collections).",
                      status=403, code="permission_denied")


def check_allowed(collection: str, passthrough: frozenset[str]) -> None:
    """A client key's path: its collection must be one the proxy scopes or an operator allowed."""
    if collection not in KNOWN and collection not in passthrough:
        raise refusal(collection)


def parse_passthrough(names: list[str] | tuple[str, ...]) -> frozenset[str]:
    """`--passthrough-collection` values; a name that is not a collection's is a ValueError."""
    for name in names:
        if not COLLECTION.match(name):
            raise ValueError(f"--passthrough-collection must name a collection such as 'voices', not {name!r}")
    return frozenset(names)


def names_in(value: Any) -> list[str]:
    """Every owned object's name (`files/x`, `cachedContents/y`, a file's URI) written out whole in a
    JSON value, at any depth: these objects are reachable by name from any body."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            m = _OWNED_NAME.match(item) if "/" in item else None
            if m:
                found.append(f"{m.group(1)}/{m.group(2)}")
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def references(collection: str, body: Any) -> list[tuple[str, str]]:
    """(collection, name) for each bare id a create or update body of `collection` names."""
    found = []
    for path, target in REFERENCES.get(collection, ()):
        value = body
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str) and value:
            name = value if value.startswith(target + "/") else f"{target}/{value}"
            found.append((target, name))
    return found


def item_name(collection: str, item: Any) -> str | None:
    """An object's name in a create answer or a list: its `name` (`files/x`), else its `id` (the
    generated collections name objects by id: agents, environments, triggers, webhooks...)."""
    if not isinstance(item, dict):
        return None
    name = item.get("name")
    if isinstance(name, str):
        m = _OWNED_NAME.match(name)
        if m and m.group(1) == collection:
            return f"{m.group(1)}/{m.group(2)}"
    ident = item.get("id")
    if isinstance(ident, str) and re.fullmatch(r"[A-Za-z0-9_\-.]+", ident):
        return f"{collection}/{ident}"
    return None
