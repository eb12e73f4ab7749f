"""Optional LF output rendered with a model's own chat template (what the Tracer wrote).

The text carries the tool calls in the template's own markup, so it needs the tokenizer of
the model to be trained. `transformers` is imported only when this is used and is not a
dependency of trajcurate; the tokenizer is loaded from a local path, never from a hub.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Mapping
from typing import Any

from scorers.im import agent_type

__all__ = [
    "TRANSFORMERS_MISSING",
    "load_tokenizer",
    "render_with_chat_template",
    "rendered_dataset_info_entry",
]

TRANSFORMERS_MISSING = (
    "rendering LF examples with a chat template needs the `transformers` package, which "
    "trajcurate does not install: `pip install transformers` (or write sharegpt examples "
    "without a tokenizer)"
)
_COPIED = ("_score", "_instance_id", "_gen_params", "_usage", "_instance_metadata")


def render_with_chat_template(record: Mapping[str, Any], tokenizer_path: str) -> dict[str, Any]:
    """`{"text": <the whole conversation rendered by the template>, _score, _instance_id, …}`.

    Raises ImportError with `TRANSFORMERS_MISSING` when transformers is not installed.
    """
    tokenizer = load_tokenizer(tokenizer_path)
    tools = record.get("tools") or None
    text = tokenizer.apply_chat_template(
        _chat_messages(record.get("messages") or []), tools=tools, tokenize=False
    )
    meta = record.get("meta_info")
    info = meta.get("unique_info") if isinstance(meta, Mapping) else None
    info = info if isinstance(info, Mapping) else {}
    example: dict[str, Any] = {"text": str(text)}
    for key in _COPIED:
        example[key] = info.get(key)
    example["_agent_type"] = agent_type(record)
    return example


def rendered_dataset_info_entry(file_name: str) -> dict[str, Any]:
    """The `dataset_info.json` entry of rendered text (LLaMA-Factory's pre-training layout)."""
    return {"file_name": file_name, "columns": {"prompt": "text"}}


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
            arguments = json.loads(arguments) if arguments.strip() else {}
    return {
        "id": call.get("id"),
        "type": "function",
        "function": {"name": function.get("name"), "arguments": arguments},
    }
