"""The report's charts draw fast (one reused figure per size, one renderer, text layouts
kept, patch limits from vertices, titles not re-placed) and still draw, byte for byte, what
plain matplotlib draws: a fresh figure and axes per chart, its own canvas, auto-placed
titles."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("matplotlib", reason="the report needs the 'report' extra (matplotlib)")

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.text import Text

from transforms.report import charts


def _counts(rng: random.Random, scale: int) -> list[int]:
    return [rng.randrange(scale) for _ in range(20)]


def _draw_all() -> list[str]:
    """A run of every chart kind, sizes and data varied, in an order that reuses figures
    after every other kind (and after a legend beside the plot, a threshold, no data)."""
    rng = random.Random(7)
    segments = [(f"segment-{i}", _counts(rng, 30)) for i in range(12)]
    deciles = [(i, rng.random()) for i in range(1, 11)]
    xs = [i / 100 for i in range(101)]
    return [
        charts.histogram_chart("h1", "composite", _counts(rng, 50), _counts(rng, 50), 0.5),
        charts.share_chart("s1", "per task", segments, 0.5),
        charts.histogram_chart("h2", "no threshold", _counts(rng, 9), _counts(rng, 9), None),
        charts.decile_chart("d1", "deciles", [("all", deciles), ("scaffold x", deciles[:6])]),
        charts.share_chart("s2", "two segments", segments[:2], None),
        charts.line_chart("l1", "kept", xs, [("all", [1 - x for x in xs])], 0.3, "share"),
        charts.bar_chart("b1", "rejects", ["a reason " * 8, "another"], [12, 3]),
        charts.share_chart("s3", "nothing", [], 0.5),
        charts.decile_chart("d2", "no points", [("all", [])]),
        charts.histogram_chart("h3", "empty", [0] * 20, [0] * 20, 0.5),
        # Counts of millions: a y offset text ("1e6") that lifts the title.
        charts.histogram_chart("h4", "huge", _counts(rng, 3_000_000), [0] * 20, 0.5),
        charts.histogram_chart("h5", "after huge", _counts(rng, 40), _counts(rng, 40), 0.7),
        charts.bar_chart("b2", "detector rate", ["loop", "truncation", "x"], [40.0, 12.5, 0.0]),
    ]


def _plain_frame(
    width: float = 6.4, height: float = 2.8, left: float = 0.11, *, reuse: bool = True
) -> tuple[Figure, Any]:
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(left=left, right=0.98, top=0.9, bottom=0.16)
    return figure, figure.add_subplot()


@contextmanager
def _plain_drawing() -> Iterator[None]:
    with rc_context(charts._STYLE):
        yield


def _plain_title(axes: Any, title: str, *, fixed: bool = True) -> None:
    axes.set_title(title, loc="left")


def test_fast_charts_are_byte_for_byte_plain_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _draw_all()
    again = _draw_all()  # every figure reused from the first run
    with monkeypatch.context() as patched:
        patched.setattr(charts, "_frame", _plain_frame)
        patched.setattr(charts, "_drawing", _plain_drawing)
        patched.setattr(charts, "_title", _plain_title)
        plain = _draw_all()
    assert len(fast) == len(plain)
    for mine, theirs in zip(fast, plain, strict=True):
        assert mine == theirs
    assert again == fast


def test_huge_counts_lift_the_title_above_the_offset_text() -> None:
    svg = charts.histogram_chart("huge", "huge", [2_000_000] * 20, [0] * 20, None)
    assert "1e6" in svg


def test_text_layout_is_matplotlibs_own_outside_a_chart() -> None:
    original: Callable[..., Any] = Text._get_layout  # type: ignore[attr-defined]
    charts.share_chart("s", "per scaffold", [("a", [1] * 20)], 0.5)
    assert Text._get_layout is original  # type: ignore[attr-defined]
