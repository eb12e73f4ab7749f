"""Loading native agent logs with one-line reasons for what a reader refuses.

Every native reader needs the same few refusals (empty file, not JSON, a JSON value of the
wrong shape); phrasing them once keeps the messages users see short and alike. Files are
opened through a `TrialFiles` (confined, regular files only, size-capped; see `confined.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from transforms.jsonl import LineError, is_blank, parse_line
from transforms.readers.bundle import ReaderError
from transforms.readers.confined import TrialFiles, utf8_json


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type: object, array, string, number, boolean, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def read_bytes(files: TrialFiles, path: Path) -> bytes:
    """The file's bytes; an unreadable, refused or empty (whitespace-only) file is refused."""
    data = files.read_bytes(path)
    if not data.strip():
        raise ReaderError("empty file")
    return data


def load_json(files: TrialFiles, path: Path) -> Any:
    """One JSON document; truncated or invalid JSON is refused with where it broke."""
    data = utf8_json(read_bytes(files, path), files.shown(path))
    if not data.strip():
        raise ReaderError("empty file")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        truncated = " (the file looks truncated)" if exc.pos >= len(data.rstrip()) else ""
        raise ReaderError(
            f"invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}{truncated}"
        ) from None


def iter_json_objects(
    files: TrialFiles, path: Path, warnings: list[str]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line number, object)` of a JSON Lines log; bad lines become warnings, not errors.

    A log cut off mid-line (an agent killed while writing) is common, so one bad line must
    not lose the rest. Raises `ReaderError` when the file is empty or no line is an object.
    """
    first_problem = ""
    found = seen = False
    for number, raw in files.iter_lines(path):
        if is_blank(raw):
            continue
        seen = True
        try:
            value = parse_line(raw)
        except LineError as exc:
            problem = f"line {number}: {exc}"
        else:
            if isinstance(value, dict):
                found = True
                yield number, value
                continue
            problem = f"line {number}: a JSON {json_type(value)}, expected an object"
        first_problem = first_problem or problem
        warnings.append(f"{problem}; skipped")
    if not seen:
        raise ReaderError("empty file")
    if not found:
        raise ReaderError(f"no JSON object in the file ({first_problem})")


def require(value: Any, kind: type, what: str) -> Any:
    """`value` if it is of `kind`, else refuse naming the field and the JSON type found."""
    if isinstance(value, kind) and not (kind is not bool and isinstance(value, bool)):
        return value
    expected = json_type(kind())
    article = "an" if expected[0] in "aeiou" else "a"
    raise ReaderError(f"{what} is a JSON {json_type(value)}, expected {article} {expected}")


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (for optional nested fields)."""
    return value if isinstance(value, dict) else {}
