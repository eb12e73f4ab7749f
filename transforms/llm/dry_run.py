"""What a run would spend on LLM calls, counted before spending anything.

Counts the calls and tokens of the requests a run would send and prices them with
`--llm-price-in` / `--llm-price-out` (USD per million tokens). Prompt tokens are estimated
(~4 characters a token, schema included); completion tokens are counted at each request's
`max_tokens`, so the cost is an upper bound. With a cache, requests it already answers are
counted apart and cost nothing. Retries are not foreseen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from transforms.llm.cache import ResponseCache, cache_key
from transforms.llm.chat_format import ChatRequestLike, build_body, estimate_prompt_tokens


@dataclass(frozen=True)
class DryRunEstimate:
    calls: int
    cached: int
    tokens_in: int
    tokens_out_max: int
    price_in_per_m: float
    price_out_per_m: float
    calls_by_purpose: dict[str, int] = field(default_factory=dict)

    @property
    def cost_usd(self) -> float:
        """Upper-bound cost of the calls to make (cached ones excluded)."""
        return (
            self.tokens_in * self.price_in_per_m + self.tokens_out_max * self.price_out_per_m
        ) / 1e6

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cached": self.cached,
            "calls_by_purpose": dict(sorted(self.calls_by_purpose.items())),
            "tokens_in_estimate": self.tokens_in,
            "tokens_out_max": self.tokens_out_max,
            "price_in_per_m": self.price_in_per_m,
            "price_out_per_m": self.price_out_per_m,
            "cost_usd_max": round(self.cost_usd, 4),
        }

    def line(self) -> str:
        purposes = ", ".join(f"{name} {n}" for name, n in sorted(self.calls_by_purpose.items()))
        return (
            f"LLM dry run: {self.calls} calls ({purposes or 'none'}; "
            f"{self.cached} already cached), "
            f"~{self.tokens_in:,} tokens in, <= {self.tokens_out_max:,} tokens out; "
            f"cost <= ${self.cost_usd:,.2f} at ${self.price_in_per_m:g}/M in, "
            f"${self.price_out_per_m:g}/M out"
        )


def estimate_run(
    requests: Iterable[ChatRequestLike[BaseModel]],
    *,
    model: str,
    price_in_per_m: float,
    price_out_per_m: float,
    cache: ResponseCache | None = None,
    temperature: float = 0.0,
) -> DryRunEstimate:
    """Calls, tokens and upper-bound cost of sending `requests` to `model`."""
    calls = cached = tokens_in = tokens_out = 0
    by_purpose: Counter[str] = Counter()
    for request in requests:
        if cache is not None:
            key = cache_key(model, build_body(model, request, temperature=temperature))
            if cache.lookup(key).entry is not None:
                cached += 1
                continue
        calls += 1
        by_purpose[request.purpose] += 1
        tokens_in += estimate_prompt_tokens(request)
        tokens_out += request.max_tokens
    return DryRunEstimate(
        calls, cached, tokens_in, tokens_out, price_in_per_m, price_out_per_m, dict(by_purpose)
    )
