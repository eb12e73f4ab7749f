"""The survey (`transforms/redaction/survey.py`, C) against the Python code it lets skip.

A clear bit is a promise: SECRET clear, the prefilter finds no trigger (in the text as it is
and in its JSON, which `redact._texts` scans for `unique_info` and the tools), nothing may hide
one, redaction changes nothing; CLEAN clear, cleaning changes nothing. The Python side runs
with the survey switched off (`python_only`: every bit set), as without the C extension.
Texts are built from the pieces the triggers are made of, so that most come close to one.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms import redact
from transforms.cleaning import clean_record, clean_text, clean_value
from transforms.redaction import survey
from transforms.redaction.patterns import PREFILTER, search_any
from transforms.redaction.survey import CLEAN, SECRET, survey_record, survey_value
from transforms.redaction.text import has_b64_hint, may_hide

pytestmark = pytest.mark.skipif(not survey.NATIVE, reason="survey C extension not built")

PIECES = [
    *("token", "Token", "TOKEN", "oken", "oken=", "key", "Key", "KEY", "secret", "SECRET"),
    *("password", "passwd", "PASSWORD", "_pass", "_PASS", "authorization", "Authorization"),
    *("eyJ", "AKIA", "ASIA", "AIza", "PRIVATE", "sk-", "sk_live_", "rk_live_", "k_live_"),
    *("slack.com", "gh", "p_", "o_", "_pat_", "github_pat_", "hf_", "glpat-", "xoxb-"),
    *("://", "http://h", "u:p@", "@", "/", "AA", "A" * 33, "SG.", "?sig=", "&sig="),
    *("-Signature=", '"auth', "'auth", "mysql", "mariadb", "base64", "Base64", "BASE64"),
    *("b64", "B64", "atob", "LS0tLS1C", "\\u00", "\\u200b", "\\u2028", "\\ufeff", "\\u061c"),
    *("\\u180e", "-", "=", ":", "::", '"', "'", "\\", "\\\\", "]", "[", " ", "\t", "\n", "\r"),
    *("x", "1", "ok", "en", "ey", "ret", "ord", "d", "s", "k", "\u00e9", "\u200b", "\u200d"),
    *("\x1b", "\x1b[31m", "\x07", "\x7f", "\x85", "\xa0", "\u2028", "\ufeff", "\ue000"),
    "\U0010ffff",
]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)
VALUES = st.recursive(
    TEXTS | st.integers(-(2**70), 2**70) | st.floats() | st.booleans() | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXTS, inner, max_size=4),
    max_leaves=12,
)


@contextmanager
def python_only() -> Iterator[None]:
    """Redaction and cleaning as without the C extension: the survey sets every bit."""
    native = survey._SURVEY
    survey._SURVEY = None
    try:
        yield
    finally:
        survey._SURVEY = native


def _prefilter_clear(text: str) -> bool:
    return (
        PREFILTER.search(text) is None
        and not search_any(text)
        and not may_hide(text)
        and not has_b64_hint(text)
    )


def test_every_character_cleaning_changes_or_that_may_hide_a_secret_is_flagged() -> None:
    texts = [
        text
        for code in range(0x110000)
        for text in (chr(code), f"a{chr(code)}b", f"\u00e9{chr(code)}\u00e9")
    ]
    bits = [survey_value(text) for text in texts]
    with python_only():
        for text, bit in zip(texts, bits, strict=True):
            if clean_text(text)[0] != text:
                assert bit & CLEAN, ascii(text)
            if may_hide(text):
                assert bit & SECRET, ascii(text)


@settings(max_examples=1500, deadline=None)
@given(text=TEXTS, padding=st.sampled_from(["", " ", "x", "\n"]))
def test_a_text_the_survey_clears_has_no_trigger_and_nothing_to_clean(
    text: str, padding: str
) -> None:
    long = (text + padding) * (1000 // (len(text) + 1) + 1)  # the prefilter's long-text path
    for sample in (text, long):
        bits = survey_value(sample)
        with python_only():
            if not bits & SECRET:
                assert _prefilter_clear(sample)
                assert redact.redact_text(sample)[0] == sample
            if not bits & CLEAN:
                assert clean_text(sample) == (sample, 0)


@settings(max_examples=1200, deadline=None)
@given(value=VALUES)
def test_a_value_the_survey_clears_is_clear_as_json_too(value: Any) -> None:
    """`unique_info` and the tools reach the prefilter as JSON: keys before `":`, newlines
    and tabs as two characters, strings next to each other."""
    bits, named = survey_value(value), survey_value(value, named=True)
    with python_only():
        if not bits & SECRET:
            assert _prefilter_clear(orjson.dumps(value).decode())
        if isinstance(value, dict | list) and not named & SECRET:
            copied = copy.deepcopy(value)
            assert redact.redact_object(copied) == Counter()
            assert copied == value
        if isinstance(value, dict | list) and not bits & CLEAN:
            assert clean_value(copy.deepcopy(value))[1] == 0


def _strings(record: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(container, key) of every string value in the record."""
    out: list[tuple[Any, Any]] = []

    def walk(value: Any) -> None:
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in list(items):
            if isinstance(item, str):
                out.append((value, key))
            elif isinstance(item, dict | list):
                walk(item)

    walk(record)
    return out


@pytest.fixture(scope="module")
def reference_records(cases_lines: list[bytes]) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in cases_lines]


@settings(max_examples=1000, deadline=None)
@given(data=st.data())
def test_a_record_the_survey_clears_is_left_alone_by_redaction_and_cleaning(
    data: st.DataObject, reference_records: list[dict[str, Any]]
) -> None:
    record = copy.deepcopy(data.draw(st.sampled_from(reference_records)))
    spots = _strings(record)
    for _ in range(data.draw(st.integers(1, 3))):
        container, key = data.draw(st.sampled_from(spots))
        piece = data.draw(TEXTS)
        if isinstance(container, dict) and data.draw(st.booleans()):
            container[piece] = container[key]  # a key of its own
        else:
            container[key] = container[key] + piece if data.draw(st.booleans()) else piece
    bits = survey_record(record)
    with python_only():
        if not bits & SECRET:
            texts = redact._texts(record)
            assert texts is not None
            assert _prefilter_clear("\n".join(texts[0] + texts[1]))
            copied = copy.deepcopy(record)
            assert redact.redact_record(copied) == Counter()
            assert copied == record
        if not bits & CLEAN:
            copied = copy.deepcopy(record)
            assert clean_record(copied) == 0
            assert copied == record


def test_the_usual_record_needs_neither(reference_records: list[dict[str, Any]]) -> None:
    """What the survey is for: it clears almost every real record (5 of the 335 reference
    records hold terminal colours or a trigger)."""
    bits = Counter(survey_record(record) for record in reference_records)
    assert bits[0] >= 325


def test_values_that_are_not_plain_json_are_left_to_the_python_code() -> None:
    for value in ({1: "x"}, ("a",), {"a": {"b"}}, 2**64, -(2**63) - 1, [[[[]]]] * 0 + [b"x"]):
        assert survey_value(value) & SECRET
    deep: Any = "x"
    for _ in range(260):
        deep = [deep]
    assert survey_value(deep) == SECRET | CLEAN
    assert survey_value([1, 2.5, None, True, 2**63, "plain"]) == 0
