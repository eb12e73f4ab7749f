"""Answer models of the dynamic checklist: the generated checklist and the judgement.

The answer schema sent to the server (`json_answers.strict_json_schema` of these models) is
the acceptance rule: every answer that fits it is accepted. What the schema expresses
(enums, 1-3 evidence snippets, at least one category and one check) is checked as such;
what JSON Schema cannot say is repaired deterministically instead of refused, and every
repair is counted (`normalisations()`, the client's `normalised` counter):

- a judged check whose `status` contradicts its `score` takes the status of its score (the
  score is the number the metrics count; the words are its label);
- a duplicate or empty `check_id` is renamed (`UQ1#2`, `user_query-3`): the judgement is
  matched to the checklist by id, so ids must be unique;
- checks beyond the 40th are cut (the prompt asks for 15-35, 40 is the hard cap).

Empty categories are dropped and repeated category ids merged, silently: neither changes a
check. Refusing a schema-valid answer would only make the client pay again for the same
answer from a deterministic model (issue 13).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

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


# In the schema sent, not enforced by pydantic: a lenient parse (json_object / text levels)
# still accepts an empty category and drops it.
def _at_least_one() -> Any:
    return Field(json_schema_extra={"minItems": 1})


class GeneratedCheck(BaseModel):
    """One atomic, binary check the trajectory either passes or fails."""

    model_config = _ANSWER

    check_id: str = Field(description="Short unique id, e.g. UQ1.")
    description: str = Field(description="What must be true, checkable.")
    check_type: CheckType
    required_evidence: str = Field(description="What in the trajectory proves it.")


class ChecklistCategory(BaseModel):
    """The checks that stem from one source of requirements (the user, a policy, ...)."""

    model_config = _ANSWER

    category_id: CategoryId
    description: str
    checks: list[GeneratedCheck] = _at_least_one()


class GeneratedChecklist(BaseModel):
    """A task-specific checklist: 1-40 checks with unique ids, no empty categories."""

    model_config = _ANSWER

    question_summary: str
    categories: list[ChecklistCategory] = _at_least_one()
    _repairs: int = PrivateAttr(default=0)

    @model_validator(mode="after")
    def _normalise(self) -> GeneratedChecklist:
        merged: dict[str, list[GeneratedCheck]] = {}
        descriptions: dict[str, ChecklistCategory] = {}
        for category in self.categories:
            if category.checks:
                merged.setdefault(category.category_id, []).extend(category.checks)
                descriptions.setdefault(category.category_id, category)
        kept: list[ChecklistCategory] = []
        taken: set[str] = set()
        for category_id, checks in merged.items():
            room = MAX_CHECKS - len(taken)
            self._repairs += max(0, len(checks) - room)
            renamed = [
                self._unique(check, f"{category_id}-{index}", taken)
                for index, check in enumerate(checks[: max(room, 0)], 1)
            ]
            if renamed:
                kept.append(descriptions[category_id].model_copy(update={"checks": renamed}))
        if not kept:
            raise ValueError("the checklist has no checks")
        self.categories = kept
        return self

    def _unique(self, check: GeneratedCheck, fallback: str, taken: set[str]) -> GeneratedCheck:
        """`check` under an id no earlier check has: its own, else `<id>#n`, else `fallback`."""
        base = check.check_id or fallback
        check_id, n = base, 1
        while check_id in taken:
            n += 1
            check_id = f"{base}#{n}"
        taken.add(check_id)
        if check_id == check.check_id:
            return check
        self._repairs += 1
        return check.model_copy(update={"check_id": check_id})

    def check_ids(self) -> list[str]:
        """Every check id, in checklist order."""
        return [check.check_id for category in self.categories for check in category.checks]

    def normalisations(self) -> int:
        """Checks renamed or cut to make a schema-valid answer usable."""
        return self._repairs


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
    _status_from_score: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _status_follows_score(self) -> JudgedCheck:
        status: Literal["passed", "failed"] = "passed" if self.score == 1 else "failed"
        if self.status != status:
            self.status = status
            self._status_from_score = True
        return self

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def normalisations(self) -> int:
        """1 when `status` contradicted `score` and was derived from it."""
        return int(self._status_from_score)


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

    def normalisations(self) -> int:
        """Verdicts whose status was derived from their score."""
        return sum(c.normalisations() for cat in self.categories for c in cat.checks)
