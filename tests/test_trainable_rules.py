"""What may become SFT data is decided once, after scoring, and the system prompt is a policy.

- A record whose prompt is empty (blank, or only Claude Code's "Warmup"), one with a call
  left unanswered before its last turn, and one whose assistant turns hold no text and no
  call are rejected at `trainable` with a one-line reason; they are still scored and
  reported (`scores.jsonl`), and `trajcurate score` marks them in `_trainable` instead.
- A subagent record failing a rule drops its whole trial, the reason naming the subagent.
- `--system-prompt keep|drop|TEXT`: TEXT fills every empty system prompt (a record's own is
  kept), drop removes it; what changed is counted and the policy is in the manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pipelines.cli import main
from scorers.im_validity import trainable_problem
from transforms import bundle_steps as steps
from transforms.chain import ChainSettings, stage_names
from transforms.readers.im_builder import build_im_record

Record = dict[str, Any]


def _call(call_id: str, name: str = "bash") -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": {"command": "ls"}}


def _record(*messages: dict[str, Any], instance_id: str = "t", kind: str = "main") -> Record:
    return build_im_record(list(messages), instance_id=instance_id, agent_type=kind)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _assistant(text: str = "", *calls: dict[str, Any], reasoning: str = "") -> dict[str, Any]:
    return {"role": "assistant", "content": text, "tool_calls": list(calls)} | (
        {"reasoning_content": reasoning} if reasoning else {}
    )


def _tool(call_id: str, text: str = "a.py") -> dict[str, Any]:
    return {"role": "tool", "content": text, "tool_call_id": call_id}


def _good(instance_id: str = "t", kind: str = "main") -> Record:
    return _record(
        _user(f"list the files of {instance_id}"),
        _assistant("Listing.", _call("c1")),
        _tool("c1"),
        _assistant("There is a.py."),
        instance_id=instance_id,
        kind=kind,
    )


# --- the rules, one reason each -------------------------------------------------------------


def test_a_first_user_message_without_text_is_an_empty_prompt() -> None:
    # a later request does not make up for it: the first answers follow nothing
    record = _record(_user(" \n\t"), _assistant("Hi."), _user("list the files"), _assistant("a.py"))
    assert trainable_problem(record) == "empty prompt: the first user message has no text"


def test_claude_codes_warmup_greeting_is_an_empty_prompt() -> None:
    record = _record(_user("Warmup"), _assistant("I'm ready to help. What should I look at?"))
    assert trainable_problem(record) == (
        "empty prompt: the first user message is Claude Code's warmup greeting 'Warmup'"
    )
    asked = _record(_user("Warmup the cache, then list the files"), _assistant("a.py"))
    assert trainable_problem(asked) is None


def test_a_call_left_unanswered_before_the_last_turn_is_named() -> None:
    record = _record(
        _user("list and count the files"),
        _assistant("", _call("c1"), _call("c2", "wc")),
        _tool("c1"),  # c2's result was lost; the model went on
        _assistant("There is one file."),
    )
    assert trainable_problem(record) == (
        "unanswered call: message 2 calls wc (id c2) and no tool message answers it before "
        "the model goes on"
    )


def test_the_last_turn_may_end_on_its_calls() -> None:
    record = _record(
        _user("list the files"),
        _assistant("", _call("c1")),
        _tool("c1"),
        _assistant("Done, submitting.", _call("c2", "finish")),
    )
    assert trainable_problem(record) is None
    assert trainable_problem(_good()) is None


def test_assistant_turns_without_text_or_call_leave_nothing_to_learn() -> None:
    thought_only = _record(_user("list the files"), _assistant(reasoning="I should run ls."))
    assert trainable_problem(thought_only) == (
        "nothing to learn from: no assistant message has text or a tool call"
    )


def test_a_subagent_failing_a_rule_drops_its_trial_and_is_named() -> None:
    warmup = _record(_user("Warmup"), _assistant("Ready."), kind="subagent")
    bundle = {"records": [_good(), warmup]}
    assert steps.trainable_problem(bundle) == (
        "record 2 of 2 (subagent): empty prompt: the first user message is Claude Code's "
        "warmup greeting 'Warmup'"
    )
    assert steps.trainable_problem({"records": [_good(), _good(kind="subagent")]}) is None


# --- through the commands -------------------------------------------------------------------


def _empty_prompt(instance_id: str) -> Record:
    return _record(_user(""), _assistant("Hi! How can I help?"), instance_id=instance_id)


def _unanswered(instance_id: str) -> Record:
    return _record(
        _user("list the files"),
        _assistant("", _call("c1"), _call("c2")),
        _tool("c1"),
        _assistant("Done."),
        instance_id=instance_id,
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _write(path: Path, records: list[Record]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _run(tmp_path: Path, records: list[Record], *extra: str) -> Path:
    source = _write(tmp_path / "in.jsonl", records)
    out = tmp_path / "out"
    args = ["run", "--no-progress", "--instance-status", "all", "--input", str(source)]
    assert main([*args, "--output", str(out), *extra]) == 0
    return out / "standalone"


def test_run_scores_and_reports_untrainable_trials_but_writes_only_the_good_one(
    tmp_path: Path,
) -> None:
    job = _run(tmp_path, [_good("good"), _empty_prompt("empty"), _unanswered("lost")])
    rows = {row["instance_id"]: row for row in _lines(job / "scores.jsonl")}
    assert sorted(rows) == ["empty", "good", "lost"]
    assert all(row["score"]["composite_score"] is not None for row in rows.values())
    assert [rows[i]["decision"] for i in ("empty", "good", "lost")] == [
        "rejected",
        "kept",
        "rejected",
    ]
    rejects = {r["instance_id"]: r for r in _lines(job / "rejects.jsonl")}
    assert {i: r["stage"] for i, r in rejects.items()} == {
        "empty": "trainable",
        "lost": "trainable",
    }
    assert rejects["empty"]["reason"] == (
        "record 1 of 1: empty prompt: the first user message has no text"
    )
    assert "unanswered call: message 2 calls bash (id c2)" in rejects["lost"]["reason"]
    kept = [r["meta_info"]["unique_info"]["_instance_id"] for r in _lines(job / "im.jsonl")]
    assert kept == ["good"]
    assert len(orjson.loads((job / "lf.json").read_bytes())) == 1
    manifest = orjson.loads((job / "manifest.json").read_bytes())
    assert manifest["counts"]["rejected.trainable"] == 2


def test_score_marks_untrainable_records_with_the_reason_and_keeps_them(tmp_path: Path) -> None:
    source = _write(tmp_path / "in.jsonl", [_good("good"), _empty_prompt("empty")])
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(source), "-o", str(out)]) == 0
    marks = {
        r["meta_info"]["unique_info"]["_instance_id"]: r["meta_info"]["unique_info"]["_trainable"]
        for r in _lines(out)
    }
    assert marks == {
        "good": None,
        "empty": "record 1 of 1: empty prompt: the first user message has no text",
    }


# --- the system prompt policy ---------------------------------------------------------------


def _system(record: Record) -> list[str]:
    return [m["content"] for m in record["messages"] if m["role"] == "system"]


def test_a_system_prompt_text_fills_only_empty_ones_and_is_counted() -> None:
    own = _good("own")
    own["messages"][0]["content"] = "You are the agent's own prompt."
    bundle = steps.apply_system_prompt({"records": [_good("empty"), own]}, "You write code.")
    assert [_system(r) for r in bundle["records"]] == [
        ["You write code."],
        ["You are the agent's own prompt."],
    ]
    assert bundle["tallies"] == {"system_prompt.set": 1}
    missing = _good("missing")
    del missing["messages"][0]  # a record read from IM may have no system message at all
    assert _system(steps.apply_system_prompt({"records": [missing]}, "S")["records"][0]) == ["S"]


def test_dropping_the_system_prompt_removes_it_and_keep_changes_nothing() -> None:
    bundle = steps.apply_system_prompt({"records": [_good(), _good(kind="subagent")]}, "drop")
    assert [_system(r) for r in bundle["records"]] == [[], []]
    assert [r["messages"][0]["role"] for r in bundle["records"]] == ["user", "user"]
    assert bundle["tallies"] == {"system_prompt.dropped": 2}
    kept = steps.apply_system_prompt({"records": [_good()]}, "keep")
    assert _system(kept["records"][0]) == [""] and "tallies" not in kept


def test_the_system_prompt_stage_runs_last_and_only_when_asked() -> None:
    assert "system_prompt" not in stage_names(ChainSettings())
    assert stage_names(ChainSettings(system_prompt="drop"))[-2:] == ["filter", "system_prompt"]


def test_run_sets_the_system_prompt_in_the_sft_files_records_and_counts_it(
    tmp_path: Path,
) -> None:
    text = "You are a careful coding agent."
    job = _run(tmp_path, [_good("a"), _good("b")], "--system-prompt", text)
    assert [_system(r) for r in _lines(job / "im.jsonl")] == [[text], [text]]
    assert [row["system"] for row in orjson.loads((job / "lf.json").read_bytes())] == [text, text]
    manifest = orjson.loads((job / "manifest.json").read_bytes())
    assert manifest["options"]["system_prompt"] == text
    assert manifest["counts"]["system_prompt.set"] == 2


def test_an_empty_system_prompt_text_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(tmp_path / "in.jsonl", [_good()])
    args = ["run", "--input", str(source), "--output", str(tmp_path / "o")]
    assert main([*args, "--system-prompt", " "]) == 2
    assert "--system-prompt: keep, drop or a non-empty text" in capsys.readouterr().err
