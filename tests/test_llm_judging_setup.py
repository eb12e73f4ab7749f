"""How a worker's judge client is set up from the run options."""

from __future__ import annotations

from pipelines.cli import build_parser
from pipelines.config import config_from_args
from transforms.llm.counters import LLMCounters
from transforms.llm.judging import JudgeSettings, make_client
from transforms.llm.rate_limit import BeamRateLimiterAdapter, SlidingWindowLimiter


def settings_from(*flags: str) -> JudgeSettings:
    args, extra = build_parser().parse_known_args(
        ["run", "--input", "x", "--output", "y", "--llm-judge", "fixed", *flags]
    )
    return config_from_args(args, extra).judge_settings()


def test_each_worker_gets_its_share_of_the_budget() -> None:
    settings = settings_from("--llm-rpm", "600", "--llm-tpm", "90000", "--llm-workers", "3")
    limiter = make_client(settings, LLMCounters()).limiter
    assert isinstance(limiter, SlidingWindowLimiter)
    assert limiter.requests_per_minute == 200
    assert limiter.tokens_per_minute == 30000


def test_an_envoy_service_holds_one_budget_for_all_workers() -> None:
    settings = settings_from("--llm-envoy", "127.0.0.1:8081", "--llm-envoy-domain", "judges")
    assert (settings.envoy_address, settings.envoy_domain) == ("127.0.0.1:8081", "judges")
    assert isinstance(make_client(settings, LLMCounters()).limiter, BeamRateLimiterAdapter)
