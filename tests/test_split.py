"""`--val-fraction` / `--split-seed`: a train/validation split grouped by task, seeded,
written as separate files per job and counted in the manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pipelines.cli import main
from transforms.sinks.split import SplitSettings, split_of


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic jobs with repeated tasks (several trials per task)."""
    folder = tmp_path_factory.mktemp("inputs") / "jobs"
    assert (
        main(["synth", "--out", str(folder), "--jobs", "2", "--trials", "40", "--seed", "3"]) == 0
    )
    (folder / "synth-manifest.jsonl").unlink()
    return folder


def _run(jobs: Path, out: Path, *extra: str) -> Path:
    argv = ["run", "--no-progress", "--instance-status", "all", "--dedup", "off"]
    assert main([*argv, "--input", str(jobs), "--output", str(out), *extra]) == 0
    return out


def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _lf(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    return orjson.loads(data) if data else []


def _task(record: dict[str, Any]) -> str:
    task: str = record["meta_info"]["unique_info"]["_instance_metadata"]["task_name"]
    return task


def _ids(records: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {
        (
            r["meta_info"]["unique_info"]["_instance_id"],
            r["meta_info"]["unique_info"]["_agent_type"],
        )
        for r in records
    }


def test_the_split_is_by_task_seeded_and_near_the_fraction() -> None:
    settings = SplitSettings(0.2, seed=7)
    tasks = [f"task-{n}" for n in range(2000)]
    chosen = [split_of(t, settings) for t in tasks]
    assert chosen == [split_of(t, SplitSettings(0.2, seed=7)) for t in tasks]  # deterministic
    share = chosen.count("validation") / len(tasks)
    assert 0.17 < share < 0.23
    other = [split_of(t, SplitSettings(0.2, seed=8)) for t in tasks]
    assert other != chosen  # another seed draws another split
    assert {split_of(t, SplitSettings()) for t in tasks} == {"train"}  # off: all train


def test_no_task_is_in_both_splits_and_nothing_is_lost(jobs: Path, tmp_path: Path) -> None:
    whole = _run(jobs, tmp_path / "whole")
    split = _run(jobs, tmp_path / "split", "--val-fraction", "0.3", "--split-seed", "1")
    for job in sorted(p.name for p in jobs.iterdir()):
        train = _records(split / job / "im.jsonl")
        val = _records(split / job / "im.val.jsonl")
        assert train and val
        assert not {_task(r) for r in train} & {_task(r) for r in val}
        everything = _records(whole / job / "im.jsonl")
        assert _ids(train) | _ids(val) == _ids(everything) and len(train) + len(val) == len(
            everything
        )
        lf_train, lf_val = _lf(split / job / "lf.json"), _lf(split / job / "lf.val.json")
        assert {e["_instance_id"] for e in lf_val} <= {i for i, _ in _ids(val)}
        assert len(lf_train) + len(lf_val) == len(_lf(whole / job / "lf.json"))
        manifest = orjson.loads((split / job / "manifest.json").read_bytes())
        counts = manifest["split"]
        assert counts["val_fraction"] == 0.3 and counts["split_seed"] == 1
        assert counts["validation"]["records"] == len(val)
        assert counts["train"]["records"] == len(train)
        assert counts["validation"]["instances"] == len({i for i, _ in _ids(val)})
        assert {"im.val.jsonl", "lf.val.json"} <= set(manifest["outputs"])
        info = orjson.loads((split / job / "dataset_info.json").read_bytes())
        assert info[job]["file_name"] == "lf.json"
        assert info[f"{job}_val"]["file_name"] == "lf.val.json"
    assert "split" not in orjson.loads((whole / job / "manifest.json").read_bytes())


def test_sharded_validation_files_and_parquet_twins(jobs: Path, tmp_path: Path) -> None:
    out = _run(jobs, tmp_path / "out", "--val-fraction", "0.3", "--num-shards", "2", "--parquet")
    job = sorted(p.name for p in jobs.iterdir())[0]
    names = {p.name for p in (out / job).iterdir()}
    for stem in ("im", "lf"):
        for shard in range(2):
            assert f"{stem}-{shard:05d}-of-00002.parquet" in names
            assert f"{stem}.val-{shard:05d}-of-00002.parquet" in names
    val = [r for s in range(2) for r in _records(out / job / f"im.val-{s:05d}-of-00002.jsonl")]
    train = [r for s in range(2) for r in _records(out / job / f"im-{s:05d}-of-00002.jsonl")]
    assert val and not {_task(r) for r in train} & {_task(r) for r in val}
    manifest = orjson.loads((out / job / "manifest.json").read_bytes())
    assert manifest["split"]["validation"]["records"] == len(val)


def test_a_run_without_the_split_removes_the_validation_files(jobs: Path, tmp_path: Path) -> None:
    out = _run(jobs, tmp_path / "out", "--val-fraction", "0.3")
    assert list(out.glob("*/lf.val.json"))
    _run(jobs, out)
    assert not list(out.glob("*/*.val*"))


def test_datasets_loads_the_two_splits(jobs: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out = _run(jobs, tmp_path / "out", "--val-fraction", "0.3")
    files = {
        "train": sorted(str(p) for p in out.glob("*/lf.json")),
        "validation": sorted(str(p) for p in out.glob("*/lf.val.json")),
    }
    loaded = datasets.load_dataset("json", data_files=files, cache_dir=str(tmp_path / "cache"))
    for split, paths in files.items():
        assert loaded[split].num_rows == sum(len(_lf(Path(p))) for p in paths) > 0


@pytest.mark.parametrize("value", ["-0.1", "0.95", "x"])
def test_the_fraction_is_checked_before_any_work(tmp_path: Path, value: str) -> None:
    argv = ["run", "--no-progress", "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    assert main([*argv, "--val-fraction", value]) == 2
    assert not (tmp_path / "o").exists()
