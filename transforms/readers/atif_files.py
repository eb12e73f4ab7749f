"""Loading ATIF files safely: JSON documents, continuation chains, confined reference paths.

A trajectory may name other files (continuations, subagent trajectories). Those paths are
data, not trusted: they resolve only inside the trial folder (or, for a standalone file, its
own folder). Absolute paths, `..` components and symlinks that lead outside are refused with
a warning naming the path, and never opened. Every file is opened through the trial's
`TrialFiles` (confined, regular files only, size-capped; see `confined.py`).
"""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from transforms.readers.bundle import ReaderError
from transforms.readers.confined import FileMissing, TrialFiles, utf8_json

CONTINUATION_NAME = re.compile(r"\.cont-(\d+)\.json\Z")


def load_document(files: TrialFiles, path: str | Path, shown: str) -> dict[str, Any]:
    """A trajectory JSON object, or `ReaderError` with a one-line reason naming `shown`."""
    data = load_object(files, path, shown)
    if not isinstance(data.get("steps"), list):
        raise ReaderError(f"{shown}: not an ATIF trajectory (no steps list)")
    return data


def load_object(
    files: TrialFiles, path: str | Path, shown: str, warnings: list[str] | None = None
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
    except (ValueError, RecursionError):  # corrupt, or nested past orjson's depth limit too
        return None
    if not found:
        return None
    names = ", ".join(sorted(set(found)))
    warnings.append(f"{shown}: {len(found)} {names} value(s) read as null (not JSON numbers)")
    return data


def shown_path(path: str | Path, root: str | Path) -> str:
    """`path` relative to the root when it is inside it (for messages), else as given."""
    try:
        return str(Path(path).resolve().relative_to(root))
    except (ValueError, RuntimeError, OSError):  # outside the root; a symlink loop
        return str(path)


def shown_real(path: str, root: str) -> str:
    """`shown_path` of a path already resolved (by `resolve_inside` or realpath): the same
    text, without resolving it again (both are normalised: a string cut, no path parsing)."""
    if path == root:
        return "."
    prefix = root.rstrip(os.sep) + os.sep
    return path[len(prefix) :] if path.startswith(prefix) else path


def resolve_inside(raw: Any, base: str, files: TrialFiles) -> tuple[str | None, str | None]:
    """(real path, None) for a reference that stays inside the trial (`files.real_root`),
    else (None, refusal reason). `base` is the (real) folder of the referencing file. The
    path is taken apart as `PurePosixPath` would and resolved as `Path.resolve` does (a
    symlink loop refused), with string operations and the trial's known folders."""
    root = files.real_root
    if not isinstance(raw, str) or not raw.strip():
        return None, f"refused trajectory path {raw!r}: not a path"
    posix = raw.replace("\\", "/")
    if posix.startswith("/") or os.path.isabs(raw) or re.match(r"[A-Za-z]:", raw):
        return None, f"refused trajectory path {raw!r}: absolute paths are not read"
    parts = [part for part in posix.split("/") if part and part != "."]
    if ".." in parts:
        return None, f"refused trajectory path {raw!r}: '..' leaves the trial folder"
    resolved = files.real_path(os.path.join(base, *parts))
    try:
        os.stat(resolved)  # what `Path.resolve` does to find a loop `realpath` passes over
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, f"refused trajectory path {raw!r}: it cannot be resolved (a symlink loop)"
    if not (resolved == root or resolved.startswith(root.rstrip(os.sep) + os.sep)):
        return None, f"refused trajectory path {raw!r}: it resolves outside {root}"
    return resolved, None


def load_continuations(
    doc: Mapping[str, Any], path: str, files: TrialFiles, seen: set[str], warnings: list[str]
) -> list[dict[str, Any]]:
    """Documents that continue `path` (a real path), in order: its `continued_trajectory_ref`
    chain, then any sibling `<stem>.cont-<n>.json` the chain did not reach, in numeric order.

    A missing, refused or corrupt continuation is a warning; the chain stops there.
    """
    root = files.real_root
    loaded: list[dict[str, Any]] = []
    current, current_doc = path, doc
    while True:
        ref = current_doc.get("continued_trajectory_ref")
        if isinstance(ref, Mapping):
            ref = ref.get("trajectory_path") or ref.get("path")
        if not ref:
            break
        target, refusal = resolve_inside(ref, os.path.dirname(current), files)
        if target is None:
            warnings.append(f"{shown_path(current, root)}: {refusal}")
            break
        if target in seen:
            break
        try:
            current_doc = load_document(files, target, shown_real(target, root))
        except FileMissing:
            name = os.path.basename(current)
            warnings.append(f"continuation {ref} not found (referenced from {name})")
            break
        except ReaderError as exc:
            seen.add(target)
            warnings.append(str(exc))
            break
        seen.add(target)
        current = target
        loaded.append(current_doc)
    folder, name = os.path.split(path)
    if CONTINUATION_NAME.search(name):
        return loaded
    stem = name.removesuffix(".json")
    index = files.memo(("atif-continuations", folder), partial(_continuations, files, folder))
    for _, sibling_name in index.get(stem, ()):
        target, refusal = resolve_inside(sibling_name, folder, files)
        if target is None:
            warnings.append(f"{shown_path(os.path.join(folder, sibling_name), root)}: {refusal}")
            continue
        if target in seen:
            continue
        seen.add(target)
        try:
            loaded.append(load_document(files, target, shown_real(target, root)))
        except ReaderError as exc:
            warnings.append(str(exc))
    return loaded


def _continuations(files: TrialFiles, folder: str) -> dict[str, list[tuple[int, str]]]:
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
