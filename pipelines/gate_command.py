"""`trajcurate gate`: a CI quality gate on `trajectory_score`.

    trajcurate gate RUN_DIR... --min-trajectory-score X [--diagnose-profile FILE]

Reads a run's output folder (or IM files; `pipelines/diagnosis_runs.py`), diagnoses the
records that carry no `_diagnosis` yet, and prints one line per main-record run whose
`trajectory_score` is below X, with what lowered it most (the largest process penalty, or
the weakest orchestration dimension). Exit 0 when every run passes, 1 when one fails, 2 for
usage errors and for lines that cannot be read (a gate cannot vouch for what it did not see).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pipelines.chain_options import CHAIN_OPTIONS, ConfigError
from pipelines.diagnose_options import DIAGNOSE_PROFILE, MIN_TRAJECTORY_SCORE, diagnose_settings
from pipelines.diagnosis_runs import ResultSet, Run, read_result_set
from pipelines.outputs import run_reporting_errors
from scorers.diagnose import top_contributor

PROG = "trajcurate gate"
SHOWN_PROBLEMS = 20


def add_parser(subcommands: Any) -> None:
    """Register `gate` on the `trajcurate` subcommand parser."""
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "gate",
        help="fail (exit 1) when a run's trajectory_score is below a threshold",
        description="A CI gate: diagnose a run's outputs (records without _diagnosis are "
        "diagnosed on the fly) and fail when a main record's trajectory_score is below "
        "--min-trajectory-score, naming what lowered it most.",
    )
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    MIN_TRAJECTORY_SCORE.add_to(parser, None)
    DIAGNOSE_PROFILE.add_to(parser, None)
    CHAIN_OPTIONS["scaffold"].add_to(parser, None)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.min_trajectory_score is None:
        print(f"{PROG}: error: {MIN_TRAJECTORY_SCORE.flag} X is required", file=sys.stderr)
        return 2
    try:
        settings = diagnose_settings(vars(args))
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    result = run_reporting_errors(PROG, lambda: read_result_set(args.runs, settings))
    if isinstance(result, int):
        return result
    return report(result, args.min_trajectory_score)


def failing(runs: list[Run], threshold: float) -> list[Run]:
    """The runs below the threshold, lowest first (then by job and instance)."""
    below = [r for r in runs if r.diagnosis["trajectory_score"] < threshold]
    return sorted(below, key=lambda r: (r.diagnosis["trajectory_score"], r.job, r.instance_id))


def report(result: ResultSet, threshold: float) -> int:
    """Print the failing runs and the verdict; the exit code."""
    for problem in result.problems[:SHOWN_PROBLEMS]:
        print(f"{PROG}: unreadable: {problem}", file=sys.stderr)
    below = failing(result.runs, threshold)
    for item in below:
        score = item.diagnosis["trajectory_score"]
        print(
            f"FAIL {item.job}/{item.instance_id}: trajectory_score {score:.4f} < {threshold:g}:"
            f" {top_contributor(item.diagnosis)}"
        )
    lowest = min((r.diagnosis["trajectory_score"] for r in result.runs), default=None)
    lowest_text = "" if lowest is None else f", lowest {lowest:.4f}"
    print(
        f"{PROG}: {len(result.runs)} runs, {len(below)} below {threshold:g}{lowest_text}"
        f" ({result.files} files)"
    )
    if result.problems:
        print(f"{PROG}: error: {len(result.problems)} unreadable line(s)", file=sys.stderr)
        return 2
    if not result.runs:
        print(f"{PROG}: error: no main-agent record to gate", file=sys.stderr)
        return 2
    return 1 if below else 0
