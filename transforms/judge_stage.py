"""Beam stage of the optional LLM judges: one counted stage, bounded concurrency.

Bundles arrive in batches (`BatchElements`); the main-agent records of a batch are judged by
the registered strategies (`transforms/llm/strategies.py`) on a thread pool of
`--llm-concurrency`. `judge_batch` does the work (no Beam there); this DoFn only routes and
counts: every bundle counts `judge.in` and then `judge.kept` — scored, or with null scores
and an error field when the judge gave up — or `judge.dead_letter`, on the `dead_letter`
output, when judging it raised (a bug, a record the judges cannot read). A judged bundle
that went through the `redact` stage has the judges' outputs masked too
(`bundle_steps.mask_judge_answers`): their answers are written to the data.

Each worker process holds one `Budget` (`apache_beam.utils.shared.Shared`): the limiter with
this process's share of `--llm-rpm` / `--llm-tpm`, and the checklist cache, shared by every
DoFn instance of the process. The client's counters are mirrored into Beam metrics
(`trajcurate/llm.*`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import Metrics
from apache_beam.utils.shared import Shared

from transforms.bundle_steps import mask_judge_answers
from transforms.chain import DEAD_LETTER, Drop
from transforms.llm.counters import COUNTER_NAMES, LLMCounters
from transforms.llm.dry_run import estimate_run
from transforms.llm.judging import (
    JUDGE_KEY,
    JUDGE_STAGE,
    Budget,
    Judge,
    JudgeSettings,
    judge_batch,
    main_records,
    make_budget,
    make_client,
    planned_requests,
)
from transforms.redact import mask_secrets_in_text
from transforms.stages import NAMESPACE

_COUNTED = COUNTER_NAMES  # every client counter becomes a Beam metric
ERROR_KEYS = ("llm_error", "llm_checklist_error")


def _masked_errors(outputs: dict[str, Any]) -> dict[str, Any]:
    """Error texts can quote the endpoint's URL (with its credentials) or a secret-bearing
    answer: they are written to the data, so they are masked like the data."""
    for key in ERROR_KEYS:
        if isinstance(outputs.get(key), str):
            outputs[key] = mask_secrets_in_text(outputs[key])
    return outputs


class JudgeBundles(beam.DoFn):
    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self.shared = Shared()  # made once, on the driver: its key travels with the DoFn
        self.metrics = {name: Metrics.counter(NAMESPACE, f"llm.{name}") for name in _COUNTED}
        self.latency = Metrics.distribution(NAMESPACE, "llm.latency_ms")
        self.stage = {
            name: Metrics.counter(NAMESPACE, f"{JUDGE_STAGE}.{name}")
            for name in ("in", "kept", DEAD_LETTER)
        }

    def setup(self) -> None:
        # Shared holds a weak reference: this strong one keeps the budget for the process.
        self.budget: Budget = self.shared.acquire(lambda: make_budget(self.settings))
        self.counters = LLMCounters()
        self.published = {name: 0 for name in _COUNTED}
        self.latencies_published = 0
        client = make_client(self.settings, self.counters, self.budget)
        self.judge = Judge(self.settings, client, self.budget.checklists)
        self.pool = ThreadPoolExecutor(max_workers=self.settings.concurrency)

    def process(self, batch: list[dict[str, Any]]) -> Iterator[Any]:
        judged = judge_batch(batch, self.judge.judge, self.pool, _masked_errors)
        self.stage["in"].inc(len(batch))
        for item in judged:
            if isinstance(item, Drop):
                self.stage[DEAD_LETTER].inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, item.record)
            else:
                self.stage["kept"].inc()
                yield mask_judge_answers(item, JUDGE_KEY)
        self._publish()

    def _publish(self) -> None:
        for name in _COUNTED:
            value = getattr(self.counters, name)
            self.metrics[name].inc(value - self.published[name])
            self.published[name] = value
        latencies = list(self.counters.latencies)
        for seconds in latencies[self.latencies_published :]:
            self.latency.update(int(seconds * 1000))
        self.latencies_published = len(latencies)

    def teardown(self) -> None:
        if hasattr(self, "pool"):  # setup may have failed before making them
            self.pool.shutdown(wait=True)
            self.judge.client.close()


class PlanJudgeCalls(beam.DoFn):
    """`--llm-dry-run`: the calls and tokens judging a batch would cost; records untouched."""

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings

    def setup(self) -> None:
        self.seen_checklists: set[str] = set()

    def process(self, batch: list[dict[str, Any]]) -> Iterator[Any]:
        requests = [
            request
            for bundle in batch
            for record in main_records(bundle)
            for request in planned_requests(record, self.settings, self.seen_checklists)
        ]
        estimate = estimate_run(
            requests,
            model=self.settings.model,
            price_in_per_m=self.settings.price_in,
            price_out_per_m=self.settings.price_out,
        )
        yield beam.pvalue.TaggedOutput("estimate", dataclasses.asdict(estimate))
        yield from batch


def sum_estimates(estimates: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's dry-run estimate from the per-batch ones (`DryRunEstimate` fields)."""
    total: dict[str, Any] = {
        "calls": 0,
        "tokens_in_estimate": 0,
        "tokens_out_max": 0,
        "calls_by_purpose": {},
    }
    for estimate in estimates:
        total["calls"] += estimate["calls"]
        total["tokens_in_estimate"] += estimate["tokens_in"]
        total["tokens_out_max"] += estimate["tokens_out_max"]
        for purpose, calls in estimate["calls_by_purpose"].items():
            total["calls_by_purpose"][purpose] = total["calls_by_purpose"].get(purpose, 0) + calls
        total["price_in_per_m"] = estimate["price_in_per_m"]
        total["price_out_per_m"] = estimate["price_out_per_m"]
    price_in = total.get("price_in_per_m", 0.0)
    price_out = total.get("price_out_per_m", 0.0)
    total["cost_usd_max"] = round(
        (total["tokens_in_estimate"] * price_in + total["tokens_out_max"] * price_out) / 1e6, 4
    )
    return total
