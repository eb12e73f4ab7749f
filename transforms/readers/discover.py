"""Expand the paths a user gives into read units: (path, format) or a refusal.

A folder that looks like Harbor (a trial, a job, or a folder of jobs) is one unit for the
Harbor reader; a folder of a known layout trajcurate does not read (OpenCode's storage, an
OpenHands SDK events folder, `known_formats.name_folder`) is one refused unit; any other
folder is walked in sorted order and each file is detected on its own. Files that are parts
of a trajectory read with their main file (ATIF continuations and Terminus-2 summarisation
subagents next to a `trajectory.json`, Claude Code subagent transcripts beside their session)
are not read twice.

The paths given are trusted as given (one may be a symlink); what is found inside them is
not: the walk never follows a symlink out of the input (such an entry is a unit with a
refusal reason) and detection never opens a FIFO or a device. `discover_trials` splits
Harbor units into one unit per trial folder (`harbor_layout.find_trials`), each with its
job's name; a trial folder linked out of its job is a refused unit.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from transforms.readers.bundle import ReaderError
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.detect import detect_format
from transforms.readers.harbor_layout import find_trials, looks_like_harbor
from transforms.readers.known_formats import name_folder, refusal
from transforms.readers.openhands import is_events_folder

_PART_FILE = re.compile(r"^trajectory\.(?:cont-\d+|summarization-\d+-\w+)\.json$")
_SIDECHAIN_PREFIX = "agent-"


@dataclass(frozen=True, slots=True)
class ReadUnit:
    """One input for one reader; `refusal` is set (and `format` None) when none fits.

    `job` is the Harbor job name (raw, from the job's config.json, else its folder name) of
    a trial unit; None for other units. `root` is the input path the unit was found under
    (set by `intake.detect_units`: provenance paths are relative to it).
    """

    path: Path
    format: str | None
    refusal: str | None = None
    job: str | None = None
    url: str | None = None  # a trial on an object store (`readers/remote.py`); `path` is its name
    root: str | None = None


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


def discover(
    paths: Iterable[Path], forced_format: str | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> Iterator[ReadUnit]:
    for path in expand_globs(paths):
        if forced_format is not None:
            yield ReadUnit(path, forced_format)
        elif path.is_dir():
            yield from _Walk(path, limits).units(path)
        else:
            yield _detect(path, limits)


def _detect(path: Path, limits: ReadLimits) -> ReadUnit:
    try:
        return ReadUnit(path, detect_format(path, limits))
    except ReaderError as exc:
        return ReadUnit(path, None, str(exc))


class _Walk:
    """A walk of one input folder that stays inside it (and visits each folder once)."""

    def __init__(self, root: Path, limits: ReadLimits) -> None:
        self.files = TrialFiles(root, limits, scope="the input")
        self.limits = limits
        self.seen: set[str] = set()

    def units(self, folder: Path) -> Iterator[ReadUnit]:
        real = os.path.realpath(folder)
        if real in self.seen:
            return
        self.seen.add(real)
        if looks_like_harbor(folder, self.limits):
            yield ReadUnit(folder, "harbor")
            return
        if is_events_folder(folder):  # OpenHands' one-event files: one conversation
            yield ReadUnit(folder, "openhands")
            return
        known = name_folder(self.files, folder)
        if known is not None:  # e.g. OpenCode's storage: one refusal, not one per file
            yield ReadUnit(folder, None, refusal(known))
            return
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            yield ReadUnit(folder, None, f"cannot list folder: {exc.strerror or exc}")
            return
        has_session = any(_is_session_name(name) for name in names)
        for name in names:
            entry = folder / name
            try:
                self.files.resolve(entry)
            except ReaderError as exc:
                yield ReadUnit(entry, None, str(exc))
                continue
            if entry.is_dir():
                yield from self.units(entry)
            elif not _is_part_file(entry, self.files, has_session):
                yield _detect(entry, self.limits)


def _is_session_name(name: str) -> bool:
    return name.endswith(".jsonl") and not name.startswith(_SIDECHAIN_PREFIX)


def _is_part_file(path: Path, files: TrialFiles, beside_a_session: bool) -> bool:
    """A file read with its main file: an ATIF continuation or summarisation file beside a
    `trajectory.json`, or a Claude Code subagent transcript beside its session (2.0:
    `agent-<id>.jsonl` next to `<session>.jsonl`; 2.1: `<session>/subagents/*.jsonl`)."""
    if _PART_FILE.match(path.name):
        return files.is_file(path.parent / "trajectory.json")
    if path.suffix != ".jsonl":
        return False
    if path.parent.name == "subagents":
        session = path.parent.parent
        return files.is_file(session.with_name(session.name + ".jsonl"))
    return path.name.startswith(_SIDECHAIN_PREFIX) and beside_a_session


def discover_trials(
    paths: Iterable[Path], forced_format: str | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> Iterator[ReadUnit]:
    """Like `discover`, with Harbor folders split into one unit per trial folder (for parallel
    reads): every non-hidden subfolder of a job, each with the job's name."""
    for unit in discover(paths, forced_format, limits):
        if unit.format == "harbor" and unit.path.is_dir():
            trials = list(find_trials(unit.path, limits))
            if not trials:  # e.g. `--format harbor` on a folder without trials: the reader says
                yield unit
            for trial in trials:
                if trial.refusal is None:
                    yield ReadUnit(trial.path, "harbor", job=trial.job)
                else:
                    yield ReadUnit(trial.path, None, trial.refusal, job=trial.job)
        else:
            yield unit
