"""`trajcurate convert`: any supported trajectory source -> IM records, bundle by bundle.

Inputs are detected by content (or `--format`), read into bundles (one per trial: main
record + subagent records), validated instance-aware (one bad record drops its whole
bundle), gated on `--instance-status`, and written with bundles contiguous, in a
deterministic order. Every input ends up written or in `OUT.rejects.jsonl` with a reason.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pipelines.outputs import (
    CommandError,
    atomic_jsonl_outputs,
    rejects_path,
    run_reporting_errors,
)
from scorers.im_validity import bundle_problem
from transforms.jsonl import JsonlWriter
from transforms.progress import Progress
from transforms.readers.bundle import Bundle, ReaderError
from transforms.readers.discover import ReadUnit, discover
from transforms.readers.registry import FORMATS, reader_for
from transforms.reward_gate import STATUSES, gate_reason, outcome

PROG = "trajcurate convert"
STDERR_REJECT_LIMIT = 50


@dataclass
class ConvertStats:
    bundles: int = 0
    written_bundles: int = 0
    with_warnings: int = 0
    main_records: int = 0
    subagent_records: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    by_format: Counter[str] = field(default_factory=Counter)
    by_agent: Counter[str] = field(default_factory=Counter)
    by_outcome: Counter[str] = field(default_factory=Counter)

    def render(self) -> str:
        lines = [
            f"bundles read     {self.bundles}",
            f"bundles written  {self.written_bundles} "
            f"({self.main_records} main + {self.subagent_records} subagent records; "
            f"{self.with_warnings} with warnings in _instance_metadata.warnings)",
            f"rejected         {sum(self.rejected.values())}"
            + "".join(f"\n  {stage:<14} {n}" for stage, n in sorted(self.rejected.items())),
        ]
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
        description="Convert every input to IM records, one bundle per trial.",
    )
    parser.add_argument("inputs", nargs="+", type=Path, metavar="PATH")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="OUT.jsonl")
    parser.add_argument("--format", choices=FORMATS, help="skip detection, read as this format")
    parser.add_argument(
        "--instance-status",
        choices=STATUSES,
        default="all",
        help="keep resolved, unresolved or all bundles (default: all)",
    )
    parser.add_argument("--reward-key", default="reward")
    parser.add_argument("--reward-threshold", type=float, default=1.0)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    stats = run_reporting_errors(PROG, lambda: convert(args, sys.stderr))
    if isinstance(stats, int):
        return stats
    print(f"{PROG}: {stats.written_bundles} bundles -> {args.output}")
    print(f"{PROG}: {sum(stats.rejected.values())} rejects -> {rejects_path(args.output)}")
    print(stats.render())
    return 0


def convert(args: argparse.Namespace, stderr: TextIO) -> ConvertStats:
    for path in args.inputs:
        if not path.exists():
            raise CommandError(f"cannot read {path}: no such file or directory")
    if args.output.is_dir():
        raise CommandError(f"output {args.output} is a directory")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    run_state = _Run(args, stderr)
    with atomic_jsonl_outputs(args.output, rejects_path(args.output)) as (records, rejects):
        run_state.records, run_state.rejects = records, rejects
        for unit in discover(args.inputs, args.format):
            run_state.handle_unit(unit)
    return run_state.stats


class _Run:
    def __init__(self, args: argparse.Namespace, stderr: TextIO) -> None:
        self.args = args
        self.stderr = stderr
        self.stats = ConvertStats()
        self.progress = Progress(stderr, PROG, every=1000)
        self.records: JsonlWriter
        self.rejects: JsonlWriter

    def handle_unit(self, unit: ReadUnit) -> None:
        if unit.format is None:
            self.reject("detect", str(unit.path), None, None, unit.refusal or "unsupported")
            return
        for bundle in self._bundles(unit):
            self.handle_bundle(bundle)

    def _bundles(self, unit: ReadUnit) -> Iterator[Bundle]:
        assert unit.format is not None
        try:
            yield from reader_for(unit.format)(unit.path)
        except ReaderError as exc:
            self.reject("read", str(unit.path), unit.format, None, str(exc))
        except Exception as exc:  # a reader bug must not lose the rest of the run
            reason = f"reader error: {type(exc).__name__}: {exc}"
            self.reject("read", str(unit.path), unit.format, None, reason)

    def handle_bundle(self, bundle: Bundle) -> None:
        stats = self.stats
        stats.bundles += 1
        stats.by_format[bundle["format"]] += 1
        stats.by_agent[_agent_name(bundle)] += 1
        result = outcome(bundle["rewards"], self.args.reward_key, self.args.reward_threshold)
        stats.by_outcome[result] += 1
        where = (bundle["source"], bundle["format"], bundle["instance_id"])
        if not bundle["records"]:
            first = next(iter(bundle["warnings"]), "no records")
            self.reject("read", *where, first.removeprefix("rejected: "))
        elif problem := bundle_problem(bundle["records"]):
            self.reject("validate", *where, problem)
        elif dropped := gate_reason(result, self.args.instance_status):
            self.reject("gate", *where, dropped)
        else:
            self._write(bundle)
        self.progress.update(stats.bundles)

    def _write(self, bundle: Bundle) -> None:
        self.stats.written_bundles += 1
        self.stats.with_warnings += 1 if bundle["warnings"] else 0
        for record in bundle["records"]:
            self.records.write(record)
            if record["meta_info"]["unique_info"].get("_agent_type") == "subagent":
                self.stats.subagent_records += 1
            else:
                self.stats.main_records += 1

    def reject(
        self, stage: str, source: str, fmt: str | None, instance: str | None, reason: str
    ) -> None:
        self.stats.rejected[stage] += 1
        if sum(self.stats.rejected.values()) <= STDERR_REJECT_LIMIT:
            label = f"{source} [{instance}]" if instance else source
            print(f"{label}: {stage}: {reason}", file=self.stderr)
        self.rejects.write(
            {
                "source": source,
                "format": fmt,
                "instance_id": instance,
                "stage": stage,
                "reason": reason,
            }
        )


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
