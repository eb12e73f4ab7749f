"""ATIF trajectories for claude-code and openhands runs (formats.md §2).

claude-code: no system prompt, tools Read/Edit/Bash/Grep/Write/Task/TodoWrite, a Task
subagent flattened into the main steps with `extra.is_sidechain: true` and listed in
`agent.extra.agent_ids`. openhands: a system prompt, `tool_definitions`, one tool call per
step (execute_bash, str_replace_editor, think) and `finish` at the end; a turn's reasoning
is a `think` call or, as a reasoning model's log has it, the step's `reasoning_content`.
"""

from __future__ import annotations

import random
from typing import Any

from pipelines.synth.common import (
    AgentRun,
    Clock,
    Meter,
    Model,
    alnum,
    final_metrics,
    new_uuid,
    numbered,
)
from pipelines.synth.scenario import Action, Episode, Turn

__all__ = ["claude_call", "claude_code_atif", "openhands_atif"]

Step = dict[str, Any]
CWD = "/app"


def claude_call(action: Action) -> tuple[str, dict[str, Any], str, bool]:
    """(tool name, arguments, result text, is_error) of one action as Claude Code runs it."""
    path = f"{CWD}/{action.path}"
    if action.kind == "read":
        return "Read", {"file_path": path}, numbered(action.output), False
    if action.kind == "grep":
        hits = "\n".join(f"{CWD}/{line}" for line in action.output.splitlines())
        args = {"pattern": action.pattern, "path": CWD, "output_mode": "content", "-n": True}
        return "Grep", args, hits or "No matches found", False
    if action.kind == "edit":
        args = {
            "file_path": path,
            "old_string": action.old,
            "new_string": action.new,
            "replace_all": False,
        }
        if action.error:
            return "Edit", args, f"<tool_use_error>{action.output}</tool_use_error>", True
        return "Edit", args, f"The file {path} has been updated successfully.", False
    if action.kind == "write":
        args = {"file_path": path, "content": action.content}
        return "Write", args, f"File created successfully at: {path}", False
    if action.kind == "todo":
        todos = [{"content": c, "status": s, "activeForm": c} for c, s in action.todos]
        return "TodoWrite", {"todos": todos}, "Todo list updated; keep it current.", False
    if action.kind == "delegate":
        args = {
            "description": "Map the relevant code",
            "prompt": action.pattern,
            "subagent_type": "Explore",
        }
        return "Task", args, action.output, False
    description = (
        "List project files"
        if action.kind == "list"
        else "Show the change"
        if action.command.startswith("git ")
        else "Run the tests"
    )
    text = action.output
    if action.exit_code:
        text = f"Exit code {action.exit_code}\n{text}"
    return (
        "Bash",
        {"command": action.command, "description": description},
        text,
        bool(action.exit_code),
    )


class _ClaudeSteps:
    def __init__(self, model: Model, clock: Clock, rng: random.Random, v17: bool) -> None:
        self.model, self.clock, self.rng, self.v17 = model, clock, rng, v17
        self.steps: list[Step] = []

    def user(self, text: str, sidechain: bool) -> None:
        self.steps.append(
            {
                "step_id": len(self.steps) + 1,
                "timestamp": self.clock.stamp(0.2, 1),
                "source": "user",
                "message": text,
                "extra": {"is_sidechain": sidechain},
            }
        )

    def agent(self, turn: Turn | None, final: str, meter: Meter, sidechain: bool) -> None:
        step: Step = {
            "step_id": len(self.steps) + 1,
            "timestamp": self.clock.stamp(),
            "source": "agent",
            "model_name": self.model.name,
        }
        if turn is None:
            step["message"] = final
            step["metrics"] = _claude_metrics(meter.step(final, ""))
            stop = "end_turn"
        else:
            step["message"] = turn.text if self.rng.random() < 0.6 else ""
            if turn.reasoning:
                step["reasoning_content"] = turn.reasoning
            calls, results, written, read = [], [], turn.text + turn.reasoning, ""
            for action in turn.actions:
                name, args, content, _ = claude_call(action)
                call_id = "toolu_01" + alnum(self.rng, 22)
                calls.append(
                    {
                        "tool_call_id": call_id,
                        "function_name": name,
                        "arguments": args,
                        "extra": {"raw_arguments": args, "tool_use_name": name},
                    }
                )
                results.append({"source_call_id": call_id, "content": content})
                written += str(args)
                read += content
            step["tool_calls"] = calls
            step["observation"] = {"results": results}
            step["metrics"] = _claude_metrics(meter.step(written, read))
            stop = "tool_use"
        if self.v17:
            step["llm_call_count"] = 1
        step["extra"] = {"stop_reason": stop, "cwd": CWD, "is_sidechain": sidechain}
        self.steps.append(step)


def _claude_metrics(usage: dict[str, int | float]) -> dict[str, Any]:
    cached = usage["cached_tokens"]
    return {
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "cached_tokens": cached,
        "extra": {
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": int(usage["prompt_tokens"]) - int(cached),
        },
    }


def claude_code_atif(
    ep: Episode, model: Model, version: str, schema: str, clock: Clock, rng: random.Random
) -> AgentRun:
    meter = Meter(model, rng, context=rng.randint(14_000, 22_000), cache_share=0.92)
    out = _ClaudeSteps(model, clock, rng, schema == "ATIF-v1.7")
    out.user(ep.instruction, sidechain=False)
    for turn in ep.turns:
        out.agent(turn, "", meter, sidechain=False)
        if ep.subagent and any(a.kind == "delegate" for a in turn.actions):
            sub = Meter(model, rng, context=rng.randint(9_000, 12_000), cache_share=0.9)
            out.user(ep.subagent.prompt, sidechain=True)
            for sub_turn in ep.subagent.turns:
                out.agent(sub_turn, "", sub, sidechain=True)
            out.agent(None, ep.subagent.report, sub, sidechain=True)
            meter.absorb(sub)
    if ep.final is not None:
        out.agent(None, ep.final, meter, sidechain=False)
    agent: dict[str, Any] = {
        "name": "claude-code",
        "version": version,
        "model_name": model.name,
        "extra": {"cwds": [CWD]},
    }
    if ep.subagent:
        agent["extra"]["agent_ids"] = [ep.subagent.agent_id]
    doc = {
        "schema_version": schema,
        "session_id": new_uuid(rng),
        "agent": agent,
        "steps": out.steps,
        "final_metrics": final_metrics(meter, len(out.steps)),
    }
    return meter.run([("trajectory.json", doc)], "atif", clock.now)


# --- openhands ---------------------------------------------------------------------------
_OH_SYSTEM = (
    "You are a coding agent working in a sandboxed Linux machine. Use the tools to inspect "
    "and change files and to run commands. Keep changes small, check them, and call `finish` "
    "once the task is done."
)


def _tool(name: str, description: str, props: dict[str, Any], required: list[str]) -> Any:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


_RISK = {"type": "string", "enum": ["LOW", "MEDIUM", "HIGH"]}
OPENHANDS_TOOLS = [
    _tool(
        "execute_bash",
        "Run one bash command in the sandbox and return its output.",
        {
            "command": {"type": "string"},
            "is_input": {"type": "string", "enum": ["true", "false"]},
            "timeout": {"type": "number"},
            "security_risk": _RISK,
        },
        ["command", "security_risk"],
    ),
    _tool(
        "str_replace_editor",
        "View, create and edit files. `str_replace` needs an exact match.",
        {
            "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
            "path": {"type": "string"},
            "file_text": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "security_risk": _RISK,
        },
        ["command", "path", "security_risk"],
    ),
    _tool(
        "think",
        "Write down a thought; it changes nothing.",
        {"thought": {"type": "string"}},
        ["thought"],
    ),
    _tool(
        "finish",
        "End the task with a summary for the user.",
        {"message": {"type": "string"}},
        ["message"],
    ),
]


def _openhands_call(action: Action) -> tuple[str, dict[str, Any], str]:
    path = f"{CWD}/{action.path}"
    if action.kind == "read":
        body = numbered(action.output)
        return (
            "str_replace_editor",
            {"command": "view", "path": path},
            f"Contents of {path}:\n{body}",
        )
    if action.kind == "edit":
        args = {
            "command": "str_replace",
            "path": path,
            "old_str": action.old,
            "new_str": action.new,
        }
        if action.error:
            return (
                "str_replace_editor",
                args,
                (f"ERROR:\nNo replacement was performed: old_str was not found in {path}."),
            )
        return "str_replace_editor", args, f"The file {path} has been edited."
    if action.kind == "write":
        args = {"command": "create", "path": path, "file_text": action.content}
        return "str_replace_editor", args, f"File created successfully at: {path}"
    if action.kind == "todo":
        plan = "; ".join(c for c, _ in action.todos)
        return "think", {"thought": f"Plan: {plan}"}, "Your thought has been logged."
    command = action.command
    if action.kind == "grep":
        command = f"grep -rn '{action.pattern}' ."
    text = f"{action.output}\n[The command completed with exit code {action.exit_code}.]"
    return "execute_bash", {"command": command, "is_input": "false"}, text


def openhands_atif(
    ep: Episode, model: Model, version: str, schema: str, clock: Clock, rng: random.Random
) -> AgentRun:
    meter = Meter(model, rng, context=rng.randint(6_000, 9_000), cache_share=0.5)
    steps: list[Step] = [
        {"step_id": 1, "timestamp": clock.stamp(0, 1), "source": "system", "message": _OH_SYSTEM},
        {"step_id": 2, "timestamp": clock.stamp(0, 1), "source": "user", "message": ep.instruction},
    ]

    def agent_step(
        message: str, name: str, args: dict[str, Any], content: str | None, reasoning: str = ""
    ) -> None:
        args = (
            {**args, "security_risk": "LOW"}
            if name in ("execute_bash", "str_replace_editor")
            else args
        )
        call_id = f"call_{alnum(rng, 24)}"
        step: Step = {
            "step_id": len(steps) + 1,
            "timestamp": clock.stamp(),
            "source": "agent",
            "model_name": model.name,
            "message": message,
            "tool_calls": [{"tool_call_id": call_id, "function_name": name, "arguments": args}],
        }
        if reasoning:
            step["reasoning_content"] = reasoning
        if content is not None:
            step["observation"] = {"results": [{"source_call_id": call_id, "content": content}]}
        step["metrics"] = meter.step(message + str(args), content or "")
        steps.append(step)

    for turn in ep.turns:
        # a reasoning model's thought: either the `think` tool, or the step's reasoning_content
        hidden = turn.reasoning
        if turn.reasoning and rng.random() < 0.6:
            agent_step("", "think", {"thought": turn.reasoning}, "Your thought has been logged.")
            hidden = ""
        for i, action in enumerate(turn.actions):
            name, args, content = _openhands_call(action)
            agent_step(turn.text if i == 0 else "", name, args, content, hidden if i == 0 else "")
    if ep.final is not None:
        if rng.random() < 0.8:
            agent_step(ep.final, "finish", {"message": ep.final}, None)
        else:
            steps.append(
                {
                    "step_id": len(steps) + 1,
                    "timestamp": clock.stamp(),
                    "source": "agent",
                    "model_name": model.name,
                    "message": ep.final,
                    "metrics": meter.step(ep.final, ""),
                }
            )
    agent = {
        "name": "openhands",
        "version": version,
        "model_name": model.name,
        "tool_definitions": OPENHANDS_TOOLS,
    }
    doc = {
        "schema_version": schema,
        "session_id": new_uuid(rng),
        "agent": agent,
        "steps": steps,
        "final_metrics": final_metrics(meter, len(steps)),
    }
    return meter.run([("trajectory.json", doc)], "atif", clock.now)
