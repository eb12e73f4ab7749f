"""OpenHands evaluation output (format "openhands-eval"): `output.jsonl`, one instance a line.

OpenHands' benchmark harness (`evaluation/utils/shared.py`, `EvalOutput`) writes one JSON
object per instance: `{instance_id, instruction, history, test_result, metadata, metrics,
error, instance}`, where `history` is the native OpenHands event list (older files: a list
of `[action, observation]` pairs, flattened here) and `metadata` the run's `EvalMetadata`
(`agent_class`, `llm_config{model, max_message_chars, ...}`, `max_iterations`, `dataset`,
`git_commit`, ...). The SWE-bench evaluation (`eval_infer.py`) adds
`test_result.report{resolved, failed_apply_patch, error_eval, empty_generation, ...}`.

- Each line is one bundle; its conversation is `openhands.conversation_record` of the
  history, observation text cut at the run's `llm_config.max_message_chars`.
- Instance id = `instance_id`. A repeated id in one file is warned and made unique by a
  `#<n>` suffix (`<id>#2` for the second line with it), so no two bundles share an id.
- Reward: `test_result.report.resolved` (or a top-level `report.resolved`, or
  `test_result.resolved`) true -> 1.0, false -> 0.0, `reward_source` "output.jsonl"; no
  verdict -> None (an inference-only `output.jsonl` has just `git_patch`). The same goes
  into `_instance_metadata.rewards` / `reward_source`.
- `_instance_metadata` keeps the run's facts: `agent_class`, `dataset`, `data_split`,
  `max_iterations`, `openhands_commit`, the instance's `error`, and the report's flags.
  API keys and endpoints in `llm_config` are not copied.
- A line that is not JSON, not an object, or whose history cannot be read is a bundle with
  no records and the reason as its warning (the pipeline counts it as refused); the other
  lines still read. The file is read line by line through `confined.TrialFiles`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from transforms.jsonl import LineError, is_blank, parse_line
from transforms.readers.bundle import Bundle, ReaderError, new_bundle
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.openhands import (
    DEFAULT_MAX_MESSAGE_CHARS,
    conversation_record,
    event_objects,
)
from transforms.readers.provenance import line_read
from transforms.readers.source_files import as_dict, json_type

FORMAT = "openhands-eval"
AGENT_NAME = "openhands"
REWARD_SOURCE = "output.jsonl"
_REPORT_FLAGS = ("failed_apply_patch", "error_eval", "empty_generation", "test_timeout")
_METADATA_KEYS = ("agent_class", "dataset", "data_split", "max_iterations")


def looks_like_openhands_eval(first_line_object: dict[str, Any]) -> bool:
    """An `EvalOutput` line: an `instance_id`, a `history` list, and one of the fields only
    the evaluation harness writes (`instruction`, `test_result`, `metadata`)."""
    return (
        isinstance(first_line_object.get("instance_id"), str | int)
        and isinstance(first_line_object.get("history"), list)
        and bool(first_line_object.keys() & {"instruction", "test_result", "metadata"})
    )


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per line of an OpenHands evaluation `output.jsonl`."""
    path = Path(path)
    files = TrialFiles.for_input(path, limits)
    seen: Counter[str] = Counter()
    found = False
    for number, raw in files.iter_lines(path, per_line_cap=True):
        if is_blank(raw):
            continue
        found = True
        yield _line_bundle(path, number, raw, seen)
    if not found:
        raise ReaderError("empty file")


def _line_bundle(path: Path, number: int, raw: bytes, seen: Counter[str]) -> Bundle:
    try:
        value = parse_line(raw)
    except LineError as exc:
        return _broken(path, f"line {number}", f"line {number}: {exc}")
    if not isinstance(value, dict):
        return _broken(
            path, f"line {number}", f"line {number}: a JSON {json_type(value)}, expected an object"
        )
    raw_id = value.get("instance_id")
    base_id = str(raw_id) if isinstance(raw_id, str | int) and str(raw_id) else f"line {number}"
    seen[base_id] += 1
    instance_id = base_id if seen[base_id] == 1 else f"{base_id}#{seen[base_id]}"
    warnings = []
    if seen[base_id] > 1:
        warnings.append(
            f"line {number}: instance id {base_id!r} repeats an earlier line; "
            f"this one is {instance_id!r}"
        )
    try:
        bundle = _instance_bundle(path, number, value, instance_id, warnings)
    except ReaderError as exc:
        return _broken(path, instance_id, f"line {number} ({base_id}): {exc}", warnings)
    bundle["read_files"] = line_read(path, number, raw)  # the line read, for provenance
    return bundle


def _broken(path: Path, instance_id: str, reason: str, warnings: list[str] | None = None) -> Bundle:
    return new_bundle(instance_id, str(path), FORMAT, [], warnings=[*(warnings or []), reason])


def _instance_bundle(
    path: Path, number: int, line: dict[str, Any], instance_id: str, warnings: list[str]
) -> Bundle:
    history = line.get("history")
    if not isinstance(history, list):
        raise ReaderError(f"`history` is a JSON {json_type(history)}, expected an array")
    eval_metadata = as_dict(line.get("metadata"))
    llm = as_dict(eval_metadata.get("llm_config"))
    events = event_objects(_flattened(history), warnings)
    reward = resolved_reward(line)
    metadata = _instance_metadata(path, number, line, eval_metadata)
    metadata["rewards"] = None if reward is None else {"reward": reward}
    metadata["reward_source"] = None if reward is None else REWARD_SOURCE
    agent = {"name": AGENT_NAME, "version": None, "model": _str_or_none(llm.get("model"))}
    limit = llm.get("max_message_chars")
    max_chars = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
    record, notes = conversation_record(
        events,
        instance_id,
        agent,
        metadata,
        _usage(line.get("metrics")),
        max_message_chars=max_chars if max_chars is not None else DEFAULT_MAX_MESSAGE_CHARS,
    )
    return new_bundle(
        instance_id,
        str(path),
        FORMAT,
        [record],
        rewards=None if reward is None else {"reward": reward},
        reward_source=None if reward is None else REWARD_SOURCE,
        metadata=metadata,
        usage=record["meta_info"]["unique_info"]["_usage"],
        warnings=[*warnings, *notes],
    )


def _flattened(history: list[Any]) -> list[Any]:
    """Events in order; old outputs store `[action, observation]` pairs."""
    events: list[Any] = []
    for item in history:
        if isinstance(item, list):
            events.extend(item)
        else:
            events.append(item)
    return events


def resolved_reward(line: dict[str, Any]) -> float | None:
    """1.0 / 0.0 from the evaluation's `resolved` verdict, None when the line has none."""
    test_result = as_dict(line.get("test_result"))
    for holder in (as_dict(test_result.get("report")), as_dict(line.get("report")), test_result):
        if isinstance(holder.get("resolved"), bool):
            return 1.0 if holder["resolved"] else 0.0
    return None


def _instance_metadata(
    path: Path, number: int, line: dict[str, Any], eval_metadata: dict[str, Any]
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"source_file": str(path), "source_line": number}
    metadata.update({k: eval_metadata[k] for k in _METADATA_KEYS if k in eval_metadata})
    if isinstance(eval_metadata.get("git_commit"), str):
        metadata["openhands_commit"] = eval_metadata["git_commit"]
    if line.get("error") is not None:
        metadata["error"] = str(line["error"])
    report = as_dict(as_dict(line.get("test_result")).get("report")) or as_dict(line.get("report"))
    flags = {k: report[k] for k in _REPORT_FLAGS if isinstance(report.get(k), bool)}
    if flags:
        metadata["report"] = flags
    return metadata


def _usage(metrics: Any) -> dict[str, Any]:
    """The run's totals from `metrics` (OpenHands' accumulated `Metrics`)."""
    metrics = as_dict(metrics)
    if not metrics:
        return {}
    tokens = as_dict(metrics.get("accumulated_token_usage"))
    return {
        "total_prompt_tokens": tokens.get("prompt_tokens"),
        "total_completion_tokens": tokens.get("completion_tokens"),
        "total_cached_tokens": tokens.get("cache_read_tokens"),
        "total_cost_usd": metrics.get("accumulated_cost"),
    }


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
