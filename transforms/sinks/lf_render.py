"""Optional LF output rendered with a model's own chat template (what the Tracer wrote),
laid out for LLaMA-Factory's supervised fine-tuning (stage `sft`, `template: empty`).

The text carries the tool calls in the template's own markup, so it needs the tokenizer of
the model to be trained. A single text column would load only as pre-training text (stage
`pt`: no prompt masking; stage `sft` drops every such record), so the rendered conversation
is cut into alternating prompt / response segments and written as sharegpt user / assistant
turns. LLaMA-Factory's `empty` template adds nothing around a turn, so the concatenated turns
are exactly the template's text, each response segment (the assistant's words, calls and end
token) is trained on and every prompt segment (system, user, tool results, the assistant
header) is masked, turn by turn.

The cut points come from rendering prefixes: the text of the messages before an assistant
message with the generation prompt must be a prefix of the text through that message, and
that of the whole conversation. A template that renders earlier turns differently once later
ones follow breaks that; such a record is not written and is counted
(`chat_template_not_prefix`), never cut at a guessed place. `transformers` is imported only
when this is used and is not a dependency of trajcurate; the tokenizer is loaded from a
local path, never from a hub.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from typing import Any

from scorers.im import agent_type
from transforms.json_text import json_value
from transforms.sinks.schema import lf_metadata

__all__ = [
    "RENDERED_NOTE",
    "RENDER_KINDS",
    "TRANSFORMERS_MISSING",
    "load_tokenizer",
    "render_with_chat_template",
    "split_rendered_turns",
]

TRANSFORMERS_MISSING = (
    "rendering LF examples with a chat template needs the `transformers` package, which "
    "trajcurate does not install: `pip install transformers` (or write sharegpt examples "
    "without a tokenizer)"
)
RENDER_KINDS = {
    "chat_template_not_prefix": "the chat template renders an earlier turn differently once "
    "later turns follow, so the text cannot be cut into prompt and response: not written",
    "chat_template_tail_dropped": "text the template adds after the last assistant message "
    "(messages after it) left out",
}
RENDERED_NOTE = (
    "Turns already rendered by the model's chat template: train with stage sft and "
    "`template: empty`, which adds nothing around them (prompt turns masked, responses trained)."
)


def render_with_chat_template(
    record: Mapping[str, Any], tokenizer_path: str
) -> tuple[dict[str, Any] | None, list[str]]:
    """(`{"messages": [prompt segment, response segment, …] as user/assistant turns,
    "system": "", "tools": "", _score, _instance_id, …}`, reshape kinds), or (None, kinds)
    when the record cannot be cut (`kinds` then names why).

    Raises ImportError with `TRANSFORMERS_MISSING` when transformers is not installed.
    """
    tokenizer = load_tokenizer(tokenizer_path)
    tools = record.get("tools") or None
    messages = _chat_messages(record.get("messages") or [])

    def render(prefix: list[dict[str, Any]], generation_prompt: bool) -> str:
        return str(
            tokenizer.apply_chat_template(
                prefix, tools=tools, tokenize=False, add_generation_prompt=generation_prompt
            )
        )

    kinds: list[str] = []
    segments = split_rendered_turns(render, messages, kinds)
    if segments is None:
        return None, kinds
    turns = [
        {"role": "assistant" if i % 2 else "user", "content": text}
        for i, text in enumerate(segments)
    ]
    meta = record.get("meta_info")
    info = meta.get("unique_info") if isinstance(meta, Mapping) else None
    info = info if isinstance(info, Mapping) else {}
    example: dict[str, Any] = {"messages": turns, "system": "", "tools": ""}
    example.update(lf_metadata(info))  # one schema for every writer (sinks/schema.py)
    example["_agent_type"] = agent_type(record)
    return example, kinds


def split_rendered_turns(
    render: Callable[[list[dict[str, Any]], bool], str],
    messages: list[dict[str, Any]],
    kinds: list[str],
) -> list[str] | None:
    """The whole rendering cut into prompt, response, prompt, response, … segments.

    `render(prefix, generation_prompt)` renders a prefix of the messages. Each assistant
    message's response is the text between the prefix before it (with the generation
    prompt) and the prefix through it; the prompt is what lies between responses. Returns
    None (with the reason in `kinds`) when there is no assistant message or the renders are
    not prefixes of each other.
    """
    answers = [i for i, message in enumerate(messages) if message.get("role") == "assistant"]
    if not answers:
        kinds.append("no_trainable_turn")
        return None
    whole = render(messages, False)
    segments: list[str] = []
    start = 0
    for index in answers:
        before = render(messages[:index], True)
        through = render(messages[: index + 1], False)
        if not (whole.startswith(through) and through.startswith(before) and len(before) >= start):
            kinds.append("chat_template_not_prefix")
            return None
        segments += [whole[start : len(before)], whole[len(before) : len(through)]]
        start = len(through)
    if whole[start:]:
        kinds.append("chat_template_tail_dropped")
    return segments


@functools.lru_cache(maxsize=4)
def load_tokenizer(path: str) -> Any:
    """A Hugging Face tokenizer from a local folder (never a hub download), loaded once."""
    try:
        from transformers import AutoTokenizer  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise ImportError(TRANSFORMERS_MISSING) from exc
    return AutoTokenizer.from_pretrained(path, local_files_only=True)


def _chat_messages(messages: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """IM messages in the shape chat templates expect: call arguments as objects."""
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.get("role"), "content": message.get("content")}
        if message.get("reasoning_content"):
            item["reasoning_content"] = message["reasoning_content"]
        if message.get("tool_calls"):
            item["tool_calls"] = [_call(call) for call in message["tool_calls"]]
        for key in ("tool_call_id", "name"):
            if message.get(key):
                item[key] = message[key]
        out.append(item)
    return out


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json_value(arguments) if arguments.strip() else {}
    return {
        "id": call.get("id"),
        "type": "function",
        "function": {"name": function.get("name"), "arguments": arguments},
    }
