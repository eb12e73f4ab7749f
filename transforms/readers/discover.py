"""Expand the paths a user gives into read units: (path, format) or a refusal.

A folder that looks like Harbor (a trial, a job, or a folder of jobs) is one unit for the
Harbor reader; any other folder is walked in sorted order and each file is detected on its
own. Files that are parts of a trajectory read with their main file (ATIF continuations and
Terminus-2 summarisation subagents next to a `trajectory.json`) are not read twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from transforms.readers.bundle import ReaderError
from transforms.readers.detect import detect_format, looks_like_harbor

_PART_FILE = re.compile(r"^trajectory\.(?:cont-\d+|summarization-\d+-\w+)\.json$")


@dataclass(frozen=True, slots=True)
class ReadUnit:
    """One input for one reader; `refusal` is set (and `format` None) when none fits."""

    path: Path
    format: str | None
    refusal: str | None = None


def discover(paths: Iterable[Path], forced_format: str | None = None) -> Iterator[ReadUnit]:
    for path in paths:
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
