"""`lf.stats.json` (formats §6): a mergeable accumulator over written records.

Definitions:
- `n_turns` of an IM record is its number of assistant messages: one model response each, the
  agent's "turns" — the same figure as IM `meta_info.rounds` and TQS `assistant_turns` (not the
  message count, which also counts tool results). `gte_100` counts records with >= 100.
- Token lengths are per record. Without a tokenizer they are estimates, ceil(chars / 4) of each
  message (content, reasoning_content, and each tool call's name and arguments) summed; the
  tool list is not counted. The file says which method was used (`tokens`).
- `scores` is the composite over records that have a score (subagent records have none).
- Rates are rounded to 6 decimal places, and so are means.

Extra keys: `score_histogram` (composite and every component in 10 bins of 0.1, the last bin
closed), `by_agent` (per scaffold: count, main, subagent, scored, mean composite), `by_model`
(per `meta_info.teacher`: count, scored, mean composite), `tokens` (method, estimated).

Mergeable: every figure is a count, a sum of integers (scores are summed in millionths), a
min or a max, so merging the stats of any split of the records gives the stats of the whole,
whatever the order. The state is plain dicts, lists and numbers, cheap to pickle for a Beam
CombineFn.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from scorers.im import agent_type
from scorers.tqs_v2 import SCORE_KEYS

__all__ = [
    "ESTIMATE_METHOD",
    "HISTOGRAM_KEYS",
    "Stats",
    "Tokenizer",
    "token_count",
    "tokenizer_method",
]

ESTIMATE_METHOD = "estimate: ceil(chars/4) per message"
LONG_TOKENS = 131072
LONG_TURNS = 100
_COMPONENTS = tuple(k for k in SCORE_KEYS if k.endswith("_score") and k != "composite_score")
HISTOGRAM_KEYS = ("composite_score", *_COMPONENTS)
_BINS = 10
_MICRO = 1_000_000


class Tokenizer(Protocol):
    """What `token_count` needs of a tokenizer (a `transformers` tokenizer fits)."""

    def encode(self, text: str, add_special_tokens: bool = ...) -> Sequence[int]: ...


def tokenizer_method(tokenizer_path: str) -> str:
    return f"tokenizer:{tokenizer_path}"


def token_count(record: Mapping[str, Any], tokenizer: Tokenizer | None = None) -> int:
    """Tokens of a record's messages: the tokenizer's count, or ceil(chars/4) per message."""
    messages = record.get("messages") or []
    if tokenizer is not None:
        return sum(
            len(tokenizer.encode(text, add_special_tokens=False))
            for text in map(_message_text, messages)
            if text
        )
    total = 0
    for message in messages:  # the estimate needs only lengths: no text is joined
        content = message.get("content")
        reasoning = message.get("reasoning_content")
        chars = len(content) if isinstance(content, str) else 0
        if isinstance(reasoning, str):
            chars += len(reasoning)
        calls = message.get("tool_calls")
        if calls:
            chars += _call_chars(calls)
        total += (chars + 3) // 4  # ceil(chars / 4), exactly
    return total


def _call_chars(calls: Iterable[Mapping[str, Any]]) -> int:
    """The length of `_call_texts(calls)` joined."""
    chars = 0
    for call in calls:
        function = call.get("function") or {}
        name = function.get("name")
        arguments = function.get("arguments")
        if isinstance(name, str):
            chars += len(name)
        if isinstance(arguments, str):
            chars += len(arguments)
    return chars


def _message_text(message: Mapping[str, Any]) -> str:
    parts = [message.get("content"), message.get("reasoning_content")]
    calls = message.get("tool_calls")
    text = "".join([part for part in parts if isinstance(part, str)])
    return text + "".join(_call_texts(calls)) if calls else text


def _call_texts(calls: Iterable[Mapping[str, Any]]) -> list[str]:
    """Each tool call's name and arguments, where they are text."""
    parts = []
    for call in calls:
        function = call.get("function") or {}
        parts += [function.get("name"), function.get("arguments")]
    return [part for part in parts if isinstance(part, str)]


def _tool_counts() -> dict[str, int]:
    return {"calls": 0, "errors": 0, "with_calls": 0, "with_error": 0}


class Stats:
    """Counts, sums, minima and maxima of the written records; `to_json()` is §6."""

    def __init__(self, token_method: str = ESTIMATE_METHOD) -> None:
        self.token_method = token_method
        self.count = 0
        self.turns: dict[str, Any] = _range_state()
        self.tokens: dict[str, Any] = _range_state()
        self.scores: dict[str, Any] = _range_state()
        self.histogram: dict[str, list[int]] = {key: [0] * _BINS for key in HISTOGRAM_KEYS}
        self.tool_calls = _tool_counts()
        self.by_scaffold: dict[str, dict[str, int]] = {}
        self.by_agent: dict[str, dict[str, int]] = {}
        self.by_model: dict[str, dict[str, int]] = {}
        self.tallies: dict[str, int] = {}  # what the chain masked or removed (`redacted.*`, ...)

    def add_tallies(self, tallies: Mapping[str, int]) -> Stats:
        """Count what the chain's stages redacted or cleaned in one written bundle."""
        _add_counts(self.tallies, tallies)
        return self

    def add(
        self,
        record: Mapping[str, Any],
        score_dict: Mapping[str, Any] | None,
        tool_calls: int,
        tool_errors: int,
        scaffold: str | None,
        token_count: int,
    ) -> Stats:
        """Count one written record; returns self so adds chain in a CombineFn."""
        self.count += 1
        messages = record.get("messages") or []
        turns = sum(1 for m in messages if m.get("role") == "assistant")
        _observe(self.turns, turns, 1, over=turns >= LONG_TURNS)
        _observe(self.tokens, token_count, 1, over=token_count > LONG_TOKENS)
        scores = score_dict or {}
        composite = _number(scores.get("composite_score"))
        if composite is not None:
            _observe(self.scores, composite, _MICRO)
        if scores:
            self._add_histogram(scores)
        scaffold_name = scaffold or "unknown"
        scaffold_counts = self.by_scaffold.get(scaffold_name)
        if scaffold_counts is None:
            scaffold_counts = self.by_scaffold[scaffold_name] = _tool_counts()
        for counts in (self.tool_calls, scaffold_counts):
            counts["calls"] += tool_calls
            counts["errors"] += tool_errors
            counts["with_calls"] += 1 if tool_calls > 0 else 0
            counts["with_error"] += 1 if tool_errors > 0 else 0
        agent = self.by_agent.get(scaffold_name)
        if agent is None:
            agent = self.by_agent[scaffold_name] = _group(main=0, subagent=0)
        agent["subagent" if agent_type(record) == "subagent" else "main"] += 1
        teacher = _teacher(record)
        model = self.by_model.get(teacher)
        if model is None:
            model = self.by_model[teacher] = _group()
        micro = None if composite is None else round(composite * _MICRO)
        for group in (agent, model):
            group["count"] += 1
            if micro is not None:
                group["scored"] += 1
                group["score_micro"] += micro
        return self

    def _add_histogram(self, scores: Mapping[str, Any]) -> None:
        histogram = self.histogram
        for key in HISTOGRAM_KEYS:
            value = _number(scores.get(key))
            if value is not None:
                histogram[key][_bin(value)] += 1

    def merge(self, other: Stats) -> Stats:
        """Add `other` into self (and return self); both must count tokens the same way."""
        if other.token_method != self.token_method:
            raise ValueError(
                f"cannot merge stats counted with {other.token_method!r} into "
                f"stats counted with {self.token_method!r}"
            )
        self.count += other.count
        for mine, theirs in (
            (self.turns, other.turns),
            (self.tokens, other.tokens),
            (self.scores, other.scores),
        ):
            _merge_range(mine, theirs)
        for key, bins in other.histogram.items():
            self.histogram[key] = [a + b for a, b in zip(self.histogram[key], bins, strict=True)]
        _add_counts(self.tool_calls, other.tool_calls)
        _add_counts(self.tallies, other.tallies)
        for table, theirs in (
            (self.by_scaffold, other.by_scaffold),
            (self.by_agent, other.by_agent),
            (self.by_model, other.by_model),
        ):
            for name, counts in theirs.items():
                _add_counts(table.setdefault(name, dict.fromkeys(counts, 0)), counts)
        return self

    def to_json(self) -> dict[str, Any]:
        """The `lf.stats.json` object (keys in the order of formats §6, then the extras)."""
        errors = _error_figures(self.tool_calls)
        errors["by_scaffold"] = {
            name: _error_figures(self.by_scaffold[name]) for name in sorted(self.by_scaffold)
        }
        histogram: dict[str, Any] = {"edges": [round(i / _BINS, 1) for i in range(_BINS + 1)]}
        histogram.update({key: list(bins) for key, bins in self.histogram.items()})
        return {
            "count": self.count,
            "n_turns": {**_range_figures(self.turns, 1), "gte_100": self.turns["over"]},
            "token_lens": {**_range_figures(self.tokens, 1), "gt_128k": self.tokens["over"]},
            "total_tokens": self.tokens["sum"],
            "scores": _range_figures(self.scores, _MICRO),
            "tool_call_errors": errors,
            "score_histogram": histogram,
            "by_agent": {
                name: _group_figures(self.by_agent[name]) for name in sorted(self.by_agent)
            },
            "by_model": {
                name: _group_figures(self.by_model[name]) for name in sorted(self.by_model)
            },
            "tokens": {
                "method": self.token_method,
                "estimated": self.token_method == ESTIMATE_METHOD,
            },
            "redacted": {
                name.removeprefix("redacted."): n
                for name, n in sorted(self.tallies.items())
                if name.startswith("redacted.")
            },
            "control_chars_removed": self.tallies.get("cleaned.control_chars", 0),
        }

    def to_state(self) -> dict[str, Any]:
        """Everything counted, as JSON: `from_state` rebuilds stats that merge exactly (the
        run's figures of an incremental run merge the kept jobs' states)."""
        return {name: copy.deepcopy(value) for name, value in vars(self).items()}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Stats:
        stats = cls(str(state["token_method"]))
        for name in vars(stats):
            setattr(stats, name, copy.deepcopy(state[name]))
        return stats


def _range_state() -> dict[str, Any]:
    return {"n": 0, "sum": 0, "min": None, "max": None, "over": 0}


def _observe(state: dict[str, Any], value: float, scale: int, over: bool = False) -> None:
    """Count `value`; sums are kept as integers of 1/scale so any merge order is exact."""
    state["n"] += 1
    state["sum"] += round(value * scale)
    # min() and max() as they pick: the value only when strictly below (above) the kept one
    low, high = state["min"], state["max"]
    if low is None or value < low:
        state["min"] = value
    if high is None or value > high:
        state["max"] = value
    state["over"] += 1 if over else 0


def _merge_range(mine: dict[str, Any], theirs: Mapping[str, Any]) -> None:
    mine["n"] += theirs["n"]
    mine["sum"] += theirs["sum"]
    mine["over"] += theirs["over"]
    for key, pick in (("min", min), ("max", max)):
        if theirs[key] is not None:
            mine[key] = theirs[key] if mine[key] is None else pick(mine[key], theirs[key])


def _range_figures(state: Mapping[str, Any], scale: int) -> dict[str, Any]:
    mean = round(state["sum"] / scale / state["n"], 6) if state["n"] else None
    return {"max": state["max"], "min": state["min"], "mean": mean}


def _error_figures(counts: Mapping[str, int]) -> dict[str, Any]:
    return {
        "total_tool_calls": counts["calls"],
        "error_tool_calls": counts["errors"],
        "error_rate": _rate(counts["errors"], counts["calls"]),
        "trajectories_with_tool_calls": counts["with_calls"],
        "trajectories_with_error": counts["with_error"],
        "trajectory_error_rate": _rate(counts["with_error"], counts["with_calls"]),
    }


def _group(**extra: int) -> dict[str, int]:
    return {"count": 0, **extra, "scored": 0, "score_micro": 0}


def _group_figures(group: Mapping[str, int]) -> dict[str, Any]:
    figures: dict[str, Any] = {k: v for k, v in group.items() if k != "score_micro"}
    scored = group["scored"]
    figures["mean_composite"] = round(group["score_micro"] / _MICRO / scored, 6) if scored else None
    return figures


def _add_counts(mine: dict[str, int], theirs: Mapping[str, int]) -> None:
    for key, value in theirs.items():
        mine[key] = mine.get(key, 0) + value


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def _bin(value: float) -> int:
    """0.0-0.1 -> 0 … 0.9-1.0 -> 9 (1.0 included); exact on values with up to 6 decimals."""
    index = round(value * _MICRO) * _BINS // _MICRO
    return 0 if index < 0 else _BINS - 1 if index >= _BINS else index


def _number(value: Any) -> float | None:
    if type(value) is float:  # the usual case, tested first
        return None if math.isnan(value) else value
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def _teacher(record: Mapping[str, Any]) -> str:
    meta = record.get("meta_info")
    teacher = meta.get("teacher") if isinstance(meta, Mapping) else None
    return teacher if isinstance(teacher, str) and teacher else "unknown"
