"""LLM judges, pure side: the dynamic checklist (question, schemas, ISR/CSR) and its cache."""

from __future__ import annotations

import pickle
import re
import threading
import time
from typing import Any

import orjson
import pytest
from llm_judge_fixtures import (
    TRUNCATED_TOOL_RESULT_CASE,
    checklist_json,
    judgement_json,
    small_record,
    verdict,
)

from scorers.llm_judges import (
    AnswerError,
    ChecklistCache,
    GeneratedChecklist,
    Judgement,
    build_generate_request,
    build_judge_request,
    checklist_key,
    dynamic_failure,
    dynamic_scores,
    parse_generated_checklist,
    parse_judgement,
    question_of,
    system_prompt_of,
    tool_summary,
)

OUTPUT_KEYS = [
    "llm_checklist_isr",
    "llm_checklist_csr",
    "llm_checklist_version",
    "llm_checklist_total_checks",
    "llm_checklist_total_passed",
    "llm_checklist_category_scores",
    "llm_checklist_question_source",
    "llm_checklist_question",
    "llm_checklist_definition",
    "llm_checklist_judgement",
    "llm_checklist_generator_model",
    "llm_checklist_judge_model",
]


def _dumps(obj: Any) -> str:
    return orjson.dumps(obj).decode()


def _checklist(categories: dict[str, int]) -> GeneratedChecklist:
    return parse_generated_checklist(_dumps(checklist_json(categories)))


# --- question source --------------------------------------------------------------------

USER_MESSAGES = [{"role": "system", "content": ""}, {"role": "user", "content": "first"}]


def test_question_source_order() -> None:
    metadata = {"prompt": "meta prompt", "question": "meta question", "custom": "meta custom"}
    record = small_record(
        USER_MESSAGES, _instance_metadata=metadata, user_question="ui user_question"
    )
    assert question_of(record, "custom") == ("meta custom", "_instance_metadata.custom")
    # user_question comes first in the default order, so unique_info beats metadata's question
    assert question_of(record) == ("ui user_question", "unique_info.user_question")
    del record["meta_info"]["unique_info"]["user_question"]
    assert question_of(record) == ("meta question", "_instance_metadata.question")
    assert question_of(record, "absent") == ("meta question", "_instance_metadata.question")


def test_question_prefers_metadata_over_unique_info_for_the_same_field() -> None:
    record = small_record(USER_MESSAGES, _instance_metadata={"task": "m"}, task="u", custom="c")
    assert question_of(record) == ("m", "_instance_metadata.task")
    assert question_of(record, "custom") == ("c", "unique_info.custom")


def test_question_falls_back_to_the_first_user_message() -> None:
    record = small_record(
        [*USER_MESSAGES, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "2"}],
        _instance_metadata={"task": "   ", "prompt": {"not": "text"}},
    )
    assert question_of(record) == ("first", "first_user_message")
    assert question_of(small_record([{"role": "system", "content": "s"}])) == ("", "none")


def test_real_records_take_the_first_user_message(cases: list[dict[str, Any]]) -> None:
    question, source = question_of(cases[0])
    assert source == "first_user_message"
    assert question == cases[0]["messages"][1]["content"]


# --- generated checklist ----------------------------------------------------------------


def test_checklist_validation_limits_and_cleanup() -> None:
    assert len(_checklist({"user_query": 40}).check_ids()) == 40
    assert _checklist({"user_query": 40}).normalisations() == 0
    with pytest.raises(AnswerError, match="no checks"):
        _checklist({"user_query": 0})
    cleaned = _checklist({"user_query": 1, "repo_policy": 0, "verification": 2})
    assert [c.category_id for c in cleaned.categories] == ["user_query", "verification"]
    assert cleaned.normalisations() == 0  # an empty category changes no check


def test_checks_beyond_forty_are_cut_and_counted() -> None:
    checklist = _checklist({"user_query": 30, "verification": 15})
    assert len(checklist.check_ids()) == 40
    assert checklist.check_ids()[-1] == "verification-9"
    assert checklist.normalisations() == 5


def test_duplicate_and_empty_ids_are_renamed_and_counted() -> None:
    data = checklist_json({"user_query": 3, "verification": 1})
    checks = data["categories"][0]["checks"]
    checks[1]["check_id"] = "user_query-0"
    checks[2]["check_id"] = "  "
    data["categories"][1]["checks"][0]["check_id"] = "user_query-0"
    checklist = parse_generated_checklist(_dumps(data))
    assert checklist.check_ids() == [
        "user_query-0",
        "user_query-0#2",
        "user_query-3",  # empty: named after its category and position
        "user_query-0#3",
    ]
    assert checklist.normalisations() == 3


def test_checklist_rejects_unknown_enums() -> None:
    data = checklist_json({"user_query": 1})
    data["categories"][0]["checks"][0]["check_type"] = "vibes"
    with pytest.raises(AnswerError, match="check_type"):
        parse_generated_checklist(_dumps(data))
    with pytest.raises(AnswerError, match="category_id"):
        parse_generated_checklist(_dumps(checklist_json({"style": 1})))


def test_repeated_categories_are_merged_in_order() -> None:
    data = checklist_json({"user_query": 1, "verification": 1})
    extra = checklist_json({"user_query": 2})["categories"][0]
    extra["checks"][0]["check_id"] = "later"
    extra["checks"][1]["check_id"] = "later-2"
    data["categories"].append(extra)
    checklist = parse_generated_checklist(_dumps(data))
    assert checklist.check_ids() == ["user_query-0", "later", "later-2", "verification-0"]


# --- judgement --------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "score"), [("passed", 0), ("failed", 1)])
def test_a_status_that_contradicts_its_score_follows_the_score(status: str, score: int) -> None:
    data = judgement_json({"user_query-0": True, "user_query-1": False})
    data["categories"][0]["checks"][0].update(status=status, score=score)
    judgement = parse_judgement(_dumps(data))
    verdict_ = judgement.verdicts()["user_query-0"]
    assert verdict_.passed is (score == 1)
    assert verdict_.status == ("passed" if score == 1 else "failed")
    assert judgement.normalisations() == 1


@pytest.mark.parametrize("evidence", [[], ["a", "b", "c", "d"]])
def test_evidence_holds_one_to_three_snippets(evidence: list[str]) -> None:
    data = judgement_json({"user_query-0": True})
    data["categories"][0]["checks"][0]["evidence"] = evidence
    with pytest.raises(AnswerError, match="evidence"):
        parse_judgement(_dumps(data))


def test_isr_csr_and_category_csr_by_hand() -> None:
    checklist = _checklist({"user_query": 6, "verification": 4})
    passed = {f"user_query-{i}": i != 0 for i in range(6)}  # 5 of 6
    passed |= {f"verification-{i}": i < 2 for i in range(4)}  # 2 of 4
    judgement = parse_judgement(_dumps(judgement_json(passed)))
    scores = dynamic_scores(checklist, judgement, "fix it", "first_user_message", "gen", "judge")
    assert list(scores) == OUTPUT_KEYS
    assert scores["llm_checklist_csr"] == 0.7  # 7 of 10
    assert scores["llm_checklist_isr"] == 0.0
    assert (scores["llm_checklist_total_checks"], scores["llm_checklist_total_passed"]) == (10, 7)
    assert scores["llm_checklist_category_scores"] == {"user_query": 0.8333, "verification": 0.5}
    assert scores["llm_checklist_definition"]["categories"][1]["category_id"] == "verification"
    assert scores["llm_checklist_judgement"]["summary"] == "mostly done"
    assert scores["llm_checklist_version"] == "dynamic-checklist-v1"
    assert (scores["llm_checklist_generator_model"], scores["llm_checklist_judge_model"]) == (
        "gen",
        "judge",
    )
    orjson.dumps(scores)


def test_all_passed_gives_isr_one() -> None:
    checklist = _checklist({"user_query": 2, "communication": 1})
    ids = checklist.check_ids()
    judgement = parse_judgement(_dumps(judgement_json(dict.fromkeys(ids, True))))
    scores = dynamic_scores(checklist, judgement, "q", "s", "g", "j")
    assert (scores["llm_checklist_isr"], scores["llm_checklist_csr"]) == (1.0, 1.0)


def test_a_check_missing_from_the_judgement_fails_and_unknown_ids_are_ignored() -> None:
    checklist = _checklist({"user_query": 3})
    data = judgement_json({"user_query-0": True, "user_query-1": True, "invented": True})
    data["categories"][0]["checks"].append(verdict("user_query-0", False))  # duplicate: first wins
    judgement = parse_judgement(_dumps(data))
    scores = dynamic_scores(checklist, judgement, "q", "s", "g", "j")
    assert scores["llm_checklist_total_passed"] == 2  # user_query-2 was never judged
    assert scores["llm_checklist_csr"] == 0.6667
    assert scores["llm_checklist_isr"] == 0.0


def test_dynamic_failure_nulls_isr_and_csr() -> None:
    checklist = _checklist({"user_query": 3})
    failure = dynamic_failure("judge: invalid JSON twice", "g", "j", checklist=checklist)
    assert list(failure) == [*OUTPUT_KEYS, "llm_checklist_error"]
    assert failure["llm_checklist_isr"] is None and failure["llm_checklist_csr"] is None
    assert failure["llm_checklist_error"] == "judge: invalid JSON twice"
    assert failure["llm_checklist_total_checks"] == 3


# --- requests from real records ---------------------------------------------------------


def test_generate_request_holds_the_task_and_respects_the_limits(
    cases: list[dict[str, Any]],
) -> None:
    record = cases[0]
    summary = tool_summary(record["tools"])
    request = build_generate_request("q" * 20_000, "s" * 10_000, summary, "gen")
    user = request.messages[1]["content"]
    assert "- Read: Read a file. (params: file_path, offset, limit)" in user
    assert "…[truncated 8,000 characters]…" in user  # question: 20,000 -> 12,000
    assert "…[truncated 2,000 characters]…" in user  # system prompt: 10,000 -> 8,000
    assert request.purpose == "generate_checklist" and request.model == "gen"
    question, _ = question_of(record)
    short = build_generate_request(question, system_prompt_of(record), summary, "g")
    assert record["messages"][1]["content"] in short.messages[1]["content"]
    assert "You are Claude Code" in short.messages[1]["content"]


def test_judge_request_shows_turns_tools_and_the_checklist(cases: list[dict[str, Any]]) -> None:
    record = cases[TRUNCATED_TOOL_RESULT_CASE]
    checklist = _checklist({"user_query": 2, "verification": 1})
    request = build_judge_request(record, checklist, "judge")
    user = request.messages[1]["content"]
    assert "(assistant_turn_index=0)" in user
    assert "- Bash: Run a shell command." in user
    assert '"check_id": "verification-0"' in user
    assert "…[truncated 12,921 characters]…" in user
    block = re.search(r"<trajectory-([0-9a-f]{16})>", user)
    assert block is not None
    tag = block.group(1)
    assert user.index(f"</trajectory-{tag}>") < user.index(f"<checklist-{tag}>")
    assert user.index('"check_id": "verification-0"') > user.index(f"<checklist-{tag}>")
    assert request.json_schema["$defs"]["JudgedCheck"]["additionalProperties"] is False
    answer = request.parse(_dumps(judgement_json(dict.fromkeys(checklist.check_ids(), True))))
    assert isinstance(answer, Judgement)


# --- checklist cache --------------------------------------------------------------------


def test_checklist_key_separates_fields_and_is_stable() -> None:
    assert checklist_key("ab", "c", "") != checklist_key("a", "bc", "")
    assert checklist_key("q", "s", "t") == checklist_key("q", "s", "t")
    assert len(checklist_key("q", "s", "t")) == 64


def test_eight_concurrent_callers_of_one_key_share_one_factory_call() -> None:
    cache: ChecklistCache[object] = ChecklistCache()
    calls: list[int] = []
    start = threading.Barrier(8)

    def factory() -> object:
        calls.append(1)
        deadline = time.monotonic() + 5
        while cache.waits < 7 and time.monotonic() < deadline:  # hold until all 7 others wait
            time.sleep(0.001)
        return object()

    results: list[object] = []

    def caller() -> None:
        start.wait()
        results.append(cache.get_or_create("task", factory))

    threads = [threading.Thread(target=caller) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert len(results) == 8 and all(result is results[0] for result in results)
    assert (cache.misses, cache.waits, cache.hits) == (1, 7, 0)
    assert cache.get_or_create("task", factory) is results[0]
    assert (len(calls), cache.hits) == (1, 1)


def test_a_failed_factory_is_not_cached() -> None:
    cache: ChecklistCache[str] = ChecklistCache()

    def broken() -> str:
        raise RuntimeError("generator down")

    with pytest.raises(RuntimeError, match="generator down"):
        cache.get_or_create("task", broken)
    assert "task" not in cache
    assert cache.get_or_create("task", lambda: "checklist") == "checklist"


def test_cache_evicts_the_least_recently_used_and_pickles_empty() -> None:
    cache: ChecklistCache[str] = ChecklistCache(max_entries=2)
    cache.get_or_create("a", lambda: "A")
    cache.get_or_create("b", lambda: "B")
    cache.get_or_create("a", lambda: "unused")  # a is now the most recent
    cache.get_or_create("c", lambda: "C")
    assert ("a" in cache, "b" in cache, "c" in cache) == (True, False, True)
    restored = pickle.loads(pickle.dumps(cache))
    assert (len(restored), restored.max_entries) == (0, 2)
    assert restored.get_or_create("a", lambda: "fresh") == "fresh"
