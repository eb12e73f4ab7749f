"""`trajcurate run` end to end on the DirectRunner's in-process runner (real composed job)."""

from __future__ import annotations

import shutil
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
import pytest
from lf_rules import sharegpt_problem

from pipelines.cli import main
from scorers.im import validate_im_record

JOB = "2026-06-16__12-00-00"
DATA_FILES = (
    "im.jsonl",
    "lf.json",
    "lf.stats.json",
    "rejects.jsonl",
    "dead_letter.jsonl",
    "dataset_info.json",
)


def run(inputs: list[Path], output: Path, *extra: str) -> int:
    argv = ["run", "--no-progress", "--output", str(output)]
    for path in inputs:
        argv += ["--input", str(path)]
    return main([*argv, *extra])


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def resolved_trials(jobs: Path) -> set[str]:
    """Trial names whose result.json reward is >= 1, read straight from the files."""
    names = set()
    for result in sorted(jobs.glob("*/*/result.json")):
        data = orjson.loads(result.read_bytes())
        rewards = (data.get("verifier_result") or {}).get("rewards") or {}
        if isinstance(rewards.get("reward"), int | float) and rewards["reward"] >= 1.0:
            names.add(data["trial_name"])
    return names


@pytest.fixture(scope="module")
def default_run(composed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    assert run([composed], out) == 0
    return out


def test_resolved_trials_become_records_and_the_rest_are_rejected(
    default_run: Path, composed: Path
) -> None:
    folder = default_run / JOB
    records = jsonl(folder / "im.jsonl")
    mains = {
        r["meta_info"]["unique_info"]["_instance_id"]
        for r in records
        if r["meta_info"]["unique_info"]["_agent_type"] == "main"
    }
    assert mains == resolved_trials(composed)
    all_trials = {p.name for p in (composed / JOB).iterdir() if p.is_dir()}
    rejects = jsonl(folder / "rejects.jsonl")
    assert {r["instance_id"] for r in rejects} == all_trials - mains
    assert all(r["stage"] == "gate" and "unresolved" in r["reason"] for r in rejects)


def test_no_subagent_record_without_its_main_record(default_run: Path) -> None:
    records = jsonl(default_run / JOB / "im.jsonl")
    mains = {
        r["meta_info"]["unique_info"]["_instance_id"]
        for r in records
        if r["meta_info"]["unique_info"]["_agent_type"] == "main"
    }
    subagents = [r for r in records if r["meta_info"]["unique_info"]["_agent_type"] == "subagent"]
    assert subagents, "the composed job has a Terminus-2 summarisation subagent"
    assert all(r["meta_info"]["unique_info"]["_instance_id"] in mains for r in subagents)


def test_records_are_valid_scored_im_and_bundles_contiguous(default_run: Path) -> None:
    records = jsonl(default_run / JOB / "im.jsonl")
    ids = [r["meta_info"]["unique_info"]["_instance_id"] for r in records]
    assert ids == sorted(ids)
    for record in records:
        validate_im_record(record)
        info = record["meta_info"]["unique_info"]
        if info["_agent_type"] == "main":
            assert 0.0 <= info["_score"]["composite_score"] <= 1.0
        else:
            assert info["_score"] is None


def test_manifest_accounts_for_every_trial(default_run: Path, composed: Path) -> None:
    manifest = orjson.loads((default_run / JOB / "manifest.json").read_bytes())
    trials = sum(1 for p in (composed / JOB).iterdir() if p.is_dir())
    accounting = manifest["accounting"]
    assert accounting["in"] == trials
    assert accounting["in"] == (
        accounting["written"] + accounting["rejected"] + accounting["dead_lettered"]
    )
    assert accounting["balanced"] is True
    assert manifest["scorer"] == {"name": "tqs-v2", "version": "tqs-v2.1"}
    assert manifest["wall_seconds"] > 0
    run_manifest = orjson.loads((default_run / "manifest.json").read_bytes())
    assert run_manifest["accounting"]["balanced"] is True


def test_every_lf_example_loads_in_llama_factory(default_run: Path) -> None:
    examples = orjson.loads((default_run / JOB / "lf.json").read_bytes())
    assert len(examples) == len(jsonl(default_run / JOB / "im.jsonl"))
    for example in examples:
        assert sharegpt_problem(example) is None, example["_instance_id"]
    info = orjson.loads((default_run / JOB / "dataset_info.json").read_bytes())
    assert info[JOB]["file_name"] == "lf.json"
    assert info[JOB]["formatting"] == "sharegpt"


def test_stats_count_the_written_records(default_run: Path) -> None:
    stats = orjson.loads((default_run / JOB / "lf.stats.json").read_bytes())
    records = jsonl(default_run / JOB / "im.jsonl")
    assert stats["count"] == len(records)
    assert stats["tokens"]["estimated"] is True
    scores = [
        r["meta_info"]["unique_info"]["_score"]["composite_score"]
        for r in records
        if r["meta_info"]["unique_info"]["_score"]
    ]
    assert stats["scores"]["max"] == max(scores)
    assert stats["scores"]["min"] == min(scores)
    run_stats = orjson.loads((default_run / "lf.stats.json").read_bytes())
    assert run_stats["count"] == stats["count"]


def test_two_runs_write_byte_identical_files(
    default_run: Path, composed: Path, tmp_path: Path
) -> None:
    assert run([composed], tmp_path) == 0
    for name in DATA_FILES:
        assert (tmp_path / JOB / name).read_bytes() == (default_run / JOB / name).read_bytes()


def test_min_score_drops_whole_bundles(composed: Path, tmp_path: Path) -> None:
    assert run([composed], tmp_path, "--min-score", "0.99", "--instance-status", "all") == 0
    assert (tmp_path / JOB / "im.jsonl").read_bytes() == b""
    rejects = jsonl(tmp_path / JOB / "rejects.jsonl")
    assert {r["stage"] for r in rejects} == {"filter"}
    assert all("< 0.99" in r["reason"] for r in rejects)
    assert sum(r["records"] for r in rejects) == 7  # 6 main records + 1 subagent


def test_sharded_output_names_and_dataset_info(
    default_run: Path, composed: Path, tmp_path: Path
) -> None:
    assert run([composed], tmp_path, "--num-shards", "3") == 0
    folder = tmp_path / JOB
    names = [f"im-{i:05d}-of-00003.jsonl" for i in range(3)]
    lines = sorted(line for n in names for line in (folder / n).read_bytes().splitlines())
    assert lines == sorted((default_run / JOB / "im.jsonl").read_bytes().splitlines())
    lf_names = [f"lf-{i:05d}-of-00003.json" for i in range(3)]
    for name in lf_names:  # an array, or empty (a shard no example went to)
        data = (folder / name).read_bytes()
        assert data == b"" or isinstance(orjson.loads(data), list)
    info = orjson.loads((folder / "dataset_info.json").read_bytes())
    assert sorted(entry["file_name"] for entry in info.values()) == lf_names


def test_bad_inputs_are_rejected_with_reasons_and_the_rest_still_written(
    composed: Path, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    shutil.copytree(composed, jobs)
    trial = next(p for p in sorted((jobs / JOB).iterdir()) if p.is_dir())
    (trial / "agent" / "trajectory.json").write_bytes(b'{"schema_version": "ATIF-v1.6", "ste')
    stray = tmp_path / "notes.bin"
    stray.write_bytes(b"\x00\x01\x02garbage")
    out = tmp_path / "out"
    assert run([jobs, stray], out, "--instance-status", "all") == 0
    rejects = jsonl(out / JOB / "rejects.jsonl") + jsonl(out / "standalone" / "rejects.jsonl")
    reasons = {r["instance_id"] or r["source"]: r["reason"] for r in rejects}
    assert any(trial.name == key for key in reasons)
    assert any("binary" in reason for reason in reasons.values())
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert manifest["accounting"]["balanced"] is True
    assert manifest["accounting"]["written"] == 5


def test_yaml_config_with_flags_winning(composed: Path, tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(f"input: {composed}\ninstance_status: all\nnum_shards: 2\n")
    out = tmp_path / "out"
    assert (
        main(
            [
                "run",
                "--no-progress",
                "--config",
                str(config),
                "--output",
                str(out),
                "--num-shards",
                "0",
            ]
        )
        == 0
    )
    assert (out / JOB / "im.jsonl").is_file()
    options = orjson.loads((out / "manifest.json").read_bytes())["options"]
    assert options["instance_status"] == "all" and options["num_shards"] == 0


def test_bad_options_exit_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([tmp_path / "missing"], tmp_path / "out") == 2
    assert "matches nothing" in capsys.readouterr().err
    config = tmp_path / "bad.yaml"
    config.write_text("min_scroe: 0.5\n")
    assert (
        main(
            [
                "run",
                "--config",
                str(config),
                "--input",
                str(tmp_path),
                "--output",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "unknown option(s) min_scroe" in capsys.readouterr().err


def test_skip_unchanged_does_nothing_the_second_time(
    composed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([composed], tmp_path, "--skip-unchanged") == 0
    capsys.readouterr()
    assert run([composed], tmp_path, "--skip-unchanged") == 0
    assert "nothing to do" in capsys.readouterr().out


def test_the_run_manifest_has_every_chain_stage_s_counters(default_run: Path) -> None:
    """Beam's counters of every stage reach the manifest: each stage sees what the one
    before it kept, from the opened bundles to the filter after the judge."""
    metrics = orjson.loads((default_run / "manifest.json").read_bytes())["beam_metrics"]
    chain = ("read", "validate", "redact", "score", "trainable", "clean", "gate", "filter")
    assert metrics["read.in"] == metrics["open.kept"] > 0
    for before, stage in pairwise(chain):
        assert metrics[f"{stage}.in"] == metrics[f"{before}.kept"], stage
