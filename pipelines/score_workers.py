"""`trajcurate score` on several CPUs: the inputs' records curated by worker processes side
by side, written as one process writes them.

The inputs are detected here, then cut into pieces in input order: an IM file of at least
`2 * MIN_SPAN_BYTES` into spans (`transforms/readers/im_spans.py`, cut between instances),
every other input whole. Each worker, forked from this process, takes a run of consecutive
pieces of about an equal share of the bytes. It first counts its spans' lines by instance
(the IM reader's first look) and sends the ids it found; only when no instance has lines
in two spans (`cut_problem`) are the workers told to go on. Each then takes its pieces
through the same chain as the plain loop (`CurationLoop`), into part files of its own; the
progress line counts what all of them have curated. When every worker is done, their parts
are appended to the outputs in order, and their counts and score statistics added up: the
records, rejects, dead letters, counts and summary are the ones one process gives, byte
for byte.

Two things are known only once the spans are read (`reading_problem`): that each span's
counts held to its end and that each held an IM record (the whole file's reader holds
rejected lines back until it has seen one). When the first look or the reading says the
spans cannot stand for the file, the file changed size while it was read, or a worker fails
(killed, out of memory), the parts are dropped and the run is done again in this process,
saying why on stderr: nothing is lost or written twice. `--workers 1`, `--strict` (which
stops at the first rejected line in input order) and a process allowed one CPU run in this
process from the start.
"""

from __future__ import annotations

import io
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, TextIO, TypeVar, cast

from pipelines.curate_loop import STDERR_DROP_LIMIT, CurationLoop, LoopCounts
from pipelines.score_summary import ScoreStats
from scorers.im import agent_type
from transforms.chain import REJECTED, Bundle, ChainSettings, Drop
from transforms.intake import open_unit
from transforms.jsonl import JsonlWriter
from transforms.progress import Progress
from transforms.read_ahead import usable_cores
from transforms.readers import im_jsonl
from transforms.readers.bundle import ReaderError
from transforms.readers.confined import ReadLimits, TrialFiles, wide_codec
from transforms.readers.discover import ReadUnit
from transforms.readers.im_spans import Span, cut_problem, reading_problem, split_spans
from transforms.readers.registry import Reader
from transforms.sinks.schema import im_record_line

__all__ = [
    "MIN_SPAN_BYTES",
    "WorkersFailed",
    "drops_to",
    "score_in_workers",
    "worker_count",
    "write_scored",
]

MIN_SPAN_BYTES = 4 * 2**20  # a span (and a share) smaller than this is not worth a process
POLL_SECONDS = 0.25  # how often the progress line is brought up to date while workers run
GO = "go"  # the run's word to a worker that the spans can be read apart
_T = TypeVar("_T")


class WorkersFailed(Exception):
    """The workers' parts cannot stand for the run (the message says why): run in-process.
    `quiet`: nothing failed, there was nothing to share (not worth a line on stderr)."""

    def __init__(self, reason: str, *, quiet: bool = False) -> None:
        super().__init__(reason)
        self.quiet = quiet


def worker_count(requested: int) -> int:
    """The worker processes for `--workers N`: N, or with 0 one per usable CPU."""
    return requested if requested > 0 else usable_cores()


def write_scored(bundle: Bundle, records: JsonlWriter, stats: ScoreStats) -> None:
    """Write a kept bundle's records and count them in `stats`."""
    for record, (calls, errors) in zip(bundle["records"], bundle["tool_call_counts"], strict=True):
        records.write_line(im_record_line(record))
        stats.add(agent_type(record), record["meta_info"]["unique_info"]["_score"], calls, errors)


@dataclass
class Piece:
    """A unit, or one span of an IM file unit; `first` is the unit's first piece."""

    unit: ReadUnit
    span: Span | None = None
    first: bool = True
    size: int = 0
    file_size: int = 0  # of a span's file, when it was cut


@dataclass
class _Done:
    counts: LoopCounts
    stats: ScoreStats
    spans: list[Span | None]
    echo: str
    lines: tuple[int, int, int]  # written to the records, rejects and dead-letter parts


def score_in_workers(
    paths: Sequence[str],
    settings: ChainSettings,
    limits: ReadLimits,
    outputs: Sequence[JsonlWriter],
    workers: int,
    stats: ScoreStats,
    stderr: TextIO | None,
    label: str,
) -> LoopCounts:
    """Score `paths` into `outputs` (records, rejects, dead letters) with up to `workers`
    processes (module docstring), adding to `stats`; the run's counts. WorkersFailed when
    the work cannot be shared (one piece) or what the workers did cannot stand for it."""
    echo = io.StringIO()
    records, rejects, dead = outputs
    detecting = CurationLoop(settings, limits, _unused, drops_to(rejects, dead), stderr=echo)
    pieces = _pieces(detecting.detect(paths, "im"), workers, limits)
    shares = _shares(pieces, workers)
    if len(shares) < 2 or sum(piece.size for piece in pieces) < 2 * MIN_SPAN_BYTES:
        raise WorkersFailed("too little work to share", quiet=True)
    for writer in outputs:  # nothing buffered here for a forked worker to write again
        writer.flush()
    try:
        done = _run_workers(pieces, shares, settings, limits, records.path, stderr, label)
        _take_spans(shares, [result.spans for result in done])
        _check_spans(pieces, reading_problem)
        _check_unchanged(pieces)
        counts = detecting.counts
        for index, result in enumerate(done):
            parts = _part_paths(records.path, index)
            for writer, part, lines in zip(outputs, parts, result.lines, strict=True):
                writer.append_file(part, lines)
            _add_counts(counts, result.counts)
            stats.merge(result.stats)
    finally:
        for index in range(len(shares)):
            for part in _part_paths(records.path, index):
                part.unlink(missing_ok=True)
    counts.stages["open.in"] -= sum(not piece.first for piece in pieces)
    if stderr is not None:
        echoed = "".join([echo.getvalue(), *(result.echo for result in done)])
        shown = echoed.splitlines(keepends=True)[:STDERR_DROP_LIMIT]
        stderr.write("".join(shown))
    return counts


def drops_to(rejects: JsonlWriter, dead: JsonlWriter) -> Callable[[Drop], None]:
    """Where a drop goes: a reject to `rejects`, a dead letter to `dead`."""

    def drop(item: Drop) -> None:
        (rejects if item.kind == REJECTED else dead).write(item.record)

    return drop


def _unused(bundle: Bundle) -> None:
    raise AssertionError("the detecting loop curates nothing")


def _pieces(units: list[ReadUnit], workers: int, limits: ReadLimits) -> list[Piece]:
    """Every unit as one piece, or an IM file big enough to share as its spans."""
    pieces: list[Piece] = []
    for unit in units:
        size = _size(unit.path)
        parts = min(workers, size // MIN_SPAN_BYTES)
        spans = _spans(unit, parts, limits) if unit.format == "im" and parts > 1 else []
        if len(spans) < 2:
            pieces.append(Piece(unit, size=size))
            continue
        pieces.extend(
            Piece(unit, span, n == 0, span.stop - span.start, spans[-1].stop)
            for n, span in enumerate(spans)
        )
    return pieces


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # it is read (and refused) as one piece


def _spans(unit: ReadUnit, parts: int, limits: ReadLimits) -> list[Span]:
    """The spans of an IM file; none for one in UTF-16/32 (decoded whole by its reader) or
    one that cannot be opened (read whole, and refused there, with the reason)."""
    try:
        with TrialFiles.for_input(unit.path, limits).open_stream(unit.path) as handle:
            if wide_codec(handle.read(4)) is not None:
                return []
            return split_spans(handle, parts, limits.max_file_bytes)
    except (OSError, ReaderError):
        return []


def _shares(pieces: list[Piece], workers: int) -> list[list[Piece]]:
    """The pieces in order, cut into at most `workers` runs of about equal bytes."""
    total = sum(piece.size for piece in pieces) or 1
    shares: list[list[Piece]] = [[] for _ in range(workers)]
    before = 0
    for piece in pieces:
        middle = before + piece.size / 2
        shares[min(int(middle * workers / total), workers - 1)].append(piece)
        before += piece.size
    return [share for share in shares if share]


def _take_spans(shares: list[list[Piece]], spans: list[list[Span | None]]) -> None:
    """The spans as the workers sent them back (their ids, counts held, records read)."""
    for share, sent in zip(shares, spans, strict=True):
        for piece, span in zip(share, sent, strict=True):
            piece.span = span


def _check_spans(pieces: list[Piece], problem_of: Callable[[list[Span]], str | None]) -> None:
    """WorkersFailed when `problem_of` the spans of a unit says why they cannot stand for
    its reading (`im_spans.cut_problem`, `reading_problem`)."""
    by_unit: dict[int, list[Span]] = {}  # by the unit itself: a file given twice is two units
    for piece in pieces:
        if piece.span is not None:
            by_unit.setdefault(id(piece.unit), []).append(piece.span)
    for piece in pieces:
        problem = problem_of(by_unit.pop(id(piece.unit), []))
        if problem is not None:
            raise WorkersFailed(f"{piece.unit.path}: {problem}")


def _check_unchanged(pieces: list[Piece]) -> None:
    """WorkersFailed when a file read by spans is no longer the size it was cut at (lines
    appended since would be missing: one process reads to the end)."""
    for piece in pieces:
        if piece.span is not None and _size(piece.unit.path) != piece.file_size:
            raise WorkersFailed(f"{piece.unit.path}: it changed while it was read")


def _part_paths(output: Path, index: int) -> tuple[Path, Path, Path]:
    """Worker `index`'s records, rejects and dead letters, beside the output being written."""
    stem = f"{output.name}.w{index}"
    return (
        output.with_name(f"{stem}.records"),
        output.with_name(f"{stem}.rejects"),
        output.with_name(f"{stem}.dead"),
    )


def _run_workers(
    pieces: list[Piece],
    shares: list[list[Piece]],
    settings: ChainSettings,
    limits: ReadLimits,
    output: Path,
    stderr: TextIO | None,
    label: str,
) -> list[_Done]:
    """Fork a worker per share and return what each sent back, in order; WorkersFailed when
    one did not, or when the first look at the spans (each worker's at its own) finds that
    they cannot be read apart: then no worker goes on to curate. Every worker is stopped and
    reaped on the way out: one that has sent its result has closed its parts, and stopping it
    only skips its teardown."""
    context = get_context("fork")
    counters = context.RawArray("q", len(shares))
    started = []
    for stream in (sys.stdout, sys.stderr):  # what is buffered here is not written twice
        stream.flush()
    try:
        for index, share in enumerate(shares):
            ours, theirs = context.Pipe()
            job = _Job(index, share, settings, limits, _part_paths(output, index), counters)
            process = context.Process(target=_work, args=(job, theirs), daemon=True)
            process.start()
            theirs.close()
            started.append((process, ours))
        connections = [connection for _, connection in started]
        _take_spans(shares, _receive_all(connections, list))
        _check_spans(pieces, cut_problem)
        for connection in connections:
            connection.send(GO)
        progress = None if stderr is None else Progress(stderr, label, 1000)
        done = _receive_all(connections, _Done, progress, counters)
        if progress is not None:
            progress.close()
        return done
    finally:
        for process, connection in started:
            connection.close()
            if process.is_alive():
                process.kill()
            process.join()


def _receive_all(
    connections: list[Connection],
    kind: type[_T],
    progress: Progress | None = None,
    counters: Any = None,
) -> list[_T]:
    """One message of type `kind` from each worker, in order, bringing `progress` up to date
    with `counters` meanwhile; WorkersFailed when a worker sends why it failed, or dies."""
    received: dict[int, _T] = {}
    waiting = list(connections)
    while waiting:
        for ready in wait(waiting, timeout=POLL_SECONDS):
            connection = cast(Connection, ready)
            waiting.remove(connection)
            received[id(connection)] = _message(connection, kind)
        if progress is not None:
            progress.update(sum(counters))
    return [received[id(connection)] for connection in connections]


def _message(connection: Connection, kind: type[_T]) -> _T:
    try:
        message = connection.recv()
    except (EOFError, OSError):
        raise WorkersFailed("a worker stopped before it was done") from None
    if isinstance(message, str):
        raise WorkersFailed(f"a worker failed: {message}")
    assert isinstance(message, kind)
    return message


class _SharedCount:
    """A worker's progress: its count of curated bundles, where the run reads it."""

    def __init__(self, counters: Any, index: int) -> None:
        self._counters = counters
        self._index = index

    def update(self, done: int) -> None:
        self._counters[self._index] = done

    def close(self) -> None:
        pass


@dataclass
class _Job:
    """What a worker is given: its place among the workers, its pieces, the chain, its
    part files and the run's progress counters."""

    index: int
    share: list[Piece]
    settings: ChainSettings
    limits: ReadLimits
    parts: tuple[Path, Path, Path]
    counters: Any


def _work(job: _Job, connection: Connection) -> None:
    """A worker: the first look at its spans, sent to the run (the spans with their ids);
    then, if the run says go on, the chain over its pieces into its part files, and a
    `_Done` sent back. Why it failed, as text, in place of either."""
    try:
        for piece in job.share:
            if piece.span is not None:
                im_jsonl.look_at_span(piece.unit.path, piece.span, job.limits)
        connection.send([piece.span for piece in job.share])
        if connection.recv() == GO:
            connection.send(_curate_share(job))
    except BaseException as exc:  # the run reads this as the worker's failure
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" ({last[0].filename}:{last[0].lineno})" if last else ""
        connection.send(f"{type(exc).__name__}: {exc}{where}")
    finally:
        connection.close()


def _curate_share(job: _Job) -> _Done:
    stats = ScoreStats()
    echo = io.StringIO()
    records, rejects, dead = (JsonlWriter(part) for part in job.parts)
    with records, rejects, dead:
        write = partial(write_scored, records=records, stats=stats)
        loop = CurationLoop(job.settings, job.limits, write, drops_to(rejects, dead), stderr=echo)
        loop.progress = _SharedCount(job.counters, job.index)
        loop.curate_opened(_opened(job.share, job.limits))
    spans = [piece.span for piece in job.share]
    lines = (records.count, rejects.count, dead.count)
    return _Done(loop.counts, stats, spans, echo.getvalue(), lines)


def _opened(share: list[Piece], limits: ReadLimits) -> Iterator[Iterator[Bundle | Drop]]:
    for piece in share:
        reader = None if piece.span is None else partial(im_jsonl.read, span=piece.span)
        yield open_unit(piece.unit, limits, cast(Reader | None, reader))


def _add_counts(total: LoopCounts, counts: LoopCounts) -> None:
    total.stages.update(counts.stages)
    for job, job_counts in counts.jobs.items():
        total.jobs.setdefault(job, Counter()).update(job_counts)
