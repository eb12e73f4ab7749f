"""Beam stage of the optional LLM judges: batches of bundles, bounded concurrency.

Bundles arrive in batches (`BatchElements`); the main-agent records of a batch are judged on
a thread pool of `--llm-concurrency`, each worker holding one client whose limiter keeps
its share of the requests/tokens-per-minute budget. A record whose judging fails keeps
null scores and an error field (the judge's failure output) and flows on. The client's
counters are mirrored into Beam metrics (`trajcurate/llm.*`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import Metrics

from transforms.llm.counters import COUNTER_NAMES, LLMCounters
from transforms.llm.dry_run import estimate_run
from transforms.llm.judging import JUDGE_KEY, Judge, JudgeSettings, make_client, planned_requests
from transforms.redact import mask_secrets_in_text
from transforms.stages import NAMESPACE

_COUNTED = COUNTER_NAMES  # every client counter becomes a Beam metric
ERROR_KEYS = ("llm_error", "llm_checklist_error")


def _main_records(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        record
        for bundle in batch
        for record in bundle["records"]
        if record["meta_info"]["unique_info"].get("_agent_type", "main") == "main"
    ]


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
        self.metrics = {name: Metrics.counter(NAMESPACE, f"llm.{name}") for name in _COUNTED}
        self.latency = Metrics.distribution(NAMESPACE, "llm.latency_ms")

    def setup(self) -> None:
        self.counters = LLMCounters()
        self.published = {name: 0 for name in _COUNTED}
        self.latencies_published = 0
        self.judge = Judge(self.settings, make_client(self.settings, self.counters))
        self.pool = ThreadPoolExecutor(max_workers=self.settings.concurrency)

    def process(self, batch: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        records = _main_records(batch)
        for record, outputs in zip(records, self.pool.map(self._judge, records), strict=True):
            record["meta_info"]["unique_info"][JUDGE_KEY] = _masked_errors(outputs)
        self._publish()
        yield from batch

    def _judge(self, record: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.judge.judge(record)
        except Exception as exc:  # a bug must cost one record its scores, not the batch
            return {
                "llm_composite_score": None,
                "llm_checklist_isr": None,
                "llm_checklist_csr": None,
                "llm_error": f"{type(exc).__name__}: {exc}",
            }

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
        self.pool.shutdown(wait=True)


class PlanJudgeCalls(beam.DoFn):
    """`--llm-dry-run`: the calls and tokens judging a batch would cost; records untouched."""

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings

    def setup(self) -> None:
        self.seen_checklists: set[str] = set()

    def process(self, batch: list[dict[str, Any]]) -> Iterator[Any]:
        requests = [
            request
            for record in _main_records(batch)
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
