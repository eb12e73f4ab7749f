"""Which Claude Code events belong to which agent, and which `Task` call ran which subagent.

- Streams: an event with `isSidechain: true` or an `agentId` belongs to a subagent, one
  stream per `agentId` (a 1.x log without `agentId`: per sidechain chain root, found by
  `parentUuid`); every other event is the main agent's. Only `user` / `assistant` events
  with a `message` object, and `system` lines of subtype `local_command` (Claude Code sends
  them to the model as user text), hold conversation; the other lines are bookkeeping the
  model never saw: `summary` (the UI's session titles, also mid-file), `file-history-snapshot`,
  `queue-operation`, `last-prompt`, `progress`, `system` (`compact_boundary`,
  `turn_duration`, ...). `attachment` lines are harness context (tool, agent and skill
  listings) that Claude Code renders into reminders at send time in a way the log does not
  hold: they are left out and counted (`attachments_skipped`, `summary_lines_skipped`).
  A line repeated with the same `uuid` (a resumed session copies its history) is read once
  (`duplicate_events_skipped`).
- Links: a subagent belongs to the call whose result's `toolUseResult.agentId` is its
  `agentId`, or whose id is its `agentId` (stream-json's `parent_tool_use_id`), or else
  whose `prompt` argument is the subagent's first user message. The tool's name is not used
  for this: it changed across versions (`Task`, `Agent`).
- Warmups: Claude Code 2.0 opens a sidechain per subagent type with the prompt "Warmup" to
  fill the prompt cache ("I'm ready to help!"-style replies). A sidechain whose first user
  message is "Warmup", that no call spawned and that ran no tool is a warmup, not a
  subagent: it is left out (`warmups_skipped`).
- Missing transcripts: a call that ran a subagent (its result names an `agentId`, or it is
  a successful `Task` / `Agent` call with a `prompt`) and that no subagent stream belongs to
  lost its subagent's transcript (`missing_subagent_files`).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping
from typing import Any

from transforms.readers.claude_code_conversation import LOCAL_COMMAND, MAIN, Call, Conversation

WARMUP_PROMPT = "Warmup"
SPAWNING_TOOLS = frozenset({"Task", "Agent"})
_SKIPPED_LINES = {"attachment": "attachments_skipped", "summary": "summary_lines_skipped"}


def unique_events(events: list[dict[str, Any]], counts: Counter[str]) -> list[dict[str, Any]]:
    """Events in the order given, each `uuid` once."""
    seen: set[str] = set()
    unique = []
    for event in events:
        uuid = event.get("uuid")
        if isinstance(uuid, str) and uuid:
            if uuid in seen:
                counts["duplicate_events_skipped"] += 1
                continue
            seen.add(uuid)
        unique.append(event)
    return unique


def is_sidechain(event: Mapping[str, Any]) -> bool:
    agent_id = event.get("agentId")
    return event.get("isSidechain") is True or (isinstance(agent_id, str) and bool(agent_id))


def is_message(event: Mapping[str, Any]) -> bool:
    """An event that holds conversation (see the module docstring)."""
    kind = event.get("type")
    if kind in ("user", "assistant"):
        return isinstance(event.get("message"), dict)
    return kind == "system" and event.get("subtype") == LOCAL_COMMAND


def split_streams(
    events: list[dict[str, Any]], counts: Counter[str]
) -> dict[str, list[dict[str, Any]]]:
    """Message events by agent: "main" first (when present), then each subagent in order of
    appearance."""
    parents = {
        e["uuid"]: e.get("parentUuid")
        for e in events
        if e.get("isSidechain") is True and isinstance(e.get("uuid"), str)
    }
    streams: dict[str, list[dict[str, Any]]] = {MAIN: []}
    for event in events:
        skipped = _SKIPPED_LINES.get(str(event.get("type")))
        if skipped:
            counts[skipped] += 1
        if is_message(event):
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


def link_subagents(conversations: Mapping[str, Conversation]) -> dict[str, Call]:
    """Subagent stream key -> the call that ran it (see the module docstring). Linear in
    the calls and streams: every lookup goes through an index built once."""
    calls = [call for conv in conversations.values() for call in conv.calls.values()]
    by_agent = {call.agent_id: call for call in calls if call.agent_id}
    by_id = {call.id: call for call in calls}
    by_prompt: dict[str, deque[Call]] = {}
    for each in calls:
        by_prompt.setdefault((each.prompt or "").strip(), deque()).append(each)
    links: dict[str, Call] = {}
    used: set[str] = set()
    for key, conv in conversations.items():
        if key == MAIN:
            continue
        call = by_agent.get(key) or by_id.get(key) or _by_prompt(by_prompt, conv, used)
        if call is not None and call.id not in used:
            links[key] = call
            used.add(call.id)
    return links


def _by_prompt(
    by_prompt: dict[str, deque[Call]], conv: Conversation, used: set[str]
) -> Call | None:
    """The first call not yet linked whose prompt is the stream's first user text (linked
    calls are dropped from the head of its queue as they are met: each once)."""
    prompt = (conv.first_user_text or "").strip()
    candidates = by_prompt.get(prompt) if prompt else None
    while candidates:
        if candidates[0].id not in used:
            return candidates[0]
        candidates.popleft()
    return None


def is_warmup(conv: Conversation) -> bool:
    """A prompt-cache warmup sidechain (call it only for sidechains no call spawned)."""
    ran_tools = any(call.output is not None for call in conv.calls.values())
    return (conv.first_user_text or "").strip() == WARMUP_PROMPT and not ran_tools


def spawned_subagent(call: Call) -> bool:
    """Whether the call ran a subagent whose transcript the session should have."""
    if call.agent_id:
        return True
    return (
        call.name in SPAWNING_TOOLS
        and bool(call.prompt)
        and call.output is not None
        and not call.errored
    )
