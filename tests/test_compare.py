"""`trajcurate compare` end to end: two result sets of the same tasks, paired by task; mean
deltas with bootstrap intervals (fixed seed) and the detectors whose rates changed most."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from diagnose_fixtures import clean, looping, truncated, write_im

from pipelines.cli import main
from pipelines.compare_command import DIAGNOSIS_SCORES, TQS_SCORES, bootstrap_interval


def compare_json(a: Path, b: Path, tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "compare.json"
    assert main(["compare", str(a), str(b), "--json", str(out), *extra]) == 0
    return json.loads(out.read_text()), str(out)


def row(result: dict[str, Any], score: str) -> dict[str, Any]:
    (found,) = [r for r in result["scores"] if r["score"] == score]
    return found


@pytest.fixture
def before_after(tmp_path: Path) -> tuple[Path, Path]:
    """A: every task's run loops (t4 twice); B: the same tasks run cleanly; t9 only in B."""
    a = write_im(
        tmp_path / "a" / "job" / "im.jsonl",
        [looping(f"t{i}", f"a{i}") for i in range(1, 5)] + [looping("t4", "a4b")],
    )
    b = write_im(
        tmp_path / "b" / "job" / "im.jsonl",
        [clean(f"t{i}", f"b{i}") for i in range(1, 5)] + [clean("t9", "b9")],
    )
    return a.parent.parent, b.parent.parent


def test_deltas_intervals_and_detector_rates(
    before_after: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, _ = compare_json(*before_after, tmp_path)
    assert result["tasks"] == {"paired": 4, "a": 4, "b": 5}
    assert result["runs"] == {"a": 5, "b": 5}
    trajectory = row(result, "trajectory_score")
    assert trajectory["n"] == 4
    assert (trajectory["mean_a"], trajectory["mean_b"]) == (pytest.approx(0.4), 1.0)
    assert trajectory["delta"] == pytest.approx(0.6)
    assert trajectory["low"] == trajectory["high"] == pytest.approx(0.6)  # constant deltas
    stp = row(result, "stp_score")  # 8 turns vs 3 turns: STP rewards 5-80 turns
    assert stp["delta"] < 0
    assert {r["score"] for r in result["scores"]} == {*TQS_SCORES, *DIAGNOSIS_SCORES}
    assert result["detectors"][0] == {
        "detector": "loop",
        "rate_a": 1.0,
        "rate_b": 0.0,
        "delta": -1.0,
    }
    printed = capsys.readouterr().out
    assert "4 tasks paired" in printed
    assert "trajectory_score" in printed and "+0.6000" in printed
    assert "loop" in printed


def test_attempts_of_a_task_are_averaged_before_pairing(tmp_path: Path) -> None:
    a = write_im(tmp_path / "a.jsonl", [clean("t1", "x1"), truncated("t1", "x2")])
    b = write_im(tmp_path / "b.jsonl", [clean("t1", "y1")])
    result, _ = compare_json(a, b, tmp_path)
    trajectory = row(result, "trajectory_score")
    assert trajectory["n"] == 1
    assert trajectory["mean_a"] == pytest.approx((1.0 + 0.4) / 2)
    (change,) = result["detectors"]
    assert change == {"detector": "truncation", "rate_a": 0.5, "rate_b": 0.0, "delta": -0.5}


def test_the_same_inputs_print_the_same_intervals(tmp_path: Path) -> None:
    a = write_im(
        tmp_path / "a.jsonl",
        [clean("t1", "1"), looping("t2", "2"), truncated("t3", "3"), clean("t4", "4")],
    )
    b = write_im(
        tmp_path / "b.jsonl",
        [looping("t1", "1"), clean("t2", "2"), clean("t3", "3"), truncated("t4", "4")],
    )
    first, _ = compare_json(a, b, tmp_path)
    second, _ = compare_json(a, b, tmp_path)
    assert first == second
    trajectory = row(first, "trajectory_score")
    assert trajectory["low"] < trajectory["delta"] < trajectory["high"]
    other_seed, _ = compare_json(a, b, tmp_path, "--seed", "7")
    assert row(other_seed, "trajectory_score")["delta"] == trajectory["delta"]


def test_bootstrap_interval_covers_the_mean_and_narrows_with_more_tasks() -> None:
    small = bootstrap_interval([0.0, 1.0] * 5, 2000, 0)
    large = bootstrap_interval([0.0, 1.0] * 500, 2000, 0)
    assert small[0] < 0.5 < small[1]
    assert large[0] < 0.5 < large[1]
    assert large[1] - large[0] < (small[1] - small[0]) / 5


def test_no_task_in_common_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_im(tmp_path / "a.jsonl", [clean("t1", "1")])
    b = write_im(tmp_path / "b.jsonl", [clean("t2", "2")])
    assert main(["compare", str(a), str(b)]) == 2
    assert "no task in common" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--bootstrap", "5"], "from 100"), (["--top-detectors", "0"], "from 1")],
)
def test_bad_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    a = write_im(tmp_path / "a.jsonl", [clean("t1", "1")])
    assert main(["compare", str(a), str(a), *extra]) == 2
    assert message in capsys.readouterr().err


def test_an_unreadable_line_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_im(tmp_path / "a.jsonl", [clean("t1", "1")])
    b = write_im(tmp_path / "b.jsonl", [clean("t1", "1")])
    with b.open("a") as handle:
        handle.write("{bad\n")
    assert main(["compare", str(a), str(b)]) == 2
    assert "b.jsonl:2: invalid JSON" in capsys.readouterr().err
    only_bad = tmp_path / "c.jsonl"
    only_bad.write_text("{bad\n")
    assert main(["compare", str(a), str(only_bad)]) == 2
    assert "no IM record in the file" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["diagnose", "gate", "compare"])
def test_help_of_the_diagnosis_commands(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    assert "--diagnose-profile" in capsys.readouterr().out
