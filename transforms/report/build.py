"""Build the report folder of a run's output: read, aggregate, pick the examples, render.

The folder holds `index.html` (sections, inline SVG charts, aggregates) and `assets/`
(`report.css`, `report.js` — the project's own slider and viewer code — and `data.js`
with the threshold grid and the examples shown). It opens from `file://` and loads nothing
from anywhere else.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from scorers.diagnose import DETECTORS
from transforms.report.aggregate import (
    DIAGNOSIS_KEYS,
    DIMENSIONS,
    REPORT_KEYS,
    Columns,
    aggregate,
)
from transforms.report.inputs import (
    find_jobs,
    job_facts,
    read_columns,
    read_examples,
    trim_record,
)
from transforms.report.reasons import score_reasons

__all__ = ["ASSETS", "BuildResult", "ReportSettings", "build_report"]

ASSETS = Path(__file__).parent / "assets"
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True, slots=True)
class ReportSettings:
    examples: int = 3  # lowest resolved trials shown per segment
    threshold: float | None = None  # None: the run's --min-score, else DEFAULT_THRESHOLD
    resamples: int = 500
    seed: int = 0


@dataclass(frozen=True, slots=True)
class BuildResult:
    folder: Path
    rows: int
    examples: int
    bytes: int
    seconds: float
    # Seconds per step, in order: read (manifests, rejects, sidecars), aggregate, examples
    # (their records from im.jsonl), render (the charts and the page), write.
    steps: dict[str, float] = field(default_factory=dict)


def _threshold(settings: ReportSettings, facts: list[dict[str, Any]]) -> tuple[float, str]:
    if settings.threshold is not None:
        return settings.threshold, "given with --threshold"
    chosen = [f["min_score"] for f in facts if isinstance(f.get("min_score"), int | float)]
    if chosen:
        return float(chosen[0]), "the run's --min-score"
    return DEFAULT_THRESHOLD, f"the run set no --min-score; {DEFAULT_THRESHOLD} is marked"


def _threshold_key(facts: list[dict[str, Any]], columns: Columns) -> str:
    for fact in facts:
        key = fact.get("score_key")
        if isinstance(key, str) and (key in REPORT_KEYS or key in columns.judge_lists):
            return key
    return "composite_score"


def _wanted_rows(data: dict[str, Any]) -> set[int]:
    rows = {i for indices in data["lowest_resolved"].values() for i in indices}
    rows.update(data["disagreements"]["reward_1_low_tqs"])
    for found in data["disagreements"]["judges"].values():
        rows.update(entry["row"] for entry in found)
    for indices in data["tool_errors"]["examples"].values():
        rows.update(indices)
    for detector in data["diagnosis"]["detectors"]:
        rows.update(detector["examples"])
    return rows


def _row_summary(columns: Columns, index: int) -> dict[str, Any]:
    return {
        "instance_id": columns.ids[index],
        "job": columns.jobs[index],
        **{d: columns.dims[d][index] for d in DIMENSIONS},
        "agent": columns.agents[index],
        "reward": columns.rewards[index],
        "resolved": columns.resolved_list[index],
        "decision": "kept" if columns.kept_list[index] else "rejected",
        "reason": columns.reasons[index],
        "turns": columns.turns[index],
        "score": {
            k: (None if v != v else v) for k in REPORT_KEYS for v in [columns.score_lists[k][index]]
        },
        "diagnosis": _row_diagnosis(columns, index),
    }


def _row_diagnosis(columns: Columns, index: int) -> dict[str, Any] | None:
    """The sidecar's diagnosis of a row, in the shape of `_diagnosis` (no evidence)."""
    if not columns.diagnosed[index]:
        return None
    return {
        **{k: _or_none(columns.diagnosis_lists[k][index]) for k in DIAGNOSIS_KEYS},
        "detections": [
            {
                "detector": d,
                "title": DETECTORS[d].title if d in DETECTORS else d,
                "severity": severity,
                "confidence": _or_none(confidence),
            }
            for d, severity, confidence in columns.detections[index]
        ],
    }


def _or_none(value: float) -> float | None:
    return None if value != value else value


def _examples(
    columns: Columns, rows: set[int], jobs: list[Path], starts: list[int]
) -> dict[str, Any]:
    """The viewer's payload of each wanted row: the trimmed trajectory (main record, then
    subagents) and the reasons behind its score, or found=false when the bundle is not in
    the curated output."""
    payload: dict[str, Any] = {}
    for number, folder in enumerate(jobs):
        end = starts[number + 1] if number + 1 < len(starts) else len(columns)
        mine = sorted(i for i in rows if starts[number] <= i < end)
        records = read_examples(folder, {columns.ids[i] for i in mine})
        for index in mine:
            example: dict[str, Any] = {**_row_summary(columns, index), "found": False}
            bundle = records.get(columns.ids[index], [])
            main = [r for r in bundle if _agent_type(r) != "subagent"]
            if main:
                example["found"] = True
                example["main"] = trim_record(main[0])
                example["reasons"] = score_reasons(main[0])
                example["diagnosis"] = _diagnosis(main[0]) or example["diagnosis"]
                example["subagents"] = [
                    {**trim_record(r), "diagnosis": _diagnosis(r)}
                    for r in bundle
                    if _agent_type(r) == "subagent"
                ]
            payload[f"r{index}"] = example
    return payload


def _info(record: dict[str, Any]) -> dict[str, Any]:
    meta = record.get("meta_info")
    info = meta.get("unique_info") if isinstance(meta, dict) else None
    return info if isinstance(info, dict) else {}


def _agent_type(record: dict[str, Any]) -> str:
    kind = _info(record).get("_agent_type")
    return kind if isinstance(kind, str) else "main"


def _diagnosis(record: dict[str, Any]) -> dict[str, Any] | None:
    """The record's own `_diagnosis` (detections with their evidence), if it has one."""
    found = _info(record).get("_diagnosis")
    return found if isinstance(found, dict) else None


def _script_json(name: str, value: Any) -> bytes:
    """`window.NAME = <json>;` safe inside a script file (no `</script>`, no `<!--`)."""
    text = orjson.dumps(value).replace(b"</", b"<\\/").replace(b"<!--", b"<\\u0021--")
    return b"window." + name.encode() + b" = " + text + b";\n"


def build_report(output: Path, target: Path, settings: ReportSettings) -> BuildResult:
    """Write the report of the run in `output` into `target` (replacing an earlier report
    there)."""
    from transforms.report.page import render  # matplotlib: imported only to render

    began = time.perf_counter()
    steps: dict[str, float] = {}
    last = began

    def step(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        steps[name] = now - last
        last = now

    jobs = find_jobs(output)
    facts = [job_facts(folder) for folder in jobs]
    columns, starts = read_columns(jobs)
    step("read")
    threshold, threshold_note = _threshold(settings, facts)
    data = aggregate(
        columns,
        threshold=threshold,
        threshold_key=_threshold_key(facts, columns),
        examples_per_segment=settings.examples,
        resamples=settings.resamples,
        seed=settings.seed,
    )
    step("aggregate")
    examples = _examples(columns, _wanted_rows(data), jobs, starts)
    summaries = {f"r{i}": _row_summary(columns, i) for i in _wanted_rows(data)}
    step("examples")
    html = render(data, facts, summaries, threshold_note, output.resolve().name, settings.examples)
    step("render")
    assets = target / "assets"
    if assets.exists():
        shutil.rmtree(assets)
    assets.mkdir(parents=True)
    for name in ("report.css", "report.js"):
        shutil.copyfile(ASSETS / name, assets / name)
    grid = {"grid": data["threshold_grid"], "threshold": threshold}
    (assets / "data.js").write_bytes(
        _script_json("TRAJCURATE_GRID", grid) + _script_json("TRAJCURATE_EXAMPLES", examples)
    )
    (target / "index.html").write_text(html, encoding="utf-8")
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    step("write")
    return BuildResult(target, len(columns), len(examples), size, last - began, steps)
