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


# In orjson's output: an escaped C0 control, DEL, or a C1 control's UTF-8 bytes.
_UNWANTED_JSON = re.compile(rb"\\u00[01]|\x7f|\xc2[\x80-\x9f]")


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
        if _UNWANTED_JSON.search(encoded) is None:
            return 0
    _, removed = clean_value(record)
    return removed
