"""When and how long to wait before retrying an LLM request, and adaptive slowdown.

`RetryPolicy` retries 429, 5xx, timeouts and dropped connections up to `max_retries`, waiting
a full-jitter exponential backoff (`uniform(0, min(cap, base * 2**n))`) or, when the server
sends `Retry-After` (seconds or an HTTP date), that long (plus up to 10 % jitter so workers
told the same moment do not return together). Randomness, sleeping and the wall clock are
injected, so tests run without real waits.

`AdaptiveRate` is the AIMD controller: while the server pushes back (429/503) it multiplies
the limiter's rate factor down; every success adds a step back, up to the full rate.
"""

from __future__ import annotations

import email.utils
import random as _random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from transforms.llm.locking import PicklesWithoutLock
from transforms.llm.rate_limit import RateAdjustable

# Statuses that mean "the server is overloaded: slow down", not just "try again".
PUSHBACK_STATUSES = frozenset({429, 503})
_RETRYABLE_4XX = frozenset({408, 409, 425, 429})


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or HTTP date); None if absent.

    `now` is the wall-clock time (epoch seconds) a date is measured from.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if moment.tzinfo is None:
            return None
        return max(0.0, moment.timestamp() - now)
    return seconds if seconds >= 0 and seconds == seconds else None


def is_retryable_status(status: int) -> bool:
    """429, request timeout/conflict/too-early, and every 5xx."""
    return status in _RETRYABLE_4XX or 500 <= status <= 599


def is_retryable_exception(exc: BaseException) -> bool:
    """Timeouts and connections that failed or dropped (not our own protocol errors)."""
    return isinstance(exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError)


@dataclass(frozen=True)
class Backoff:
    """Full-jitter exponential backoff: retry n waits uniform(0, min(cap, base * 2**n))."""

    base_s: float = 1.0
    cap_s: float = 60.0

    def ceiling(self, retry_index: int) -> float:
        return min(self.cap_s, self.base_s * 2.0 ** min(retry_index, 62))

    def delay(self, retry_index: int, unit_random: float) -> float:
        """The wait before retry `retry_index` (0-based) for a uniform draw in [0, 1)."""
        return unit_random * self.ceiling(retry_index)


class AdaptiveRate(PicklesWithoutLock):
    """AIMD on a limiter's rate: x`decrease` per pushback, +`increase` per success, within
    [floor, 1]."""

    def __init__(
        self,
        target: RateAdjustable,
        *,
        decrease: float = 0.5,
        increase: float = 0.05,
        floor: float = 0.05,
    ) -> None:
        if not 0 < decrease < 1:
            raise ValueError("decrease must be in (0, 1)")
        if not 0 < floor <= 1:
            raise ValueError("floor must be in (0, 1]")
        self.target = target
        self.decrease = decrease
        self.increase = increase
        self.floor = floor
        self._lock = threading.Lock()

    @property
    def factor(self) -> float:
        return self.target.rate_factor

    def on_pushback(self) -> None:
        """The server said 429/503: cut the rate multiplicatively."""
        with self._lock:
            self.target.set_rate_factor(max(self.floor, self.target.rate_factor * self.decrease))

    def on_success(self) -> None:
        """A request went through: recover the rate additively."""
        with self._lock:
            current = self.target.rate_factor
            if current < 1.0:
                self.target.set_rate_factor(min(1.0, current + self.increase))


class RetryPolicy:
    """How many retries, how long to wait, and whom to tell about pushback."""

    def __init__(
        self,
        max_retries: int = 5,
        *,
        backoff: Backoff | None = None,
        max_retry_after_s: float = 300.0,
        retry_after_jitter: float = 0.1,
        random: Callable[[], float] = _random.random,
        sleep: Callable[[float], None] = time.sleep,
        wall_clock: Callable[[], float] = time.time,
        adaptive: AdaptiveRate | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.max_retries = max_retries
        self.backoff = backoff or Backoff()
        self.max_retry_after_s = max_retry_after_s
        self.retry_after_jitter = retry_after_jitter
        self.adaptive = adaptive
        self._random = random
        self._sleep = sleep
        self._wall_clock = wall_clock

    def delay_s(self, retry_index: int, retry_after: str | None = None) -> float | None:
        """Seconds to wait before retry `retry_index`; None when the server asks for longer
        than `max_retry_after_s` (waiting would stall the worker: give up instead)."""
        told = parse_retry_after(retry_after, self._wall_clock())
        if told is None:
            return self.backoff.delay(retry_index, self._random())
        if told > self.max_retry_after_s:
            return None
        return told * (1.0 + self.retry_after_jitter * self._random())

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._sleep(seconds)

    def note_pushback(self) -> None:
        if self.adaptive is not None:
            self.adaptive.on_pushback()

    def note_success(self) -> None:
        if self.adaptive is not None:
            self.adaptive.on_success()

    def __repr__(self) -> str:
        return (
            f"RetryPolicy(max_retries={self.max_retries}, backoff={self.backoff}, "
            f"max_retry_after_s={self.max_retry_after_s})"
        )
