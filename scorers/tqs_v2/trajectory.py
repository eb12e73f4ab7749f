"""A scorer's view of one IM record: assistant turns, actions and aligned observations."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import orjson

from scorers.tqs_v2 import extended_tools as X
from scorers.tqs_v2 import tools as T
from scorers.tqs_v2.errors import is_error_observation
from scorers.tqs_v2.shell import is_formal_test
from scorers.tqs_v2.shell_writes import normalise_path, shell_write_targets


class Observation:
    """One tool result (or one Terminus-2 terminal screen) and whether it is an error."""

    __slots__ = ("is_error", "text")

    def __init__(self, text: str, is_error: bool = False) -> None:
        self.text = text
        self.is_error = is_error


class Action:
    """One tool call (or one Terminus-2 command) of an assistant turn."""

    __slots__ = (
        "args",
        "command",
        "editor_paths",
        "editor_write",
        "first_of_tool",
        "is_execution",
        "is_formal_test",
        "kind",
        "name",
        "observation",
        "shell_paths",
        "targets",
        "turn",
    )

    def __init__(
        self,
        turn: int,
        name: str,
        args: dict[str, Any],
        kind: str,
        command: str = "",
        is_execution: bool = False,
        is_formal_test: bool = False,
        editor_paths: tuple[str, ...] = (),
        shell_paths: tuple[str, ...] = (),
        targets: tuple[str, ...] = (),
        editor_write: bool = False,
    ) -> None:
        self.turn = turn
        self.name = name
        self.args = args
        self.kind = kind
        self.command = command
        self.is_execution = is_execution
        self.is_formal_test = is_formal_test
        self.editor_paths = editor_paths
        self.shell_paths = shell_paths
        self.targets = targets
        self.editor_write = editor_write
        self.observation: Observation | None = None
        # The first call of the same tool in the same message; None when it is this one (not
        # `self`: a reference to itself would make every first call a reference cycle, which
        # only the cycle collector frees).
        self.first_of_tool: Action | None = None

    @property
    def is_write(self) -> bool:
        """An editor write (even one naming no file, like SWE-agent's `edit`) or a shell write."""
        return self.editor_write or bool(self.shell_paths)

    @property
    def succeeded(self) -> bool:
        return self.observation is not None and not self.observation.is_error


class Turn:
    """One assistant message: its text and the actions it took."""

    __slots__ = ("actions", "answer", "has_tool_calls", "index", "reasoning", "text")

    def __init__(self, index: int, text: str, reasoning: str) -> None:
        self.index = index
        self.text = text
        self.reasoning = reasoning
        self.actions: list[Action] = []
        self.answer: dict[str, Any] | None = None  # Terminus-2 parsed JSON answer
        self.has_tool_calls = False


class Trajectory:
    """Everything the rules look at, built once per record."""

    __slots__ = (
        "actions",
        "messages",
        "observations",
        "scaffold",
        "tools",
        "total_tool_calls",
        "turns",
    )

    def __init__(
        self,
        scaffold: str,
        messages: list[dict[str, Any]],
        turns: list[Turn],
        actions: list[Action],
        observations: list[Observation],
        total_tool_calls: int,
    ) -> None:
        self.scaffold = scaffold
        self.messages = messages
        self.turns = turns
        self.actions = actions
        self.observations = observations
        self.total_tool_calls = total_tool_calls
        self.tools = X.PARITY  # which tools the canonicalisation knows (`tqs_tools`)

    @property
    def final_message(self) -> dict[str, Any] | None:
        return self.messages[-1] if self.messages else None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in value]
        return "".join(p for p in parts if isinstance(p, str))
    return "" if value is None else str(value)


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw:
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)


def parse_terminus_answer(content: str) -> dict[str, Any] | None:
    """A Terminus-2 answer is a JSON object; anything else is unparseable.

    `<think>…</think>` blocks are removed first; any other text before the object (a
    sentence, a ```json fence) leaves the answer unparseable, as in the reference.
    """
    if "<think>" in content:
        content = _THINK_BLOCK.sub("", content)
    text = content.strip()
    if not text.startswith("{"):
        return None
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _system_prompt(messages: list[dict[str, Any]]) -> str:
    for message in messages:
        if message.get("role") == "system":
            return _text(message.get("content"))
    return ""


_NO_PATHS: tuple[str, ...] = ()


def _one_path(args: dict[str, Any]) -> tuple[str, ...]:
    path = T.declared_path(args)
    return (normalise_path(path),) if path else _NO_PATHS


@lru_cache(maxsize=4096)
def _shell_write_paths(command: str) -> tuple[str, ...]:
    return tuple(map(normalise_path, shell_write_targets(command))) if command else _NO_PATHS


def _make_action(turn: int, name: str, args: dict[str, Any], terminus: bool = False) -> Action:
    path = _one_path(args)
    editor_write = T.is_editor_write(name, args)
    editor_paths = path if editor_write else _NO_PATHS
    kind = T.action_kind(name, args, by_arguments=not terminus)
    if not T.is_execution_call(name, args):
        return Action(
            turn, name, args, kind, "", False, False, editor_paths, _NO_PATHS, path, editor_write
        )
    command = T.shell_text(args)
    shell_paths = _shell_write_paths(command)
    formal = bool(command) and is_formal_test(command)
    return Action(
        turn,
        name,
        args,
        kind,
        command,
        True,
        formal,
        editor_paths,
        shell_paths,
        shell_paths,
        editor_write,
    )


def build_tool_trajectory(
    messages: list[dict[str, Any]],
    names: dict[str, str],
    scaffold: str,
    extension: X.ExtendedTools | None = None,
) -> Trajectory:
    turns: list[Turn] = []
    actions: list[Action] = []
    observations: list[Observation] = []
    total_calls = 0
    pending: list[Action] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            turn = Turn(
                index=len(turns),
                text=_text(message.get("content")),
                reasoning=_text(message.get("reasoning_content")),
            )
            calls = message.get("tool_calls") or []
            turn.has_tool_calls = bool(calls)
            for call in calls:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    continue
                raw_name = function.get("name")
                raw_name = raw_name if isinstance(raw_name, str) else ""
                if raw_name:
                    total_calls += 1
                name = names.get(raw_name) or raw_name.lower()
                action = _make_action(turn.index, name, _parse_arguments(function.get("arguments")))
                if extension is not None:
                    extension.extend(action)
                turn.actions.append(action)
            _look_up_tools_once(turn.actions)
            # A nameless call is no tool call (§14.15): it still takes its tool message, but
            # it is no action for the kinds (TTE), PED, loops or edits.
            actions.extend(a for a in turn.actions if a.name)
            pending = list(turn.actions)
            turns.append(turn)
        elif role == "tool":
            observation = Observation(text=_text(message.get("content")))
            owner = pending.pop(0) if pending else None
            if owner is not None:
                owner.observation = observation
                observation.is_error = is_error_observation(
                    observation.text, owner.is_execution, owner.is_formal_test
                )
            else:
                observation.is_error = is_error_observation(observation.text, False, False)
            if extension is not None:
                extension.extend_observation(owner, observation, message.get("tool_call_id"))
            observations.append(observation)
        else:
            pending = []
    return Trajectory(scaffold, messages, turns, actions, observations, total_calls)


def _look_up_tools_once(actions: list[Action]) -> None:
    """Within one message the reference looks a tool up once, by its first call: a `view`
    after a `str_replace` of the same editor in one message is a write for TTE/IAC, and PED
    compares the first call's targets. Edits (FEC, DPI, SCP) still use every call's own."""
    first: dict[str, Action] = {}
    for action in actions:
        first_call = first.setdefault(action.name, action)
        action.first_of_tool = None if first_call is action else first_call
        action.kind = first_call.kind


def build_terminus_trajectory(
    messages: list[dict[str, Any]], extension: X.ExtendedTools | None = None
) -> Trajectory:
    turns: list[Turn] = []
    actions: list[Action] = []
    observations: list[Observation] = []
    total_calls = 0
    previous_turn: Turn | None = None
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            content = _text(message.get("content"))
            turn = Turn(
                index=len(turns), text=content, reasoning=_text(message.get("reasoning_content"))
            )
            turn.answer = parse_terminus_answer(content)
            commands = turn.answer.get("commands") if turn.answer else None
            for command in commands if isinstance(commands, list) else []:
                keys = command.get("keystrokes") if isinstance(command, dict) else None
                if not isinstance(keys, str) or not keys.strip():
                    continue  # blank keystrokes (a bare Enter or space) are no command
                total_calls += 1
                action = _make_action(
                    turn.index, _first_token(keys), {"keystrokes": keys}, terminus=True
                )
                if extension is not None:
                    X.extend_shell(action)
                turn.actions.append(action)
            actions.extend(turn.actions)
            turns.append(turn)
            previous_turn = turn
        elif role == "user" and previous_turn is not None:
            observation = Observation(text=_text(message.get("content")))
            formal = any(a.is_formal_test for a in previous_turn.actions)
            observation.is_error = is_error_observation(observation.text, True, formal)
            for action in previous_turn.actions:
                action.observation = observation
            observations.append(observation)
            previous_turn = None
        else:
            previous_turn = None
    _share_message_targets(turns)
    return Trajectory("terminus2", messages, turns, actions, observations, total_calls)


def _first_token(keystrokes: str) -> str:
    """Terminus-2 has no tool names: a command is named by its first word."""
    words = keystrokes.split(None, 1)
    return words[0].rsplit("/", 1)[-1] if words else ""


def _share_message_targets(turns: list[Turn]) -> None:
    """Terminus-2: every command of a message carries the edit targets of the whole message."""
    for turn in turns:
        shared = tuple(p for a in turn.actions for p in a.shell_paths)
        for action in turn.actions:
            action.targets = shared


def build_trajectory(
    record: Mapping[str, Any], scaffold: str | None = None, tools: str = X.PARITY
) -> Trajectory:
    """The record's trajectory; `tools` "extended" also knows newer agents' tools."""
    messages: list[dict[str, Any]] = [
        m for m in record.get("messages") or [] if isinstance(m, dict)
    ]
    names = T.canonical_tool_names(record.get("tools"))
    detected = scaffold or T.detect_scaffold(list(names.values()), _system_prompt(messages))
    extension = X.ExtendedTools(record) if tools == X.EXTENDED else None
    if detected == "terminus2":
        trajectory = build_terminus_trajectory(messages, extension)
    else:
        trajectory = build_tool_trajectory(messages, names, detected, extension)
    trajectory.tools = tools
    return trajectory
