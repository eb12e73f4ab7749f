"""Claude Code subagents that Harbor flattened into the main `steps` (formats.md §2 (c)).

Harbor's Claude Code converter reads the session file and its sidechain transcripts (the
2.0 layout's `agent-<id>.jsonl` beside the session, the 2.1 layout's `subagents/`) into one
event list, sorts it by timestamp (older versions: every sidechain event first, then the
main chain), and marks each step `extra.is_sidechain`. It names the sidechains only in
`agent.extra.agent_ids`; a step carries `extra.agent_id` only when the event had that
(snake_case) key, which Claude Code does not write. So sidechains are told apart:

- by the step's agent id (`extra.agent_id` / `agentId` / `sidechain_id`) when it has one;
- else by prompts: a sidechain user step opens a new sidechain when none is open, when its
  text is Claude Code's warmup prompt ("Warmup") or the `prompt` of a `Task` / `Agent` call
  of the main chain, or when the open sidechain has answered (its last step is an agent
  step without tool calls); any other user step (text Claude Code added mid-run) stays in
  the open sidechain. Agent steps join the open sidechain.

A warmup (Claude Code 2.0 opens one per subagent type to fill the prompt cache: "Warmup",
then an "I'm ready to help"-style answer) is a sidechain whose prompt is "Warmup", that ran
no tool and that no call spawned: not subagent work, left out and counted. Subagents started
together interleave their steps; without agent ids those steps cannot be told apart, so a
sidechain left with a prompt and no answer is skipped and said.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from transforms.json_text import JSON_OBJECT

WARMUP_PROMPT = "Warmup"
SPAWNING_TOOLS = frozenset({"Task", "Agent"})
_ID_KEYS = ("agent_id", "agentId", "sidechain_id")

Step = Mapping[str, Any]


@dataclass
class Sidechain:
    """One flattened subagent: its key (agent id, else `sidechain-<n>`) and its steps."""

    key: str
    steps: list[Step] = field(default_factory=list)
    has_id: bool = False

    @property
    def prompt(self) -> str | None:
        first = self.steps[0] if self.steps else None
        if first is not None and first.get("source") == "user":
            message = first.get("message")
            return message if isinstance(message, str) else None
        return None

    def ran_tools(self) -> bool:
        return any(step.get("tool_calls") for step in self.steps)

    def answered(self) -> bool:
        return any(step.get("source") == "agent" for step in self.steps)


def is_sidechain_step(step: Any) -> bool:
    extra = step.get("extra") if isinstance(step, JSON_OBJECT) else None
    if extra is None or not isinstance(extra, JSON_OBJECT):
        return False
    return extra.get("is_sidechain") is True


def spawn_prompts(steps: Iterable[Any]) -> dict[str, str]:
    """`prompt` argument -> call id, for the `Task` / `Agent` calls of these steps."""
    prompts: dict[str, str] = {}
    for step in steps:
        calls = step.get("tool_calls") if isinstance(step, JSON_OBJECT) else None
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, JSON_OBJECT) or call.get("function_name") not in SPAWNING_TOOLS:
                continue
            arguments = call.get("arguments")
            prompt = arguments.get("prompt") if isinstance(arguments, JSON_OBJECT) else None
            if isinstance(prompt, str) and prompt:
                prompts.setdefault(prompt, str(call.get("tool_call_id") or ""))
    return prompts


def split_sidechains(
    steps: list[Any], prompts: Mapping[str, str]
) -> tuple[list[Step], list[Sidechain]]:
    """(main steps, sidechains in order of their first step); see the module docstring."""
    main: list[Step] = []
    by_id: dict[str, Sidechain] = {}
    sidechains: list[Sidechain] = []
    current: Sidechain | None = None
    for step in steps:
        if not is_sidechain_step(step):
            main.append(step)
            continue
        agent_id = _agent_id(step)
        if agent_id is not None:
            if agent_id not in by_id:
                by_id[agent_id] = Sidechain(agent_id, has_id=True)
                sidechains.append(by_id[agent_id])
            by_id[agent_id].steps.append(step)
            continue
        if current is None or _opens_sidechain(step, current, prompts):
            current = Sidechain(f"sidechain-{len(sidechains) + 1}")
            sidechains.append(current)
        current.steps.append(step)
    return main, sidechains


def is_warmup(sidechain: Sidechain, prompts: Mapping[str, str]) -> bool:
    prompt = sidechain.prompt
    return (
        prompt is not None
        and prompt.strip() == WARMUP_PROMPT
        and prompt not in prompts
        and not sidechain.ran_tools()
    )


def _agent_id(step: Step) -> str | None:
    extra = step.get("extra")
    for key in _ID_KEYS:
        value = extra.get(key) if isinstance(extra, Mapping) else None
        if isinstance(value, str | int) and str(value):
            return str(value)
    return None


def _opens_sidechain(step: Step, current: Sidechain, prompts: Mapping[str, str]) -> bool:
    if step.get("source") != "user":
        return False
    message = step.get("message")
    if isinstance(message, str) and (message.strip() == WARMUP_PROMPT or message in prompts):
        return True
    last = current.steps[-1]
    return last.get("source") == "agent" and not last.get("tool_calls")
