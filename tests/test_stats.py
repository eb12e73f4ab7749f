"""lf.stats.json: hand-computed figures, token estimates, and merge == whole."""

from __future__ import annotations

import itertools
import json
import pickle
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorers.tqs_v2 import count_tool_call_errors
from transforms.sinks.stats import (
    ESTIMATE_METHOD,
    HISTOGRAM_KEYS,
    Stats,
    token_count,
    tokenizer_method,
)

AddArgs = tuple[dict[str, Any], dict[str, Any] | None, int, int, str | None, int]


def record(turns: int, teacher: str = "m1", agent: str = "main") -> dict[str, Any]:
    messages = [{"role": "system", "content": ""}, {"role": "user", "content": "q"}]
    for _ in range(turns):
        messages += [{"role": "assistant", "content": "a"}, {"role": "user", "content": "o"}]
    meta = {"teacher": teacher, "unique_info": {"_instance_id": "i", "_agent_type": agent}}
    return {"version": "2.0.0", "meta_info": meta, "tools": None, "messages": messages[:-1]}


def score(composite: float, **components: float | None) -> dict[str, Any]:
    return {"composite_score": composite, **components}


THREE: list[AddArgs] = [
    (record(3, "m1"), score(0.5, sub_score=0.85, psn_score=None), 2, 1, "claudecode", 100),
    (record(2, "m2"), score(0.9, sub_score=1.0), 4, 0, "opencode", 200_000),
    (record(1, "m1", agent="subagent"), None, 1, 1, "claudecode", 50),
]


def stats_of(items: Sequence[AddArgs], method: str = ESTIMATE_METHOD) -> Stats:
    stats = Stats(method)
    for args in items:
        stats.add(*args)
    return stats


def test_three_records_hand_computed() -> None:
    result = stats_of(THREE).to_json()
    assert {k: result[k] for k in ("count", "n_turns", "token_lens", "total_tokens", "scores")} == {
        "count": 3,
        "n_turns": {"max": 3, "min": 1, "mean": 2.0, "gte_100": 0},
        "token_lens": {"max": 200_000, "min": 50, "mean": 66716.666667, "gt_128k": 1},
        "total_tokens": 200_150,
        "scores": {"max": 0.9, "min": 0.5, "mean": 0.7},
    }
    assert result["tool_call_errors"] == {
        "total_tool_calls": 7,
        "error_tool_calls": 2,
        "error_rate": 0.285714,
        "trajectories_with_tool_calls": 3,
        "trajectories_with_error": 2,
        "trajectory_error_rate": 0.666667,
        "by_scaffold": {
            "claudecode": {
                "total_tool_calls": 3,
                "error_tool_calls": 2,
                "error_rate": 0.666667,
                "trajectories_with_tool_calls": 2,
                "trajectories_with_error": 2,
                "trajectory_error_rate": 1.0,
            },
            "opencode": {
                "total_tool_calls": 4,
                "error_tool_calls": 0,
                "error_rate": 0.0,
                "trajectories_with_tool_calls": 1,
                "trajectories_with_error": 0,
                "trajectory_error_rate": 0.0,
            },
        },
    }
    assert result["by_agent"] == {
        "claudecode": {"count": 2, "main": 1, "subagent": 1, "scored": 1, "mean_composite": 0.5},
        "opencode": {"count": 1, "main": 1, "subagent": 0, "scored": 1, "mean_composite": 0.9},
    }
    assert result["by_model"] == {
        "m1": {"count": 2, "scored": 1, "mean_composite": 0.5},
        "m2": {"count": 1, "scored": 1, "mean_composite": 0.9},
    }
    assert result["tokens"] == {"method": ESTIMATE_METHOD, "estimated": True}
    histogram = result["score_histogram"]
    assert histogram["edges"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert histogram["composite_score"] == [0, 0, 0, 0, 0, 1, 0, 0, 0, 1]
    assert histogram["sub_score"] == [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]
    assert histogram["psn_score"] == [0] * 10
    assert list(histogram)[1:] == list(HISTOGRAM_KEYS)


def test_section_keys_are_exactly_formats_section_6() -> None:
    result = stats_of(THREE).to_json()
    assert list(result)[:6] == [
        "count",
        "n_turns",
        "token_lens",
        "total_tokens",
        "scores",
        "tool_call_errors",
    ]
    assert set(result["tool_call_errors"]["by_scaffold"]["opencode"]) == set(
        result["tool_call_errors"]
    ) - {"by_scaffold"}


def test_thresholds_and_bin_edges() -> None:
    items: list[AddArgs] = [
        (record(100), score(0.1), 0, 0, None, 131_072),
        (record(99), score(1.0), 0, 0, None, 131_073),
        (record(0), score(0.0999), 0, 0, None, 0),
        (record(0), score(0.3), 0, 0, None, 0),
    ]
    result = stats_of(items).to_json()
    assert result["n_turns"]["gte_100"] == 1
    assert result["token_lens"]["gt_128k"] == 1
    assert result["score_histogram"]["composite_score"] == [1, 1, 0, 1, 0, 0, 0, 0, 0, 1]
    assert result["tool_call_errors"]["by_scaffold"]["unknown"]["error_rate"] == 0.0
    assert result["by_model"] == {"m1": {"count": 4, "scored": 4, "mean_composite": 0.374975}}


def test_empty_stats() -> None:
    result = Stats().to_json()
    assert result["count"] == 0
    assert result["n_turns"] == {"max": None, "min": None, "mean": None, "gte_100": 0}
    assert result["scores"] == {"max": None, "min": None, "mean": None}
    assert result["tool_call_errors"]["error_rate"] == 0.0
    assert result["tool_call_errors"]["by_scaffold"] == {}


def test_token_estimate_is_ceil_chars_over_4_per_message() -> None:
    messages = [
        {"role": "user", "content": "abcde"},  # 5 chars -> 2
        {"role": "system", "content": ""},  # 0
        {"role": "assistant", "content": "a", "reasoning_content": "xyz"},  # 4 -> 1
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"c":1}'},
                }
            ],
        },  # 4 + 7 -> 3
    ]
    assert token_count({"messages": messages}) == 6


def test_token_count_with_a_tokenizer() -> None:
    class WordTokenizer:
        def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
            assert add_special_tokens is False
            return [0] * len(text.split())

    messages = [
        {"role": "user", "content": "one two three"},
        {"role": "assistant", "content": "four"},
    ]
    assert token_count({"messages": messages}, WordTokenizer()) == 4
    stats = Stats(tokenizer_method("/models/qwen"))
    assert stats.to_json()["tokens"] == {"method": "tokenizer:/models/qwen", "estimated": False}


def test_merging_differently_counted_stats_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot merge"):
        Stats().merge(Stats(tokenizer_method("/m")))


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, str | int | float)


def test_state_is_plain_and_pickles() -> None:
    stats = stats_of(THREE)
    assert _plain(vars(stats))
    assert pickle.loads(pickle.dumps(stats)).to_json() == stats.to_json()
    json.dumps(stats.to_json())


def merged(shards: Sequence[Sequence[AddArgs]], reverse: bool = False) -> dict[str, Any]:
    parts = [stats_of(shard) for shard in shards]
    total = Stats()
    for part in reversed(parts) if reverse else parts:
        total.merge(part)
    return total.to_json()


_ITEM = st.builds(
    lambda turns, teacher, agent, composite, calls, errors, scaffold, tokens: (
        record(turns, teacher, agent),
        None if composite is None else score(composite / 10_000, sub_score=composite / 10_000),
        calls,
        min(errors, calls),
        scaffold,
        tokens,
    ),
    st.integers(0, 120),
    st.sampled_from(["m1", "m2"]),
    st.sampled_from(["main", "subagent"]),
    st.none() | st.integers(0, 10_000),
    st.integers(0, 30),
    st.integers(0, 30),
    st.sampled_from(["claudecode", "terminus2", None]),
    st.integers(0, 300_000),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ITEM, max_size=12), st.lists(st.integers(0, 12), max_size=4), st.booleans())
def test_merged_shards_equal_the_whole(
    items: list[AddArgs], cuts: list[int], reverse: bool
) -> None:
    bounds = [0, *sorted(min(c, len(items)) for c in cuts), len(items)]
    shards = [items[a:b] for a, b in itertools.pairwise(bounds)]
    assert merged(shards, reverse) == stats_of(items).to_json()


@pytest.fixture(scope="module")
def case_items(cases_lines: list[bytes]) -> list[AddArgs]:
    items: list[AddArgs] = []
    for line in cases_lines:
        rec = json.loads(line)
        score_dict = rec["meta_info"]["unique_info"].get("_score")
        scaffold = score_dict["scaffold"] if score_dict else None
        calls, errors = count_tool_call_errors(rec, scaffold)
        items.append((rec, score_dict, calls, errors, scaffold, token_count(rec)))
    return items


def test_reference_records_merge_equals_whole(case_items: list[AddArgs]) -> None:
    whole = stats_of(case_items).to_json()
    assert whole["count"] == 335
    assert sum(whole["score_histogram"]["composite_score"]) == 331
    shards = [case_items[i::3] for i in range(3)]
    assert merged(shards) == whole
    assert merged(shards, reverse=True) == whole
