"""Counters of one LLM client: what was sent, retried, refused, cached, spent and how fast.

A plain, thread-safe object (no Beam): the judge DoFn mirrors `snapshot()` into Beam metrics.
Counters add together (`a + b`), so per-thread or per-worker counts merge.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field, fields
from typing import Any

from transforms.llm.locking import PicklesWithoutLock

# Latencies kept for percentiles: the most recent ones, enough for a stable p95.
LATENCY_SAMPLES = 4096

COUNTER_NAMES = (
    "requests",
    "retries",
    "rate_limited",
    "server_errors",
    "transport_errors",
    "malformed",
    "repairs",
    "normalised",
    "format_fallbacks",
    "completions",
    "failures",
    "cache_hits",
    "cache_misses",
    "cache_corrupt",
    "tokens_in",
    "tokens_out",
)


@dataclass
class LLMCounters(PicklesWithoutLock):
    """Counts of one client (or the sum of several).

    `requests` are HTTP requests sent; `retries` the ones repeated after an error (429, 5xx,
    timeout, dropped connection); `malformed` answers that did not parse, `repairs` the
    repair turns sent (or replayed) for them; `normalised` the parts of schema-valid answers
    repaired by the answer model (a status derived from its score, a renamed duplicate id);
    `format_fallbacks` the downgrades of `response_format`. Each `complete()` ends in
    exactly one of `completions` (including cache hits) or `failures`. Tokens are the ones
    the server reported as spent: cache hits spend none. `cache_hits` counts completions
    answered without a request, `cache_misses` exchanges that had to be sent.
    Latency is per successful HTTP request, in seconds.
    """

    requests: int = 0
    retries: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    transport_errors: int = 0
    malformed: int = 0
    repairs: int = 0
    normalised: int = 0
    format_fallbacks: int = 0
    completions: int = 0
    failures: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    cache_corrupt: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, amount: int = 1) -> None:
        """Increase counter `name` (one of `COUNTER_NAMES`) by `amount`."""
        if name not in COUNTER_NAMES:
            raise KeyError(f"unknown LLM counter {name!r}")
        with self._lock:
            setattr(self, name, getattr(self, name) + amount)

    def record_latency(self, seconds: float) -> None:
        with self._lock:
            self.latencies.append(seconds)

    def percentile(self, q: float) -> float | None:
        """The q-quantile (0..1, nearest rank) of the recorded latencies; None when empty."""
        with self._lock:
            ordered = sorted(self.latencies)
        if not ordered:
            return None
        rank = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
        return ordered[rank]

    def snapshot(self) -> dict[str, Any]:
        """Every counter plus latency p50/p95 (seconds, None when nothing was timed)."""
        with self._lock:
            out: dict[str, Any] = {name: getattr(self, name) for name in COUNTER_NAMES}
        out["latency_p50_s"] = self.percentile(0.5)
        out["latency_p95_s"] = self.percentile(0.95)
        return out

    def __add__(self, other: LLMCounters) -> LLMCounters:
        merged = LLMCounters()
        for f in fields(self):
            if f.name in COUNTER_NAMES:
                setattr(merged, f.name, getattr(self, f.name) + getattr(other, f.name))
        merged.latencies.extend(self.latencies)
        merged.latencies.extend(other.latencies)
        return merged
