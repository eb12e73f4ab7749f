"""Where Harbor trials are (formats.md §1): the one definition of a trial, a job, a job name.

- A **trial** is a folder with `agent/` or `verifier/`, or a `result.json` naming its trial
  or task (only its first 64 KiB are read).
- A **job** is a folder with at least one trial among its non-hidden subfolders; then
  *every* non-hidden subfolder of it is a trial unit, even an empty, config-only or broken
  one (the trial reader says what is wrong with it), so that a job's units are its folders.
- A **jobs folder** holds jobs.

The folder a user gives is trusted as given; below it, a subfolder that is a symlink leading
out of its job (or out of the jobs folder) is never entered: it is a trial unit with a
refusal reason. All probing goes through `TrialFiles` (confined, no FIFO is ever opened).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from transforms.readers.bundle import ReaderError
from transforms.readers.confined import (
    DEFAULT_LIMITS,
    ReadLimits,
    TrialFiles,
    child_path,
    utf8_json,
)

__all__ = [
    "HEAD_BYTES",
    "TrialDir",
    "child_folders",
    "find_trials",
    "is_job",
    "is_trial",
    "job_name",
    "looks_like_harbor",
]

HEAD_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class TrialDir:
    """A trial unit: its folder, its job's name (raw), and why it is refused (if it is)."""

    path: Path
    job: str | None
    refusal: str | None = None


def is_trial(
    folder: Path, limits: ReadLimits = DEFAULT_LIMITS, files: TrialFiles | None = None
) -> bool:
    """A trial has agent/ or verifier/, or a result.json that names its trial or task.
    `files` (rooted at `folder`) is used for the probes when given."""
    files = files or TrialFiles(folder, limits)
    if files.is_dir(child_path(folder, "agent")) or files.is_dir(child_path(folder, "verifier")):
        return True
    try:
        head = files.head(child_path(folder, "result.json"), HEAD_BYTES)
    except ReaderError:
        return False
    return b'"trial_name"' in head or b'"task_name"' in head


def child_folders(folder: Path, scope: str) -> list[tuple[Path, str | None]]:
    """Non-hidden subfolders in name order, each with a refusal when its real path leaves
    `folder` (a symlink out) or reaches a folder read anyway (a symlink to a sibling, into
    one, or to `folder` itself: one trial is one unit, never two); files, FIFOs and dangling
    links are not folders."""
    real_folder = os.path.realpath(folder)
    try:
        with os.scandir(folder) as listing:
            entries = sorted((e.name, e) for e in listing if not e.name.startswith("."))
    except OSError:
        return []
    out: list[tuple[Path, str | None]] = []
    links: list[tuple[str, str]] = []
    read: dict[str, str] = {}  # real path -> the child it is read as
    for name, entry in entries:
        if not _is_symlink(entry):  # its real path is the folder's: no `realpath` to walk
            if _is_dir(entry):
                out.append((folder / name, None))
                read[os.path.join(real_folder, name)] = name
            continue
        real = os.path.realpath(folder / name)
        if os.path.isdir(real):
            links.append((name, real))
    for name, real in links:
        refusal = _link_refusal(name, real, real_folder, read, scope)
        if refusal is None:
            read[real] = name
        out.append((folder / name, refusal))
    return sorted(out)


def _link_refusal(
    name: str, real: str, real_folder: str, read: dict[str, str], scope: str
) -> str | None:
    """Why the symlinked subfolder `name` (real path `real`) is not read, or None."""
    if not _inside(real, real_folder):
        return f"refused {name}: a symlink to a folder outside {scope}"
    if real == real_folder:
        return f"refused {name}: a symlink to {scope} itself"
    for other_real, other in read.items():
        if _inside(real, other_real) or _inside(other_real, real):
            return f"refused {name}: a symlink to {other}, which is read on its own"
    return None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _is_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return True  # unknown: resolved the long way


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _trials_among(children: list[tuple[Path, str | None]], limits: ReadLimits) -> bool:
    return any(refusal is None and is_trial(child, limits) for child, refusal in children)


def is_job(folder: Path, limits: ReadLimits = DEFAULT_LIMITS) -> bool:
    return _trials_among(child_folders(folder, "the job"), limits)


def looks_like_harbor(folder: Path, limits: ReadLimits = DEFAULT_LIMITS) -> bool:
    """A trial, a job, or a folder of jobs."""
    if is_trial(folder, limits):
        return True
    children = child_folders(folder, "the input")
    if _trials_among(children, limits):
        return True
    return any(refusal is None and is_job(child, limits) for child, refusal in children)


def job_name(job_dir: Path, limits: ReadLimits = DEFAULT_LIMITS) -> str:
    """The job's `job_name` from its config.json, kept raw (it is data, not a path; even
    empty), else the folder name."""
    data = TrialFiles(job_dir, limits, scope="the job").optional_bytes(job_dir / "config.json")
    try:
        config = orjson.loads(utf8_json(data, "config.json")) if data is not None else None
    except (orjson.JSONDecodeError, ReaderError):
        return job_dir.name
    name = config.get("job_name") if isinstance(config, dict) else None
    return name if isinstance(name, str) else job_dir.name


def find_trials(
    path: Path, limits: ReadLimits = DEFAULT_LIMITS, *, in_job: bool = False
) -> Iterator[TrialDir]:
    """The trial units of a trial, a job, or a folder of jobs, in sorted order.

    With `in_job`, a folder that is none of these but sits in a job (an empty or broken
    trial folder given on its own, as the pipeline reads trial units) is a unit too.
    """
    if is_trial(path, limits):
        yield TrialDir(path, job_name(path.parent, limits))
        return
    children = child_folders(path, "the job")
    if _trials_among(children, limits):
        yield from _job_units(path, children, limits)
        return
    units: list[TrialDir] = []  # a jobs folder: its jobs' units, and folders linked out of it
    jobs = 0
    for child, refusal in child_folders(path, "the input"):
        if refusal is not None:
            units.append(TrialDir(child, None, refusal))
            continue
        grandchildren = child_folders(child, "the job")
        if _trials_among(grandchildren, limits):
            jobs += 1
            units.extend(_job_units(child, grandchildren, limits))
    if jobs:
        yield from _one_trial_per_id(units)
    elif in_job and not path.name.startswith(".") and is_job(path.parent, limits):
        yield TrialDir(path, job_name(path.parent, limits))


def _one_trial_per_id(units: list[TrialDir]) -> Iterator[TrialDir]:
    """Two job folders with one `job_name` are one job; a trial folder name they share would
    be one instance id twice (a copied job): the second is refused, naming the first."""
    seen: dict[tuple[str | None, str], Path] = {}
    for unit in units:
        key = (unit.job, unit.path.name)
        first = seen.setdefault(key, unit.path) if unit.refusal is None else unit.path
        if first is unit.path:
            yield unit
        else:
            reason = (
                f"refused {unit.path.parent.name}/{unit.path.name}: its job already has a "
                f"trial {unit.path.name} (in {first.parent.name}/); give one of the job "
                "folders its own job_name"
            )
            yield TrialDir(unit.path, unit.job, reason)


def _job_units(
    job_dir: Path, children: list[tuple[Path, str | None]], limits: ReadLimits
) -> Iterator[TrialDir]:
    name = job_name(job_dir, limits)
    for child, refusal in children:
        yield TrialDir(child, name, refusal)
