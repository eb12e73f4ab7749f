"""Conversation exports written beside IM (`--messages-format`): IM record -> one line of
`messages.jsonl` (TRL) or of `openai.jsonl` (OpenAI chat fine-tuning). Pure Python, no Beam.

Why: IM writes each call's `arguments` in the OpenAI wire form (JSON text), which the Qwen2.5
and Llama 3.1 chat templates encode a second time (`tool_call.arguments | tojson`), and its
lines carry keys (`version`, `meta_info`, null message keys) that OpenAI's fine-tuning format
does not allow.

- `messages.jsonl`: TRL's conversational language-modeling form with tools
  (`{"messages": [...], "tools": [...] | null}`, TRL docs "Dataset formats: Tool calling"):
  `arguments` an object, reasoning as `reasoning_content` (Qwen3's template reads it), tool
  results with `tool_call_id` and the tool's `name`. Llama 3.1's template raises on more than
  one call in a message, so a turn of parallel calls is split into consecutive single-call
  turns, each followed by its own result(s) (the turn's text and reasoning stay on the first);
  counted as `parallel_calls_split`. `tools` is null when the record has none (Llama 3.1
  renders a tool preamble for an empty list); a tool without a description or parameters
  gets "" and an empty parameter list, so every tool has the same keys.
- `openai.jsonl`: OpenAI's `FineTuneChatRequestInput` (openai-openapi): `messages` and, when
  the record has tools, `tools`; message keys only role/content/tool_calls/tool_call_id as
  each role allows; `arguments` stays JSON text; an empty system prompt is left out (system
  and user content must be non-empty); reasoning has no key there and is dropped, counted as
  `reasoning_dropped`.

A record that one format cannot express is left out of that file only, with a reason
(`left_out.<reason>`); IM and LF still get it. Every count is per record or per turn, as a
kind string, summed per job into the manifest's `exports` (`export_section`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from transforms.sinks.split import (
    NO_SPLIT,
    TRAIN,
    VALIDATION,
    SplitSettings,
    slot_name,
    split_files,
)

__all__ = [
    "FORMAT_CHOICES",
    "OPENAI",
    "TRL",
    "export_lines",
    "export_names",
    "export_section",
    "formats_of",
    "openai_line",
    "shard_file",
    "trl_example",
]

TRL, OPENAI = "trl", "openai"
FORMAT_CHOICES = ("none", TRL, OPENAI, "both")
# The file of each format, sharded like IM (`messages-00000-of-00004.jsonl`).
FILE_KINDS = {TRL: "messages", OPENAI: "openai"}
COUNT_PREFIX = "exports."
WRITTEN = "written"
LEFT_OUT = "left_out."
PARALLEL_SPLIT = "parallel_calls_split"
REASONING_DROPPED = "reasoning_dropped"
# OpenAI FunctionObject.name: "a-z, A-Z, 0-9, or contain underscores and dashes, with a
# maximum length of 64".
FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

Record = Mapping[str, Any]
Result = tuple[dict[str, Any] | None, list[str]]


class _LeftOut(Exception):
    """A record the format cannot express; the reason is the exception's text."""


def formats_of(choice: str) -> tuple[str, ...]:
    """`--messages-format` -> the formats written, in file order."""
    return {"none": (), TRL: (TRL,), OPENAI: (OPENAI,), "both": (TRL, OPENAI)}[choice]


def shard_file(fmt: str, slot: int, num_shards: int) -> str:
    """`messages.jsonl` / `openai.jsonl`, `messages-00000-of-00004.jsonl` when sharded, and
    `messages.val.jsonl` ... for a validation slot (`--val-fraction`)."""
    return slot_name(FILE_KINDS[fmt], slot, num_shards, ".jsonl")


def export_names(
    formats: Sequence[str], num_shards: int, split: SplitSettings = NO_SPLIT
) -> list[str]:
    """Every export file a job is owed (per split with `--val-fraction`)."""
    return [
        name
        for fmt in formats
        for part in (TRAIN, VALIDATION)
        for name in split_files(FILE_KINDS[fmt], num_shards, split, part, ".jsonl")
    ]


# --- TRL ------------------------------------------------------------------------------------


def trl_example(record: Record) -> Result:
    """The record as a TRL conversational example, and its kinds (`written`,
    `parallel_calls_split` per split turn, or one `left_out.<reason>`)."""
    try:
        messages, splits = _trl_messages(record.get("messages") or [])
    except _LeftOut as why:
        return None, [LEFT_OUT + str(why)]
    example = {"messages": messages, "tools": _tools(record.get("tools"), fill=True) or None}
    return example, [WRITTEN] + [PARALLEL_SPLIT] * splits


def _trl_messages(source: Sequence[Record]) -> tuple[list[dict[str, Any]], int]:
    names = _call_names(source)
    out: list[dict[str, Any]] = []
    splits = 0
    index = 0
    while index < len(source):
        message = source[index]
        role = message.get("role")
        calls = message.get("tool_calls") or []
        if role == "assistant" and len(calls) > 1:
            end = _tool_run_end(source, index + 1)
            out.extend(_split_turn(message, source[index + 1 : end], names))
            splits += 1
            index = end
            continue
        if role == "assistant":
            out.append(_trl_assistant(message, calls))
        elif role == "tool":
            out.append(_trl_tool(message, names))
        else:
            out.append({"role": role, "content": _text(message)})
        index += 1
    return out, splits


def _split_turn(
    message: Record, results: Sequence[Record], names: Mapping[str, str]
) -> list[dict[str, Any]]:
    """One turn of several calls -> a single-call turn per call, each followed by the
    results that answer it (in their order); results that answer none of them come last."""
    calls = message.get("tool_calls") or []
    ids = {call.get("id") for call in calls}
    out: list[dict[str, Any]] = []
    for position, call in enumerate(calls):
        turn = _trl_assistant(message if position == 0 else {}, [call])
        out.append(turn)
        out.extend(_trl_tool(r, names) for r in results if r.get("tool_call_id") == call.get("id"))
    out.extend(_trl_tool(r, names) for r in results if r.get("tool_call_id") not in ids)
    return out


def _trl_assistant(message: Record, calls: Sequence[Record]) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "assistant", "content": _text(message)}
    if message.get("reasoning_content"):
        turn["reasoning_content"] = message["reasoning_content"]
    if calls:
        turn["tool_calls"] = [_trl_call(call) for call in calls]
    return turn


def _trl_call(call: Record) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "id": call.get("id") or "",
        "type": "function",
        "function": {
            "name": function.get("name") or "",
            "arguments": _object_arguments(function.get("arguments")),
        },
    }


def _object_arguments(arguments: Any) -> dict[str, Any]:
    """The call's JSON-text arguments as an object ("" is a call without arguments)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    try:
        value = orjson.loads(arguments) if isinstance(arguments, str) else None
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise _LeftOut("arguments_not_an_object")
    return value


def _trl_tool(message: Record, names: Mapping[str, str]) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "tool"}
    call_id = message.get("tool_call_id")
    if call_id is not None:
        turn["tool_call_id"] = call_id
    name = message.get("name") or names.get(str(call_id))
    if name:
        turn["name"] = name
    turn["content"] = _text(message)
    return turn


def _call_names(source: Sequence[Record]) -> dict[str, str]:
    """Tool name of every call id (a result that does not name its tool gets its call's)."""
    names: dict[str, str] = {}
    for message in source:
        for call in message.get("tool_calls") or []:
            name = (call.get("function") or {}).get("name")
            if call.get("id") and name:
                names.setdefault(str(call["id"]), name)
    return names


def _tool_run_end(source: Sequence[Record], start: int) -> int:
    end = start
    while end < len(source) and source[end].get("role") == "tool":
        end += 1
    return end


# --- OpenAI ---------------------------------------------------------------------------------


def openai_line(record: Record) -> Result:
    """The record as an OpenAI chat fine-tuning line, and its kinds (`written` and one
    `reasoning_dropped` per assistant reasoning, or one `left_out.<reason>`)."""
    try:
        messages = [m for m in map(_openai_message, record.get("messages") or []) if m]
        _check_conversation(messages)
        tools = _tools(record.get("tools"))
        _check_tools(tools, messages)
    except _LeftOut as why:
        return None, [LEFT_OUT + str(why)]
    line: dict[str, Any] = {"messages": messages}
    if tools:
        line["tools"] = tools
    dropped = sum(
        1
        for m in record.get("messages") or []
        if m.get("role") == "assistant" and m.get("reasoning_content")
    )
    return line, [WRITTEN] + [REASONING_DROPPED] * dropped


def _openai_message(message: Record) -> dict[str, Any] | None:
    """One message with the keys its role allows; None for an empty system prompt."""
    role, content = message.get("role"), _text(message)
    if role == "system":
        return {"role": role, "content": content} if content else None
    if role == "user":
        if not content:
            raise _LeftOut("empty_user_content")
        return {"role": role, "content": content}
    if role == "tool":
        return {"role": role, "tool_call_id": message.get("tool_call_id") or "", "content": content}
    if role != "assistant":
        raise _LeftOut("unknown_role")
    calls = message.get("tool_calls") or []
    if not content and not calls:
        raise _LeftOut("empty_assistant_message")
    turn: dict[str, Any] = {"role": role}
    if content:
        turn["content"] = content
    if calls:
        turn["tool_calls"] = [_openai_call(call) for call in calls]
    return turn


def _openai_call(call: Record) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):  # IM holds JSON text; anything else is made so
        arguments = orjson.dumps(arguments if arguments is not None else {}).decode()
    return {
        "id": call.get("id") or "",
        "type": "function",
        "function": {"name": function.get("name") or "", "arguments": arguments or "{}"},
    }


def _check_conversation(messages: Sequence[Mapping[str, Any]]) -> None:
    """Every call answered by the tool messages right after it (unless its message ends the
    conversation, as in OpenAI's own example), every tool message answering one of them,
    and something for the assistant to learn."""
    pending: set[str] | None = None  # the ids the current run of tool messages may answer
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            if pending is None or message["tool_call_id"] not in pending:
                raise _LeftOut("tool_result_without_call")
            continue
        pending = None
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = {call["id"] for call in message["tool_calls"]}
            if index + 1 < len(messages) and not ids <= _answered(messages, index + 1):
                raise _LeftOut("unanswered_tool_call")
            pending = ids
    if not any(m["role"] == "assistant" for m in messages):
        raise _LeftOut("no_assistant_message")


def _answered(messages: Sequence[Mapping[str, Any]], start: int) -> set[str]:
    answered: set[str] = set()
    for message in messages[start:]:
        if message["role"] != "tool":
            break
        answered.add(message["tool_call_id"])
    return answered


def _check_tools(tools: Sequence[Mapping[str, Any]], messages: Iterable[Mapping[str, Any]]) -> None:
    for tool in tools:
        function = tool["function"]
        if not FUNCTION_NAME.fullmatch(function["name"]):
            raise _LeftOut("tool_name_not_allowed")
        if "parameters" in function and not isinstance(function["parameters"], dict):
            raise _LeftOut("tool_parameters_not_an_object")
    for message in messages:
        for call in message.get("tool_calls") or []:
            if not FUNCTION_NAME.fullmatch(call["function"]["name"]):
                raise _LeftOut("tool_name_not_allowed")


# --- shared ---------------------------------------------------------------------------------


def _text(message: Record) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


# A function without parameters, as OpenAI's FunctionObject describes an omitted `parameters`.
NO_PARAMETERS = {"type": "object", "properties": {}}


def _tools(tools: Any, fill: bool = False) -> list[dict[str, Any]]:
    """IM tool definitions without their null keys (`description`, `parameters`); with
    `fill` they get "" and an empty parameter list instead, so that every tool of a file has
    the same keys (`datasets` would add the missing ones as nulls)."""
    out = []
    for tool in tools or []:
        function = tool.get("function") or {}
        kept = {"name": function.get("name") or ""}
        for key, empty in (("description", ""), ("parameters", NO_PARAMETERS)):
            if function.get(key) is not None:
                kept[key] = function[key]
            elif fill:
                kept[key] = dict(empty) if isinstance(empty, dict) else empty
        out.append({"type": "function", "function": kept})
    return out


_CONVERTERS = {TRL: trl_example, OPENAI: openai_line}


def export_lines(
    records: Iterable[Record], formats: Sequence[str]
) -> tuple[dict[str, list[bytes]], list[str]]:
    """Per format, the JSON lines of the records it can express (in record order), and every
    count as `exports.<format>.<kind>`."""
    lines: dict[str, list[bytes]] = {fmt: [] for fmt in formats}
    counts: list[str] = []
    for record in records:
        for fmt in formats:
            line, kinds = _CONVERTERS[fmt](record)
            if line is not None:
                lines[fmt].append(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))
            counts.extend(f"{COUNT_PREFIX}{fmt}.{kind}" for kind in kinds)
    return lines, counts


def export_section(
    counts: Mapping[str, int],
    formats: Sequence[str],
    num_shards: int,
    split: SplitSettings = NO_SPLIT,
) -> tuple[dict[str, int], dict[str, Any]]:
    """Split a job's summed counts: (the others, the manifest's `exports` section — per
    format its files, lines written, records left out by reason, and its own counts)."""
    others = {k: v for k, v in counts.items() if not k.startswith(COUNT_PREFIX)}
    section: dict[str, Any] = {}
    for fmt in formats:
        prefix = f"{COUNT_PREFIX}{fmt}."
        own = {k[len(prefix) :]: v for k, v in counts.items() if k.startswith(prefix)}
        left_out = {k[len(LEFT_OUT) :]: v for k, v in own.items() if k.startswith(LEFT_OUT)}
        entry: dict[str, Any] = {
            "files": export_names([fmt], num_shards, split),
            WRITTEN: own.get(WRITTEN, 0),
            "left_out": dict(sorted(left_out.items())),
        }
        extra = PARALLEL_SPLIT if fmt == TRL else REASONING_DROPPED
        entry[extra] = own.get(extra, 0)
        section[fmt] = entry
    return others, section
