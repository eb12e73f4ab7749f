"""Rate limits, backoff and adaptive slowdown of the LLM client, on an injected clock.

No test here sleeps: time is a `FakeClock` that advances when the code under test "sleeps",
or a discrete-event simulation of concurrent callers over one shared limiter.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable
from concurrent import futures
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from apache_beam.io.components import rate_limit_pb2
from apache_beam.io.components.rate_limiter import RateLimiter as BeamRateLimiter
from fake_llm_server import max_in_window, min_in_full_windows

from transforms.llm.rate_limit import BeamRateLimiterAdapter, SlidingWindowLimiter, envoy_limiter
from transforms.llm.retry import AdaptiveRate, Backoff, RetryPolicy, parse_retry_after

WINDOW = 60.0
pb2: Any = rate_limit_pb2  # generated protobuf module: no static attributes


class FakeClock:
    """Monotonic time that moves only when someone sleeps on it."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


def simulate(
    limiter: SlidingWindowLimiter,
    *,
    callers: int,
    duration: float,
    tokens: int = 0,
    seed: int = 7,
    on_grant: Callable[[float], None] | None = None,
) -> list[float]:
    """Concurrent callers sharing `limiter`: each asks, waits as told, then spends 0.2-3 s on
    the request before asking again. Returns the grant times (relative to the start)."""
    rng = random.Random(seed)
    next_ask = [0.0] * callers
    grants: list[float] = []
    while True:
        caller = min(range(callers), key=next_ask.__getitem__)
        now = next_ask[caller]
        if now >= duration:
            return grants
        wait = limiter.try_acquire(tokens, now)
        if wait > 0:
            next_ask[caller] = now + wait
        else:
            grants.append(now)
            if on_grant is not None:
                on_grant(now)
            next_ask[caller] = now + rng.uniform(0.2, 3.0)


@pytest.mark.parametrize("rpm", [30, 120, 500])
def test_no_minute_sees_more_than_r_and_a_long_run_reaches_90_percent(rpm: int) -> None:
    grants = simulate(SlidingWindowLimiter(rpm), callers=16, duration=300.0)
    assert max_in_window(grants, WINDOW) <= rpm
    assert len(grants) >= 0.9 * rpm * 5
    assert min_in_full_windows(grants, WINDOW) >= 0.9 * rpm


def test_pacing_spreads_the_budget_instead_of_bursting() -> None:
    paced = simulate(SlidingWindowLimiter(120), callers=16, duration=120.0)
    gaps = [b - a for a, b in itertools.pairwise(paced)]
    assert min(gaps) >= 0.5  # 60 s / 120
    burst = simulate(SlidingWindowLimiter(120, pace=False), callers=16, duration=120.0)
    assert max_in_window(burst, WINDOW) <= 120  # the window log alone still holds the cap
    assert max_in_window(burst, 1.0) > 10  # ... but lets a burst through
    assert max_in_window(paced, 1.0) <= 2


def test_tokens_per_minute_hold_in_every_window() -> None:
    limiter = SlidingWindowLimiter(1000, tokens_per_minute=10_000)
    grants = simulate(limiter, callers=8, duration=300.0, tokens=1_500)
    tokens_per_window = 1_500 * max_in_window(grants, WINDOW)
    assert tokens_per_window <= 10_000
    assert 1_500 * min_in_full_windows(grants, WINDOW) >= 0.9 * 10_000 - 1_500


def test_without_pacing_the_token_window_still_holds() -> None:
    limiter = SlidingWindowLimiter(None, tokens_per_minute=10_000, pace=False)
    grants = simulate(limiter, callers=8, duration=300.0, tokens=3_000)
    assert 3_000 * max_in_window(grants, WINDOW) <= 10_000
    assert len(grants) >= 0.9 * 3 * 5  # 3 requests fit in a window


def test_a_request_larger_than_the_token_budget_goes_alone() -> None:
    limiter = SlidingWindowLimiter(None, tokens_per_minute=1_000, pace=False)
    assert limiter.try_acquire(600, 0.0) == 0.0
    assert limiter.try_acquire(5_000, 1.0) == pytest.approx(59.0)
    assert limiter.try_acquire(5_000, 60.0) == 0.0  # the window is empty again
    assert limiter.try_acquire(1, 61.0) == pytest.approx(59.0)


def test_acquire_blocks_through_the_injected_sleep() -> None:
    clock = FakeClock()
    limiter = SlidingWindowLimiter(60, clock=clock, sleep=clock.sleep)
    start = clock.now
    for _ in range(5):
        limiter.acquire()
    assert clock.now - start == pytest.approx(4 * 1.0 * 1.02)
    assert len(clock.sleeps) == 4


def test_one_limiter_is_shared_safely_by_threads() -> None:
    limiter = SlidingWindowLimiter(50, pace=False)
    granted: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = sum(1 for _ in range(40) if limiter.try_acquire(0, 5.0) == 0.0)
        with lock:
            granted.append(mine)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(granted) == 50


def test_per_worker_share_divides_the_budget() -> None:
    limiter = SlidingWindowLimiter.per_worker(600, 1_200_000, workers=4)
    assert limiter.request_cap() == 150
    assert limiter.token_cap() == 300_000


# -- backoff, Retry-After, AIMD ----------------------------------------------------------


def test_full_jitter_stays_within_the_exponential_ceiling() -> None:
    backoff = Backoff(base_s=0.5, cap_s=8.0)
    assert [backoff.ceiling(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    rng = random.Random(3)
    for n in range(8):
        delays = [backoff.delay(n, rng.random()) for _ in range(200)]
        assert all(0.0 <= d < backoff.ceiling(n) for d in delays)
        assert max(delays) > 0.8 * backoff.ceiling(n)  # the whole range is used
    assert backoff.delay(3, 0.0) == 0.0


def test_retry_after_seconds_and_http_date() -> None:
    now = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    earlier = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after("7", now.timestamp()) == 7.0
    assert parse_retry_after(" 1.5 ", now.timestamp()) == 1.5
    assert parse_retry_after(later, now.timestamp()) == pytest.approx(30.0)
    assert parse_retry_after(earlier, now.timestamp()) == 0.0
    assert parse_retry_after("-3", now.timestamp()) is None
    assert parse_retry_after("soon", now.timestamp()) is None
    assert parse_retry_after(None, now.timestamp()) is None


def test_retry_policy_honours_retry_after_over_backoff() -> None:
    now = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
    policy = RetryPolicy(
        backoff=Backoff(base_s=1.0, cap_s=4.0),
        random=lambda: 0.999,
        wall_clock=now.timestamp,
        max_retry_after_s=60.0,
    )
    assert 10.0 <= policy.delay_s(0, "10") <= 11.0  # type: ignore[operator]
    date = format_datetime(now + timedelta(seconds=20), usegmt=True)
    assert 20.0 <= policy.delay_s(5, date) <= 22.0  # type: ignore[operator]
    assert policy.delay_s(5, None) == pytest.approx(0.999 * 4.0)
    assert policy.delay_s(0, "3600") is None  # longer than we are willing to stall


def test_aimd_cuts_the_rate_on_pushback_and_recovers_additively() -> None:
    limiter = SlidingWindowLimiter(120, pace=True)
    aimd = AdaptiveRate(limiter, decrease=0.5, increase=0.1, floor=0.1)
    aimd.on_pushback()
    aimd.on_pushback()
    assert limiter.rate_factor == pytest.approx(0.25)
    assert limiter.request_cap() == 30
    for _ in range(5):
        aimd.on_pushback()
    assert limiter.rate_factor == pytest.approx(0.1)  # never below the floor
    steps = []
    for _ in range(12):
        aimd.on_success()
        steps.append(round(limiter.rate_factor, 6))
    assert steps[:3] == [0.2, 0.3, 0.4]
    assert steps[-1] == 1.0 and max(steps) == 1.0


def test_aimd_slows_a_run_while_pushed_back_and_restores_it_after() -> None:
    limiter = SlidingWindowLimiter(120)
    aimd = AdaptiveRate(limiter, decrease=0.5, increase=0.05)

    def server_feedback(now: float) -> None:
        if 60.0 <= now < 120.0 and limiter.rate_factor == 1.0:
            aimd.on_pushback()  # two 429s at the start of the second minute
            aimd.on_pushback()
        elif now >= 120.0:
            aimd.on_success()

    grants = simulate(limiter, callers=8, duration=240.0, on_grant=server_feedback)
    per_minute = [sum(1 for t in grants if m * 60 <= t < (m + 1) * 60) for m in range(4)]
    assert per_minute[0] >= 0.9 * 120
    assert per_minute[1] <= 0.3 * per_minute[0]
    assert per_minute[3] >= 0.9 * 120
    assert limiter.rate_factor == 1.0
    assert max_in_window(grants, WINDOW) <= 120


# -- Beam's RateLimiter behind the same interface ----------------------------------------


class CountingBeamLimiter(BeamRateLimiter):
    """A Beam RateLimiter with a fixed budget of hits (no service, no sleeping)."""

    def __init__(self, budget: int) -> None:
        super().__init__(namespace="test")
        self.budget = budget
        self.calls: list[int] = []

    def allow(self, **kwargs: Any) -> bool:
        hits_added = int(kwargs.get("hits_added", 1))
        self.calls.append(hits_added)
        if hits_added > self.budget:
            return False
        self.budget -= hits_added
        return True


def test_beam_adapter_charges_requests_and_tokens() -> None:
    requests, tokens = CountingBeamLimiter(2), CountingBeamLimiter(1_000)
    adapter = BeamRateLimiterAdapter(requests, tokens, retry_wait_s=2.5)
    adapter.acquire(400)
    assert adapter.try_acquire(500, 0.0) == 0.0
    assert requests.calls == [1, 1] and tokens.calls == [400, 500]
    assert adapter.try_acquire(10, 0.0) == 2.5  # out of request budget: wait and ask again


def test_beam_adapter_waits_with_the_injected_sleep_and_charges_a_request_once() -> None:
    requests, tokens = CountingBeamLimiter(1), CountingBeamLimiter(0)
    clock = FakeClock()

    def sleep_and_refill(seconds: float) -> None:
        clock.sleep(seconds)
        tokens.budget += 100

    adapter = BeamRateLimiterAdapter(requests, tokens, retry_wait_s=2.5, sleep=sleep_and_refill)
    adapter.acquire(150)
    assert requests.calls == [1]  # the granted request hit is kept while tokens are awaited
    assert clock.sleeps == [2.5, 2.5]


class FakeEnvoyRateLimitService:
    """A loopback gRPC Envoy RLS: a fixed budget of hits per descriptor, never reset."""

    def __init__(self, budgets: dict[str, int]) -> None:
        self.budgets = dict(budgets)
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        handler = grpc.method_handlers_generic_handler(
            "envoy.service.ratelimit.v3.RateLimitService",
            {
                "ShouldRateLimit": grpc.unary_unary_rpc_method_handler(
                    self.should_rate_limit,
                    request_deserializer=pb2.RateLimitRequest.FromString,
                    response_serializer=pb2.RateLimitResponse.SerializeToString,
                )
            },
        )
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    def should_rate_limit(self, request: Any, context: object) -> Any:
        value = request.descriptors[0].entries[0].value
        codes: Any = pb2.RateLimitResponse
        with self.lock:
            if self.budgets[value] < request.hits_addend:
                status = codes.DescriptorStatus(code=codes.OVER_LIMIT)
                status.duration_until_reset.FromMilliseconds(1)
                return codes(overall_code=codes.OVER_LIMIT, statuses=[status])
            self.budgets[value] -= request.hits_addend
        return codes(overall_code=codes.OK)


def test_envoy_limiter_gives_all_workers_one_global_budget() -> None:
    service = FakeEnvoyRateLimitService({"requests": 5, "tokens": 10_000})
    service.server.start()
    try:
        workers = [
            envoy_limiter(f"127.0.0.1:{service.port}", "trajcurate-llm", block_until_allowed=False)
            for _ in range(3)
        ]
        results = [w.try_acquire(100, 0.0) for _ in range(3) for w in workers]
    finally:
        service.server.stop(grace=None)
    assert results.count(0.0) == 5  # 9 asks from 3 workers, one budget of 5
    assert service.budgets == {"requests": 0, "tokens": 10_000 - 5 * 100}


@pytest.mark.parametrize("window", [1.0, 7.0, 25.0, 60.0])
def test_a_shorter_window_is_stricter_never_looser(window: float) -> None:
    """Every window-long stretch holds its share, and every minute still holds at most R —
    also when the window does not divide a minute (7 s: 9 windows span a minute)."""
    rpm = 120
    limiter = SlidingWindowLimiter(rpm, window_s=window, pace=False)
    grants = simulate(limiter, callers=16, duration=240.0)
    assert max_in_window(grants, 60.0) <= rpm
    assert max_in_window(grants, window) == limiter.request_cap()
    if 60.0 % window == 0:  # a window dividing the minute loses nothing of the budget
        assert limiter.request_cap() == rpm * window / 60
    cap = limiter.request_cap()
    assert cap is not None and len(grants) >= (240.0 // window) * cap  # every window filled


def test_a_window_too_short_for_one_request_grows_to_hold_one() -> None:
    limiter = SlidingWindowLimiter(6, window_s=1.0, pace=False)  # 1 request every 10 s
    assert (limiter.window_s, limiter.request_cap()) == (10.0, 1)
    grants = simulate(limiter, callers=4, duration=120.0)
    assert max_in_window(grants, 60.0) <= 6


# -- one budget in shares, proven on a fake clock at the windows' edges -------------------


def edge_or_random(rng: random.Random, window: float) -> float:
    """At once, exactly one window later (where the caller's own grant leaves the window),
    or at a random moment within two windows."""
    return rng.choice((0.0, window, rng.uniform(0.0, 2 * window)))


def simulate_shares(
    shares: list[SlidingWindowLimiter],
    *,
    callers: int,
    duration: float,
    seed: int,
    think: Callable[[random.Random, float], float] = edge_or_random,
) -> list[list[float]]:
    """`callers` callers on each share (one per worker process), one timeline for all. A
    denied caller asks again exactly when told; a granted one after `think(rng, window)`.
    Returns each share's grant times."""
    rng = random.Random(seed)
    asks = [(0.0, share, caller) for share in range(len(shares)) for caller in range(callers)]
    grants: list[list[float]] = [[] for _ in shares]
    while True:
        asks.sort()
        now, share, caller = asks.pop(0)
        if now >= duration:
            return grants
        limiter = shares[share]
        wait = limiter.try_acquire(0, now)
        if wait > 0:
            asks.append((now + wait, share, caller))
            continue
        grants[share].append(now)
        asks.append((now + think(rng, limiter.window_s), share, caller))


@pytest.mark.parametrize(
    ("rpm", "workers", "window", "pace"),
    [
        (600, 2, 1.0, True),  # the real-time test's budget
        (600, 2, 1.0, False),
        (500, 3, 1.0, False),  # 166.67 a minute each: whole requests per window, rounded down
        (120, 3, 7.0, False),  # a window that does not divide the minute
        (10, 4, 1.0, True),  # 2.5 a minute each: the window grows past one request's 24 s
        (12, 2, 60.0, False),
    ],
)
def test_shares_of_one_budget_hold_it_in_every_window_edges_included(
    rpm: int, workers: int, window: float, pace: bool
) -> None:
    shares = [
        SlidingWindowLimiter.per_worker(rpm, None, workers, window_s=window, pace=pace)
        for _ in range(workers)
    ]
    per_share = simulate_shares(shares, callers=4, duration=40 * shares[0].window_s, seed=rpm)
    union = sorted(t for grants in per_share for t in grants)
    cap, held = shares[0].request_cap(), shares[0].window_s  # held: `window`, or grown
    assert cap is not None and workers * cap <= rpm * held / 60
    assert all(max_in_window(grants, held) <= cap for grants in per_share)
    assert max_in_window(union, held) <= workers * cap
    assert max_in_window(union, 60.0) <= rpm
    assert {t + held for t in union} & set(union)  # grants landed exactly on window edges


@pytest.mark.parametrize(("rpm", "window"), [(600, 1.0), (12, 60.0)])
def test_two_shares_spend_the_budget_while_work_is_queued(rpm: int, window: float) -> None:
    """What the real-time tests no longer time (a slow machine sends less): two processes,
    each judging one record after another, get >= 90 % of the budget in every stretch of
    three windows (the pacing margin is 2 %) and fill the busiest window."""
    shares = [SlidingWindowLimiter.per_worker(rpm, None, 2, window_s=window) for _ in range(2)]

    def answered(rng: random.Random, window: float) -> float:
        return rng.uniform(0.001, 0.05) * window  # the next record once the answer is in

    duration = 20 * window
    per_share = simulate_shares(shares, callers=1, duration=duration, seed=3, think=answered)
    union = sorted(t for grants in per_share for t in grants)
    assert max_in_window(union, window) == rpm * window / 60
    assert min_in_full_windows(union, 3 * window) >= 0.9 * rpm * 3 * window / 60


def test_a_grant_holds_its_slot_until_its_window_ends_to_the_last_bit() -> None:
    """The edge, in floating point: 2.051684231528572 + 1.7 is not above 3.751684231528572,
    but 3.751684231528572 - 1.7 is at or above 2.051684231528572 — checked the second way,
    the slot was freed one ulp early and a checker counting [t, t + 1.7) saw 2 with cap 1."""
    limiter = SlidingWindowLimiter(40, window_s=1.7, pace=False)  # 1 request per 1.7 s
    first, edge = 2.051684231528572, 3.751684231528572
    assert limiter.request_cap() == 1 and edge - 1.7 >= first and first + 1.7 > edge
    assert limiter.try_acquire(0, first) == 0.0
    assert limiter.try_acquire(0, edge) > 0  # still inside [first, first + 1.7)
    assert limiter.try_acquire(0, first + 1.7) == 0.0


def test_a_quarter_of_ten_a_minute_never_lets_three_into_one_minute() -> None:
    """--llm-rpm 10 --llm-workers 4 --llm-rate-window 1: 2.5 a minute each. One request per
    24 s would put three in some minute (12 over the four); a 30-second window holds it."""
    limiter = SlidingWindowLimiter.per_worker(10, None, 4, window_s=1.0)
    assert (limiter.window_s, limiter.request_cap()) == (30.0, 1)
    grants = simulate(limiter, callers=4, duration=600.0)
    assert max_in_window(grants, 60.0) == 2


def test_acquire_reads_the_clock_while_it_holds_the_lock() -> None:
    """A reading taken before the lock can be stale by the time it is booked (another thread
    held the lock, or the thread was descheduled): the request would be logged earlier than
    it was granted, leave the window early and let one more in. Reading under the lock, no
    grant can come between the reading and the booking."""
    clock = FakeClock()
    held: list[bool] = []

    def reading() -> float:
        held.append(limiter._lock.locked())
        return clock()

    limiter = SlidingWindowLimiter(60, clock=reading, sleep=clock.sleep)
    for _ in range(3):
        limiter.acquire()
    assert len(held) >= 3 and all(held)
