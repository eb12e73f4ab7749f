"""Codex CLI rollouts (format "codex"): `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

Each line is Codex's `RolloutLine` `{timestamp, type, payload}` with `type` one of
`session_meta` (id, cwd, originator, cli_version, source, model_provider, base_instructions,
git), `response_item` (a Responses API item: what the model was given and what it produced),
`event_msg` (events for the UI), `turn_context` (per turn: model, cwd, policies) and
`compacted` (a history compaction). The older form (Codex before mid-2025) has no envelope:
a bare header `{id, timestamp, instructions, git?}`, then bare response items and
`{"record_type": "state"}` lines; both are read. The conversion is in `codex_items.py`.

Rules (a record holds what the model saw and said, nothing else):
- System message: `session_meta.base_instructions.text` (Codex sends it as the request's
  `instructions`), then the developer/system messages that come before the conversation
  (permissions, collaboration mode, skills), joined by blank lines: they are instructions to
  the model, and IM has one system slot. A developer message later in the session is kept
  where it was, as a `user` turn (IM keeps no later system messages), counted
  `developer_messages_as_user`. No `base_instructions` (old rollouts): warned.
- User messages are kept as the model got them, context messages included (`# AGENTS.md …`,
  `<environment_context>`): the model saw them as user input. They join the prompt that
  follows into one user turn (`normalise_roles`). Content parts `input_text` /
  `output_text` are joined by blank lines; images are dropped (`images_dropped`).
- Reasoning items: raw `content` texts (`reasoning_text`) when present, else the `summary`
  texts, become the `reasoning_content` of the model's next output;
  `encrypted_content` is not text (`encrypted_reasoning_skipped`).
- Calls: `function_call` (name, `arguments` JSON string, `call_id`); `custom_tool_call`
  (freeform, e.g. `apply_patch`) with arguments `{"input": <raw input>}`; `local_shell_call`
  named `local_shell` with its `action` as arguments; `tool_search_call`. The outputs
  (`function_call_output`, `custom_tool_call_output`: a string, or content items whose
  texts are joined by blank lines, as message parts are; `tool_search_output`: its tools
  as JSON) are the tool messages, text as the model got it. An output object with
  `success: false` lists its call in `_instance_metadata.errored_tool_call_ids`.
- `web_search_call` / `image_generation_call` run inside the Responses API: the rollout holds
  no result. They stay calls (`web_search` with the action as arguments; `image_generation`)
  answered by an empty tool message so the record stays a valid call/result sequence;
  counted `web_search_results_absent` / `images_dropped`.
- The items of one model response (reasoning, message, calls) make one assistant message.
- `event_msg` lines repeat response items for the UI (`duplicate_events_skipped`); only
  `token_count` is used (the last total -> `_usage`); interrupted turns, errors and
  rollbacks are warned; other events are counted `ui_events_skipped`. Ghost snapshots and
  encrypted compactions are skipped and counted; a `compacted` line is counted and warned
  (the model's later turns saw a summary instead of the earlier messages).
- Metadata: `codex_session_id`, `cli_version` (-> agent version), `originator`, `source`,
  `cwd`, `model_provider`, the `turn_context` models (the first -> agent model). Session ids
  repeat across sample files, so the instance id is `standalone_instance_id(path)`.
- Subagents (`session_meta.source = {"subagent": …}`, in their own rollout files): in a
  Harbor trial every subagent rollout under `agent/sessions/` is a subagent record; a file
  read alone is one record.
- Lines that are not JSON objects are warned and skipped; a rollout with no user message
  and model turn is refused. Harbor's codex agent also writes `agent/codex.txt` (the
  `codex exec --json` stdout) and `agent/trajectory.json` (ATIF, read first by the trial
  reader); the rollouts under `agent/sessions/` are what this reader takes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from transforms.readers.bundle import (
    Bundle,
    ReaderError,
    new_bundle,
    note_fidelity,
    standalone_instance_id,
)
from transforms.readers.codex_items import ENVELOPE_TYPES, Rollout, is_subagent_meta, rollout_lines
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.conversation import ensure_prompt, has_conversation, normalise_roles
from transforms.readers.im_builder import build_im_record, date_of
from transforms.readers.source_files import iter_json_objects

FORMAT = "codex"
AGENT_NAME = "codex"
SESSIONS_DIR = "sessions"
ROLLOUT_PATTERN = "rollout-*.jsonl"
_OLD_HEADER_KEYS = frozenset({"id", "timestamp", "instructions", "git"})


def looks_like_codex(first_line_object: dict[str, Any]) -> bool:
    """Whether a file's first JSON line opens a Codex rollout (either form)."""
    obj = first_line_object
    payload = obj.get("payload")
    if obj.get("type") in ENVELOPE_TYPES and isinstance(payload, dict) and "timestamp" in obj:
        if obj["type"] == "session_meta":
            return "id" in payload and bool(payload.keys() & {"cli_version", "originator"})
        return True
    keys = set(obj)
    return (
        keys <= _OLD_HEADER_KEYS
        and {"id", "timestamp", "instructions"} <= keys
        and isinstance(obj.get("id"), str)
        and isinstance(obj.get("timestamp"), str)
    )


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per rollout file."""
    path = Path(path)
    warnings: list[str] = []
    files = TrialFiles.for_input(path, limits)
    rollout = _load(files, path, warnings)
    instance_id = standalone_instance_id(path)
    record = _record(rollout, instance_id, {}, {"source_file": str(path)}, {}, None, warnings)
    yield new_bundle(
        instance_id,
        str(path),
        FORMAT,
        [record],
        metadata=record["meta_info"]["unique_info"]["_instance_metadata"],
        usage=record["meta_info"]["unique_info"]["_usage"],
        warnings=warnings,
        read_files=files.read_files,
    )


def records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None:
    """The records of the rollouts under a Harbor trial's `agent/sessions/`; None if none.

    The first rollout (by name, i.e. by start time) that is not a subagent's is the main
    record, every subagent rollout a subagent record; further top-level rollouts are
    warned and skipped (`extra_sessions_skipped`)."""
    files = ctx.files
    found = files.rglob(agent_dir / SESSIONS_DIR, ROLLOUT_PATTERN)
    if not found:
        return None
    warnings: list[str] = []
    loaded = [(path, _load(files, path, warnings)) for path in sorted(found)]
    mains = [(p, r) for p, r in loaded if not is_subagent_meta(r.meta)]
    subagents = [(p, r) for p, r in loaded if is_subagent_meta(r.meta)]
    if not mains:
        raise ReaderError("the Codex rollouts under agent/sessions/ are all subagents'")
    main = mains[0][1]
    for path, _ in mains[1:]:
        warnings.append(f"{path.name}: a further top-level Codex session, skipped")
    record = _record(
        main, ctx.instance_id, ctx.agent, ctx.metadata, ctx.usage, ctx.instruction, warnings
    )
    note_fidelity([record], {"extra_sessions_skipped": len(mains) - 1})
    records = [record]
    for path, rollout in subagents:
        try:
            records.append(
                _record(rollout, ctx.instance_id, ctx.agent, ctx.metadata, {}, None, warnings, True)
            )
        except ReaderError as exc:
            warnings.append(f"{path.name}: subagent skipped: {exc}")
    return records, warnings


def _load(files: TrialFiles, path: Path, warnings: list[str]) -> Rollout:
    local: list[str] = []
    objects = [obj for _, obj in iter_json_objects(files, path, local)]
    warnings.extend(f"{path.name}: {w}" for w in local)
    if not any(kind != "unknown" for kind, _, _ in rollout_lines(objects[:50])):
        raise ReaderError(f"{path.name}: not a Codex rollout (no session_meta or response items)")
    rollout = Rollout(objects, path.name)
    warnings.extend(f"{path.name}: {w}" for w in rollout.warnings)
    return rollout


def _record(
    rollout: Rollout,
    instance_id: str,
    agent: dict[str, Any],
    metadata: dict[str, Any],
    usage: dict[str, Any],
    instruction: str | None,
    warnings: list[str],
    subagent: bool = False,
) -> dict[str, Any]:
    label = rollout.label
    if not rollout.has_base_instructions:
        warnings.append(f"{label}: no base_instructions: the system prompt is not in the log")
    if rollout.compactions:
        warnings.append(
            f"{label}: history compacted {rollout.compactions} time(s): later turns saw a "
            "summary instead of the earlier messages"
        )
    prompted = ensure_prompt(rollout.messages, instruction, label, warnings)
    counts = Counter(rollout.fidelity)
    messages = normalise_roles(prompted, counts, subagent=subagent)
    if not has_conversation(messages):
        raise ReaderError(
            f"{label}: no conversation: the rollout has no user message and model turn"
        )
    record = build_im_record(
        messages,
        instance_id=instance_id,
        agent_type="subagent" if subagent else "main",
        rebuild_tools=True,
        agent={
            "name": agent.get("name") or AGENT_NAME,
            "version": agent.get("version") or rollout.meta.get("cli_version"),
            "model": agent.get("model") or (rollout.models[0] if rollout.models else None),
        },
        metadata={**metadata, **_session_metadata(rollout)},
        usage=usage or rollout.usage,
        query_source=FORMAT,
        date=date_of(rollout.meta.get("timestamp") or rollout.start),
    )
    note_fidelity([record], counts)
    return record


def _session_metadata(rollout: Rollout) -> dict[str, Any]:
    meta = rollout.meta
    found = {
        "codex_session_id": meta.get("id"),
        "cli_version": meta.get("cli_version"),
        "originator": meta.get("originator"),
        "session_source": meta.get("source"),
        "cwd": meta.get("cwd") or rollout.cwd,
        "model_provider": meta.get("model_provider"),
        "models": rollout.models or None,
        "errored_tool_call_ids": rollout.failed_calls or None,
    }
    return {key: value for key, value in found.items() if value is not None}
