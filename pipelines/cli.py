"""`trajcurate` command line. Kept light: nothing here imports Apache Beam.

Each subcommand lives in its own module, imported only when that subcommand runs (or for
`--help` over all of them), so `trajcurate score` never pays for the pipeline's imports.

Exit codes: 0 the run completed; 1 a `--strict` run met a rejected line (or a pipeline run
could not account for every input); 2 usage errors and unreadable inputs or unwritable
outputs.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading
from collections.abc import Iterable, Sequence
from typing import NoReturn

__all__ = ["COMMANDS", "build_parser", "entry", "exit_without_teardown", "main"]

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


def entry() -> NoReturn:
    """The `trajcurate` command (and `python -m pipelines.cli`): `main`, then out."""
    exit_without_teardown(main())


def exit_without_teardown(code: int) -> NoReturn:
    """End the process with `code` as `sys.exit` would, minus the interpreter's teardown.

    Every output is closed and published before `main` returns; what Python would still do
    is free each module and object of a process about to end, which after a pipeline run
    (Beam, protobuf, gRPC loaded) takes 0.1-0.15 s. So the standard streams are flushed and
    the exit handlers run (logging, multiprocessing's children), then the process ends. When
    a non-daemon thread still runs (Python would wait for it) or a stream cannot be flushed
    (a closed pipe, which Python reports), it exits the usual way.
    """
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if any(t.is_alive() and not t.daemon for t in others) or not _flushed():
        sys.exit(code)
    atexit._run_exitfuncs()
    _flushed()
    os._exit(code)


def _flushed() -> bool:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe, a closed stream
        return False
    return True


if __name__ == "__main__":
    entry()
