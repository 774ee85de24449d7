"""Which upstream answers which model: `--openai-upstream PATTERN=BASE_URL` routes matching models
to an OpenAI-compatible server, everything else goes to Gemini (first match wins)."""

from collections.abc import AsyncIterator
from typing import Any

from proxy.pattern_rules import parse_rules, rule_for
from proxy.upstream.base import Upstream

UPSTREAM_APIS = ("generate", "interactions")


def parse_routes(specs: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """`["qwen*=http://127.0.0.1:8000/v1"]` -> [(pattern, base_url)]; a bad entry is a ValueError."""
    routes = []
    for spec in specs:
        pattern, _, url = spec.partition("=")
        if not pattern.strip() or not url.startswith(("http://", "https://")):
            raise ValueError(f"--openai-upstream must be PATTERN=http(s)://HOST[:PORT]/v1, not {spec!r}")
        routes.append((pattern.strip(), url))
    return routes


def parse_budgets(specs: list[str] | tuple[str, ...]) -> list[tuple[str, int]]:
    """`["qwen3*=256"]` -> [(pattern, budget tokens)]."""
    out = []
    for spec in specs:
        pattern, _, budget = spec.rpartition("=")
        if not pattern.strip() or not budget.isdigit() or int(budget) < 1:
            raise ValueError(f"--two-pass must be PATTERN=BUDGET (a positive number of tokens), not {spec!r}")
        out.append((pattern.strip(), int(budget)))
    return out


def parse_upstream_api(specs: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """`["gemini-3.5*=interactions", "generate"]` -> [(pattern, api)] (`--upstream-api`)."""
    return parse_rules(specs, UPSTREAM_APIS, "--upstream-api")


def gemini_routes(generate: Upstream, interactions: Upstream | None, rules: list[tuple[str, str]]
                  ) -> list[tuple[str, Upstream]]:
    """Routes for `--upstream-api` rules (first match wins, like every route)."""
    return [(p, interactions if api == "interactions" and interactions is not None else generate) for p, api in rules]


class RoutedUpstream:
    def __init__(self, default: Upstream, routes: list[tuple[str, Upstream]]) -> None:
        self.default, self.routes = default, routes

    def pick(self, model: str) -> Upstream:
        name = model.removeprefix("models/")
        routed = rule_for(name, self.routes)
        return self.default if routed is None else routed

    async def generate(self, model: str, body: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
        return await self.pick(model).generate(model, body, api_key)

    async def stream(self, model: str, body: dict[str, Any], api_key: str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        return await self.pick(model).stream(model, body, api_key)

    async def close(self) -> None:
        for upstream in {id(u): u for u in [self.default, *(u for _, u in self.routes)]}.values():
            await upstream.close()
