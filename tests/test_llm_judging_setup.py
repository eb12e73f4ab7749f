"""How a worker's judge client is set up from the run options."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

import pytest

from pipelines.cli import build_parser
from pipelines.config import JUDGE_KINDS, config_from_args
from transforms.chain import DEAD_LETTER, Drop
from transforms.judge_stage import JudgeBundles
from transforms.llm.counters import LLMCounters
from transforms.llm.judging import (
    JUDGE_KEY,
    JudgeSettings,
    judge_batch,
    make_client,
    worker_processes,
)
from transforms.llm.rate_limit import BeamRateLimiterAdapter, SlidingWindowLimiter
from transforms.llm.strategies import judge_kinds


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


def test_a_local_run_counts_its_own_processes_and_a_remote_one_is_told() -> None:
    def local(mode: str) -> int:
        return worker_processes(8, local=True, running_mode=mode, num_workers=3)

    assert local("multi_processing") == 3
    assert local("multi_threading") == local("in_memory") == 1  # one process
    assert worker_processes(8, local=False, running_mode=None, num_workers=None) == 8


def test_every_dofn_instance_of_a_process_draws_on_one_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Beam makes a DoFn instance per thread or bundle: they must not each hold the whole
    budget. Copies of one DoFn (as Beam unpickles them) share one limiter and checklist
    cache; a DoFn of another run gets its own."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    settings = settings_from("--llm-rpm", "600", "--llm-base-url", "http://127.0.0.1:9/v1")
    dofn = JudgeBundles(settings)
    first, second = pickle.loads(pickle.dumps(dofn)), pickle.loads(pickle.dumps(dofn))
    other_run = pickle.loads(pickle.dumps(JudgeBundles(settings)))
    for instance in (first, second, other_run):
        instance.setup()
    assert first.budget is second.budget
    assert first.judge.client.limiter is second.judge.client.limiter
    assert first.budget.checklists is second.budget.checklists
    assert first.judge.client is not second.judge.client  # each its own connections
    assert other_run.budget is not first.budget
    for instance in (first, second, other_run):
        instance.teardown()


def test_the_judge_kinds_are_the_registered_strategies() -> None:
    assert JUDGE_KINDS == judge_kinds() == ("fixed", "dynamic", "both")
    assert settings_from().strategy_names == ("fixed",)
    assert JudgeSettings(kind="both", model="m").strategy_names == ("fixed", "dynamic")
    with pytest.raises(ValueError, match="--llm-judge: one of fixed, dynamic, both"):
        JudgeSettings(kind="vibes", model="m")


def test_the_rate_window_is_an_option_with_a_range() -> None:
    assert settings_from("--llm-rate-window", "5").window_s == 5.0
    assert settings_from().window_s == 60.0
    with pytest.raises(SystemExit):
        settings_from("--llm-rate-window", "0.5")


def test_judge_batch_dead_letters_only_the_bundle_whose_judging_raised() -> None:
    def bundle(instance: str, agents: tuple[str, ...] = ("main",)) -> dict[str, Any]:
        records = [
            {"meta_info": {"unique_info": {"_instance_id": instance, "_agent_type": agent}}}
            for agent in agents
        ]
        return {"job": "j", "instance_id": instance, "records": records}

    def judge(record: Mapping[str, Any]) -> dict[str, Any]:
        if record["meta_info"]["unique_info"]["_instance_id"] == "bad":
            raise RuntimeError("strategy bug")
        return {"llm_composite_score": 0.5}

    batch = [bundle("good", ("main", "subagent")), bundle("bad"), {"job": "j", "records": None}]
    good, bad, unreadable = judge_batch(batch, judge)
    assert isinstance(good, dict)
    infos = [r["meta_info"]["unique_info"] for r in good["records"]]
    assert infos[0][JUDGE_KEY] == {"llm_composite_score": 0.5}
    assert JUDGE_KEY not in infos[1]  # subagents are not judged
    assert isinstance(bad, Drop) and bad.kind == DEAD_LETTER
    assert (bad.record["stage"], bad.record["error"]) == ("judge", "RuntimeError: strategy bug")
    assert isinstance(unreadable, Drop) and unreadable.record["error"].startswith("TypeError")
