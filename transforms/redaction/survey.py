"""What the strings of a record may hold, in one pass: redaction's and cleaning's quick check.

`survey_record(record)` and `survey_value(value)` walk a JSON-like value once (dict keys
too), in C (`_survey.c`), and return a bit set:

- `SECRET`: redaction has to look. Set for a trigger of the prefilter
  (`patterns.PREFILTER_BRANCHES`), a character that may hide a secret (`text.may_hide`), a
  key naming a secret (which its JSON would show as an assignment, `"api_key": ...`), a value
  that is not plain JSON and, for a record, one not of the shape `redact._texts` reads; with
  `named`, also a string under a key with a secret's word (`redact._redact_named`);
- `CLEAN`: cleaning (`cleaning.clean_value`) may change something: a control, format or other
  invisible character, or nesting close to `cleaning.MAX_DEPTH`.

Both are conservative: a clear bit guarantees that the Python code would find nothing and
change nothing (tests/test_redaction_survey.py checks the C against it), a set bit only
sends the value to that code, which decides as it always did. Without the C extension
(`TRAJCURATE_PURE_PYTHON=1` installs) every bit is set: the Python code runs for everything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["CLEAN", "NATIVE", "SECRET", "survey_record", "survey_value"]

SECRET = 1
CLEAN = 2
_EVERYTHING = SECRET | CLEAN

Survey = Callable[[Any, bool, bool, int], int]


def _native() -> Survey | None:
    try:
        from transforms.redaction import _survey  # type: ignore[attr-defined]
    except ImportError:  # built without a C compiler (TRAJCURATE_PURE_PYTHON=1)
        return None
    survey: Survey = _survey.survey
    return survey


_SURVEY = _native()
NATIVE = _SURVEY is not None


def survey_record(record: Any) -> int:
    """The bits for one IM record (its whole value, `redact._texts`' shape checked too)."""
    return _SURVEY(record, True, False, 0) if _SURVEY is not None else _EVERYTHING


def survey_value(value: Any, *, named: bool = False, depth: int = 0) -> int:
    """The bits for any JSON-like value found `depth` levels down in its record."""
    return _SURVEY(value, False, named, depth) if _SURVEY is not None else _EVERYTHING
