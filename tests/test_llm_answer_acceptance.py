"""The answer schema a judge sends is its acceptance rule (issue 13).

Every answer that fits the schema of a judge request — as a schema-following server may
give it, with any enum value and any array length the schema allows — must parse: a
refusal would make the client pay for the same answer again. Each random answer below is
first checked against the schema with `jsonschema`, so the test cannot pass by generating
answers that are easier than the schema says.
"""

from __future__ import annotations

import random
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import orjson
import pytest
from fake_llm_server import random_for_schema
from llm_judge_fixtures import checklist_json, small_record

from scorers.llm_judges import (
    AnswerError,
    build_fixed_request,
    build_generate_request,
    build_judge_request,
    dynamic_scores,
    fixed_scores,
    parse_generated_checklist,
)
from scorers.llm_judges.requests import ChatRequest

RECORD = small_record(
    [
        {"role": "user", "content": "Fix the parser."},
        {"role": "assistant", "content": "Done: tests pass."},
    ]
)
CHECKLIST = parse_generated_checklist(orjson.dumps(checklist_json({"user_query": 3})).decode())
REQUESTS: dict[str, ChatRequest[Any]] = {
    "fixed": build_fixed_request(RECORD, "m"),
    "generate": build_generate_request("Fix the parser.", "", "(no tools)", "m"),
    "judge": build_judge_request(RECORD, CHECKLIST, "m"),
}
SEEDS = range(150)


def schema_valid_answers(request: ChatRequest[Any]) -> list[dict[str, Any]]:
    rng = random.Random(f"{request.purpose}")
    validator = jsonschema.Draft202012Validator(request.json_schema)
    answers = []
    for _ in SEEDS:
        answer = random_for_schema(request.json_schema, rng)
        validator.validate(answer)  # the generator stays inside the schema
        answers.append(answer)
    return answers


@pytest.mark.parametrize("purpose", sorted(REQUESTS))
def test_every_schema_valid_answer_is_accepted(purpose: str) -> None:
    request = REQUESTS[purpose]
    for answer in schema_valid_answers(request):
        request.parse(orjson.dumps(answer).decode())  # raises AnswerError on a refusal


def test_random_answers_exercise_the_repairs_and_still_score() -> None:
    """The generator does produce the cases JSON Schema cannot exclude, and each repaired
    answer still gives scores in range."""
    normalised = {"generate": 0, "judge": 0}
    for purpose in normalised:
        request = REQUESTS[purpose]
        for answer in schema_valid_answers(request):
            parsed = request.parse(orjson.dumps(answer).decode())
            normalised[purpose] += parsed.normalisations()
            if purpose == "judge":
                scores = dynamic_scores(CHECKLIST, parsed, "q", "s", "g", "j")
                assert 0.0 <= scores["llm_checklist_csr"] <= 1.0
    assert normalised["generate"] > 0  # duplicate / empty ids were renamed
    assert normalised["judge"] > 0  # contradicting statuses were derived from scores
    for answer in schema_valid_answers(REQUESTS["fixed"]):
        parsed = REQUESTS["fixed"].parse(orjson.dumps(answer).decode())
        assert 0.0 <= fixed_scores(parsed, "m", "")["llm_composite_score"] <= 1.0


@pytest.mark.parametrize(
    "mutation",
    [
        lambda a: a["categories"][0]["checks"][0].update(check_type="vibes"),
        lambda a: a["categories"][0].update(checks=[]),
        lambda a: a.pop("question_summary"),
    ],
)
def test_an_answer_outside_the_schema_is_still_refused(mutation: Any) -> None:
    answer = checklist_json({"user_query": 2})
    mutation(answer)
    schema = REQUESTS["generate"].json_schema
    assert not jsonschema.Draft202012Validator(schema).is_valid(answer)
    with pytest.raises(AnswerError):
        REQUESTS["generate"].parse(orjson.dumps(answer).decode())
