"""Loading ATIF files safely: JSON documents, continuation chains, confined reference paths.

A trajectory may name other files (continuations, subagent trajectories). Those paths are
data, not trusted: they resolve only inside the trial folder (or, for a standalone file, its
own folder). Absolute paths, `..` components and symlinks that lead outside are refused with
a warning naming the path, and never opened. Every file is opened through the trial's
`TrialFiles` (confined, regular files only, size-capped; see `confined.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from transforms.readers.bundle import ReaderError
from transforms.readers.confined import FileMissing, TrialFiles, utf8_json

CONTINUATION_NAME = re.compile(r"\.cont-(\d+)\.json\Z")


def load_document(files: TrialFiles, path: Path, shown: str) -> dict[str, Any]:
    """A trajectory JSON object, or `ReaderError` with a one-line reason naming `shown`."""
    data = load_object(files, path, shown)
    if not isinstance(data.get("steps"), list):
        raise ReaderError(f"{shown}: not an ATIF trajectory (no steps list)")
    return data


def load_object(
    files: TrialFiles, path: Path, shown: str, warnings: list[str] | None = None
) -> dict[str, Any]:
    """A JSON object, or `ReaderError` with a one-line reason naming `shown` (`FileMissing`
    when the file does not exist).

    With `warnings`, a document that is JSON but for `NaN` / `Infinity` / `-Infinity` (what
    Python's `json.dumps` writes for a float it cannot express) is read with those values as
    null, warned: one timing field must not lose a whole trial; a reward that was NaN is then
    no reward, with its reason.
    """
    text = utf8_json(files.read_bytes(path), shown)
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        data = _constants_as_null(text, shown, warnings) if warnings is not None else None
        if data is None:
            raise ReaderError(f"{shown}: corrupt JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ReaderError(f"{shown}: not a JSON object")
    return data


def _constants_as_null(text: str | bytes, shown: str, warnings: list[str]) -> Any:
    """The document with its non-standard constants as null, or None when it has none (or
    is corrupt for another reason)."""
    found: list[str] = []

    def null(name: str) -> None:
        found.append(name)

    try:
        data = json.loads(text, parse_constant=null)
    except ValueError:
        return None
    if not found:
        return None
    names = ", ".join(sorted(set(found)))
    warnings.append(f"{shown}: {len(found)} {names} value(s) read as null (not JSON numbers)")
    return data


def shown_path(path: Path, root: Path) -> str:
    """`path` relative to the root when it is inside it (for messages), else as given."""
    try:
        return str(path.resolve().relative_to(root))
    except (ValueError, RuntimeError, OSError):  # outside the root; a symlink loop
        return str(path)


def shown_real(path: Path, root: Path) -> str:
    """`shown_path` of a path already resolved (by `resolve_inside` or realpath): the same
    text, without resolving it again."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def resolve_inside(raw: Any, base: Path, root: Path) -> tuple[Path | None, str | None]:
    """(path, None) for a reference that stays inside `root`, else (None, refusal reason).

    `base` is the folder of the referencing file; `root` must already be resolved.
    """
    if not isinstance(raw, str) or not raw.strip():
        return None, f"refused trajectory path {raw!r}: not a path"
    posix = PurePosixPath(raw.replace("\\", "/"))
    if posix.is_absolute() or Path(raw).is_absolute() or re.match(r"[A-Za-z]:", raw):
        return None, f"refused trajectory path {raw!r}: absolute paths are not read"
    if ".." in posix.parts:
        return None, f"refused trajectory path {raw!r}: '..' leaves the trial folder"
    candidate = base.joinpath(*posix.parts)
    try:
        resolved = candidate.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError on a loop
        return None, f"refused trajectory path {raw!r}: it cannot be resolved (a symlink loop)"
    if not resolved.is_relative_to(root):
        return None, f"refused trajectory path {raw!r}: it resolves outside {root}"
    return resolved, None


def load_continuations(
    doc: Mapping[str, Any], path: Path, files: TrialFiles, seen: set[Path], warnings: list[str]
) -> list[dict[str, Any]]:
    """Documents that continue `path`, in order: its `continued_trajectory_ref` chain, then
    any sibling `<stem>.cont-<n>.json` the chain did not reach, in numeric order.

    A missing, refused or corrupt continuation is a warning; the chain stops there.
    """
    root = Path(files.real_root)
    loaded: list[dict[str, Any]] = []
    current, current_doc = path, doc
    while True:
        ref = current_doc.get("continued_trajectory_ref")
        if isinstance(ref, Mapping):
            ref = ref.get("trajectory_path") or ref.get("path")
        if not ref:
            break
        target, refusal = resolve_inside(ref, current.parent, root)
        if target is None:
            warnings.append(f"{shown_path(current, root)}: {refusal}")
            break
        if target in seen:
            break
        try:
            current_doc = load_document(files, target, shown_real(target, root))
        except FileMissing:
            warnings.append(f"continuation {ref} not found (referenced from {current.name})")
            break
        except ReaderError as exc:
            seen.add(target)
            warnings.append(str(exc))
            break
        seen.add(target)
        current = target
        loaded.append(current_doc)
    if CONTINUATION_NAME.search(path.name):
        return loaded
    stem = path.name.removesuffix(".json")
    index = files.memo(
        ("atif-continuations", str(path.parent)), partial(_continuations, files, path.parent)
    )
    for _, name in index.get(stem, ()):
        sibling = path.parent / name
        target, refusal = resolve_inside(sibling.name, path.parent, root)
        if target is None:
            warnings.append(f"{shown_path(sibling, root)}: {refusal}")
            continue
        if target in seen:
            continue
        seen.add(target)
        try:
            loaded.append(load_document(files, target, shown_real(target, root)))
        except ReaderError as exc:
            warnings.append(str(exc))
    return loaded


def _continuations(files: TrialFiles, folder: Path) -> dict[str, list[tuple[int, str]]]:
    """The `<stem>.cont-<n>.json` files of `folder` by stem, each list in numeric order:
    built once per folder, so a folder of n trajectories is not listed n times."""
    index: dict[str, list[tuple[int, str]]] = {}
    for name in files.list_names(folder):
        match = CONTINUATION_NAME.search(name)
        if match is not None:
            index.setdefault(name[: match.start()], []).append((int(match.group(1)), name))
    for entries in index.values():
        entries.sort()
    return index
