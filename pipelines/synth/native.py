"""Native agent logs for trials without ATIF (formats.md §3).

Claude Code: a session JSONL under `sessions/projects/-app/<session>.jsonl`, one assistant
event per content block (blocks of one response share `message.id`), tool results as `user`
events with `toolUseResult`, and a Task subagent in `<session>/subagents/agent-<id>.jsonl`.
OpenCode: `opencode.txt`, JSON lines of step_start / reasoning / text / tool_use /
step_finish events.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from pipelines.synth.atif import CWD, claude_call
from pipelines.synth.common import (
    AgentRun,
    Clock,
    Meter,
    Model,
    alnum,
    jsonl_bytes,
    new_uuid,
)
from pipelines.synth.scenario import Action, Episode, Turn

__all__ = ["claude_code_native", "opencode_native"]

Event = dict[str, Any]


class _Session:
    """Events of one Claude Code transcript (main or subagent), chained by `parentUuid`."""

    def __init__(
        self,
        session: str,
        version: str,
        clock: Clock,
        rng: random.Random,
        agent_id: str | None = None,
    ) -> None:
        self.session, self.version, self.clock, self.rng = session, version, clock, rng
        self.agent_id = agent_id
        self.parent: str | None = None
        self.events: list[Event] = []

    def add(self, kind: str, body: Event, stamp: str) -> str:
        uid = new_uuid(self.rng)
        event: Event = {"parentUuid": self.parent, "isSidechain": self.agent_id is not None}
        if self.agent_id:
            event["agentId"] = self.agent_id
        event.update(body)
        event.update(
            {
                "type": kind,
                "uuid": uid,
                "timestamp": stamp,
                "userType": "external",
                "entrypoint": "sdk-cli",
                "cwd": CWD,
                "sessionId": self.session,
                "version": self.version,
                "gitBranch": "HEAD",
            }
        )
        self.events.append(event)
        self.parent = uid
        return uid

    def user(self, text: str) -> None:
        self.add("user", {"message": {"role": "user", "content": text}}, self.clock.stamp(0, 1))

    def assistant(
        self, model: Model, meter: Meter, turn: Turn | None, final: str = ""
    ) -> list[tuple[str, str, Action]]:
        """Write one response; return (tool_use id, assistant uuid, action) per tool call."""
        blocks: list[dict[str, Any]] = []
        if turn is None:
            blocks.append({"type": "text", "text": final})
        else:
            if turn.reasoning:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": turn.reasoning,
                        "signature": alnum(self.rng, 48),
                    }
                )
            if turn.text and self.rng.random() < 0.6:
                blocks.append({"type": "text", "text": turn.text})
        calls = []
        for action in turn.actions if turn else ():
            name, args, _, _ = claude_call(action)
            call_id = "toolu_01" + alnum(self.rng, 22)
            blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
            calls.append((call_id, action))
        written = "".join(str(b) for b in blocks)
        read = "".join(claude_call(a)[2] for _, a in calls)
        usage = meter.step(written, read)
        cached = int(usage["cached_tokens"])
        tokens = {
            "input_tokens": self.rng.randint(2, 9),
            "cache_creation_input_tokens": int(usage["prompt_tokens"]) - cached,
            "cache_read_input_tokens": cached,
            "output_tokens": usage["completion_tokens"],
            "service_tier": "standard",
        }
        message_id, request_id = "msg_01" + alnum(self.rng, 22), "req_01" + alnum(self.rng, 22)
        stamp = self.clock.stamp()
        uuids: dict[str, str] = {}
        for i, block in enumerate(blocks):
            last = i == len(blocks) - 1
            stop = ("end_turn" if turn is None else "tool_use") if last else None
            message = {
                "model": model.name,
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": tokens,
            }
            uid = self.add("assistant", {"message": message, "requestId": request_id}, stamp)
            if block["type"] == "tool_use":
                uuids[block["id"]] = uid
        return [(call_id, uuids[call_id], action) for call_id, action in calls]

    def result(self, call_id: str, source: str, action: Action, extra: Any = None) -> None:
        _, _, content, is_error = claude_call(action)
        body = {
            "message": {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": call_id,
                        "type": "tool_result",
                        "content": content,
                        "is_error": is_error,
                    }
                ],
            },
            "toolUseResult": extra
            if extra is not None
            else _tool_use_result(action, content, is_error),
            "sourceToolAssistantUUID": source,
        }
        self.add("user", body, self.clock.stamp(0.1, 4))


def _tool_use_result(action: Action, content: str, is_error: bool) -> Any:
    path = f"{CWD}/{action.path}"
    if is_error and action.kind != "run":
        return f"Error: {content}"
    if action.kind == "read":
        lines = action.output.count("\n") + 1
        return {
            "type": "text",
            "file": {
                "filePath": path,
                "content": action.output,
                "numLines": lines,
                "startLine": 1,
                "totalLines": lines,
            },
        }
    if action.kind == "edit":
        return {
            "filePath": path,
            "oldString": action.old,
            "newString": action.new,
            "replaceAll": False,
        }
    if action.kind == "write":
        return {"type": "create", "filePath": path, "content": action.content}
    if action.kind in ("run", "list"):
        return {"stdout": action.output, "stderr": "", "interrupted": False, "isImage": False}
    return {"result": content}


def claude_code_native(
    ep: Episode, model: Model, version: str, clock: Clock, rng: random.Random
) -> AgentRun:
    session = new_uuid(rng)
    main = _Session(session, version, clock, rng)
    stamp = clock.stamp(0, 1)
    main.events += [
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": stamp,
            "sessionId": session,
            "content": ep.instruction,
        },
        {
            "type": "queue-operation",
            "operation": "dequeue",
            "timestamp": stamp,
            "sessionId": session,
        },
    ]
    main.user(ep.instruction)
    meter = Meter(model, rng, context=rng.randint(14_000, 22_000), cache_share=0.92)
    base = f"sessions/projects/-app/{session}"
    files: list[tuple[str, dict[str, Any] | bytes]] = []
    for turn in ep.turns:
        for call_id, source, action in main.assistant(model, meter, turn):
            extra = None
            if action.kind == "delegate" and ep.subagent:
                sub = _Session(session, version, clock, rng, ep.subagent.agent_id)
                sub.user(ep.subagent.prompt)
                sub_meter = Meter(model, rng, context=rng.randint(9_000, 12_000), cache_share=0.9)
                for sub_turn in ep.subagent.turns:
                    for sub_id, sub_source, sub_action in sub.assistant(model, sub_meter, sub_turn):
                        sub.result(sub_id, sub_source, sub_action)
                sub.assistant(model, sub_meter, None, ep.subagent.report)
                meter.absorb(sub_meter)
                path = f"{base}/subagents/agent-{ep.subagent.agent_id}.jsonl"
                files.append((path, jsonl_bytes(sub.events)))
                extra = {
                    "status": "completed",
                    "agentId": ep.subagent.agent_id,
                    "content": [{"type": "text", "text": ep.subagent.report}],
                    "totalToolUseCount": sum(len(t.actions) for t in ep.subagent.turns),
                }
            main.result(call_id, source, action, extra)
    if ep.final is not None:
        main.assistant(model, meter, None, ep.final)
        main.events.append(
            {
                "type": "last-prompt",
                "lastPrompt": ep.instruction.splitlines()[0],
                "leafUuid": main.parent,
                "sessionId": session,
            }
        )
    files.insert(0, (f"{base}.jsonl", jsonl_bytes(main.events)))
    return meter.run(files, "claude-code-jsonl", clock.now)


# --- OpenCode ----------------------------------------------------------------------------
def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _opencode_tool(action: Action) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
    path = f"{CWD}/{action.path}"
    if action.kind == "read":
        body = "\n".join(f"{n:05d}| {line}" for n, line in enumerate(action.output.splitlines(), 1))
        return "read", {"filePath": path}, f"<file>\n{body}\n</file>", {"preview": action.output}
    if action.kind == "grep":
        hits = action.output.splitlines()
        text = f"Found {len(hits)} matches\n" + "\n".join(f"{CWD}/{h}" for h in hits)
        return "grep", {"pattern": action.pattern, "path": CWD}, text, {"matches": len(hits)}
    if action.kind == "edit":
        args = {"filePath": path, "oldString": action.old, "newString": action.new}
        return "edit", args, "", {"diff": f"-{action.old}\n+{action.new}"}
    if action.kind == "write":
        return "write", {"filePath": path, "content": action.content}, "", {"exists": False}
    if action.kind == "todo":
        todos = [
            {"content": c, "status": s, "priority": "medium", "id": str(i + 1)}
            for i, (c, s) in enumerate(action.todos)
        ]
        return "todowrite", {"todos": todos}, str(todos), {"todos": todos}
    args = {"command": action.command, "description": "Run a shell command"}
    return "bash", args, action.output, {"output": action.output, "exit": action.exit_code}


def opencode_native(
    ep: Episode, model: Model, version: str, clock: Clock, rng: random.Random
) -> AgentRun:
    session = "ses_" + alnum(rng, 26)
    meter = Meter(model, rng, context=rng.randint(9_000, 13_000), cache_share=0.8)
    lines: list[Event] = []

    def event(kind: str, message: str, part: dict[str, Any]) -> None:
        stamp = clock.tick(0.05, 2)
        part = {"id": "prt_" + alnum(rng, 26), "sessionID": session, "messageID": message, **part}
        lines.append({"type": kind, "timestamp": _ms(stamp), "sessionID": session, "part": part})

    def step(turn: Turn | None, text: str) -> None:
        message = "msg_" + alnum(rng, 26)
        event("step_start", message, {"type": "step-start"})
        if turn is not None and turn.reasoning:
            event("reasoning", message, {"type": "reasoning", "text": turn.reasoning})
        if text:
            event("text", message, {"type": "text", "text": text})
        read, written = "", text
        for action in turn.actions if turn else ():
            name, args, output, metadata = _opencode_tool(action)
            start = _ms(clock.tick(0.5, 8))
            state: dict[str, Any] = {
                "status": "error" if action.error else "completed",
                "input": args,
            }
            if action.error:
                state["error"] = f"Error: {action.output}"
            else:
                state.update(
                    {"output": output, "title": action.path or action.command, "metadata": metadata}
                )
            state["time"] = {"start": start, "end": start + rng.randint(20, 4000)}
            event(
                "tool_use",
                message,
                {"type": "tool", "callID": "call_" + alnum(rng, 24), "tool": name, "state": state},
            )
            read += output
            written += str(args)
        usage = meter.step(written, read)
        tokens = {
            "input": int(usage["prompt_tokens"]) - int(usage["cached_tokens"]),
            "output": usage["completion_tokens"],
            "reasoning": 0,
            "cache": {"read": usage["cached_tokens"], "write": 0},
        }
        reason = "stop" if turn is None else "tool-calls"
        event(
            "step_finish",
            message,
            {"type": "step-finish", "reason": reason, "cost": usage["cost_usd"], "tokens": tokens},
        )

    event("user", "msg_" + alnum(rng, 26), {"type": "text", "text": ep.instruction})
    for turn in ep.turns:
        step(turn, turn.text if rng.random() < 0.7 else "")
    if ep.final is not None:
        step(None, ep.final)
    else:
        lines.append(
            {
                "type": "error",
                "timestamp": _ms(clock.tick(1, 5)),
                "sessionID": session,
                "error": {"name": "AbortError", "data": {"message": "The run was aborted."}},
            }
        )
    return meter.run([("opencode.txt", jsonl_bytes(lines))], "opencode-jsonl", clock.now)
