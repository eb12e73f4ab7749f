"""`trajcurate diagnose` end to end, in-process: IM in, IM with `_score` and `_diagnosis` out,
rejects and dead letters like `trajcurate score`, one-line errors, exit 2 for usage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from diagnose_fixtures import clean, looping, read_im, truncated, write_im

from pipelines.cli import main
from scorers.tqs_v2 import SCORE_KEYS
from transforms import diagnose_step


def info(record: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = record["meta_info"]["unique_info"]
    return result


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    records = [clean("t1", "i1"), looping("t2", "i2"), truncated("t3", "i3")]
    return write_im(tmp_path / "in.jsonl", records)


def test_every_record_comes_out_diagnosed_and_scored_in_input_order(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert main(["diagnose", str(corpus), "-o", str(out)]) == 0
    records = read_im(out)
    assert [info(r)["_instance_id"] for r in records] == ["i1", "i2", "i3"]
    diagnoses = [info(r)["_diagnosis"] for r in records]
    assert diagnoses[0]["trajectory_score"] == 1.0
    assert [x["detector"] for x in diagnoses[1]["detections"]] == ["loop"]
    assert [x["detector"] for x in diagnoses[2]["detections"]] == ["truncation"]
    assert all(set(SCORE_KEYS) <= set(info(r)["_score"]) for r in records)
    printed = capsys.readouterr().out
    assert "3 records ->" in printed
    assert "mean trajectory_score" in printed
    assert "loop" in printed and "truncation" in printed
    assert (tmp_path / "out.rejects.jsonl").read_text() == ""
    assert (tmp_path / "out.dead_letter.jsonl").read_text() == ""


def test_a_bad_line_rejects_its_instance_with_file_and_line(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with corpus.open("a") as handle:
        handle.write("{not json\n")
    out = tmp_path / "out.jsonl"
    assert main(["diagnose", str(corpus), "-o", str(out)]) == 0
    assert len(read_im(out)) == 3
    (reject,) = read_im(tmp_path / "out.rejects.jsonl")
    assert f"{corpus}:4: invalid JSON" in reject["reason"]
    assert f"{corpus}:4" in capsys.readouterr().err


def test_a_crash_in_the_diagnosis_dead_letters_that_instance(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = diagnose_step.diagnose_records

    def exploding(records: list[dict[str, Any]], *args: Any) -> list[dict[str, Any]]:
        if info(records[0])["_instance_id"] == "i2":
            raise RuntimeError("boom")
        return real(records, *args)

    monkeypatch.setattr(diagnose_step, "diagnose_records", exploding)
    out = tmp_path / "out.jsonl"
    assert main(["diagnose", str(corpus), "-o", str(out)]) == 0
    assert [info(r)["_instance_id"] for r in read_im(out)] == ["i1", "i3"]
    (dead,) = read_im(tmp_path / "out.dead_letter.jsonl")
    assert (dead["stage"], dead["instance_id"]) == ("diagnose", "i2")
    assert "RuntimeError: boom" in dead["error"]


def test_a_profile_file_is_applied(corpus: Path, tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("claudecode:\n  severities: {loop: critical}\n")
    out = tmp_path / "out.jsonl"
    assert main(["diagnose", str(corpus), "-o", str(out), "--diagnose-profile", str(profile)]) == 0
    looped = info(read_im(out)[1])["_diagnosis"]
    assert looped["detections"][0]["severity"] == "critical"
    assert looped["trajectory_score"] == pytest.approx(0.15)
    assert looped["score_breakdown"]["profile_source"] == str(profile)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--diagnose-profile", "/nonexistent.yaml"], "cannot read /nonexistent.yaml"),
        (["--scaffold", "nope"], "invalid choice"),
        (["--instance-status", "maybe"], "invalid choice"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    out = tmp_path / "out.jsonl"
    assert main(["diagnose", str(corpus), "-o", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not out.exists()


def test_missing_input_and_missing_output_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagnose", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["diagnose", str(tmp_path / "none.jsonl")]) == 2


def test_a_bad_profile_file_names_the_problem(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("default:\n  severities: {looping: high}\n")
    out = tmp_path / "out.jsonl"
    assert main(["diagnose", str(corpus), "-o", str(out), "--diagnose-profile", str(profile)]) == 2
    err = capsys.readouterr().err
    assert "--diagnose-profile" in err and "unknown detector 'looping'" in err
