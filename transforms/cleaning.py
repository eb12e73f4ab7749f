"""Text that is safe to train on and to serialise: control characters out, depth bounded.

Agents' logs carry terminal output: ANSI colour sequences, NUL bytes, carriage-return
spinners, lone surrogates from broken decoders. A model learns nothing from them and some
writers choke on them, so every string of a record loses its ANSI escape sequences and its
C0/C1 control characters (tab, newline and carriage return stay) and lone surrogates; what was
removed is counted.

Invisible Unicode goes too, counted with them: format characters (category Cf: bidi overrides
and isolates such as U+202E, which make text read differently from how it is stored;
zero-width spaces; the BOM U+FEFF; the Arabic letter mark U+061C; soft hyphens; tag
characters), noncharacters (U+FDD0..U+FDEF and the last two code points of every plane, such
as U+FFFE and U+10FFFF) and the line / paragraph separators U+2028 / U+2029 (each becomes a
newline, which is what they mean). The zero-width joiner and non-joiner U+200D / U+200C stay
between two non-ASCII characters: there they glue emoji sequences (woman + ZWJ + laptop) and
spell Persian and Indic words; next to ASCII or at an edge they carry nothing and only hide
text (a keyword or a key split by an invisible character), so they go.

A value nested deeper than `MAX_DEPTH` cannot come from a real trajectory and would stop the
JSON writers, so it raises `TooDeep` naming where it is.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import orjson

from transforms.redaction.survey import CLEAN, survey_value

MAX_DEPTH = 254  # orjson, which writes every output, refuses deeper values
# Unicode 14's format characters (Cf, what Python 3.11's unicodedata knows) but the joiners
# U+200C / U+200D, handled apart; tests/test_chain.py checks the list against unicodedata.
FORMAT_CHARACTERS = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b\u200e\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
NONCHARACTERS = "\ufdd0-\ufdef" + "".join(
    f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(17)
)
JOINERS = "\u200c\u200d"
SEPARATORS = "\u2028\u2029"
# An ANSI CSI / OSC sequence as a whole, else one control character, lone surrogate, format
# character or noncharacter, else a joiner that is not between two non-ASCII characters.
_UNWANTED = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    f"|[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f\\ud800-\\udfff{FORMAT_CHARACTERS}{NONCHARACTERS}]"
    f"|(?<![^\\x00-\\x7f])[{JOINERS}]|[{JOINERS}](?![^\\x00-\\x7f])"
)
_SEPARATOR = re.compile(f"[{SEPARATORS}]")


# orjson writes a C0 control as a `\u00XX` escape, DEL as itself and a C1 control as its
# UTF-8 bytes (0xC2 0x80-0x9F); substring tests find these far faster than one regex. The
# other characters are found by the UTF-8 bytes they start with (all but their last byte).
_C1_UTF8 = re.compile(rb"\xc2[\x80-\x9f]")


def _utf8_prefixes() -> tuple[tuple[bytes, re.Pattern[bytes]], ...]:
    """(leading bytes, the pattern of the whole characters that start with them)."""
    last_bytes: dict[bytes, set[int]] = {}
    for part in re.findall(r".-.|.", FORMAT_CHARACTERS + NONCHARACTERS + JOINERS + SEPARATORS):
        for code in range(ord(part[0]), ord(part[-1]) + 1):
            encoded = chr(code).encode("utf-8")
            last_bytes.setdefault(encoded[:-1], set()).add(encoded[-1])
    return tuple(
        (
            prefix,
            re.compile(
                re.escape(prefix)
                + b"["
                + b"".join(re.escape(bytes([b])) for b in sorted(ends))
                + b"]"
            ),
        )
        for prefix, ends in sorted(last_bytes.items())
    )


# Typographic characters (U+2014, U+2019) share leading bytes with U+200B..U+206F: the
# prefix test is the quick filter, the pattern decides.
_PREFIXES = _utf8_prefixes()


def _may_hold_controls(encoded: bytes) -> bool:
    return (
        b"\\u00" in encoded
        or b"\x7f" in encoded
        or (b"\xc2" in encoded and _C1_UTF8.search(encoded) is not None)
        or (
            not encoded.isascii()
            and any(p in encoded and char.search(encoded) for p, char in _PREFIXES)
        )
    )


_CONVERSATION = frozenset(("messages", "tools"))


class TooDeep(ValueError):
    """A value nested deeper than `MAX_DEPTH` levels."""


def clean_text(text: str) -> tuple[str, int]:
    """`text` without control characters, escape sequences and invisible Unicode (see the
    module docstring); how many characters went or were rewritten."""
    if not survey_value(text) & CLEAN:
        return text, 0  # the survey (C) finds nothing the patterns below could match
    separators = 0
    if not text.isascii() and _SEPARATOR.search(text) is not None:
        text, separators = _SEPARATOR.subn("\n", text)
    if _UNWANTED.search(text) is None:
        return text, separators
    cleaned = _UNWANTED.sub("", text)
    return cleaned, separators + len(text) - len(cleaned)


def clean_value(value: Any, where: str = "", depth: int = 0) -> tuple[Any, int]:
    """`value` with every string (dict keys too) cleaned; characters removed in total."""
    if isinstance(value, str):
        return clean_text(value)
    if not survey_value(value, depth=depth) & CLEAN:
        return value, 0  # the survey (one pass in C) finds nothing to clean in it
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


# The bundle key the redact stage leaves: per record, whether its survey (the one pass over
# the record's strings that redaction makes) found nothing to clean.
SURVEYED = "surveyed_clean"
_surveyed = threading.local()  # ids of the records of the bundle being cleaned found clean


class after_survey:
    """Clean `bundle`'s records (`clean_record`) knowing what the redact stage's survey found
    (`SURVEYED`, taken off the bundle). A record it found nothing to clean in has changed since
    outside its messages and tools only: the stages between (scoring, diagnosing, marking)
    add to `meta_info` and never touch the conversation (tests/test_chain.py checks it), so
    only the rest is surveyed again. Without `SURVEYED` (`--redact off`) every record is
    surveyed whole. (A class, not a generator: it is entered once a bundle.)"""

    __slots__ = ("known", "previous")

    def __init__(self, bundle: dict[str, Any]) -> None:
        flags = bundle.pop(SURVEYED, None)
        records = bundle.get("records")
        self.known: set[int] = set()
        if isinstance(flags, list) and isinstance(records, list) and len(flags) == len(records):
            self.known = {id(record) for record, clean in zip(records, flags, strict=True) if clean}
        self.previous: set[int] | None = None

    def __enter__(self) -> None:
        self.previous = getattr(_surveyed, "known", None)
        _surveyed.known = self.known

    def __exit__(self, *_: object) -> None:
        _surveyed.known = self.previous


def clean_record(record: dict[str, Any]) -> int:
    """Clean every string of `record` in place; how many characters were removed.

    Most records have nothing to remove: the survey (`transforms/redaction/survey.py`, one
    pass in C, made once with redaction: `after_survey`) tells, and of the records it flags
    (it also flags invisible characters that stay) one C-speed serialisation tells which have
    nothing to remove; only the others (and those it cannot serialise) are walked.
    """
    known = getattr(_surveyed, "known", None)
    if known and id(record) in known:
        rest = {key: value for key, value in record.items() if key not in _CONVERSATION}
        if not survey_value(rest) & CLEAN:
            return 0
    elif not survey_value(record) & CLEAN:
        return 0
    try:
        encoded = orjson.dumps(record)
    except orjson.JSONEncodeError:
        pass
    else:
        if not _may_hold_controls(encoded):
            return 0
    _, removed = clean_value(record)
    return removed
