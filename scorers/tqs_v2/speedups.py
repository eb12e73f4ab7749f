"""The scorer's two innermost loops: character entropies (OEC) and hint scans (patterns).

Both run in a small C extension (`_speedups.c`) when it is built; the Python functions here
are the fallback (TRAJCURATE_PURE_PYTHON=1 installs) and the reference the extension is
tested against. Results are the same either way.

- Entropy, bits per character of the first `limit` characters of a text:
  H = log2(n) - sum(c * log2(c)) / n over the character counts c (0.0 when empty).
- Hint scan: whether one of the (ASCII) hints occurs in the text, or in `text.lower()` when
  ignoring case. The C version reads a text once for all hints instead of once per hint.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

__all__ = [
    "NATIVE",
    "character_entropies",
    "contains_any",
    "python_character_entropies",
    "python_contains_any",
]

Entropies = Callable[[list[str], int], list[float]]
ContainsAny = Callable[[str, tuple[str, ...], bool], bool]


def python_character_entropies(texts: list[str], limit: int) -> list[float]:
    """Bits per character of each text's first `limit` characters (0.0 for an empty one)."""
    result = []
    for text in texts:
        prefix = text[:limit]
        n = len(prefix)
        if not n:
            result.append(0.0)
            continue
        total = 0.0
        for count in Counter(prefix).values():
            if count > 1:
                total += count * math.log2(count)
        result.append(math.log2(n) - total / n)
    return result


def python_contains_any(text: str, hints: tuple[str, ...], ignore_case: bool) -> bool:
    """Whether one of `hints` occurs in `text` (in `text.lower()` when `ignore_case`)."""
    haystack = text.lower() if ignore_case else text
    return any(hint in haystack for hint in hints)


def _native() -> tuple[Entropies, ContainsAny] | None:
    try:
        from scorers.tqs_v2 import _speedups
    except ImportError:  # built without a C compiler (TRAJCURATE_PURE_PYTHON=1)
        return None
    return _speedups.entropies, _speedups.contains_any


_NATIVE = _native()
NATIVE = _NATIVE is not None
character_entropies: Entropies = _NATIVE[0] if _NATIVE else python_character_entropies
contains_any: ContainsAny = _NATIVE[1] if _NATIVE else python_contains_any
