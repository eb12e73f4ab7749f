"""ATIF steps -> OpenAI-shaped messages, the input of `build_im_record` (formats.md §2, §4).

An ATIF agent step holds the model turn *and* its tool results; IM wants an assistant message
followed by one tool message per call. Terminus-2 is different: its model answers are JSON
`{analysis, plan, commands, task_complete}` with no tools, so a step stored as "Analysis/Plan"
text plus `bash_command` / `mark_task_complete` calls is turned back into that JSON answer and
its observations come back as user messages.

`normalise_roles` then makes the sequence a valid IM conversation: one leading system message,
consecutive user (or assistant) turns merged, text after a tool result folded into it, and
nothing after the last assistant message.

A message, reasoning or result content that is neither text, null nor content parts is
refused (`ReaderError` naming the file, the step and the field), not turned into text.

Claude Code trajectories written by Harbor are cleaned on the way (`cleanup`, see
`atif_claude.py`): Harbor's "Executed <Tool> <id>" placeholders and the UI metadata and error
markers it appended to tool results are not the model's or the tool's words.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from transforms.json_text import JSON_OBJECT
from transforms.readers.atif_claude import HarborClaudeCleanup
from transforms.readers.bundle import ReaderError
from transforms.readers.conversation import JOINER, Message, ensure_prompt, normalise_roles
from transforms.readers.im_builder import as_text, scaffold_for_agent
from transforms.readers.source_files import json_type

# (result, its text, the id of the call it answers) -> the text the tool message holds
ResultCleaner = Callable[[Mapping[str, Any], str, str], str]

_ANALYSIS_PLAN = re.compile(
    r"\s*Analysis:\s*(?P<analysis>.*?)(?:\n\s*Plan:\s*(?P<plan>.*))?\Z", re.S
)


def is_terminus(agent_name: Any) -> bool:
    """Terminus-2 (and its summarisation helpers, `terminus-2-summarization-*`)."""
    if not isinstance(agent_name, str) or not agent_name:
        return False
    name = agent_name.strip().lower()
    return scaffold_for_agent(name) == "terminus2" or name.startswith("terminus")


def steps_to_messages(
    steps: Iterable[Any],
    *,
    terminus: bool,
    label: str,
    warnings: list[str],
    prompt: str | None = None,
    cleanup: HarborClaudeCleanup | None = None,
    counts: Counter[str] | None = None,
    subagent: bool = False,
) -> list[Message]:
    """Convert ATIF steps; SFT rules drop copied context and `llm_call_count == 0` steps.

    Every dropped step is counted in a warning. A trajectory with no user step gets one:
    `prompt` (the task instruction, when the caller knows it) or an empty message, warned.
    `cleanup`: a Harbor Claude Code trajectory's placeholders and appended chunks go.
    `counts` / `subagent`: what `normalise_roles` cuts after the last agent turn is counted.
    """
    messages: list[Message] = []
    dropped: Counter[str] = Counter()
    for step in steps:
        if not isinstance(step, JSON_OBJECT):
            dropped["not a JSON object"] += 1
            continue
        if step.get("is_copied_context") is True:
            dropped["copied context (is_copied_context, an SFT rule)"] += 1
            continue
        source = step.get("source")
        if source == "agent":
            if step.get("llm_call_count") == 0:
                dropped["no model call (llm_call_count 0, an SFT rule)"] += 1
                continue
            messages.extend(_agent_step(step, terminus, label, warnings, cleanup))
        elif source == "user":
            content = _text(step.get("message"), label, step, "message")
            messages.append({"role": "user", "content": content})
        elif source == "system":
            messages.extend(_system_step(step, messages, terminus, label))
        else:
            dropped[f"unknown source {source!r}"] += 1
    for reason, count in dropped.items():
        warnings.append(f"{label}: {count} step(s) dropped: {reason}")
    with_prompt = ensure_prompt(messages, prompt, label, warnings)
    return normalise_roles(with_prompt, counts, subagent=subagent)


def _where(label: str, step: Mapping[str, Any]) -> str:
    """The step as messages name it (built only when a message needs it)."""
    return f"{label} step {step.get('step_id')}"


def _text(value: Any, label: str, step: Mapping[str, Any], field: str) -> str:
    """`as_text(value, "<where>: <field>")`, the name built only for content that is not
    already text."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return as_text(value, f"{_where(label, step)}: {field}")


def _wrong(where: str, value: Any, expected: str) -> ReaderError:
    return ReaderError(f"{where} is a JSON {json_type(value)}, expected {expected}")


def _objects(value: Any, where: Callable[[], str], item: str) -> list[Mapping[str, Any]]:
    """A list of JSON objects (null = none); anything else is refused naming `where()`."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong(where(), value, "an array")
    for number, entry in enumerate(value, 1):
        if not isinstance(entry, JSON_OBJECT):
            raise _wrong(f"{where()} {item} {number}", entry, "an object")
    return value


def _results(step: Mapping[str, Any], label: str) -> list[Mapping[str, Any]]:
    observation = step.get("observation")
    if observation is None:
        return []
    if not isinstance(observation, JSON_OBJECT):
        raise _wrong(f"{_where(label, step)}: observation", observation, "an object")
    results = observation.get("results")
    return _objects(results, lambda: f"{_where(label, step)}: observation results", "item")


def _calls(step: Mapping[str, Any], label: str) -> list[Message]:
    """The step's calls. ATIF's `tool_call_id` / `function_name` / `arguments`; an OpenAI-shaped
    call (`id`, `function{name, arguments}`) in a non-conformant file is read too (the reader
    warns about the shape, see `atif_schema`)."""
    calls = _objects(step.get("tool_calls"), lambda: f"{_where(label, step)}: tool_calls", "item")
    out: list[Message] = []
    for number, call in enumerate(calls, 1):
        function = call.get("function")
        function = function if function is not None and isinstance(function, JSON_OBJECT) else {}
        arguments = call.get("arguments", function.get("arguments"))
        if arguments is not None and not isinstance(arguments, str | dict | Mapping):
            where = f"{_where(label, step)}: tool call {number} arguments"
            raise _wrong(where, arguments, "an object")
        name = call.get("function_name") or call.get("name") or function.get("name")
        out.append(
            {
                "id": str(call.get("tool_call_id") or call.get("id") or ""),
                "name": str(name or ""),
                "arguments": arguments,
            }
        )
    return out


def _agent_step(
    step: Mapping[str, Any],
    terminus: bool,
    label: str,
    warnings: list[str],
    cleanup: HarborClaudeCleanup | None = None,
) -> list[Message]:
    message = _text(step.get("message"), label, step, "message")
    reasoning = _text(step.get("reasoning_content"), label, step, "reasoning_content")
    calls = _calls(step, label)
    results = _results(step, label)
    clean: ResultCleaner | None = None
    if cleanup is not None:
        message, reasoning = cleanup.agent_text(message, reasoning, calls)

        def clean(result: Mapping[str, Any], text: str, call_id: str) -> str:
            return cleanup.result_text(text, result, step, call_id)

    if terminus:
        content = terminus_answer(message, calls, label, warnings) if calls else message
        out: list[Message] = [
            {"role": "assistant", "content": content, "reasoning_content": reasoning}
        ]
        texts = (_result_text(r, n, label, step) for n, r in enumerate(results, 1))
        observation = JOINER.join(t for t in texts if t)
        if observation:
            out.append({"role": "user", "content": observation})
        return out
    assistant: Message = {"role": "assistant", "content": message, "reasoning_content": reasoning}
    if not calls:
        # text actions (no function calling): what the environment answered is a user turn
        texts = (_result_text(r, n, label, step) for n, r in enumerate(results, 1))
        observation = JOINER.join(t for t in texts if t)
        return [assistant, {"role": "user", "content": observation}] if observation else [assistant]
    assistant["tool_calls"] = calls
    answers, extra = _split_answers(align_results(calls, results, label, step, clean), calls)
    if extra:
        where = _where(label, step)
        warnings.append(
            f"{where}: {len(extra)} observation result(s) answer no tool call of the step "
            "(or one already answered); kept as text after the tool results"
        )
    return [assistant, *answers, *extra]


def _split_answers(
    answers: list[Message], calls: list[Message]
) -> tuple[list[Message], list[Message]]:
    """(tool messages answering a call once each, the other results as user text), so that
    every tool message answers a call of its step (IM validity, formats.md §4)."""
    open_ids = [call["id"] for call in calls]
    kept: list[Message] = []
    extra: list[Message] = []
    for answer in answers:
        if answer["tool_call_id"] in open_ids:
            open_ids.remove(answer["tool_call_id"])
            kept.append(answer)
        else:
            extra.append({"role": "user", "content": answer["content"]})
    return kept, extra


def _result_text(
    result: Mapping[str, Any], number: int, label: str, step: Mapping[str, Any]
) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    return _text(content, label, step, f"observation result {number} content")


def align_results(
    calls: list[Message],
    results: list[Mapping[str, Any]],
    label: str,
    step: Mapping[str, Any],
    clean: ResultCleaner | None = None,
) -> list[Message]:
    """One tool message per result, in the order of the calls they answer.

    Results name their call by `source_call_id`; results without one answer the calls left
    unanswered, in order; a result matching no call is still kept (after the others).
    `clean` turns a result's text into the tool's own text (Harbor's Claude Code chunks).
    """
    texts = {id(r): _result_text(r, n, label, step) for n, r in enumerate(results, 1)}
    by_id: dict[str, list[Mapping[str, Any]]] = {}
    anonymous: list[Mapping[str, Any]] = []
    for result in results:
        call_id = result.get("source_call_id")
        if call_id:
            by_id.setdefault(str(call_id), []).append(result)
        else:
            anonymous.append(result)
    out: list[Message] = []
    for call in calls:
        matched = by_id.pop(call["id"], None) if call["id"] else None
        if matched is None and anonymous:
            matched = [anonymous.pop(0)]
        for result in matched or []:
            text = texts[id(result)]
            text = clean(result, text, call["id"]) if clean else text
            out.append(_tool_message(text, call["id"], call["name"]))
    leftovers = [r for group in by_id.values() for r in group] + anonymous
    for result in leftovers:
        if texts[id(result)] or result.get("source_call_id"):
            call_id = str(result.get("source_call_id") or "")
            text = clean(result, texts[id(result)], call_id) if clean else texts[id(result)]
            out.append(_tool_message(text, call_id, ""))
    return out


def _tool_message(content: str, call_id: str, name: str) -> Message:
    message: Message = {"role": "tool", "content": content, "tool_call_id": call_id}
    if name:
        message["name"] = name
    return message


def _system_step(
    step: Mapping[str, Any], so_far: list[Message], terminus: bool, label: str
) -> list[Message]:
    """Leading system steps are the system prompt; later ones (notes, compaction markers) are
    dropped, but their observations are kept: as tool results of the last assistant's calls
    when they answer one, otherwise as user messages."""
    out: list[Message] = []
    message = _text(step.get("message"), label, step, "message")
    if all(m["role"] == "system" for m in so_far):
        out.append({"role": "system", "content": message})
    last = next((m for m in reversed(so_far) if m["role"] == "assistant"), None)
    call_names = {c["id"]: c["name"] for c in (last or {}).get("tool_calls") or [] if c["id"]}
    for number, result in enumerate(_results(step, label), 1):
        content = _result_text(result, number, label, step)
        call_id = str(result.get("source_call_id") or "")
        if not terminus and call_id in call_names:
            out.append(_tool_message(content, call_id, call_names[call_id]))
        elif content:
            out.append({"role": "user", "content": content})
    return out


def terminus_answer(message: str, calls: list[Message], label: str, warnings: list[str]) -> str:
    """The Terminus-2 JSON answer a step stored as "Analysis/Plan" text plus tool calls.

    A message that already is the JSON answer is kept as it is.
    """
    if _is_terminus_json(message):
        return message
    match = _ANALYSIS_PLAN.match(message)
    analysis = (match.group("analysis") if match else message).strip()
    plan = ((match.group("plan") if match else "") or "").strip()
    commands: list[dict[str, Any]] = []
    task_complete = False
    for call in calls:
        arguments = _arguments(call["arguments"])
        if call["name"] == "bash_command":
            commands.append(
                {
                    "keystrokes": arguments.get("keystrokes", ""),
                    "duration": arguments.get("duration", 1.0),
                }
            )
        elif call["name"] == "mark_task_complete":
            task_complete = True
        else:
            warnings.append(f"{label}: Terminus-2 tool call {call['name']!r} is not a command")
    answer = {"analysis": analysis, "plan": plan, "commands": commands}
    answer["task_complete"] = task_complete
    return indented_json(answer)


_ENCODE_STRING = json.encoder.encode_basestring  # what `ensure_ascii=False` uses (C when built)
_CONSTANTS = {None: "null", True: "true", False: "false"}


def indented_json(value: Any) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False)`, the same text, without the stdlib's
    pure-Python indenting encoder: JSON as `orjson` loads it (exact str / int / float /
    bool / None / list / dict with str keys) is written here, anything else by `json`."""
    parts: list[str] = []
    if not _append_indented(value, "\n", parts):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(parts)


def _append_indented(value: Any, newline: str, parts: list[str]) -> bool:
    """Append `value`'s text (nested lines start with `newline`); False: not plain JSON."""
    kind = type(value)
    if kind is str:
        parts.append(_ENCODE_STRING(value))
    elif value is None or kind is bool:
        parts.append(_CONSTANTS[value])
    elif kind is int:
        parts.append(int.__repr__(value))
    elif kind is float:
        if value != value or value in (math.inf, -math.inf):
            return False  # NaN / Infinity: as `json` spells them
        parts.append(float.__repr__(value))
    elif kind is list:
        return _append_list(value, newline, parts)
    elif kind is dict:
        return _append_dict(value, newline, parts)
    else:
        return False
    return True


def _append_list(value: list[Any], newline: str, parts: list[str]) -> bool:
    if not value:
        parts.append("[]")
        return True
    inner = newline + "  "
    separator = "[" + inner
    for item in value:
        parts.append(separator)
        if not _append_indented(item, inner, parts):
            return False
        separator = "," + inner
    parts.append(newline + "]")
    return True


def _append_dict(value: dict[Any, Any], newline: str, parts: list[str]) -> bool:
    if not value:
        parts.append("{}")
        return True
    inner = newline + "  "
    separator = "{" + inner
    for key, item in value.items():
        if type(key) is not str:
            return False
        parts.append(separator + _ENCODE_STRING(key) + ": ")
        if not _append_indented(item, inner, parts):
            return False
        separator = "," + inner
    parts.append(newline + "}")
    return True


def _is_terminus_json(message: str) -> bool:
    text = message.strip()
    if not text.startswith("{"):
        return False
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return isinstance(parsed, dict) and "commands" in parsed


def _arguments(arguments: Any) -> Mapping[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return {}
    return arguments if isinstance(arguments, JSON_OBJECT) else {}
