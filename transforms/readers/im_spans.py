"""Spans of an IM JSON Lines file: byte ranges that can be read and curated apart.

`trajcurate score` splits a large IM file into spans so that several processes can each take
one (`pipelines/score_workers.py`). A span starts and ends at a line start, and it is cut
where the line before names other `_instance_id`s than the line after, so an instance whose
lines are contiguous (as trajcurate writes them) is never cut. Whether a cut really parted no
instance is known once every span's lines are counted by instance (the IM reader's first
look, `im_index.py`, over the span alone: `Span.ids`), before any record is read:
`cut_problem`. Two things are known only once a span is read: whether its counts held to the
end (`Span.trusted`) and whether it held an IM record (`Span.valid`): `reading_problem`.
When either says why not (an instance across a cut, counts the first look cannot vouch for,
a span with no IM record), the caller reads the file whole.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, cast

from transforms.readers.im_index import named_ids

__all__ = ["MAX_CUT_LINES", "Span", "cut_problem", "reading_problem", "split_spans"]

MAX_CUT_LINES = 1000  # lines looked at for a cut before giving that cut up
READ_BYTES = 2**20  # read at a time to number the lines before each cut


@dataclass
class Span:
    """Bytes `start` to `stop` of a file, whose first line is line `first_line`; the reader
    fills in the rest: the ids its first look counted (None when it could not vouch for
    them), whether they held to the end, and how many valid records it read. `counts` holds
    the first look's counts from the look (`im_jsonl.look_at_span`) to the read; it is never
    pickled."""

    start: int
    stop: int
    first_line: int
    ids: frozenset[str] | None = None
    trusted: bool = False
    valid: int = 0
    looked: bool = False
    counts: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "counts": None}


def split_spans(handle: IO[bytes], parts: int, max_line_bytes: int) -> list[Span]:
    """Up to `parts` spans of about equal size covering the file open as `handle`; fewer
    where no cut is found near a share's end (one span: no cut at all). No line longer than
    `max_line_bytes` is read whole (the reader refuses such a file, so it gets no cut)."""
    size = os.fstat(handle.fileno()).st_size
    cuts = [0]
    for share in range(1, parts):
        offset = max(size * share // parts, cuts[-1] + 1)
        cut = _cut_after(handle, offset, size, max_line_bytes) if offset < size else None
        if cut is not None:
            cuts.append(cut)
    cuts.append(size)
    firsts = _line_numbers(handle, cuts[:-1])
    return [
        Span(start, stop, first)
        for start, stop, first in zip(cuts[:-1], cuts[1:], firsts, strict=True)
    ]


def _cut_after(handle: IO[bytes], offset: int, size: int, max_line_bytes: int) -> int | None:
    """A line start after `offset` whose line names no id the line before it names; None
    when none is found within `MAX_CUT_LINES` lines (or a line is over `max_line_bytes`)."""
    limit = max_line_bytes + 2
    handle.seek(offset - 1)
    line = handle.readline(limit)  # the rest of the line holding byte offset-1
    before: bytes | None = None
    for _ in range(MAX_CUT_LINES):
        start = handle.tell()
        if start >= size or not line.endswith(b"\n"):  # the end, or a line over the cap
            return None
        line = handle.readline(limit)
        if before is not None and named_ids(before).isdisjoint(named_ids(line)):
            return start
        before = line
    return None


def _line_numbers(handle: IO[bytes], starts: Sequence[int]) -> list[int]:
    """The line number (from 1) of the line starting at each of `starts` (ascending).

    Newlines are found one by one (`find`, which runs at memory speed between them) in one
    reused buffer: IM lines are long, and `bytes.count` is several times slower than that."""
    handle.seek(0)
    buffer = bytearray(READ_BYTES)
    numbers, lines, position = [], 1, 0
    for start in starts:
        while position < start:
            view = memoryview(buffer)[: min(READ_BYTES, start - position)]
            size = cast(io.BufferedReader, handle).readinto(view)
            if not size:
                break
            found = buffer.find(b"\n", 0, size)
            while found >= 0:
                lines += 1
                found = buffer.find(b"\n", found + 1, size)
            position += size
        numbers.append(lines)
    return numbers


def cut_problem(spans: Sequence[Span]) -> str | None:
    """Why the spans of one file, counted by instance, cannot be read apart (None: they
    can): an instance with lines in two spans, or a span the first look could not count."""
    seen: set[str] = set()
    for span in spans:
        if span.ids is None:
            return f"lines from {span.first_line} could not be counted by instance"
        if not seen.isdisjoint(span.ids):
            return f"an instance has lines on both sides of line {span.first_line}"
        seen.update(span.ids)
    return None


def reading_problem(spans: Sequence[Span]) -> str | None:
    """Why the spans of one file, each read by itself, did not give what reading the file
    whole gives (None: they did, given no `cut_problem`): a span whose counts failed on the
    way (then an instance may have come out early), or one without an IM record (the whole
    file's reader holds rejected lines back until it has seen one)."""
    for span in spans:
        if not span.trusted:
            return f"lines from {span.first_line} could not be counted by instance"
        if not span.valid:
            return f"no IM record among the lines from {span.first_line}"
    return None
