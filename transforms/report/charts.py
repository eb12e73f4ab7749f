"""The report's charts: matplotlib's SVG backend, rendered at build time and inlined.

Why server-side matplotlib rather than a JavaScript charting library: the page then carries
no third-party code at all (nothing to vendor, nothing that could reach a CDN, nothing to run
before a chart shows), the charts are plain `<svg>` in the DOM from `file://`, their size is
bounded by the aggregates (a 100k-trial run draws the same number of bars as a 100-trial
one), and matplotlib is the maintained, ubiquitous plotting library of the Python stack the
pipeline already runs on. It is an optional dependency: `pip install 'trajcurate[report]'`.

Several SVGs share one HTML document, so each chart's element ids are prefixed with its own
name (matplotlib's ids are only unique within one file), and the output is deterministic
(no date, a fixed hash salt).
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

from matplotlib import rc_context
from matplotlib.figure import Figure

__all__ = ["bar_chart", "decile_chart", "histogram_chart", "line_chart", "share_chart"]

_STYLE: dict[Any, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "trajcurate-report",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "path.simplify": True,
}
_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
)
_RESOLVED, _UNRESOLVED, _THRESHOLD = "#2ca02c", "#d62728", "#333333"
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_DECIMALS = re.compile(r"(\d\.\d\d)\d+")
_IDS = re.compile(r'\bid="([^"]+)"')
_REFS = re.compile(r'(url\(#|xlink:href="#|href="#)([^)"]+)')


def _svg(figure: Figure, name: str) -> str:
    """The figure as an inline `<svg>` element with ids prefixed by `name`."""
    buffer = io.StringIO()
    with rc_context(_STYLE):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = _DECIMALS.sub(r"\1", _METADATA.sub("", text[text.index("<svg") :], count=1))
    text = _IDS.sub(lambda m: f'id="{name}-{m.group(1)}"', text)
    text = _REFS.sub(lambda m: f"{m.group(1)}{name}-{m.group(2)}", text)
    return text.replace("<svg ", f'<svg class="chart" data-chart="{name}" role="img" ', 1)


def _legend_beside(figure: Figure, axes: Any) -> None:
    """Segments' legend to the right of the plot, where it never hides a line."""
    figure.subplots_adjust(right=0.7)
    if not axes.get_legend_handles_labels()[0]:
        return  # nothing drawn (no trial in any segment)
    axes.legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _figure(width: float = 6.4, height: float = 2.8, left: float = 0.11) -> Figure:
    """A figure with fixed margins (a "tight" bounding box would draw everything twice)."""
    with rc_context(_STYLE):
        figure = Figure(figsize=(width, height))
        figure.subplots_adjust(left=left, right=0.98, top=0.9, bottom=0.16)
        return figure


def histogram_chart(
    name: str,
    title: str,
    resolved: Sequence[int],
    unresolved: Sequence[int],
    threshold: float | None,
) -> str:
    """Stacked bars over [0, 1]: resolved and unresolved trials, the threshold marked."""
    with rc_context(_STYLE):
        figure = _figure()
        axes = figure.add_subplot()
        bins = len(resolved)
        lefts = [i / bins for i in range(bins)]
        axes.bar(
            lefts,
            resolved,
            width=1 / bins,
            align="edge",
            color=_RESOLVED,
            label="resolved",
            edgecolor="white",
            linewidth=0.4,
        )
        axes.bar(
            lefts,
            unresolved,
            width=1 / bins,
            align="edge",
            bottom=list(resolved),
            color=_UNRESOLVED,
            label="unresolved",
            edgecolor="white",
            linewidth=0.4,
        )
        if threshold is not None:
            axes.axvline(
                threshold,
                color=_THRESHOLD,
                linestyle="--",
                linewidth=1.2,
                label=f"threshold {threshold:g}",
            )
        axes.set_xlim(0, 1)
        axes.set_title(title, loc="left")
        axes.set_ylabel("trials")
        axes.legend(frameon=False, fontsize=8, loc="upper left")
        return _svg(figure, name)


def share_chart(
    name: str,
    title: str,
    series: Sequence[tuple[str, Sequence[int]]],
    threshold: float | None,
) -> str:
    """One step outline per segment: each segment's share of trials per bin over [0, 1]
    (shares, so a small segment is as readable as a large one), the threshold marked."""
    with rc_context(_STYLE):
        figure = _figure()
        axes = figure.add_subplot()
        for index, (label, counts) in enumerate(series):
            total = sum(counts) or 1
            bins = len(counts)
            edges = [i / bins for i in range(bins + 1)]
            shares = [c / total for c in counts]
            axes.stairs(
                shares,
                edges,
                color=_COLOURS[index % len(_COLOURS)],
                label=f"{label} ({sum(counts)})",
                linewidth=1.3,
            )
        if threshold is not None:
            axes.axvline(threshold, color=_THRESHOLD, linestyle="--", linewidth=1.2)
        axes.set_xlim(0, 1)
        axes.set_ylabel("share of segment")
        axes.set_title(title, loc="left")
        _legend_beside(figure, axes)
        return _svg(figure, name)


def decile_chart(
    name: str, title: str, series: Sequence[tuple[str, Sequence[tuple[int, float]]]]
) -> str:
    """Resolved rate per score decile, one line per series of (decile, rate) points (a
    decile that ties left empty has no point)."""
    with rc_context(_STYLE):
        figure = _figure()
        axes = figure.add_subplot()
        for index, (label, points) in enumerate(series):
            axes.plot(
                [decile for decile, _ in points],
                [rate for _, rate in points],
                marker="o",
                markersize=3,
                color=_COLOURS[index % len(_COLOURS)],
                label=label,
                linewidth=2.2 if index == 0 else 1.0,
            )
        axes.set_ylim(0, 1.02)
        axes.set_xlim(0.5, 10.5)
        axes.set_xlabel("score decile (1 = lowest scores)")
        axes.set_ylabel("resolved rate")
        axes.set_title(title, loc="left")
        _legend_beside(figure, axes)
        return _svg(figure, name)


def bar_chart(name: str, title: str, labels: Sequence[str], counts: Sequence[float]) -> str:
    """Horizontal bars, largest first (labels shortened to 50 characters)."""
    with rc_context(_STYLE):
        height = 0.9 + 0.22 * max(len(labels), 1)
        figure = _figure(width=7.0, height=height, left=0.5)
        figure.subplots_adjust(top=1 - 0.32 / height, bottom=0.4 / height)  # fixed inches
        axes = figure.add_subplot()
        shown = [label if len(label) <= 50 else label[:49] + "…" for label in labels]
        axes.barh(range(len(shown)), counts, color=_COLOURS[0])
        axes.set_yticks(range(len(shown)), shown)
        axes.invert_yaxis()
        axes.set_title(title, loc="left")
        return _svg(figure, name)


def line_chart(
    name: str,
    title: str,
    xs: Sequence[float],
    series: Sequence[tuple[str, Sequence[float]]],
    marker: float | None,
    ylabel: str,
) -> str:
    """Lines over a shared x axis with a vertical marker (the threshold)."""
    with rc_context(_STYLE):
        figure = _figure()
        axes = figure.add_subplot()
        for index, (label, ys) in enumerate(series):
            axes.plot(
                xs,
                ys,
                color=_COLOURS[index % len(_COLOURS)],
                label=label,
                linewidth=2.2 if index == 0 else 1.0,
            )
        if marker is not None:
            axes.axvline(marker, color=_THRESHOLD, linestyle="--", linewidth=1.2)
        axes.set_xlim(0, 1)
        axes.set_ylim(0, 1.02)
        axes.set_xlabel("threshold")
        axes.set_ylabel(ylabel)
        axes.set_title(title, loc="left")
        _legend_beside(figure, axes)
        return _svg(figure, name)
