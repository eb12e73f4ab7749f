"""The compiled build: C entropy counter equals its Python reference, compiled modules are in
use (unless installed with TRAJCURATE_PURE_PYTHON=1), and stale compiled modules are refused."""

from __future__ import annotations

import importlib.machinery
import math
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import scorers
from scorers import im, im_validity
from scorers.im_check import is_im_record
from scorers.tqs_v2 import score, speedups
from transforms.redaction import survey
from transforms.sinks import schema

PURE_PYTHON = os.environ.get("TRAJCURATE_PURE_PYTHON") == "1"
# Latin-1 strings take the C table path; wider ones (BMP, astral) the sort path.
TEXTS = st.one_of(
    st.text(alphabet=st.characters(max_codepoint=0xFF)),
    st.text(),
    st.text(alphabet="ab\n ", max_size=6000),
)


def test_entropy_of_known_strings() -> None:
    values = speedups.python_character_entropies(["", "aaaa", "ab", "aab", "x" * 9000], 5000)
    assert values[:3] == [0.0, 0.0, 1.0]
    assert values[3] == pytest.approx(math.log2(3) - 2 / 3)
    assert values[4] == 0.0


@pytest.mark.skipif(not speedups.NATIVE, reason="C entropy extension not built")
@given(texts=st.lists(TEXTS, max_size=8), limit=st.integers(min_value=0, max_value=7000))
def test_native_entropies_equal_python_reference(texts: list[str], limit: int) -> None:
    native = speedups.character_entropies(texts, limit)
    reference = speedups.python_character_entropies(texts, limit)
    assert native == pytest.approx(reference, abs=1e-12)


@pytest.mark.skipif(not speedups.NATIVE, reason="C entropy extension not built")
def test_native_entropies_reject_non_strings() -> None:
    with pytest.raises(TypeError, match="every text must be a str"):
        speedups.character_entropies(["ok", 3], 10)  # type: ignore[list-item]


HINTS = st.lists(
    st.text(alphabet="abcEXIT :<>\n", min_size=1, max_size=5), min_size=1, max_size=6
).map(tuple)


@pytest.mark.skipif(not speedups.NATIVE, reason="C speedups extension not built")
@given(
    text=st.one_of(TEXTS, st.text(alphabet="aAbBcCeExXiItT :<>\n\u0130\u212a")),
    hints=HINTS,
    ignore_case=st.booleans(),
)
def test_native_contains_any_equals_python_reference(
    text: str, hints: tuple[str, ...], ignore_case: bool
) -> None:
    folded = tuple(h.lower() for h in hints) if ignore_case else hints
    expected = speedups.python_contains_any(text, folded, ignore_case)
    assert speedups.contains_any(text, folded, ignore_case) is expected


@pytest.mark.skipif(not speedups.NATIVE, reason="C speedups extension not built")
def test_native_contains_any_examples() -> None:
    assert speedups.contains_any("Exit Code: 1", ("exit code",), True)
    assert not speedups.contains_any("Exit Code: 1", ("exit code",), False)
    assert speedups.contains_any("ab", ("zz", "b"), False)
    assert not speedups.contains_any("a", ("ab",), False)
    assert speedups.contains_any("\u0130", ("i",), True)  # 'İ'.lower() is 'i' + a dot
    with pytest.raises(TypeError, match="ASCII"):
        speedups.contains_any("text", ("é",), False)


@pytest.mark.skipif(PURE_PYTHON, reason="installed with TRAJCURATE_PURE_PYTHON=1")
def test_compiled_modules_are_in_use() -> None:
    # A silently uncompiled install would score several times slower.
    assert speedups.NATIVE
    assert survey.NATIVE  # redaction and cleaning would walk every record in Python
    assert schema.NATIVE_FAST_PATHS is not None  # messages conformed in C
    assert not score.__file__.endswith(".py"), score.__file__
    assert not im_validity.__file__.endswith(".py"), im_validity.__file__
    assert im.IM_RECORD_CHECK is not is_im_record  # the IM check in C (`_im_fast.c`)
    assert im_validity.NATIVE_TRAINABLE_OK is not None  # a trainable record told in C


def _touch(path: Path, mtime: float) -> None:
    path.write_text("")
    os.utime(path, (mtime, mtime))


def test_source_newer_than_compiled_module_is_reported(tmp_path: Path) -> None:
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    _touch(tmp_path / f"fresh{suffix}", 2000.0)
    _touch(tmp_path / "fresh.py", 1000.0)
    _touch(tmp_path / f"stale{suffix}", 1000.0)
    _touch(tmp_path / "stale.py", 2000.0)
    _touch(tmp_path / "lonely.py", 3000.0)
    stale = scorers._stale_sources(str(tmp_path))
    assert [Path(p).name for p in stale] == ["stale.py"]
