"""JSON Lines in and out, with orjson, one line at a time.

A bad line (invalid UTF-8, invalid JSON) is a per-line `LineError` for the caller to report and
route; it never stops the iteration. Lines are numbered from 1 as an editor shows them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO

import orjson

__all__ = [
    "ByteWindow",
    "JsonlWriter",
    "LineError",
    "LineTooLong",
    "dumps_line",
    "is_blank",
    "iter_handle_lines",
    "iter_lines",
    "parse_line",
    "write_jsonl",
]

_BOM = b"\xef\xbb\xbf"
WRITE_BUFFER = 1 << 20


class LineError(ValueError):
    """One JSONL line that cannot be read as JSON; the message is a short reason."""


class LineTooLong(ValueError):
    """A line longer than the reader accepts; the rest of the file is not read."""

    def __init__(self, number: int, limit: int) -> None:
        super().__init__(f"line {number} is longer than {limit} bytes")
        self.number = number
        self.limit = limit


def iter_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    """Yield `(line_number, raw_line)` without the line terminator, streaming the file.

    A UTF-8 byte order mark at the start of the file is dropped.
    """
    with open(path, "rb") as handle:
        yield from iter_handle_lines(handle)


def iter_handle_lines(
    handle: IO[bytes] | ByteWindow, *, max_line_bytes: int | None = None, first_number: int = 1
) -> Iterator[tuple[int, bytes]]:
    """`iter_lines` over an open binary file, its first line numbered `first_number` (only
    line 1 may start with a byte order mark). With `max_line_bytes`, at most that many
    bytes (plus its terminator) of a line are ever held: a longer line raises
    `LineTooLong`."""
    if max_line_bytes is None:
        for number, line in enumerate(handle, start=first_number):
            if number == 1 and line.startswith(_BOM):
                line = line[len(_BOM) :]
            yield number, line.rstrip(b"\r\n")
        return
    number = first_number - 1
    while line := handle.readline(max_line_bytes + 2):
        number += 1
        line = line.rstrip(b"\r\n")  # one copy of a long line, not one per use
        if len(line) > max_line_bytes:
            raise LineTooLong(number, max_line_bytes)
        if number == 1 and line.startswith(_BOM):
            line = line[len(_BOM) :]
        yield number, line


class ByteWindow:
    """The next `length` bytes of an open binary file, read line by line and no further."""

    def __init__(self, handle: IO[bytes], length: int) -> None:
        self._handle = handle
        self._left = length

    def readline(self, limit: int = -1) -> bytes:
        want = self._left if limit < 0 else min(limit, self._left)
        line = self._handle.readline(want) if want > 0 else b""
        self._left -= len(line)
        return line

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


def is_blank(raw: bytes) -> bool:
    """True for an empty or whitespace-only line (without copying a long one)."""
    return not raw or raw.isspace()


def parse_line(raw: bytes) -> object:
    """Parse one line as a JSON value; raise `LineError` saying why it is not one."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise LineError(f"invalid UTF-8 at byte {bad.start}") from None
        raise LineError(f"invalid JSON: {exc}") from None


def dumps_line(obj: object) -> bytes:
    """One JSON object as a newline-terminated line (keys in the dict's own order)."""
    return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)


class JsonlWriter:
    """Write objects as JSON Lines to a file opened for writing (truncated)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.count = 0
        # Closed in close(). A large buffer turns one write call per record
        # (records are often larger than the default 8 KiB) into one per megabyte.
        self._handle: IO[bytes] = open(self.path, "wb", buffering=WRITE_BUFFER)  # noqa: SIM115

    def write(self, obj: object) -> None:
        self._handle.write(dumps_line(obj))
        self.count += 1

    def write_line(self, line: bytes) -> None:
        """One object already serialised (a newline-terminated line)."""
        self._handle.write(line)
        self.count += 1

    def flush(self) -> None:
        self._handle.flush()

    def append_file(self, path: str | os.PathLike[str], lines: int) -> None:
        """Append the `lines` lines another writer wrote to `path` (a closed file), as
        written (copied by the kernel where it can)."""
        self._handle.flush()
        with open(path, "rb") as part:
            _copy_to(part, self._handle)
        self._handle.seek(0, os.SEEK_END)
        self.count += lines

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _copy_to(source: IO[bytes], target: IO[bytes]) -> None:
    """Copy what is left of `source` to where `target` (flushed) stands."""
    left = os.fstat(source.fileno()).st_size - source.tell()
    try:
        while left > 0:
            copied = os.copy_file_range(source.fileno(), target.fileno(), left)
            if copied == 0:
                break
            left -= copied
    except (AttributeError, OSError):  # not Linux, or file systems it cannot copy between
        shutil.copyfileobj(source, target, WRITE_BUFFER)


def write_jsonl(path: str | os.PathLike[str], objs: Iterable[object]) -> int:
    """Write every object of `objs` to `path` as JSON Lines; return how many were written."""
    with JsonlWriter(path) as writer:
        for obj in objs:
            writer.write(obj)
        return writer.count
