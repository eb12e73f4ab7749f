"""What a detector reports: one `Detection`, with severity, confidence and evidence.

Severities and confidence tiers follow `shared/docs/diagnose.md`. A detection's evidence is
a list of message indexes (0-based, into the `messages` of the record it was found in) plus
short snippets (a repeated command, an error line, a subagent's name), so a reader can jump
to the messages that made a detector fire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("critical", "high", "medium", "low", "info")
PROCESS = "process"  # counts in `trajectory_score`
OUTCOME = "outcome"  # counts in `task_completion_score`
AXES = (PROCESS, OUTCOME)
MAX_EVIDENCE = 20  # message indexes kept per detection (the first ones: where it starts)
SNIPPET_CHARS = 160


def confidence_tier(confidence: float) -> str:
    """high >= 0.80, likely 0.60-0.80, possible 0.40-0.60, low < 0.40 (diagnose.md)."""
    if confidence >= 0.8:
        return "high"
    if confidence >= 0.6:
        return "likely"
    if confidence >= 0.4:
        return "possible"
    return "low"


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """One line of at most `limit` characters: evidence stays small in every record."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Finding:
    """What a detector found, before a profile gives it a severity."""

    detector: str
    confidence: float
    description: str
    messages: tuple[int, ...] = ()
    snippets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Detection:
    """A finding with its severity (from the profile in force) and its penalty."""

    detector: str
    axis: str
    severity: str
    confidence: float
    penalty: float
    title: str
    description: str
    messages: tuple[int, ...] = field(default=())
    snippets: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return {
            "detector": self.detector,
            "axis": self.axis,
            "severity": self.severity,
            "confidence": self.confidence,
            "tier": confidence_tier(self.confidence),
            "penalty": self.penalty,
            "title": self.title,
            "description": self.description,
            "evidence": {
                "messages": list(self.messages[:MAX_EVIDENCE]),
                "snippets": list(self.snippets),
            },
        }
