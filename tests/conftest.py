"""Shared fixtures: the repo root and the read-only test data in `../shared`."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipelines.synth import SynthOptions, generate

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = Path(os.environ.get("TRAJCURATE_SHARED", REPO_ROOT.parent / "shared")).resolve()
CASES_RELPATH = Path("data/reference-scored/cases.jsonl")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` beside the repo (or $TRAJCURATE_SHARED); skips the test when it is absent."""
    if not (SHARED_DIR / "data").is_dir():
        pytest.skip(
            f"shared test data not found at {SHARED_DIR}: put the project's shared/ folder "
            "beside the repo (../shared) or set TRAJCURATE_SHARED"
        )
    return SHARED_DIR


@pytest.fixture(scope="session")
def composed(shared_dir: Path) -> Path:
    """The Harbor jobs folder around real trajectories (`shared/data/composed/jobs`)."""
    return shared_dir / "data" / "composed" / "jobs"


@pytest.fixture(scope="session")
def cases_path(shared_dir: Path) -> Path:
    """The 335 reference-scored IM records."""
    return shared_dir / CASES_RELPATH


@pytest.fixture(scope="session")
def cases_lines(cases_path: Path) -> list[bytes]:
    return cases_path.read_bytes().splitlines()


@pytest.fixture
def cases(cases_lines: list[bytes]) -> list[dict[str, Any]]:
    """A fresh parse of every reference record (tests may mutate it)."""
    return [orjson.loads(line) for line in cases_lines]


@pytest.fixture(scope="session")
def synth_jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic Harbor jobs of 60 trials (seed 11), written once for the session: the
    LF and export corpora tests read them, none writes into them."""
    jobs = tmp_path_factory.mktemp("synth") / "jobs"
    generate(SynthOptions(jobs, 2, 60, 11, 0.05), progress=io.StringIO())
    return jobs
