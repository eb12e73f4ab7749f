"""Severity profiles: how much each finding weighs, per `source_format`.

A profile gives every detector a severity and every severity a weight; a detection's penalty
is `weight[severity] * confidence`. The built-in `default` profile:

- critical, weight 0.85: context_overflow;
- high, 0.60: loop, truncation, hallucinated_tool, no_successful_write, task_failure,
  run_exception;
- medium, 0.35: repeated_error, error_storm, unverified_finish, invalid_tool_arguments,
  unused_delegation, abandoned_subagent;
- low, 0.15: compaction_churn;
- info, 0.00: none by default.

Built-in per-format profiles change only what differs from `default`:

- `terminus2`: `invalid_tool_arguments` is high (an answer that is not the JSON Terminus-2
  parses loses every command of the turn, and no tool validates it first);
  `no_successful_write` is medium (its writes are only seen through shell redirections,
  heredocs and in-place editors, so one can be missed).
- `claudecode`: `compaction_churn` is info (Claude Code compacts its context by design).

A profile file (`--diagnose-profile FILE`, YAML or JSON) maps profile names to
`{severity_weights: {severity: weight}, severities: {detector: severity}}`; `default`
applies to every format, a format's own entry is laid over it:

    default:
      severity_weights: {high: 0.65}
    terminus2:
      severities: {loop: medium}

The file is checked when it is loaded: known severities and detectors only, weights from 0
to 1, never increasing from critical to info, and critical at least 0.8 (one critical
finding at confidence 1.0 must leave a `trajectory_score` of at most 0.2).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorers.diagnose.detectors import DETECTORS
from scorers.diagnose.model import SEVERITIES

DEFAULT = "default"
MIN_CRITICAL_WEIGHT = 0.8

DEFAULT_WEIGHTS: dict[str, float] = {
    "critical": 0.85,
    "high": 0.6,
    "medium": 0.35,
    "low": 0.15,
    "info": 0.0,
}
DEFAULT_SEVERITIES: dict[str, str] = {
    "loop": "high",
    "repeated_error": "medium",
    "error_storm": "medium",
    "truncation": "high",
    "unverified_finish": "medium",
    "context_overflow": "critical",
    "hallucinated_tool": "high",
    "invalid_tool_arguments": "medium",
    "compaction_churn": "low",
    "unused_delegation": "medium",
    "abandoned_subagent": "medium",
    "no_successful_write": "high",
    "task_failure": "high",
    "run_exception": "high",
}
BUILT_IN_OVERRIDES: dict[str, dict[str, Any]] = {
    "terminus2": {
        "severities": {"invalid_tool_arguments": "high", "no_successful_write": "medium"}
    },
    "claudecode": {"severities": {"compaction_churn": "info"}},
}


class ProfileError(ValueError):
    """A profile file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Profile:
    name: str
    weights: Mapping[str, float]
    severities: Mapping[str, str]

    def severity(self, detector: str) -> str:
        return self.severities[detector]

    def weight(self, severity: str) -> float:
        return self.weights[severity]


@dataclass(frozen=True)
class ProfileSet:
    """The default profile and one per source format (plain values: picklable for Beam)."""

    default: Profile
    by_format: Mapping[str, Profile] = field(default_factory=dict)
    origin: str = "built-in"

    def for_format(self, source_format: str) -> Profile:
        return self.by_format.get(source_format, self.default)


def _layer(base: Profile, name: str, spec: Mapping[str, Any], where: str) -> Profile:
    unknown = set(spec) - {"severity_weights", "severities"}
    if unknown:
        raise ProfileError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    weights = dict(base.weights)
    for severity, weight in _mapping(spec.get("severity_weights"), f"{where}.severity_weights"):
        if severity not in SEVERITIES:
            raise ProfileError(f"{where}: unknown severity {severity!r} ({', '.join(SEVERITIES)})")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
            raise ProfileError(f"{where}: weight of {severity} must be a number from 0 to 1")
        weights[severity] = float(weight)
    severities = dict(base.severities)
    for detector, severity in _mapping(spec.get("severities"), f"{where}.severities"):
        if detector not in DETECTORS:
            raise ProfileError(f"{where}: unknown detector {detector!r}")
        if severity not in SEVERITIES:
            raise ProfileError(f"{where}: {detector}: severity one of {', '.join(SEVERITIES)}")
        severities[detector] = severity
    _check_weights(weights, where)
    return Profile(name, weights, severities)


def _mapping(value: Any, where: str) -> list[tuple[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise ProfileError(f"{where} must be a mapping")
    return [(str(k), v) for k, v in value.items()]


def _check_weights(weights: Mapping[str, float], where: str) -> None:
    ordered = [weights[s] for s in SEVERITIES]
    if any(a < b for a, b in itertools.pairwise(ordered)):
        raise ProfileError(f"{where}: weights must not increase from critical to info")
    if weights["critical"] < MIN_CRITICAL_WEIGHT:
        raise ProfileError(f"{where}: the critical weight must be at least {MIN_CRITICAL_WEIGHT}")


def build_profiles(spec: Mapping[str, Any] | None = None, origin: str = "built-in") -> ProfileSet:
    """The built-in profiles with `spec` (a profile file's content) laid over them."""
    spec = dict(spec or {})
    base = Profile(DEFAULT, DEFAULT_WEIGHTS, DEFAULT_SEVERITIES)
    default = _layer(base, DEFAULT, _section(spec.pop(DEFAULT, None), origin, DEFAULT), origin)
    by_format: dict[str, Profile] = {}
    for name in sorted({*BUILT_IN_OVERRIDES, *map(str, spec)}):
        profile = _layer(default, name, BUILT_IN_OVERRIDES.get(name, {}), "built-in")
        by_format[name] = _layer(profile, name, _section(spec.get(name), origin, name), origin)
    return ProfileSet(default, by_format, origin)


def _section(value: Any, origin: str, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProfileError(f"{origin}: profile {name!r} must be a mapping")
    return value


def load_profiles(path: str | Path | None) -> ProfileSet:
    """The profiles of a YAML or JSON file (a `.json` suffix reads JSON), over the built-in
    ones; the built-in profiles alone when `path` is None."""
    if path is None:
        return build_profiles()
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"cannot read {where}: {exc.strerror or exc}") from None
    data = _parse(text, where, json_only=str(path).endswith(".json"))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ProfileError(f"{where} must hold a mapping of profile name: profile")
    return build_profiles(data, origin=where)


def _parse(text: str, where: str, json_only: bool) -> Any:
    if json_only:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProfileError(f"{where} is not valid JSON: {exc}") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ProfileError(f"{where} is not valid YAML: {' '.join(str(exc).split())}") from None
