"""IM record -> LLaMA-Factory sharegpt example that LLaMA-Factory loads as written (formats §5).

What LLaMA-Factory (checked against 0.9.5: `data/converter.py`, `formatter.py`, `parser.py`)
requires of a sharegpt example, and how the mapping meets it:

- Roles alternate: user/observation at positions 1, 3, 5… (1-based), assistant/function_call
  at 2, 4, 6…, and the count is even — otherwise the example is skipped with only a warning.
  The system prompt goes to the `system` column (a `system` role is only honoured as the
  first message), the tool list to the `tools` column as a JSON string ("" when none).
- user -> `user`; assistant text -> `assistant`; assistant tool calls -> one `function_call`
  turn whose content is the JSON `{"name", "arguments": {...}}`, or a JSON list of them for
  parallel calls (LLaMA-Factory's FunctionFormatter accepts both). Consecutive tool results
  -> one `observation` turn: one result as its text, several as a JSON list of
  `{"name", "content"}` in call order. Terminus-2 records (no tools, observations as user
  messages) come out as plain user/assistant alternation.
- Text beside tool calls: FunctionFormatter `json.loads` the whole content unless it finds the
  chat template's own `tool_call_words` (or `thought_words`) around the JSON — anything else
  raises RuntimeError and stops the training run. Those words differ per template and older
  releases lack them, so by default the text is dropped (reshape `call_text_dropped`);
  pass `tool_call_words` (e.g. `("<tool_call>", "</tool_call>")`, the 0.9.5 default) to
  keep it as `text<tool_call>{json}</tool_call>`.
- `reasoning_content` is not carried (sharegpt has no field for it).

Anything that would still break the rules is repaired deterministically and each repair is
reported by kind (see `RESHAPE_KINDS`); a record is dropped (None) only when no trainable
turn is left.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scorers.im import agent_type
from transforms.sinks.lf_render import render_with_chat_template

__all__ = [
    "FUNCTION",
    "LF_ROLES",
    "OBSERVATION",
    "RESHAPE_KINDS",
    "SHARDED_NOTE",
    "dataset_info",
    "dataset_info_entry",
    "render_with_chat_template",
    "to_lf_example",
]

USER, ASSISTANT, OBSERVATION, FUNCTION = "user", "assistant", "observation", "function_call"
LF_ROLES = (USER, ASSISTANT, OBSERVATION, FUNCTION)
_PROMPT_SIDE = (USER, OBSERVATION)

RESHAPE_KINDS = {
    "system_merged": "several leading system messages joined into the system column",
    "system_to_user": "a system message after the conversation started became a user turn",
    "unknown_role_dropped": "a message with a role outside system/user/assistant/tool dropped",
    "empty_assistant_dropped": "an assistant message with no text and no tool call dropped",
    "arguments_not_json": "tool-call arguments that are not JSON kept as a JSON string",
    "tool_schema_filled": "a tool without parameters.properties given an empty object schema",
    "call_text_dropped": "the text of an assistant turn that also calls tools dropped",
    "prompt_turns_merged": "consecutive user/observation turns merged (joined by a blank line)",
    "response_turns_merged": "consecutive assistant/function_call turns merged into one",
    "leading_response_dropped": "an assistant/function_call turn before any user turn dropped",
    "trailing_user_dropped": "a user turn after the last assistant turn dropped",
    "trailing_observation_dropped": "tool results after the last assistant turn dropped",
    "no_trainable_turn": "nothing trainable left: the record is not written",
}
_COPIED = ("_score", "_instance_id", "_agent_type", "_gen_params", "_usage", "_instance_metadata")
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

SHARDED_NOTE = (
    "LLaMA-Factory's `file_name` is one path (a list raises TypeError in os.path.join); a "
    "directory is also accepted and every file in it is loaded. Sharded output therefore gets "
    "one entry per shard: train with `dataset: <name>_00000,<name>_00001,...`, or register the "
    "shard folder as one entry if it holds nothing but these shards."
)


@dataclass
class _Turn:
    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def prompt_side(self) -> bool:
        return self.role in _PROMPT_SIDE


def to_lf_example(
    record: Mapping[str, Any], tool_call_words: tuple[str, str] | None = None
) -> tuple[dict[str, Any] | None, list[str]]:
    """The sharegpt example of one IM record and the reshapes it needed, in order.

    Returns `(None, kinds)` only when no trainable turn is left; `kinds` then ends with
    `no_trainable_turn`.
    """
    kinds: list[str] = []
    system, rest = _split_system(record.get("messages") or [], kinds)
    turns = _alternate(_to_turns(rest, kinds), kinds)
    if not any(not turn.prompt_side for turn in turns):
        kinds.append("no_trainable_turn")
        return None, kinds
    messages = [_render(turn, tool_call_words, kinds) for turn in turns]
    info = _unique_info(record)
    example: dict[str, Any] = {
        "messages": messages,
        "system": system,
        "tools": _tools_column(record.get("tools"), kinds),
    }
    for key in _COPIED:
        example[key] = info.get(key)
    example["_agent_type"] = agent_type(record)
    return example, kinds


def _unique_info(record: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = record.get("meta_info")
    info = meta.get("unique_info") if isinstance(meta, Mapping) else None
    return info if isinstance(info, Mapping) else {}


def _split_system(
    messages: Sequence[Mapping[str, Any]], kinds: list[str]
) -> tuple[str, list[Mapping[str, Any]]]:
    """Leading system messages -> the system text; later ones become user messages."""
    leading = 0
    while leading < len(messages) and messages[leading].get("role") == "system":
        leading += 1
    if leading > 1:
        kinds.append("system_merged")
    system = "\n\n".join(_text(m.get("content")) for m in messages[:leading])
    rest: list[Mapping[str, Any]] = []
    for message in messages[leading:]:
        if message.get("role") == "system":
            kinds.append("system_to_user")
            message = {"role": "user", "content": message.get("content")}
        rest.append(message)
    return system, rest


def _to_turns(messages: Sequence[Mapping[str, Any]], kinds: list[str]) -> list[_Turn]:
    """One turn per message, consecutive tool results grouped into one observation turn."""
    turns: list[_Turn] = []
    call_names: dict[str, str] = {}
    results: list[dict[str, str]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            results.append(_result(message, call_names))
            continue
        if results:
            turns.append(_Turn(OBSERVATION, [_observation_text(results)]))
            results = []
        if role == "user":
            turns.append(_Turn(USER, [_text(message.get("content"))]))
        elif role == "assistant":
            turn = _assistant_turn(message, call_names, kinds)
            if turn is not None:
                turns.append(turn)
        else:
            kinds.append("unknown_role_dropped")
    if results:
        turns.append(_Turn(OBSERVATION, [_observation_text(results)]))
    return turns


def _assistant_turn(
    message: Mapping[str, Any], call_names: dict[str, str], kinds: list[str]
) -> _Turn | None:
    text = _text(message.get("content"))
    texts = [text] if text.strip() else []
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        name = _text(function.get("name"))
        if call.get("id"):
            call_names[str(call["id"])] = name
        calls.append({"name": name, "arguments": _arguments(function.get("arguments"), kinds)})
    if calls:
        return _Turn(FUNCTION, texts, calls)
    if texts:
        return _Turn(ASSISTANT, texts)
    kinds.append("empty_assistant_dropped")
    return None


def _arguments(raw: Any, kinds: list[str]) -> Any:
    """Arguments as a JSON value (LLaMA-Factory json.dumps them back into the template)."""
    if not isinstance(raw, str):
        return {} if raw is None else raw
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        kinds.append("arguments_not_json")
        return raw


def _result(message: Mapping[str, Any], call_names: Mapping[str, str]) -> dict[str, str]:
    name = message.get("name") or call_names.get(str(message.get("tool_call_id")), "")
    return {"name": _text(name), "content": _text(message.get("content"))}


def _observation_text(results: list[dict[str, str]]) -> str:
    if len(results) == 1:
        return results[0]["content"]
    return json.dumps(results, ensure_ascii=False)


def _alternate(turns: list[_Turn], kinds: list[str]) -> list[_Turn]:
    """Merge same-side neighbours, then trim to start on the prompt and end on a response."""
    merged: list[_Turn] = []
    for turn in turns:
        last = merged[-1] if merged else None
        if last is None or last.prompt_side != turn.prompt_side:
            merged.append(turn)
            continue
        if turn.prompt_side:
            kinds.append("prompt_turns_merged")
        else:
            kinds.append("response_turns_merged")
            if turn.role == FUNCTION:
                last.role = FUNCTION
        last.texts.extend(turn.texts)
        last.calls.extend(turn.calls)
    if merged and not merged[0].prompt_side:
        kinds.append("leading_response_dropped")
        merged.pop(0)
    if merged and merged[-1].prompt_side:
        kinds.append(f"trailing_{merged[-1].role}_dropped")
        merged.pop()
    return merged


def _render(
    turn: _Turn, tool_call_words: tuple[str, str] | None, kinds: list[str]
) -> dict[str, str]:
    text = "\n\n".join(turn.texts)
    if turn.role != FUNCTION:
        return {"role": turn.role, "content": text}
    calls: Any = turn.calls[0] if len(turn.calls) == 1 else turn.calls
    payload = json.dumps(calls, ensure_ascii=False)
    if not text:
        return {"role": FUNCTION, "content": payload}
    if tool_call_words is None:
        kinds.append("call_text_dropped")
        return {"role": FUNCTION, "content": payload}
    opening, closing = tool_call_words
    return {"role": FUNCTION, "content": f"{text}{opening}{payload}{closing}"}


def _tools_column(tools: Any, kinds: list[str]) -> str:
    """The tool list as a JSON string; every tool given the `parameters.properties` that
    LLaMA-Factory's default tool formatter indexes without a guard."""
    if not tools:
        return ""
    fixed = []
    for tool in tools:
        function = tool.get("function") if tool.get("type") == "function" else tool
        if isinstance(function, Mapping):
            parameters = function.get("parameters")
            if not isinstance(parameters, Mapping) or not isinstance(
                parameters.get("properties"), Mapping
            ):
                kinds.append("tool_schema_filled")
                base = parameters if isinstance(parameters, Mapping) else {}
                filled = {**_EMPTY_SCHEMA, **base, "properties": {}}
                function = {**function, "parameters": filled}
                wrapped = tool.get("type") == "function"
                tool = {**tool, "function": function} if wrapped else function
        fixed.append(tool)
    return json.dumps(fixed, ensure_ascii=False)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def dataset_info_entry(file_name: str) -> dict[str, Any]:
    """The `dataset_info.json` entry of one LF file, consistent with the roles written here.

    Every tag is spelled out: LLaMA-Factory reads a `tags` object with `dict.get(tag, None)`,
    so an omitted observation/function tag becomes None rather than its default.
    """
    return {
        "file_name": file_name,
        "formatting": "sharegpt",
        "columns": {"messages": "messages", "system": "system", "tools": "tools"},
        "tags": {
            "role_tag": "role",
            "content_tag": "content",
            "user_tag": USER,
            "assistant_tag": ASSISTANT,
            "observation_tag": OBSERVATION,
            "function_tag": FUNCTION,
            "system_tag": "system",
        },
    }


def dataset_info(file_names: Sequence[str], name: str) -> dict[str, dict[str, Any]]:
    """`dataset_info.json` for one output: `{name: entry}`, or one entry per shard named
    `<name>_00000`, `<name>_00001`, … (see `SHARDED_NOTE`)."""
    if len(file_names) == 1:
        return {name: dataset_info_entry(file_names[0])}
    return {f"{name}_{i:05d}": dataset_info_entry(f) for i, f in enumerate(file_names)}
