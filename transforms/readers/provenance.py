"""Where a record was read from: `_instance_metadata.provenance` of a bundle's main record.

    provenance: {"source": "<job>/<trial>",                      # the read unit
                 "files": [{"path": "<job>/<trial>/agent/trajectory.json",
                            "sha256": "<hex>"}, ...]}             # every file read, by path

Every path is relative to the input root, in `/` form (never a machine's absolute path): for
a Harbor trial the folder holding its job, so a trial is always `<job folder>/<trial>`
whichever input it was found under (a folder of jobs, the job, the trial itself; and
`--skip-unchanged` reads a changed job on its own); for any other input the `--input`
folder the unit was found in, or the folder of an `--input` that is itself the unit.
`files` lists each file the reader read whole for the bundle (`TrialFiles.read_files`:
hashed while it was read, so the hash is of the bytes the record was made from; a file only
probed for its format is not in it). A record of a streamed JSON Lines corpus (IM, an
OpenHands evaluation `output.jsonl`), whose file is read line by line, lists its lines
instead: `corpus.jsonl#L12`, hashed without the line break.
An IM input record that already says where it was read from keeps its provenance, so an
output read back as input gives the same records.
"""

from __future__ import annotations

import functools
import hashlib
import os
import posixpath
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["PROVENANCE", "attach_provenance", "input_base", "line_read", "relative_to"]

PROVENANCE = "provenance"
_GLOB_CHARS = frozenset("*?[")


def line_read(path: str | os.PathLike[str], number: int, raw: bytes) -> dict[str, str]:
    """The `read_files` entry of one line of a streamed corpus: `<path>#L<n>` -> SHA-256."""
    return {f"{os.fspath(path)}#L{number}": hashlib.sha256(raw).hexdigest()}


def _remote(path: str) -> bool:
    return "://" in path


def input_base(root: str, unit: str) -> str:
    """The folder provenance paths are relative to: `root` (an `--input`) when the unit is
    below it, else `root`'s parent (the input is the unit: a file, a trial folder). A glob
    input counts from the folder before its first glob character."""
    if _remote(root):
        base = root.rstrip("/")
        return posixpath.dirname(base) if unit.rstrip("/") == base else base
    parts = Path(root).parts
    for index, part in enumerate(parts):
        if not _GLOB_CHARS.isdisjoint(part):
            return os.path.join(*parts[:index]) if index else "."
    if os.path.abspath(unit) == os.path.abspath(root):
        return os.path.dirname(os.path.abspath(root))
    return root


def relative_to(path: str, base: str) -> str:
    """`path` relative to `base` in `/` form; a path outside `base` keeps only its name."""
    if _remote(base) or _remote(path):
        prefix = base.rstrip("/") + "/"
        return path[len(prefix) :] if path.startswith(prefix) else posixpath.basename(path)
    absolute, root = os.path.abspath(path), os.path.abspath(base)
    if absolute.startswith(root.rstrip(os.sep) + os.sep):  # below: a cut, not `relpath`
        shown = absolute[len(root.rstrip(os.sep)) + 1 :]
        return shown if os.sep == "/" else shown.replace(os.sep, "/")
    shown = os.path.relpath(absolute, root)
    if shown == ".." or shown.startswith(".." + os.sep) or os.path.isabs(shown):
        return os.path.basename(path)
    return PurePosixPath(Path(shown)).as_posix()


def _main_metadata(bundle: Mapping[str, Any]) -> dict[str, Any] | None:
    for record in bundle.get("records") or []:
        info = record["meta_info"]["unique_info"]
        if info.get("_agent_type", "main") == "main":
            metadata = info.get("_instance_metadata")
            if isinstance(metadata, dict):
                return metadata
            created: dict[str, Any] = {}
            info["_instance_metadata"] = created
            return created
    return None


def _known(value: Any) -> bool:
    """An IM input's provenance that says something (a conformed empty one does not)."""
    return isinstance(value, Mapping) and bool(value.get("source") or value.get("files"))


def trial_base(trial: str) -> str:
    """The input root of a Harbor trial: the folder (or prefix) holding its job."""
    if _remote(trial):
        return posixpath.dirname(posixpath.dirname(trial.rstrip("/")))
    return os.path.dirname(os.path.dirname(os.path.abspath(trial)))


def attach_provenance(
    bundle: dict[str, Any], root: str | None, unit: str, *, trial: bool = False
) -> None:
    """Move the bundle's `read_files` into its main record's `provenance` (module
    docstring); `root` is the `--input` the unit `unit` (its path or URL) came from, `trial`
    says the unit is one Harbor trial of a job."""
    read_files: Mapping[str, str] = bundle.pop("read_files", None) or {}
    metadata = _main_metadata(bundle)
    if metadata is None or _known(metadata.get(PROVENANCE)):
        return
    base, source = _base_and_source(root, unit, trial, os.getcwd())
    line_prefix = unit + "#L"  # a streamed file's lines: its shown path and the line number
    entries = (
        {
            "path": source + p[len(unit) :] if p.startswith(line_prefix) else relative_to(p, base),
            "sha256": d,
        }
        for p, d in read_files.items()
    )
    files = sorted(entries, key=lambda entry: _line_order(entry["path"]))
    metadata[PROVENANCE] = {"source": source, "files": files}


@functools.lru_cache(maxsize=256)
def _base_and_source(root: str | None, unit: str, trial: bool, cwd: str) -> tuple[str, str]:
    """(the folder provenance paths count from, the unit's path shown from it): the same for
    every record of one unit (a streamed file holds thousands). `cwd` is part of the key:
    local paths are made absolute from it."""
    del cwd
    base = trial_base(unit) if trial else input_base(root if root is not None else unit, unit)
    return base, relative_to(unit, base)


def _line_order(path: str) -> tuple[str, int]:
    """Files by path, the lines of one streamed file in line order (`#L9` before `#L10`)."""
    name, _, line = path.rpartition("#L")
    return (name, int(line)) if name and line.isdigit() else (path, 0)
