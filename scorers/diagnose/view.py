"""One record as the detectors see it: TQS V2's `Trajectory` plus message indexes.

The trajectory (turns, actions, observations, error flags, scaffold) is built by TQS V2's own
`build_trajectory`, so the diagnosis and the score agree on what an action, a write, an error
and a verification run are. What TQS V2 does not keep is where each piece sits in
`messages`: detections cite message indexes as evidence, so they are recovered here, by the
same walk `build_trajectory` makes (turn i is the i-th assistant message; an observation is
a `tool` message, or for Terminus-2 the `user` message right after an assistant message).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from scorers.tqs_v2 import scaffold_hint
from scorers.tqs_v2.trajectory import Action, Observation, Trajectory, build_trajectory

_COMPACTION = re.compile(
    r"\s*(?:This session is being continued from a previous conversation"
    r"|Conversation compacted|\[?Context (?:was )?(?:compacted|summari[sz]ed)"
    r"|Summary of the (?:previous|earlier) conversation)",
    re.IGNORECASE,
)


class AgentView:
    """A record, its trajectory and the message index of every turn and observation."""

    __slots__ = (
        "_observation_index",
        "agent_type",
        "bad_argument_calls",
        "compaction_notes",
        "declared_tools",
        "metadata",
        "record",
        "source_format",
        "trajectory",
        "turn_messages",
        "undeclared_calls",
    )

    def __init__(self, record: Mapping[str, Any], scaffold: str | None = None) -> None:
        self.record = record
        info = _unique_info(record)
        metadata = info.get("_instance_metadata")
        self.metadata: Mapping[str, Any] = metadata if isinstance(metadata, dict) else {}
        self.agent_type = "subagent" if info.get("_agent_type") == "subagent" else "main"
        self.trajectory: Trajectory = build_trajectory(record, scaffold or scaffold_hint(record))
        self.source_format = source_format(record, self.trajectory.scaffold)
        self.declared_tools = _declared_tool_names(record.get("tools"))
        self.turn_messages: list[int] = []
        self._observation_index: dict[int, int] = {}
        self.bad_argument_calls: list[int] = []  # messages with arguments that are no object
        self.undeclared_calls: list[tuple[int, str]] = []  # (message, name) not in `tools`
        self.compaction_notes: list[int] = []  # user/system messages opening with such a note
        self._index_messages()

    def _index_messages(self) -> None:
        """One walk over the messages, in `build_trajectory`'s order."""
        messages = self.trajectory.messages
        observations = iter(self.trajectory.observations)
        terminus = self.trajectory.scaffold == "terminus2"
        previous_role = None
        for index, message in enumerate(messages):
            role = message.get("role")
            if role == "assistant":
                self._note_calls(index, message)
                self.turn_messages.append(index)
            elif (role == "tool" and not terminus) or (
                terminus and role == "user" and previous_role == "assistant"
            ):
                observation = next(observations, None)
                if observation is not None:
                    self._observation_index[id(observation)] = index
            elif role in ("user", "system"):
                content = message.get("content")
                if isinstance(content, str) and _COMPACTION.match(content, 0, 200):
                    self.compaction_notes.append(index)
            previous_role = role

    def _note_calls(self, index: int, message: Mapping[str, Any]) -> None:
        calls = message.get("tool_calls")
        if not calls:
            return
        declared = self.declared_tools
        actions = self.trajectory.turns[len(self.turn_messages)].actions
        position = 0
        for call in calls:
            function = call.get("function") if type(call) is dict else None
            if type(function) is not dict:
                continue  # build_trajectory made no action of it either
            action = actions[position] if position < len(actions) else None
            position += 1
            if declared:
                name = function.get("name")
                if name and name not in declared and isinstance(name, str):
                    self.undeclared_calls.append((index, name))
            # build_trajectory parsed the arguments: only an empty result may hide a failure.
            if (action is None or not action.args) and _not_an_object(function.get("arguments")):
                self.bad_argument_calls.append(index)

    def action_message(self, action: Action) -> int:
        """The index of the assistant message that made the call."""
        return self.turn_messages[action.turn]

    def observation_message(self, observation: Observation) -> int | None:
        return self._observation_index.get(id(observation))

    def observation_messages(self) -> list[int]:
        """The message index of every tool result (Terminus-2: terminal screen)."""
        return list(self._observation_index.values())

    @property
    def last_index(self) -> int:
        return len(self.trajectory.messages) - 1

    @property
    def name(self) -> str:
        """The agent's name for evidence ("main", or the subagent's recorded name)."""
        agent = self.metadata.get("agent")
        name = agent.get("name") if isinstance(agent, dict) else None
        if self.agent_type == "main":
            return "main"
        return name if isinstance(name, str) and name else "subagent"


def _not_an_object(raw: Any) -> bool:
    if not isinstance(raw, str) or not raw.strip():
        return False
    try:
        return not isinstance(orjson.loads(raw), dict)
    except orjson.JSONDecodeError:
        return True


def _unique_info(record: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = record.get("meta_info")
    info = meta.get("unique_info") if isinstance(meta, dict) else None
    return info if isinstance(info, dict) else {}


def _declared_tool_names(tools: Any) -> frozenset[str]:
    names = set()
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str) and name:
            names.add(name)
    return frozenset(names)


def source_format(record: Mapping[str, Any], detected_scaffold: str) -> str:
    """The profile key of a record: the scaffold its reader recorded from the agent's identity
    (`_instance_metadata.scaffold`: claudecode, terminus2, openhands, ...), else the scaffold
    TQS V2 detected from its tools (an IM input written elsewhere carries no hint)."""
    metadata = _unique_info(record).get("_instance_metadata")
    hint = metadata.get("scaffold") if isinstance(metadata, dict) else None
    return hint if isinstance(hint, str) and hint else detected_scaffold
