"""Speed work changes no output: the data files of a run are byte-identical to those the
commit before it writes (issue 23), on the composed job, a synth corpus and the real
standalone files.

The baseline is the source tree of `BASELINE` (from git), run as its pure-Python self; the
current tree runs as installed (compiled scorer). Move `BASELINE` forward only with a change
that is meant to change outputs, and say so in its commit.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pipelines.cli import main

REPO = Path(__file__).resolve().parent.parent
# The last commit meant to change outputs: 454ebbb stopped masking code the real files hold
# (issue 21's false positives). The speed work before it (from da17c7e) matched da17c7e.
BASELINE = "454ebbb"
DATA_FILES = (
    "im.jsonl",
    "lf.json",
    "lf.stats.json",
    "rejects.jsonl",
    "dead_letter.jsonl",
    "scores.jsonl",
    "messages.jsonl",
    "openai.jsonl",
    "dataset_info.json",
)
OPTIONS = [
    ["--instance-status", "all", "--dedup", "off"],
    ["--lf-template", "mistral", "--messages-format", "both", "--num-shards", "2"],
]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `BASELINE` source tree, extracted from git (skips outside a git checkout)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", BASELINE],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        pytest.skip(f"{BASELINE} is not in this checkout's history: {archive.stderr[:200]!r}")
    tree = tmp_path_factory.mktemp("baseline")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    return tree


@pytest.fixture(scope="module")
def inputs(shared_dir: Path, synth_jobs: Path) -> list[Path]:
    data = shared_dir / "data"
    return [data / "composed" / "jobs", data / "real" / "native", synth_jobs]


def _run_baseline(tree: Path, argv: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree), "TRAJCURATE_PURE_PYTHON": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *argv],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _data_files(out: Path) -> dict[str, bytes]:
    files = [p for p in out.rglob("*") if p.is_file() and p.name.split(".")[0] in _STEMS]
    return {str(p.relative_to(out)): p.read_bytes() for p in files if _is_data(p)}


_STEMS = {name.split(".")[0] for name in DATA_FILES}


def _is_data(path: Path) -> bool:
    name = path.name
    return name in DATA_FILES or any(
        name.startswith(stem + "-") and name.endswith((".jsonl", ".json")) for stem in _STEMS
    )


@pytest.mark.parametrize("options", OPTIONS, ids=["all-no-dedup", "mistral-exports-shards"])
def test_a_run_writes_the_baselines_bytes(
    baseline: Path, inputs: list[Path], tmp_path: Path, options: list[str]
) -> None:
    argv = ["run", "--no-progress", *options]
    for folder in inputs:
        argv += ["--input", str(folder)]
    _run_baseline(baseline, [*argv, "--output", str(tmp_path / "before")])
    assert main([*argv, "--output", str(tmp_path / "after")]) == 0
    before, after = _data_files(tmp_path / "before"), _data_files(tmp_path / "after")
    assert len(before) >= 10 and sorted(after) == sorted(before)
    changed = [name for name in before if before[name] != after[name]]
    assert not changed, changed
