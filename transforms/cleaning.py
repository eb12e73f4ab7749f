"""Text that is safe to train on and to serialise: control characters out, depth bounded.

Agents' logs carry terminal output: ANSI colour sequences, NUL bytes, carriage-return
spinners, lone surrogates from broken decoders. A model learns nothing from them and some
writers choke on them, so every string of a record loses its ANSI escape sequences and its
C0/C1 control characters (tab, newline and carriage return stay) and lone surrogates; what was
removed is counted. A value nested deeper than `MAX_DEPTH` cannot come from a real trajectory
and would stop the JSON writers, so it raises `TooDeep` naming where it is.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

MAX_DEPTH = 254  # orjson, which writes every output, refuses deeper values
# An ANSI CSI / OSC sequence as a whole, else one control character or lone surrogate.
_UNWANTED = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]"
)


# orjson writes a C0 control as a `\u00XX` escape, DEL as itself and a C1 control as its
# UTF-8 bytes (0xC2 0x80-0x9F); substring tests find these far faster than one regex.
_C1_UTF8 = re.compile(rb"\xc2[\x80-\x9f]")


def _may_hold_controls(encoded: bytes) -> bool:
    return (
        b"\\u00" in encoded
        or b"\x7f" in encoded
        or (b"\xc2" in encoded and _C1_UTF8.search(encoded) is not None)
    )


class TooDeep(ValueError):
    """A value nested deeper than `MAX_DEPTH` levels."""


def clean_text(text: str) -> tuple[str, int]:
    """`text` without control characters and escape sequences; how many characters went."""
    if _UNWANTED.search(text) is None:
        return text, 0
    cleaned = _UNWANTED.sub("", text)
    return cleaned, len(text) - len(cleaned)


def clean_value(value: Any, where: str = "", depth: int = 0) -> tuple[Any, int]:
    """`value` with every string (dict keys too) cleaned; characters removed in total."""
    if isinstance(value, str):
        return clean_text(value)
    if depth >= MAX_DEPTH:
        if isinstance(value, dict | list):
            raise TooDeep(f"a value nested deeper than {MAX_DEPTH} levels at {where or '/'}")
        return value, 0
    removed = 0
    if isinstance(value, dict):
        for key in list(value):
            item, count = clean_value(value[key], f"{where}/{key}", depth + 1)
            new_key, key_count = clean_text(key) if isinstance(key, str) else (key, 0)
            removed += count + key_count
            if key_count:
                del value[key]
            if count or key_count:
                value[new_key] = item
    elif isinstance(value, list):
        for index, item in enumerate(value):
            new, count = clean_value(item, f"{where}/{index}", depth + 1)
            if count:
                value[index] = new
                removed += count
    return value, removed


def clean_record(record: dict[str, Any]) -> int:
    """Clean every string of `record` in place; how many characters were removed.

    Most records have nothing to remove: one C-speed serialisation tells, and only records
    it flags (or cannot serialise) are walked.
    """
    try:
        encoded = orjson.dumps(record)
    except orjson.JSONEncodeError:
        pass
    else:
        if not _may_hold_controls(encoded):
            return 0
    _, removed = clean_value(record)
    return removed
