"""IM record -> LLaMA-Factory sharegpt example that LLaMA-Factory loads as written (formats §5).

What LLaMA-Factory (checked against the 0.9.4 and 0.9.5 sources: `data/converter.py`,
`formatter.py`, `template.py`, `tool_utils.py`) requires of a sharegpt example, and how the
mapping meets it:

- Roles alternate: user/observation at positions 1, 3, 5… (1-based), assistant/function_call
  at 2, 4, 6…, and the count is even — otherwise the example is skipped with only a warning.
  The system prompt goes to the `system` column (a `system` role is only honoured as the
  first message), the tool list to the `tools` column as a JSON string ("" when none).
- user -> `user`; assistant text -> `assistant`; assistant tool calls -> one `function_call`
  turn whose calls are the JSON `{"name", "arguments": {...}}`, or a JSON list of them for
  parallel calls (FunctionFormatter accepts both and renders one call block per call).
  Terminus-2 records (no tools, observations as user messages) come out as plain
  user/assistant alternation.
- Text beside tool calls (`LfSettings.call_text`, kept by default): FunctionFormatter looks for
  the first `tool_call_words[0] … tool_call_words[1]` span, parses the JSON inside it, and
  renders everything outside that span, then the formatted calls. So the turn is written
  `text\n<tool_call>{json}</tool_call>`; if the text itself holds the markers, the calls go
  first (the rendering is the same). 0.9.2 and 0.9.3 parse the content as JSON once a
  `<think>…</think>` span is cut out: for them `call_text="drop"` writes the (thought and)
  bare JSON and counts `call_text_dropped`.
- Reasoning (`LfSettings.reasoning`, kept by default): IM `reasoning_content` goes in front of
  the turn's text inside the template's `thought_words` (`<think>\n` … `\n</think>\n\n` by
  default), on assistant and function_call turns alike — FunctionFormatter keeps it as part
  of the text outside the tool-call span.
- Tool results: consecutive results -> one `observation` turn holding the raw results in the
  order of the calls they answer, joined by `RESULT_SEPARATOR`, as LLaMA-Factory's own
  OpenAI-format converter joins them; the qwen-style observation slot
  (`<tool_response>\n{{content}}\n</tool_response>`) then shows one block per call. A call
  without a result gets an empty block, so the counts always match.
- Templates that cannot render parallel calls (glm4's tool formatter raises on them and
  aborts the dataset): `parallel_calls="split"` writes a turn of several calls as one call per
  turn, each followed by its own result (the text and reasoning go with the first call);
  `parallel_calls="drop"` leaves such records out. Both are counted.
- Templates whose function formatter gets no markers (LLaMA-Factory's `Llama2Template`:
  mistral, gemma, llama2 …) parse the whole function_call content as JSON: `bare_calls`
  writes the calls' JSON alone, dropping the text (`call_text="drop"`) and reasoning beside
  them, counted.
- Multimodal templates count `<image>`, `<video>` and `<audio>` in the text as media inputs
  and abort on a mismatch: `media_placeholders` leaves a record holding them out, counted.
- `--lf-template NAME` chooses these settings for a named template (`lf_templates.py`).

Anything that would still break the rules is repaired deterministically and each repair is
reported by kind (see `RESHAPE_KINDS`); a record is dropped (None) only for a kind in
`RECORD_DROP_KINDS`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from scorers.im import agent_type
from transforms.json_text import json_value, python_json
from transforms.sinks.lf_render import RENDER_KINDS, RENDERED_NOTE, render_with_chat_template
from transforms.sinks.schema import lf_metadata

__all__ = [
    "DEFAULT_LF",
    "FUNCTION",
    "KEEP_DROP",
    "LF_ROLES",
    "MEDIA_PLACEHOLDERS",
    "OBSERVATION",
    "PARALLEL_CALLS",
    "RECORD_DROP_KINDS",
    "RESHAPE_KINDS",
    "RESULT_SEPARATOR",
    "SHARDED_NOTE",
    "THOUGHT_WORDS",
    "TOOL_CALL_WORDS",
    "LfSettings",
    "dataset_info",
    "dataset_info_entry",
    "render_with_chat_template",
    "rendered_dataset_info_entry",
    "to_lf_example",
]

USER, ASSISTANT, OBSERVATION, FUNCTION = "user", "assistant", "observation", "function_call"
LF_ROLES = (USER, ASSISTANT, OBSERVATION, FUNCTION)
_PROMPT_SIDE = (USER, OBSERVATION)

KEEP_DROP = ("keep", "drop")
# LLaMA-Factory's defaults for templates that do not set their own (register_template).
TOOL_CALL_WORDS = ("<tool_call>", "</tool_call>")
THOUGHT_WORDS = ("<think>\n", "\n</think>\n\n")
# 0.9.2 and 0.9.3 cut a greedy `<think>(.*)</think>` span out of a function_call turn.
_LEGACY_THOUGHT_WORDS = ("<think>", "</think>")
# How LLaMA-Factory's OpenAI-format converter joins the results of parallel calls.
RESULT_SEPARATOR = "\n</tool_response>\n<tool_response>\n"

RESHAPE_KINDS = {
    "system_merged": "several leading system messages joined into the system column",
    "system_to_user": "a system message after the conversation started became a user turn",
    "unknown_role_dropped": "a message with a role outside system/user/assistant/tool dropped",
    "empty_assistant_dropped": "an assistant message with no text and no tool call dropped",
    "arguments_not_json": "tool-call arguments that are not JSON kept as a JSON string",
    "tool_schema_filled": "a tool without parameters.properties given an empty object schema",
    "call_text_dropped": "the text of an assistant turn that also calls tools dropped "
    "(--lf-call-text drop, or a --lf-template that reads the calls' JSON alone: mistral, "
    "gemma, llama2 …)",
    "call_reasoning_dropped": "the reasoning of a turn that calls tools dropped: the "
    "--lf-template reads the calls' JSON alone (mistral, gemma, llama2 …)",
    "call_text_marker_clash": "the text and reasoning beside tool calls dropped: they hold the "
    "template's markers in a way LLaMA-Factory would misread as the calls",
    "reasoning_dropped": "the reasoning of an assistant turn dropped (--lf-reasoning drop)",
    "result_matched_by_position": "a tool result whose id answers no pending call given to "
    "the first call left without a result",
    "unmatched_result_kept": "a tool result beyond the calls it could answer kept as an extra "
    "block",
    "missing_result_filled": "a call without a tool result given an empty result block",
    "prompt_turns_merged": "consecutive user/observation turns merged (joined by a blank line)",
    "response_turns_merged": "consecutive assistant/function_call turns merged into one",
    "leading_response_dropped": "an assistant/function_call turn before any user turn dropped",
    "trailing_user_dropped": "a user turn after the last assistant turn dropped",
    "trailing_observation_dropped": "tool results after the last assistant turn dropped",
    "no_trainable_turn": "nothing trainable left: the record is not written",
    "parallel_calls_dropped": "a record with a turn of several calls not written "
    "(--lf-parallel-calls drop, for templates such as glm4)",
    "parallel_calls_split": "a turn of several calls written as one call per turn, each "
    "followed by its own result (--lf-parallel-calls split, as --lf-template glm4 sets)",
    "media_placeholder_dropped": "a record whose text holds <image>, <video> or <audio> not "
    "written: the --lf-template's multimodal plugin would count them as media and abort",
    **RENDER_KINDS,  # --chat-template-tokenizer
}
RECORD_DROP_KINDS = (
    "no_trainable_turn",
    "parallel_calls_dropped",
    "media_placeholder_dropped",
    "chat_template_not_prefix",
)
PARALLEL_CALLS = ("keep", "split", "drop")
# What LLaMA-Factory's multimodal plugins count as media inputs in a message's content.
MEDIA_PLACEHOLDERS = ("<image>", "<video>", "<audio>")
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
# `_tools_column`'s columns by `_tools_key` -> (column, tools given a schema); emptied when full
_TOOLS_COLUMNS: dict[bytes, tuple[str, int]] = {}
_TOOLS_CACHE_SIZE = 64
# orjson raises on what it would otherwise write as plain JSON (datetimes, dataclasses, and
# subclasses of str, int, dict and list), so a key is only made of JSON values
_PLAIN_JSON = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)

SHARDED_NOTE = (
    "LLaMA-Factory's `file_name` is one path (a list raises TypeError in os.path.join); a "
    "directory is also accepted and every file in it is loaded. Sharded output therefore gets "
    "one entry per shard: train with `dataset: <name>_00000,<name>_00001,...`, or register the "
    "shard folder as one entry if it holds nothing but these shards."
)


@dataclass(frozen=True)
class LfSettings:
    """How IM records become LLaMA-Factory examples: one object handed down to the writer
    (the Beam sink and the plain loop alike).

    The marker pairs must be the ones of the template trained with (LLaMA-Factory's
    `tool_call_words` / `thought_words`); the defaults are its defaults. `bare_calls` and
    `media_placeholders` say what a template cannot take (the module docstring); they are
    set by `--lf-template` (`lf_templates.py`), not by flags of their own.
    """

    call_text: str = "keep"
    tool_call_words: tuple[str, str] = TOOL_CALL_WORDS
    reasoning: str = "keep"
    thought_words: tuple[str, str] = THOUGHT_WORDS
    parallel_calls: str = "keep"
    bare_calls: bool = False
    media_placeholders: bool = False
    # Render whole records as text with this local tokenizer's chat template instead.
    chat_template_tokenizer: str | None = None

    def __post_init__(self) -> None:
        for name in ("call_text", "reasoning"):
            if getattr(self, name) not in KEEP_DROP:
                raise ValueError(f"{name}: one of {', '.join(KEEP_DROP)}")
        if self.parallel_calls not in PARALLEL_CALLS:
            raise ValueError(f"parallel_calls: one of {', '.join(PARALLEL_CALLS)}")
        if self.bare_calls and self.call_text != "drop":
            raise ValueError("call_text: drop, with bare_calls (no markers to keep text in)")
        for name in ("tool_call_words", "thought_words"):
            words = getattr(self, name)
            if len(words) != 2 or not all(isinstance(w, str) and w for w in words):
                raise ValueError(f"{name}: an opening and a closing marker, both non-empty")


DEFAULT_LF = LfSettings()


@dataclass(slots=True)
class _Turn:
    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    # An observation's results, one block per call (its first text is their join).
    blocks: list[str] | None = None


def to_lf_example(
    record: Mapping[str, Any], settings: LfSettings = DEFAULT_LF
) -> tuple[dict[str, Any] | None, list[str]]:
    """The sharegpt example of one IM record and the reshapes it needed, in order.

    Returns `(None, kinds)` when the record is not written; `kinds` then ends with one of
    `RECORD_DROP_KINDS`.
    """
    kinds: list[str] = []
    system, rest = _split_system(record.get("messages") or [], kinds)
    turns = _alternate(_to_turns(rest, settings, kinds), kinds)
    if not turns:  # trimmed turns start on the prompt and end on a response, or are none
        kinds.append("no_trainable_turn")
        return None, kinds
    if settings.parallel_calls == "drop" and any(len(turn.calls) > 1 for turn in turns):
        kinds.append("parallel_calls_dropped")
        return None, kinds
    if settings.parallel_calls == "split":
        turns = _split_parallel_calls(turns, kinds)
    messages = _render(turns, settings, kinds)
    if settings.media_placeholders and _holds_media(messages):
        kinds.append("media_placeholder_dropped")
        return None, kinds
    info = _unique_info(record)
    example: dict[str, Any] = {
        "messages": messages,
        "system": system,
        "tools": _tools_column(record.get("tools"), kinds),
    }
    example.update(lf_metadata(info))  # one schema for every writer (sinks/schema.py)
    example["_agent_type"] = agent_type(record)
    return example, kinds


def _unique_info(record: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = record.get("meta_info")
    info = meta.get("unique_info") if isinstance(meta, Mapping) else None
    return info if isinstance(info, Mapping) else {}


def _split_system(
    messages: Sequence[Mapping[str, Any]], kinds: list[str]
) -> tuple[str, Sequence[Mapping[str, Any]]]:
    """Leading system messages -> the system text; later ones become user messages."""
    leading = 0
    while leading < len(messages) and messages[leading].get("role") == "system":
        leading += 1
    if leading > 1:
        kinds.append("system_merged")
    system = "\n\n".join([_text(m.get("content")) for m in messages[:leading]])
    rest = messages[leading:]
    if any(m.get("role") == "system" for m in rest):  # rare: each turned into a user message
        rest = [_system_to_user(message, kinds) for message in rest]
    return system, rest


def _system_to_user(message: Mapping[str, Any], kinds: list[str]) -> Mapping[str, Any]:
    if message.get("role") != "system":
        return message
    kinds.append("system_to_user")
    return {"role": "user", "content": message.get("content")}


def _to_turns(
    messages: Sequence[Mapping[str, Any]], settings: LfSettings, kinds: list[str]
) -> list[_Turn]:
    """One turn per message; consecutive tool results become one observation turn that
    answers the calls made since the last user or tool message (`pending`)."""
    turns: list[_Turn] = []
    pending: list[str] = []
    results: list[Mapping[str, Any]] = []
    drop_reasoning = settings.reasoning == "drop"
    for message in messages:
        role = message.get("role")
        if role == "tool":
            results.append(message)
            continue
        if results:
            turns.append(_observation(results, pending, kinds))
            results, pending = [], []
        if role == "assistant":
            turn = _assistant_turn(message, drop_reasoning, kinds, pending)
            if turn is not None:
                turns.append(turn)
        elif role == "user":
            turns.append(_Turn(USER, [_text(message.get("content"))]))
            pending = []
        else:
            kinds.append("unknown_role_dropped")
    if results:
        turns.append(_observation(results, pending, kinds))
    return turns


def _assistant_turn(
    message: Mapping[str, Any], drop_reasoning: bool, kinds: list[str], pending: list[str]
) -> _Turn | None:
    """A response turn (its calls' ids added to `pending`); a message with neither text,
    call nor (kept) reasoning is dropped."""
    text = _text(message.get("content"))
    texts = [text] if _has_text(text) else []
    reasoning = _text(message.get("reasoning_content"))
    thoughts = [reasoning] if _has_text(reasoning) else []
    if thoughts and drop_reasoning:
        kinds.append("reasoning_dropped")
        thoughts = []
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        name = _text(function.get("name"))
        calls.append({"name": name, "arguments": _arguments(function.get("arguments"), kinds)})
        pending.append(str(call.get("id") or ""))
    if calls:
        return _Turn(FUNCTION, texts, calls, thoughts)
    if texts or thoughts:
        return _Turn(ASSISTANT, texts, [], thoughts)
    kinds.append("empty_assistant_dropped")
    return None


def _has_text(text: str) -> bool:
    """`bool(text.strip())`, without copying the text."""
    return bool(text) and not text.isspace()


def _arguments(raw: Any, kinds: list[str]) -> Any:
    """Arguments as a JSON value (LLaMA-Factory json.dumps them back into the template)."""
    if not isinstance(raw, str):
        return {} if raw is None else raw
    if not _has_text(raw):
        return {}
    try:
        return json_value(raw)
    except ValueError:
        kinds.append("arguments_not_json")
        return raw


def _observation(
    results: Sequence[Mapping[str, Any]], pending: Sequence[str], kinds: list[str]
) -> _Turn:
    """The observation turn of a run of results: one block per call, joined by
    `RESULT_SEPARATOR`."""
    blocks = _result_blocks(results, pending, kinds)
    return _Turn(OBSERVATION, [RESULT_SEPARATOR.join(blocks)], [], [], blocks)


def _result_blocks(
    results: Sequence[Mapping[str, Any]], pending: Sequence[str], kinds: list[str]
) -> list[str]:
    """The raw results in the order of the calls they answer, one block per call.

    A result is placed by its `tool_call_id`; one whose id answers no open call takes the
    first call still without a result, and any beyond the calls is kept after them, so no
    result is lost; a call left without a result gets an empty block.
    """
    contents = [_text(message.get("content")) for message in results]
    ids = [str(message.get("tool_call_id") or "") for message in results]
    if ids == pending and "" not in ids and len(set(ids)) == len(ids):
        return contents  # the usual case: each call answered, in order
    slots: list[str | None] = [None] * len(pending)
    first_slot: dict[str, int] = {}
    for index, call_id in enumerate(pending):
        if call_id:
            first_slot.setdefault(call_id, index)
    strays: list[str] = []
    for call_id, content in zip(ids, contents, strict=True):
        slot = first_slot.get(call_id)
        if slot is not None and slots[slot] is None:
            slots[slot] = content
        else:
            strays.append(content)
    extras: list[str] = []
    for content in strays:
        if None in slots:
            kinds.append("result_matched_by_position")
            slots[slots.index(None)] = content
        else:
            kinds.append("unmatched_result_kept")
            extras.append(content)
    kinds.extend("missing_result_filled" for slot in slots if slot is None)
    return [slot or "" for slot in slots] + extras


def _alternate(turns: list[_Turn], kinds: list[str]) -> list[_Turn]:
    """Merge same-side neighbours, then trim to start on the prompt and end on a response."""
    merged: list[_Turn] = []
    last_prompt_side: bool | None = None  # the side of merged[-1]
    for turn in turns:
        prompt_side = turn.role in _PROMPT_SIDE
        if last_prompt_side is None or last_prompt_side != prompt_side:
            merged.append(turn)
            last_prompt_side = prompt_side
            continue
        last = merged[-1]
        if prompt_side:
            kinds.append("prompt_turns_merged")
        else:
            kinds.append("response_turns_merged")
            if turn.role == FUNCTION:
                last.role = FUNCTION
        last.texts.extend(turn.texts)
        last.calls.extend(turn.calls)
        last.thoughts.extend(turn.thoughts)
    if merged and merged[0].role not in _PROMPT_SIDE:
        kinds.append("leading_response_dropped")
        merged.pop(0)
    if merged and merged[-1].role in _PROMPT_SIDE:
        kinds.append(f"trailing_{merged[-1].role}_dropped")
        merged.pop()
    return merged


def _split_parallel_calls(turns: list[_Turn], kinds: list[str]) -> list[_Turn]:
    """Each turn of several calls as one call per turn, each call followed by its own result
    block; the turn's text and reasoning go with the first call, and the prompt turn after it
    keeps the last call's block, any extra blocks and whatever was merged into it. A call
    without a block (none was written for it) gets an empty one, counted."""
    out: list[_Turn] = []
    index = 0
    while index < len(turns):
        turn = turns[index]
        index += 1
        if turn.role != FUNCTION or len(turn.calls) < 2:
            out.append(turn)
            continue
        kinds.append("parallel_calls_split")
        following = turns[index] if index < len(turns) else None
        blocks = following.blocks if following is not None and following.blocks else []
        for position, call in enumerate(turn.calls):
            first = position == 0
            texts, thoughts = (turn.texts, turn.thoughts) if first else ([], [])
            out.append(_Turn(FUNCTION, texts, [call], thoughts))
            if position == len(turn.calls) - 1:
                break
            if position < len(blocks):
                block = blocks[position]
            else:
                kinds.append("missing_result_filled")
                block = ""
            out.append(_Turn(OBSERVATION, [block], blocks=[block]))
        if following is not None and blocks:
            rest = blocks[len(turn.calls) - 1 :]
            if not rest:
                kinds.append("missing_result_filled")
                rest = [""]
            merged = following.texts[1:]
            out.append(_Turn(following.role, [RESULT_SEPARATOR.join(rest), *merged], blocks=rest))
            index += 1
    return out


def _holds_media(messages: Sequence[Mapping[str, str]]) -> bool:
    return any(mark in m["content"] for m in messages for mark in MEDIA_PLACEHOLDERS)


def _render(turns: Sequence[_Turn], settings: LfSettings, kinds: list[str]) -> list[dict[str, str]]:
    """Each turn as its sharegpt message: the reasoning inside the template's thought markers,
    then the text; a function_call turn's content as `_function_content` writes it."""
    opening, closing = settings.thought_words
    markers = (*settings.tool_call_words, *settings.thought_words, *_LEGACY_THOUGHT_WORDS)
    messages: list[dict[str, str]] = []
    for turn in turns:
        text = "\n\n".join(turn.texts)
        thought = opening + "\n\n".join(turn.thoughts) + closing if turn.thoughts else ""
        if turn.role == FUNCTION:
            content = _function_content(turn, text, thought, markers, settings, kinds)
        else:
            content = thought + text
        messages.append({"role": turn.role, "content": content})
    return messages


def _function_content(
    turn: _Turn,
    text: str,
    thought: str,
    markers: Sequence[str],
    settings: LfSettings,
    kinds: list[str],
) -> str:
    """What FunctionFormatter renders as `thought + text`, then the calls.

    Without text or thought the content is the bare JSON (every release parses that). With
    them it is `prose<tool_call>JSON</tool_call>`; when the prose itself holds the markers so
    that the first marked span would not be the calls, the calls go first (LLaMA-Factory
    renders the prose before the calls wherever it stands); if even that would be misread,
    the prose is dropped and counted. Each candidate is checked by splitting it as the
    formatter does. With `bare_calls` the content is the JSON alone, whatever stood beside it
    dropped and counted.
    """
    payload, clean = _calls_json(turn.calls, markers)
    if text and settings.call_text == "drop":
        kinds.append("call_text_dropped")
        text = ""
    if settings.bare_calls:
        if thought:
            kinds.append("call_reasoning_dropped")
        return payload
    if text and not text.endswith("\n"):
        text += "\n"  # the calls start on a line of their own, as in the templates' own chats
    prose = thought + text
    if not prose:
        if clean:
            return payload  # no marker in it: the formatter reads it whole as the calls
        candidates = [payload]
    elif settings.call_text == "drop":
        candidates = [prose + payload]  # only a thought: the formatter's thought_words path
    else:
        opening, closing = settings.tool_call_words
        marked = f"{opening}{payload}{closing}"
        candidates = [prose + marked, marked + prose]
    for content in candidates:
        if _formatter_split(content, settings) == (prose, payload):
            return content
    kinds.append("call_text_marker_clash")
    return payload


def _formatter_split(content: str, settings: LfSettings) -> tuple[str, str]:
    """(text rendered before the calls, calls JSON) as LLaMA-Factory's FunctionFormatter
    splits a function_call content: the first tool-call span holds the JSON and the rest
    (every copy of that span removed) is the text; without one, the first thought span is
    the text and the rest the JSON; without either, the whole content is the JSON."""
    found = _first_span(content, *settings.tool_call_words)
    if found is not None:
        start, stop, inside = found
        return _without_span(content, start, stop), inside
    thought = _first_span(content, *settings.thought_words)
    if thought is not None:
        start, stop, _ = thought
        return content[start:stop], _without_span(content, start, stop)
    return "", content


def _first_span(content: str, opening: str, closing: str) -> tuple[int, int, str] | None:
    """(start, stop, what is inside it) of the first `opening … closing` span, the closing
    the first one after the opening: the regex `opening(.*?)closing` (DOTALL) as `search`
    finds it, by `str.find` (if the first opening has no closing after it, none has)."""
    start = content.find(opening)
    if start < 0:
        return None
    inner = start + len(opening)
    end = content.find(closing, inner)
    if end < 0:
        return None
    return start, end + len(closing), content[inner:end]


def _without_span(content: str, start: int, stop: int) -> str:
    """`content.replace(span, "")` for the span `content[start:stop]` that `_first_span`
    found: no copy of it starts before `start` (each begins with the opening, found first
    there), so only the text after it is searched for more (a search for a long span is
    slow: it is the whole calls JSON)."""
    span = content[start:stop]
    return content[:start] + content[stop:].replace(span, "")


def _calls_json(calls: list[dict[str, Any]], markers: Sequence[str]) -> tuple[str, bool]:
    """The calls as JSON (one object, or a list for parallel calls) in which no marker
    appears literally, and whether none ever did (`clean`): a marker inside a string is
    written with its first character as a `\\uXXXX` escape, which json.loads reads back to
    the same value, so the formatter's marker search never stops inside an argument."""
    value: Any = calls[0] if len(calls) == 1 else calls
    payload = python_json(value)
    escaped = payload
    for marker in markers:
        # a lone character is found by memchr, far faster than the marker: most payloads
        # hold no marker's first character at all
        if marker[0] in escaped and marker in escaped:
            escaped = escaped.replace(marker, _escape_first(marker) + marker[1:])
    if escaped == payload:
        return payload, True
    return (escaped if json.loads(escaped) == value else payload), False


def _escape_first(marker: str) -> str:
    code = ord(marker[0])
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _tools_column(tools: Any, kinds: list[str]) -> str:
    """The tool list as a JSON string; every tool given the `parameters.properties` that
    LLaMA-Factory's default tool formatter indexes without a guard.

    An agent's tool list repeats over a job's records, so columns are kept by the list's
    compact JSON (`_tools_key`), which orjson writes several times faster than the column."""
    if not tools:
        return ""
    key = _tools_key(tools)
    cached = _TOOLS_COLUMNS.get(key) if key is not None else None
    if cached is None:
        before = len(kinds)
        cached = (_fixed_tools_json(tools, kinds), len(kinds) - before)
        if key is not None:
            if len(_TOOLS_COLUMNS) >= _TOOLS_CACHE_SIZE:
                _TOOLS_COLUMNS.clear()
            _TOOLS_COLUMNS[key] = cached
    else:
        kinds.extend(["tool_schema_filled"] * cached[1])
    return cached[0]


def _tools_key(tools: Any) -> bytes | None:
    """The tool list's compact JSON, which tells apart any two JSON values that
    `python_json` writes differently; None (not cached) for what it cannot, where orjson
    would write a NaN or an infinity as null, or a value that is not plain JSON (it then
    raises: subclasses, non-string keys, integers beyond 64 bits, surrogates)."""
    try:
        key = orjson.dumps(tools, option=_PLAIN_JSON)
    except TypeError:
        return None
    return None if b"null" in key else key


def _fixed_tools_json(tools: Any, kinds: list[str]) -> str:
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
    return python_json(fixed)


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


def rendered_dataset_info_entry(file_name: str) -> dict[str, Any]:
    """The entry of chat-template-rendered turns (`--chat-template-tokenizer`): the same
    sharegpt layout, to be trained with `template: empty` — which the entry cannot set, so it
    says so in `_trajcurate_note` (LLaMA-Factory reads only the keys it knows)."""
    return {**dataset_info_entry(file_name), "_trajcurate_note": RENDERED_NOTE}


def dataset_info(file_names: Sequence[str], name: str) -> dict[str, dict[str, Any]]:
    """`dataset_info.json` for one output: `{name: entry}`, or one entry per shard named
    `<name>_00000`, `<name>_00001`, … (see `SHARDED_NOTE`)."""
    if len(file_names) == 1:
        return {name: dataset_info_entry(file_names[0])}
    return {f"{name}_{i:05d}": dataset_info_entry(f) for i, f in enumerate(file_names)}
