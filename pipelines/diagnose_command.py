"""`trajcurate diagnose`: put a `_diagnosis` on every IM record of JSONL files.

The records go through the curation chain of `trajcurate score` in the same plain loop (read
as IM bundles, gate `all` by default, validate, redact, score, clean, filter) with one more
stage, `diagnose` (`transforms/diagnose_step.py`), right after `score`: every record comes
out with `meta_info.unique_info._score` and `_diagnosis` set, in input order. Rejects and
dead letters go where `score` puts them (`<OUTPUT minus .jsonl>.rejects.jsonl`,
`.dead_letter.jsonl`, always written), everything under `.partial` names renamed at the end.
The summary adds the mean `trajectory_score` / `task_completion_score` of the main records
and how often each detector fired.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from pipelines.chain_options import ConfigError, add_chain_arguments, read_limits
from pipelines.diagnose_options import DIAGNOSE_PROFILE, diagnose_settings
from pipelines.outputs import (
    dead_letters_path,
    rejects_path,
    run_reporting_errors,
)
from pipelines.score_command import SCORE_OPTIONS, ScoreOptions, curate_im_files, scoring_settings
from scorers.im import agent_type
from transforms.chain import Bundle
from transforms.diagnose_step import DiagnoseSettings
from transforms.jsonl import JsonlWriter
from transforms.sinks.schema import im_record_line

__all__ = ["DiagnoseStats", "add_parser", "diagnose_files", "run"]

PROG = "trajcurate diagnose"


@dataclass
class DiagnoseStats:
    """Records written, drops, and the diagnosis of the main records."""

    records: int = 0
    main: int = 0
    rejected: int = 0
    dead_lettered: int = 0
    balanced: bool = True
    accounting_line: str = ""
    trajectory_sum: float = 0.0
    completion_sum: float = 0.0
    fired: Counter[str] = field(default_factory=Counter)

    def add(self, record: dict[str, Any]) -> None:
        self.records += 1
        if agent_type(record) != "main":
            return
        diagnosis = record["meta_info"]["unique_info"]["_diagnosis"]
        self.main += 1
        self.trajectory_sum += diagnosis["trajectory_score"]
        self.completion_sum += diagnosis["task_completion_score"] or 0.0
        self.fired.update({d["detector"] for d in diagnosis["detections"]})

    def render(self) -> str:
        if not self.main:
            return "no main-agent record diagnosed"
        lines = [
            f"main records          {self.main}",
            f"mean trajectory_score {self.trajectory_sum / self.main:.4f}",
            f"mean task_completion  {self.completion_sum / self.main:.4f}",
            "detectors fired (share of main records)",
        ]
        for name, count in sorted(self.fired.items(), key=lambda item: (-item[1], item[0])):
            lines.append(f"  {name:<24} {count:>6}  {count / self.main:6.1%}")
        return "\n".join(lines)


def add_parser(subcommands: Any) -> None:
    """Register `diagnose` on the `trajcurate` subcommand parser."""
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "diagnose",
        help="diagnose IM records: detectors, trajectory_score, task_completion_score",
        description="Set meta_info.unique_info._diagnosis (and _score) on every IM record, "
        "through the curation chain of `trajcurate score`.",
    )
    parser.add_argument("inputs", nargs="+", type=Path, metavar="INPUT.jsonl")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="OUTPUT.jsonl")
    add_chain_arguments(parser, SCORE_OPTIONS, {"instance_status": "all"})
    DIAGNOSE_PROFILE.add_to(parser, None)
    parser.add_argument(
        "--strict", action="store_true", help="stop with exit 1 at the first rejected line"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    values = vars(args)
    try:
        settings = diagnose_settings(values)
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    options = ScoreOptions(
        tuple(args.inputs), args.output, scoring_settings(values), read_limits(values), args.strict
    )
    stats = run_reporting_errors(PROG, lambda: diagnose_files(options, settings, sys.stderr))
    if isinstance(stats, int):
        return stats
    print(f"{PROG}: {stats.records} records -> {options.output}")
    print(f"{PROG}: {stats.rejected} rejected -> {rejects_path(options.output)}")
    print(f"{PROG}: {stats.dead_lettered} dead-lettered -> {dead_letters_path(options.output)}")
    print(stats.accounting_line)
    print(stats.render())
    return 0 if stats.balanced else 1


def diagnose_files(
    options: ScoreOptions, settings: DiagnoseSettings, stderr: TextIO | None
) -> DiagnoseStats:
    """Diagnose every input record into `options.output`; return the run's stats."""
    stats = DiagnoseStats()
    with_diagnosis = replace(options, settings=replace(options.settings, diagnose=settings))
    counts = curate_im_files(
        with_diagnosis, lambda bundle, records: _write(bundle, records, stats), PROG, stderr
    )
    acc = counts.accounting()
    stats.rejected, stats.dead_lettered = acc["rejected"], acc["dead_lettered"]
    stats.balanced = acc["balanced"]
    stats.accounting_line = counts.render_accounting()
    return stats


def _write(bundle: Bundle, records: JsonlWriter, stats: DiagnoseStats) -> None:
    for record in bundle["records"]:
        records.write_line(im_record_line(record))
        stats.add(record)
