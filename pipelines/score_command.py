"""`trajcurate score`: put a TQS V2 `_score` on every IM record of JSONL files.

The records go through the curation chain of the pipeline, in a plain loop
(`pipelines/curate_loop.py`): read as IM bundles (lines grouped by `_instance_id`), gate
(`all` by default here), clean, validate, redact, score, filter. Records are written back
in input order (instances contiguous, as trajcurate writes them) with
`meta_info.unique_info._score` set (null for subagent records) and every other key and the
key order unchanged. A line that is not JSON or not an IM record rejects its instance: the
reason (`FILE:LINE: reason`) goes to stderr and to `<OUTPUT minus .jsonl>.rejects.jsonl`; a
crash (the scorer failing on a record) dead-letters it to `.dead_letter.jsonl`. Both files
are always written, empty when nothing was dropped, so a stale one never survives a rerun.
Everything is written under a `.partial` name and renamed at the end, so a failed run
leaves no half-written output.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from pipelines.chain_options import (
    CURATION_OPTIONS,
    add_chain_arguments,
    chain_settings,
    read_limits,
)
from pipelines.collector import set_up_frozen
from pipelines.curate_loop import CurationLoop, LoopCounts
from pipelines.outputs import (
    CommandError,
    atomic_jsonl_outputs,
    dead_letters_path,
    rejects_path,
    run_reporting_errors,
)
from pipelines.score_summary import ScoreStats
from pipelines.score_workers import (
    WorkersFailed,
    drops_to,
    score_in_workers,
    worker_count,
    write_scored,
)
from transforms.chain import Bundle, ChainSettings, Drop
from transforms.jsonl import JsonlWriter
from transforms.readers.confined import ReadLimits

__all__ = ["CommandError", "ScoreOptions", "add_parser", "rejects_path", "run", "score_files"]

PROG = "trajcurate score"
SCORE_OPTIONS = ("scaffold", *CURATION_OPTIONS)  # also `diagnose`'s, which has no workers


@dataclass(frozen=True)
class ScoreOptions:
    inputs: tuple[Path, ...]
    output: Path
    settings: ChainSettings = field(
        default_factory=lambda: ChainSettings(instance_status="all", trainable="mark")
    )
    limits: ReadLimits = field(default_factory=ReadLimits)
    strict: bool = False
    workers: int = 1  # processes (`score_workers.py`); 1: this process only


def add_parser(subcommands: Any) -> None:
    """Register `score` on the `trajcurate` subcommand parser."""
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "score",
        help="score IM records with TQS V2",
        description="Set meta_info.unique_info._score on every IM record (TQS V2), through "
        "the curation chain of `trajcurate run`.",
    )
    parser.add_argument("inputs", nargs="+", type=Path, metavar="INPUT.jsonl")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="OUTPUT.jsonl")
    add_chain_arguments(parser, (*SCORE_OPTIONS, "workers"), {"instance_status": "all"})
    parser.add_argument(
        "--strict", action="store_true", help="stop with exit 1 at the first rejected line"
    )
    parser.set_defaults(handler=run)


def scoring_settings(values: dict[str, Any]) -> ChainSettings:
    """The chain of `score` (and `diagnose`): a record that cannot be SFT data is still
    scored and written, its `_trainable` saying why (`run` rejects it instead)."""
    return replace(chain_settings(values), trainable="mark")


def run(args: argparse.Namespace) -> int:
    values = vars(args)
    options = ScoreOptions(
        tuple(args.inputs),
        args.output,
        scoring_settings(values),
        read_limits(values),
        args.strict,
        worker_count(args.workers),
    )
    stats = run_reporting_errors(PROG, lambda: score_files(options, sys.stderr))
    if isinstance(stats, int):
        return stats
    print(f"{PROG}: {stats.records} records -> {options.output}")
    print(f"{PROG}: {stats.rejected} rejected -> {rejects_path(options.output)}")
    print(f"{PROG}: {stats.dead_lettered} dead-lettered -> {dead_letters_path(options.output)}")
    print(stats.render())
    return 0 if stats.balanced else 1


def score_files(options: ScoreOptions, stderr: TextIO) -> ScoreStats:
    """Score every input record into `options.output`; return the run's stats."""
    counts = None
    if options.workers > 1 and not options.strict:
        stats, counts = _score_in_workers(options, stderr)
    if counts is None:
        stats = ScoreStats()
        counts = curate_im_files(options, partial(write_scored, stats=stats), PROG, stderr)
    acc = counts.accounting()
    stats.rejected, stats.dead_lettered = acc["rejected"], acc["dead_lettered"]
    stats.balanced = acc["balanced"]
    stats.drops = {**counts.drops_by_stage("rejected"), **counts.drops_by_stage("dead_letter")}
    stats.accounting_line = counts.render_accounting()
    return stats


def _score_in_workers(
    options: ScoreOptions, stderr: TextIO
) -> tuple[ScoreStats, LoopCounts | None]:
    """The run in worker processes (`score_workers.py`); no counts when it must be done in
    this process instead (said on stderr, unless there was too little work to share)."""
    stats = ScoreStats()
    check_paths(options)
    try:
        with _outputs(options) as outputs, _no_cycle_collection():
            paths = [str(p) for p in options.inputs]
            counts = score_in_workers(
                paths,
                options.settings,
                options.limits,
                outputs,
                options.workers,
                stats,
                stderr,
                PROG,
            )
    except WorkersFailed as exc:
        if not exc.quiet:
            print(f"{PROG}: scoring in one process: {exc}", file=stderr)
        return stats, None
    return stats, counts


def curate_im_files(
    options: ScoreOptions,
    write: Callable[[Bundle, JsonlWriter], None],
    label: str,
    stderr: TextIO | None,
) -> LoopCounts:
    """The plain loop of the IM-file commands (`score`, `diagnose`): the chain of
    `options.settings` over every input, kept bundles to `write`, drops to the rejects and
    dead-letter files (or exit 1 with `--strict`), all published only when the run completes.
    Returns the loop's counts."""
    check_paths(options)
    with _outputs(options) as (records, rejects, dead), _no_cycle_collection():
        to_files = drops_to(rejects, dead)

        def drop(item: Drop) -> None:
            if options.strict:
                what = item.record.get("reason") or item.record.get("error")
                raise CommandError(f"{what} (--strict)", exit_code=1)
            to_files(item)

        loop = CurationLoop(
            options.settings,
            options.limits,
            write=lambda bundle: write(bundle, records),
            drop=drop,
            stderr=stderr,
            label=label,
        )
        return loop.run([str(p) for p in options.inputs], "im")


def _outputs(options: ScoreOptions) -> AbstractContextManager[tuple[JsonlWriter, ...]]:
    """The records, rejects and dead-letter writers, published together at the end."""
    output = options.output
    return atomic_jsonl_outputs(output, rejects_path(output), dead_letters_path(output))


def _no_cycle_collection() -> AbstractContextManager[None]:
    """Run without Python's cycle collector while scoring.

    Records are acyclic dicts and lists and the chain makes no reference cycles (the TQS V2
    trajectory neither: `tests/test_score_cli.py` checks that a scored bundle leaves no
    cyclic garbage), so reference counting frees everything as soon as it is written. The
    collector would only re-walk every record the reader holds: an IM file's instances wait
    in the reader until it knows they are complete, and each collection traversed all of
    them (0.6 s of the 7,850-record benchmark's 5 s). What the imports made is frozen;
    anything cyclic left at the end is collected when the collector runs again.
    """
    return set_up_frozen(collect_cycles=False)


def check_paths(options: ScoreOptions) -> None:
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
    for path in (options.output, rejects_path(options.output), dead_letters_path(options.output)):
        if path.resolve() in inputs:
            raise CommandError(f"output {path} would overwrite an input")
    try:
        options.output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot write {options.output}: {exc.strerror or exc}") from None
