"""Judging one IM record with the fixed and/or dynamic checklist (no Beam here).

`Judge` owns what one worker needs — a client (with its limiter, retries, cache and
counters) and the per-task checklist cache — and turns every failure into the judge's
failure output, so a record always comes back with scores or an error field, never lost.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from scorers.llm_judges import (
    AnswerError,
    ChecklistCache,
    GeneratedChecklist,
    build_fixed_request,
    build_generate_request,
    build_judge_request,
    checklist_key,
    dynamic_failure,
    dynamic_scores,
    fixed_failure,
    fixed_scores,
    question_of,
    system_prompt_of,
    tool_summary,
)
from scorers.llm_judges.requests import ChatRequest
from transforms.llm.cache import ResponseCache
from transforms.llm.chat_format import JudgeError
from transforms.llm.client import ChatClient
from transforms.llm.counters import LLMCounters
from transforms.llm.rate_limit import Limiter, SlidingWindowLimiter, envoy_limiter
from transforms.llm.retry import AdaptiveRate, RetryPolicy

KINDS = ("fixed", "dynamic", "both")
JUDGE_KEY = "_llm_judge"  # unique_info key: kept apart from TQS V2's `_score`


@dataclass(frozen=True)
class JudgeSettings:
    kind: str
    model: str
    base_url: str | None = None
    concurrency: int = 4
    rpm: float | None = None
    tpm: float | None = None
    workers: int = 1
    max_retries: int = 5
    timeout_s: float = 120.0
    cache_dir: str | None = None
    question_field: str | None = None
    envoy_address: str | None = None  # a global budget shared by all workers (Envoy)
    envoy_domain: str = "trajcurate"
    price_in: float = 0.0
    price_out: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"--llm-judge: one of {', '.join(KINDS)}")
        if self.concurrency < 1 or self.workers < 1:
            raise ValueError("--llm-concurrency and --llm-workers must be at least 1")


def make_client(settings: JudgeSettings, counters: LLMCounters) -> ChatClient:
    """A client with this worker's share of the budget — or, with an Envoy rate-limit service,
    one budget shared by every worker; the key comes from the environment."""
    limiter: Limiter
    adaptive: AdaptiveRate | None
    if settings.envoy_address:
        limiter = envoy_limiter(
            settings.envoy_address, settings.envoy_domain, limit_tokens=settings.tpm is not None
        )
        adaptive = None  # the shared service sets the pace for everyone
    else:
        sliding = SlidingWindowLimiter.per_worker(settings.rpm, settings.tpm, settings.workers)
        limiter, adaptive = sliding, AdaptiveRate(sliding)  # slow down under pushback
    return ChatClient(
        settings.model,
        base_url=settings.base_url,
        api_key=os.environ.get("OPENAI_API_KEY"),
        timeout_s=settings.timeout_s,
        limiter=limiter,
        retry=RetryPolicy(max_retries=settings.max_retries, adaptive=adaptive),
        cache=ResponseCache(settings.cache_dir) if settings.cache_dir else None,
        counters=counters,
    )


class Judge:
    def __init__(self, settings: JudgeSettings, client: ChatClient) -> None:
        self.settings = settings
        self.client = client
        self.checklists: ChecklistCache[GeneratedChecklist] = ChecklistCache()

    def judge(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Every output key of the configured judge(s) for one main-agent record."""
        outputs: dict[str, Any] = {}
        versions = []
        if self.settings.kind in ("fixed", "both"):
            outputs.update(self._fixed(record))
            versions.append(outputs.get("llm_checklist_version"))
        if self.settings.kind in ("dynamic", "both"):
            outputs.update(self._dynamic(record))
            versions.append(outputs.get("llm_checklist_version"))
        # Both judges name their version `llm_checklist_version` (llm-judges.md): keep both.
        outputs["llm_checklist_version"] = "+".join(str(v) for v in versions if v)
        return outputs

    def _fixed(self, record: Mapping[str, Any]) -> dict[str, Any]:
        model = self.settings.model
        try:
            completion = self.client.complete(build_fixed_request(record, model))
        except (JudgeError, AnswerError) as exc:
            return fixed_failure(str(exc), model)
        return fixed_scores(completion.answer, model, completion.raw_text)

    def _dynamic(self, record: Mapping[str, Any]) -> dict[str, Any]:
        model = self.settings.model
        question, source = question_of(record, self.settings.question_field)
        system, tools = system_prompt_of(record), tool_summary(record.get("tools"))
        checklist: GeneratedChecklist | None = None
        try:
            checklist = self.checklists.get_or_create(
                checklist_key(question, system, tools),
                lambda: self._generate(question, system, tools),
            )
            judged = self.client.complete(build_judge_request(record, checklist, model))
        except (JudgeError, AnswerError) as exc:
            return dynamic_failure(
                str(exc), model, model, question=question, source=source, checklist=checklist
            )
        return dynamic_scores(checklist, judged.answer, question, source, model, model)

    def _generate(self, question: str, system: str, tools: str) -> GeneratedChecklist:
        request = build_generate_request(question, system, tools, self.settings.model)
        return self.client.complete(request).answer


def planned_requests(
    record: Mapping[str, Any], settings: JudgeSettings, seen_checklists: set[str]
) -> Iterator[ChatRequest[BaseModel]]:
    """The requests judging `record` would send (for `--llm-dry-run`); a checklist already
    planned for the same task is generated once."""
    model = settings.model
    if settings.kind in ("fixed", "both"):
        yield build_fixed_request(record, model)  # type: ignore[misc]
    if settings.kind in ("dynamic", "both"):
        question, _source = question_of(record, settings.question_field)
        system, tools = system_prompt_of(record), tool_summary(record.get("tools"))
        key = checklist_key(question, system, tools)
        if key not in seen_checklists:
            seen_checklists.add(key)
            yield build_generate_request(question, system, tools, model)  # type: ignore[misc]
        placeholder = GeneratedChecklist.model_construct(question_summary="", categories=[])
        yield build_judge_request(record, placeholder, model)  # type: ignore[misc]
