"""Separation statistics of a score against "resolved": AUROC, its bootstrap interval, deciles.

AUROC is the probability that a resolved trial scores above an unresolved one, ties counting
one half (the Mann-Whitney U over the number of pairs). Scores are rounded to 4 decimals by
TQS V2, so they take few distinct values: everything is computed on the counts of each
(value, label) cell instead of per trial, which keeps 100k trials cheap.

The bootstrap resamples trials with replacement; the counts of a resample over the cells are
multinomial, so drawing those counts (numpy's `multinomial`, a fixed seed) is the same
bootstrap without materialising any resample. The interval is the 2.5th-97.5th percentile of
the resampled AUROCs (resamples holding one class only are left out). A multinomial draw
costs one binomial per cell, so with more than 51 distinct values the resamples are drawn
over the scores binned to 0.02 (at most 102 cells: the report computes some 600 intervals)
and the interval is shifted by the difference between the exact AUROC and the binned one;
the point estimate is always the exact one, and a test checks the interval against a
bootstrap over the trials themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "Decile",
    "Separation",
    "auroc",
    "cumulative_at_least",
    "deciles",
    "histogram",
    "separation",
    "separation_sentence",
]

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
DEFAULT_RESAMPLES = 500
_MAX_DISTINCT = 51


def _cells(scores: Floats, resolved: Bools) -> tuple[Floats, Floats, Floats]:
    """Distinct values ascending, and the resolved / unresolved counts at each."""
    values, inverse = np.unique(scores, return_inverse=True)
    positives = np.bincount(
        inverse, weights=resolved.astype(np.float64), minlength=len(values)
    ).astype(np.float64)
    totals = np.bincount(inverse, minlength=len(values)).astype(np.float64)
    return values, positives, totals - positives


def _auroc_from_counts(positives: Floats, negatives: Floats) -> Floats:
    """AUROC per row of count matrices (cells ascending on the last axis); NaN without both
    classes."""
    below = np.cumsum(negatives, axis=-1) - negatives  # negatives strictly below each cell
    wins = np.sum(positives * (below + 0.5 * negatives), axis=-1)
    pairs = positives.sum(axis=-1) * negatives.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, wins / np.where(pairs > 0, pairs, 1), np.nan)


def auroc(scores: Floats, resolved: Bools) -> float | None:
    """AUROC of `scores` for `resolved` (ties count 1/2); None without both classes."""
    _, positives, negatives = _cells(scores, resolved)
    value = float(_auroc_from_counts(positives, negatives))
    return None if np.isnan(value) else value


@dataclass(frozen=True, slots=True)
class Separation:
    n: int
    resolved: int
    auroc: float | None
    low: float | None
    high: float | None

    def to_json(self) -> dict[str, Any]:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 4)

        return {
            "n": self.n,
            "resolved": self.resolved,
            "auroc": rounded(self.auroc),
            "low": rounded(self.low),
            "high": rounded(self.high),
        }


def separation(
    scores: Floats, resolved: Bools, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Separation:
    """AUROC with its bootstrap 95% interval (scores must hold no NaN)."""
    n, n_resolved = len(scores), int(resolved.sum())
    _, positives, negatives = _cells(scores, resolved)
    point = float(_auroc_from_counts(positives, negatives))
    if np.isnan(point):
        return Separation(n, n_resolved, None, None, None)
    shift = 0.0
    if len(positives) > _MAX_DISTINCT:
        _, positives, negatives = _cells(np.round(scores * 50) / 50, resolved)
        shift = point - float(_auroc_from_counts(positives, negatives))
    cells = np.concatenate([positives, negatives])
    draws = np.random.default_rng(seed).multinomial(n, cells / n, size=resamples)
    width = len(positives)
    values = _auroc_from_counts(
        draws[:, :width].astype(np.float64), draws[:, width:].astype(np.float64)
    )
    values = values[~np.isnan(values)]
    if not len(values):
        return Separation(n, n_resolved, point, None, None)
    low, high = np.percentile(values, [2.5, 97.5]) + shift
    return Separation(n, n_resolved, point, float(max(low, 0.0)), float(min(high, 1.0)))


def separation_sentence(name: str, segment: str, result: Separation) -> str | None:
    """A plain sentence when a score does not separate or separates the wrong way."""
    where = "overall" if segment == "all" else f"for {segment}"
    if result.auroc is None:
        return f"{name} cannot be judged {where}: it needs both resolved and unresolved trials."
    if result.low is None or result.high is None:
        return None
    if result.high < 0.5:
        return (
            f"{name} separates the wrong way {where}: unresolved trials score higher "
            f"(AUROC {result.auroc:.2f}, 95% CI {result.low:.2f}-{result.high:.2f})."
        )
    if result.low <= 0.5:
        return (
            f"{name} does not separate resolved from unresolved trials {where} "
            f"(AUROC {result.auroc:.2f}, 95% CI {result.low:.2f}-{result.high:.2f} covers 0.5)."
        )
    return None


@dataclass(frozen=True, slots=True)
class Decile:
    index: int
    n: int
    low: float
    high: float
    resolved_rate: float

    def to_json(self) -> dict[str, Any]:
        return {
            "decile": self.index,
            "n": self.n,
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "resolved_rate": round(self.resolved_rate, 4),
        }


def deciles(scores: Floats, resolved: Bools) -> list[Decile]:
    """The resolved rate per score decile, lowest scores first.

    Trials are ranked by score; a run of tied scores goes whole into the decile of its middle
    rank (so equal scores never straddle two deciles, and a decile may be empty and left
    out).
    """
    n = len(scores)
    if not n:
        return []
    values, positives, negatives = _cells(scores, resolved)
    totals = positives + negatives
    middle = np.cumsum(totals) - totals / 2  # middle rank of each run of ties
    which = np.minimum((middle * 10 // n).astype(np.int64), 9)
    result = []
    for index in range(10):
        chosen = which == index
        count = int(totals[chosen].sum())
        if count:
            rate = float(positives[chosen].sum()) / count
            low, high = float(values[chosen].min()), float(values[chosen].max())
            result.append(Decile(index + 1, count, low, high, rate))
    return result


def histogram(scores: Floats, bins: int = 20) -> list[int]:
    """Counts in `bins` equal bins over [0, 1] (the last bin closed); values are clipped."""
    index = np.minimum((np.clip(scores, 0.0, 1.0) * bins).astype(np.int64), bins - 1)
    return [int(c) for c in np.bincount(index, minlength=bins)]


def cumulative_at_least(scores: Floats, thresholds: Floats) -> list[int]:
    """How many scores are >= each threshold (thresholds ascending)."""
    ordered = np.sort(scores)
    below = np.searchsorted(ordered, thresholds - 1e-9, side="left")
    return [int(len(ordered) - b) for b in below]
