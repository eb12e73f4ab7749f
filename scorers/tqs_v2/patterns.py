"""Regular expressions guarded by cheap substring hints.

Python's `re` tries every branch of a large alternation at every position. Most
observations contain none of the words a rule needs, so each rule first checks (with
`speedups.contains_any`, one pass over the text for all hints) that one of its hint
substrings is present. Hints change speed only, never results: a rule's regex cannot match
unless one of its hints occurs in the text.
"""

from __future__ import annotations

import re

from scorers.tqs_v2.speedups import contains_any


class Rule:
    """A pattern and the substrings one of which any match must contain.

    The pattern is compiled the first time one of its hints is seen: most rules never are in
    a run, and compiling them all would add tens of milliseconds to every start-up.
    """

    __slots__ = ("_regex", "flags", "hints", "ignore_case", "pattern")

    def __init__(self, pattern: str, flags: int, hints: tuple[str, ...], ignore_case: bool) -> None:
        self.pattern = pattern
        self.flags = flags
        self.hints = hints
        self.ignore_case = ignore_case
        self._regex: re.Pattern[str] | None = None

    def search(self, text: str) -> bool:
        if not contains_any(text, self.hints, self.ignore_case):
            return False
        if self._regex is None:
            self._regex = re.compile(self.pattern, self.flags)
        return self._regex.search(text) is not None


def rule(pattern: str, *hints: str, ignore_case: bool = False) -> Rule:
    """A MULTILINE pattern (IGNORECASE too when asked; then hints are lower case)."""
    if not hints:
        raise ValueError(f"rule {pattern!r} needs at least one hint")
    if not all(hint.isascii() and hint for hint in hints):
        raise ValueError(f"rule {pattern!r}: hints must be non-empty ASCII")
    if ignore_case and any(hint != hint.lower() for hint in hints):
        raise ValueError(f"rule {pattern!r}: case-insensitive hints must be lower case")
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    return Rule(pattern, flags, hints, ignore_case)


class RuleSet:
    """Rules tried in order; one pass over all their hints rejects most texts at once."""

    __slots__ = ("_folded_hints", "_hints", "rules")

    def __init__(self, *rules: Rule) -> None:
        self.rules = rules
        self._hints = tuple(h for r in rules if not r.ignore_case for h in r.hints)
        self._folded_hints = tuple(h for r in rules if r.ignore_case for h in r.hints)

    def search(self, text: str) -> bool:
        if not contains_any(text, self._hints, False) and not (
            self._folded_hints and contains_any(text, self._folded_hints, True)
        ):
            return False
        return any(r.search(text) for r in self.rules)
