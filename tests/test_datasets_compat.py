"""Every job's lf.json loads together with Hugging Face `datasets` 4.0.0 (the release
LLaMA-Factory pins) and with the latest, without `features=`, every row as written.

`datasets` types each file's columns from its first read table and casts the later ones to
it; a column that is null throughout one job (Arrow's null type) or a file without columns
(`[]`) then fails every job after it. LF is written so that neither can happen: every
metadata column is JSON text, never null, and an LF shard without examples is an empty file.
The jobs here include one whose lf.json is empty and comes first, and sharded outputs whose
shards are mostly empty.

`datasets` 4.0.0 lives in a venv of its own (`make venv-datasets4`, which `make test` and so
CI build; `TRAJCURATE_DATASETS4_PYTHON` names its python). Without it the 4.0 case is
skipped locally and fails under CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipelines.cli import main

REPO = Path(__file__).resolve().parent.parent
COMPOSED = "2026-06-16__12-00-00"
ERRORED = "2026-05-15__02-29-02"  # a real Harbor job whose one trial errored: no LF example
SMALL_CHUNK = 4 << 10

# Run by each `datasets` python: loads the files given (as JSON on stdin), writes the rows.
LOADER = """
import json, sys, tempfile
import datasets
request = json.load(sys.stdin)
options = {"chunksize": request["chunksize"]} if request["builder"] == "json" else {}
loaded = datasets.load_dataset(
    request["builder"],
    data_files=request["files"],
    split="train",
    cache_dir=tempfile.mkdtemp(),
    **options,
)
json.dump({"version": datasets.__version__, "rows": loaded.to_list()}, sys.stdout, default=str)
"""


def _datasets4_python() -> str:
    python = os.environ.get("TRAJCURATE_DATASETS4_PYTHON") or str(
        REPO / ".venv-datasets4" / "bin" / "python"
    )
    if not Path(python).is_file():
        message = f"no datasets 4.0 venv at {python}: make venv-datasets4"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return python


def _pythons() -> list[Any]:
    return [
        pytest.param("4.0.0", id="datasets-4.0.0"),
        pytest.param("latest", id="datasets-latest"),
    ]


@pytest.fixture(scope="module")
def jobs(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic jobs, the composed job of real trajectories, a real errored job."""
    folder = tmp_path_factory.mktemp("inputs") / "jobs"
    argv = ["synth", "--out", str(folder), "--jobs", "2", "--trials", "8", "--seed", "5"]
    assert main(argv) == 0
    (folder / "synth-manifest.jsonl").unlink()
    data = shared_dir / "data"
    shutil.copytree(data / "composed" / "jobs" / COMPOSED, folder / COMPOSED)
    shutil.copytree(data / "real" / "harbor-jobs" / ERRORED, folder / ERRORED)
    return folder


def _run(jobs: Path, shared_dir: Path, out: Path, *extra: str) -> Path:
    standalone = shared_dir / "data" / "real" / "native"
    argv = ["run", "--no-progress", "--instance-status", "all", "--output", str(out)]
    argv += ["--input", str(jobs), "--input", str(standalone), *extra]
    assert main(argv) == 0
    return out


def _lf_files(out: Path) -> list[Path]:
    files = sorted([*out.glob("*/lf.json"), *out.glob("*/lf-*-of-*.json")])
    empty = [f for f in files if f.stat().st_size == 0]
    assert empty and len(files) - len(empty) >= 4, files
    return sorted(files, key=lambda f: f.stat().st_size != 0)  # an empty file first


def _written(files: list[Path]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in files:
        data = path.read_bytes()
        rows.extend(orjson.loads(data) if data else [])
    return rows


def _load(
    which: str, files: list[Path], chunksize: int, builder: str = "json"
) -> tuple[str, list[dict[str, Any]]]:
    python = _datasets4_python() if which == "4.0.0" else sys.executable
    request = orjson.dumps(
        {"files": [str(f) for f in files], "chunksize": chunksize, "builder": builder}
    )
    done = subprocess.run(
        [python, "-c", LOADER], input=request, capture_output=True, check=False, timeout=600
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    answer = orjson.loads(done.stdout)
    return answer["version"], answer["rows"]


@pytest.mark.slow
@pytest.mark.parametrize("which", _pythons())
@pytest.mark.parametrize("shards", [0, 3])
def test_every_jobs_lf_json_loads_together_without_features(
    jobs: Path, shared_dir: Path, tmp_path: Path, which: str, shards: int
) -> None:
    out = _run(jobs, shared_dir, tmp_path / "out", "--num-shards", str(shards))
    files = _lf_files(out)
    written = _written(files)
    assert len(written) >= 20
    for order, chunksize in ((files, 10 << 20), ([*files[:1], *files[:0:-1]], SMALL_CHUNK)):
        version, rows = _load(which, order, chunksize)
        assert which == "latest" or version == which
        assert rows == _written(order)  # every row, every value as written


def test_lf_metadata_columns_are_json_text_never_null(
    jobs: Path, shared_dir: Path, tmp_path: Path
) -> None:
    out = _run(jobs, shared_dir, tmp_path / "out")
    rows = _written(_lf_files(out))
    for row in rows:
        for key in ("_score", "_gen_params", "_usage", "_instance_metadata", "_curriculum"):
            assert isinstance(row[key], str), (key, row[key])
            orjson.loads(row[key])
    subagents = [row for row in rows if row["_agent_type"] == "subagent"]
    assert subagents and all(row["_score"] == "null" for row in subagents)
    assert all(orjson.loads(row["_curriculum"]) is None for row in rows)  # no --curriculum


def _im_identities(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    infos = [row["meta_info"]["unique_info"] for row in rows]
    return [(info["_instance_id"], info["_agent_type"]) for info in infos]


@pytest.mark.slow
@pytest.mark.parametrize("which", _pythons())
def test_every_jobs_im_parquet_loads_together_without_features(
    jobs: Path, shared_dir: Path, tmp_path: Path, which: str
) -> None:
    """IM's object columns vary in keys by job, so across jobs IM is read as Parquet."""
    out = _run(jobs, shared_dir, tmp_path / "out", "--num-shards", "3", "--parquet")
    jsonl = sorted(out.glob("*/im-*-of-*.jsonl"))
    files = [f.with_suffix(".parquet") for f in jsonl]
    assert all(f.is_file() for f in files) and len({f.parent for f in files}) >= 5
    written = [orjson.loads(line) for f in jsonl for line in f.read_bytes().splitlines()]
    assert len(written) >= 20
    version, rows = _load(which, files, 0, builder="parquet")
    assert which == "latest" or version == which
    assert _im_identities(rows) == _im_identities(written)  # every row, in file order
    tools = [orjson.loads(tool["function"]["parameters"]) for row in rows for tool in row["tools"]]
    assert tools == [t["function"]["parameters"] for r in written for t in r["tools"]]
