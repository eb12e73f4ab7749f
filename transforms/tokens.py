"""`--tokenizer` / `--max-tokens`: each record's token counts, and a cap that rejects.

Stage `tokens` (after `clean`: the text as written) counts, once per record, with the local
tokenizer: the messages' text as `lf.stats.json` counts it (`sinks.stats.token_count`:
content, reasoning and each call's name and arguments) and the tool list as JSON text, into
`_instance_metadata.tokens` ({"messages": n, "tools": m}); the stats then reuse the count.
Stage `max_tokens` (a pure check on those counts) rejects a bundle any of whose records has
more than `--max-tokens` in all, with the record and its count in the reason: a trainer
would cut such a record at its `cutoff_len` without a word. The chat template's own tokens
are not counted, so leave it headroom (a few per message).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from scorers.im import agent_type
from transforms.sinks.stats import Tokenizer, token_count

__all__ = ["MAX_TOKENS_STAGE", "TOKENS_STAGE", "count_tokens", "over_max", "record_tokens"]

TOKENS_STAGE = "tokens"
MAX_TOKENS_STAGE = "max_tokens"
TOKENS_KEY = "tokens"

_LOADED: dict[str, Tokenizer] = {}  # per process: one load per tokenizer folder


def _tokenizer(path: str) -> Tokenizer:
    tokenizer = _LOADED.get(path)
    if tokenizer is None:
        from transforms.sinks.lf_render import load_tokenizer

        tokenizer = _LOADED[path] = load_tokenizer(path)
    return tokenizer


def tool_tokens(record: Mapping[str, Any], tokenizer: Tokenizer) -> int:
    tools = record.get("tools")
    if not tools:
        return 0
    text = orjson.dumps(tools).decode()
    return len(tokenizer.encode(text, add_special_tokens=False))


def count_tokens(bundle: dict[str, Any], path: str) -> dict[str, Any]:
    """The bundle with `_instance_metadata.tokens` on every record (each its own)."""
    tokenizer = _tokenizer(path)
    for record in bundle["records"]:
        info = record["meta_info"]["unique_info"]
        metadata = info.get("_instance_metadata")
        counts = {
            "messages": token_count(record, tokenizer),
            "tools": tool_tokens(record, tokenizer),
        }
        # a copy: records of one trial may share one metadata object
        info["_instance_metadata"] = {
            **(metadata if isinstance(metadata, dict) else {}),
            TOKENS_KEY: counts,
        }
    return bundle


def record_tokens(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A record's counts from stage `tokens`, or None when they were not counted."""
    metadata = record["meta_info"]["unique_info"].get("_instance_metadata")
    counts = metadata.get(TOKENS_KEY) if isinstance(metadata, Mapping) else None
    if isinstance(counts, Mapping) and isinstance(counts.get("messages"), int):
        return counts
    return None


def over_max(bundle: Mapping[str, Any], max_tokens: int) -> str | None:
    """Why the bundle is rejected: its first record over `max_tokens`; None when none is."""
    for number, record in enumerate(bundle["records"], 1):
        counts = record_tokens(record)
        if counts is None:
            continue
        total = int(counts["messages"]) + int(counts.get("tools") or 0)
        if total > max_tokens:
            return (
                f"record {number} ({agent_type(record)}) has {total:,} tokens "
                f"({counts['messages']:,} in messages, {counts.get('tools') or 0:,} in tools), "
                f"over --max-tokens {max_tokens:,}: a trainer would truncate it"
            )
    return None
