"""Claude Code sessions (format "claude-code"): session JSONL -> main + subagent IM records.

A session file is one event per line (formats.md §3); a record holds what the model saw and
said, nothing else:

- Messages: `claude_code_conversation` (merged API responses, tool results as the tool
  returned them, user turns after tool results, local commands and compaction summaries as
  the model got them); content rendering: `claude_code_render`.
- Agents: `claude_code_agents` (streams by `isSidechain` / `agentId`, warmups, which `Task`
  call ran which subagent). One main record per session, then one subagent record per
  subagent (with the session's `_instance_id`, `_subagent_id` and, when known, the
  `_parent_tool_call_id` of the call that ran it).
- Compaction: the summary Claude Code writes after a `compact_boundary` line is the model's
  next user turn, in the same record: one main record per trial keeps the reward gate and
  instance filtering meaningful (a trial's reward belongs to the whole run, not to the part
  after the last compaction). The records count it (`compaction_summaries`).
- Layouts: 1.x (sidechains inside the session file), 2.0 (`agent-<id>.jsonl` sidechain
  files beside the session, matched by `sessionId`), 2.1 (`<session>/subagents/
  agent-<id>.jsonl`); standalone, or inside a Harbor trial (`agent/sessions/projects/
  <slug>/...`, every file classified by its content). Without session files a trial's
  stream-json stdout `agent/claude-code.txt` is read (`claude_code_stream`).
- A subagent file that opens with the assistant's line (some 2.0 versions) gets the `prompt`
  of the call that ran it as its first user message: the model got it as the subagent's
  request (counted `subagent_prompts_from_calls`).
- A file holding only sidechain events is a subagent transcript, not a session: it is
  refused (a bundle is never only subagents); so is a trial with no session file.
- Events are read in file order (the order Claude Code appended them; timestamps of lines
  written together are not monotonic), files in the order of their first timestamp.
- `_instance_metadata.errored_tool_call_ids` lists the calls whose result had `is_error`;
  `_instance_metadata.fidelity` counts what was left out (see the modules above).
- Claude Code's session holds neither its system prompt nor its tool list: the system
  message is empty and the tool list is rebuilt from the calls seen.

Files are opened through a `TrialFiles` (the trial, or the session file's own folder): a
file linked out of it, or not a regular file, is skipped with a warning. Message content
that is a JSON number or boolean (or such a content block) refuses the session.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from transforms.readers.bundle import (
    Bundle,
    ReaderError,
    main_record,
    new_bundle,
    note_fidelity,
    standalone_instance_id,
)
from transforms.readers.claude_code_agents import (
    is_message,
    is_sidechain,
    is_warmup,
    link_subagents,
    spawned_subagent,
    split_streams,
    unique_events,
)
from transforms.readers.claude_code_conversation import MAIN, Call, Conversation
from transforms.readers.claude_code_stream import stream_json_events
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.im_builder import build_im_record, date_of
from transforms.readers.source_files import iter_json_objects

FORMAT = "claude-code"
AGENT_NAME = "claude-code"
STREAM_JSON = "claude-code.txt"
SUBAGENT_ONLY = (
    "a Claude Code subagent transcript (sidechain events only): give the session file it belongs to"
)
Events = list[dict[str, Any]]


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per session file, with its subagent files (2.0 beside it, 2.1 below it)."""
    path = Path(path)
    files = TrialFiles.for_input(path, limits)
    warnings: list[str] = []
    session = _load(files, path, warnings)
    if _is_subagent_file(session):
        raise ReaderError(SUBAGENT_ONLY)
    session_id = _first_str(session, "sessionId")
    subagents = [
        events
        for sub in _subagent_paths(files, path, session_id)
        if (events := _load_optional(files, sub, warnings))
        and _is_subagent_file(events)
        and _first_str(events, "sessionId") in (None, session_id)
    ]
    warnings.extend(files.take_warnings())
    instance_id = standalone_instance_id(path)  # the session id is data: kept as metadata
    metadata = {"source_file": str(path), "claude_session_id": session_id}
    events = [*session, *(e for chunk in _by_first_timestamp(subagents) for e in chunk)]
    records, more = session_records(events, instance_id, {}, metadata, {})
    bundle = new_bundle(
        instance_id,
        str(path),
        FORMAT,
        records,
        metadata=metadata,
        warnings=warnings + more,
        read_files=files.read_files,
    )
    main = main_record(bundle)
    bundle["usage"] = main["meta_info"]["unique_info"]["_usage"] if main else {}
    yield bundle


def _subagent_paths(files: TrialFiles, path: Path, session_id: str | None) -> list[Path]:
    """The session's subagent files: 2.1's below it, and 2.0's beside it whose first lines
    name this session (or none). The files beside it are indexed once per folder and
    process (`_beside_index`), so a folder of n sessions costs n peeks, not n²."""
    nested = files.glob(path.parent / path.stem / "subagents", "*.jsonl")
    index, refused = _beside_index(path.parent, files.limits)
    files.warnings.extend(w for w in refused if w not in files.warnings)
    beside = [*index.get(None, ()), *(index.get(session_id, ()) if session_id else ())]
    return [*nested, *sorted(p for p in beside if p.name != path.name)]


_PEEK_LINES = 20
_Index = tuple[dict[str | None, list[Path]], list[str]]
_INDEXES: dict[tuple[str, int], _Index] = {}
_INDEXES_MAX = 64


def _beside_index(folder: Path, limits: ReadLimits) -> _Index:
    """The `agent-*.jsonl` files of `folder` by the session their first lines name (None:
    none), and the refusals met listing them; kept per process while the folder is
    unchanged (its mtime). Built with the folder's own confinement, as discovery lists it:
    the folder is not one trial."""
    try:
        key = (os.path.realpath(folder), os.stat(folder).st_mtime_ns)
    except OSError:
        return {}, []
    found = _INDEXES.get(key)
    if found is None:
        if len(_INDEXES) >= _INDEXES_MAX:
            _INDEXES.clear()
        listing = TrialFiles(folder, limits, scope="the input")
        index: dict[str | None, list[Path]] = {}
        for file in listing.glob(folder, "agent-*.jsonl"):
            index.setdefault(_peeked_session(listing, file), []).append(file)
        found = _INDEXES[key] = (index, listing.take_warnings())
    return found


def _peeked_session(files: TrialFiles, path: Path) -> str | None:
    """The `sessionId` on a file's first lines (None when they name none or cannot be read)."""
    try:
        for number, (_, event) in enumerate(iter_json_objects(files, path, [])):
            value = event.get("sessionId")
            if isinstance(value, str) and value:
                return value
            if number >= _PEEK_LINES:
                break
    except ReaderError:
        return None
    return None


def records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None:
    """Records of a Harbor trial's Claude Code logs; None when the folder has none.

    Every `*.jsonl` below `sessions/projects/` is classified by its content: session files
    (merged into the one main record, with a warning when several) and subagent files (any
    layout). Without them the stream-json stdout `claude-code.txt` is read (it has no user
    prompt: the trial's task instruction, `ctx.instruction`, is used when Harbor's command
    log holds it). Raises `ReaderError` when the logs exist but hold nothing usable.
    """
    files = ctx.files
    warnings: list[str] = []
    projects = agent_dir / "sessions" / "projects"
    loaded = [(f, _load(files, f, warnings)) for f in files.rglob(projects, "*.jsonl")]
    if loaded:
        sessions = [events for _, events in loaded if not _is_subagent_file(events)]
        subagents = [events for _, events in loaded if _is_subagent_file(events)]
        if not sessions:
            raise ReaderError(f"no session file, only subagent transcripts in {projects.name}/")
        if len(sessions) > 1:
            warnings.append(f"{len(sessions)} session files merged into one main record")
        events = [e for chunk in _by_first_timestamp(sessions) for e in chunk]
        events += [e for chunk in _by_first_timestamp(subagents) for e in chunk]
        records, more = session_records(events, ctx.instance_id, ctx.agent, ctx.metadata, ctx.usage)
        return records, warnings + more
    stream = agent_dir / STREAM_JSON
    if not files.is_file(stream):
        return None
    events, cost = stream_json_events(files, stream, warnings, ctx.instruction)
    usage = ctx.usage
    if cost is not None and not usage:
        usage = {"total_cost_usd": cost}
    records, more = session_records(events, ctx.instance_id, ctx.agent, ctx.metadata, usage)
    return records, warnings + more


def session_records(
    events: Events,
    instance_id: str,
    agent: dict[str, Any],
    metadata: dict[str, Any],
    usage: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[str]]:
    """IM records (main first, then subagents) of one session's events, and warnings."""
    counts: Counter[str] = Counter()
    streams = split_streams(unique_events(events, counts), counts)
    if not streams:
        raise ReaderError("no messages: the session has no user or assistant events")
    if MAIN not in streams:
        raise ReaderError(SUBAGENT_ONLY)
    conversations = {
        key: Conversation(stream, MAIN if key == MAIN else _label(key))
        for key, stream in streams.items()
    }
    links = link_subagents(conversations)
    for key, call in links.items():
        if call.prompt and conversations[key].open_with_prompt(call.prompt):
            counts["subagent_prompts_from_calls"] += 1
    warnings = [w for conv in conversations.values() for w in conv.warnings]
    warmups = [k for k, c in conversations.items() if k != MAIN and k not in links and is_warmup(c)]
    if warmups:
        counts["warmups_skipped"] += len(warmups)
        warnings.append(
            f"{len(warmups)} warmup sidechain(s) skipped (Claude Code's prompt-cache "
            "warmups, not subagent work)"
        )
    linked = {call.id for call in links.values()}
    missing = [
        call.id
        for conv in conversations.values()
        for call in conv.calls.values()
        if spawned_subagent(call) and call.id not in linked
    ]
    if missing:
        counts["missing_subagent_files"] += len(missing)
        warnings.append(
            f"{len(missing)} subagent transcript(s) missing (calls {', '.join(missing)}): "
            "their work is not in the records"
        )
    build = _RecordBuilder(instance_id, agent, metadata, usage, events)
    records: list[dict[str, Any]] = []
    for key, conv in conversations.items():
        if key in warmups:
            continue
        record = build.record(key, conv, links.get(key))
        if record is None:
            warnings.append(f"{conv.label}: no conversation; skipped")
            continue
        records.append(record)
        counts.update(conv.counts)
    if not records or records[0]["meta_info"]["unique_info"]["_agent_type"] != "main":
        raise ReaderError("no messages: the session has no user or assistant text")
    note_fidelity(records, counts)
    return records, warnings


def _label(key: str) -> str:
    if key.startswith("sidechain-"):
        return f"inline sidechain {key.removeprefix('sidechain-')}"
    return f"subagent {key}"


class _RecordBuilder:
    """The IM records of one session's agents, sharing its identity and metadata."""

    def __init__(
        self,
        instance_id: str,
        agent: dict[str, Any],
        metadata: dict[str, Any],
        usage: dict[str, Any],
        events: Events,
    ) -> None:
        self.instance_id = instance_id
        self.agent = agent
        self.metadata = metadata
        self.usage = usage
        self.version = agent.get("version") or _first_str(events, "version")
        self.main_model: str | None = None

    def record(self, key: str, conv: Conversation, call: Call | None) -> dict[str, Any] | None:
        messages = conv.messages()
        is_main = key == MAIN
        if not any(m["role"] == "assistant" for m in messages) and (
            not is_main or len(messages) < 2
        ):
            return None
        model = conv.model or self.main_model
        if is_main:
            self.main_model = model
        metadata = dict(self.metadata)
        if conv.errored_call_ids:
            metadata["errored_tool_call_ids"] = conv.errored_call_ids
        extra: dict[str, Any] | None = None
        if not is_main:
            extra = {"_subagent_id": key}
            if call is not None:
                extra["_parent_tool_call_id"] = call.id
        return build_im_record(
            messages,
            instance_id=self.instance_id,
            agent_type="main" if is_main else "subagent",
            rebuild_tools=True,
            agent={
                "name": self.agent.get("name") or AGENT_NAME,
                "version": self.version,
                "model": (self.agent.get("model") if is_main else None) or model,
            },
            metadata=metadata,
            usage=(self.usage or conv.usage()) if is_main else conv.usage(),
            query_source=FORMAT,
            date=date_of(_first_str(conv.events, "timestamp")),
            extra_unique_info=extra,
        )


def _load(files: TrialFiles, path: Path, warnings: list[str]) -> Events:
    local: list[str] = []
    try:
        events = [event for _, event in iter_json_objects(files, path, local)]
    finally:
        warnings.extend(f"{path.name}: {w}" for w in local)
    return events


def _load_optional(files: TrialFiles, path: Path, warnings: list[str]) -> Events:
    """A file read beside the input: unreadable is a warning, not a refusal."""
    try:
        return _load(files, path, warnings)
    except ReaderError as exc:
        warnings.append(f"{path.name}: {exc}; skipped")
        return []


def _is_subagent_file(events: Events) -> bool:
    """Only sidechain message events: a subagent transcript, not a session."""
    messages = [e for e in events if is_message(e)]
    return bool(messages) and all(is_sidechain(e) for e in messages)


def _by_first_timestamp(chunks: list[Events]) -> list[Events]:
    return sorted(chunks, key=lambda events: _first_str(events, "timestamp") or "")


def _first_str(events: Events, key: str) -> str | None:
    for event in events:
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    return None
