"""Expand the paths a user gives into read units: (path, format) or a refusal.

A folder that looks like Harbor (a trial, a job, or a folder of jobs) is one unit for the
Harbor reader; any other folder is walked in sorted order and each file is detected on its
own. Files that are parts of a trajectory read with their main file (ATIF continuations and
Terminus-2 summarisation subagents next to a `trajectory.json`) are not read twice.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from transforms.readers.bundle import ReaderError
from transforms.readers.detect import detect_format, is_trial, looks_like_harbor, subfolders

_PART_FILE = re.compile(r"^trajectory\.(?:cont-\d+|summarization-\d+-\w+)\.json$")


@dataclass(frozen=True, slots=True)
class ReadUnit:
    """One input for one reader; `refusal` is set (and `format` None) when none fits."""

    path: Path
    format: str | None
    refusal: str | None = None


_GLOB_CHARS = frozenset("*?[")


def expand_globs(paths: Iterable[Path]) -> Iterator[Path]:
    """Paths as given; a path with glob characters becomes its sorted matches (or itself)."""
    for path in paths:
        text = str(path)
        if _GLOB_CHARS.isdisjoint(text):
            yield path
            continue
        matches = sorted(glob.glob(text, recursive=True))
        yield from (Path(m) for m in matches) if matches else (path,)


def discover(paths: Iterable[Path], forced_format: str | None = None) -> Iterator[ReadUnit]:
    for path in expand_globs(paths):
        if forced_format is not None:
            yield ReadUnit(path, forced_format)
        elif path.is_dir():
            yield from _walk(path)
        else:
            yield _detect(path)


def _detect(path: Path) -> ReadUnit:
    try:
        return ReadUnit(path, detect_format(path))
    except ReaderError as exc:
        return ReadUnit(path, None, str(exc))


def _walk(folder: Path) -> Iterator[ReadUnit]:
    if looks_like_harbor(folder):
        yield ReadUnit(folder, "harbor")
        return
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        yield ReadUnit(folder, None, f"cannot list folder: {exc.strerror or exc}")
        return
    for entry in entries:
        if entry.is_dir():
            yield from _walk(entry)
        elif not _is_part_file(entry):
            yield _detect(entry)


def _is_part_file(path: Path) -> bool:
    return bool(_PART_FILE.match(path.name)) and (path.parent / "trajectory.json").is_file()


def harbor_trials(folder: Path) -> list[Path]:
    """The trial folders of a trial, a job, or a folder of jobs, in sorted order."""
    if is_trial(folder):
        return [folder]
    trials = []
    for child in subfolders(folder):
        if is_trial(child):
            trials.append(child)
        else:
            trials.extend(g for g in subfolders(child) if is_trial(g))
    return trials


def discover_trials(paths: Iterable[Path], forced_format: str | None = None) -> Iterator[ReadUnit]:
    """Like `discover`, with Harbor folders split into one unit per trial (for parallel reads)."""
    for unit in discover(paths, forced_format):
        if unit.format == "harbor" and unit.path.is_dir():
            yield from (ReadUnit(trial, "harbor") for trial in harbor_trials(unit.path))
        else:
            yield unit
