"""Assemble `unique_info._diagnosis`: detections, `trajectory_score`, `task_completion_score`
and `score_breakdown` (shared/docs/diagnose.md).

    trajectory_score = orchestration_quality_overall * (1 - max_severity_penalty)
    max_severity_penalty = max over fired process detectors of weight[severity] * confidence
    task_completion_score = 1 - max over fired outcome detectors of weight[severity] * confidence

Process and outcome stay apart: `trajectory_score` measures how the run went, not whether the
task was solved (diagnose.md), so outcome detectors (no successful write, finished after a
failing test, a harness exception) move only `task_completion_score`. A subagent record gets
the process detectors on its own messages; its `task_completion_score` is null (the outcome
belongs to the run) and orchestration is judged on the main record, with its subagents.

Pure and deterministic: same records and profiles in, same dicts out, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scorers.diagnose import orchestration
from scorers.diagnose.detectors import DETECTORS, run_detectors
from scorers.diagnose.model import OUTCOME, PROCESS, SEVERITIES, Detection, Finding
from scorers.diagnose.profiles import Profile, ProfileSet, build_profiles
from scorers.diagnose.view import AgentView

DIAGNOSER_VERSION = "diagnose-1.0"
TOP_CONTRIBUTORS = 5
_BUILT_IN = build_profiles()


def _round(value: float) -> float:
    return value if value == 0.0 or value == 1.0 else round(value, 4)


def _detection(finding: Finding, profile: Profile) -> Detection:
    detector = DETECTORS[finding.detector]
    severity = profile.severity(finding.detector)
    confidence = _round(finding.confidence)
    return Detection(
        detector=finding.detector,
        axis=detector.axis,
        severity=severity,
        confidence=confidence,
        penalty=_round(profile.weight(severity) * confidence),
        title=detector.title,
        description=finding.description,
        messages=finding.messages,
        snippets=finding.snippets,
    )


def _max_penalty(detections: Sequence[Detection], axis: str) -> float:
    return max((d.penalty for d in detections if d.axis == axis), default=0.0)


def _contributors(detections: Sequence[Detection]) -> list[dict[str, Any]]:
    """The largest penalties first (process before outcome on a tie, then by name)."""
    ranked = sorted(detections, key=lambda d: (-d.penalty, d.axis != PROCESS, d.detector))
    return [
        {
            "detector": d.detector,
            "axis": d.axis,
            "severity": d.severity,
            "confidence": d.confidence,
            "penalty": d.penalty,
        }
        for d in ranked[:TOP_CONTRIBUTORS]
    ]


def diagnose_view(
    view: AgentView, subagents: Sequence[AgentView] = (), profiles: ProfileSet = _BUILT_IN
) -> dict[str, Any]:
    """The `_diagnosis` of one record already built into a view (subagents: the bundle's
    subagent views, for a main record)."""
    profile = profiles.for_format(view.source_format)
    detections = [_detection(f, profile) for f in run_detectors(view, subagents)]
    main = view.agent_type == "main"
    dimensions = orchestration.dimensions(view, subagents if main else ())
    if not main:
        dimensions = dict.fromkeys(orchestration.DIMENSIONS)
    quality = orchestration.overall(dimensions)
    penalty = _max_penalty(detections, PROCESS)
    outcome = _max_penalty(detections, OUTCOME)
    return {
        "diagnoser_version": DIAGNOSER_VERSION,
        "source_format": view.source_format,
        "profile": profile.name,
        "trajectory_score": _round(quality * (1.0 - penalty)),
        "task_completion_score": _round(1.0 - outcome) if main else None,
        "orchestration_quality_overall": _round(quality),
        "max_severity_penalty": penalty,
        "detections": [d.as_dict() for d in detections],
        "score_breakdown": {
            "top_contributors": _contributors(detections),
            "dimensions": dimensions,
            "dimension_weights": orchestration.active_weights(dimensions),
            "severity_weights": {s: profile.weight(s) for s in SEVERITIES},
            "profile": profile.name,
            "profile_source": profiles.origin,
        },
    }


def diagnose_records(
    records: Sequence[Mapping[str, Any]],
    profiles: ProfileSet = _BUILT_IN,
    scaffold: str | None = None,
) -> list[dict[str, Any]]:
    """The `_diagnosis` of every record of one instance (main first or not), in order.

    Each main record is judged with every subagent record of the instance.
    """
    views = [AgentView(record, scaffold) for record in records]
    subagents = [v for v in views if v.agent_type == "subagent"]
    return [diagnose_view(v, subagents if v.agent_type == "main" else (), profiles) for v in views]


def diagnose_record(
    record: Mapping[str, Any],
    subagents: Sequence[Mapping[str, Any]] = (),
    profiles: ProfileSet = _BUILT_IN,
    scaffold: str | None = None,
) -> dict[str, Any]:
    """The `_diagnosis` of one record (with its instance's subagent records, if main)."""
    sub_views = [AgentView(s, scaffold) for s in subagents]
    return diagnose_view(AgentView(record, scaffold), sub_views, profiles)


def top_contributor(diagnosis: Mapping[str, Any]) -> str:
    """One line naming what lowered `trajectory_score` most: the largest process penalty, or
    else the weakest orchestration dimension; "nothing" for a clean run."""
    for item in diagnosis.get("score_breakdown", {}).get("top_contributors") or []:
        if item.get("axis") == PROCESS:
            return (
                f"{item['detector']} ({item['severity']}, confidence {item['confidence']:.2f},"
                f" penalty {item['penalty']:.2f})"
            )
    dimensions = diagnosis.get("score_breakdown", {}).get("dimensions") or {}
    scored = [(v, k) for k, v in dimensions.items() if v is not None]
    if scored:
        value, name = min(scored)
        if value < 1.0:
            return f"orchestration: {name} {value:.2f}"
    return "nothing"
