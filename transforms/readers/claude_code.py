"""Claude Code sessions (format "claude-code"): session JSONL -> main + subagent IM records.

A session file is one event per line (formats.md §3). Only `user` and `assistant` events
carry a conversation; the other event types (system, summary, queue-operation, attachment,
last-prompt, file-history-snapshot) are bookkeeping and are skipped.

- One API response is often split over several assistant events sharing `message.id`; they
  are merged into one assistant message (text, thinking -> `reasoning_content`, tool_use).
- Tool results (`tool_result` blocks in user events) become `tool` messages right after the
  call's assistant message, in call order, wherever the log wrote them.
- Events with `isSidechain: true` or an `agentId` belong to a subagent: one subagent record
  per `agentId` (or per sidechain chain root when an old log has no `agentId`), with the
  session's `_instance_id`. The Task tool's name is not used: it changed across versions.
- Tool result text follows Harbor's Claude Code -> ATIF conversion (harbor 0.26,
  `ClaudeCode._format_tool_result`: `[stdout]`/`[stderr]`/`[exit_code]`/`[metadata] {...}`
  from `toolUseResult`, `[error] tool reported failure`), so a trial read from its native
  session or from its `trajectory.json` gives the same records and scores. Deliberate
  differences: images become `[image]` (not their base64 JSON), an empty tool result is an
  empty tool message (not a missing one), and `<synthetic>` assistant messages (Claude
  Code's own API-error notices, not model output) are dropped.
- Claude Code's session holds neither its system prompt nor its tool list: the system
  message is empty and the tool list is rebuilt from the calls seen.

A standalone file that holds only sidechain events (a `subagents/agent-<id>.jsonl`
transcript) reads as a bundle with subagent records only: its first "user" message was
written by the parent model, not a person, so it is not promoted to a main-agent record.

Files are opened through a `TrialFiles` (the trial, or the session file's own folder): a
session file linked out of it, or not a regular file, is skipped with a warning. Message
content that is a JSON number or boolean (or such a content block) refuses the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from transforms.readers.bundle import Bundle, ReaderError, main_record, new_bundle
from transforms.readers.claude_code_render import (
    append_stripped,
    block_text,
    check_content,
    stringify,
    tool_result_text,
)
from transforms.readers.claude_code_stream import stream_json_events
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.conversation import Message, normalise_roles
from transforms.readers.im_builder import build_im_record, date_of
from transforms.readers.source_files import iter_json_objects

FORMAT = "claude-code"
AGENT_NAME = "claude-code"
MAIN = "main"
SYNTHETIC_MODEL = "<synthetic>"
STREAM_JSON = "claude-code.txt"


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per session file (plus its `<session>/subagents/*.jsonl` when beside it)."""
    path = Path(path)
    files = TrialFiles.for_input(path, limits)
    warnings: list[str] = []
    events = _load(files, path, warnings)
    for sub in files.glob(path.parent / path.stem / "subagents", "*.jsonl"):
        events.extend(_load(files, sub, warnings))
    warnings.extend(files.take_warnings())
    instance_id = _first_str(events, "sessionId") or path.stem
    metadata = {"source_file": str(path)}
    records, more = session_records(events, instance_id, {}, metadata, {})
    bundle = new_bundle(
        instance_id, str(path), FORMAT, records, metadata=metadata, warnings=warnings + more
    )
    main = main_record(bundle)
    bundle["usage"] = main["meta_info"]["unique_info"]["_usage"] if main else {}
    yield bundle


def records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None:
    """Records of a Harbor trial's Claude Code logs; None when the folder has none.

    Sessions live in `sessions/projects/<cwd-slug>/<session>.jsonl`, subagents in
    `<session>/subagents/agent-<id>.jsonl`; without them the stream-json stdout
    `claude-code.txt` is read (it has no user prompt: the trial's task instruction,
    `ctx.instruction`, is used when Harbor's command log holds it). Raises `ReaderError`
    when the logs exist but hold nothing usable.
    """
    files = ctx.files
    warnings: list[str] = []
    projects = agent_dir / "sessions" / "projects"
    found = files.rglob(projects, "*.jsonl")
    main_files = [f for f in found if "subagents" not in f.relative_to(projects).parent.parts]
    if main_files:
        events = [e for f in main_files for e in _load(files, f, warnings)]
        events += [e for f in found if f not in main_files for e in _load(files, f, warnings)]
        if len(main_files) > 1:
            warnings.append(f"{len(main_files)} session files merged into one main record")
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
    events: list[dict[str, Any]],
    instance_id: str,
    agent: dict[str, Any],
    metadata: dict[str, Any],
    usage: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[str]]:
    """IM records (main first, then subagents) of one session's events, and warnings."""
    warnings: list[str] = []
    streams = _split_streams(_ordered(events))
    if not streams:
        raise ReaderError("no messages: the session has no user or assistant events")
    version = agent.get("version") or _first_str(events, "version")
    main_model = None
    records: list[dict[str, Any]] = []
    for key, stream in streams.items():
        conversation = _Conversation(stream, f"subagent {key}" if key != MAIN else MAIN)
        messages = conversation.messages()
        warnings.extend(conversation.warnings)
        if not any(m["role"] == "assistant" for m in messages) and (
            key != MAIN or len(messages) < 2
        ):
            warnings.append(f"{conversation.label}: no conversation; skipped")
            continue
        model = conversation.model or main_model
        if key == MAIN:
            main_model = model
        records.append(
            build_im_record(
                messages,
                instance_id=instance_id,
                agent_type="main" if key == MAIN else "subagent",
                rebuild_tools=True,
                agent={
                    "name": agent.get("name") or AGENT_NAME,
                    "version": version,
                    "model": (agent.get("model") if key == MAIN else None) or model,
                },
                metadata=metadata,
                usage=(usage or conversation.usage()) if key == MAIN else conversation.usage(),
                query_source=FORMAT,
                date=date_of(_first_str(stream, "timestamp")),
                extra_unique_info=None if key == MAIN else {"_subagent_id": key},
            )
        )
    if not records:
        raise ReaderError("no messages: the session has no user or assistant text")
    if records[0]["meta_info"]["unique_info"]["_agent_type"] != "main":
        warnings.append("no main-agent events: the records are subagent transcripts only")
    return records, warnings


def _load(files: TrialFiles, path: Path, warnings: list[str]) -> list[dict[str, Any]]:
    local: list[str] = []
    try:
        events = [event for _, event in iter_json_objects(files, path, local)]
    finally:
        warnings.extend(f"{path.name}: {w}" for w in local)
    return events


def _first_str(events: list[dict[str, Any]], key: str) -> str | None:
    for event in events:
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _ordered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events deduplicated by `uuid`, in timestamp order (stable), as Harbor orders them."""
    seen: set[str] = set()
    unique = []
    for event in events:
        uuid = event.get("uuid")
        if isinstance(uuid, str) and uuid:
            if uuid in seen:
                continue
            seen.add(uuid)
        unique.append(event)
    return sorted(unique, key=lambda e: str(e.get("timestamp") or ""))


def _split_streams(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Message events by agent: "main" first, then each subagent in order of appearance."""
    parents = {
        e["uuid"]: e.get("parentUuid")
        for e in events
        if e.get("isSidechain") is True and isinstance(e.get("uuid"), str)
    }
    streams: dict[str, list[dict[str, Any]]] = {MAIN: []}
    for event in events:
        if event.get("type") not in ("user", "assistant") or not isinstance(
            event.get("message"), dict
        ):
            continue
        streams.setdefault(_stream_key(event, parents), []).append(event)
    return {key: stream for key, stream in streams.items() if stream}


def _stream_key(event: dict[str, Any], parents: dict[str, Any]) -> str:
    agent_id = event.get("agentId")
    if isinstance(agent_id, str) and agent_id:
        return agent_id
    if event.get("isSidechain") is not True:
        return MAIN
    root = str(event.get("uuid"))
    seen: set[str] = set()
    while isinstance(parents.get(root), str) and parents[root] in parents and root not in seen:
        seen.add(root)
        root = parents[root]
    return f"sidechain-{root}"


class _Call:
    def __init__(self, call_id: str, name: str, arguments: Any) -> None:
        self.id = call_id
        self.name = name
        self.arguments = arguments
        self.output: str | None = None


class _Turn:
    """One API response: the merged content of every assistant event with its `message.id`."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[_Call] = []

    def messages(self) -> list[Message]:
        if not (self.texts or self.reasoning or self.calls):
            return []
        assistant: Message = {
            "role": "assistant",
            "content": "\n\n".join(self.texts),
            "reasoning_content": "\n\n".join(self.reasoning),
        }
        if self.calls:
            assistant["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.calls
            ]
        results: list[Message] = [
            {"role": "tool", "content": c.output, "tool_call_id": c.id, "name": c.name}
            for c in self.calls
            if c.output is not None
        ]
        return [assistant, *results]


class _Conversation:
    """One agent's events -> messages; tool results attach to their calls by id."""

    def __init__(self, events: list[dict[str, Any]], label: str) -> None:
        self.label = label
        self.items: list[_Turn | str] = []
        self.turns: dict[str, _Turn] = {}
        self.calls: dict[str, _Call] = {}
        self.usages: dict[str, dict[str, Any]] = {}
        self.model: str | None = None
        self.warnings: list[str] = []
        self.synthetic = 0
        self.orphans = 0
        for number, event in enumerate(events, 1):
            uuid = event.get("uuid")
            where = f"{label} {event['type']} event {uuid if isinstance(uuid, str) else number}"
            if event["type"] == "assistant":
                self._assistant(event["message"], where)
            else:
                self._user(event["message"], event.get("toolUseResult"), where)
        if self.synthetic:
            self.warnings.append(f"{label}: {self.synthetic} <synthetic> message(s) dropped")
        if self.orphans:
            self.warnings.append(f"{label}: {self.orphans} tool result(s) without a call dropped")

    def messages(self) -> list[Message]:
        out: list[Message] = [{"role": "system", "content": ""}]
        for item in self.items:
            if isinstance(item, str):
                out.append({"role": "user", "content": item})
            else:
                out.extend(item.messages())
        return normalise_roles(out)

    def usage(self) -> dict[str, Any]:
        """Token totals, counting each API response once (its last, cumulative usage)."""
        if not self.usages:
            return {}
        totals = {"total_prompt_tokens": 0, "total_completion_tokens": 0, "total_cached_tokens": 0}
        for usage in self.usages.values():
            cached = _count(usage, "cache_read_input_tokens")
            created = _count(usage, "cache_creation_input_tokens")
            totals["total_prompt_tokens"] += _count(usage, "input_tokens") + cached + created
            totals["total_completion_tokens"] += _count(usage, "output_tokens")
            totals["total_cached_tokens"] += cached
        return dict(totals)

    def _assistant(self, message: dict[str, Any], where: str) -> None:
        model = message.get("model")
        if model == SYNTHETIC_MODEL:
            self.synthetic += 1
            return
        if isinstance(model, str) and model and self.model is None:
            self.model = model
        msg_id = message.get("id")
        key = msg_id if isinstance(msg_id, str) and msg_id else f"#{len(self.items)}"
        turn = self.turns.get(key)
        if turn is None:
            turn = self.turns[key] = _Turn()
            self.items.append(turn)
        if isinstance(message.get("usage"), dict):
            self.usages[key] = message["usage"]
        content = message.get("content")
        if isinstance(content, list):
            for number, block in enumerate(content, 1):
                self._assistant_block(turn, block, f"{where}: content block {number}")
        elif content is not None:
            append_stripped(turn.texts, stringify(check_content(content, f"{where}: content")))

    def _assistant_block(self, turn: _Turn, block: Any, where: str) -> None:
        if not isinstance(block, dict):
            append_stripped(turn.texts, block_text(block, where))
            return
        kind = block.get("type")
        if kind == "tool_use":
            call_id = block.get("id") or block.get("tool_use_id")
            if not call_id or call_id in self.calls:
                return
            raw = block.get("input")
            arguments = raw if isinstance(raw, dict) else {"input": raw}
            call = _Call(str(call_id), str(block.get("name") or ""), arguments)
            self.calls[call.id] = call
            turn.calls.append(call)
        elif kind in ("thinking", "reasoning", "analysis"):
            value = block.get("text") if block.get("text") is not None else block.get("thinking")
            value = check_content(value, f"{where} {kind}")
            append_stripped(turn.reasoning, value if isinstance(value, str) else stringify(value))
        elif kind == "redacted_thinking":
            return
        elif kind == "code" and isinstance(block.get("code"), str):
            append_stripped(turn.texts, block["code"])
        elif isinstance(block.get("text"), str):
            append_stripped(turn.texts, block["text"])
        else:
            append_stripped(turn.texts, stringify(block))

    def _user(self, message: dict[str, Any], tool_use_result: Any, where: str) -> None:
        content = message.get("content")
        if isinstance(content, str):
            if content.strip():
                self.items.append(content)
            return
        if not isinstance(content, list):
            check_content(content, f"{where}: content")
            if content not in (None, "") and stringify(content).strip():
                self.items.append(stringify(content))
            return
        texts: list[str] = []
        for number, block in enumerate(content, 1):
            what = f"{where}: content block {number}"
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self._tool_result(block, tool_use_result, what)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                texts.append(block["text"])
            else:
                texts.append(block_text(block, what))
        text = "\n\n".join(t for t in texts if t.strip())
        if text:
            self.items.append(text)

    def _tool_result(self, block: dict[str, Any], tool_use_result: Any, what: str) -> None:
        call = self.calls.get(str(block.get("tool_use_id") or ""))
        if call is None:
            self.orphans += 1
            return
        if call.output is None:
            call.output = tool_result_text(block, tool_use_result, what)


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
