"""What may become SFT data is decided once, after scoring, and the system prompt is a policy.

- A record whose prompt is empty (blank, or only Claude Code's "Warmup"), one with a call
  left unanswered before its last turn, and one whose assistant turns hold no text and no
  call are rejected at `trainable` with a one-line reason; they are still scored and
  reported (`scores.jsonl`), and `trajcurate score` marks them in `_trainable` instead.
- A subagent record failing a rule drops its whole trial, the reason naming the subagent.
- `--system-prompt keep|drop|TEXT`: TEXT fills every empty system prompt (a record's own is
  kept), drop removes it; what changed is counted and the policy is in the manifest.
- Every timestamp an IM record carries is ISO 8601 in UTC with `Z`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from reader_checks import result_doc, trajectory_doc, write_trial

from pipelines.cli import main
from scorers.im_validity import trainable_problem
from transforms import bundle_steps as steps
from transforms.chain import ChainSettings, stage_names
from transforms.readers import im_jsonl
from transforms.readers.im_builder import build_im_record, date_of, utc_timestamp

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


# --- timestamps -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2026-05-26T00:21:11.642229Z", "2026-05-26T00:21:11.642229Z"),
        ("2026-05-26T00:21:11Z", "2026-05-26T00:21:11.000000Z"),
        ("2026-05-26T02:21:11.5+02:00", "2026-05-26T00:21:11.500000Z"),
        ("2026-05-26T00:21:11.642229", "2026-05-26T00:21:11.642229Z"),  # no offset: UTC
        ("2026-05-25 19:21:11-05:00", "2026-05-26T00:21:11.000000Z"),
        (1779754871, "2026-05-26T00:21:11.000000Z"),  # epoch seconds
        (1779754871500, "2026-05-26T00:21:11.500000Z"),  # epoch milliseconds
        ("yesterday", None),
        (True, None),
    ],
)
def test_every_timestamp_form_becomes_utc_with_z(given: Any, expected: str | None) -> None:
    assert utc_timestamp(given) == expected


def test_the_date_of_a_record_is_its_utc_date() -> None:
    assert date_of("2026-05-25T22:00:00-05:00") == "2026-05-26"
    assert date_of("2026-05-26 12:00 PST") == "2026-05-26"  # not ISO: the date it names
    assert date_of(None) == "1970-01-01"


def test_a_record_carries_its_trial_and_phase_times_in_utc_with_z() -> None:
    metadata = {
        "started_at": "2026-05-26T00:21:11.642229",
        "finished_at": "2026-05-26T02:26:36+02:00",
        "timings": {"verifier": {"started_at": 1779754871, "finished_at": "soon"}},
    }
    record = build_im_record([_user("q"), _assistant("a")], instance_id="t", metadata=metadata)
    got = record["meta_info"]["unique_info"]["_instance_metadata"]
    assert got["started_at"] == "2026-05-26T00:21:11.642229Z"
    assert got["finished_at"] == "2026-05-26T00:26:36.000000Z"
    assert got["timings"] == {
        "verifier": {"started_at": "2026-05-26T00:21:11.000000Z", "finished_at": None}
    }
    assert got["warnings"] == ["timings.verifier.finished_at: not a timestamp ('soon'), left out"]
    assert metadata["timings"]["verifier"]["started_at"] == 1779754871  # the input is not changed


def test_a_harbor_trial_with_naive_times_is_written_with_z(tmp_path: Path) -> None:
    job = tmp_path / "jobs" / "job"
    job.mkdir(parents=True)
    (job / "config.json").write_bytes(orjson.dumps({"job_name": "job"}))
    times = {"started_at": "2026-05-15T02:29:02.123456", "finished_at": "2026-05-15T02:39:02"}
    result = result_doc("trial", {"reward": 1.0}, **times, verifier=dict(times))
    write_trial(job, "trial", {"result.json": result, "agent/trajectory.json": trajectory_doc()})
    out = tmp_path / "out"
    args = ["run", "--no-progress", "--input", str(tmp_path / "jobs"), "--output", str(out)]
    assert main(args) == 0
    (record,) = _lines(out / "job" / "im.jsonl")
    metadata = record["meta_info"]["unique_info"]["_instance_metadata"]
    assert (metadata["started_at"], metadata["finished_at"]) == (
        "2026-05-15T02:29:02.123456Z",
        "2026-05-15T02:39:02.000000Z",
    )
    assert metadata["timings"]["verifier"]["finished_at"] == "2026-05-15T02:39:02.000000Z"


def test_im_input_timestamps_are_read_in_utc_with_z(tmp_path: Path) -> None:
    record = _good()
    record["meta_info"]["unique_info"]["_instance_metadata"]["started_at"] = (
        "2026-05-26T02:21:11+02:00"
    )
    (bundle,) = im_jsonl.read(_write(tmp_path / "in.jsonl", [record]))
    metadata = bundle["records"][0]["meta_info"]["unique_info"]["_instance_metadata"]
    assert metadata["started_at"] == "2026-05-26T00:21:11.000000Z"
