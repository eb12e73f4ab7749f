"""LLM judges, pure side: truncation, rendering, requests and the fixed checklist."""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest
from llm_judge_fixtures import TRUNCATED_TOOL_RESULT_CASE, fixed_answer_json

from scorers.llm_judges import (
    AnswerError,
    build_fixed_request,
    estimate_tokens,
    extract_json,
    fixed_failure,
    fixed_scores,
    parse_fixed_answer,
    truncate_middle,
)
from scorers.llm_judges.fixed_checklist import FixedAnswer
from scorers.llm_judges.fixed_rubrics import CATEGORIES, CHECK_KEYS
from scorers.llm_judges.render import render_messages, tool_line, tool_summary

EXPECTED_CHECK_KEYS = (
    "F1_diagnosis_depth F2_scope_precision F3_plan_quality "
    "G1_fix_elegance G2_change_minimality G3_robustness "
    "H1_reasoning_coherence H2_hypothesis_driven H3_adaptability "
    "I1_reproduction I2_fix_verification I3_test_quality "
    "J1_navigation_efficiency J2_tool_proficiency J3_iteration_economy"
).split()
CATEGORY_KEYS = [
    "llm_f_problem_understanding",
    "llm_g_solution_quality",
    "llm_h_reasoning_quality",
    "llm_i_verification_rigor",
    "llm_j_efficiency",
]


# --- truncation -------------------------------------------------------------------------


def test_truncate_middle_keeps_head_and_tail_with_a_visible_marker() -> None:
    text = "abcdefghijklmnopqrstuvwxyz"
    assert truncate_middle(text, 10) == "abcde\n…[truncated 16 characters]…\nvwxyz"
    assert truncate_middle(text, 5) == "abc\n…[truncated 21 characters]…\nyz"
    assert truncate_middle("x" * 12_346, 1) == "x\n…[truncated 12,345 characters]…\n"
    assert truncate_middle(text, 0) == "\n…[truncated 26 characters]…\n"


def test_truncate_middle_leaves_short_text_alone() -> None:
    assert truncate_middle("abc", 3) == "abc"
    assert truncate_middle("", 0) == ""
    with pytest.raises(ValueError, match="limit must be >= 0"):
        truncate_middle("abc", -1)


# --- rendering --------------------------------------------------------------------------


def test_tool_line_summarises_name_description_and_params() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "Bash",
            "description": "Run a\n   shell command.",
            "parameters": {"type": "object", "properties": {"command": {}, "timeout": {}}},
        },
    }
    assert tool_line(tool) == "- Bash: Run a shell command. (params: command, timeout)"
    long = {"function": {"name": "Noop", "description": "d" * 300}}
    assert tool_line(long) == f"- Noop: {'d' * 200} (params: none)"
    assert tool_summary(None) == tool_summary([]) == "(no tools)"


def test_render_messages_labels_assistant_turns_and_shows_tool_calls() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be careful"},
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": "Reading.",
            "reasoning_content": "the parser",
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "content": "r" * 6_000, "tool_call_id": "t1", "name": "Read"},
        {"role": "assistant", "content": "Done."},
    ]
    text = render_messages(messages)
    assert "--- assistant (assistant_turn_index=0) ---\n[reasoning]\nthe parser" in text
    assert "Reading.\n[tool call Read id=t1] {}" in text
    assert "--- tool result (Read, id=t1) ---\n" + "r" * 2_500 + "\n…[truncated 1,000" in text
    assert text.endswith("--- assistant (assistant_turn_index=1) ---\nDone.")


# --- JSON extraction --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        'Here you go:\n```json\n{"a": 1}\n```\nAnything else?',
        'Result:\n```\n{"a": 1}\n```',
        'I think the answer is {"a": 1} and that is all.',
        '<think>maybe {"a": 2}? no.</think>\n{"a": 1}',
        'Not {this one} but {"a": 1}',
    ],
)
def test_extract_json_finds_the_answer_object(text: str) -> None:
    assert extract_json(text) == {"a": 1}


def test_extract_json_honours_braces_inside_strings() -> None:
    assert extract_json('note: {"a": "}{", "b": {"c": "\\"}"}} end') == {
        "a": "}{",
        "b": {"c": '"}'},
    }


def test_extract_json_without_an_object_is_an_answer_error() -> None:
    with pytest.raises(AnswerError, match="no JSON object"):
        extract_json("I cannot score this trajectory. [1, 2]")


# --- fixed checklist --------------------------------------------------------------------


def test_the_fixed_checklist_has_the_fifteen_spec_checks_with_five_anchors() -> None:
    assert list(CHECK_KEYS) == EXPECTED_CHECK_KEYS
    assert list(FixedAnswer.model_fields) == EXPECTED_CHECK_KEYS
    assert [c.output_key for c in CATEGORIES] == CATEGORY_KEYS
    assert all(len(check.anchors) == 5 for c in CATEGORIES for check in c.checks)


def test_all_fives_score_one_everywhere() -> None:
    scores = fixed_scores(parse_fixed_answer(fixed_answer_json(default=5)), "m", "raw")
    assert scores["llm_composite_score"] == 1.0
    assert all(scores[key] == 1.0 for key in CATEGORY_KEYS)
    details = scores["llm_detailed_results"]
    assert (details["total_checks"], details["total_score"], details["total_max"]) == (15, 75, 75)


def test_category_and_composite_arithmetic_by_hand() -> None:
    given = {
        "F1_diagnosis_depth": 1, "F2_scope_precision": 2, "F3_plan_quality": 3,  # (6-3)/12
        "G1_fix_elegance": 1, "G2_change_minimality": 1, "G3_robustness": 1,  # 0
        "I1_reproduction": 4, "I2_fix_verification": 4, "I3_test_quality": 5,  # 10/12
        "J1_navigation_efficiency": 5, "J2_tool_proficiency": 5, "J3_iteration_economy": 5,
    }  # fmt: skip
    answer = parse_fixed_answer(fixed_answer_json(given, default=3))  # H: 3,3,3 -> 0.5
    scores = fixed_scores(answer, "judge-model", "the raw text")
    assert scores["llm_f_problem_understanding"] == 0.25
    assert scores["llm_g_solution_quality"] == 0.0
    assert scores["llm_h_reasoning_quality"] == 0.5
    assert scores["llm_i_verification_rigor"] == 0.8333
    assert scores["llm_j_efficiency"] == 1.0
    assert scores["llm_composite_score"] == round((0.25 + 0 + 0.5 + 0.8333 + 1) / 5, 4) == 0.5167
    by_f = scores["llm_detailed_results"]["by_category"]["F"]
    assert (by_f["total_score"], by_f["total_max"], by_f["score"]) == (6, 15, 0.25)
    assert by_f["checks"]["F2_scope_precision"]["score"] == 2
    assert scores["llm_detailed_results"]["total_score"] == 6 + 3 + 9 + 13 + 15
    assert list(scores) == [
        "llm_composite_score",
        *CATEGORY_KEYS,
        "llm_model",
        "llm_checklist_version",
        "llm_detailed_results",
        "llm_raw_response",
    ]
    assert (scores["llm_model"], scores["llm_raw_response"]) == ("judge-model", "the raw text")
    assert scores["llm_checklist_version"] == "fixed-checklist-v1"
    orjson.dumps(scores)


def test_scores_are_clamped_into_one_to_five() -> None:
    answer = parse_fixed_answer(
        fixed_answer_json({"F1_diagnosis_depth": 0, "F2_scope_precision": 9, "G1_fix_elegance": -3})
    )
    assert answer.check("F1_diagnosis_depth").score == 1
    assert answer.check("F2_scope_precision").score == 5
    assert answer.check("G1_fix_elegance").score == 1


def test_parse_fixed_answer_from_a_fenced_prose_answer_with_bare_scores() -> None:
    bare = {key: 4 for key in CHECK_KEYS}
    text = f"Here is my review.\n```json\n{orjson.dumps(bare).decode()}\n```"
    answer = parse_fixed_answer(text)
    assert answer.check("J3_iteration_economy").score == 4
    assert fixed_scores(answer, "m", text)["llm_composite_score"] == 0.75


def test_an_answer_missing_a_check_is_rejected() -> None:
    answer = orjson.loads(fixed_answer_json())
    del answer["H2_hypothesis_driven"]
    with pytest.raises(AnswerError, match=r"FixedAnswer H2_hypothesis_driven: Field required"):
        parse_fixed_answer(orjson.dumps(answer).decode())


def test_fixed_failure_keeps_the_columns_with_null_scores() -> None:
    failure = fixed_failure("HTTP 500 after 5 retries", "m")
    assert failure["llm_composite_score"] is None
    assert all(failure[key] is None for key in CATEGORY_KEYS)
    assert failure["llm_error"] == "HTTP 500 after 5 retries"
    assert failure["llm_model"] == "m"
    assert len(fixed_failure("e" * 10_000, "m")["llm_error"]) < 2_100


def test_fixed_request_from_a_real_record(cases: list[dict[str, Any]]) -> None:
    record = cases[TRUNCATED_TOOL_RESULT_CASE]
    request = build_fixed_request(record, "judge-model")
    system, user = (m["content"] for m in request.messages)
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert "H3_adaptability: " in system and "  5 = " in system
    assert "- Bash: Run a shell command. (params: command, timeout, description" in user
    turns = sum(m["role"] == "assistant" for m in record["messages"])
    assert f"(assistant_turn_index={turns - 1})" in user
    assert f"(assistant_turn_index={turns})" not in user
    assert "…[truncated 12,921 characters]…" in user  # a 17,921-char tool result, cut to 5,000
    assert len(user) < sum(len(m["content"]) for m in record["messages"])
    assert request.model == "judge-model" and request.purpose == "fixed_checklist"
    assert request.response_format()["json_schema"]["strict"] is True
    schema = request.json_schema
    assert schema["required"] == EXPECTED_CHECK_KEYS
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["CheckScore"]["required"] == ["reason", "score"]
    chars = len(system) + len(user) + len(orjson.dumps(schema))
    assert estimate_tokens(request) == math.ceil(chars / 4)
    assert request.parse(fixed_answer_json(default=2)).check("F1_diagnosis_depth").score == 2


def test_fixed_request_is_deterministic(cases: list[dict[str, Any]]) -> None:
    record = cases[0]
    assert build_fixed_request(record, "m") == build_fixed_request(record, "m")
