"""Claude Code's stream-json stdout (`agent/claude-code.txt`) as session-shaped events.

`claude --output-format=stream-json` prints `system` (init), `assistant`, `user` and a final
`result` line. Its assistant/user lines carry the same Anthropic `message` as the session
log, so they are mapped onto session events and read by the session reader:
`parent_tool_use_id` (set on a subagent's lines) becomes the sidechain's `agentId`.

The stream does not echo prompts: the main prompt is the caller's `instruction` when given,
and a subagent's prompt is the `prompt` argument of the Task call that spawned it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transforms.readers.confined import TrialFiles
from transforms.readers.source_files import iter_json_objects


def stream_json_events(
    files: TrialFiles, path: Path, warnings: list[str], instruction: Any = None
) -> tuple[list[dict[str, Any]], float | None]:
    """Session-shaped events of a stream-json file, and the run's `total_cost_usd`."""
    local: list[str] = []
    events: list[dict[str, Any]] = []
    prompts: dict[str, str] = {}
    cost: float | None = None
    session_id = version = None
    for _, line in iter_json_objects(files, path, local):
        kind = line.get("type")
        if kind == "system" and line.get("subtype") == "init":
            session_id = line.get("session_id")
            version = line.get("claude_code_version")
        elif kind == "result" and isinstance(line.get("total_cost_usd"), int | float):
            cost = float(line["total_cost_usd"])
        elif kind in ("user", "assistant") and isinstance(line.get("message"), dict):
            parent = line.get("parent_tool_use_id")
            events.append(
                {
                    "type": kind,
                    "message": line["message"],
                    "isSidechain": isinstance(parent, str),
                    "agentId": parent if isinstance(parent, str) else None,
                    "sessionId": line.get("session_id") or session_id,
                    "version": version,
                    "toolUseResult": line.get("tool_use_result"),
                    "uuid": line.get("uuid"),
                }
            )
            prompts.update(_task_prompts(line["message"]))
    warnings.extend(f"{path.name}: {w}" for w in local)
    return _with_prompts(events, prompts, instruction, path.name, warnings), cost


def _task_prompts(message: dict[str, Any]) -> dict[str, str]:
    content = message.get("content")
    found = {}
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            arguments = block.get("input")
            prompt = arguments.get("prompt") if isinstance(arguments, dict) else None
            if isinstance(prompt, str) and isinstance(block.get("id"), str):
                found[block["id"]] = prompt
    return found


def _with_prompts(
    events: list[dict[str, Any]],
    prompts: dict[str, str],
    instruction: Any,
    label: str,
    warnings: list[str],
) -> list[dict[str, Any]]:
    """Each agent's events preceded by its prompt, when the stream did not include one."""
    out: list[dict[str, Any]] = []
    started: set[Any] = set()
    for event in events:
        agent = event["agentId"]
        if agent not in started:
            started.add(agent)
            prompt = prompts.get(agent) if agent else instruction
            if event["type"] != "user" or _is_tool_result(event):
                if isinstance(prompt, str) and prompt:
                    message = {"role": "user", "content": prompt}
                    out.append({**event, "type": "user", "message": message, "uuid": None})
                elif agent is None:
                    warnings.append(f"{label}: no user prompt (stream-json omits it)")
        out.append(event)
    return out


def _is_tool_result(event: dict[str, Any]) -> bool:
    content = event["message"].get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )
