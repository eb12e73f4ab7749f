"""Tool-error signatures: the same failure, told apart from its incidental details.

An erroring tool observation (TQS V2's own error rule decides which observations are errors)
is reduced to one short line: the first line that names the error (`...Error: ...`, `error:`,
`No such file or directory`, `command not found`, ...), else the first non-blank line; then
quoted strings, paths, hex and numbers are replaced by placeholders, so
`ModuleNotFoundError: No module named 'numpy'` and `... named 'pandas'` count as one pattern
while an `AssertionError` stays apart.
"""

from __future__ import annotations

import re
from collections import Counter

from scorers.tqs_v2.text import strip_ansi
from scorers.tqs_v2.trajectory import Trajectory

__all__ = ["MAX_PER_RECORD", "error_signature", "normalise", "record_errors"]

MAX_PER_RECORD = 20
_MAX_CHARS = 120
_NAMES_ERROR = re.compile(
    r"\w*(?:Error|Exception)\b|\berror\b|\bERROR\b|No such file|not found|Permission denied"
    r"|\bFAILED\b|\bfatal\b|non-zero exit|exit code|<tool_use_error>|Traceback",
)
_PLACEHOLDERS = (
    (re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`"), "<str>"),
    (re.compile(r"(?<![<\w])(?:[\w.-]+/|/)(?:[\w.-]+/)*[\w.-]+"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)


def error_signature(text: str) -> str:
    """The normalised one-line pattern of an error observation ("" for a blank one)."""
    lines = [line.strip() for line in strip_ansi(text).splitlines() if line.strip()]
    if not lines:
        return ""
    naming = [line for line in lines if _NAMES_ERROR.search(line)]
    # A traceback names its error last; anything else names it first.
    line = naming[-1] if naming and naming[0].startswith("Traceback") else (naming or lines)[0]
    return normalise(line)


def normalise(text: str) -> str:
    """`text` with quoted strings, paths, hex and numbers replaced by placeholders, on one
    line of at most 120 characters."""
    for pattern, placeholder in _PLACEHOLDERS:
        text = pattern.sub(placeholder, text)
    return text.strip()[:_MAX_CHARS]


def record_errors(trajectory: Trajectory) -> list[list[str | int]]:
    """`[tool, signature, count]` of each distinct erroring call, commonest first (at most
    MAX_PER_RECORD, ties by tool then signature)."""
    counts: Counter[tuple[str, str]] = Counter()
    for action in trajectory.actions:
        observation = action.observation
        if observation is not None and observation.is_error:
            counts[(action.name, error_signature(observation.text))] += 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [[tool, signature, n] for (tool, signature), n in ranked[:MAX_PER_RECORD]]
