"""`trajcurate` command line. Kept light: nothing here imports Apache Beam.

Each subcommand lives in its own module, imported only when that subcommand runs (or for
`--help` over all of them), so `trajcurate score` never pays for the pipeline's imports.

Exit codes: 0 the run completed; 1 a `--strict` run met a rejected line (or a pipeline run
could not account for every input); 2 usage errors and unreadable inputs or unwritable
outputs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable, Sequence
from typing import NoReturn

__all__ = ["COMMANDS", "build_parser", "main"]

# Subcommand name -> module with `add_parser(subcommands)`, in `--help` order.
COMMANDS = {
    "score": "pipelines.score_command",
    "convert": "pipelines.convert_command",
    "run": "pipelines.run_command",
    "synth": "pipelines.synth_command",
    "report": "pipelines.report_command",
    "diagnose": "pipelines.diagnose_command",
    "gate": "pipelines.gate_command",
    "compare": "pipelines.compare_command",
    "publish": "pipelines.publish_command",
}


class OneLineErrors(argparse.ArgumentParser):
    """A usage error is one line on stderr (`prog: error: ...`) and exit 2; `--help` shows
    the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(commands: Iterable[str] = COMMANDS) -> argparse.ArgumentParser:
    """The parser with the given subcommands registered (all of them by default)."""
    parser = OneLineErrors(
        prog="trajcurate",
        description="Turn coding-agent trajectories into SFT data.",
    )
    subcommands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=OneLineErrors
    )
    for name in commands:
        importlib.import_module(COMMANDS[name]).add_parser(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; return its exit code (argparse usage errors give 2)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    chosen = arguments[:1] if arguments and arguments[0] in COMMANDS else COMMANDS
    parser = build_parser(chosen)
    try:
        args, extra = parser.parse_known_args(arguments)
        if extra and not getattr(args, "accepts_beam_args", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse exits on --help (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 2
    args.beam_args = extra
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
