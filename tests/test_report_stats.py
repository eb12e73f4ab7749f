"""The report's statistics: AUROC (ties, inverted scores), its bootstrap, deciles, the
threshold grid's counts, error signatures and the sidecar row of a hand-made record."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from scorers.tqs_v2 import SCORE_KEYS, score_record
from transforms.report import stats
from transforms.report.aggregate import Columns, aggregate
from transforms.report.inputs import trim_record
from transforms.report.rows import score_row
from transforms.report.signatures import error_signature


def pairwise_auroc(scores: list[float], resolved: list[bool]) -> float:
    """The definition, pair by pair: P(resolved scores above unresolved), ties 1/2."""
    wins = 0.0
    pairs = 0
    for (s_pos, r_pos), (s_neg, r_neg) in itertools.product(
        zip(scores, resolved, strict=True), repeat=2
    ):
        if r_pos and not r_neg:
            pairs += 1
            wins += 1.0 if s_pos > s_neg else 0.5 if s_pos == s_neg else 0.0
    return wins / pairs


def test_auroc_of_a_hand_made_case_with_ties() -> None:
    # Pairs (resolved, unresolved): 0.4>0.1, 0.4=0.4 (1/2), 0.8>0.1, 0.8>0.4 -> 3.5 / 4.
    scores = np.array([0.1, 0.4, 0.4, 0.8])
    resolved = np.array([False, False, True, True])
    assert stats.auroc(scores, resolved) == pytest.approx(0.875)
    # The same score turned upside down separates the wrong way by as much.
    assert stats.auroc(1.0 - scores, resolved) == pytest.approx(0.125)
    # All tied: no separation at all.
    assert stats.auroc(np.full(4, 0.5), resolved) == pytest.approx(0.5)


def test_auroc_matches_the_pairwise_definition_on_many_ties() -> None:
    rng = np.random.default_rng(3)
    scores = np.round(rng.random(300), 1)  # 11 distinct values: ties everywhere
    resolved = rng.random(300) < 0.4
    expected = pairwise_auroc(scores.tolist(), resolved.tolist())
    assert stats.auroc(scores, resolved) == pytest.approx(expected, abs=1e-12)
    assert stats.auroc(-scores, resolved) == pytest.approx(1 - expected, abs=1e-12)


def test_auroc_needs_both_classes() -> None:
    assert stats.auroc(np.array([0.2, 0.3]), np.array([True, True])) is None
    found = stats.separation(np.array([0.2, 0.3]), np.array([True, True]), 200)
    assert found.auroc is None
    assert "needs both resolved and unresolved" in str(
        stats.separation_sentence("tvr_score", "all", found)
    )


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(5)
    resolved = rng.random(2000) < 0.5
    scores = np.round(np.clip(rng.normal(0.5 + 0.2 * resolved, 0.2), 0, 1), 4)
    first = stats.separation(scores, resolved, 300, seed=1)
    assert first == stats.separation(scores, resolved, 300, seed=1)
    assert first.low is not None and first.high is not None and first.auroc is not None
    assert first.low < first.auroc < first.high
    assert first.low > 0.5  # a clear separation: its interval stays above 0.5
    assert stats.separation_sentence("composite_score", "all", first) is None
    inverted = stats.separation(1 - scores, resolved, 300, seed=1)
    assert "wrong way" in str(stats.separation_sentence("composite_score", "all", inverted))


def test_a_score_unrelated_to_resolution_is_said_not_to_separate() -> None:
    rng = np.random.default_rng(11)
    scores = np.round(rng.random(400), 2)
    resolved = rng.random(400) < 0.5
    found = stats.separation(scores, resolved, 500, seed=0)
    sentence = stats.separation_sentence("oec_score", "scaffold = terminus2", found)
    assert sentence is not None and "does not separate" in sentence and "terminus2" in sentence


def test_deciles_keep_ties_together_and_give_resolved_rates() -> None:
    scores = np.array([0.0] * 50 + [1.0] * 50)
    resolved = np.array([False] * 40 + [True] * 10 + [True] * 50)
    found = stats.deciles(scores, resolved)
    assert [(d.n, d.low, d.high) for d in found] == [(50, 0.0, 0.0), (50, 1.0, 1.0)]
    assert [d.resolved_rate for d in found] == [0.2, 1.0]
    spread = stats.deciles(np.arange(100) / 100, np.arange(100) >= 50)
    assert [d.n for d in spread] == [10] * 10
    assert [d.resolved_rate for d in spread] == [0.0] * 5 + [1.0] * 5


def test_threshold_counts_include_the_threshold_itself() -> None:
    counts = stats.cumulative_at_least(
        np.array([0.1, 0.5, 0.5, 1.0]), np.array([0.0, 0.5, 0.51, 1.0])
    )
    assert counts == [4, 3, 1, 1]
    assert stats.histogram(np.array([0.0, 0.05, 0.999, 1.0]), bins=20) == [1, 1] + [0] * 17 + [2]


@pytest.mark.parametrize(
    ("text", "signature"),
    [
        (
            'Traceback (most recent call last):\n  File "/app/x.py", line 3\n'
            "ModuleNotFoundError: No module named 'numpy'",
            "ModuleNotFoundError: No module named <str>",
        ),
        ("cat: /app/src/x.py: No such file or directory", "cat: <path>: No such file or directory"),
        ("\x1b[31mbash: yarn: command not found\x1b[0m", "bash: yarn: command not found"),
        (
            "<tool_use_error>String to replace not found in file.</tool_use_error>",
            "<tool_use_error>String to replace not found in file.</tool_use_error>",
        ),
        ("=== 3 failed, 12 passed in 0.52s ===", "=== <n> failed, <n> passed in <n>s ==="),
    ],
)
def test_error_signatures_group_one_failure(text: str, signature: str) -> None:
    assert error_signature(text) == signature


def _record(language_file: str, error: str) -> dict[str, object]:
    messages = [
        {"role": "system", "content": "You are Claude Code."},
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"command": "python -m pytest -q"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": error},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "2",
                    "type": "function",
                    "function": {
                        "name": "Edit",
                        "arguments": f'{{"file_path": "{language_file}", "old_string": "a", '
                        '"new_string": "b"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "2", "content": "ok"},
        {"role": "assistant", "content": "The fix is complete."},
    ]
    record: dict[str, object] = {
        "version": "2.0.0",
        "meta_info": {
            "teacher": "m1",
            "unique_info": {
                "_instance_id": "task-a__1",
                "_agent_type": "main",
                "_instance_metadata": {
                    "task_name": "task-a",
                    "agent": {"name": "claude-code"},
                    "rewards": {"reward": 1.0},
                    "scaffold": "claudecode",
                },
            },
        },
        "tools": [
            {"type": "function", "function": {"name": n, "description": "", "parameters": {}}}
            for n in ("Bash", "Edit")
        ],
        "messages": messages,
    }
    record["meta_info"]["unique_info"]["_score"] = score_record(record)  # type: ignore[index]
    return record


def test_score_row_of_a_hand_made_record() -> None:
    record = _record("/app/src/lib.rs", "error: 2 tests failed\nexit code: 1")
    row = score_row(
        record, job="job-1", reward=1.0, resolved=True, decision="kept", reason="ignored when kept"
    )
    assert row["instance_id"] == "task-a__1" and row["task"] == "task-a"
    assert (row["agent"], row["model"], row["scaffold"]) == ("claude-code", "m1", "claudecode")
    assert row["language"] == "rust"
    assert set(row["score"]) == set(SCORE_KEYS)
    assert row["decision"] == "kept" and row["reason"] is None and row["judges"] is None
    assert row["tool_errors"] == [["bash", "error: <n> tests failed", 1]]
    assert row["diagnosis"] is None  # not diagnosed
    with pytest.raises(ValueError, match="decision"):
        score_row(record, job="j", reward=1.0, resolved=True, decision="maybe")  # type: ignore[arg-type]


def test_aggregate_counts_per_segment_and_lists_low_resolved_examples() -> None:
    columns = Columns()
    for index in range(40):
        resolved = index % 2 == 0
        columns.add(
            {
                "instance_id": f"t{index % 4}__{index:03d}",
                "job": "j",
                "task": f"t{index % 4}",
                "agent": "a",
                "model": "m",
                "scaffold": "s1" if index < 20 else "s2",
                "language": "python",
                "reward": 1.0 if resolved else 0.0,
                "resolved": resolved,
                "turns": 5,
                "score": {"composite_score": index / 40, "sub_score": 0.5},
                "judges": {"llm_composite_score": 1 - index / 40} if index < 10 else None,
                "decision": "kept",
                "reason": None,
                "tool_errors": [["bash", "boom", 2]],
            }
        )
    data = aggregate(
        columns,
        threshold=0.5,
        threshold_key="composite_score",
        examples_per_segment=2,
        resamples=200,
        seed=0,
    )
    grid = data["threshold_grid"]["segments"]
    assert grid["all"]["kept"][50] == 20 and grid["scaffold:s2"]["kept"][50] == 20
    assert grid["scaffold:s1"]["kept"][0] == 20 and grid["scaffold:s1"]["kept_resolved"][0] == 10
    lowest = data["lowest_resolved"]
    assert [columns.ids[i] for i in lowest["all"]] == ["t0__000", "t2__002"]
    assert [columns.ids[i] for i in lowest["scaffold:s2"]] == ["t0__020", "t2__022"]
    assert data["tool_errors"]["by_tool"] == {"bash": [["boom", 80]]}
    assert data["separation"]["sub_score"]["segments"]["all"]["auroc"] == 0.5
    tasks = {t["task"]: t for t in data["tasks"]["tasks"]}
    assert tasks["t1"]["pass_rate"] == 0.0 and tasks["t0"]["attempts"] == 10
    assert data["disagreements"]["reward_1_low_tqs_total"] == 10
    assert len(data["disagreements"]["judges"]["llm_composite_score"]) == 10


def test_binned_bootstrap_interval_agrees_with_resampling_trials() -> None:
    # Many distinct values: the interval's resamples are drawn over binned scores; they
    # must give the interval a bootstrap over the trials themselves gives.
    rng = np.random.default_rng(8)
    resolved = rng.random(3000) < 0.4
    scores = np.round(np.clip(rng.normal(0.5 + 0.1 * resolved, 0.2), 0, 1), 4)
    assert len(np.unique(scores)) > 1000
    binned = stats.separation(scores, resolved, 1000, seed=2)
    draws = [rng.integers(0, len(scores), len(scores)) for _ in range(1000)]
    direct = [stats.auroc(scores[d], resolved[d]) for d in draws]
    low, high = np.percentile(np.array(direct, dtype=np.float64), [2.5, 97.5])
    assert binned.auroc == pytest.approx(stats.auroc(scores, resolved))
    assert binned.low == pytest.approx(low, abs=0.006)
    assert binned.high == pytest.approx(high, abs=0.006)


def test_score_row_takes_the_trajectory_scoring_built() -> None:
    from scorers.tqs_v2.trajectory import build_trajectory

    record = _record("/app/main.go", "bash: go: command not found")
    built = build_trajectory(record, "claudecode")
    facts: dict[str, Any] = {
        "job": "j",
        "reward": 0.0,
        "resolved": False,
        "decision": "rejected",
        "reason": "instance status is 'unresolved'",
    }
    given = score_row(record, **facts, trajectory=built)
    assert given == score_row(record, **facts)
    assert given["language"] == "go" and given["reason"] == "instance status is 'unresolved'"


def test_score_row_keeps_the_scores_and_detections_of_a_diagnosis() -> None:
    from scorers.diagnose import diagnose_record

    record = _record("/app/src/lib.rs", "error: 2 tests failed\nexit code: 1")
    diagnosis = diagnose_record(record)
    record["meta_info"]["unique_info"]["_diagnosis"] = diagnosis  # type: ignore[index]
    row = score_row(record, job="j", reward=1.0, resolved=True, decision="kept")
    fired = [[d["detector"], d["severity"], d["confidence"]] for d in diagnosis["detections"]]
    assert fired, "the hand-made record ends on a failing test: a detector fires"
    assert row["diagnosis"] == {
        "trajectory_score": diagnosis["trajectory_score"],
        "task_completion_score": diagnosis["task_completion_score"],
        "detections": fired,
    }


def _diagnosed_row(index: int, detectors: list[list[object]] | None) -> dict[str, object]:
    resolved = index % 2 == 0
    return {
        "instance_id": f"t__{index:03d}",
        "job": "j",
        "task": "t",
        "scaffold": "s1" if index < 10 else "s2",
        "resolved": resolved,
        "score": {"composite_score": 0.5},
        "decision": "kept" if index % 3 else "rejected",
        "diagnosis": None
        if detectors is None
        else {
            "trajectory_score": 0.9 if resolved else 0.3,
            "task_completion_score": 1.0,
            "detections": detectors,
        },
    }


def _aggregate_small(columns: Columns) -> dict[str, Any]:
    return aggregate(
        columns,
        threshold=0.5,
        threshold_key="composite_score",
        examples_per_segment=2,
        resamples=50,
        seed=0,
    )


def test_detector_rates_count_diagnosed_trials_per_segment() -> None:
    columns = Columns()
    # 20 rows: 0-3 not diagnosed; "loop" fires on 4-9 (s1), "truncated" on 10 (s2).
    for index in range(20):
        detectors: list[list[object]] | None = None if index < 4 else []
        if 4 <= index < 10:
            detectors = [["loop", "high" if index < 6 else "medium", 0.8]]
        elif index == 10:
            detectors = [["truncated", "critical", 1.0], ["loop", "high", 0.6]]
        elif index == 11:  # damaged entries are skipped; a damaged severity is "unknown"
            detectors = [["x"], [1, 2, 3], ["truncated", None, "high"]]
        columns.add(_diagnosed_row(index, detectors))
    data = _aggregate_small(columns)
    found = data["diagnosis"]
    assert (found["diagnosed"], found["clean"]) == (16, 8)
    loop, truncated = found["detectors"]
    assert (loop["detector"], loop["fired"], loop["rate"]) == ("loop", 7, round(7 / 16, 4))
    # resolved rows are the even ones: 4, 6, 8, 10 fired of 4..19's eight even rows
    assert (loop["rate_resolved"], loop["rate_unresolved"]) == (0.5, round(3 / 8, 4))
    assert loop["severities"] == {"high": 3, "medium": 4}
    assert loop["mean_confidence"] == round((6 * 0.8 + 0.6) / 7, 4)
    assert loop["segments"]["scaffold:s1"] == 1.0  # 6 diagnosed rows in s1, all fired
    assert loop["segments"]["scaffold:s2"] == 0.1
    assert loop["examples"] == [4, 5, 7]  # kept rows first (index % 3 != 0)
    assert (truncated["fired"], truncated["title"]) == (2, "truncated")  # unknown: its name
    assert truncated["severities"] == {"critical": 1, "unknown": 1}
    assert truncated["mean_confidence"] == 1.0  # a confidence that is no number is left out
    assert found["scores"]["trajectory_score"]["mean_resolved"] == 0.9
    assert sum(found["scores"]["trajectory_score"]["unresolved"]) == 8
    assert "trajectory_score" in data["separation"]


def test_a_run_without_diagnosis_has_no_detector_rates() -> None:
    columns = Columns()
    for index in range(6):
        columns.add(_diagnosed_row(index, None))
    data = _aggregate_small(columns)
    assert data["diagnosis"]["diagnosed"] == 0 and data["diagnosis"]["detectors"] == []
    assert "trajectory_score" not in data["separation"]


def test_trimmed_messages_keep_their_index_in_the_record() -> None:
    record = {"messages": [{"role": "user", "content": str(i)} for i in range(350)]}
    trimmed = trim_record(record)["messages"]
    assert trimmed[199]["index"] == 199
    assert trimmed[200] == {"role": "note", "content": "50 messages not shown"}
    assert [m["index"] for m in trimmed[201:]] == list(range(250, 350))
    assert all(m["content"] == str(m["index"]) for m in trimmed if "index" in m)
