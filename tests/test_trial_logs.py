"""What a reader says of the logs it finds, and which records are worth training on.

- a Harbor trial whose agent log is a format trajcurate knows but does not read names it;
- standalone `<trial>/agent/trajectory.json` files of different trials keep apart;
- a record with nothing to learn from (no request, or only unanswered calls) is not trainable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from scorers.im_validity import record_problem
from transforms.readers import atif
from transforms.readers.harbor_trial import read_trial
from transforms.readers.im_builder import build_im_record


def _trial_with(tmp_path: Path, name: str, lines: list[dict[str, Any]]) -> Path:
    trial = tmp_path / "copilot__t1"
    (trial / "agent").mkdir(parents=True)
    (trial / "agent" / name).write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    (trial / "result.json").write_bytes(orjson.dumps({"trial_name": trial.name}))
    return trial


def test_a_trial_with_an_unread_log_names_it(tmp_path: Path) -> None:
    event = {
        "type": "session.start",
        "data": {"sessionId": "s", "version": 1},
        "id": "e1",
        "timestamp": "2026-01-01T00:00:00Z",
        "parentId": None,
    }
    bundle = read_trial(_trial_with(tmp_path, "copilot-cli.jsonl", [event]))
    assert bundle["records"] == []
    reason = bundle["warnings"][0]
    assert "a Copilot CLI session log (agent/copilot-cli.jsonl)" in reason, reason
    assert "supported formats: harbor, atif, claude-code, codex, gemini-cli" in reason


def test_a_trial_with_no_log_at_all_says_so(tmp_path: Path) -> None:
    trial = _trial_with(tmp_path, "notes.txt", [])
    assert read_trial(trial)["warnings"][0] == f"no agent trajectory found in {trial}/agent"


def test_standalone_trajectories_of_two_trials_keep_their_trial_names(
    shared_dir: Path, tmp_path: Path
) -> None:
    source = shared_dir / "data/real/atif/openhands/hello-world.trajectory.json"
    ids = []
    for trial in ("run-a", "run-b"):
        path = tmp_path / trial / "agent" / "trajectory.json"
        path.parent.mkdir(parents=True)
        path.write_bytes(source.read_bytes())
        ids.append(next(atif.read(path))["instance_id"])
    assert ids == ["run-a", "run-b"]


def _record(*messages: dict[str, Any]) -> dict[str, Any]:
    return build_im_record(list(messages), instance_id="t")


CALL = {"id": "c1", "name": "bash", "arguments": {"command": "ls"}}


def test_records_with_nothing_to_learn_from_are_not_trainable() -> None:
    no_request = _record({"role": "user", "content": "  "}, {"role": "assistant", "content": "Hi"})
    assert record_problem(no_request) == "empty prompt: the first user message has no text"
    only_calls = _record(
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
    )
    assert record_problem(only_calls) == (
        "tool calls never answered and no text: nothing to train on"
    )
    answered = _record(
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "content": "a.py", "tool_call_id": "c1"},
        {"role": "assistant", "content": "", "tool_calls": [{**CALL, "id": "c2"}]},
    )
    assert record_problem(answered) is None


def test_a_request_after_a_rejected_call_is_a_valid_user_turn() -> None:
    record = _record(
        {"role": "user", "content": "delete the logs"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "content": "The user doesn't want to proceed", "tool_call_id": "c1"},
        {"role": "user", "content": "keep them, just list them"},
        {"role": "assistant", "content": "Listing only."},
    )
    assert record_problem(record) is None
