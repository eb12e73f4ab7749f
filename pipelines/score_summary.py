"""Counts and means of one `trajcurate score` run, and the table printed at its end."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ScaffoldStats", "ScoreStats"]


@dataclass
class ScaffoldStats:
    """Scored (main-agent) records of one scaffold and the sum of their composite scores."""

    records: int = 0
    composite_n: int = 0
    composite_sum: float = 0.0

    def add(self, composite: object) -> None:
        self.records += 1
        if isinstance(composite, int | float) and not isinstance(composite, bool):
            self.composite_n += 1
            self.composite_sum += float(composite)

    def merge(self, other: ScaffoldStats) -> None:
        self.records += other.records
        self.composite_n += other.composite_n
        self.composite_sum += other.composite_sum

    @property
    def mean_composite(self) -> float | None:
        return self.composite_sum / self.composite_n if self.composite_n else None


@dataclass
class ScoreStats:
    """Everything the summary reports: record counts, composite means, tool-call errors."""

    records: int = 0
    main: int = 0
    subagent: int = 0
    rejected: int = 0
    dead_lettered: int = 0
    balanced: bool = True
    accounting_line: str = ""
    drops: dict[str, int] = field(default_factory=dict)
    tool_calls: int = 0
    error_tool_calls: int = 0
    scored: ScaffoldStats = field(default_factory=ScaffoldStats)
    by_scaffold: dict[str, ScaffoldStats] = field(default_factory=dict)

    def add(self, agent: str, score: Mapping[str, Any] | None, calls: int, errors: int) -> None:
        """Count one written record: its agent type, its `_score` and its tool calls."""
        self.records += 1
        if agent == "subagent":
            self.subagent += 1
        else:
            self.main += 1
        self.tool_calls += calls
        self.error_tool_calls += errors
        if score is not None:
            composite = score.get("composite_score")
            self.scored.add(composite)
            scaffold = str(score.get("scaffold") or "unknown")
            self.by_scaffold.setdefault(scaffold, ScaffoldStats()).add(composite)

    def merge(self, other: ScoreStats) -> None:
        """Add the records `other` counted (another process's share of the run)."""
        self.records += other.records
        self.main += other.main
        self.subagent += other.subagent
        self.tool_calls += other.tool_calls
        self.error_tool_calls += other.error_tool_calls
        self.scored.merge(other.scored)
        for scaffold, stats in other.by_scaffold.items():
            self.by_scaffold.setdefault(scaffold, ScaffoldStats()).merge(stats)

    @property
    def error_rate(self) -> float:
        """Error tool calls over all tool calls (0.0 when there were none)."""
        return self.error_tool_calls / self.tool_calls if self.tool_calls else 0.0

    def render(self) -> str:
        """The human summary table (stdout of `trajcurate score`)."""
        lines = [
            f"{'records':<16}{self.records:>10}",
            f"{'  main':<16}{self.main:>10}",
            f"{'  subagent':<16}{self.subagent:>10}",
            f"{'rejected':<16}{self.rejected:>10}",
            f"{'dead-lettered':<16}{self.dead_lettered:>10}",
            *(f"  {stage:<14}{n:>10}" for stage, n in sorted(self.drops.items())),
            self.accounting_line,
            f"{'mean composite':<16}{_mean(self.scored.mean_composite):>10}"
            f"  (over {self.scored.composite_n} scored records)",
            "",
            f"{'scaffold':<16}{'records':>10}{'mean composite':>16}",
        ]
        for scaffold in sorted(self.by_scaffold):
            stats = self.by_scaffold[scaffold]
            lines.append(f"{scaffold:<16}{stats.records:>10}{_mean(stats.mean_composite):>16}")
        lines += [
            "",
            f"{'tool calls':<16}{self.tool_calls:>10}",
            f"{'  errors':<16}{self.error_tool_calls:>10}",
            f"{'  error rate':<16}{self.error_rate:>10.6f}",
        ]
        return "\n".join(lines)


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
