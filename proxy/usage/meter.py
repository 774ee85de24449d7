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
import genai_prices.data_snapshot
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
        self._snapshot: object = None
        self._models: dict[str, Any] = {}  # bare model name: genai-prices' ModelInfo (None: unknown)
        self._plans: dict[int, _Plan] = {}  # id(ModelPrice): its plan (which keeps the ModelPrice)

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
        """The answer's cost in nano-dollars, or None when no price is known for the model: exactly
        genai-prices' calc_price (the price per model resolved once, see _Plan)."""
        bare = model.removeprefix("models/")
        try:
            plan = self._plan(bare)
            if plan is None:
                return None
            total = plan.total(u.input, u.cached, u.output + u.thinking)  # Google bills thinking as output
        except LookupError:
            return None
        except Exception:  # genai-prices raises its own errors for an unknown model  # noqa: BLE001
            return None
        return int((total * NANO).to_integral_value())

    def _plan(self, bare: str) -> "_Plan | None":
        """The model's price as a _Plan (None: genai-prices knows no such model); LookupError or
        genai-prices' own error when it cannot price it at all."""
        snapshot = genai_prices.data_snapshot.get_snapshot()
        if snapshot is not self._snapshot:  # genai-prices' data was replaced (UpdatePrices)
            self._snapshot, self._models, self._plans = snapshot, {}, {}
        if bare in self.overrides:
            model_price = self.overrides[bare]
        else:
            model = self._models.get(bare, _UNKNOWN)
            if model is _UNKNOWN:
                try:
                    model = snapshot.find_provider_model(bare, None, "google", None)[1]
                except LookupError:
                    model = None
                if len(self._models) < _MAX_MODELS:  # made-up model names do not grow it for ever
                    self._models[bare] = model
            if model is None:
                return None
            if isinstance(model.prices, ModelPrice):
                model_price = model.prices
            else:  # prices that change on a date or at a time of day: chosen as calc_price does, per call
                model_price = model.get_prices(datetime.now(tz=UTC))
        plan = self._plans.get(id(model_price))
        if plan is None or plan.model_price is not model_price:
            plan = _Plan(model_price)
            if len(self._plans) < _MAX_MODELS:
                self._plans[id(model_price)] = plan
        return plan


_UNKNOWN = object()
_MAX_MODELS = 512
# The usage keys genai_prices.Usage is given here, in AnswerUsage's order (input, cached, output).
_REPORTED = ("input_tokens", "cache_read_tokens", "output_tokens")


class _Plan:
    """One ModelPrice's calc_price, with what does not depend on the usage worked out once: the
    priced units resolved and validated (genai-prices does both on every call), and, per pattern of
    which reported counts are zero, how each priced unit's leaf count follows from the three counts
    (genai-prices' compute_leaf_values: a unit's count less its priced descendants' leaf counts; an
    unreported count is 0, or an error, depending only on which reported counts are positive). A
    call then computes the leaf counts and the sum, in genai-prices' order and Decimal arithmetic:
    the total is calc_price's value to the last digit (tests/test_usage_meter.py compares them)."""

    def __init__(self, model_price: ModelPrice) -> None:
        from genai_prices.types import _collect_resolved_model_prices
        from genai_prices.units import _get_registry
        from genai_prices.validation import validate_priced_units

        self.model_price = model_price
        self.error: Exception | None = None
        self.resolved: tuple = ()
        try:
            registry = _get_registry()
            self.resolved = _collect_resolved_model_prices(model_price, registry)
            validate_priced_units(tuple(unit for unit, _ in self.resolved), registry)
        except Exception as e:  # noqa: BLE001 - raised again by every call, as calc_price would
            self.error = e
        # A price of a type of its own (a Decimal subclass: genai-prices accepts it) is priced by calc_price.
        self.slow = not all(type(price) in (Decimal, TieredPrices) for _, price in self.resolved)
        self.by_pattern: dict[tuple[bool, bool, bool], Any] = {}

    def total(self, input_tokens: int, cached: int, output: int) -> Decimal:
        if self.error is not None:
            raise self.error
        counts = (input_tokens, cached, output)
        if self.slow or not all(type(c) is int and c >= 0 for c in counts):  # genai-prices' own checks and errors
            return self._calc_price(counts)
        pattern = (input_tokens > 0, cached > 0, output > 0)
        terms = self.by_pattern.get(pattern, _UNKNOWN)
        if terms is _UNKNOWN:
            terms = self.by_pattern[pattern] = self._terms(pattern)
        if terms is None:
            return self._calc_price(counts)
        if isinstance(terms, Exception):
            raise terms
        total = Decimal(0)
        for price, coefficients, constant, per in terms:
            if coefficients is None:
                count = constant
            else:
                count = constant + coefficients[0] * input_tokens + coefficients[1] * cached + coefficients[2] * output
                if count < 0:  # compute_leaf_values' "Invalid usage data"
                    return self._calc_price(counts)
            if not count:  # (a zero term: calc_price adds a zero, which changes the sum's exponent, not its value)
                continue
            if type(price) is TieredPrices:  # genai-prices' calc_unit_price, inlined
                applicable = price.base
                for tier in reversed(price.tiers):
                    if input_tokens > tier.start:
                        applicable = tier.price
                        break
                total += applicable * Decimal(count) / per
            else:
                total += price * Decimal(count) / per
        return total

    def _calc_price(self, counts: tuple[int, int, int]) -> Decimal:
        return self.model_price.calc_price(genai_prices.Usage(**dict(zip(_REPORTED, counts, strict=True))))[
            "total_price"]

    def _terms(self, pattern: tuple[bool, bool, bool]) -> list[tuple] | Exception | None:
        """Per resolved price (calc_price's order): (price, the leaf count's coefficients of the
        three counts or None for a constant, the constant, per); or the error calc_price raises
        for every usage of this pattern (an unreported count it cannot infer); None: calc_price's."""
        from genai_prices.decompose import is_descendant_or_self

        probe = genai_prices.Usage(**{k: int(p) for k, p in zip(_REPORTED, pattern, strict=True)})
        units = {unit.usage_key: unit for unit, _ in self.resolved if unit.usage_key != "requests"}
        # Each unit's own count: a reported one's coefficient, or an unreported one's value, which
        # genai-prices infers from which reported counts are positive alone (0, or an error).
        own: dict[str, tuple[list[int], int]] = {}
        for key in units:
            if key in _REPORTED:
                own[key] = ([int(key == r) for r in _REPORTED], 0)
                continue
            try:
                value = getattr(probe, key)
            except ValueError as e:  # "Missing usage for ...": calc_price raises it for every such usage
                return e
            if value != 0:
                return None  # never seen: priced by calc_price
            own[key] = ([0, 0, 0], 0)
        ordered = sorted(units.values(), key=lambda unit: (-len(unit.dimensions), unit.usage_key))
        leaf: dict[str, tuple[list[int], int]] = {}
        for unit in ordered:
            coefficients, constant = list(own[unit.usage_key][0]), own[unit.usage_key][1]
            for d in ordered:
                if d is not unit and is_descendant_or_self(unit, d):
                    coefficients = [a - b for a, b in zip(coefficients, leaf[d.usage_key][0], strict=True)]
                    constant -= leaf[d.usage_key][1]
            leaf[unit.usage_key] = (coefficients, constant)
        terms = []
        for unit, price in self.resolved:
            if unit.usage_key == "requests":
                terms.append((price, None, 1, unit.per))
            else:
                coefficients, constant = leaf[unit.usage_key]
                terms.append((price, tuple(coefficients), constant, unit.per))
        return terms


_DAY = [0.0, 0.0, ""]  # [start, end) of the UTC day last asked for, and its date: it changes once a day


def day_of(ts: float | None = None) -> str:
    """The UTC date of `ts` (now by default), YYYY-MM-DD."""
    if ts is None:
        ts = time.time()
    day = _DAY
    if day[0] <= ts < day[1]:
        return day[2]
    text = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")
    start = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    if start <= ts < start + 86_400:  # (POSIX days are 86 400 s: no leap seconds)
        # The last microsecond is left out: fromtimestamp rounds a time within it to the next day.
        _DAY[:] = [start, start + 86_400 - 1e-6, text]
    return text


def increments(model: str, u: AnswerUsage | None, error: bool, prices: Prices) -> dict[str, int]:
    """What one answer adds to its key x model x day bucket."""
    inc = {"requests": 1, "errors": int(error)}
    if u is not None:
        inc |= {"input": u.input, "cached": u.cached, "thinking": u.thinking, "output": u.output,
                "tool_calls": u.tool_calls}
        cost = prices.cost_nusd(model, u)
        inc["cost_nusd" if cost is not None else "unpriced"] = cost if cost is not None else 1
    return {k: v for k, v in inc.items() if v}
