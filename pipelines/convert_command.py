"""`trajcurate convert`: any supported trajectory source -> IM records, bundle by bundle.

Inputs are detected by content (or `--format`) and read into bundles (one per trial: main
record + subagent records), which then go through the curation chain of the pipeline, in a
plain loop (`pipelines/curate_loop.py`): read check, gate (`--instance-status`, `all` by
default here), clean, validate (one bad record drops its whole bundle), redact, score,
filter. Records are written with bundles contiguous, in a deterministic order. Every input
ends up written, in `OUT.rejects.jsonl` with its stage and reason, or in
`OUT.dead_letter.jsonl` with the error: in = written + rejected + dead-lettered.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pipelines.chain_options import (
    CURATION_OPTIONS,
    add_chain_arguments,
    chain_settings,
    read_limits,
)
from pipelines.curate_loop import CurationLoop, LoopCounts
from pipelines.outputs import (
    CommandError,
    atomic_jsonl_outputs,
    dead_letters_path,
    rejects_path,
    run_reporting_errors,
)
from transforms import read_ahead
from transforms.chain import REJECTED, Bundle
from transforms.jsonl import JsonlWriter
from transforms.reward_gate import outcome
from transforms.sinks.schema import im_record_line

PROG = "trajcurate convert"
CONVERT_OPTIONS = ("input_format", *CURATION_OPTIONS, "read_ahead")


@dataclass
class ConvertStats:
    counts: LoopCounts = field(default_factory=LoopCounts)
    with_warnings: int = 0
    by_format: Counter[str] = field(default_factory=Counter)
    by_agent: Counter[str] = field(default_factory=Counter)
    by_outcome: Counter[str] = field(default_factory=Counter)

    @property
    def written_bundles(self) -> int:
        return self.counts.totals()["written"]

    def render(self) -> str:
        totals = self.counts.totals()
        acc = self.counts.accounting()
        rejected = self.counts.drops_by_stage(REJECTED)
        dead = self.counts.drops_by_stage("dead_letter")
        lines = [
            f"bundles read     {totals['read']}",
            f"bundles written  {acc['written']} "
            f"({totals['records.main']} main + {totals['records.subagent']} subagent records; "
            f"{self.with_warnings} with warnings in _instance_metadata.warnings)",
            f"rejected         {acc['rejected']}"
            + "".join(f"\n  {stage:<14} {n}" for stage, n in rejected.items()),
            f"dead-lettered    {acc['dead_lettered']}"
            + "".join(f"\n  {stage:<14} {n}" for stage, n in dead.items()),
            self.counts.render_accounting(),
        ]
        tallies = {
            k: v
            for k, v in sorted(totals.items())
            if k.startswith(("redacted.", "cleaned.", "system_prompt."))
        }
        if tallies:
            lines.append("cleaned, redacted and system prompts set")
            lines.extend(f"  {name:<32} {n}" for name, n in tallies.items())
        for title, counter in (
            ("by format", self.by_format),
            ("by agent", self.by_agent),
            ("by outcome", self.by_outcome),
        ):
            lines.append(title)
            lines.extend(f"  {name:<22} {n}" for name, n in sorted(counter.items()))
        return "\n".join(lines)


def add_parser(subcommands: Any) -> None:
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "convert",
        help="convert trajectories (Harbor jobs, ATIF, native logs, IM) to IM records",
        description="Convert every input to IM records, one bundle per trial, through the "
        "curation chain of `trajcurate run`.",
    )
    parser.add_argument("inputs", nargs="+", type=Path, metavar="PATH")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="OUT.jsonl")
    add_chain_arguments(parser, CONVERT_OPTIONS, {"instance_status": "all"})
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with read_ahead.helper_for(args.read_ahead):  # forked first, while no thread is alive
        stats = run_reporting_errors(PROG, lambda: convert(args, sys.stderr))
        opened = read_ahead.opened_line()
    if isinstance(stats, int):
        return stats
    acc = stats.counts.accounting()
    print(f"{PROG}: {acc['written']} bundles -> {args.output}")
    print(f"{PROG}: {acc['rejected']} rejects -> {rejects_path(args.output)}")
    print(f"{PROG}: {acc['dead_lettered']} dead letters -> {dead_letters_path(args.output)}")
    print(stats.render())
    if opened:
        print(opened)
    return 0 if acc["balanced"] else 1


def convert(args: argparse.Namespace, stderr: TextIO) -> ConvertStats:
    for path in args.inputs:
        if not path.exists():
            raise CommandError(f"cannot read {path}: no such file or directory")
    if args.output.is_dir():
        raise CommandError(f"output {args.output} is a directory")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    values = vars(args)
    stats = ConvertStats()
    outputs = (args.output, rejects_path(args.output), dead_letters_path(args.output))
    with atomic_jsonl_outputs(*outputs) as (records, rejects, dead):
        loop = CurationLoop(
            chain_settings(values),
            read_limits(values),
            write=lambda bundle: _write(bundle, records, stats),
            drop=lambda item: (rejects if item.kind == REJECTED else dead).write(item.record),
            on_read=lambda bundle: _note_read(bundle, stats, args),
            stderr=stderr,
            label=PROG,
            by_unit=True,
        )
        stats.counts = loop.run([str(p) for p in args.inputs], args.input_format)
    return stats


def _note_read(bundle: Bundle, stats: ConvertStats, args: argparse.Namespace) -> None:
    stats.by_format[bundle["format"]] += 1
    stats.by_agent[_agent_name(bundle)] += 1
    stats.by_outcome[outcome(bundle["rewards"], args.reward_key, args.reward_threshold)] += 1


def _write(bundle: Bundle, records: JsonlWriter, stats: ConvertStats) -> None:
    stats.with_warnings += 1 if bundle["warnings"] else 0
    for record in bundle["records"]:
        records.write_line(im_record_line(record))


def _agent_name(bundle: Bundle) -> str:
    agent = bundle["metadata"].get("agent")
    if isinstance(agent, dict) and agent.get("name"):
        return str(agent["name"])
    for record in bundle["records"]:
        meta = record["meta_info"]["unique_info"].get("_instance_metadata") or {}
        recorded = (meta.get("agent") or {}).get("name") if isinstance(meta, dict) else None
        if recorded:
            return str(recorded)
    return "unknown"
