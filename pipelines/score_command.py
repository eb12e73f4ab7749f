"""`trajcurate score`: put a TQS V2 `_score` on every IM record of JSONL files.

Records are written back in input order with `meta_info.unique_info._score` set (null for
subagent records), every other key and the key order unchanged. A line that is not JSON or not
an IM record (or that the scorer fails on) is rejected: reported on stderr as `FILE:LINE:
reason`, written with its reason to `<OUTPUT minus .jsonl>.rejects.jsonl`, and skipped. The
rejects file is always written, empty when nothing was rejected, so a stale one never survives
a rerun. Blank lines are skipped silently and only counted. Both files are written under a
`.partial` name and renamed at the end, so a failed run leaves no half-written output.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pipelines.outputs import (
    CommandError,
    atomic_jsonl_outputs,
    rejects_path,
    run_reporting_errors,
)
from pipelines.score_summary import ScoreStats
from scorers import tqs_v2
from scorers.im import InvalidRecord, agent_type, validate_im_record
from transforms.jsonl import JsonlWriter, LineError, is_blank, iter_lines, parse_line
from transforms.progress import Progress

__all__ = ["CommandError", "ScoreOptions", "add_parser", "rejects_path", "run", "score_files"]

PROG = "trajcurate score"
RAW_LIMIT = 2000  # characters of a rejected line kept in the rejects file
GC_THRESHOLD = 100_000  # allocations between cycle collections while scoring
STDERR_REJECT_LIMIT = 100  # rejects echoed on stderr; the rest only go to the rejects file


class _Rejected(Exception):
    """One line that is skipped; the message is the reason."""


@dataclass(frozen=True)
class ScoreOptions:
    inputs: tuple[Path, ...]
    output: Path
    scaffold: str | None = None
    strict: bool = False


def add_parser(subcommands: Any) -> None:
    """Register `score` on the `trajcurate` subcommand parser."""
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "score",
        help="score IM records with TQS V2",
        description="Set meta_info.unique_info._score on every IM record (TQS V2).",
    )
    parser.add_argument("inputs", nargs="+", type=Path, metavar="INPUT.jsonl")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="OUTPUT.jsonl")
    parser.add_argument(
        "--scaffold",
        choices=tqs_v2.SCAFFOLDS,
        help="score every record as this scaffold instead of detecting it",
    )
    parser.add_argument(
        "--strict", action="store_true", help="stop with exit 1 at the first rejected line"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    options = ScoreOptions(tuple(args.inputs), args.output, args.scaffold, args.strict)
    stats = run_reporting_errors(PROG, lambda: score_files(options, sys.stderr))
    if isinstance(stats, int):
        return stats
    print(f"{PROG}: {stats.records} records -> {options.output}")
    print(f"{PROG}: {stats.rejected} rejected lines -> {rejects_path(options.output)}")
    print(stats.render())
    return 0


def score_files(options: ScoreOptions, stderr: TextIO) -> ScoreStats:
    """Score every input line into `options.output`; return the run's stats."""
    _check_paths(options)
    outputs = (options.output, rejects_path(options.output))
    with atomic_jsonl_outputs(*outputs) as (records, rejects), _rare_cycle_collection():
        state = _Run(options, records, rejects, stderr)
        for path in options.inputs:
            for line_number, raw in _read(path):
                state.handle(path, line_number, raw)
    return state.stats


class _Run:
    """The state of one run: writers, stats, progress."""

    def __init__(
        self, options: ScoreOptions, records: JsonlWriter, rejects: JsonlWriter, stderr: TextIO
    ) -> None:
        self.options = options
        self.records = records
        self.rejects = rejects
        self.stderr = stderr
        self.stats = ScoreStats()
        self.progress = Progress(stderr, PROG)
        self.lines = 0

    def handle(self, path: Path, line_number: int, raw: bytes) -> None:
        if is_blank(raw):
            self.stats.blank_lines += 1
            return
        try:
            record = _parse(raw)
            score, calls, errors = _score(record, self.options.scaffold)
        except _Rejected as exc:
            self.reject(path, line_number, raw, str(exc))
        else:
            record["meta_info"]["unique_info"]["_score"] = score
            self.records.write(record)
            self.stats.add(agent_type(record), score, calls, errors)
        self.lines += 1
        self.progress.update(self.lines)

    def reject(self, path: Path, line_number: int, raw: bytes, reason: str) -> None:
        where = f"{path}:{line_number}"
        if self.options.strict:
            raise CommandError(f"{where}: {reason} (--strict)", exit_code=1)
        self.stats.rejected += 1
        if self.stats.rejected <= STDERR_REJECT_LIMIT:
            print(f"{where}: {reason}", file=self.stderr)
        elif self.stats.rejected == STDERR_REJECT_LIMIT + 1:
            print(
                f"{PROG}: more rejects are only written to {self.rejects.path.name}",
                file=self.stderr,
            )
        text = raw.decode("utf-8", errors="replace")[:RAW_LIMIT]
        self.rejects.write({"file": str(path), "line": line_number, "reason": reason, "raw": text})


@contextmanager
def _rare_cycle_collection() -> Iterator[None]:
    """Run Python's cycle collector rarely while scoring.

    Records are acyclic dicts and lists, freed by reference counting as soon as they are
    written; a collection every 700 allocations (the default) only re-walks them, and a full
    one re-walks every object the imports made (frozen here, so collections skip them).
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], GC_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _check_paths(options: ScoreOptions) -> None:
    """Fail early (exit 2) on unreadable inputs or an output that would overwrite an input."""
    for path in options.inputs:
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    if options.output.is_dir():
        raise CommandError(f"output {options.output} is a directory")
    inputs = {path.resolve() for path in options.inputs}
    for path in (options.output, rejects_path(options.output)):
        if path.resolve() in inputs:
            raise CommandError(f"output {path} would overwrite an input")
    try:
        options.output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot write {options.output}: {exc.strerror or exc}") from None


def _read(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        yield from iter_lines(path)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        return validate_im_record(parse_line(raw))
    except LineError as exc:
        raise _Rejected(str(exc)) from None
    except InvalidRecord as exc:
        raise _Rejected(f"invalid IM record: {exc}") from None


def _score(record: dict[str, Any], scaffold: str | None) -> tuple[dict[str, Any] | None, int, int]:
    """The record's `_score` and its (tool calls, error tool calls); scorer failures reject."""
    try:
        score, calls, errors = tqs_v2.score_and_count(record, scaffold=scaffold)
    except Exception as exc:
        raise _Rejected(f"scorer error: {type(exc).__name__}: {exc}") from exc
    return score, calls, errors
