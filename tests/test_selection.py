"""Selection within a job, as pure functions (`transforms/selection.py`): dedup keys, exact
and near dedup counts, best-of-k, curriculum order, determinism."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from pipelines.cli import main
from transforms.selection import (
    BEST_OF_K,
    DEDUP,
    Candidate,
    SelectionSettings,
    Verdict,
    exact_key,
    minhash_key,
    pass_rates,
    select_job,
)

WORDS = (
    "read the failing test then open the parser module and trace how the tokenizer splits "
    "quoted fields before the comma handling runs on each line of input data"
).split()


def _record(
    instance_id: str, texts: list[str], agent_type: str = "main", **unique: Any
) -> dict[str, Any]:
    """A small IM record: a user prompt, then one assistant call and result per text."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the csv parser"}]
    for n, text in enumerate(texts):
        arguments = orjson.dumps({"cmd": text}).decode()
        call = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "bash", "arguments": arguments},
        }
        messages.append({"role": "assistant", "content": text, "tool_calls": [call]})
        messages.append({"role": "tool", "content": f"ok {n}", "tool_call_id": f"c{n}"})
    info = {"_instance_id": instance_id, "_agent_type": agent_type, **unique}
    return {"meta_info": {"unique_info": info}, "messages": messages}


def _long_text(seed: int, words: int = 400) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(40)) for _ in range(words // 40)]


def _candidate(
    instance_id: str,
    task: str = "t",
    score: float | None = 0.5,
    *,
    resolved: bool = True,
    turns: int = 5,
    exact: str = "",
    near: bytes = b"",
) -> Candidate:
    return Candidate(
        (instance_id, f"/src/{instance_id}"), task, resolved, score, turns, exact, near
    )


def _dropped(verdicts: dict[tuple[str, str], Verdict], stage: str) -> dict[str, str]:
    return {
        key[0]: v.reason or "" for key, v in verdicts.items() if not v.kept and v.stage == stage
    }


def _kept(verdicts: dict[tuple[str, str], Verdict]) -> set[str]:
    return {key[0] for key, v in verdicts.items() if v.kept}


# --- keys ---------------------------------------------------------------------------------


def test_the_exact_key_ignores_ids_metadata_whitespace_and_subagents() -> None:
    base = _record("a", ["ls -la", "pytest -q"])
    other = _record("b", ["ls -la", "pytest -q"], _score={"composite_score": 0.1})
    other["messages"][1]["content"] = " ls \n  -la"  # the words, not their spacing
    with_subagent = [other, _record("b", ["something else"], agent_type="subagent")]
    assert exact_key([base]) == exact_key([other]) == exact_key(with_subagent)
    assert exact_key([base]) != exact_key([_record("a", ["ls -la", "pytest -x"])])


def test_the_exact_key_compares_call_arguments_by_meaning() -> None:
    first = _record("a", ["run"])
    second = _record("b", ["run"])
    second["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{ "cmd" :  "run" }'
    assert exact_key([first]) == exact_key([second])


def test_the_minhash_key_is_fixed_by_its_seed() -> None:
    records = [_record("a", _long_text(1))]
    assert minhash_key(records) == minhash_key(records)
    assert len(minhash_key(records)) == 128 * 4


# --- dedup ----------------------------------------------------------------------------------


def test_exact_dedup_keeps_the_preferred_copy_and_names_it() -> None:
    candidates = [
        _candidate("c", score=0.9, exact="same"),
        _candidate("a", score=0.7, exact="same"),
        _candidate("b", score=0.9, exact="same"),  # ties with c: the smaller id wins
        _candidate("d", score=0.1, exact="other"),
        _candidate("e", score=1.0, exact="same", resolved=False),  # resolved comes first
    ]
    verdicts = select_job(candidates, [], SelectionSettings())
    dropped = _dropped(verdicts, DEDUP)
    assert _kept(verdicts) == {"b", "d"}
    assert set(dropped) == {"a", "c", "e"}
    assert all(reason.startswith("exact duplicate of b") for reason in dropped.values())


def test_exact_dedup_counts_on_records() -> None:
    texts = {"x": ["ls"], "y": ["ls"], "z": ["ls"], "w": ["cat a.py"], "v": ["cat a.py"]}
    candidates = [
        _candidate(name, exact=exact_key([_record(name, t)])) for name, t in texts.items()
    ]
    verdicts = select_job(candidates, [], SelectionSettings("exact"))
    assert len(_dropped(verdicts, DEDUP)) == 3
    assert _kept(verdicts) == {"v", "x"}


def test_near_dedup_drops_small_edits_and_keeps_different_work() -> None:
    base = _long_text(7)
    edited = [*base[:-1], base[-1].replace(WORDS[0], "inspect", 1) + " again"]
    different = _long_text(99)
    records = {
        "a-base": [_record("a-base", base)],
        "b-edit": [_record("b-edit", edited)],
        "c-other": [_record("c-other", different)],
        "d-copy": [_record("d-copy", base)],
    }
    candidates = [
        _candidate(name, exact=exact_key(r), near=minhash_key(r)) for name, r in records.items()
    ]
    exact_only = select_job(candidates, [], SelectionSettings("exact"))
    assert set(_dropped(exact_only, DEDUP)) == {"d-copy"}
    near = select_job(candidates, [], SelectionSettings("near"))
    dropped = _dropped(near, DEDUP)
    assert set(dropped) == {"b-edit", "d-copy"}
    assert dropped["b-edit"].startswith("near duplicate of a-base (estimated Jaccard")
    assert _kept(near) == {"a-base", "c-other"}


def test_dedup_off_keeps_copies() -> None:
    candidates = [_candidate("a", exact="same"), _candidate("b", exact="same")]
    assert _kept(select_job(candidates, [], SelectionSettings("off", curriculum=True))) == {
        "a",
        "b",
    }


# --- best-of-k ------------------------------------------------------------------------------


def _tasks() -> list[Candidate]:
    return [
        _candidate("t1-a", "t1", 0.5, exact="1"),
        _candidate("t1-b", "t1", 0.9, exact="2"),
        _candidate("t1-c", "t1", 0.7, exact="3"),
        _candidate("t1-d", "t1", 0.7, exact="4"),  # ties with t1-c: t1-c wins
        _candidate("t1-e", "t1", None, exact="5"),  # no score: last
        _candidate("t2-a", "t2", 0.2, exact="6"),
        _candidate("t2-b", "t2", 0.3, exact="7"),
        _candidate("t3-a", "t3", 0.1, exact="8"),
    ]


def test_best_of_k_keeps_the_k_best_per_task_ties_by_instance_id() -> None:
    verdicts = select_job(_tasks(), [], SelectionSettings(best_of_k=2))
    assert _kept(verdicts) == {"t1-b", "t1-c", "t2-a", "t2-b", "t3-a"}
    dropped = _dropped(verdicts, BEST_OF_K)
    assert set(dropped) == {"t1-a", "t1-d", "t1-e"}
    assert dropped["t1-a"] == "best-of-2 for task t1: kept t1-b, t1-c"


def test_best_of_k_counts_distinct_trajectories_after_dedup() -> None:
    candidates = [
        _candidate("a", score=0.9, exact="same"),
        _candidate("b", score=0.9, exact="same"),
        _candidate("c", score=0.5, exact="other"),
    ]
    verdicts = select_job(candidates, [], SelectionSettings(best_of_k=2))
    assert _kept(verdicts) == {"a", "c"}
    assert set(_dropped(verdicts, DEDUP)) == {"b"}


def test_the_decision_does_not_depend_on_input_order() -> None:
    settings = SelectionSettings(best_of_k=2, curriculum=True)
    expected = select_job(_tasks(), [("t2", False)], settings)
    for seed in range(5):
        shuffled = _tasks()
        random.Random(seed).shuffle(shuffled)
        assert select_job(shuffled, [("t2", False)], settings) == expected


# --- curriculum -----------------------------------------------------------------------------


def test_pass_rates_count_every_scored_trial() -> None:
    assert pass_rates([("t", True), ("t", False), ("t", False), ("u", True)]) == {
        "t": 0.333333,
        "u": 1.0,
    }


def test_curriculum_orders_easier_tasks_first_then_fewer_turns() -> None:
    candidates = [
        _candidate("hard-1", "hard", turns=3, exact="1"),
        _candidate("easy-2", "easy", turns=9, exact="2"),
        _candidate("easy-1", "easy", turns=4, exact="3"),
        _candidate("mid-1", "mid", turns=4, exact="4"),
        _candidate("mid-0", "mid", turns=4, exact="5"),  # same turns as mid-1: by id
    ]
    # The unresolved trials of the job (rejected at the gate) count in the pass rates.
    others = [("hard", False), ("hard", False), ("hard", False), ("mid", False)]
    verdicts = select_job(candidates, others, SelectionSettings(curriculum=True))
    order = sorted(verdicts.items(), key=lambda item: item[1].curriculum["rank"])  # type: ignore[index]
    assert [key[0] for key, _ in order] == ["easy-1", "easy-2", "mid-0", "mid-1", "hard-1"]
    assert [v.curriculum for _, v in order][2] == {"rank": 2, "pass_rate": 0.666667, "turns": 4}
    assert verdicts[("hard-1", "/src/hard-1")].curriculum == {
        "rank": 4,
        "pass_rate": 0.25,
        "turns": 3,
    }


def test_without_curriculum_no_order_key() -> None:
    verdicts = select_job(_tasks(), [], SelectionSettings())
    assert all(v.curriculum is None for v in verdicts.values())


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "active"),
    [
        ({}, True),
        ({"dedup": "off"}, False),
        ({"dedup": "off", "best_of_k": 1}, True),
        ({"dedup": "off", "curriculum": True}, True),
    ],
)
def test_selection_is_active_only_when_it_can_change_the_output(
    kwargs: dict[str, Any], active: bool
) -> None:
    assert SelectionSettings(**kwargs).active is active


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--best-of-k", "0"], "argument --best-of-k: a whole number from 1 to 1e+06"),
        (
            ["--dedup", "fuzzy"],
            "argument --dedup: invalid choice: 'fuzzy' (choose from 'exact', 'near', 'off')",
        ),
    ],
)
def test_bad_selection_options_exit_2(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = ["run", "--input", str(tmp_path), "--output", str(tmp_path / "out"), *extra]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"trajcurate run: error: {message}"


def test_a_yaml_best_of_k_is_checked_like_the_flag(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("best_of_k: 0\n")
    argv = ["run", "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    assert main([*argv, "--config", str(config)]) == 2
    assert "--best-of-k: a whole number from 1 to 1e+06" in capsys.readouterr().err
