"""Answer models of the dynamic checklist: the generated checklist and the judgement.

Validation is where a malformed answer becomes a retry instead of a wrong score: check ids
must be unique (the judgement is matched to the checklist by id), a checklist holds 1-40
checks (the prompt asks for 15-35 and allows fewer for simple tasks; 40 is the hard cap),
and a judged check's `status` and `score` must agree — a "passed" with score 0 is a
contradiction the client should ask again about, not a coin to flip. Empty categories are
dropped and repeated category ids merged rather than rejected: neither changes any check.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "CATEGORY_IDS",
    "MAX_CHECKS",
    "CategoryId",
    "CheckType",
    "ChecklistCategory",
    "GeneratedCheck",
    "GeneratedChecklist",
    "JudgedCategory",
    "JudgedCheck",
    "Judgement",
]

MAX_CHECKS = 40
CategoryId = Literal[
    "user_query",
    "system_prompt",
    "tool_schema",
    "repo_policy",
    "implementation",
    "verification",
    "communication",
]
CATEGORY_IDS: tuple[str, ...] = get_args(CategoryId)
CheckType = Literal[
    "compliance", "implementation", "modification", "understanding", "testing", "configuration"
]

_ANSWER = ConfigDict(extra="ignore", str_strip_whitespace=True)


class GeneratedCheck(BaseModel):
    """One atomic, binary check the trajectory either passes or fails."""

    model_config = _ANSWER

    check_id: str = Field(min_length=1, description="Short unique id, e.g. UQ1.")
    description: str = Field(min_length=1, description="What must be true, checkable.")
    check_type: CheckType
    required_evidence: str = Field(description="What in the trajectory proves it.")


class ChecklistCategory(BaseModel):
    """The checks that stem from one source of requirements (the user, a policy, ...)."""

    model_config = _ANSWER

    category_id: CategoryId
    description: str
    checks: list[GeneratedCheck]


class GeneratedChecklist(BaseModel):
    """A task-specific checklist: 1-40 checks with unique ids, no empty categories."""

    model_config = _ANSWER

    question_summary: str
    categories: list[ChecklistCategory]

    @model_validator(mode="after")
    def _normalise(self) -> GeneratedChecklist:
        merged: dict[str, ChecklistCategory] = {}
        for category in self.categories:
            if not category.checks:
                continue
            if category.category_id in merged:
                merged[category.category_id].checks.extend(category.checks)
            else:
                merged[category.category_id] = category.model_copy(
                    update={"checks": list(category.checks)}
                )
        self.categories = list(merged.values())
        ids = [check.check_id for category in self.categories for check in category.checks]
        if not ids:
            raise ValueError("the checklist has no checks")
        if len(ids) > MAX_CHECKS:
            raise ValueError(f"the checklist has {len(ids)} checks, at most {MAX_CHECKS} allowed")
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate check_id(s): {', '.join(duplicates)}")
        return self

    def check_ids(self) -> list[str]:
        """Every check id, in checklist order."""
        return [check.check_id for category in self.categories for check in category.checks]


class JudgedCheck(BaseModel):
    """The verdict on one check: passed (score 1) or failed (score 0), argued and evidenced."""

    model_config = _ANSWER

    check_id: str
    status: Literal["passed", "failed"]
    score: Literal[0, 1]
    reasoning: str = Field(description="Why, citing assistant_turn_index values.")
    evidence: list[str] = Field(
        min_length=1, max_length=3, description="1-3 short quotes from the trajectory."
    )

    @model_validator(mode="after")
    def _status_matches_score(self) -> JudgedCheck:
        expected = 1 if self.status == "passed" else 0
        if self.score != expected:
            raise ValueError(
                f"check {self.check_id}: status {self.status!r} contradicts score {self.score}"
            )
        return self

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class JudgedCategory(BaseModel):
    """The verdicts of one checklist category."""

    model_config = _ANSWER

    category_id: str
    checks: list[JudgedCheck]


class Judgement(BaseModel):
    """The judge's answer: a summary and a verdict per check, grouped like the checklist."""

    model_config = _ANSWER

    summary: str
    categories: list[JudgedCategory]

    def verdicts(self) -> dict[str, JudgedCheck]:
        """Verdicts by check id; for an id judged twice the first verdict counts."""
        found: dict[str, JudgedCheck] = {}
        for category in self.categories:
            for check in category.checks:
                found.setdefault(check.check_id, check)
        return found
