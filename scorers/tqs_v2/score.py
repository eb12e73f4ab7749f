"""Assemble the `_score` object and the composite (TQS V2 §4, §12, §13)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scorers.tqs_v2 import components as C
from scorers.tqs_v2 import diagnostics as D
from scorers.tqs_v2.trajectory import Trajectory, build_trajectory

SCORER_NAME = "tqs-v2"
SCORER_VERSION = "tqs-v2.0"
SCAFFOLDS = ("claudecode", "opencode", "openhands", "openhands_sdk", "terminus2")
SCORE_KEYS = (
    "scaffold",
    "assistant_turns",
    "total_tool_calls",
    "oec_score",
    "iac_score",
    "dpi_score",
    "ped_score",
    "psn_score",
    "tte_score",
    "scp_score",
    "sub_score",
    "fec_score",
    "stp_score",
    "tvr_score",
    "composite_score",
    "reproduce_first",
)
# (key, weight, exponent) of the components that enter the composite.
_WEIGHTED = (
    ("sub_score", 0.33, 1),
    ("stp_score", 0.27, 1),
    ("tvr_score", 0.23, 1),
    ("fec_score", 0.10, 5),
    ("dpi_score", 0.07, 3),
)


def is_subagent(record: Mapping[str, Any]) -> bool:
    meta = record.get("meta_info")
    info = meta.get("unique_info") if isinstance(meta, dict) else None
    return isinstance(info, dict) and info.get("_agent_type") == "subagent"


def scaffold_hint(record: Mapping[str, Any]) -> str | None:
    """The scaffold a reader recorded from the agent's identity (`_instance_metadata.scaffold`).

    Converters know which agent wrote a trajectory; that beats guessing from tool names
    (Claude Code's ATIF, for one, carries no system prompt to tell it from OpenCode).
    """
    meta = record.get("meta_info")
    info = meta.get("unique_info") if isinstance(meta, dict) else None
    metadata = info.get("_instance_metadata") if isinstance(info, dict) else None
    hint = metadata.get("scaffold") if isinstance(metadata, dict) else None
    return hint if hint in SCAFFOLDS else None


def _round(value: float | None) -> float | None:
    return None if value is None else _round4(value)


def _round4(value: float) -> float:
    """`round(value, 4)`; 0.0 and 1.0, the commonest scores, skip its decimal conversion."""
    return value if value == 0.0 or value == 1.0 else round(value, 4)


def composite(values: Mapping[str, float | None]) -> float:
    numerator = denominator = 0.0
    for key, weight, exponent in _WEIGHTED:
        value = values.get(key)
        if value is None:
            continue
        numerator += weight * value**exponent
        denominator += weight
    return numerator / denominator if denominator else 0.0


def score_trajectory(trajectory: Trajectory) -> dict[str, Any]:
    sub = C.submission_score(trajectory)
    fec = C.file_edit_concentration(trajectory)
    stp = C.step_score(len(trajectory.turns))
    tvr = C.test_verification_score(trajectory)
    dpi = C.dirty_pattern_index(trajectory)
    return {
        "scaffold": trajectory.scaffold,
        "assistant_turns": len(trajectory.turns),
        "total_tool_calls": trajectory.total_tool_calls,
        "oec_score": _round(D.observation_entropy_collapse(trajectory)),
        "iac_score": _round(D.intent_action_consistency(trajectory)),
        "dpi_score": _round4(dpi),
        "ped_score": _round(D.post_error_diversity(trajectory)),
        "psn_score": _round(D.progressive_scope_narrowing(trajectory)),
        "tte_score": _round(D.tool_transition_entropy(trajectory)),
        "scp_score": _round4(D.successful_change_position(trajectory)),
        "sub_score": _round4(sub),
        "fec_score": _round(fec),
        "stp_score": _round4(stp),
        "tvr_score": _round4(tvr),
        "composite_score": _round4(
            composite(
                {
                    "sub_score": sub,
                    "stp_score": stp,
                    "tvr_score": tvr,
                    "fec_score": fec,
                    "dpi_score": dpi,
                }
            )
        ),
        "reproduce_first": _round(D.reproduce_first(trajectory)),
    }


def score_record(record: Mapping[str, Any], scaffold: str | None = None) -> dict[str, Any] | None:
    """The `_score` dict of a main-agent record; None for a subagent record.

    The scaffold is, in order: the one given, the record's own hint, detection by tools.
    """
    if is_subagent(record):
        return None
    return score_trajectory(build_trajectory(record, scaffold or scaffold_hint(record)))


def count_tool_call_errors(
    record: Mapping[str, Any], scaffold: str | None = None
) -> tuple[int, int]:
    """(tool calls, erroneous tool calls) of one record, subagents included (§13)."""
    return tool_call_errors(build_trajectory(record, scaffold or scaffold_hint(record)))


def score_and_count(
    record: Mapping[str, Any], scaffold: str | None = None
) -> tuple[dict[str, Any] | None, int, int]:
    """`score_record` and `count_tool_call_errors` from one pass over the record."""
    trajectory = build_trajectory(record, scaffold or scaffold_hint(record))
    score = None if is_subagent(record) else score_trajectory(trajectory)
    return (score, *tool_call_errors(trajectory))


def tool_call_errors(trajectory: Trajectory) -> tuple[int, int]:
    """Terminus-2 counts every command of a turn but at most one error per observation."""
    if trajectory.scaffold == "terminus2":
        calls = errors = 0
        for turn in trajectory.turns:
            if not turn.actions:
                continue
            calls += len(turn.actions)
            observation = turn.actions[0].observation
            errors += 1 if observation is not None and observation.is_error else 0
        return calls, errors
    calls = sum(1 for a in trajectory.actions if a.observation is not None)
    errors = sum(1 for a in trajectory.actions if a.observation and a.observation.is_error)
    return calls, errors
