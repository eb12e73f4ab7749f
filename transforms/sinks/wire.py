"""What waits at a per-job grouping travels packed (plain Python: no Beam).

A job's part refs (`SpillBundle`), candidate items and prior rows (`transforms/sinks/
scores.py`) wait at a grouping until the last bundle of the run is written: the runner holds
every one of them encoded, and hands a job's values over decoded all at once. As Python
tuples and dicts each was ~1.7 KB a trial (twenty objects, the spill file's whole path in
every ref); packed, each value is one `bytes` of its pickle, the spill files named relative
to their job's folder, ~0.3 KB. The consumer unpacks them one at a time (`Unpacker`), every
ref of one spill file sharing one path string. A candidate's two lines (its sidecar row and,
with selection active, its outcome) are spilled refs like the parts.
"""

from __future__ import annotations

import pickle
from typing import Any

from transforms.sinks import layout

__all__ = ["Packer", "Unpacker"]

_PROTOCOL = pickle.HIGHEST_PROTOCOL


_LINES = ("row", "outcome")  # the lines of a candidate item, each maybe spilled


class Packer:
    """Packs a job's grouped values, spill files named below `layout.job_dir(output, job)`."""

    def __init__(self, output: str) -> None:
        self.output = output
        self._folders: dict[str, str] = {}

    def part_ref(self, job: str, ref: tuple[Any, ...]) -> bytes:
        """A part ref (sort key, spill file, offset, size, counts)."""
        key, path, *rest = ref
        return pickle.dumps((key, self._relative(job, path), *rest), _PROTOCOL)

    def prior_row(self, job: str, row: tuple[Any, ...]) -> bytes:
        """A prior row (instance id, task, resolved, line or its `RowRef`)."""
        *head, line = row
        return pickle.dumps((*head, self._row_ref(job, line)), _PROTOCOL)

    def candidate(self, job: str, item: dict[str, Any]) -> bytes:
        """A candidate item (its `row` and `outcome` each a line, a `RowRef` or None)."""
        lines = {name: self._row_ref(job, item[name]) for name in _LINES if name in item}
        return pickle.dumps({**item, **lines}, _PROTOCOL)

    def _row_ref(self, job: str, row: Any) -> Any:
        """A `RowRef` relative to the job's folder; a line kept inline (object stores) as it is."""
        if not isinstance(row, tuple):
            return row
        return (self._relative(job, row[0]), *row[1:])

    def _relative(self, job: str, path: str) -> str:
        folder = self._folders.get(job)
        if folder is None:
            folder = self._folders[job] = layout.job_dir(self.output, job) + "/"
        if not path.startswith(folder):
            raise ValueError(f"spill file {path} is not in its job's folder {folder}")
        return path[len(folder) :]


class Unpacker:
    """Unpacks what `Packer` packed for one job, every spill file's path made once."""

    def __init__(self, output: str, job: str) -> None:
        self.folder = layout.job_dir(output, job) + "/"
        self._paths: dict[str, str] = {}

    def part_ref(self, packed: bytes) -> tuple[Any, ...]:
        key, name, *rest = pickle.loads(packed)
        return (key, self._path(name), *rest)

    def prior_row(self, packed: bytes) -> tuple[Any, ...]:
        *head, line = pickle.loads(packed)
        return (*head, self._row_ref(line))

    def candidate(self, packed: bytes) -> dict[str, Any]:
        item: dict[str, Any] = pickle.loads(packed)
        for name in _LINES:
            if name in item:
                item[name] = self._row_ref(item[name])
        return item

    def _row_ref(self, row: Any) -> Any:
        return (self._path(row[0]), *row[1:]) if isinstance(row, tuple) else row

    def _path(self, name: str) -> str:
        path = self._paths.get(name)
        if path is None:
            path = self._paths[name] = self.folder + name
        return path
