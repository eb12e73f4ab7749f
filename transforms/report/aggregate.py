"""Everything the report shows, as small JSON-able aggregates of the sidecar rows.

Rows are read once into columns (`Columns`); each section is then a function of the columns.
Only aggregates and the row indices of the examples shown leave this module, so the page's
size depends on the number of segments and examples, not on the number of trials.

Segments: every trial is in `all`, and in one segment of each dimension (scaffold, model,
language, task). A dimension shows its MAX_SEGMENTS largest segments; the rest are counted
in `overview.hidden_segments`.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scorers.diagnose import DETECTORS
from scorers.tqs_v2 import SCORE_KEYS
from transforms.report import stats
from transforms.report.signatures import normalise

__all__ = [
    "DIAGNOSIS_KEYS",
    "DIMENSIONS",
    "MAX_SEGMENTS",
    "REPORT_KEYS",
    "Columns",
    "Segment",
    "aggregate",
    "reason_pattern",
]

DIMENSIONS = ("scaffold", "model", "language", "task")
MAX_SEGMENTS = 12
REPORT_KEYS = (
    "composite_score",
    *(k for k in SCORE_KEYS if k.endswith("_score") and k != "composite_score"),
    "reproduce_first",
)
DIAGNOSIS_KEYS = ("trajectory_score", "task_completion_score")
HISTOGRAM_BINS = 20
THRESHOLDS = np.round(np.arange(101) / 100, 2)
TOP_ERRORS = 8
ERROR_EXAMPLES = 3
DISAGREEMENTS = 25
MAX_TASKS = 1000
DETECTOR_EXAMPLES = 3


@dataclass(frozen=True, slots=True)
class Segment:
    dimension: str  # "all" or one of DIMENSIONS
    value: str

    @property
    def label(self) -> str:
        return "all trials" if self.dimension == "all" else f"{self.dimension} = {self.value}"

    @property
    def key(self) -> str:
        return "all" if self.dimension == "all" else f"{self.dimension}:{self.value}"


@dataclass
class Columns:
    """The rows as columns; `tool_errors` is counted while reading (rows are not kept)."""

    ids: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    dims: dict[str, list[str]] = field(default_factory=lambda: {d: [] for d in DIMENSIONS})
    agents: list[str] = field(default_factory=list)
    rewards: list[float | None] = field(default_factory=list)
    resolved_list: list[bool] = field(default_factory=list)
    kept_list: list[bool] = field(default_factory=list)
    reasons: list[str | None] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    score_lists: dict[str, list[float]] = field(
        default_factory=lambda: {k: [] for k in REPORT_KEYS}
    )
    judge_lists: dict[str, list[float]] = field(default_factory=dict)
    diagnosed: list[bool] = field(default_factory=list)
    diagnosis_lists: dict[str, list[float]] = field(
        default_factory=lambda: {k: [] for k in DIAGNOSIS_KEYS}
    )
    detections: list[list[tuple[str, str, float]]] = field(default_factory=list)
    errors_by_tool: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    errors_by_agent: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    error_examples: dict[tuple[str, str], list[int]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # Each column as a (read-only) array once asked for, until the next row.
    _arrays: dict[str, np.ndarray[Any, Any]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def add(self, row: Mapping[str, Any]) -> None:
        if self._arrays:
            self._arrays.clear()
        index = len(self.ids)
        self.ids.append(str(row.get("instance_id")))
        self.jobs.append(str(row.get("job")))
        for dimension in DIMENSIONS:
            self.dims[dimension].append(str(row.get(dimension) or "unknown"))
        agent = str(row.get("agent") or "unknown")
        self.agents.append(agent)
        reward = row.get("reward")
        self.rewards.append(float(reward) if isinstance(reward, int | float) else None)
        self.resolved_list.append(row.get("resolved") is True)
        self.kept_list.append(row.get("decision") == "kept")
        self.reasons.append(row.get("reason") if isinstance(row.get("reason"), str) else None)
        turns = row.get("turns")
        self.turns.append(turns if isinstance(turns, int) else 0)
        score = _mapping(row.get("score"))
        for key in REPORT_KEYS:
            self.score_lists[key].append(_float(score.get(key)))
        judges = _mapping(row.get("judges"))
        for name in {*self.judge_lists, *judges}:
            column = self.judge_lists.setdefault(name, [math.nan] * index)
            column.append(_float(judges.get(name)))
        self._add_diagnosis(row.get("diagnosis"))
        for entry in row.get("tool_errors") or []:
            if isinstance(entry, list) and len(entry) == 3:
                tool, signature, count = str(entry[0]), str(entry[1]), int(entry[2])
                self.errors_by_tool[tool][signature] += count
                self.errors_by_agent[agent][f"{tool}: {signature}"] += count
                examples = self.error_examples[(tool, signature)]
                if len(examples) < ERROR_EXAMPLES:
                    examples.append(index)

    def _add_diagnosis(self, found: Any) -> None:
        """The row's diagnosis (`rows.diagnosis_summary`): its scores and fired detectors."""
        diagnosis = _mapping(found)
        self.diagnosed.append(bool(diagnosis))
        for key in DIAGNOSIS_KEYS:
            self.diagnosis_lists[key].append(_float(diagnosis.get(key)))
        fired = []
        for entry in diagnosis.get("detections") or []:
            if isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str):
                severity = entry[1] if isinstance(entry[1], str) else "unknown"
                fired.append((entry[0], severity, _float(entry[2])))
        self.detections.append(fired)

    def __len__(self) -> int:
        return len(self.ids)

    def array(self, key: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        for table in (self.score_lists, self.diagnosis_lists, self.judge_lists):
            if key in table:
                return self._cached(f"score:{key}", table[key], np.float64)
        raise KeyError(key)

    def resolved(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        return self._cached("resolved", self.resolved_list, np.bool_)

    def _cached(self, name: str, values: list[Any], dtype: Any) -> np.ndarray[Any, Any]:
        found = self._arrays.get(name)
        if found is None:
            found = self._arrays[name] = np.asarray(values, dtype=dtype)
            found.flags.writeable = False
        return found


def _mapping(value: Any) -> Mapping[str, Any]:
    if type(value) is dict:  # what JSON gives: no abstract-class check per row
        return value
    return value if isinstance(value, Mapping) else {}


def _float(value: Any) -> float:
    kind = type(value)
    if kind is float:  # the common cases first: 15 of these per row
        return value  # type: ignore[no-any-return]
    if value is None:
        return math.nan
    if kind is bool or not isinstance(value, int | float):
        return math.nan
    return float(value)


def reason_pattern(stage: str, reason: str) -> str:
    """A reject reason with its incidental details replaced (so reasons group)."""
    return f"{stage}: {normalise(reason)}"


def _segments(columns: Columns) -> tuple[list[Segment], dict[str, int]]:
    """`all`, then each dimension's largest segments; and how many were left out per
    dimension."""
    segments = [Segment("all", "all")]
    hidden: dict[str, int] = {}
    for dimension in DIMENSIONS:
        counts = Counter(columns.dims[dimension])
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        segments += [Segment(dimension, value) for value, _ in ranked[:MAX_SEGMENTS]]
        hidden[dimension] = max(0, len(ranked) - MAX_SEGMENTS)
    return segments, hidden


def _masks(
    columns: Columns, segments: list[Segment]
) -> dict[str, np.ndarray[Any, np.dtype[np.bool_]]]:
    masks = {"all": np.ones(len(columns), dtype=np.bool_)}
    for dimension in DIMENSIONS:
        codes: dict[str, int] = {}
        coded = np.fromiter(
            (codes.setdefault(v, len(codes)) for v in columns.dims[dimension]),
            dtype=np.int64,
            count=len(columns),
        )
        for segment in segments:
            if segment.dimension == dimension:
                masks[segment.key] = coded == codes[segment.value]
    return masks


def _distributions(
    columns: Columns, keys: Iterable[str], segments: list[Segment], masks: Mapping[str, Any]
) -> dict[str, Any]:
    """Per score and segment: histograms of resolved and unresolved trials, and how many
    trials have no value."""
    resolved = columns.resolved()
    result: dict[str, Any] = {}
    for key in keys:
        values = columns.array(key)
        present = ~np.isnan(values)
        per_segment = {}
        for segment in segments:
            chosen = masks[segment.key] & present
            per_segment[segment.key] = {
                "resolved": stats.histogram(values[chosen & resolved], HISTOGRAM_BINS),
                "unresolved": stats.histogram(values[chosen & ~resolved], HISTOGRAM_BINS),
                "missing": int((masks[segment.key] & ~present).sum()),
            }
        result[key] = per_segment
    return result


def _separation(
    columns: Columns,
    keys: Iterable[str],
    segments: list[Segment],
    masks: Mapping[str, Any],
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    resolved = columns.resolved()
    result: dict[str, Any] = {}
    for key in keys:
        values = columns.array(key)
        present = ~np.isnan(values)
        rows = {}
        for segment in segments:
            chosen = masks[segment.key] & present
            found = stats.separation(values[chosen], resolved[chosen], resamples, seed)
            rows[segment.key] = {
                **found.to_json(),
                "sentence": stats.separation_sentence(
                    key, "all" if segment.dimension == "all" else segment.label, found
                ),
            }
        everything = present
        result[key] = {
            "segments": rows,
            "deciles": [d.to_json() for d in stats.deciles(values[present], resolved[present])],
            "deciles_by_scaffold": {
                segment.value: [
                    d.to_json()
                    for d in stats.deciles(
                        values[masks[segment.key] & everything],
                        resolved[masks[segment.key] & everything],
                    )
                ]
                for segment in segments
                if segment.dimension == "scaffold"
            },
        }
    return result


def _threshold_grid(
    columns: Columns, key: str, segments: list[Segment], masks: Mapping[str, Any]
) -> dict[str, Any]:
    """Kept counts per segment for thresholds 0.00-1.00 (a trial without the score is
    dropped at any threshold, as the pipeline's filter drops it)."""
    values = columns.array(key)
    resolved = columns.resolved()
    grid = {}
    for segment in segments:
        chosen = masks[segment.key] & ~np.isnan(values)
        grid[segment.key] = {
            "label": segment.label,
            "total": int(masks[segment.key].sum()),
            "resolved_total": int((masks[segment.key] & resolved).sum()),
            "kept": stats.cumulative_at_least(values[chosen], THRESHOLDS),
            "kept_resolved": stats.cumulative_at_least(values[chosen & resolved], THRESHOLDS),
        }
    return {"key": key, "thresholds": [float(t) for t in THRESHOLDS], "segments": grid}


def _lowest_resolved(
    columns: Columns, segments: list[Segment], masks: Mapping[str, Any], n: int
) -> dict[str, list[int]]:
    """Row indices of the n lowest-composite resolved trials of each segment."""
    composite = columns.array("composite_score")
    resolved = columns.resolved() & ~np.isnan(composite)
    order = np.lexsort((np.asarray(columns.ids, dtype=object), composite))
    picked: dict[str, list[int]] = {}
    for segment in segments:
        chosen = masks[segment.key] & resolved
        picked[segment.key] = [int(i) for i in order[chosen[order]][:n]]
    return picked


def _tool_errors(columns: Columns) -> dict[str, Any]:
    def top(table: Mapping[str, Counter[str]]) -> dict[str, list[list[Any]]]:
        ranked = sorted(table.items(), key=lambda item: (-sum(item[1].values()), item[0]))
        return {
            name: [[sig, n] for sig, n in sorted(c.items(), key=lambda i: (-i[1], i[0]))][
                :TOP_ERRORS
            ]
            for name, c in ranked[: MAX_SEGMENTS * 2]
        }

    by_tool = top(columns.errors_by_tool)
    examples = {
        f"{tool}\x00{sig}": columns.error_examples[(tool, sig)]
        for tool, signatures in by_tool.items()
        for sig, _ in signatures
    }
    return {"by_tool": by_tool, "by_agent": top(columns.errors_by_agent), "examples": examples}


def _ranks(values: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, Any]:
    """Percentile ranks in [0, 1], ties sharing their mean rank."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    mean_rank = ends - (counts - 1) / 2 - 1
    ranks: np.ndarray[Any, Any] = np.asarray(mean_rank[inverse], dtype=np.float64)
    return ranks / max(len(values) - 1, 1)


def _disagreements(columns: Columns, threshold: float) -> dict[str, Any]:
    composite = columns.array("composite_score")
    resolved = columns.resolved()
    low = np.flatnonzero(resolved & (composite < threshold))
    low = low[np.lexsort((np.asarray(columns.ids, dtype=object)[low], composite[low]))]
    judges: dict[str, Any] = {}
    for name in sorted(columns.judge_lists):
        judged = columns.array(name)
        both = np.flatnonzero(~np.isnan(judged) & ~np.isnan(composite))
        if len(both) < 2:
            continue
        gap = _ranks(composite[both]) - _ranks(judged[both])
        order = np.argsort(-np.abs(gap), kind="stable")[:DISAGREEMENTS]
        judges[name] = [
            {
                "row": int(both[i]),
                "tqs": float(composite[both[i]]),
                "judge": float(judged[both[i]]),
                "rank_gap": round(float(gap[i]), 4),
            }
            for i in order
        ]
    return {
        "threshold": threshold,
        "reward_1_low_tqs_total": len(low),
        "reward_1_low_tqs": [int(i) for i in low[:DISAGREEMENTS]],
        "judges": judges,
    }


def _per_task(columns: Columns) -> dict[str, Any]:
    composite = columns.array("composite_score")
    resolved = columns.resolved()
    groups: dict[str, list[int]] = defaultdict(list)
    for index, task in enumerate(columns.dims["task"]):
        groups[task].append(index)
    tasks: list[dict[str, Any]] = []
    for task, indices in groups.items():
        chosen = np.asarray(indices)
        scores = composite[chosen]
        present = scores[~np.isnan(scores)]
        solved = scores[resolved[chosen] & ~np.isnan(scores)]
        tasks.append(
            {
                "task": task,
                "attempts": len(indices),
                "pass_rate": round(float(resolved[chosen].mean()), 4),
                "best": round(float(present.max()), 4) if len(present) else None,
                "best_resolved": round(float(solved.max()), 4) if len(solved) else None,
                "mean": round(float(present.mean()), 4) if len(present) else None,
            }
        )
    tasks.sort(key=lambda t: (t["pass_rate"], -t["attempts"], t["task"]))
    return {"total": len(tasks), "tasks": tasks[:MAX_TASKS]}


def _rate(fired: np.ndarray[Any, Any], chosen: np.ndarray[Any, Any]) -> float | None:
    total = int(chosen.sum())
    return round(float((fired & chosen).sum()) / total, 4) if total else None


def _detector_row(
    name: str,
    fired: np.ndarray[Any, Any],
    columns: Columns,
    groups: Mapping[str, np.ndarray[Any, Any]],
    segments: Mapping[str, np.ndarray[Any, Any]],
) -> dict[str, Any]:
    """One detector's rates, severities seen, mean confidence and first example rows.

    `groups` holds the diagnosed trials (`all`), and those resolved and unresolved; `segments`
    the diagnosed trials of each segment, by key: a rate's denominator is one of them.
    """
    severities: Counter[str] = Counter()
    confidences = []
    for index in np.flatnonzero(fired):
        for detector, severity, confidence in columns.detections[index]:
            if detector == name:
                severities[severity] += 1
                confidences.append(confidence)
                break
    known = DETECTORS.get(name)
    return {
        "detector": name,
        "title": known.title if known else name,
        "axis": known.axis if known else "unknown",
        "fired": int(fired.sum()),
        "rate": _rate(fired, groups["all"]),
        "rate_resolved": _rate(fired, groups["resolved"]),
        "rate_unresolved": _rate(fired, groups["unresolved"]),
        "severities": dict(sorted(severities.items())),
        "mean_confidence": _mean(np.asarray(confidences)[~np.isnan(confidences)]),
        "segments": {key: _rate(fired, chosen) for key, chosen in segments.items()},
        "examples": _kept_first(np.flatnonzero(fired), columns)[:DETECTOR_EXAMPLES],
    }


def _kept_first(indices: np.ndarray[Any, Any], columns: Columns) -> list[int]:
    """Row indices, those kept (whose trajectory the viewer can show) first."""
    return sorted((int(i) for i in indices), key=lambda i: (not columns.kept_list[i], i))


def _diagnosis(
    columns: Columns, segments: list[Segment], masks: Mapping[str, Any]
) -> dict[str, Any]:
    """Detector rates and the diagnosis scores of the rows that carry a diagnosis."""
    diagnosed = np.asarray(columns.diagnosed, dtype=np.bool_)
    resolved = columns.resolved()
    rows_fired: dict[str, list[int]] = defaultdict(list)
    for index, found in enumerate(columns.detections):
        for name in {d[0] for d in found}:
            rows_fired[name].append(index)
    groups = {
        "all": diagnosed,
        "resolved": diagnosed & resolved,
        "unresolved": diagnosed & ~resolved,
    }
    per_segment = {s.key: diagnosed & masks[s.key] for s in segments}
    detectors = []
    for name, indices in rows_fired.items():
        fired = np.zeros(len(columns), dtype=np.bool_)
        fired[indices] = True
        detectors.append(_detector_row(name, fired, columns, groups, per_segment))
    detectors.sort(key=lambda d: (-d["fired"], d["detector"]))
    histograms = _distributions(columns, DIAGNOSIS_KEYS, [Segment("all", "all")], masks)
    scores = {}
    for key in DIAGNOSIS_KEYS:
        values = columns.array(key)
        present = ~np.isnan(values)
        scores[key] = {
            **histograms[key]["all"],
            "mean_resolved": _mean(values[present & resolved]),
            "mean_unresolved": _mean(values[present & ~resolved]),
        }
    clean = np.asarray([not fired for fired in columns.detections], dtype=np.bool_)
    return {
        "diagnosed": int(diagnosed.sum()),
        "clean": int((diagnosed & clean).sum()),
        "detectors": detectors,
        "scores": scores,
    }


def _mean(values: np.ndarray[Any, Any]) -> float | None:
    return round(float(values.mean()), 4) if len(values) else None


def aggregate(
    columns: Columns,
    *,
    threshold: float,
    threshold_key: str,
    examples_per_segment: int,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """All sections' aggregates (rows referenced by index into `columns`)."""
    segments, hidden = _segments(columns)
    masks = _masks(columns, segments)
    resolved = columns.resolved()
    kept = np.asarray(columns.kept_list, dtype=np.bool_)
    diagnosis = _diagnosis(columns, segments, masks)
    separation_keys = [*REPORT_KEYS, *sorted(columns.judge_lists)]
    if diagnosis["diagnosed"]:
        separation_keys += DIAGNOSIS_KEYS
    return {
        "rows": {
            "total": len(columns),
            "resolved": int(resolved.sum()),
            "kept": int(kept.sum()),
            "rejected": int((~kept).sum()),
            "rejected_by_reason": dict(
                Counter(
                    r or "(no reason)" for r, k in zip(columns.reasons, kept, strict=True) if not k
                ).most_common(20)
            ),
        },
        "segments": [
            {
                "key": s.key,
                "dimension": s.dimension,
                "value": s.value,
                "label": s.label,
                "n": int(masks[s.key].sum()),
            }
            for s in segments
        ],
        "hidden_segments": hidden,
        "threshold": threshold,
        "distributions": _distributions(columns, REPORT_KEYS, segments, masks),
        "separation": _separation(columns, separation_keys, segments, masks, resamples, seed),
        "threshold_grid": _threshold_grid(columns, threshold_key, segments, masks),
        "lowest_resolved": _lowest_resolved(columns, segments, masks, examples_per_segment),
        "tool_errors": _tool_errors(columns),
        "diagnosis": diagnosis,
        "disagreements": _disagreements(columns, threshold),
        "tasks": _per_task(columns),
    }
