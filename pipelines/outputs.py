"""Output files that appear only when a run completes.

Writers go to `<name>.partial` files that are renamed over the final names at the end; a run
that fails leaves neither half-written output nor a stale partial behind.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TypeVar

from transforms.jsonl import JsonlWriter

__all__ = [
    "CommandError",
    "atomic_jsonl_outputs",
    "dead_letters_path",
    "rejects_path",
    "run_reporting_errors",
]


class CommandError(Exception):
    """A run that cannot complete; `exit_code` 2 = usage / I/O, 1 = `--strict` reject."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


ResultT = TypeVar("ResultT")


def run_reporting_errors(prog: str, work: Callable[[], ResultT]) -> ResultT | int:
    """`work()`'s result, or the exit code after one `prog: error: ...` line on stderr."""
    try:
        return work()
    except CommandError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"{prog}: error: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 2


def rejects_path(output: Path) -> Path:
    """`out/scored.jsonl` -> `out/scored.rejects.jsonl` (other names just get the suffix)."""
    stem = output.name.removesuffix(".jsonl")
    return output.with_name(stem + ".rejects.jsonl")


def dead_letters_path(output: Path) -> Path:
    """`out/scored.jsonl` -> `out/scored.dead_letter.jsonl`."""
    stem = output.name.removesuffix(".jsonl")
    return output.with_name(stem + ".dead_letter.jsonl")


@contextmanager
def atomic_jsonl_outputs(*paths: Path) -> Iterator[tuple[JsonlWriter, ...]]:
    """JSONL writers for `paths`, published together only if the block completes."""
    partials = tuple(path.with_name(path.name + ".partial") for path in paths)
    try:
        with ExitStack() as stack:
            writers = tuple(stack.enter_context(JsonlWriter(p)) for p in partials)
            yield writers
        for partial, final in zip(partials, paths, strict=True):
            os.replace(partial, final)
    finally:
        for partial in partials:
            partial.unlink(missing_ok=True)
