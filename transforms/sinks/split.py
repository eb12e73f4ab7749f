"""`--val-fraction` / `--split-seed`: a train/validation split grouped by task (pure, no Beam).

Each bundle goes to one split by its task: the SHA-256 of (seed, task name) as a number in
[0, 1) below the fraction is validation, so every trial of a task lands in the same split
(no task is in both), the assignment is the same in every run, process and runner, and a
new seed draws another split. A bundle without a task name (a standalone file) is its own
group, by instance id. The fraction is of tasks, not of records: the manifest counts what
each split got.

Validation has its own files beside the training ones, in the same layout:
`im.val.jsonl` / `lf.val.json` (`im.val-00000-of-00004.jsonl` ... when sharded), and their
Parquet twins; the training files keep their names. Inside the sinks a validation shard is
the slot `shard + max(num_shards, 1)`, so the (job, slot) keys, spill folders and writers
stay as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "NO_SPLIT",
    "TRAIN",
    "VALIDATION",
    "SplitSettings",
    "bundle_split",
    "slot_name",
    "slot_of",
    "split_counts",
    "split_files",
    "split_kind",
    "split_of",
]

TRAIN = "train"
VALIDATION = "validation"
VAL_TAG = "val"  # in file names: `lf.val.json`
COUNT_PREFIX = "split:"  # WriteShard's written counts, told apart from LF reshapes


@dataclass(frozen=True)
class SplitSettings:
    fraction: float = 0.0  # of tasks; 0: no validation split
    seed: int = 0

    @property
    def active(self) -> bool:
        return self.fraction > 0


NO_SPLIT = SplitSettings()


def split_of(task: str, settings: SplitSettings) -> str:
    """The split of every bundle of `task`."""
    if not settings.active:
        return TRAIN
    digest = hashlib.sha256(f"{settings.seed}\0{task}".encode("utf-8", "surrogatepass"))
    point = int.from_bytes(digest.digest()[:8], "big") / 2**64
    return VALIDATION if point < settings.fraction else TRAIN


def bundle_task(bundle: Mapping[str, Any]) -> str:
    """What a bundle is grouped by: its task name, else its instance id."""
    metadata = bundle.get("metadata")
    task = metadata.get("task_name") if isinstance(metadata, Mapping) else None
    if isinstance(task, str) and task:
        return f"task:{task}"
    return f"instance:{bundle['instance_id']}"


def bundle_split(bundle: Mapping[str, Any], settings: SplitSettings) -> str:
    return split_of(bundle_task(bundle), settings)


def _slots(num_shards: int) -> int:
    return max(num_shards, 1)


def slot_of(shard: int, split: str, num_shards: int) -> int:
    """The sink slot of a shard of a split (validation after every training shard)."""
    return shard + (_slots(num_shards) if split == VALIDATION else 0)


def slot_split(slot: int, num_shards: int) -> tuple[str, int]:
    """(split, shard) of a sink slot."""
    count = _slots(num_shards)
    return (VALIDATION, slot - count) if slot >= count else (TRAIN, slot)


def split_kind(kind: str, split: str) -> str:
    """The file stem of a kind in a split: `lf` for training, `lf.val` for validation."""
    return f"{kind}.{VAL_TAG}" if split == VALIDATION else kind


def slot_name(kind: str, slot: int, num_shards: int, suffix: str | None = None) -> str:
    """The file of a kind (`im`, `lf`) in a sink slot: `lf.json`, `lf.val-00001-of-00004.json`."""
    from transforms.sinks.layout import shard_name

    split, shard = slot_split(slot, num_shards)
    if suffix is None:
        suffix = ".jsonl" if kind == "im" else ".json"
    return shard_name(split_kind(kind, split), shard, num_shards, suffix)


def split_files(
    kind: str, num_shards: int, settings: SplitSettings, split: str, suffix: str | None = None
) -> list[str]:
    """Every file of a kind in a split (none for validation when the split is off)."""
    if split == VALIDATION and not settings.active:
        return []
    first = slot_of(0, split, num_shards)
    return [slot_name(kind, first + s, num_shards, suffix) for s in range(_slots(num_shards))]


def written_counts(slot: int, num_shards: int, instances: int, records: int) -> dict[str, int]:
    """What one written slot adds to its job's split counts (summed with the reshapes)."""
    split, _ = slot_split(slot, num_shards)
    return {
        f"{COUNT_PREFIX}{split}.instances": instances,
        f"{COUNT_PREFIX}{split}.records": records,
    }


def split_counts(
    summed: Mapping[str, int], settings: SplitSettings
) -> tuple[dict[str, int], dict[str, Any]]:
    """(the LF reshape counts, the manifest's `split`) from WriteShard's summed counts."""
    reshapes = {k: v for k, v in summed.items() if not k.startswith(COUNT_PREFIX)}
    splits: dict[str, Any] = {
        "val_fraction": settings.fraction,
        "split_seed": settings.seed,
        "grouped_by": "task_name (else instance id)",
    }
    for split in (TRAIN, VALIDATION):
        splits[split] = {
            what: int(summed.get(f"{COUNT_PREFIX}{split}.{what}", 0))
            for what in ("instances", "records")
        }
    return reshapes, splits
