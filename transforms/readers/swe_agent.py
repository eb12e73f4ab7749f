"""SWE-agent `.traj` (format "swe-agent") and mini-swe-agent (format "mini-swe-agent") files.

SWE-agent: `{trajectory[{action, observation, response, thought, query?}], history[{role,
content, tool_calls?, tool_call_ids?, agent, ...}], info{submission, exit_status,
model_stats}}`. `history` is the model's own chat and is read when present: with function
calling its assistant messages carry `tool_calls` and the results are `tool` messages;
without, actions are fenced commands in the assistant text and observations are `user`
messages, and the record has no tools. Without `history`, the last trajectory step's
`query` (the chat sent for it) plus its `response` is the conversation.

mini-swe-agent: `{messages[], info{exit_status, submission, model_stats, config},
trajectory_format}` (older files are the bare `messages` list); bash-only. Version 1 fences
the commands in the assistant text; version 2 (mini-swe-agent `agents/default.py`,
`models/utils/actions_toolcall*.py`) calls a `bash` tool: chat-completions assistant
messages carry `tool_calls` answered by `tool` messages (`tool_call_id`), and with the
Responses API (`LitellmResponseModel`) each model turn is the raw response object
(`object: "response"`, `output[]` items `message` / `reasoning{summary, content}` /
`function_call{call_id, name, arguments}`), answered by `function_call_output{call_id,
output}` items. Its `exit` message (the run's end, which the model never saw) is skipped
(fidelity `exit_messages_skipped`). In a Harbor trial it is
`agent/mini-swe-agent.trajectory.json` (Harbor's installed mini-swe-agent agent;
`records_from_agent_dir`), whose reward comes from the trial.

Reasoning: an assistant message's `reasoning_content` (or `reasoning`, `thinking_blocks`, or
the same on the raw model response mini-swe-agent keeps in `extra.response`) becomes the IM
`reasoning_content`. SWE-agent's `thought` is not reasoning: it is the visible text the
model wrote before its action, already the start of the message content.

Both end with the submission's output, which the model never answered: it is dropped (see
`conversation.py`). A SWE-bench `report.json` beside the file gives the reward:
`resolved` true -> 1.0, false -> 0.0 (also `resolved_ids` / `unresolved_ids` lists); it is
the bundle's reward and `_instance_metadata.rewards` / `reward_source` ("report.json").

Scaffold: both agents drive a shell (SWE-agent also its file viewer/editor commands) and
stop by submitting; of TQS V2's scaffolds, "openhands" fits: its end rule accepts a final
text summary, and its tool rules cover bash plus a file editor. The hint is set in
`_instance_metadata.scaffold` because `build_im_record` maps no SWE-agent name.

Files (the trajectory and its `report.json`) are opened confined to the trajectory's folder
(`confined.py`); content of the wrong JSON type refuses the file, naming the message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from transforms.readers.bundle import Bundle, ReaderError, new_bundle, note_fidelity
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles, utf8_json
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.conversation import Message, has_conversation, normalise_roles
from transforms.readers.im_builder import as_text, build_im_record, openai_reasoning
from transforms.readers.source_files import as_dict, json_type, load_json, require

FORMAT = "swe-agent"
MINI_FORMAT = "mini-swe-agent"
SCAFFOLD = "openhands"
REPORT_FILE = "report.json"
HARBOR_MINI_FILE = "mini-swe-agent.trajectory.json"
_ROLES = frozenset({"system", "user", "assistant", "tool"})


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per SWE-agent `.traj` file."""
    path = Path(path)
    files = TrialFiles.for_input(path, limits)
    data = require(load_json(files, path), dict, "the .traj file")
    info = as_dict(data.get("info"))
    history = data.get("history")
    if isinstance(history, list) and any(_is_message(m) for m in history):
        messages = _history_messages(history)
    elif isinstance(data.get("trajectory"), list) and data["trajectory"]:
        messages = _trajectory_messages(data["trajectory"])
    else:
        raise ReaderError("no `history` messages and no `trajectory` steps")
    model = _replay_model(data.get("replay_config"))
    gen_params: dict[str, Any] = {k: model[k] for k in ("temperature", "top_p") if k in model}
    instance_id = path.name.removesuffix(".traj")
    yield _bundle(
        files,
        path,
        instance_id,
        FORMAT,
        messages,
        info,
        agent={"name": "swe-agent", "version": None, "model": model.get("name")},
        gen_params=gen_params,
    )


def read_mini(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per mini-swe-agent trajectory (`{messages, info}` or a bare message list)."""
    path = Path(path)
    files = TrialFiles.for_input(path, limits)
    mini = _MiniRun(load_json(files, path))
    instance_id = path.name.removesuffix(".json").removesuffix(".traj")
    yield _bundle(
        files,
        path,
        instance_id,
        MINI_FORMAT,
        mini.messages,
        mini.info,
        agent=mini.agent(),
        gen_params=mini.gen_params(),
        fidelity=mini.fidelity,
    )


def records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None:
    """The main record of a Harbor trial's `agent/mini-swe-agent.trajectory.json` (Harbor's
    mini-swe-agent writes it; its ATIF `trajectory.json`, when converted, is read first);
    None when it is absent. The trial gives the reward and agent identity."""
    path = agent_dir / HARBOR_MINI_FILE
    if not ctx.files.is_file(path):
        return None
    mini = _MiniRun(load_json(ctx.files, path))
    found = mini.agent()
    agent = {k: ctx.agent.get(k) or found.get(k) for k in ("name", "version", "model")}
    messages = normalise_roles([{"role": "system", "content": ""}, *mini.messages], mini.fidelity)
    if not has_conversation(messages):
        raise ReaderError(f"{HARBOR_MINI_FILE}: no messages: no user message and model turn")
    metadata = {**ctx.metadata, "scaffold": SCAFFOLD}
    if isinstance(mini.info.get("exit_status"), str) and mini.info["exit_status"]:
        metadata["exit_status"] = mini.info["exit_status"]
    has_calls = any(m.get("tool_calls") for m in messages)
    record = build_im_record(
        messages,
        instance_id=ctx.instance_id,
        tools=None if has_calls else [],
        rebuild_tools=has_calls,
        agent=agent,
        metadata=metadata,
        usage=ctx.usage or _usage(mini.info.get("model_stats")),
        gen_params=mini.gen_params(),
        query_source=MINI_FORMAT,
    )
    note_fidelity([record], mini.fidelity)
    return [record], []


class _MiniRun:
    """A mini-swe-agent trajectory's messages (chat or Responses API shape) and facts."""

    def __init__(self, data: Any) -> None:
        if isinstance(data, list):
            raw, self.info = data, {}
        elif isinstance(data, dict):
            raw = require(data.get("messages"), list, "`messages`")
            self.info = as_dict(data.get("info"))
        else:
            raise ReaderError(f"expected a JSON object or array, got a JSON {json_type(data)}")
        self.raw = raw
        self.fidelity: Counter[str] = Counter()
        self.messages: list[Message] = []
        for number, item in enumerate(raw, 1):
            self.messages.extend(self._read(item, f"message {number}"))
        if not self.messages:
            raise ReaderError("no messages with a `role`")

    def _read(self, item: Any, where: str) -> list[Message]:
        if not isinstance(item, dict):
            return []
        if item.get("role") == "exit":
            self.fidelity["exit_messages_skipped"] += 1
            return []
        if _is_message(item):
            return [_message(item, where)]
        if item.get("object") == "response":
            return [_response_turn(item, where)]
        if item.get("type") == "function_call_output":
            output = item.get("output")
            if output is None:
                output = as_dict(item.get("extra")).get("raw_output")
            content = as_text(output, f"{where}: output")
            return [
                {"role": "tool", "content": content, "tool_call_id": str(item.get("call_id") or "")}
            ]
        return []

    def agent(self) -> dict[str, Any]:
        model = as_dict(as_dict(self.info.get("config")).get("model"))
        return {
            "name": "mini-swe-agent",
            "version": self.info.get("mini_version"),
            "model": model.get("model_name") or _response_model(self.raw),
        }

    def gen_params(self) -> dict[str, Any]:
        model = as_dict(as_dict(self.info.get("config")).get("model"))
        kwargs = as_dict(model.get("model_kwargs"))
        return {k: kwargs[k] for k in ("temperature", "top_p") if k in kwargs}


def _response_turn(response: dict[str, Any], where: str) -> Message:
    """A Responses API model turn: its output text, reasoning and function calls."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in response.get("output") or []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            texts.append(as_text(item.get("content"), f"{where}: output message"))
        elif kind == "reasoning":
            for key in ("summary", "content"):
                parts = item.get(key)
                reasoning.extend(
                    as_text(p.get("text"), f"{where}: reasoning {key}")
                    for p in (parts if isinstance(parts, list) else [])
                    if isinstance(p, dict) and p.get("text")
                )
        elif kind == "function_call":
            call_id = item.get("call_id") or item.get("id") or ""
            calls.append(
                {
                    "id": str(call_id),
                    "name": str(item.get("name") or ""),
                    "arguments": item.get("arguments"),
                }
            )
    message: Message = {
        "role": "assistant",
        "content": "\n".join(t for t in texts if t),
        "reasoning_content": "\n\n".join(t for t in reasoning if t),
    }
    if calls:
        message["tool_calls"] = calls
    return message


def _bundle(
    files: TrialFiles,
    path: Path,
    instance_id: str,
    format: str,
    messages: list[Message],
    info: dict[str, Any],
    *,
    agent: dict[str, Any],
    gen_params: dict[str, Any],
    fidelity: Counter[str] | None = None,
) -> Bundle:
    counts = Counter(fidelity or {})
    messages = normalise_roles([{"role": "system", "content": ""}, *messages], counts)
    if not has_conversation(messages):
        raise ReaderError("no messages: no user message and model turn")
    has_calls = any(m.get("tool_calls") for m in messages)
    metadata: dict[str, Any] = {"source_file": str(path), "scaffold": SCAFFOLD}
    if isinstance(info.get("exit_status"), str):
        metadata["exit_status"] = info["exit_status"]
    usage = _usage(info.get("model_stats"))
    reward = swe_bench_reward(files, path.parent / REPORT_FILE, instance_id)
    metadata["rewards"] = None if reward is None else {"reward": reward}
    metadata["reward_source"] = None if reward is None else REPORT_FILE
    record = build_im_record(
        messages,
        instance_id=instance_id,
        tools=None if has_calls else [],
        rebuild_tools=has_calls,
        agent=agent,
        metadata=metadata,
        usage=usage,
        gen_params=gen_params,
        query_source=format,
    )
    note_fidelity([record], counts)
    return new_bundle(
        instance_id,
        str(path),
        format,
        [record],
        rewards=None if reward is None else {"reward": reward},
        reward_source=None if reward is None else REPORT_FILE,
        metadata=metadata,
        usage=usage,
        warnings=files.take_warnings(),
        read_files=files.read_files,
    )


def swe_bench_reward(files: TrialFiles, report: Path, instance_id: str) -> float | None:
    """1.0 / 0.0 from a SWE-bench report (per-instance `resolved`, or the run's id lists).

    An absent, refused (a warning in `files`) or unreadable report gives None."""
    raw = files.optional_bytes(report)
    if raw is None:
        return None
    try:
        data = orjson.loads(utf8_json(raw, REPORT_FILE))
    except (orjson.JSONDecodeError, ReaderError):
        return None
    if not isinstance(data, dict):
        return None
    entry = as_dict(data.get(instance_id)) or data
    if isinstance(entry.get("resolved"), bool):
        return 1.0 if entry["resolved"] else 0.0
    for key, value in (("resolved_ids", 1.0), ("unresolved_ids", 0.0), ("error_ids", 0.0)):
        ids = data.get(key)
        if isinstance(ids, list) and instance_id in ids:
            return value
    return None


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and value.get("role") in _ROLES


def _message(raw: dict[str, Any], where: str) -> Message:
    content = as_text(raw.get("content"), f"{where}: content")
    message: Message = {"role": raw["role"], "content": content}
    if raw["role"] == "assistant":
        message["reasoning_content"] = openai_reasoning(raw, where)
        raw_calls = raw.get("tool_calls")
        calls = [c for c in raw_calls if isinstance(c, dict)] if isinstance(raw_calls, list) else []
        if calls:
            message["tool_calls"] = [_call(c) for c in calls]
    elif raw["role"] == "tool":
        ids = raw.get("tool_call_ids")
        first = ids[0] if isinstance(ids, list) and ids else raw.get("tool_call_id")
        message["tool_call_id"] = str(first or "")
    return message


def _call(raw: dict[str, Any]) -> dict[str, Any]:
    function = as_dict(raw.get("function"))
    return {
        "id": str(raw.get("id") or ""),
        "name": str(function.get("name") or ""),
        "arguments": function.get("arguments"),
    }


def _history_messages(history: list[Any]) -> list[Message]:
    """The first agent's chat (a SWE-agent history can interleave helper agents)."""
    entries = [(n, m) for n, m in enumerate(history, 1) if _is_message(m)]
    first_agent = entries[0][1].get("agent")
    return [_message(m, f"history {n}") for n, m in entries if m.get("agent") == first_agent]


def _trajectory_messages(steps: list[Any]) -> list[Message]:
    last = as_dict(steps[-1])
    query = last.get("query")
    if not isinstance(query, list) or not any(_is_message(m) for m in query):
        raise ReaderError("no `history`, and the trajectory steps carry no `query` chat")
    response = as_text(last.get("response"), "last trajectory step: response")
    answer: Message = {"role": "assistant", "content": response, "reasoning_content": ""}
    asked = [
        _message(m, f"last trajectory step: query {n}")
        for n, m in enumerate(query, 1)
        if _is_message(m)
    ]
    return [*asked, answer]


def _replay_model(replay_config: Any) -> dict[str, Any]:
    if isinstance(replay_config, str):
        try:
            replay_config = orjson.loads(replay_config)
        except orjson.JSONDecodeError:
            return {}
    agent = replay_config.get("agent") if isinstance(replay_config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    return as_dict(model)


def _response_model(raw: list[Any]) -> str | None:
    for message in raw:
        extra = message.get("extra") if isinstance(message, dict) else None
        response = extra.get("response") if isinstance(extra, dict) else None
        model = response.get("model") if isinstance(response, dict) else None
        if isinstance(model, str) and model:
            return model
    return None


def _usage(stats: Any) -> dict[str, Any]:
    if not isinstance(stats, dict):
        return {}
    names = {
        "tokens_sent": "total_prompt_tokens",
        "tokens_received": "total_completion_tokens",
        "instance_cost": "total_cost_usd",
        "api_calls": "api_calls",
    }
    return {new: stats[old] for old, new in names.items() if old in stats}
