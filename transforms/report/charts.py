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

What a chart costs (a report draws about 85, whatever the number of trials): matplotlib's
per-artist Python work, not the SVG. So the charts of one size share one figure and axes
(`_frame`), emptied of what the last chart drew but keeping their tick objects, whose
creation cost as much as the bars; and a title sits at the top of its axes (`_title`) instead
of matplotlib measuring every tick label first to see whether it must move up (it never does
here: only a y offset text, as on counts of a million, could push it). Both leave each chart's
SVG byte for byte what a fresh figure draws.
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


_FRAMES: dict[tuple[float, float, float], tuple[Figure, Any]] = {}


def _margins(figure: Figure, left: float) -> None:
    """Fixed margins (a "tight" bounding box would draw everything twice)."""
    figure.subplots_adjust(left=left, right=0.98, top=0.9, bottom=0.16)


def _frame(
    width: float = 6.4, height: float = 2.8, left: float = 0.11, *, reuse: bool = True
) -> tuple[Figure, Any]:
    """A figure and its axes, empty, with fixed margins (call inside `rc_context(_STYLE)`).

    With `reuse`, the figure of that size the last chart drew on, emptied: its artists,
    bar containers, legend, title and axis labels removed, data limits and autoscaling
    reset, margins restored (a legend beside the plot narrows them). Its ticks stay; they
    are relabelled at the next draw. Charts that fix ticks or invert an axis take a new one.
    """
    key = (width, height, left)
    if not reuse or key not in _FRAMES:
        figure = Figure(figsize=(width, height))
        _margins(figure, left)
        frame = (figure, figure.add_subplot())
        if reuse:
            _FRAMES[key] = frame
        return frame
    figure, axes = _FRAMES[key]
    for artists in (axes.patches, axes.lines, axes.collections, axes.texts, axes.images):
        for artist in list(artists):
            artist.remove()
    if axes.legend_ is not None:
        axes.legend_.remove()
    axes.containers.clear()
    axes.set_prop_cycle(None)
    axes.set_title("", loc="left")
    axes.set_xlabel("")
    axes.set_ylabel("")
    axes.relim()
    axes.set_autoscale_on(True)
    _margins(figure, left)
    return figure, axes


def _title(axes: Any, title: str, *, fixed: bool = True) -> None:
    """The title at the top left of the axes. `fixed=False` (on a new frame only) lets
    matplotlib lift it above a y offset text, which only counts of 10**5 and more may get."""
    axes.set_title(title, loc="left", y=1.0 if fixed else None)


def histogram_chart(
    name: str,
    title: str,
    resolved: Sequence[int],
    unresolved: Sequence[int],
    threshold: float | None,
) -> str:
    """Stacked bars over [0, 1]: resolved and unresolved trials, the threshold marked."""
    with rc_context(_STYLE):
        small = max(map(sum, zip(resolved, unresolved, strict=True)), default=0) < 10**5
        figure, axes = _frame(reuse=small)
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
        _title(axes, title, fixed=small)
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
        figure, axes = _frame()
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
        _title(axes, title)
        _legend_beside(figure, axes)
        return _svg(figure, name)


def decile_chart(
    name: str, title: str, series: Sequence[tuple[str, Sequence[tuple[int, float]]]]
) -> str:
    """Resolved rate per score decile, one line per series of (decile, rate) points (a
    decile that ties left empty has no point)."""
    with rc_context(_STYLE):
        figure, axes = _frame()
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
        _title(axes, title)
        _legend_beside(figure, axes)
        return _svg(figure, name)


def bar_chart(name: str, title: str, labels: Sequence[str], counts: Sequence[float]) -> str:
    """Horizontal bars, largest first (labels shortened to 50 characters)."""
    with rc_context(_STYLE):
        height = 0.9 + 0.22 * max(len(labels), 1)
        figure, axes = _frame(width=7.0, height=height, left=0.5, reuse=False)
        figure.subplots_adjust(top=1 - 0.32 / height, bottom=0.4 / height)  # fixed inches
        shown = [label if len(label) <= 50 else label[:49] + "…" for label in labels]
        axes.barh(range(len(shown)), counts, color=_COLOURS[0])
        axes.set_yticks(range(len(shown)), shown)
        axes.invert_yaxis()
        _title(axes, title)
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
        figure, axes = _frame()
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
        _title(axes, title)
        _legend_beside(figure, axes)
        return _svg(figure, name)
