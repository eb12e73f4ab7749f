"""`trajcurate gate` end to end: a run's output folder (or IM files) in, one line per failing
run with what lowered it most, exit 1 when one fails, 0 when all pass, 2 for usage."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from diagnose_fixtures import clean, looping, read_im, truncated, write_im

from pipelines.cli import main


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run's output folder: two jobs, records without `_diagnosis` (a plain run)."""
    out = tmp_path / "run"
    write_im(out / "job-a" / "im.jsonl", [clean("t1", "a1"), truncated("t2", "a2")])
    write_im(out / "job-b" / "im.jsonl", [looping("t3", "b1")])
    (out / "job-a" / "rejects.jsonl").write_text("")
    return out


def test_failing_runs_are_listed_with_their_top_contributor(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gate", str(run_dir), "--min-trajectory-score", "0.5"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("FAIL job-a/a2: trajectory_score 0.4000 < 0.5: truncation (high")
    assert lines[1].startswith("FAIL job-b/b1: trajectory_score 0.4000 < 0.5: loop (high")
    assert lines[-1] == "trajcurate gate: 3 runs, 2 below 0.5, lowest 0.4000 (2 files)"
    assert not any("a1" in line for line in lines)  # the clean run passes


def test_every_run_above_the_threshold_passes(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gate", str(run_dir), "--min-trajectory-score", "0.4"]) == 0
    assert "FAIL" not in capsys.readouterr().out


def test_lowest_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [looping("t3", "b1"), truncated("t2", "a2"), clean("t1", "a1")]
    records[0]["messages"][4:8] = []  # three identical turns left: confidence 0.6
    path = write_im(tmp_path / "im.jsonl", records)
    assert main(["gate", str(path), "--min-trajectory-score", "1.0"]) == 1
    fails = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL")]
    assert [line.split(": ")[0].split("/")[-1] for line in fails] == ["a2", "b1"]
    assert "loop (high, confidence 0.60, penalty 0.36)" in fails[1]


def test_a_stored_diagnosis_is_used_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Diagnosed outputs are not re-diagnosed: the gate reads `_diagnosis` as it is."""
    out = tmp_path / "diagnosed.jsonl"
    source = write_im(tmp_path / "in.jsonl", [clean("t1", "c1")])
    assert main(["diagnose", str(source), "-o", str(out)]) == 0
    record = read_im(out)[0]
    record["meta_info"]["unique_info"]["_diagnosis"]["trajectory_score"] = 0.1
    out.write_bytes(orjson.dumps(record) + b"\n")
    capsys.readouterr()
    assert main(["gate", str(out), "--min-trajectory-score", "0.5"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_diagnose_then_gate_agree_with_gating_on_the_fly(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "diagnosed.jsonl"
    assert main(["diagnose", str(run_dir / "job-a" / "im.jsonl"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["gate", str(out), "--min-trajectory-score", "0.5"]) == 1
    diagnosed = capsys.readouterr().out.splitlines()[0]
    assert main(["gate", str(run_dir / "job-a" / "im.jsonl"), "--min-trajectory-score", "0.5"]) == 1
    on_the_fly = capsys.readouterr().out.splitlines()[0]
    assert diagnosed.split(":", 1)[1] == on_the_fly.split(":", 1)[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--min-trajectory-score X is required"),
        (["--min-trajectory-score", "1.5"], "a number from 0 to 1"),
        (["--min-trajectory-score", "x"], "not a number"),
    ],
)
def test_usage_errors_exit_2(
    run_dir: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["gate", str(run_dir), *args]) == 2
    assert message in capsys.readouterr().err


def test_a_folder_without_im_files_or_a_missing_path_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["gate", str(tmp_path / "empty"), "--min-trajectory-score", "0.5"]) == 2
    assert "no IM files" in capsys.readouterr().err
    assert main(["gate", str(tmp_path / "nope"), "--min-trajectory-score", "0.5"]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_an_unreadable_line_fails_the_gate_with_exit_2(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (run_dir / "job-b" / "im.jsonl").open("a") as handle:
        handle.write("{broken\n")
    assert main(["gate", str(run_dir), "--min-trajectory-score", "0.0"]) == 2
    err = capsys.readouterr().err
    assert "unreadable" in err and "im.jsonl:2" in err


def test_gate_on_a_real_pipeline_run(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`trajcurate run` over the composed Harbor job, then the gate over its output folder."""
    job = shared_dir / "data" / "composed" / "jobs" / "2026-06-16__12-00-00"
    jobs = tmp_path / "jobs"
    shutil.copytree(job, jobs / job.name)
    out = tmp_path / "out"
    code = main(["run", "--input", str(jobs), "--output", str(out), "--instance-status", "all"])
    assert code == 0
    capsys.readouterr()
    assert main(["gate", str(out), "--min-trajectory-score", "0.6"]) == 1
    printed = capsys.readouterr().out
    # The Terminus-2 trial that timed out stops without task_complete: it is the one below.
    assert "FAIL 2026-06-16__12-00-00/hello-world__RMHtDns" in printed
    assert "truncation" in printed
    assert printed.splitlines()[-1].startswith("trajcurate gate: 6 runs, 1 below 0.6")


def test_run_diagnose_writes_the_diagnosis_the_gate_then_uses(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run --diagnose` puts `_diagnosis` on every written IM record (the same as diagnosing
    the plain run's output afterwards), and the gate reads it as written."""
    job = shared_dir / "data" / "composed" / "jobs" / "2026-06-16__12-00-00"
    plain, diagnosed = tmp_path / "plain", tmp_path / "diagnosed"
    base = ["run", "--input", str(job), "--instance-status", "all"]
    assert main([*base, "--output", str(plain)]) == 0
    assert main([*base, "--output", str(diagnosed), "--diagnose"]) == 0
    im = f"{job.name}/im.jsonl"
    assert main(["diagnose", str(plain / im), "-o", str(tmp_path / "after.jsonl")]) == 0
    written = read_im(diagnosed / im)
    assert len(written) == 7 and all(r["meta_info"]["unique_info"]["_diagnosis"] for r in written)
    after = read_im(tmp_path / "after.jsonl")
    assert [r["meta_info"]["unique_info"]["_diagnosis"] for r in written] == [
        r["meta_info"]["unique_info"]["_diagnosis"] for r in after
    ]
    capsys.readouterr()
    assert main(["gate", str(diagnosed), "--min-trajectory-score", "0.6"]) == 1
    assert "FAIL 2026-06-16__12-00-00/hello-world__RMHtDns" in capsys.readouterr().out


def test_run_with_a_bad_diagnose_profile_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("claudecode:\n  severities: {loop: fatal}\n")
    args = ["run", "--input", str(tmp_path), "--output", str(tmp_path / "o"), "--diagnose"]
    assert main([*args, "--diagnose-profile", str(profile)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--diagnose-profile" in err and len(err.splitlines()) == 1
