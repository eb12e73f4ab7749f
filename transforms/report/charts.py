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
here: only a y offset text, as on counts of a million, could push it). Each figure draws
with one renderer object (`_Canvas`), so matplotlib's text metrics, cached per renderer,
are measured once per report rather than once per chart; text layouts (the same tick labels,
legend entries and titles, laid out several times per draw) are kept (`_drawing`); and a
straight-edged patch's data limits are its vertices (`_Axes`), not a Bezier walk of each bar
and step. All of it leaves each chart's SVG byte for byte what a fresh figure draws
(tests/test_report_charts.py checks it).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_mixed import MixedModeRenderer
from matplotlib.backends.backend_svg import FigureCanvasSVG, RendererSVG
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.path import Path
from matplotlib.text import Text

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


_LINE_CODES = (Path.MOVETO, Path.LINETO, Path.CLOSEPOLY)


class _Axes(Axes):
    """Axes taking a straight-edged patch's data limits from its vertices at once.

    matplotlib walks every segment of a patch as a Bezier curve to find its extrema; a
    straight segment has none but its ends, so the vertices (those of CLOSEPOLY excepted,
    which only close back to a vertex already there) bound the patch exactly. Anything else
    (curves, NaN, an empty bar) goes the general way.
    """

    def _update_patch_limits(self, patch: Any) -> None:
        path = patch.get_path()
        vertices, codes = path.vertices, path.codes
        if codes is not None:
            if not np.isin(codes, _LINE_CODES).all():
                super()._update_patch_limits(patch)  # type: ignore[misc]
                return
            vertices = vertices[codes != Path.CLOSEPOLY]
        empty = isinstance(patch, Rectangle) and not patch.get_width() and not patch.get_height()
        if empty or not len(vertices) or not np.isfinite(vertices).all():
            super()._update_patch_limits(patch)  # type: ignore[misc]
            return
        transform = patch.get_transform()
        update_x, update_y = transform.contains_branch_separately(self.transData)
        if update_x or update_y:
            points = (transform - self.transData).transform(vertices)
            self.update_datalim(points, updatex=update_x, updatey=update_y)


_RENDERERS: list[tuple[RendererSVG, MixedModeRenderer]] = []


class _Canvas(FigureCanvasSVG):
    """The SVG canvas, drawing every chart with the same two renderer objects
    (re-initialised per chart, where `FigureCanvasSVG.print_svg` makes new ones)."""

    def print_svg(
        self,
        filename: Any,
        *,
        bbox_inches_restore: Any = None,
        metadata: dict[str, Any] | None = None,
        **_: Any,  # dpi, facecolor, ...: as for FigureCanvasSVG, not used
    ) -> None:
        figure = self.figure
        dpi = figure.dpi
        figure.dpi = 72
        width, height = figure.get_size_inches()
        if not _RENDERERS:
            _RENDERERS.append(
                (RendererSVG.__new__(RendererSVG), MixedModeRenderer.__new__(MixedModeRenderer))
            )
        vector, mixed = _RENDERERS[0]
        vector.__init__(width * 72, height * 72, filename, image_dpi=dpi, metadata=metadata)  # type: ignore[misc]
        mixed.__init__(  # type: ignore[misc]
            figure, width, height, dpi, vector, bbox_inches_restore=bbox_inches_restore
        )
        figure.draw(mixed)  # type: ignore[arg-type]  # it proxies the SVG renderer
        mixed.finalize()


_LAYOUTS: dict[tuple[Any, ...], Any] = {}
_MAX_LAYOUTS = 20_000
_LAYOUT: Callable[[Text, Any], Any] = Text._get_layout  # type: ignore[attr-defined]


def _layout_key(text: Text, renderer: Any) -> tuple[Any, ...] | None:
    """Everything `Text._get_layout` reads; None for wrapped text (its position counts)."""
    if text.get_wrap():
        return None
    figure = text.get_figure(root=True)
    return (
        renderer,
        None if figure is None else figure.dpi,
        text.get_text(),
        text.get_fontproperties().copy(),  # mutable: the key keeps its state of now
        text.get_rotation(),
        text.get_rotation_mode(),
        text.get_horizontalalignment(),
        text.get_verticalalignment(),
        getattr(text, "_multialignment", None),
        getattr(text, "_linespacing", None),
        text.get_usetex(),
        getattr(text, "_parse_math", None),
    )


def _kept_layout(text: Text, renderer: Any) -> Any:
    """`Text._get_layout`, computed once per distinct text, font, alignment and renderer."""
    key = _layout_key(text, renderer)
    if key is None:
        return _LAYOUT(text, renderer)
    found = _LAYOUTS.get(key)
    if found is None:
        if len(_LAYOUTS) >= _MAX_LAYOUTS:
            _LAYOUTS.clear()
        found = _LAYOUTS[key] = _LAYOUT(text, renderer)
    return found


@contextmanager
def _drawing() -> Iterator[None]:
    """The report's style, and text layouts kept, while a chart is built and drawn (for
    every `Text` of the process meanwhile: the report draws from one thread)."""
    Text._get_layout = _kept_layout  # type: ignore[attr-defined]
    try:
        with rc_context(_STYLE):
            yield
    finally:
        Text._get_layout = _LAYOUT  # type: ignore[attr-defined]


def _svg(figure: Figure, name: str) -> str:
    """The figure as an inline `<svg>` element with ids prefixed by `name` (call inside
    `_drawing`)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = _METADATA.sub("", text[text.index("<svg") :], count=1)
    text = _DECIMALS.sub(lambda m: m[1], text)  # a function: quicker than a template
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
    """A figure and its axes, empty, with fixed margins (call inside `_drawing`).

    With `reuse`, the figure of that size the last chart drew on, emptied: its artists,
    bar containers, legend, title and axis labels removed, data and view limits and
    autoscaling reset, margins restored (a legend beside the plot narrows them). Its ticks
    stay; they are relabelled at the next draw. Charts that fix ticks or invert an axis take
    a new one.
    """
    key = (width, height, left)
    if not reuse or key not in _FRAMES:
        figure = Figure(figsize=(width, height))
        _Canvas(figure)
        _margins(figure, left)
        frame = (figure, figure.add_subplot(axes_class=_Axes))
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
    axes.set_xlim(0, 1, auto=True)  # as a new axes: a chart that draws no data keeps them
    axes.set_ylim(0, 1, auto=True)
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
    with _drawing():
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
    with _drawing():
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
    with _drawing():
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
    with _drawing():
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
    with _drawing():
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
