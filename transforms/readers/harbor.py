"""Harbor job directories (formats.md §1): a folder of jobs, one job, or one trial.

`read` finds the trials by content (a trial has `agent/` or `verifier/`, or a `result.json`
naming its trial), walks them in sorted order and yields one bundle per trial as it goes, so
a large job is never held in memory. The per-trial work lives in `harbor_trial.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from transforms.readers.bundle import Bundle, ReaderError
from transforms.readers.harbor_trial import read_trial

__all__ = ["is_trial", "iter_trial_dirs", "read", "read_trial"]

# jobs folder -> job -> trial: a trial is at most this many levels below the input.
MAX_DEPTH = 2
_HEAD_BYTES = 64 * 1024


def read(path: Path) -> Iterator[Bundle]:
    """One bundle per trial under `path`, in sorted trial-path order."""
    path = Path(path)
    if not path.is_dir():
        raise ReaderError(f"{path}: a Harbor input is a folder (jobs folder, job or trial)")
    job_names: dict[Path, str] = {}
    found = False
    for trial_dir in iter_trial_dirs(path):
        found = True
        parent = trial_dir.parent
        if parent not in job_names:
            job_names[parent] = job_name(parent)
        yield read_trial(trial_dir, job=job_names[parent])
    if not found:
        raise ReaderError(f"{path}: no Harbor trial found (no result.json, agent/ or verifier/)")


def iter_trial_dirs(path: Path, depth: int = 0) -> Iterator[Path]:
    """Trial folders at or below `path`, depth-first in sorted name order."""
    if is_trial(path):
        yield path
        return
    if depth >= MAX_DEPTH:
        return
    try:
        children = sorted(
            (c for c in path.iterdir() if c.is_dir() and not c.name.startswith(".")),
            key=lambda c: c.name,
        )
    except OSError:
        return
    for child in children:
        yield from iter_trial_dirs(child, depth + 1)


def is_trial(folder: Path) -> bool:
    """A trial has agent/ or verifier/, or a result.json that names its trial or task."""
    if (folder / "agent").is_dir() or (folder / "verifier").is_dir():
        return True
    try:
        with open(folder / "result.json", "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError:
        return False
    return b'"trial_name"' in head or b'"task_name"' in head


def job_name(job_dir: Path) -> str:
    """The job's `job_name` from its config.json, else the folder name."""
    try:
        config = orjson.loads((job_dir / "config.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return job_dir.name
    name = config.get("job_name") if isinstance(config, dict) else None
    return str(name) if name else job_dir.name
