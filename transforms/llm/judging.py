"""Judging IM records with the registered strategies (no Beam here).

- `JudgeSettings`: what `--llm-*` configure; `strategy_names` resolves `--llm-judge`.
- `Budget`: what the judges of one process share — the rate limiter holding this process's
  share of `--llm-rpm` / `--llm-tpm` (or the global Envoy limiter), its adaptive slowdown,
  and the per-task checklist cache. The judge stage holds one per process
  (`apache_beam.utils.shared.Shared`), however many DoFn instances the runner makes.
- `Judge`: one client plus the strategies; `judge(record)` returns every output key.
- `judge_batch`: the stage itself, shared by the Beam DoFn: each bundle comes out judged,
  or as a dead letter when judging it raised something other than a judge failure.
- `check_setup`: what would make every worker's `setup` fail, checked once on the driver
  before any trial is read.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import BaseModel

from scorers.llm_judges import ChecklistCache, GeneratedChecklist
from scorers.llm_judges.requests import ChatRequest
from transforms.chain import DEAD_LETTER, Drop, dead_letter_record
from transforms.llm.cache import ResponseCache
from transforms.llm.client import ChatClient
from transforms.llm.counters import LLMCounters
from transforms.llm.rate_limit import Limiter, SlidingWindowLimiter, envoy_limiter
from transforms.llm.retry import AdaptiveRate, RetryPolicy
from transforms.llm.strategies import STRATEGIES, JudgeStrategy, judge_kinds, strategy_names
from transforms.redact import mask_url_credentials
from transforms.workers import local_processes

KINDS = judge_kinds()
JUDGE_KEY = "_llm_judge"  # unique_info key: kept apart from TQS V2's `_score`
JUDGE_STAGE = "judge"  # counters judge.in / judge.kept / judge.dead_letter
CONNECT_TIMEOUT_S = 5.0

Bundle = dict[str, Any]


class JudgeSetupError(ValueError):
    """A judge configuration no worker could start with; one line, secret-free."""


@dataclass(frozen=True)
class JudgeSettings:
    kind: str
    model: str
    base_url: str | None = None
    concurrency: int = 4
    rpm: float | None = None
    tpm: float | None = None
    workers: int = 1  # processes holding a share of rpm/tpm (each gets 1/workers)
    window_s: float = 60.0  # the sliding window the budget holds over (<= 60: stricter)
    max_retries: int = 5
    timeout_s: float = 120.0
    cache_dir: str | None = None
    question_field: str | None = None
    envoy_address: str | None = None  # a global budget shared by all workers (Envoy)
    envoy_domain: str = "trajcurate"
    price_in: float = 0.0
    price_out: float = 0.0

    def __post_init__(self) -> None:
        strategy_names(self.kind)  # raises on an unknown kind
        if self.concurrency < 1 or self.workers < 1:
            raise ValueError("--llm-concurrency and --llm-workers must be at least 1")

    @property
    def strategy_names(self) -> tuple[str, ...]:
        return strategy_names(self.kind)


@dataclass
class Budget:
    """What every judge of one process shares (see the module docstring)."""

    limiter: Limiter
    adaptive: AdaptiveRate | None
    checklists: ChecklistCache[GeneratedChecklist] = field(default_factory=ChecklistCache)


def make_budget(settings: JudgeSettings) -> Budget:
    """This process's share of the run's budget — or, with an Envoy rate-limit service, one
    budget every process draws from (the service then holds the limits)."""
    if settings.envoy_address:
        limiter = envoy_limiter(
            settings.envoy_address, settings.envoy_domain, limit_tokens=settings.tpm is not None
        )
        return Budget(limiter, None)  # the shared service sets the pace for everyone
    sliding = SlidingWindowLimiter.per_worker(
        settings.rpm, settings.tpm, settings.workers, window_s=settings.window_s
    )
    return Budget(sliding, AdaptiveRate(sliding))  # slow down under pushback


def make_client(
    settings: JudgeSettings, counters: LLMCounters, budget: Budget | None = None
) -> ChatClient:
    """A client drawing on `budget` (a fresh one when None); the key comes from the
    environment."""
    budget = budget or make_budget(settings)
    return ChatClient(
        settings.model,
        base_url=settings.base_url,
        api_key=os.environ.get("OPENAI_API_KEY"),
        timeout_s=settings.timeout_s,
        limiter=budget.limiter,
        retry=RetryPolicy(max_retries=settings.max_retries, adaptive=budget.adaptive),
        cache=ResponseCache(settings.cache_dir) if settings.cache_dir else None,
        counters=counters,
    )


def make_strategies(
    settings: JudgeSettings, checklists: ChecklistCache[GeneratedChecklist] | None = None
) -> list[JudgeStrategy]:
    shared = checklists if checklists is not None else ChecklistCache()
    return [
        STRATEGIES[name](settings.model, settings.question_field, shared)
        for name in settings.strategy_names
    ]


class Judge:
    """The configured strategies over one client."""

    def __init__(
        self,
        settings: JudgeSettings,
        client: ChatClient,
        checklists: ChecklistCache[GeneratedChecklist] | None = None,
    ) -> None:
        self.settings = settings
        self.client = client
        self.strategies = make_strategies(settings, checklists)

    def judge(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Every output key of the configured strategies for one main-agent record."""
        outputs: dict[str, Any] = {}
        for strategy in self.strategies:
            outputs.update(strategy.judge(record, self.client.complete))
        # Both judges name their version `llm_checklist_version` (llm-judges.md): keep both.
        outputs["llm_checklist_version"] = "+".join(s.version for s in self.strategies)
        return outputs


def planned_requests(
    record: Mapping[str, Any], settings: JudgeSettings, seen_checklists: set[str]
) -> Iterator[ChatRequest[BaseModel]]:
    """The requests judging `record` would send (for `--llm-dry-run`); a checklist already
    planned for the same task is generated once."""
    for strategy in make_strategies(settings):
        yield from strategy.plan(record, seen_checklists)


def main_records(bundle: Bundle) -> list[dict[str, Any]]:
    """The records the judges see: main agents only (subagents are parts of a trajectory)."""
    return [
        record
        for record in bundle["records"]
        if record["meta_info"]["unique_info"].get("_agent_type", "main") == "main"
    ]


def judge_batch(
    batch: list[Bundle],
    judge: Callable[[Mapping[str, Any]], dict[str, Any]],
    executor: Executor | None = None,
    finish: Callable[[dict[str, Any]], dict[str, Any]] = lambda outputs: outputs,
) -> list[Bundle | Drop]:
    """Each bundle of `batch` with its main records judged (outputs under `JUDGE_KEY`, passed
    through `finish`), or a dead letter when judging one of its records raised.

    A judge failure is an output (null scores, an error field), never an exception; what
    does raise here is a bug or a record the judges cannot read, and it costs that bundle
    only. Records are judged on `executor` when given (the stage's bounded concurrency).
    """
    work: list[tuple[int, dict[str, Any]]] = []
    failed: dict[int, Exception] = {}
    for index, bundle in enumerate(batch):
        try:
            work.extend((index, record) for record in main_records(bundle))
        except Exception as exc:  # a bundle the judges cannot read
            failed[index] = exc
    mapped: Iterable[dict[str, Any] | Exception] = (
        executor.map(_outcome(judge), [record for _, record in work])
        if executor is not None
        else map(_outcome(judge), [record for _, record in work])
    )
    for (index, record), outcome in zip(work, mapped, strict=True):
        if isinstance(outcome, Exception):
            failed.setdefault(index, outcome)
        else:
            record["meta_info"]["unique_info"][JUDGE_KEY] = finish(outcome)
    return [
        Drop(DEAD_LETTER, dead_letter_record(JUDGE_STAGE, bundle, failed[index]))
        if index in failed
        else bundle
        for index, bundle in enumerate(batch)
    ]


def _outcome(
    judge: Callable[[Mapping[str, Any]], dict[str, Any]],
) -> Callable[[dict[str, Any]], dict[str, Any] | Exception]:
    def run(record: dict[str, Any]) -> dict[str, Any] | Exception:
        try:
            return judge(record)
        except Exception as exc:  # routed to the dead letters by judge_batch
            return exc

    return run


def check_setup(settings: JudgeSettings, *, local: bool, dry_run: bool) -> None:
    """Fail once, on the driver, for what would fail every worker: a malformed base URL; and
    on a local run (the workers share this machine and environment), a missing
    OPENAI_API_KEY or an endpoint that refuses connections. A dry run sends nothing and
    needs neither. No HTTP request is sent: a re-run from the cache must cost nothing.
    Raises `JudgeSetupError`."""
    base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL")
    url = _parsed_url(base_url) if base_url else None
    make_budget(settings)  # a limiter the options cannot build fails here, not in a worker
    if dry_run or not local:
        return
    if not os.environ.get("OPENAI_API_KEY"):
        raise JudgeSetupError(
            "--llm-judge needs OPENAI_API_KEY in the environment "
            "(a server that takes no key accepts any value)"
        )
    if url is not None:
        _check_connects(url)


def _parsed_url(base_url: str) -> httpx.URL:
    shown = mask_url_credentials(base_url)
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise JudgeSetupError(f"--llm-base-url {shown}: not a URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise JudgeSetupError(f"--llm-base-url {shown}: give an http(s) URL with a host")
    return url


def _check_connects(url: httpx.URL) -> None:
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise JudgeSetupError(
            f"--llm-base-url {url.scheme}://{url.host}:{port}: cannot connect ({reason})"
        ) from None


def worker_processes(
    llm_workers: int, *, local: bool, running_mode: str | None, num_workers: int | None
) -> int:
    """How many processes split the run's budget: on a local run the runner's own worker
    processes (`--direct_num_workers` with `--direct_running_mode multi_processing`, 0 = one
    per CPU; every other local mode runs in this one process); on any other runner the
    workers cannot be known here, so `--llm-workers` says how many."""
    return local_processes(running_mode, num_workers) if local else llm_workers
