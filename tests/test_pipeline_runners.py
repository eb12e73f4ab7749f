"""The same pipeline on other runners: multi-process local, portable form, Dataflow (offline)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.config import RunConfig

JOB = "2026-06-16__12-00-00"
DATA_FILES = ("im.jsonl", "lf.json", "lf.stats.json", "rejects.jsonl", "dead_letter.jsonl")


@pytest.fixture(scope="module")
def composed(shared_dir: Path) -> Path:
    return shared_dir / "data" / "composed" / "jobs"


def run(composed: Path, out: Path, *extra: str) -> int:
    return main(["run", "--no-progress", "--input", str(composed), "--output", str(out), *extra])


def test_multi_processing_gives_the_same_files(composed: Path, tmp_path: Path) -> None:
    """Every DoFn pickles and keeps no hidden global state: separate worker processes agree."""
    assert run(composed, tmp_path / "memory") == 0
    assert (
        run(
            composed,
            tmp_path / "procs",
            "--direct_running_mode=multi_processing",
            "--direct_num_workers=2",
        )
        == 0
    )
    for name in DATA_FILES:
        memory = (tmp_path / "memory" / JOB / name).read_bytes()
        assert (tmp_path / "procs" / JOB / name).read_bytes() == memory, name


def test_portable_form_builds(composed: Path, tmp_path: Path) -> None:
    import apache_beam as beam

    from pipelines.run_pipeline import build

    pipeline = beam.Pipeline()
    build(pipeline, RunConfig(inputs=(str(composed),), output=str(tmp_path)))
    proto = pipeline.to_runner_api()
    names = {t.unique_name for t in proto.components.transforms.values()}
    assert {"Detect", "Open", "Curate", "Filter", "SpillBundles", "GroupShards"} <= names


@pytest.mark.skipif(
    importlib.util.find_spec("apitools") is None
    or importlib.util.find_spec("google.cloud.storage") is None,
    reason="needs the optional apache-beam[gcp] extra (pip install 'trajcurate[gcp]')",
)
def test_dataflow_dry_run_translates_offline(
    composed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = "gs://trajcurate-dry-run"  # never contacted: a dry run stops before staging
    options = [
        "--runner",
        "DataflowRunner",
        "--dry_run=True",
        "--project",
        "trajcurate-test",
        "--region",
        "us-central1",
        f"--temp_location={bucket}/tmp",
        f"--staging_location={bucket}/staging",
    ]
    assert run(composed, tmp_path, *options) == 0
    assert "dry run" in capsys.readouterr().out
