"""The typed interface between Harbor's trial reader and the native agent-log readers.

When a trial has no ATIF `agent/trajectory.json`, `harbor_trial` asks each native module in
turn (`claude_code`, `opencode`, `openhands`, `terminus_episodes`) for the records of the
trial's `agent/` folder. Each module provides a `NativeLogReader`:

    records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None

None means "no logs of my kind here"; `ReaderError` means "my logs are here but unusable"
(the reason becomes a warning). Every file is opened through `ctx.files` (confined to the
trial); what it refuses while looking is in `ctx.files.warnings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from transforms.readers.confined import TrialFiles

__all__ = ["NativeLogReader", "NativeRecords", "ReadContext"]

# (IM records main-first, warnings)
NativeRecords = tuple[list[dict[str, Any]], list[str]]


@dataclass
class ReadContext:
    """What a native reader knows of the trial besides its logs.

    `agent` = {name, version, model} from result.json / config.json; `metadata` becomes the
    records' `_instance_metadata` `usage` their
    `_usage` (the reader fills it from the logs when empty). `instruction` is the trial's
    task instruction when Harbor's command log holds it (`task_instruction.py`): the user
    message of a log that never recorded the prompt. The reader may change its copies.
    """

    files: TrialFiles
    instance_id: str
    agent: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    instruction: str | None = None


class NativeLogReader(Protocol):
    """`records_from_agent_dir` of a native module (see the module docstring)."""

    def __call__(self, ctx: ReadContext, agent_dir: Path, /) -> NativeRecords | None: ...
