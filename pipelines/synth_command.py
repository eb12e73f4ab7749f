"""`trajcurate synth`: write deterministic synthetic Harbor jobs for demos and benchmarks.

`--jobs J --trials N` writes J job folders of N trials each into an empty `--out` folder;
the same `--seed` always writes the same bytes. `--bad-share` of each job's trials get a
damaged agent file (or lose their agent folder). Progress goes to stdout every 1000
trials, then a summary by agent, format, run profile, reward and bad-file kind.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from pipelines.synth import MANIFEST, SynthError, SynthOptions, generate

__all__ = ["add_parser", "run"]

PROG = "trajcurate synth"


def add_parser(subcommands: Any) -> None:
    """Register `synth` on the `trajcurate` subcommand parser."""
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "synth",
        help="write synthetic Harbor jobs",
        description="Write deterministic synthetic Harbor job folders (same seed, same bytes).",
    )
    parser.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="an empty or new folder for the jobs"
    )
    parser.add_argument("--jobs", required=True, type=int, metavar="J", help="number of jobs")
    parser.add_argument("--trials", required=True, type=int, metavar="N", help="trials per job")
    parser.add_argument("--seed", required=True, type=int, metavar="S")
    parser.add_argument(
        "--bad-share",
        type=float,
        default=0.05,
        metavar="F",
        help="share of each job's trials with a damaged agent file (default 0.05)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    options = SynthOptions(args.out, args.jobs, args.trials, args.seed, args.bad_share)
    began = time.monotonic()
    try:
        summary = generate(options, sys.stdout)
    except SynthError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: error: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 2
    seconds = time.monotonic() - began
    print(
        f"{PROG}: {summary.trials} trials in {summary.jobs} jobs -> {options.out} "
        f"({seconds:.1f} s); manifest: {options.out / MANIFEST}"
    )
    print(summary.render())
    return 0
