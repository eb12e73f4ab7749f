"""Calling LLM judges: an OpenAI-compatible client with limits, retries, a cache and counters.

No Beam pipeline code here (the judge DoFn wraps these): `ChatClient.complete(request)` is
the one call; `SlidingWindowLimiter` / `envoy_limiter` bound requests and tokens per minute,
`RetryPolicy` + `AdaptiveRate` decide retries and slowdown, `ResponseCache` keeps answers,
`LLMCounters` counts, `estimate_run` prices a run before it happens.
"""

from transforms.llm.cache import CacheLookup, ResponseCache, cache_key
from transforms.llm.chat_format import (
    ChatRequestLike,
    Completion,
    JudgeError,
    build_body,
    estimate_prompt_tokens,
    parse_answer,
)
from transforms.llm.client import ChatClient
from transforms.llm.counters import LLMCounters
from transforms.llm.dry_run import DryRunEstimate, estimate_run
from transforms.llm.rate_limit import (
    BeamRateLimiterAdapter,
    Limiter,
    RateAdjustable,
    SlidingWindowLimiter,
    envoy_limiter,
)
from transforms.llm.retry import AdaptiveRate, Backoff, RetryPolicy, parse_retry_after

__all__ = [
    "AdaptiveRate",
    "Backoff",
    "BeamRateLimiterAdapter",
    "CacheLookup",
    "ChatClient",
    "ChatRequestLike",
    "Completion",
    "DryRunEstimate",
    "JudgeError",
    "LLMCounters",
    "Limiter",
    "RateAdjustable",
    "ResponseCache",
    "RetryPolicy",
    "SlidingWindowLimiter",
    "build_body",
    "cache_key",
    "envoy_limiter",
    "estimate_prompt_tokens",
    "estimate_run",
    "parse_answer",
    "parse_retry_after",
]
