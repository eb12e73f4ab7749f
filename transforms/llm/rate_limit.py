"""Request and token budgets for LLM calls: requests/minute AND tokens/minute.

Two implementations of one interface, `Limiter`:

- `acquire(tokens)` blocks (through an injected `sleep`) until one request carrying `tokens`
  (an estimate: prompt + max completion) may be sent;
- `try_acquire(tokens, now)` never blocks: it returns 0.0 and books the request when it may
  go now, else the seconds to wait before asking again.

`SlidingWindowLimiter` (per process, thread-safe) keeps a log of the grants of the last
window (60 s): a request is granted only when the window holds fewer than R requests and the
tokens fit in T, so *no 60-second window ever sees more than R requests or T tokens* (strict,
not an average). Grants are also paced `60/R` seconds apart (plus a small margin for network
jitter), so the budget is spent evenly instead of in a burst at each window start; a long run
reaches ~R/(1 + margin) requests per window. `set_rate_factor(f)` scales the rate (caps and
pacing) for adaptive slowdown (AIMD, see `retry.AdaptiveRate`).

*What exactly is bounded.* A grant's time is the clock reading the decision was made on,
taken under the lock (`acquire` reads the clock inside it, so a caller delayed between
reading the clock and booking cannot be booked in the past). Every half-open window
`[s, s + window_s)` of that clock holds at most `request_cap()` grants: a grant at `g` counts
until `g + window_s` (computed exactly so, as a checker computes it). The request leaves
after its grant, by however long the thread takes to build and write it: a server counting
*receipt* times can see up to the number of requests in flight at a window's start more
(each was granted before the window), never more than that. When the cap is the window's
exact share (`R * window_s / 60` whole), pacing keeps any cap + 1 grants at least
`window_s * (1 + margin)` apart, so delays that vary by less than `margin * window_s` (20 ms
on a 1-second window) add nothing even at the server.

Sharing one budget across a multi-worker job
--------------------------------------------
*Global (preferred at scale):* Beam 2.77 ships `apache_beam.io.components.rate_limiter`
with `RateLimiter.allow(hits_added)` and `EnvoyRateLimiter`, a client of an Envoy Rate Limit
Service (gRPC `ShouldRateLimit`): every worker asks the same service, which counts hits per
descriptor, so all workers share one budget whatever their number. RunInference's
`RemoteModelHandler(rate_limiter=...)` uses it the same way. `BeamRateLimiterAdapter` wraps
one such limiter for requests (hits 1) and optionally one for tokens (hits = tokens) behind
`Limiter`; `envoy_limiter()` builds it. Configure the service with one domain and two
descriptors, e.g. (envoyproxy/ratelimit)::

    domain: trajcurate-llm
    descriptors:
      - {key: llm_budget, value: requests, rate_limit: {unit: minute, requests_per_unit: 500}}
      - {key: llm_budget, value: tokens, rate_limit: {unit: minute, requests_per_unit: 2000000}}

Envoy counts in fixed windows, so across a window boundary up to 2R may pass; Beam's limiter
also sleeps inside `allow()` (with `time.sleep`) when told OVER_LIMIT and signals throttling
to the runner (Dataflow's autoscaler then does not add workers to a throttled stage).

*Per process (no extra service):* the judge stage keeps one limiter per worker process
(`apache_beam.utils.shared.Shared`: every DoFn instance and thread of a process draws on it),
built with `SlidingWindowLimiter.per_worker(rpm, tpm, processes)`: each process gets R/n and
T/n (rounded down to whole requests per window), so any window holds at most R grants over
all n processes together (the processes of one machine read one clock: `time.monotonic` is
CLOCK_MONOTONIC, system-wide on Linux; on several machines a window lasts as long on each).
This holds the run's budget when all n run and under-uses it when fewer do. A local run
knows n (`--direct_num_workers` in `multi_processing` mode, else 1); on a distributed
runner `--llm-workers` says it (the maximum number of worker processes).

*The window.* Budgets are per minute; the window they are enforced over (`window_s`, 60 s by
default, `--llm-rate-window`) may be shorter: R·w/60 requests in every w-second window is
stricter than R in every minute (a minute is a union of such windows) and spends the budget
more evenly, as providers that enforce per-second quotas require.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from transforms.llm.locking import PicklesWithoutLock

# A positive wait is never shorter than this, so a clock that advances by the wait always moves.
_MIN_WAIT_S = 1e-6


def shortest_window(requests_per_minute: float | None) -> float:
    """The shortest window that holds one request and keeps every minute within R.

    A minute spans up to ceil(60 / w) windows and each holds at least one request, so
    w >= 60 / floor(R); below one request a minute, one request per 60 / R seconds. (60 / R
    alone lets 2.5 a minute become 3: one request every 24 s puts three in some minute.)
    """
    if requests_per_minute is None:
        return 0.0
    whole = math.floor(requests_per_minute + 1e-9)
    return 60.0 / whole if whole >= 1 else 60.0 / requests_per_minute


class Limiter(Protocol):
    """What the client needs from a rate limiter."""

    def acquire(self, tokens: int = 0) -> None: ...

    def try_acquire(self, tokens: int, now: float) -> float: ...


class RateAdjustable(Protocol):
    """A limiter whose rate can be scaled by a factor in (0, 1] (adaptive slowdown)."""

    @property
    def rate_factor(self) -> float: ...

    def set_rate_factor(self, factor: float) -> None: ...


class SlidingWindowLimiter(PicklesWithoutLock):
    """At most R requests and T tokens in any window; grants paced evenly. Thread-safe."""

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        window_s: float = 60.0,
        pace: bool = True,
        pacing_margin: float = 0.02,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive")
        if tokens_per_minute is not None and tokens_per_minute <= 0:
            raise ValueError("tokens_per_minute must be positive")
        if window_s <= 0:
            raise ValueError("window_s must be positive")
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.window_s = max(window_s, shortest_window(requests_per_minute))
        self.pace = pace
        self.pacing_margin = pacing_margin
        self._clock = clock
        self._sleep = sleep
        self._factor = 1.0
        self._log: deque[tuple[float, int]] = deque()
        self._tokens_in_window = 0
        self._last_grant: tuple[float, int] | None = None
        self._lock = threading.Lock()

    @classmethod
    def per_worker(
        cls,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        workers: int,
        **kwargs: Any,
    ) -> SlidingWindowLimiter:
        """This worker's share of a global budget split evenly over `workers` (--llm-workers)."""
        if workers < 1:
            raise ValueError("workers must be >= 1")
        rpm = None if requests_per_minute is None else requests_per_minute / workers
        tpm = None if tokens_per_minute is None else tokens_per_minute / workers
        return cls(rpm, tpm, **kwargs)

    @property
    def rate_factor(self) -> float:
        return self._factor

    def set_rate_factor(self, factor: float) -> None:
        if not 0 < factor <= 1:
            raise ValueError("rate factor must be in (0, 1]")
        with self._lock:
            self._factor = factor

    def request_cap(self) -> int | None:
        """Requests allowed in one window at the current rate factor."""
        if self.requests_per_minute is None:
            return None
        return max(1, math.floor(self._window_cap(self.requests_per_minute) + 1e-9))

    def token_cap(self) -> int | None:
        """Tokens allowed in one window at the current rate factor."""
        if self.tokens_per_minute is None:
            return None
        return max(1, math.floor(self._window_cap(self.tokens_per_minute) + 1e-9))

    def acquire(self, tokens: int = 0) -> None:
        while (wait := self._try_now(tokens)) > 0:
            self._sleep(wait)

    def try_acquire(self, tokens: int, now: float) -> float:
        """Book the request at `now` (the caller's current reading of the clock) or say how
        long to wait; `acquire` takes its reading under the lock instead."""
        with self._lock:
            return self._book(tokens, now)

    def _try_now(self, tokens: int) -> float:
        with self._lock:  # the clock is read here, so no grant is booked between read and book
            return self._book(tokens, self._clock())

    def _book(self, tokens: int, now: float) -> float:
        """Grant and log the request at `now` (0.0), or the seconds to wait. Holds the lock."""
        self._expire(now)
        wait = max(self._wait_for_requests(now), self._wait_for_tokens(tokens, now))
        wait = max(wait, self._wait_for_pacing(now))
        if wait > 0:
            return max(wait, _MIN_WAIT_S)
        self._log.append((now, tokens))
        self._tokens_in_window += tokens
        self._last_grant = (now, tokens)
        return 0.0

    def _per_window(self, per_minute: float) -> float:
        return per_minute * self._factor * self.window_s / 60.0

    def _window_cap(self, per_minute: float) -> float:
        """What one window may hold so that every minute holds at most `per_minute`: a
        minute spans ceil(60 / window) windows (60 / window once the window is a minute or
        longer), so each gets that fraction of the budget."""
        if self.window_s >= 60.0:
            return self._per_window(per_minute)
        return per_minute * self._factor / math.ceil(60.0 / self.window_s - 1e-9)

    def _expire(self, now: float) -> None:
        # A grant at g holds its window until g + window_s: the same sum a checker counts
        # with (now - window_s rounds differently and freed the slot one ulp early).
        while self._log and self._log[0][0] + self.window_s <= now:
            _, tokens = self._log.popleft()
            self._tokens_in_window -= tokens

    def _wait_for_requests(self, now: float) -> float:
        cap = self.request_cap()
        if cap is None or len(self._log) < cap:
            return 0.0
        # The window must drop its oldest entries until only cap - 1 remain.
        return self._log[len(self._log) - cap][0] + self.window_s - now

    def _wait_for_tokens(self, tokens: int, now: float) -> float:
        cap = self.token_cap()
        if cap is None or not self._log or self._tokens_in_window + tokens <= cap:
            return 0.0
        if tokens >= cap:  # larger than a window's budget: allowed alone, in an empty window
            return self._log[-1][0] + self.window_s - now
        excess = self._tokens_in_window + tokens - cap
        for stamp, booked in self._log:
            excess -= booked
            if excess <= 0:
                return stamp + self.window_s - now
        return 0.0  # unreachable: the log holds every booked token

    def _wait_for_pacing(self, now: float) -> float:
        if not self.pace or self._last_grant is None:
            return 0.0
        last, last_tokens = self._last_grant
        interval = 0.0
        if self.requests_per_minute is not None:
            interval = self.window_s / self._per_window(self.requests_per_minute)
        if self.tokens_per_minute is not None and last_tokens:
            interval = max(
                interval, last_tokens * self.window_s / self._per_window(self.tokens_per_minute)
            )
        return last + interval * (1 + self.pacing_margin) - now

    def __repr__(self) -> str:
        return (
            f"SlidingWindowLimiter(requests_per_minute={self.requests_per_minute}, "
            f"tokens_per_minute={self.tokens_per_minute}, window_s={self.window_s}, "
            f"rate_factor={self._factor:.3f})"
        )


class AllowsHits(Protocol):
    """Beam's `apache_beam.io.components.rate_limiter.RateLimiter` (e.g. `EnvoyRateLimiter`)."""

    def allow(self, *, hits_added: int) -> bool: ...


class BeamRateLimiterAdapter:
    """A Beam `RateLimiter` (shared, global budget) behind `Limiter`.

    `requests` is asked for 1 hit per request, `tokens` (optional) for the request's tokens.
    Beam's limiter decides how long to block inside `allow()`; when it gives up (returns
    False, e.g. `block_until_allowed=False`), this adapter waits `retry_wait_s` with the
    injected `sleep` and asks again. `acquire` never charges a request twice: a request hit
    already granted is kept while the tokens are awaited. `now` is ignored by `try_acquire`
    (the service owns the clock) and a denied `try_acquire` may have spent the request hit.
    """

    def __init__(
        self,
        requests: AllowsHits,
        tokens: AllowsHits | None = None,
        *,
        retry_wait_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._requests = requests
        self._tokens = tokens
        self.retry_wait_s = retry_wait_s
        self._sleep = sleep

    def acquire(self, tokens: int = 0) -> None:
        while not self._requests.allow(hits_added=1):
            self._sleep(self.retry_wait_s)
        if tokens > 0 and self._tokens is not None:
            while not self._tokens.allow(hits_added=tokens):
                self._sleep(self.retry_wait_s)

    def try_acquire(self, tokens: int, now: float = 0.0) -> float:
        if not self._requests.allow(hits_added=1):
            return self.retry_wait_s
        if tokens > 0 and self._tokens is not None and not self._tokens.allow(hits_added=tokens):
            return self.retry_wait_s
        return 0.0

    def __repr__(self) -> str:
        return (
            f"BeamRateLimiterAdapter(requests={type(self._requests).__name__}, "
            f"tokens={self._tokens is not None})"
        )


def envoy_limiter(
    service_address: str,
    domain: str,
    *,
    descriptor_key: str = "llm_budget",
    limit_tokens: bool = True,
    block_until_allowed: bool = True,
    timeout_s: float = 5.0,
    namespace: str = "trajcurate_llm",
    retry_wait_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> BeamRateLimiterAdapter:
    """One global budget for every worker: Beam's `EnvoyRateLimiter` for requests and tokens.

    Descriptors are `{descriptor_key: "requests"}` and `{descriptor_key: "tokens"}` in `domain`
    (see the module docstring for the matching service configuration).
    """
    from apache_beam.io.components.rate_limiter import EnvoyRateLimiter

    def make(value: str) -> AllowsHits:
        limiter: AllowsHits = EnvoyRateLimiter(
            service_address=service_address,
            domain=domain,
            descriptors=[{descriptor_key: value}],
            timeout=timeout_s,
            block_until_allowed=block_until_allowed,
            retries=0,
            namespace=namespace,
        )
        return limiter

    return BeamRateLimiterAdapter(
        make("requests"),
        make("tokens") if limit_tokens else None,
        retry_wait_s=retry_wait_s,
        sleep=sleep,
    )
