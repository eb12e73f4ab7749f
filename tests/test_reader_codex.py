"""The Codex CLI rollout reader: the real rollout, a Harbor trial, each item kind, bad input."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from conformance.check import conformance_problems, source_strings
from conformance.sources import codex as codex_counter
from reader_checks import assert_valid_records, native_records

from transforms.readers import codex
from transforms.readers.bundle import Bundle, ReaderError

REAL_NAME = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
META = {
    "id": "s-1",
    "timestamp": "2026-05-11T08:00:00Z",
    "cwd": "/work",
    "originator": "codex_exec",
    "cli_version": "0.125.0",
    "source": "exec",
    "model_provider": "openai",
    "base_instructions": {"text": "You are Codex."},
}


def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-05-11T08:00:01Z", "type": kind, "payload": payload}


def item(**payload: Any) -> dict[str, Any]:
    return line("response_item", payload)


def text_message(role: str, *texts: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return item(type="message", role=role, content=[{"type": kind, "text": t} for t in texts])


def write_rollout(path: Path, lines: Sequence[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = [x if isinstance(x, bytes) else orjson.dumps(x) for x in lines]
    path.write_bytes(b"\n".join(raw) + b"\n")
    return path


def read_one(path: Path) -> Bundle:
    bundles = list(codex.read(path))
    assert len(bundles) == 1
    assert_valid_records(bundles[0]["records"])
    return bundles[0]


def fidelity(record: dict[str, Any]) -> dict[str, int]:
    found: dict[str, int] = record["meta_info"]["unique_info"]["_instance_metadata"]["fidelity"]
    return found


def conversation(meta: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A small session using every item kind Codex writes."""
    return [
        line("session_meta", meta or META),
        text_message("developer", "<permissions instructions>sandboxed</permissions instructions>"),
        text_message("user", "<environment_context>\n  <cwd>/work</cwd>\n</environment_context>"),
        line("turn_context", {"cwd": "/work", "model": "gpt-5.5", "summary": "auto"}),
        text_message("user", "fix the bug"),
        line("event_msg", {"type": "user_message", "message": "fix the bug"}),
        item(
            type="reasoning",
            summary=[{"type": "summary_text", "text": "**Looking around**"}],
            content=None,
            encrypted_content="gAAAA",
        ),
        item(type="function_call", name="exec_command", arguments='{"cmd":"ls"}', call_id="c1"),
        item(type="function_call_output", call_id="c1", output="  a.py\n"),
        line("event_msg", {"type": "exec_command_end", "call_id": "c1", "stdout": "a.py"}),
        item(
            type="custom_tool_call",
            status="completed",
            call_id="c2",
            name="apply_patch",
            input="*** Begin Patch\n*** End Patch\n",
        ),
        item(
            type="custom_tool_call_output",
            call_id="c2",
            output='{"output":"Success.","metadata":{"exit_code":0}}',
        ),
        item(
            type="local_shell_call",
            call_id="c3",
            status="completed",
            action={"type": "exec", "command": ["pytest", "-q"], "timeout_ms": 1000},
        ),
        item(
            type="function_call_output",
            call_id="c3",
            output=[
                {"type": "input_text", "text": "1 passed"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                {"type": "input_text", "text": "done"},
            ],
        ),
        item(type="web_search_call", status="completed", action={"type": "search", "query": "x"}),
        item(type="reasoning", summary=[], content=[{"type": "reasoning_text", "text": "raw"}]),
        item(type="message", role="assistant", phase="final_answer",
             content=[{"type": "output_text", "text": "Fixed it."}]),
        line("event_msg", {"type": "agent_message", "message": "Fixed it."}),
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 7,
            "reasoning_output_tokens": 3, "total_tokens": 107}}}),
        line("event_msg", {"type": "task_complete", "last_agent_message": "Fixed it."}),
    ]  # fmt: skip


# --- the real rollout ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_rollout(shared_dir: Path) -> Path:
    return shared_dir / "data" / "real" / "native" / "codex" / REAL_NAME


def test_real_rollout_equals_the_counter(real_rollout: Path) -> None:
    bundle = read_one(real_rollout)
    counted = codex_counter.count(real_rollout)
    assert conformance_problems([bundle], counted, source_strings([real_rollout])) == []
    assert (counted.user_prompts, counted.assistant_turns, counted.subagents) == (2, 69, 0)
    assert len(counted.tool_calls) == len(counted.tool_results) == 105


def test_real_rollout_keeps_every_call_and_result(real_rollout: Path) -> None:
    record = read_one(real_rollout)["records"][0]
    source = [orjson.loads(raw) for raw in real_rollout.read_bytes().splitlines()]
    payloads = [x["payload"] for x in source if x["type"] == "response_item"]
    call_ids = [
        p["call_id"] for p in payloads if p["type"] in ("function_call", "custom_tool_call")
    ]
    outputs = {
        p["call_id"]: p["output"]
        for p in payloads
        if p["type"] in ("function_call_output", "custom_tool_call_output")
    }
    calls = [c for m in record["messages"] for c in m.get("tool_calls") or []]
    tools = {m["tool_call_id"]: m["content"] for m in record["messages"] if m["role"] == "tool"}
    assert [c["id"] for c in calls if not c["id"].startswith("web_search")] == call_ids
    assert sum(c["function"]["name"] == "web_search" for c in calls) == 3
    assert all(tools[call_id] == outputs[call_id] for call_id in call_ids)
    meta = record["meta_info"]["unique_info"]
    assert record["messages"][0]["content"].startswith("You are Codex, a coding agent")
    assert "<permissions instructions>" in record["messages"][0]["content"]
    assert record["messages"][1]["content"].endswith("show tools")
    assert meta["_instance_metadata"]["agent"] == {
        "name": "codex",
        "version": "0.125.0",
        "model": "gpt-5.5",
    }
    assert meta["_instance_metadata"]["codex_session_id"] == "019e1625-789d-76c0-80ab-3724b5ddb799"
    assert meta["_usage"]["total_prompt_tokens"] == 6055836
    assert fidelity(record)["duplicate_events_skipped"] == 64
    assert fidelity(record)["encrypted_reasoning_skipped"] == 25


def test_real_rollout_in_a_harbor_trial(real_rollout: Path, tmp_path: Path) -> None:
    sessions = tmp_path / "trial" / "agent" / "sessions" / "2026" / "05" / "11"
    sessions.mkdir(parents=True)
    shutil.copy(real_rollout, sessions / REAL_NAME)
    found = native_records(codex, tmp_path / "trial" / "agent", instance_id="trial")
    assert found is not None
    records, warnings = found
    assert_valid_records(records)
    assert len(records) == 1 and warnings == []
    standalone = read_one(real_rollout)["records"][0]
    assert records[0]["messages"] == standalone["messages"]


# --- crafted rollouts ----------------------------------------------------------------------


def test_each_item_kind(tmp_path: Path) -> None:
    record = read_one(write_rollout(tmp_path / "rollout-a.jsonl", conversation()))["records"][0]
    messages = record["messages"]
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
        "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert messages[0]["content"] == (
        "You are Codex.\n\n<permissions instructions>sandboxed</permissions instructions>"
    )
    assert messages[1]["content"] == (
        "<environment_context>\n  <cwd>/work</cwd>\n</environment_context>\n\nfix the bug"
    )
    assert messages[2]["reasoning_content"] == "**Looking around**"
    assert messages[2]["tool_calls"][0]["function"] == {
        "name": "exec_command",
        "arguments": '{"cmd":"ls"}',
    }
    assert messages[3] == {"role": "tool", "content": "  a.py\n", "tool_call_id": "c1",
                           "name": "exec_command"}  # fmt: skip
    patch = messages[4]["tool_calls"][0]["function"]
    assert orjson.loads(patch["arguments"]) == {"input": "*** Begin Patch\n*** End Patch\n"}
    assert messages[5]["content"] == '{"output":"Success.","metadata":{"exit_code":0}}'
    shell = orjson.loads(messages[6]["tool_calls"][0]["function"]["arguments"])
    assert shell["command"] == ["pytest", "-q"]
    assert messages[7]["content"] == "1 passed\n\ndone"
    search = messages[8]["tool_calls"][0]
    assert search["function"]["name"] == "web_search"
    assert messages[9] == {"role": "tool", "content": "", "tool_call_id": search["id"],
                           "name": "web_search"}  # fmt: skip
    assert messages[10]["content"] == "Fixed it."
    assert messages[10]["reasoning_content"] == "raw"
    info = record["meta_info"]["unique_info"]
    assert info["_usage"]["total_completion_tokens"] == 7
    assert info["_instance_metadata"]["agent"]["model"] == "gpt-5.5"
    assert fidelity(record) == {
        "duplicate_events_skipped": 3,
        "encrypted_reasoning_skipped": 1,
        "images_dropped": 1,
        "instructions_joined_to_system": 1,
        "ui_events_skipped": 1,
        "web_search_results_absent": 1,
    }


def test_crafted_rollout_equals_the_counter(tmp_path: Path) -> None:
    path = write_rollout(tmp_path / "rollout-a.jsonl", conversation())
    counted = codex_counter.count(path)
    assert conformance_problems(list(codex.read(path)), counted, source_strings([path])) == []
    assert (counted.user_prompts, counted.assistant_turns, len(counted.tool_calls)) == (1, 5, 4)


def test_later_developer_message_is_a_user_turn(tmp_path: Path) -> None:
    lines = [
        *conversation()[:-4],
        text_message("developer", "<collaboration_mode>plan</collaboration_mode>"),
        text_message("user", "and now?"),
        text_message("assistant", "Planned."),
    ]
    record = read_one(write_rollout(tmp_path / "rollout-b.jsonl", lines))["records"][0]
    assert record["messages"][-2] == {
        "role": "user",
        "content": "<collaboration_mode>plan</collaboration_mode>\n\nand now?",
    }
    assert fidelity(record)["developer_messages_as_user"] == 1


def test_unanswered_tail_and_interruption_are_reported(tmp_path: Path) -> None:
    lines = [
        line("session_meta", META),
        text_message("user", "go"),
        item(type="function_call", name="exec_command", arguments="{}", call_id="c1"),
        item(type="function_call_output", call_id="c1", output="ok"),
        line("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        line("compacted", {"message": "summary"}),
    ]
    bundle = read_one(write_rollout(tmp_path / "rollout-c.jsonl", lines))
    record = bundle["records"][0]
    assert record["messages"][-1]["role"] == "assistant"
    assert fidelity(record)["unanswered_tool_results_dropped"] == 1
    assert fidelity(record)["compactions"] == 1
    assert any("interrupted" in w for w in bundle["warnings"])
    assert any("compacted 1 time" in w for w in bundle["warnings"])


def test_failed_output_object_is_flagged(tmp_path: Path) -> None:
    lines = [
        line("session_meta", META),
        text_message("user", "go"),
        item(type="function_call", name="exec_command", arguments="{}", call_id="c1"),
        item(
            type="function_call_output", call_id="c1", output={"content": "boom", "success": False}
        ),
        text_message("assistant", "It failed."),
    ]
    record = read_one(write_rollout(tmp_path / "rollout-d.jsonl", lines))["records"][0]
    assert record["messages"][3]["content"] == "boom"
    assert record["meta_info"]["unique_info"]["_instance_metadata"]["errored_tool_call_ids"] == [
        "c1"
    ]


def test_older_rollout_form(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"id": "5973b6c0", "timestamp": "2025-05-07T17:24:21Z", "instructions": None},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"record_type": "state"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hello"}],
        },
    ]
    assert codex.looks_like_codex(lines[0])
    bundle = read_one(write_rollout(tmp_path / "rollout-old.jsonl", lines))
    assert [m["content"] for m in bundle["records"][0]["messages"]] == ["", "hi", "Hello"]
    assert any("no base_instructions" in w for w in bundle["warnings"])


def test_corrupt_lines_are_warned_and_skipped(tmp_path: Path) -> None:
    lines: list[dict[str, Any] | bytes] = [*conversation()[:5], b'{"timestamp": "x", "type": "resp']
    lines += [b"[1, 2]", text_message("assistant", "Done.")]
    bundle = read_one(write_rollout(tmp_path / "rollout-e.jsonl", lines))
    assert bundle["records"][0]["messages"][-1]["content"] == "Done."
    assert sum("skipped" in w for w in bundle["warnings"]) == 2


def test_no_conversation_is_refused(tmp_path: Path) -> None:
    lines = [line("session_meta", META), line("event_msg", {"type": "task_started"})]
    with pytest.raises(ReaderError, match="no conversation"):
        list(codex.read(write_rollout(tmp_path / "rollout-f.jsonl", lines)))


def test_not_a_rollout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReaderError, match="not a Codex rollout"):
        list(codex.read(write_rollout(tmp_path / "rollout-g.jsonl", [{"foo": 1}])))


def test_harbor_trial_with_a_subagent(tmp_path: Path) -> None:
    day = tmp_path / "trial" / "agent" / "sessions" / "2026" / "05" / "11"
    write_rollout(day / "rollout-2026-05-11T08-00-00-main.jsonl", conversation())
    child = {**META, "id": "s-2", "source": {"subagent": {"thread_spawn": {
        "parent_thread_id": "s-1", "depth": 1}}}}  # fmt: skip
    write_rollout(
        day / "rollout-2026-05-11T08-00-05-child.jsonl",
        [
            line("session_meta", child),
            text_message("user", "look"),
            text_message("assistant", "ok"),
        ],
    )
    (tmp_path / "trial" / "agent" / "codex.txt").write_text('{"type":"thread.started"}\n')
    found = native_records(codex, tmp_path / "trial" / "agent", instance_id="trial")
    assert found is not None
    records, _ = found
    assert_valid_records(records)
    assert [r["meta_info"]["unique_info"]["_agent_type"] for r in records] == ["main", "subagent"]
    assert records[1]["messages"][-1]["content"] == "ok"
    counted = codex_counter.count(day / "rollout-2026-05-11T08-00-00-main.jsonl")
    assert counted.subagents == 1 and counted.assistant_turns == 6


def test_trial_without_rollouts_is_not_codex(tmp_path: Path) -> None:
    (tmp_path / "trial" / "agent").mkdir(parents=True)
    assert native_records(codex, tmp_path / "trial" / "agent") is None


def test_looks_like_codex() -> None:
    assert codex.looks_like_codex(line("session_meta", META))
    assert codex.looks_like_codex(line("response_item", {"type": "message"}))
    assert not codex.looks_like_codex({"type": "session_meta", "payload": {"id": "x"}})
    assert not codex.looks_like_codex({"type": "user", "message": {}, "sessionId": "x"})
    assert not codex.looks_like_codex({"id": "x", "timestamp": "t"})
