"""Sidecar lines spilled until their job is decided (plain Python and the os module: no Beam).

A job's `scores.jsonl` is written sorted once every bundle of the job is scored, so its rows
wait at a grouping. Locally each row line goes to a spill file (one per job and Beam bundle,
named uniquely as the IM/LF spills are) and only its (file, offset, size) travels: memory
stays flat however many trials a job has. On an object store a line stays inline (a whole
object per row would cost a request each, and there the runner's grouping is on disk).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from transforms.sinks import layout, parts

ROWS = "rows"  # the spill folder of sidecar lines, under a job's `.parts`

RowRef = tuple[str, int, int]  # (spill file, offset, size) of one line


def rows_folder(output: str, job: str) -> str:
    return f"{layout.job_dir(output, job)}/{layout.PARTS}/{ROWS}"


class RowSpill:
    """`keep(job, line)`: the line, or where it was spilled (`RowRef`); `close()` at the end
    of each Beam bundle."""

    def __init__(self, output: str | None) -> None:
        self.output = output
        self._files: dict[str, parts.SpillFile] = {}

    def keep(self, job: str, line: bytes) -> bytes | RowRef:
        if self.output is None or layout.is_remote(self.output):
            return line
        spill = self._files.get(job)
        if spill is None:
            path = f"{rows_folder(self.output, job)}/{uuid.uuid4().hex}.spill"
            spill = self._files[job] = parts.SpillFile(path)
        return spill.path, spill.append(line), len(line)

    def close(self) -> None:
        files, self._files = self._files, {}
        for spill in files.values():
            spill.close()


def line_reader() -> tuple[Callable[[Any], bytes], Callable[[], None]]:
    """(line_of, close): `line_of` gives a kept row's line back, inline or spilled."""
    reader = parts.PartReader()

    def line_of(row: Any) -> bytes:
        return row if isinstance(row, bytes) else reader.read(*row)

    return line_of, reader.close


def remove_rows(rows: list[Any]) -> None:
    """Delete the spill files of a job's rows once its sidecar is written: only the files
    its own rows are in (two raw job names may share a folder until the run refuses them)."""
    layout.delete(sorted({row[0] for row in rows if isinstance(row, tuple)}))
