"""The reward gate: which bundles count as resolved (correctness, never mixed with quality)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESOLVED = "resolved"
UNRESOLVED = "unresolved"
NO_REWARD = "no reward"
STATUSES = ("resolved", "unresolved", "all")


def outcome(rewards: Mapping[str, Any] | None, key: str = "reward", threshold: float = 1.0) -> str:
    """`resolved` when rewards[key] >= threshold, `unresolved` below it, else `no reward`."""
    value = (rewards or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return NO_REWARD
    return RESOLVED if value >= threshold else UNRESOLVED


def gate_reason(result: str, status: str) -> str | None:
    """Why a bundle with this outcome is dropped under `--instance-status`, or None to keep."""
    if status == "all" or result == status:
        return None
    return f"instance status is {result!r}, wanted {status!r}"
