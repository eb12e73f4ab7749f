"""Claude Code session reader: real sessions, the native/ATIF pair, Harbor layout, refusals."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from conformance.check import conformance_problems, source_strings
from conformance.sources.claude_code import count as claude_code_counts
from reader_checks import native_records
from role_order import assert_valid_role_order

from scorers.im import validate_im_record
from scorers.im_validity import record_problem
from scorers.tqs_v2 import score_record
from transforms.readers import atif, claude_code
from transforms.readers.bundle import Bundle, ReaderError
from transforms.readers.harbor_trial import read_trial

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
    # harness listings (tool/agent/skill deltas) and the Write result's UI metadata are out
    assert info["_instance_metadata"]["fidelity"] == {
        "attachments_skipped": 3,
        "ui_metadata_removed": 1,
    }


def test_hello_load_matches_the_reference_record_and_its_score(
    shared_dir: Path, cases_lines: list[bytes]
) -> None:
    record = _one(shared_dir / HELLO)["records"][0]
    reference = _reference(cases_lines, "real-atif-claude-code-hello-load-task-level-emptysys")
    # The reference was converted by Harbor, which appended the line's `toolUseResult` (UI
    # metadata the model never saw) to the tool result; the record holds the result only.
    result = record["messages"][3]["content"]
    assert result == (
        "File created successfully at: /app/hello.txt "
        "(file state is current in your context — no need to Read it back)"
    )
    assert reference["messages"][3]["content"].startswith(result + "\n\n[metadata] {")
    reference["messages"][3]["content"] = result
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
    native = _one(shared_dir / HELLO)["records"][0]
    converted = next(atif.read(shared_dir / HELLO_ATIF))["records"][0]
    assert _view(native["messages"]) == _view(converted["messages"])
    assert native["messages"] == converted["messages"]
    assert native["tools"] == converted["tools"]


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
    """A main chain with a split response, parallel calls, an interruption, a <synthetic>
    notice and a 1.x inline sidechain run by a Task call."""
    msg = {"id": "msg_1", "model": "claude-x"}
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    call2 = {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/a"}}
    task = {"type": "tool_use", "id": "t3", "name": "Task", "input": {"prompt": "Side task"}}
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
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "  a.py\n",
                    "is_error": False,
                }
            ],
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
            [{"type": "text", "text": "Done."}, task],
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
        _event(
            "user",
            [{"type": "tool_result", "tool_use_id": "t3", "content": "Side done"}],
            uuid="r3",
        ),
        _event(
            "assistant", [{"type": "text", "text": "All done."}], message={"id": "m3"}, uuid="a6"
        ),
        _event("user", "Fix the bug.", uuid="u1"),  # a replayed duplicate uuid is dropped
    ]


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
        "Found.",  # the Task result's text block, not its JSON
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


# --- what the model saw: tool results, user turns, local commands -------------------------

CODEMIE = f"{NATIVE}/codemie"
CLEAR_SESSION = f"{CODEMIE}/codemie-session-196820da.jsonl"
REJECTED_SESSION = f"{CODEMIE}/codemie-session-9eda1058.jsonl"
LAYOUT_2_1 = f"{CODEMIE}/incremental-subagents/turn-2.jsonl"
LAYOUT_2_0 = f"{CODEMIE}/tmp-private-2.0-layout/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
OUR_MARKERS = ("[metadata]", "[error] tool reported failure", "[stdout]", "[exit_code]")


def _source_results(path: Path) -> list[str]:
    """Every `tool_result` block's content as written (strings; text blocks joined)."""
    results = []
    for line in path.read_bytes().splitlines():
        event = orjson.loads(line)
        content = (event.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                value = block.get("content")
                if isinstance(value, list):
                    value = "\n\n".join(b["text"] for b in value if b.get("type") == "text")
                results.append(value or "")
    return results


def _no_markers_of_ours(bundle: Bundle) -> None:
    for record in bundle["records"]:
        for message in record["messages"]:
            for marker in OUR_MARKERS:
                assert marker not in message["content"], (marker, message["content"][:200])
            assert not re.search(r"Executed \w+ toolu_", message["content"])
            assert '{"type": "text"' not in message["content"]


def test_tool_results_are_the_text_the_model_got(shared_dir: Path) -> None:
    path = shared_dir / CLEAR_SESSION
    bundle = _one(path)
    record = bundle["records"][0]
    tools = [m["content"] for m in record["messages"] if m["role"] == "tool"]
    # every result once, exactly as written: nothing appended, no whitespace stripped (in
    # call order; parallel calls' results were logged in the order they finished)
    assert sorted(tools) == sorted(_source_results(path))
    assert sum(map(len, tools)) == 142168
    assert any(t.startswith("     1→") for t in tools)
    _no_markers_of_ours(bundle)
    metadata = record["meta_info"]["unique_info"]["_instance_metadata"]
    assert metadata["errored_tool_call_ids"] == [
        "toolu_bdrk_012BHUXZFxnS5TYAjaP8QiCY",
        "toolu_bdrk_01VpZvVFCBa3k8Md89bcWUHR",
    ]
    errored = [
        m for m in record["messages"] if m.get("tool_call_id") in metadata["errored_tool_call_ids"]
    ]
    assert [m["content"][:12] for m in errored] == ["Exit code 1\n", "Exit code 1\n"]
    assert metadata["fidelity"] == {"ui_metadata_removed": 65}
    assert bundle["warnings"] == []
    assert record_problem(record) is None


def test_clear_command_and_its_caveat_open_the_first_user_turn(shared_dir: Path) -> None:
    """Claude Code sends its `isMeta` caveat and the local-command lines to the model (that
    is what the caveat is for): they open the request, in the order they were logged (the
    caveat's timestamp is later than the command's, its line earlier)."""
    messages = _one(shared_dir / CLEAR_SESSION)["records"][0]["messages"]
    first = messages[1]["content"].split("\n\n")
    assert first[0].startswith("Caveat: The messages below were generated by the user")
    assert first[1].startswith("<command-name>/clear</command-name>")
    assert first[2] == "<local-command-stdout></local-command-stdout>"
    assert first[3].startswith("ultrathink there is logic that tracks files")
    assert [m["role"] for m in messages].count("user") == 13


def test_rejected_call_then_a_new_request_is_a_user_turn(shared_dir: Path) -> None:
    bundle = _one(shared_dir / REJECTED_SESSION)
    assert _kinds(bundle) == ["main"]
    record = bundle["records"][0]
    messages = record["messages"]
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "user", "assistant", "tool", "assistant",
        "user", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert messages[3]["content"].startswith("The user doesn't want to proceed with this tool use.")
    assert messages[3]["content"].endswith("wait for the user to tell you how to proceed.")
    assert messages[4]["content"] == (
        "[Request interrupted by user for tool use]\n\nexplore more of current repo"
    )
    # the two Task results: their text blocks' text, joined; not their JSON
    task_result = messages[6]["content"]
    assert task_result.startswith("Perfect! Now I have a comprehensive understanding")
    assert task_result.endswith("(for resuming to continue this agent's work if needed)")
    _no_markers_of_ours(bundle)
    metadata = record["meta_info"]["unique_info"]["_instance_metadata"]
    assert metadata["errored_tool_call_ids"] == ["toolu_bdrk_01SKk2dM5q1c8gecaoatnwJn"]
    # the subagent transcripts the session names are not in the fixture
    assert metadata["fidelity"] == {
        "missing_subagent_files": 2,
        "summary_lines_skipped": 16,
        "ui_metadata_removed": 3,
    }
    assert bundle["warnings"] == [
        "2 subagent transcript(s) missing (calls toolu_bdrk_0173E8p3RpvZR9nGfxQ29YBN, "
        "toolu_bdrk_017jZYsgmFDt9ud8x578t3Zx): their work is not in the records"
    ]
    assert record_problem(record) is None


# --- layouts: 1.x inline, 2.0 beside, 2.1 below; subagent-only transcripts -----------------


def test_2_1_layout_joins_the_subagent_to_its_task_call(shared_dir: Path) -> None:
    bundle = _one(shared_dir / LAYOUT_2_1)
    assert _kinds(bundle) == ["main", "subagent"]
    main, sub = bundle["records"]
    (task,) = [
        c
        for m in main["messages"]
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == "Task"
    ]
    info = sub["meta_info"]["unique_info"]
    assert info["_subagent_id"] == "a485154"
    assert info["_parent_tool_call_id"] == task["id"]
    assert sub["messages"][1]["content"] == json.loads(task["function"]["arguments"])["prompt"]
    assert bundle["warnings"] == []
    _no_markers_of_ours(bundle)
    for record in bundle["records"]:
        assert record_problem(record) is None


def test_2_0_layout_warmup_sidechains_are_not_subagents(shared_dir: Path) -> None:
    bundle = _one(shared_dir / LAYOUT_2_0)
    assert _kinds(bundle) == ["main"]
    fidelity = bundle["records"][0]["meta_info"]["unique_info"]["_instance_metadata"]["fidelity"]
    assert fidelity["warmups_skipped"] == 2
    assert bundle["warnings"] == [
        "2 warmup sidechain(s) skipped (Claude Code's prompt-cache warmups, not subagent work)"
    ]
    assert [m["role"] for m in bundle["records"][0]["messages"]].count("user") == 3


@pytest.mark.parametrize(
    "transcript",
    [
        SUBAGENT,
        f"{CODEMIE}/incremental-subagents/turn-2/subagents/agent-a485154.jsonl",
        f"{CODEMIE}/tmp-private-2.0-layout/agent-36541525.jsonl",
    ],
    ids=["2.1-standalone", "2.1-below-its-session", "2.0-warmup"],
)
def test_a_subagent_transcript_alone_is_refused(shared_dir: Path, transcript: str) -> None:
    with pytest.raises(
        ReaderError, match=r"^a Claude Code subagent transcript .*: give the session"
    ):
        list(claude_code.read(shared_dir / transcript))


def test_inline_sidechains_split_responses_and_an_interruption(tmp_path: Path) -> None:
    """1.x: the sidechain is in the session file, joined to its Task call by the prompt."""
    bundle = _one(_write(tmp_path / "s1.jsonl", _session()))
    assert _kinds(bundle) == ["main", "subagent"]
    main, side = bundle["records"]
    assert [m["role"] for m in main["messages"]] == [
        "system", "user", "assistant", "tool", "tool", "user", "assistant", "tool", "assistant",
    ]  # fmt: skip
    _, user, turn, bash, read, interrupted, done, task, final = main["messages"]
    assert user["content"] == "Fix the bug.\n\nBe careful."
    assert turn["reasoning_content"] == "Look first."
    assert [c["id"] for c in turn["tool_calls"]] == ["t1", "t2"]
    assert bash == {"role": "tool", "content": "  a.py\n", "name": "Bash", "tool_call_id": "t1"}
    assert read["content"] == "x"  # is_error is data, not text
    assert interrupted["content"] == "[Request interrupted by user]"
    assert done["content"] == "Done."  # the <synthetic> API-error notice is not model output
    assert task["content"] == "Side done"
    assert final["content"] == "All done."
    assert "main: 1 <synthetic> message(s) dropped" in bundle["warnings"]
    assert [m["content"] for m in side["messages"][1:]] == ["Side task", "Side done"]
    info = side["meta_info"]["unique_info"]
    assert (info["_subagent_id"], info["_parent_tool_call_id"]) == ("sidechain-s-1", "t3")
    metadata = main["meta_info"]["unique_info"]["_instance_metadata"]
    assert metadata["errored_tool_call_ids"] == ["t2"]
    assert metadata["fidelity"] == {
        "duplicate_events_skipped": 1,
        "synthetic_messages_dropped": 1,
        "ui_metadata_removed": 1,
    }
    for record in bundle["records"]:
        assert_valid_role_order(record)


def _compacted_session() -> list[dict[str, Any]]:
    summary = (
        "This session is being continued from a previous conversation that ran out of "
        "context. The conversation is summarized below:\nFixed a.py."
    )
    return [
        _event("user", "Fix a.py", uuid="u1", sessionId="c1"),
        _event("assistant", [{"type": "text", "text": "Fixed."}], message={"id": "m1"}, uuid="a1"),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "manual", "preTokens": 9000},
            "uuid": "b1",
            "parentUuid": None,
        },
        _event("user", summary, uuid="u2", isCompactSummary=True, isVisibleInTranscriptOnly=True),
        _event("user", "Now b.py", uuid="u3"),
        _event("assistant", [{"type": "text", "text": "On it."}], message={"id": "m2"}, uuid="a2"),
    ]


def test_a_compaction_summary_is_a_user_turn_of_the_same_record(tmp_path: Path) -> None:
    bundle = _one(_write(tmp_path / "c1.jsonl", _compacted_session()))
    assert _kinds(bundle) == ["main"]
    record = bundle["records"][0]
    assert [(m["role"], m["content"]) for m in record["messages"][1:]] == [
        ("user", "Fix a.py"),
        ("assistant", "Fixed."),
        ("user", _compacted_session()[3]["message"]["content"] + "\n\nNow b.py"),
        ("assistant", "On it."),
    ]
    fidelity = record["meta_info"]["unique_info"]["_instance_metadata"]["fidelity"]
    assert fidelity == {"compaction_summaries": 1}


def test_tool_result_blocks_images_and_local_command_lines(tmp_path: Path) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}
    blocks = [
        {"type": "text", "text": "  first\n"},
        image,
        {"type": "tool_reference", "tool_name": "Monitor"},
        {"type": "text", "text": "second"},
    ]
    call = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/p.png"}}
    events = [
        _event("user", [{"type": "text", "text": "Look"}, image], uuid="u1", sessionId="i1"),
        _event("assistant", [call], message={"id": "m1"}, uuid="a1"),
        _event(
            "user", [{"type": "tool_result", "tool_use_id": "t1", "content": blocks}], uuid="r1"
        ),
        {
            "type": "system",
            "subtype": "local_command",
            "content": "<command-name>/cost</command-name>",
        },
        _event("assistant", [{"type": "text", "text": "Seen."}], message={"id": "m2"}, uuid="a2"),
        _event("user", "[Request interrupted by user]", uuid="u2"),
    ]
    bundle = _one(_write(tmp_path / "i1.jsonl", events))
    record = bundle["records"][0]
    assert [(m["role"], m["content"]) for m in record["messages"][1:]] == [
        ("user", "Look"),
        ("assistant", ""),
        ("tool", "  first\n\n\nsecond"),
        ("user", "<command-name>/cost</command-name>"),
        ("assistant", "Seen."),
    ]
    fidelity = record["meta_info"]["unique_info"]["_instance_metadata"]["fidelity"]
    assert fidelity == {
        "images_dropped": 2,
        "non_text_blocks_dropped": 1,
        "unanswered_user_turns_dropped": 1,
    }


# --- Harbor trials without ATIF ----------------------------------------------------------

WARMUPS = ("agent-36541525.jsonl", "agent-50243ee8.jsonl")
LAYOUT_2_0_SESSION = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
TASK_PROMPT = "Find where the greeting is printed."


def _2_0_trial(tmp_path: Path, shared_dir: Path) -> Path:
    """A Harbor trial (reward 1) whose Claude Code 2.0 logs are a session with one Task call,
    two real warmup sidechains and one real sidechain file that opens with its reply."""
    trial = tmp_path / "hello__2x0"
    project = trial / "agent" / "sessions" / "projects" / "-app"
    project.mkdir(parents=True)
    for name in WARMUPS:
        shutil.copyfile(shared_dir / CODEMIE / "tmp-private-2.0-layout" / name, project / name)
    ids = {"sessionId": LAYOUT_2_0_SESSION, "version": "2.0.64"}
    task = {
        "type": "tool_use",
        "id": "toolu_task",
        "name": "Task",
        "input": {"subagent_type": "Explore", "description": "find", "prompt": TASK_PROMPT},
    }
    report = [{"type": "text", "text": "It is in hello.py."}]
    _write(
        project / f"{LAYOUT_2_0_SESSION}.jsonl",
        [
            _event("user", "Where is hello printed?", uuid="u1", ts="2025-12-10T19:37:45Z", **ids),
            _event("assistant", [task], message={"id": "m1", "model": "claude-x"}, uuid="a1"),
            _event(
                "user",
                [{"type": "tool_result", "tool_use_id": "toolu_task", "content": report}],
                uuid="r1",
                toolUseResult={"status": "completed", "agentId": "feed0001", "content": report},
            ),
            _event(
                "assistant", [{"type": "text", "text": "hello.py"}], message={"id": "m2"}, uuid="a2"
            ),
        ],
    )
    grep = {"type": "tool_use", "id": "toolu_g", "name": "Grep", "input": {"pattern": "hello"}}
    side = {"isSidechain": True, "agentId": "feed0001", **ids}
    _write(
        project / "agent-feed0001.jsonl",
        [
            _event(
                "assistant", [grep], message={"id": "s1", "model": "claude-y"}, uuid="s-1", **side
            ),
            _event(
                "user",
                [{"type": "tool_result", "tool_use_id": "toolu_g", "content": "hello.py:3"}],
                uuid="s-2",
                toolUseResult={"mode": "content", "numFiles": 1},
                **side,
            ),
            _event(
                "assistant", report, message={"id": "s2", "model": "claude-y"}, uuid="s-3", **side
            ),
        ],
    )
    (trial / "verifier").mkdir()
    (trial / "verifier" / "reward.txt").write_text("1\n")
    result = {"trial_name": trial.name, "agent_info": {"name": "claude-code", "version": "2.0.64"}}
    (trial / "result.json").write_bytes(orjson.dumps(result))
    return trial


def test_harbor_trial_with_the_2_0_layout_keeps_its_main_record(
    tmp_path: Path, shared_dir: Path
) -> None:
    bundle = read_trial(_2_0_trial(tmp_path, shared_dir))
    assert bundle["format"] == "harbor-claude-code"
    assert bundle["rewards"] == {"reward": 1.0}
    assert _kinds(bundle) == ["main", "subagent"]
    main, sub = bundle["records"]
    assert sub["messages"][1] == {"role": "user", "content": TASK_PROMPT}
    assert sub["meta_info"]["unique_info"]["_parent_tool_call_id"] == "toolu_task"
    assert [m["content"] for m in main["messages"] if m["role"] == "tool"] == ["It is in hello.py."]
    assert [m["content"] for m in sub["messages"] if m["role"] == "tool"] == ["hello.py:3"]
    fidelity = main["meta_info"]["unique_info"]["_instance_metadata"]["fidelity"]
    assert fidelity["warmups_skipped"] == 2
    assert fidelity["subagent_prompts_from_calls"] == 1
    assert "missing_subagent_files" not in fidelity
    _no_markers_of_ours(bundle)
    for record in bundle["records"]:
        assert record_problem(record) is None


def test_harbor_trial_with_only_subagent_transcripts_is_refused(
    tmp_path: Path, shared_dir: Path
) -> None:
    trial = _2_0_trial(tmp_path, shared_dir)
    (trial / "agent" / "sessions" / "projects" / "-app" / f"{LAYOUT_2_0_SESSION}.jsonl").unlink()
    with pytest.raises(ReaderError, match=r"^no session file, only subagent transcripts"):
        native_records(claude_code, trial / "agent")
    bundle = read_trial(trial)
    assert bundle["records"] == []
    assert any("no session file, only subagent transcripts" in w for w in bundle["warnings"])


# --- conformance: the reader's output equals an independent count of every real file ------

REAL_SESSIONS = (HELLO, CLEAR_SESSION, REJECTED_SESSION, LAYOUT_2_1, LAYOUT_2_0)


@pytest.mark.parametrize("session", REAL_SESSIONS, ids=lambda p: Path(p).name[:24])
def test_real_sessions_match_their_independent_count(shared_dir: Path, session: str) -> None:
    path = shared_dir / session
    bundles: list[Mapping[str, Any]] = list(claude_code.read(path))
    counted = claude_code_counts(path)
    assert counted.assistant_turns > 0
    own = path.parent / path.stem
    sources = [p for p in path.parent.iterdir() if p.is_file()]
    sources += [p for p in own.rglob("*") if p.is_file()] if own.is_dir() else []
    problems = conformance_problems(bundles, counted, source_strings(sources))
    assert problems == []
