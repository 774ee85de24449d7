"""Usage counters per client key id (`k-...`/scope, never the key) x model x UTC day, with cost.
The core of issue 61 item 1: no route records into it and no option reads a prices file yet.

Cost is computed per answer, when it is recorded, not on the day's sums: Gemini's long-context tier
applies to a whole request whose prompt crosses the threshold (genai-prices' TieredPrices are that
"cliff" model), so summing tokens first would bill a day of small requests at the long-context rate.
Each answer's cost is added as an integer of nano-dollars, so counters add up exactly across
instances (Redis HINCRBY; floats would not).

Prices: genai-prices' bundled snapshot (pydantic's maintained price data), or a `--prices FILE`
override of per-model prices in genai-prices' own field names (input_mtok, cache_read_mtok,
output_mtok; a number or {"base": N, "tiers": [{"start": T, "price": P}]}); models the file does not
name keep genai-prices' price.
"""

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import genai_prices
from genai_prices.types import ModelPrice, Tier, TieredPrices

FIELDS = ("requests", "input", "cached", "thinking", "output", "tool_calls", "errors", "cost_nusd", "unpriced")
PRICE_KEYS = ("input_mtok", "cache_read_mtok", "output_mtok")
NANO = Decimal(10**9)


@dataclass(frozen=True)
class AnswerUsage:
    """One answer's usage as Gemini billed it (usageMetadata)."""

    input: int = 0      # promptTokenCount (includes the cached tokens)
    cached: int = 0     # cachedContentTokenCount
    thinking: int = 0   # thoughtsTokenCount
    output: int = 0     # candidatesTokenCount (excludes thinking)
    tool_calls: int = 0

    @classmethod
    def from_gemini(cls, meta: Mapping[str, Any] | None, tool_calls: int = 0) -> "AnswerUsage":
        meta = meta or {}
        return cls(int(meta.get("promptTokenCount") or 0), int(meta.get("cachedContentTokenCount") or 0),
                   int(meta.get("thoughtsTokenCount") or 0), int(meta.get("candidatesTokenCount") or 0), tool_calls)


class PriceError(ValueError):
    pass


def _price(value: Any, where: str) -> Decimal | TieredPrices:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return Decimal(str(value))
    if isinstance(value, dict) and set(value) <= {"base", "tiers"} and "base" in value:
        base = _price(value["base"], f"{where}.base")
        tiers = value.get("tiers", [])
        if not isinstance(tiers, list) or not all(isinstance(t, dict) and set(t) == {"start", "price"}
                                                  and isinstance(t["start"], int) for t in tiers):
            raise PriceError(f"{where}.tiers must be a list of {{\"start\": TOKENS, \"price\": USD_PER_MTOK}}")
        return TieredPrices(base=base, tiers=[Tier(start=t["start"], price=_price(t["price"], f"{where}.tiers"))
                                              for t in tiers])
    raise PriceError(f"{where} must be a price in USD per million tokens or {{\"base\": N, \"tiers\": [...]}}")


class Prices:
    """Prices per model: an override file's, then genai-prices' (provider google)."""

    def __init__(self, overrides: dict[str, ModelPrice] | None = None, source: str | None = None) -> None:
        self.overrides = overrides or {}
        self.source = source or f"genai-prices {genai_prices.__version__} (bundled data)"

    @classmethod
    def load(cls, path: str | None) -> "Prices":
        """The prices, or PriceError: one line naming the file and what is wrong in it."""
        if not path:
            return cls()
        try:
            doc = json.loads(Path(path).read_text())
        except OSError as e:
            raise PriceError(f"cannot read the prices file {path}: {e.strerror or e}") from None
        except ValueError as e:
            raise PriceError(f"the prices file {path} is not JSON: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict) or not doc["models"]:
            raise PriceError(f"the prices file {path} needs {{\"models\": {{\"MODEL\": {{\"input_mtok\": ...}}}}}}")
        models: dict[str, ModelPrice] = {}
        for model, prices in doc["models"].items():
            if not isinstance(prices, dict) or not prices or set(prices) - set(PRICE_KEYS):
                raise PriceError(f"the prices file {path}: models.{model} takes only {', '.join(PRICE_KEYS)}")
            try:
                models[model] = ModelPrice(**{k: _price(v, f"models.{model}.{k}") for k, v in prices.items()})
            except PriceError as e:
                raise PriceError(f"the prices file {path}: {e}") from None
        stamp = datetime.fromtimestamp(Path(path).stat().st_mtime, UTC).strftime("%Y-%m-%d")
        return cls(models, f"{doc.get('source') or path} (file {path}, {stamp}); other models: "
                           f"genai-prices {genai_prices.__version__}")

    def cost_nusd(self, model: str, u: AnswerUsage) -> int | None:
        """The answer's cost in nano-dollars, or None when no price is known for the model."""
        usage = genai_prices.Usage(input_tokens=u.input, cache_read_tokens=u.cached,
                                   output_tokens=u.output + u.thinking)  # Google bills thinking as output
        bare = model.removeprefix("models/")
        try:
            if bare in self.overrides:
                total = self.overrides[bare].calc_price(usage)["total_price"]
            else:
                total = genai_prices.calc_price(usage, bare, provider_id="google").total_price
        except LookupError:
            return None
        except Exception:  # genai-prices raises its own errors for an unknown model  # noqa: BLE001
            return None
        return int((total * NANO).to_integral_value())


def day_of(ts: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).strftime("%Y-%m-%d")


def increments(model: str, u: AnswerUsage | None, error: bool, prices: Prices) -> dict[str, int]:
    """What one answer adds to its key x model x day bucket."""
    inc = {"requests": 1, "errors": int(error)}
    if u is not None:
        inc |= {"input": u.input, "cached": u.cached, "thinking": u.thinking, "output": u.output,
                "tool_calls": u.tool_calls}
        cost = prices.cost_nusd(model, u)
        inc["cost_nusd" if cost is not None else "unpriced"] = cost if cost is not None else 1
    return {k: v for k, v in inc.items() if v}
