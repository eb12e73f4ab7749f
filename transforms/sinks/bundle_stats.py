"""What one written bundle adds to its job's `Stats` (pure, no Beam): shared by the Beam
CombineFn (`beam_stats.py`) and the plain-loop benchmark baseline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transforms.bundle_steps import TALLIES
from transforms.sinks.stats import Stats, Tokenizer, token_count


def _tokens(record: Mapping[str, Any], tokenizer: Tokenizer | None) -> int:
    """The record's message tokens: as stage `tokens` counted them (`--tokenizer`: counted
    once), else counted here."""
    metadata = record["meta_info"]["unique_info"].get("_instance_metadata")
    counts = metadata.get("tokens") if isinstance(metadata, Mapping) else None
    if tokenizer is not None and isinstance(counts, Mapping):
        messages = counts.get("messages")
        if isinstance(messages, int) and not isinstance(messages, bool):
            return messages
    return token_count(record, tokenizer)


def add_bundle(stats: Stats, bundle: Mapping[str, Any], tokenizer: Tokenizer | None) -> Stats:
    """Every record of `bundle` (with its tool-call counts; a subagent without a scaffold of
    its own counts under the main record's), then the bundle's stage tallies."""
    records = bundle["records"]
    counts = bundle.get("tool_call_counts") or [[0, 0]] * len(records)
    main_scaffold = next((r["meta_info"]["unique_info"]["_score"] or {} for r in records), {}).get(
        "scaffold"
    )
    for record, (calls, errors) in zip(records, counts, strict=True):
        score = record["meta_info"]["unique_info"].get("_score")
        scaffold = (score or {}).get("scaffold") or main_scaffold
        stats.add(record, score, calls, errors, scaffold, _tokens(record, tokenizer))
    return stats.add_tallies(bundle.get(TALLIES) or {})
