"""The judge strategies, registered by name: `fixed` and `dynamic` (llm-judges.md).

A strategy turns one main-agent record into its output keys. Its own failures — the server
gave up (`JudgeError`), an answer never parsed (`AnswerError`) — become its failure output
(null scores and an error field), so the record flows on; anything else is a bug and
propagates, for the judge stage to dead-letter the bundle. `--llm-judge` names one strategy
or `both` (every registered one, in registration order): nothing else branches on the name.
A strategy also lists the requests it would send, for `--llm-dry-run`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from scorers.llm_judges import (
    DYNAMIC_CHECKLIST_VERSION,
    FIXED_CHECKLIST_VERSION,
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
from transforms.llm.chat_format import ChatRequestLike, Completion, JudgeError

__all__ = [
    "ALL_STRATEGIES",
    "STRATEGIES",
    "Complete",
    "DynamicChecklist",
    "FixedChecklist",
    "JudgeStrategy",
    "judge_kinds",
    "strategy_names",
]

ALL_STRATEGIES = "both"
Complete = Callable[[ChatRequestLike[Any]], Completion[Any]]


class JudgeStrategy(Protocol):
    """One judge: its output keys for a record, and the requests it would send."""

    name: ClassVar[str]
    version: ClassVar[str]

    def judge(self, record: Mapping[str, Any], complete: Complete) -> dict[str, Any]: ...

    def plan(
        self, record: Mapping[str, Any], seen_checklists: set[str]
    ) -> Iterator[ChatRequest[BaseModel]]: ...


class FixedChecklist:
    """15 anchored 1-5 checks in one call per record."""

    name: ClassVar[str] = "fixed"
    version: ClassVar[str] = FIXED_CHECKLIST_VERSION

    def __init__(
        self, model: str, question_field: str | None, checklists: ChecklistCache[Any]
    ) -> None:
        self.model = model

    def judge(self, record: Mapping[str, Any], complete: Complete) -> dict[str, Any]:
        try:
            completion = complete(build_fixed_request(record, self.model))
        except (JudgeError, AnswerError) as exc:
            return fixed_failure(str(exc), self.model)
        return fixed_scores(completion.answer, self.model, completion.raw_text)

    def plan(
        self, record: Mapping[str, Any], seen_checklists: set[str]
    ) -> Iterator[ChatRequest[BaseModel]]:
        yield build_fixed_request(record, self.model)  # type: ignore[misc]


class DynamicChecklist:
    """A checklist generated per task (shared by its attempts), then a judgement per record."""

    name: ClassVar[str] = "dynamic"
    version: ClassVar[str] = DYNAMIC_CHECKLIST_VERSION

    def __init__(
        self,
        model: str,
        question_field: str | None,
        checklists: ChecklistCache[GeneratedChecklist],
    ) -> None:
        self.model = model
        self.question_field = question_field
        self.checklists = checklists

    def judge(self, record: Mapping[str, Any], complete: Complete) -> dict[str, Any]:
        model = self.model
        question, source = question_of(record, self.question_field)
        system, tools = system_prompt_of(record), tool_summary(record.get("tools"))
        checklist: GeneratedChecklist | None = None
        try:
            checklist = self.checklists.get_or_create(
                checklist_key(question, system, tools),
                lambda: complete(build_generate_request(question, system, tools, model)).answer,
            )
            judged = complete(build_judge_request(record, checklist, model))
        except (JudgeError, AnswerError) as exc:
            return dynamic_failure(
                str(exc), model, model, question=question, source=source, checklist=checklist
            )
        return dynamic_scores(checklist, judged.answer, question, source, model, model)

    def plan(
        self, record: Mapping[str, Any], seen_checklists: set[str]
    ) -> Iterator[ChatRequest[BaseModel]]:
        question, _source = question_of(record, self.question_field)
        system, tools = system_prompt_of(record), tool_summary(record.get("tools"))
        key = checklist_key(question, system, tools)
        if key not in seen_checklists:
            seen_checklists.add(key)
            yield build_generate_request(question, system, tools, self.model)  # type: ignore[misc]
        placeholder = GeneratedChecklist.model_construct(question_summary="", categories=[])
        yield build_judge_request(record, placeholder, self.model)  # type: ignore[misc]


STRATEGIES: dict[str, type[FixedChecklist] | type[DynamicChecklist]] = {
    strategy.name: strategy for strategy in (FixedChecklist, DynamicChecklist)
}


def judge_kinds() -> tuple[str, ...]:
    """The values `--llm-judge` takes: every registered strategy, then `both`."""
    return (*STRATEGIES, ALL_STRATEGIES)


def strategy_names(kind: str) -> tuple[str, ...]:
    """The strategies `--llm-judge kind` runs, in registration order."""
    if kind == ALL_STRATEGIES:
        return tuple(STRATEGIES)
    if kind not in STRATEGIES:
        raise ValueError(f"--llm-judge: one of {', '.join(judge_kinds())}")
    return (kind,)
