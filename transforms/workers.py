"""How many processes a local run's workers are."""

from __future__ import annotations

import os

__all__ = ["local_processes"]


def local_processes(running_mode: str | None, num_workers: int | None) -> int:
    """The in-process runner's worker processes: `--direct_num_workers` (0 = one per CPU)
    in `multi_processing` mode; every other mode runs in this one process."""
    if running_mode != "multi_processing":
        return 1
    return num_workers if num_workers and num_workers > 0 else os.cpu_count() or 1
