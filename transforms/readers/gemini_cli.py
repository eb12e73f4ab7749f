"""Gemini CLI sessions (format "gemini-cli"): the CLI's own chat recordings.

Gemini CLI records every session under `~/.gemini/tmp/<project_hash>/chats/`: a JSON
document `session-<time>-<id8>.json` (`ConversationRecord {sessionId, projectHash,
startTime, lastUpdated, messages}`) in CLIs before April 2026, JSON Lines `….jsonl` since
(metadata line, message lines re-appended as they grow, `$set` / `$rewindTo` lines). Both
are read (`gemini_cli_session.py`: the JSON Lines are replayed as the CLI resumes them).
Each `MessageRecord {id, timestamp, type: user | gemini | info | error | warning, content,
displayContent?}` with, on `gemini` messages, `toolCalls` (`ToolCallRecord {id, name, args,
result, status, resultDisplay, displayName, description, agentId?}`), `thoughts`
(`{subject, description, timestamp}`), `tokens` and `model`, becomes IM messages as
`gemini_cli_turns.py` says:

- `user` -> user turn, `gemini` -> assistant turn (`thoughts` -> `reasoning_content`),
  each call followed by a tool message holding `functionResponse.response` (output / error)
  of its `result`, not `resultDisplay` (the UI's rendering, `ui_display_skipped`);
- `info` / `error` / `warning` are the CLI's UI notices, left out (`ui_notices_skipped`);
- `tokens` add up to `_usage` (`total_prompt_tokens` = Σ input, `total_completion_tokens`
  = Σ output + thoughts, `total_cached_tokens`, and the raw `total_*` parts); the first
  `model` is the agent's model (all of them in `_instance_metadata.models` when several);
  the agent is "gemini-cli". There is no system prompt and no tool list in a session: the
  system message is empty, the tools are rebuilt from the calls.
- Subagents (newer CLIs): a call with `agentId` ran a subagent whose session is
  `<chats>/<parent sessionId>/<agentId>.jsonl`; it becomes a subagent record; a missing
  file is counted (`missing_subagent_files`) and warned.
- Instance id: `standalone_instance_id(path)`; the session id is `gemini_session_id` in
  `_instance_metadata` (with `project_hash`, `session_form`, `errored_tool_call_ids`).
  A session without a user turn and a model turn is refused (`ReaderError`).

In a Harbor trial, Harbor's gemini-cli agent copies the session to
`agent/gemini-cli.trajectory.json` (newer Harbor: `.jsonl`) and also writes ATIF
`agent/trajectory.json` (read first by the trial reader) and the stdout `gemini-cli.txt`.
`records_from_agent_dir` takes that copy, else a `session-*.json[l]` anywhere under `agent/`
(a copied `~/.gemini/tmp`).
"""

from __future__ import annotations

import re
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
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.conversation import ensure_prompt, has_conversation, normalise_roles
from transforms.readers.gemini_cli_session import Session, is_metadata, load_session
from transforms.readers.gemini_cli_turns import MESSAGE_TYPES, Conversation
from transforms.readers.im_builder import build_im_record, date_of

FORMAT = "gemini-cli"
AGENT_NAME = "gemini-cli"
HARBOR_COPIES = ("gemini-cli.trajectory.jsonl", "gemini-cli.trajectory.json")
SESSION_PATTERNS = ("session-*.jsonl", "session-*.json")
_UNSAFE_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def looks_like_gemini_document(obj: dict[str, Any]) -> bool:
    """Whether a whole JSON document is a Gemini CLI `ConversationRecord`."""
    messages = obj.get("messages")
    if not (is_metadata(obj) and isinstance(messages, list)):
        return False
    first = messages[0] if messages else None
    return first is None or (isinstance(first, dict) and first.get("type") in MESSAGE_TYPES)


def looks_like_gemini_line(obj: dict[str, Any]) -> bool:
    """Whether the first line of a JSON Lines file opens a Gemini CLI session (its metadata)."""
    return is_metadata(obj) and "type" not in obj and "id" not in obj


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per session file (the main record, then its subagents' records)."""
    path = Path(path)
    files = TrialFiles.for_input(path, limits)
    instance_id = standalone_instance_id(path)
    warnings: list[str] = []
    records = _session_records(
        files, path, instance_id, {}, {"source_file": str(path)}, {}, None, warnings
    )
    info = records[0]["meta_info"]["unique_info"]
    yield new_bundle(
        instance_id,
        str(path),
        FORMAT,
        records,
        metadata=info["_instance_metadata"],
        usage=info["_usage"],
        warnings=[*warnings, *files.take_warnings()],
        read_files=files.read_files,
    )


def records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None:
    """The records of the Gemini CLI session in a Harbor trial's `agent/`; None if none."""
    path = _trial_session(ctx.files, agent_dir)
    if path is None:
        return None
    warnings: list[str] = []
    records = _session_records(
        ctx.files,
        path,
        ctx.instance_id,
        ctx.agent,
        ctx.metadata,
        ctx.usage,
        ctx.instruction,
        warnings,
    )
    return records, warnings


def _trial_session(files: TrialFiles, agent_dir: Path) -> Path | None:
    for name in HARBOR_COPIES:
        if files.is_file(agent_dir / name):
            return agent_dir / name
    found = sorted(
        {p for pattern in SESSION_PATTERNS for p in files.rglob(agent_dir, pattern)},
        key=lambda p: (p.name, str(p)),
    )
    return found[0] if found else None


def _session_records(
    files: TrialFiles,
    path: Path,
    instance_id: str,
    agent: dict[str, Any],
    metadata: dict[str, Any],
    usage: dict[str, Any],
    instruction: str | None,
    warnings: list[str],
) -> list[dict[str, Any]]:
    session = load_session(files, path)
    conversation = Conversation(session.messages)
    warnings.extend([*session.warnings, *conversation.warnings])
    main = _record(
        session, conversation, instance_id, agent, metadata, usage, instruction, warnings
    )
    fidelity = Counter(session.fidelity) + conversation.fidelity
    records = [main]
    for agent_id in conversation.subagent_ids:
        subagent = _subagent_record(files, path, session, agent_id, instance_id, agent, warnings)
        if subagent is None:
            fidelity["missing_subagent_files"] += 1
            continue
        record, sub_fidelity = subagent
        records.append(record)
        fidelity += sub_fidelity
    note_fidelity(records, fidelity)
    return records


def _record(
    session: Session,
    conversation: Conversation,
    instance_id: str,
    agent: dict[str, Any],
    metadata: dict[str, Any],
    usage: dict[str, Any],
    instruction: str | None,
    warnings: list[str],
    agent_type: str = "main",
) -> dict[str, Any]:
    label = "gemini-cli session"
    prompted = ensure_prompt(conversation.messages, instruction, label, warnings)
    messages = normalise_roles(prompted, conversation.fidelity, subagent=agent_type != "main")
    if not has_conversation(messages):
        raise ReaderError("no conversation: the session has no user turn and model turn")
    models = conversation.models
    record_metadata = {**metadata, **_session_metadata(session, conversation)}
    return build_im_record(
        messages,
        instance_id=instance_id,
        agent_type=agent_type,
        rebuild_tools=True,
        agent={
            "name": agent.get("name") or AGENT_NAME,
            "version": agent.get("version"),
            "model": agent.get("model") or (models[0] if models else None),
        },
        metadata=record_metadata,
        usage=usage or conversation.usage(),
        query_source=FORMAT,
        date=date_of(session.metadata.get("startTime")),
    )


def _session_metadata(session: Session, conversation: Conversation) -> dict[str, Any]:
    meta = session.metadata
    found: dict[str, Any] = {
        "gemini_session_id": meta.get("sessionId"),
        "project_hash": meta.get("projectHash"),
        "session_form": session.form,
    }
    if isinstance(meta.get("kind"), str):
        found["session_kind"] = meta["kind"]
    if len(conversation.models) > 1:
        found["models"] = list(conversation.models)
    if conversation.failed_calls:
        found["errored_tool_call_ids"] = list(conversation.failed_calls)
    return found


def _subagent_record(
    files: TrialFiles,
    path: Path,
    session: Session,
    agent_id: str,
    instance_id: str,
    agent: dict[str, Any],
    warnings: list[str],
) -> tuple[dict[str, Any], Counter[str]] | None:
    """The record of the subagent a call ran, with its fidelity; None when its file is absent."""
    folder = path.parent / _UNSAFE_NAME.sub("_", str(session.metadata.get("sessionId") or ""))
    name = _UNSAFE_NAME.sub("_", agent_id)
    candidates = [folder / f"{name}.jsonl", folder / f"{name}.json"]
    found = next((c for c in candidates if files.is_file(c)), None)
    if found is None:
        warnings.append(
            f"subagent {agent_id}: its session file {files.shown(candidates[0])} is missing"
        )
        return None
    sub_warnings: list[str] = []
    try:
        sub_session = load_session(files, found)
        conversation = Conversation(sub_session.messages)
        sub_agent = {"name": agent.get("name") or AGENT_NAME, "version": agent.get("version")}
        record = _record(
            sub_session,
            conversation,
            instance_id,
            sub_agent,
            {"source_file": str(found)},
            {},
            None,
            sub_warnings,
            agent_type="subagent",
        )
    except ReaderError as exc:
        warnings.append(f"subagent {agent_id} ({files.shown(found)}) unusable: {exc}")
        return None
    warnings.extend(
        f"subagent {agent_id}: {w}"
        for w in [*sub_session.warnings, *conversation.warnings, *sub_warnings]
    )
    return record, Counter(sub_session.fidelity) + conversation.fidelity
