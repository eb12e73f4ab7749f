"""Claude Code session reader: real sessions, the native/ATIF pair, Harbor layout, refusals."""

from __future__ import annotations

import importlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from reader_checks import native_records
from role_order import assert_valid_role_order, role_order_errors

from scorers.im import validate_im_record
from scorers.im_validity import record_problem
from scorers.tqs_v2 import score_record
from transforms.readers import claude_code
from transforms.readers.bundle import Bundle, ReaderError

NATIVE = "data/real/native/claude-code"
HELLO = f"{NATIVE}/d7d4e19e-608d-44ef-b166-cd050ef274ba.jsonl"
HELLO_ATIF = "data/real/atif/claude-code/hello-load-task-level.trajectory.json"
SUBAGENT = f"{NATIVE}/subagents-agent-a8640dd1e78b7028c.jsonl"
SESSION_ID = "d7d4e19e-608d-44ef-b166-cd050ef274ba"


def _one(path: Path) -> Bundle:
    bundles = list(claude_code.read(path))
    assert len(bundles) == 1
    for record in bundles[0]["records"]:
        validate_im_record(record)
    return bundles[0]


def _kinds(bundle: Bundle) -> list[str]:
    return [r["meta_info"]["unique_info"]["_agent_type"] for r in bundle["records"]]


def _view(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What must agree between two readers: roles, texts, calls (name, parsed args), results."""
    return [
        (
            m["role"],
            m["content"],
            [
                (c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in m.get("tool_calls") or []
            ],
            m.get("tool_call_id"),
        )
        for m in messages
    ]


def _reference(cases_lines: list[bytes], instance_id: str) -> dict[str, Any]:
    for line in cases_lines:
        record = orjson.loads(line)
        if record["meta_info"]["unique_info"]["_instance_id"] == instance_id:
            return dict(record)
    raise AssertionError(f"{instance_id} not in cases.jsonl")


def test_hello_load_session_is_one_valid_main_record(shared_dir: Path) -> None:
    bundle = _one(shared_dir / HELLO)
    assert bundle["instance_id"] == SESSION_ID
    assert _kinds(bundle) == ["main"]
    assert bundle["warnings"] == []
    record = bundle["records"][0]
    assert_valid_role_order(record)
    assert [m["role"] for m in record["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert record["messages"][0]["content"] == ""
    assert [t["function"]["name"] for t in record["tools"]] == ["Write"]
    info = record["meta_info"]["unique_info"]
    assert info["_instance_metadata"]["scaffold"] == "claudecode"
    assert info["_instance_metadata"]["agent"] == {
        "name": "claude-code",
        "version": "2.1.222",
        "model": "claude-opus-5",
    }
    # One usage per API response: the same totals Harbor's ATIF conversion reports.
    assert info["_usage"] == {
        "total_prompt_tokens": 37933,
        "total_completion_tokens": 107,
        "total_cached_tokens": 32693,
    }
    assert record["meta_info"]["response_generate_time"] == "2026-08-05"


def test_hello_load_matches_the_reference_record_and_its_score(
    shared_dir: Path, cases_lines: list[bytes]
) -> None:
    record = _one(shared_dir / HELLO)["records"][0]
    reference = _reference(cases_lines, "real-atif-claude-code-hello-load-task-level-emptysys")
    assert _view(record["messages"]) == _view(reference["messages"])
    stored = _reference(cases_lines, "real-atif-claude-code-hello-load-task-level")
    assert (
        score_record(record, scaffold="claudecode") == stored["meta_info"]["unique_info"]["_score"]
    )
    # Parity by default: like the reference, the scorer ignores the reader's scaffold hint, so
    # the prompt-less record scores as the reference scored the same messages (opencode) ...
    assert score_record(record) == reference["meta_info"]["unique_info"]["_score"]
    # ... and only `scaffold_hints` scores it as Claude Code, saying so.
    hinted = {**stored["meta_info"]["unique_info"]["_score"], "scaffold_source": "hint"}
    assert score_record(record, scaffold_hints=True) == hinted


def test_hello_load_native_and_harbor_atif_give_the_same_messages(shared_dir: Path) -> None:
    try:
        atif = importlib.import_module("transforms.readers.atif")
    except ImportError as exc:
        pytest.skip(f"transforms.readers.atif is not importable yet ({exc})")
    native = _one(shared_dir / HELLO)["records"][0]
    converted = next(atif.read(shared_dir / HELLO_ATIF))["records"][0]
    assert _view(native["messages"]) == _view(converted["messages"])
    assert native["messages"] == converted["messages"]
    assert native["tools"] == converted["tools"]


def test_standalone_subagent_transcript_is_a_subagent_only_bundle(shared_dir: Path) -> None:
    bundle = _one(shared_dir / SUBAGENT)
    assert _kinds(bundle) == ["subagent"]
    assert bundle["instance_id"] == "ce42bbc4-6beb-4086-8ab1-24c719a8614a"  # the parent session
    assert bundle["warnings"] == ["no main-agent events: the records are subagent transcripts only"]
    assert bundle["usage"] == {}  # usage belongs to a main record
    record = bundle["records"][0]
    info = record["meta_info"]["unique_info"]
    assert info["_subagent_id"] == "a8640dd1e78b7028c"
    assert score_record(record) is None
    # 118 assistant events share 78 message ids: one assistant message per API response.
    assert record["meta_info"]["rounds"] == 78
    assert record["meta_info"]["teacher"] == "claude-opus-4-7"
    # The transcript is a real multi-turn chat: 31 text-only turns answered by user messages
    # (monitor notifications, a "resume" request). Corrected §4: that is a valid record.
    messages = record["messages"]
    follow_ups = [
        i
        for i, m in enumerate(messages[:-1])
        if m["role"] == "assistant"
        and not m.get("tool_calls")
        and messages[i + 1]["role"] == "user"
    ]
    assert len(follow_ups) == 31
    assert role_order_errors(record) == []
    assert record_problem(record) is None


def _event(kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    role = "assistant" if kind == "assistant" else "user"
    message = {"role": role, "content": content, **extra.pop("message", {})}
    return {
        "type": kind,
        "message": message,
        "timestamp": extra.pop("ts", "2026-01-02T00:00:00Z"),
        **extra,
    }


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def _session() -> list[dict[str, Any]]:
    """A main chain with a split response, parallel calls, an old-style inline sidechain."""
    msg = {"id": "msg_1", "model": "claude-x"}
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    call2 = {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/a"}}
    return [
        {"type": "queue-operation", "operation": "enqueue"},
        _event("user", "Fix the bug.", uuid="u1", sessionId="s1", version="2.0.0"),
        _event("user", [{"type": "text", "text": "Be careful."}], uuid="u2"),
        _event(
            "assistant", [{"type": "thinking", "thinking": "Look first."}], message=msg, uuid="a1"
        ),
        _event("assistant", [call], message=msg, uuid="a2"),
        _event(
            "user",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py", "is_error": False}],
            uuid="r1",
            toolUseResult={"stdout": "a.py", "stderr": "", "interrupted": False, "isImage": False},
        ),
        _event("assistant", [call2], message=msg, uuid="a3"),
        _event(
            "user",
            [{"type": "tool_result", "tool_use_id": "t2", "content": "x", "is_error": True}],
            uuid="r2",
        ),
        _event("user", "[Request interrupted by user]", uuid="u3"),
        _event(
            "assistant",
            [{"type": "text", "text": "API Error"}],
            message={"model": "<synthetic>"},
            uuid="a4",
        ),
        _event(
            "assistant",
            [{"type": "text", "text": "Done."}],
            message={"id": "msg_2", "model": "claude-x"},
            uuid="a5",
        ),
        _event("user", "Side task", isSidechain=True, uuid="s-1", parentUuid=None),
        _event(
            "assistant",
            [{"type": "text", "text": "Side done"}],
            isSidechain=True,
            uuid="s-2",
            parentUuid="s-1",
        ),
        _event("user", "Fix the bug.", uuid="u1"),  # a replayed duplicate uuid is dropped
    ]


def test_split_responses_results_and_sidechains(tmp_path: Path) -> None:
    bundle = _one(_write(tmp_path / "s1.jsonl", _session()))
    assert _kinds(bundle) == ["main", "subagent"]
    main, side = bundle["records"]
    assert [m["role"] for m in main["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    _, user, turn, bash, read, done = main["messages"]
    assert user["content"] == "Fix the bug.\n\nBe careful."
    assert turn["reasoning_content"] == "Look first."
    assert [c["id"] for c in turn["tool_calls"]] == ["t1", "t2"]
    assert bash == {
        "role": "tool",
        "content": "a.py\n\n[stdout]\na.py",
        "name": "Bash",
        "tool_call_id": "t1",
    }
    assert read["content"] == "x\n\n[error] tool reported failure\n\n[Request interrupted by user]"
    assert done["content"] == "Done."  # the <synthetic> API-error notice is not model output
    assert "main: 1 <synthetic> message(s) dropped" in bundle["warnings"]
    assert [m["content"] for m in side["messages"][1:]] == ["Side task", "Side done"]
    assert side["meta_info"]["unique_info"]["_subagent_id"] == "sidechain-s-1"
    for record in bundle["records"]:
        assert_valid_role_order(record)


def _trial_agent_dir(tmp_path: Path, shared_dir: Path) -> Path:
    """A Harbor `agent/` folder holding copies of the real session files (a symlink out of
    the trial would be refused)."""
    agent_dir = tmp_path / "agent"
    project = agent_dir / "sessions" / "projects" / "-app"
    (project / SESSION_ID / "subagents").mkdir(parents=True)
    shutil.copyfile(shared_dir / HELLO, project / f"{SESSION_ID}.jsonl")
    shutil.copyfile(
        shared_dir / SUBAGENT, project / SESSION_ID / "subagents" / "agent-a8640dd1e78b7028c.jsonl"
    )
    return agent_dir


def test_harbor_agent_dir_gives_main_then_subagent(tmp_path: Path, shared_dir: Path) -> None:
    agent = {"name": "claude-code", "version": "2.1.222", "model": "anthropic/claude-opus-5"}
    found = native_records(
        claude_code,
        _trial_agent_dir(tmp_path, shared_dir),
        "trial__abc",
        agent,
        {"job": "j"},
        {"n_input_tokens": 5},
    )
    assert found is not None
    records, warnings = found
    assert warnings == []
    assert [r["meta_info"]["unique_info"]["_agent_type"] for r in records] == ["main", "subagent"]
    assert {r["meta_info"]["unique_info"]["_instance_id"] for r in records} == {"trial__abc"}
    main, sub = (r["meta_info"]["unique_info"] for r in records)
    assert main["_usage"] == {"n_input_tokens": 5}
    assert main["_instance_metadata"]["agent"]["model"] == "anthropic/claude-opus-5"
    assert sub["_instance_metadata"]["agent"]["model"] == "claude-opus-4-7"
    assert main["_instance_metadata"]["job"] == "j"


def test_agent_dir_without_claude_logs_is_none(tmp_path: Path) -> None:
    assert native_records(claude_code, tmp_path) is None


def test_stream_json_stdout_is_read_when_there_is_no_session(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"type": "system", "subtype": "init", "session_id": "s9", "claude_code_version": "2.1.0"},
        {
            "type": "assistant",
            "parent_tool_use_id": None,
            "message": {
                "id": "m1",
                "model": "claude-x",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "task1",
                        "name": "Task",
                        "input": {"prompt": "Find it", "description": "d"},
                    }
                ],
            },
        },
        {
            "type": "assistant",
            "parent_tool_use_id": "task1",
            "message": {
                "id": "m2",
                "model": "claude-y",
                "content": [{"type": "text", "text": "Found."}],
            },
        },
        {
            "type": "user",
            "parent_tool_use_id": None,
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "task1",
                        "content": [{"type": "text", "text": "Found."}],
                    }
                ],
            },
        },
        {
            "type": "assistant",
            "parent_tool_use_id": None,
            "message": {
                "id": "m3",
                "model": "claude-x",
                "content": [{"type": "text", "text": "All done."}],
            },
        },
        {"type": "result", "total_cost_usd": 0.25},
    ]
    _write(tmp_path / "claude-code.txt", lines)
    found = native_records(claude_code, tmp_path, instruction="Do it")
    assert found is not None
    records, warnings = found
    assert warnings == []
    main, sub = records
    assert [m["content"] for m in main["messages"]][1:] == [
        "Do it",
        "",
        '{"type": "text", "text": "Found."}',
        "All done.",
    ]
    assert main["meta_info"]["unique_info"]["_usage"] == {"total_cost_usd": 0.25}
    assert [m["content"] for m in sub["messages"]][1:] == ["Find it", "Found."]
    for record in records:
        assert_valid_role_order(record)


def _lines(*raw: bytes) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / "session.jsonl"
        path.write_bytes(b"\n".join(raw))
        return path

    return make


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (_lines(b""), "^empty file$"),
        (
            _lines(b'{"type": "user", "message": {"role": "us'),
            r"^no JSON object in the file \(line 1: invalid JSON",
        ),
        (
            _lines(b"[1, 2]", b'"text"'),
            r"^no JSON object in the file \(line 1: a JSON array, expected an object\)$",
        ),
        (
            _lines(b'{"type": "user", "message": "hello"}'),
            "^no messages: the session has no user or assistant events$",
        ),
        (_lines(b'{"type": "summary", "summary": "s"}'), "^no messages"),
    ],
    ids=["empty", "truncated", "not-objects", "message-not-object", "no-conversation"],
)
def test_refused_inputs_say_why(tmp_path: Path, make: Callable[[Path], Path], reason: str) -> None:
    with pytest.raises(ReaderError, match=reason):
        list(claude_code.read(make(tmp_path)))


def test_a_truncated_last_line_is_a_warning_not_a_failure(tmp_path: Path, shared_dir: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_bytes((shared_dir / HELLO).read_bytes() + b'{"type": "assistant", "mess')
    bundle = _one(path)
    assert _kinds(bundle) == ["main"]
    assert len(bundle["warnings"]) == 1
    assert bundle["warnings"][0].startswith("cut.jsonl: line 11: invalid JSON")
