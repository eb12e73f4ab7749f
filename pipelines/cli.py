"""`trajcurate` command line. Kept light: nothing here imports Apache Beam.

Exit codes: 0 the run completed; 1 a `--strict` run met a rejected line (or a pipeline run
could not account for every input); 2 usage errors and unreadable inputs or unwritable
outputs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pipelines import convert_command, run_command, score_command, synth_command

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trajcurate",
        description="Turn coding-agent trajectories into SFT data.",
    )
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    score_command.add_parser(subcommands)
    convert_command.add_parser(subcommands)
    run_command.add_parser(subcommands)
    synth_command.add_parser(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; return its exit code (argparse usage errors give 2)."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "accepts_beam_args", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse exits on --help (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 2
    args.beam_args = extra
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
