"""The search over deferred tools (pure): regex with RE2 and BM25 with bm25s, over each tool's name,
description and parameter names and descriptions -- what Anthropic's tool-search tools and OpenAI's
`tool_search` read. Gemini has no such feature; the proxy runs the search so a client's hundreds of
MCP tools cost the request only the ones the model found (deferral.py decides what is declared).

RE2 runs in linear time, so a client's pattern cannot stall the process (a backtracking engine on
`(a+)+$` would); a pattern RE2 cannot compile is the search's error, said to the model, never a crash.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import bm25s
import re2

# Anthropic's documented bounds: a pattern up to 200 characters; 3 to 5 tools per search by default.
MAX_PATTERN = 200
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
_WORD_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-.:/]+")


@dataclass(frozen=True)
class SearchEntry:
    """One deferred tool as the search reads it; `name` is the client's flat name (qualified for a
    namespace member: tool_names.qualified)."""

    name: str
    description: str
    params: tuple[str, ...]  # parameter names, then their descriptions

    @property
    def text(self) -> str:
        return "\n".join([self.name, self.description, *self.params])


class SearchError(ValueError):
    """A search the proxy cannot run (a bad pattern, an empty query): `code` in Anthropic's words."""

    def __init__(self, message: str, code: str = "invalid_pattern") -> None:
        super().__init__(message)
        self.code = code


def entry_of(name: str, description: str | None, parameters: dict[str, Any] | None) -> SearchEntry:
    params: list[str] = []
    props = parameters.get("properties") if isinstance(parameters, dict) else None
    if isinstance(props, dict):
        params += [str(k) for k in props]
        params += [v["description"] for v in props.values() if isinstance(v, dict) and isinstance(
            v.get("description"), str)]
    return SearchEntry(name, description or "", tuple(params))


def clamp_limit(limit: Any) -> int:
    return min(max(limit, 1), MAX_LIMIT) if isinstance(limit, int) and not isinstance(limit, bool) else DEFAULT_LIMIT


def search_regex(entries: Iterable[SearchEntry], pattern: Any, limit: Any = None) -> list[str]:
    """Names of the tools whose text the pattern matches (Python `re.search` semantics, the syntax
    Anthropic documents, as RE2 reads it), in declaration order."""
    if not isinstance(pattern, str) or not pattern:
        raise SearchError("The search needs a non-empty regex pattern.")
    if len(pattern) > MAX_PATTERN:
        raise SearchError(f"The pattern is longer than {MAX_PATTERN} characters.", "pattern_too_long")
    options = re2.Options()
    options.log_errors = False  # RE2 logs to stderr, past the log's format and rate limit
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as e:
        raise SearchError(f"The pattern is not a regular expression RE2 reads: {e}.") from None
    return [e.name for e in entries if compiled.search(e.text)][:clamp_limit(limit)]


def _words(text: str) -> str:
    """camelCase and snake_case split into words, so `create_issue` and `createIssue` match "issue"."""
    return _WORD_SPLIT.sub(" ", text).lower()


def search_bm25(entries: Iterable[SearchEntry], query: Any, limit: Any = None) -> list[str]:
    """Names of the tools BM25 ranks for the query (natural language), best first; tools that share
    no word with the query are not returned."""
    if not isinstance(query, str) or not query.strip():
        raise SearchError("The search needs a non-empty query.", "invalid_pattern")
    entries = list(entries)
    if not entries:
        return []
    corpus = bm25s.tokenize([_words(e.text) for e in entries], stopwords="en", show_progress=False)
    asked = bm25s.tokenize([_words(query)], stopwords="en", show_progress=False)
    if not corpus.vocab or not any(asked.ids[0]):
        return []
    ranker = bm25s.BM25()
    ranker.index(corpus, show_progress=False)
    k = min(clamp_limit(limit), len(entries))
    found, scores = ranker.retrieve(asked, k=k, show_progress=False)
    return [entries[int(i)].name for i, s in zip(found[0], scores[0], strict=True) if s > 0]


def search(entries: Iterable[SearchEntry], kind: str, text: Any, limit: Any = None) -> list[str]:
    """`kind`: "regex" or "bm25"."""
    return search_regex(entries, text, limit) if kind == "regex" else search_bm25(entries, text, limit)
