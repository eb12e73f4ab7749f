"""Tiny builders of IM records for the TQS V2 tests (not a test module).

A record is built from "turns": each turn is one message or a list of messages (an assistant
message and its tool results, see `step`). The scaffold helpers add the system prompt, the
task message and the declared `tools` that make scaffold detection pick that scaffold.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any

Record = dict[str, Any]
Message = dict[str, Any]
ToolCall = dict[str, Any]
Turn = Message | list[Message]

CLAUDE_CODE_SYSTEM = "You are Claude Code, Anthropic's official CLI for Claude."
OPENCODE_SYSTEM = "You are opencode, an interactive CLI agent for software engineering tasks."
OPENHANDS_SYSTEM = "You are OpenHands agent, a helpful AI assistant."
TASK = "Fix the bug described in ISSUE.md."

_ids = itertools.count(1)


def tool_schema(name: str, *params: str) -> dict[str, Any]:
    """A declared tool whose parameters are all strings."""
    properties = {param: {"type": "string"} for param in params}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": properties, "required": []},
        },
    }


CLAUDE_CODE_TOOLS = [
    tool_schema("Bash", "command", "timeout", "description"),
    tool_schema("Read", "file_path", "offset", "limit"),
    tool_schema("Edit", "file_path", "old_string", "new_string"),
    tool_schema("Write", "file_path", "content"),
    tool_schema("Grep", "pattern", "path"),
    tool_schema("Glob", "pattern", "path"),
]
OPENCODE_TOOLS = [
    tool_schema("bash", "command", "timeout"),
    tool_schema("read", "filePath"),
    tool_schema("edit", "filePath", "oldString", "newString"),
    tool_schema("write", "filePath", "content"),
]
_EDITOR_PARAMS = ("command", "path", "file_text", "old_str", "new_str", "insert_line")
OPENHANDS_TOOLS = [
    tool_schema("execute_bash", "command", "is_input", "timeout"),
    tool_schema("str_replace_editor", *_EDITOR_PARAMS),
    tool_schema("think", "thought"),
    tool_schema("finish", "message"),
]
OPENHANDS_SDK_TOOLS = [
    tool_schema("terminal", "command", "is_input", "timeout"),
    tool_schema("file_editor", *_EDITOR_PARAMS),
    tool_schema("task_tracker", "command", "task_list"),
    tool_schema("think", "thought"),
    tool_schema("finish", "message"),
]


def call(name: str, **arguments: Any) -> ToolCall:
    """A tool call with a fresh id and JSON-encoded arguments."""
    return {
        "id": f"call_{next(_ids):05d}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def assistant(content: str = "", *calls: ToolCall, reasoning: str = "") -> Message:
    message: Message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def tool(content: str, answering: ToolCall | None = None) -> Message:
    message: Message = {"role": "tool", "content": content}
    if answering is not None:
        message["tool_call_id"] = answering["id"]
        message["name"] = answering["function"]["name"]
    return message


def step(
    calls: Sequence[ToolCall], outputs: Sequence[str] | None = None, text: str = ""
) -> list[Message]:
    """An assistant message and one tool result per call (default "ok")."""
    results = ["ok"] * len(calls) if outputs is None else list(outputs)
    replies = [tool(out, c) for out, c in zip(results, calls, strict=False)]
    return [assistant(text, *calls), *replies]


def bash_step(command: str, output: str = "ok", name: str = "Bash") -> list[Message]:
    return step([call(name, command=command)], [output])


def _flatten(turns: Iterable[Turn]) -> list[Message]:
    messages: list[Message] = []
    for turn in turns:
        messages.extend(turn if isinstance(turn, list) else [turn])
    return messages


def im_record(
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    *,
    instance_id: str = "test-case",
    agent_type: str = "main",
) -> Record:
    """A structurally valid IM record (formats.md §4)."""
    return {
        "version": "2.0.0",
        "meta_info": {
            "teacher": "tests",
            "query_source": "synthesized",
            "response_generate_time": "2026-01-01",
            "response_update_time": "2026-01-01",
            "owner": "tests",
            "language": "en",
            "category": "code",
            "rounds": sum(1 for m in messages if m["role"] == "assistant"),
            "unique_info": {"_instance_id": instance_id, "_agent_type": agent_type},
        },
        "tools": tools,
        "messages": messages,
    }


def _tool_record(
    system: str, tools: list[dict[str, Any]], turns: Iterable[Turn], **kwargs: Any
) -> Record:
    head = [{"role": "system", "content": system}, {"role": "user", "content": TASK}]
    return im_record([*head, *_flatten(turns)], tools, **kwargs)


def claude_code_record(turns: Iterable[Turn], **kwargs: Any) -> Record:
    return _tool_record(CLAUDE_CODE_SYSTEM, CLAUDE_CODE_TOOLS, turns, **kwargs)


def opencode_record(turns: Iterable[Turn], **kwargs: Any) -> Record:
    return _tool_record(OPENCODE_SYSTEM, OPENCODE_TOOLS, turns, **kwargs)


def openhands_record(turns: Iterable[Turn], *, sdk: bool = False, **kwargs: Any) -> Record:
    tools = OPENHANDS_SDK_TOOLS if sdk else OPENHANDS_TOOLS
    return _tool_record(OPENHANDS_SYSTEM, tools, turns, **kwargs)


def terminus_answer(*keystrokes: str, task_complete: Any = False, analysis: str = "") -> str:
    """The JSON text of a Terminus-2 answer running `keystrokes` (one command each)."""
    commands = [{"keystrokes": k, "duration": 0.1} for k in keystrokes]
    answer = {"analysis": analysis, "plan": "", "commands": commands}
    return json.dumps({**answer, "task_complete": task_complete})


def terminus_record(answers: Sequence[str], observations: Sequence[str], **kwargs: Any) -> Record:
    """Assistant answers (verbatim text) interleaved with terminal outputs (user messages).

    With one observation fewer than answers, the record ends on the last answer.
    """
    messages: list[Message] = [
        {"role": "system", "content": ""},
        {"role": "user", "content": "Solve the task. Answer in JSON.\n\n" + TASK},
    ]
    for index, answer in enumerate(answers):
        messages.append({"role": "assistant", "content": answer, "reasoning_content": ""})
        if index < len(observations):
            messages.append({"role": "user", "content": observations[index]})
    return im_record(messages, [], **kwargs)
