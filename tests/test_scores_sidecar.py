"""The per-job sidecar `scores.jsonl` written by `trajcurate run`: one row per trial that
reached scoring (resolved or not, kept or rejected, with the reject's reason), sorted and
byte-deterministic, published and kept like every job file; and `run --report`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.register_assert_rewrite("object_stores")

from object_stores import (  # noqa: E402
    StoreServer,
    beam_store_options,
    create_bucket,
    download_prefix,
    upload_tree,
)

from pipelines.cli import main  # noqa: E402
from pipelines.output_folder import verify_outputs  # noqa: E402
from scorers.tqs_v2 import SCORE_KEYS  # noqa: E402
from transforms.report.rows import diagnosis_summary  # noqa: E402

pytest_plugins = ["object_stores"]

# rejects that happen after scoring
SCORED_STAGES = ("trainable", "gate", "filter", "dedup", "best_of_k")
ROW_KEYS = [
    "instance_id",
    "job",
    "task",
    "agent",
    "model",
    "scaffold",
    "language",
    "reward",
    "resolved",
    "turns",
    "score",
    "judges",
    "diagnosis",
    "decision",
    "reason",
    "tool_errors",
]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic jobs: resolved, unresolved and reward-less trials, a few damaged."""
    jobs = tmp_path_factory.mktemp("sidecar") / "jobs"
    argv = ["synth", "--out", str(jobs), "--jobs", "2", "--trials", "16", "--seed", "21"]
    assert main([*argv, "--bad-share", "0.15"]) == 0
    (jobs / "synth-manifest.jsonl").unlink()
    return jobs


def run(corpus: Path | str, out: Path | str, *extra: str) -> int:
    argv = ["run", "--no-progress", "--input", str(corpus), "--output", str(out), *extra]
    return main(argv)


@pytest.fixture(scope="module")
def default_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("default")
    assert run(corpus, out) == 0
    return out


def _jobs(out: Path) -> list[Path]:
    folders = sorted(p for p in out.iterdir() if (p / "manifest.json").exists())
    assert len(folders) == 2
    return folders


def test_every_scored_trial_has_one_row_kept_or_rejected(default_run: Path) -> None:
    unresolved = 0
    for folder in _jobs(default_run):
        rows = _jsonl(folder / "scores.jsonl")
        assert [list(row) for row in rows] == [ROW_KEYS] * len(rows)
        records = _jsonl(folder / "im.jsonl")
        mains = {
            r["meta_info"]["unique_info"]["_instance_id"]: r
            for r in records
            if r["meta_info"]["unique_info"]["_agent_type"] == "main"
        }
        kept = {row["instance_id"]: row for row in rows if row["decision"] == "kept"}
        assert set(kept) == set(mains)
        for instance_id, row in kept.items():  # the scores written are the scores reported
            written = mains[instance_id]["meta_info"]["unique_info"]["_score"]
            assert row["score"] == {key: written[key] for key in SCORE_KEYS}
            assert list(row["score"]) == list(SCORE_KEYS)
            assert row["resolved"] is True and row["reason"] is None
        rejects = _jsonl(folder / "rejects.jsonl")
        after_scoring = {r["instance_id"]: r for r in rejects if r["stage"] in SCORED_STAGES}
        rejected = {row["instance_id"]: row for row in rows if row["decision"] == "rejected"}
        assert set(rejected) == set(after_scoring)
        for instance_id, row in rejected.items():
            assert row["reason"] == after_scoring[instance_id]["reason"]
        never_scored = {r["instance_id"] for r in rejects if r["stage"] not in SCORED_STAGES}
        assert never_scored and not never_scored & {row["instance_id"] for row in rows}
        unresolved += sum(1 for row in rows if not row["resolved"])
        assert len(rows) == len(mains) + len(after_scoring)
    assert unresolved > 0  # unresolved trials are scored too, and reported


def test_rows_are_sorted_and_runs_write_the_same_bytes(
    corpus: Path, default_run: Path, tmp_path: Path
) -> None:
    assert run(corpus, tmp_path) == 0
    for folder in _jobs(default_run):
        data = (folder / "scores.jsonl").read_bytes()
        ids = [row["instance_id"] for row in _jsonl(folder / "scores.jsonl")]
        assert ids == sorted(ids)
        assert (tmp_path / folder.name / "scores.jsonl").read_bytes() == data


def test_the_sidecar_is_published_with_the_job(default_run: Path) -> None:
    for folder in _jobs(default_run):
        manifest = orjson.loads((folder / "manifest.json").read_bytes())
        assert "scores.jsonl" in manifest["outputs"]
        assert (
            manifest["files"]["scores.jsonl"]["bytes"] == (folder / "scores.jsonl").stat().st_size
        )
        assert verify_outputs(str(folder)) is None


def test_the_score_filter_keeps_the_rows_of_what_it_drops(corpus: Path, tmp_path: Path) -> None:
    assert run(corpus, tmp_path, "--min-score", "0.95", "--instance-status", "all") == 0
    filtered = 0
    for folder in _jobs(tmp_path):
        rows = {row["instance_id"]: row for row in _jsonl(folder / "scores.jsonl")}
        for reject in _jsonl(folder / "rejects.jsonl"):
            if reject["stage"] == "filter":
                filtered += 1
                row = rows[reject["instance_id"]]
                assert row["decision"] == "rejected" and row["reason"] == reject["reason"]
                assert row["score"]["composite_score"] < 0.95
    assert filtered > 0


def test_a_job_no_trial_of_which_was_scored_has_an_empty_sidecar(
    corpus: Path, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    job = sorted(p for p in corpus.iterdir() if p.is_dir())[0]
    shutil.copytree(job, jobs / job.name)
    for agent in (jobs / job.name).glob("*/agent"):
        shutil.rmtree(agent)  # no agent log in any trial: each rejected before scoring
    assert run(jobs, tmp_path / "out") == 0
    (folder,) = _jobs_of(tmp_path / "out")
    assert (folder / "scores.jsonl").read_bytes() == b""
    assert "scores.jsonl" in orjson.loads((folder / "manifest.json").read_bytes())["outputs"]


def _jobs_of(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if (p / "manifest.json").exists())


def test_skip_unchanged_keeps_the_sidecar_of_a_kept_job(corpus: Path, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    shutil.copytree(corpus, jobs)
    out = tmp_path / "out"
    assert run(jobs, out, "--skip-unchanged") == 0
    first, second = _jobs(out)
    before = (first / "scores.jsonl").read_bytes()
    changed = sorted(p for p in (jobs / second.name).iterdir() if p.is_dir())[0]
    shutil.rmtree(changed)  # the second job changes, the first is kept as it is
    assert run(jobs, out, "--skip-unchanged") == 0
    run_manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert run_manifest["kept_jobs"] and run_manifest["curated_jobs"]
    assert (first / "scores.jsonl").read_bytes() == before
    assert verify_outputs(str(first)) is None
    rows = _jsonl(second / "scores.jsonl")
    assert changed.name not in {row["instance_id"] for row in rows}


def test_run_report_builds_the_report(
    default_run: Path, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    assert run(corpus, tmp_path, "--report") == 0
    page = tmp_path / "report" / "index.html"
    assert page.is_file() and page.stat().st_size > 10_000
    assert f"-> {page}" in capsys.readouterr().out
    assert sorted(p.name for p in _jobs_of(tmp_path)) == sorted(p.name for p in _jobs(default_run))


def test_the_sidecar_in_a_bucket_equals_the_local_one(
    gcs_store: StoreServer, corpus: Path, default_run: Path, tmp_path: Path
) -> None:
    """On the GCS emulator: the S3 server (moto) takes minutes for the same run, and the
    bucket-vs-local byte identity of every per-job file on S3 is test_remote_inputs'."""
    bucket = create_bucket(gcs_store, "sidecar")
    upload_tree(gcs_store, corpus, f"{bucket}jobs/")
    out = f"{bucket}curated"
    options = beam_store_options(gcs_store.kind)
    assert run(f"{bucket}jobs", out, "--report", *options) == 0  # no report there: one line
    fetched = tmp_path / "fetched"
    download_prefix(gcs_store, out + "/", fetched)
    for folder in _jobs(default_run):
        remote = fetched / folder.name
        assert (remote / "scores.jsonl").read_bytes() == (folder / "scores.jsonl").read_bytes()
        assert "scores.jsonl" in orjson.loads((remote / "manifest.json").read_bytes())["files"]
    assert not (fetched / "report").exists()


def test_judged_trials_carry_their_judge_scores(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_llm_server import FakeLLMServer

    key = "sk-test-never-shown-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    job = sorted(p for p in corpus.iterdir() if p.is_dir())[0]
    with FakeLLMServer(api_key=key) as server:
        extra = ["--llm-judge", "fixed", "--llm-base-url", server.base_url]
        assert run(job, tmp_path, *extra, "--llm-model", "fake-judge") == 0
    (folder,) = _jobs_of(tmp_path)
    judged = {
        r["meta_info"]["unique_info"]["_instance_id"]: r["meta_info"]["unique_info"]["_llm_judge"]
        for r in _jsonl(folder / "im.jsonl")
        if r["meta_info"]["unique_info"]["_agent_type"] == "main"
    }
    rows = _jsonl(folder / "scores.jsonl")
    for row in rows:
        if row["decision"] == "kept":
            numbers = {
                k: float(v)
                for k, v in judged[row["instance_id"]].items()
                if isinstance(v, int | float) and not isinstance(v, bool)
            }
            assert row["judges"] == numbers and "llm_composite_score" in numbers
        else:  # rejected at the gate, before the judges: never judged (nor paid for)
            assert row["judges"] is None and not row["resolved"]
    assert {row["decision"] for row in rows} == {"kept", "rejected"}


def test_diagnosed_trials_carry_their_diagnosis(corpus: Path, tmp_path: Path) -> None:
    assert run(corpus, tmp_path, "--diagnose", "--instance-status", "all") == 0
    fired = 0
    for folder in _jobs_of(tmp_path):
        mains = {
            r["meta_info"]["unique_info"]["_instance_id"]: r["meta_info"]["unique_info"]
            for r in _jsonl(folder / "im.jsonl")
            if r["meta_info"]["unique_info"]["_agent_type"] == "main"
        }
        rows = _jsonl(folder / "scores.jsonl")
        # a run cut off after a tool result is diagnosed, then kept out of the SFT files
        cut_off = [row for row in rows if row["decision"] == "rejected"]
        assert all(row["reason"].startswith("record 1 of 1: truncated") for row in cut_off)
        assert all(row["diagnosis"] is not None for row in cut_off)
        rows = [row for row in rows if row["decision"] == "kept"]
        assert rows and {row["instance_id"] for row in rows} == set(mains)
        for row in rows:
            diagnosis = mains[row["instance_id"]]["_diagnosis"]
            assert row["diagnosis"] == diagnosis_summary(mains[row["instance_id"]])
            assert row["diagnosis"]["trajectory_score"] == diagnosis["trajectory_score"]
            names = [d["detector"] for d in diagnosis["detections"]]
            assert [d[0] for d in row["diagnosis"]["detections"]] == names
            fired += len(names)
    assert fired > 0  # the synthetic corpus has loops, errors and unverified finishes
