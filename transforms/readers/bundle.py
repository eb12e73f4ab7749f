"""The unit that flows through trajcurate: one trial's records (main agent + subagents).

A bundle is a plain dict (cheap to pickle between Beam stages):

    {
      "instance_id": str,            # the trial name; the `_instance_id` of every record
      "job": str | None,             # Harbor job name, None for standalone files
      "source": str,                 # the input path the bundle came from
      "format": str,                 # reader name, e.g. "harbor-atif", "claude-code-session"
      "rewards": {str: float} | None,
      "reward_source": str | None,   # "result.json" | "reward.json" | "reward.txt" | "report.json"
      "metadata": dict,              # `_instance_metadata` of every record of the bundle
      "usage": dict,                 # tokens / cost, `_usage` of the main record
      "warnings": [str],             # e.g. a missing subagent file
      "records": [IM record, ...],   # main record first, then subagents
      "read_files": {str: str},      # file read -> its SHA-256 (`readers/provenance.py`)
    }

A reader that has itself checked every record against the IM schema (the IM reader does, to
reject bad lines with their line numbers) adds `VALIDATED: True`; the chain's validate stage
takes it off and does not check those records again. A reader of JSON lines adds
`LINE_BYTES`, the length of each record's line (in record order): a record's text, in
characters, is no longer than its line (each character of a JSON string comes from at least
one byte of it), so the read stage's size cap need not serialise the record to bound it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, NotRequired, TypedDict

from scorers.im import IM_FAST

VALIDATED: Final = "validated_im"
LINE_BYTES: Final = "line_bytes"


class Bundle(TypedDict):
    instance_id: str
    job: str | None
    source: str
    format: str
    rewards: dict[str, float] | None
    reward_source: str | None
    metadata: dict[str, Any]
    usage: dict[str, Any]
    warnings: list[str]
    records: list[dict[str, Any]]
    read_files: dict[str, str]
    validated_im: NotRequired[bool]
    line_bytes: NotRequired[list[int]]


class ReaderError(Exception):
    """An input a reader refuses; the message is the one-line reason users see."""


def new_bundle(
    instance_id: str,
    source: str,
    format: str,
    records: list[dict[str, Any]],
    *,
    job: str | None = None,
    rewards: dict[str, float] | None = None,
    reward_source: str | None = None,
    metadata: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
    warnings: list[str] | None = None,
    read_files: Mapping[str, str] | None = None,
) -> Bundle:
    """A bundle; its warnings are also put on the main record (`_instance_metadata.warnings`),
    so that what a reader skipped or could not follow travels with the data it concerns.
    Tool calls without a name (a log the reader could not fully follow) are always warned.
    `read_files` (a `TrialFiles.read_files`: every file read for the bundle -> its SHA-256)
    becomes the main record's `_instance_metadata.provenance` when the bundle is opened
    (`transforms/readers/provenance.py`, where the input root is known)."""
    warnings = [*(warnings or []), *_nameless_call_warnings(records)]
    note_warnings(records, warnings)
    return Bundle(
        instance_id=instance_id,
        job=job,
        source=source,
        format=format,
        rewards=rewards,
        reward_source=reward_source,
        metadata=metadata or {},
        usage=usage or {},
        warnings=warnings or [],
        records=records,
        read_files=dict(read_files or {}),
    )


def _main_metadata(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The first (main) record's `_instance_metadata`, created when missing."""
    info = records[0]["meta_info"]["unique_info"]
    metadata = info.get("_instance_metadata")
    if isinstance(metadata, dict):
        return metadata
    created: dict[str, Any] = {}
    info["_instance_metadata"] = created
    return created


def note_warnings(records: list[dict[str, Any]], warnings: list[str]) -> None:
    if not records or not warnings:
        return
    metadata = _main_metadata(records)
    known = metadata.get("warnings")
    merged = [*(known if isinstance(known, list) else []), *warnings]
    metadata["warnings"] = list(dict.fromkeys(merged))


def note_fidelity(records: list[dict[str, Any]], counts: Mapping[str, int]) -> None:
    """Add what a reader dropped or rewrote, `{kind: count}` (e.g. `placeholders_removed`), to
    the main record's `_instance_metadata.fidelity`; counts of one kind add up, zeros are left
    out. The manifest and the report sum them per job and format (README, "What a record
    holds")."""
    if not records:
        return
    counts = {str(k): int(v) for k, v in counts.items() if v}
    if not counts:
        return
    metadata = _main_metadata(records)
    known = metadata.get("fidelity")
    merged = dict(known) if isinstance(known, dict) else {}
    for kind, count in counts.items():
        merged[kind] = int(merged.get(kind) or 0) + count
    metadata["fidelity"] = dict(sorted(merged.items()))
    empty = sum(n for kind, n in counts.items() if kind.endswith("empty_turns_dropped"))
    if empty:
        note_warnings(
            records, [f"{empty} empty turn(s) dropped (no text, reasoning or tool call in them)"]
        )


def _nameless_call_warnings(records: list[dict[str, Any]]) -> list[str]:
    """One warning per record that has tool calls with an empty function name."""
    warnings = []
    for number, record in enumerate(records, 1):
        nameless = _nameless_calls(record.get("messages") or [])
        if nameless:
            agent = record["meta_info"]["unique_info"].get("_agent_type", "main")
            warnings.append(
                f"record {number} ({agent}): {nameless} tool call(s) have no name "
                "(the log's calls are not in a shape the reader knows)"
            )
    return warnings


# the count in C (`scorers/_im_fast.c`), -1 for messages not of the usual types
NATIVE_NAMELESS_CALLS: Callable[[object], int] | None = (
    None if IM_FAST is None else IM_FAST.nameless_calls
)


def _nameless_calls(messages: list[dict[str, Any]]) -> int:
    """How many tool calls of `messages` have an empty or missing function name (in C when
    built; the loop passes over the messages without calls: most of them)."""
    if NATIVE_NAMELESS_CALLS is not None:
        counted = NATIVE_NAMELESS_CALLS(messages)
        if counted >= 0:
            return counted
    return nameless_calls_counted(messages)


def nameless_calls_counted(messages: list[dict[str, Any]]) -> int:
    """`_nameless_calls` in Python."""
    nameless = 0
    for message in messages:
        calls = message.get("tool_calls")
        if not calls:
            continue
        for call in calls:
            if not (call.get("function") or {}).get("name"):
                nameless += 1
    return nameless


def main_record(bundle: Bundle) -> dict[str, Any] | None:
    for record in bundle["records"]:
        if record["meta_info"]["unique_info"].get("_agent_type", "main") == "main":
            return record
    return None


_GENERIC_STEMS = frozenset({"trajectory", "session", "events", "log", "agent", "opencode"})
_SUFFIXES = (".json", ".jsonl", ".txt", ".traj", ".trajectory")
# Folders named for their role in a layout, not the run (`<trial>/agent/`, `…/logs/`).
_GENERIC_FOLDERS = frozenset({"agent", "agents", "logs", "sessions", "chats"})


def standalone_instance_id(path: Path) -> str:
    """An instance id for a file outside Harbor: its name without format suffixes, or its
    folder's name when the file name is generic (`…/timeout/trajectory.json` -> `timeout`),
    passing over folders named for a layout role (`<trial>/agent/trajectory.json` -> the
    trial's folder name), so standalone trajectories of different trials keep apart.

    Session ids are not used: sample and golden files often share a placeholder one.
    """
    stem = path.name
    while True:
        for suffix in _SUFFIXES:
            if stem.endswith(suffix) and len(stem) > len(suffix):
                stem = stem[: -len(suffix)]
                break
        else:
            break
    if stem not in _GENERIC_STEMS:
        return layout_instance_id(stem)
    folder = path.parent
    while folder.name in _GENERIC_FOLDERS and folder.parent.name:
        folder = folder.parent  # `<trial>/agent/trajectory.json` -> the trial's name
    return layout_instance_id(folder.name or stem)


def layout_instance_id(name: str) -> str:
    """The instance id of a trial folder or a file, from its name (never from the data an
    agent wrote: a `trial_name` could claim a sibling's id): the name itself when it is
    printable, else its control, format and undecodable characters replaced by `_` and the
    name's hash appended (`~` and 8 hex characters), so that two such names stay apart and no
    id is empty or hides a control character."""
    if name and name.isprintable():
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    shown = "".join(char if char.isprintable() else "_" for char in name)
    return f"{shown}~{digest}"
