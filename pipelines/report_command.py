"""`trajcurate report OUTPUT_DIR [-o DIR]`: a static report of a run's output folder.

Reads each job's `manifest.json`, `rejects.jsonl`, `dead_letter.jsonl`, `scores.jsonl` (the
sidecar, see `transforms.report`) and the examples' records from `im.jsonl`; writes
`index.html` + `assets/` into `-o DIR` (default `OUTPUT_DIR/report`). Exit 0 when written,
2 for usage errors (a missing folder, a bad option, matplotlib not installed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pipelines.chain_options import Option, options_by_name

__all__ = ["REPORT_OPTIONS", "add_parser", "run"]

PROG = "trajcurate report"
REPORT_OPTIONS = options_by_name(
    Option(
        "examples", int, 3, "lowest resolved trials shown per segment", low=0, high=50, metavar="N"
    ),
    Option(
        "threshold",
        float,
        None,
        "threshold marked and preset in the explorer (default: the run's --min-score, else 0.5)",
        low=0.0,
        high=1.0,
        metavar="X",
    ),
    Option(
        "resamples",
        int,
        500,
        "bootstrap resamples of each AUROC interval",
        low=100,
        high=100000,
        metavar="B",
    ),
    Option("seed", int, 0, "seed of the bootstrap", low=0, high=2**32 - 1, metavar="S"),
)


def add_parser(subcommands: Any) -> None:
    """Register `report` on the `trajcurate` subcommand parser."""
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "report",
        help="build a static HTML report of a run's output",
        description="Build a self-contained static report (index.html + assets/) of a run.",
    )
    parser.add_argument("output", type=Path, metavar="OUTPUT_DIR", help="a run's --output")
    parser.add_argument(
        "-o",
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="where to write the report (default: OUTPUT_DIR/report)",
    )
    for option in REPORT_OPTIONS.values():
        option.add_to(parser, option.default)
    parser.set_defaults(handler=run)


def job_folder_conflict(target: Path, output: Path) -> str | None:
    """Why the report may not go to `target`: it is, or is inside, one of the run's job
    folders (a job named `report`), which the report would overwrite; else None."""
    output_real = output.resolve()
    if not target.resolve().is_relative_to(output_real):
        return None
    for folder in (target, *target.parents):
        if folder.resolve() == output_real:
            break
        if (folder / "manifest.json").is_file() or (folder / "im.jsonl").is_file():
            return (
                f"{target} is inside the job folder {folder} (a job of the run is named "
                f"{folder.name!r}); give the report a folder of its own: --out DIR"
            )
    return None


def run(args: argparse.Namespace) -> int:
    try:
        import matplotlib  # noqa: F401  (checked here for a one-line error)

        from transforms.report.build import ReportSettings, build_report
        from transforms.report.inputs import ReportInputError
    except ModuleNotFoundError as exc:
        print(
            f"{PROG}: error: {exc.name} is not installed: pip install 'trajcurate[report]'",
            file=sys.stderr,
        )
        return 2
    output: Path = args.output
    target: Path = args.out or output / "report"
    if (conflict := job_folder_conflict(target, output)) is not None:
        print(f"{PROG}: error: {conflict}", file=sys.stderr)
        return 2
    settings = ReportSettings(args.examples, args.threshold, args.resamples, args.seed)
    try:
        result = build_report(output, target, settings)
    except ReportInputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a malformed scores.jsonl line names its file and line
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: error: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 2
    print(
        f"{PROG}: {result.rows} trials, {result.examples} examples -> "
        f"{result.folder / 'index.html'} ({result.bytes / 2**20:.2f} MiB, "
        f"{result.seconds:.1f} s)"
    )
    return 0
