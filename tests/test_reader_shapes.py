"""Real log shapes that were refused or thinned, each written here from the documented formats
(formats.md §2-§3): Claude Code files opening with bookkeeping events, OpenCode streams that
never echo the prompt (standalone and inside a Harbor trial whose command log holds the
instruction), text-action ATIF, ATIF without a user step, nameless calls, and the one-line
reasons for near-miss files (an OpenHands event file, near-ATIF documents).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import orjson
import pytest
from reader_checks import assert_valid_records, good_trial, result_doc, write_trial

from transforms.readers import atif, claude_code, opencode
from transforms.readers.bundle import Bundle, ReaderError
from transforms.readers.detect import detect_format
from transforms.readers.discover import discover
from transforms.readers.harbor_trial import read_trial
from transforms.readers.openhands import read as read_openhands

SESSION = "9f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"


def _lines(*events: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def _cc(kind: str, uuid: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": SESSION,
        "timestamp": f"2026-07-02T10:00:0{uuid[-1]}.000Z",
        "message": message,
    }


CONVERSATION = (
    _cc("user", "u1", None, {"role": "user", "content": "Say hi."}),
    _cc(
        "assistant",
        "u2",
        "u1",
        {
            "id": "m1",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": "hi"}],
        },
    ),
)
BOOKKEEPING = {
    "summary": {"type": "summary", "summary": "Greeting", "leafUuid": "u2"},
    "file-history-snapshot": {
        "type": "file-history-snapshot",
        "messageId": "u1",
        "snapshot": {"messageId": "u1", "trackedFileBackups": {}},
        "isSnapshotUpdate": False,
    },
    "queue-operation": {
        "type": "queue-operation",
        "operation": "enqueue",
        "timestamp": "2026-07-02T10:00:00.000Z",
        "sessionId": SESSION,
        "content": "Say hi.",
    },
}


@pytest.mark.parametrize("first", sorted(BOOKKEEPING))
def test_claude_code_file_opening_with_a_non_message_event_is_read(
    tmp_path: Path, first: str
) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(_lines(BOOKKEEPING[first], BOOKKEEPING["summary"], *CONVERSATION))
    assert detect_format(path) == "claude-code"
    (bundle,) = claude_code.read(path)
    assert [m["content"] for m in bundle["records"][0]["messages"]] == ["", "Say hi.", "hi"]


# --- OpenCode `run --format json`: no user event ------------------------------------------


def _opencode_stream() -> bytes:
    def event(kind: str, part: dict[str, Any]) -> dict[str, Any]:
        return {"type": kind, "timestamp": 1767225600000, "sessionID": "ses_1", "part": part}

    tool_state = {"status": "completed", "input": {"command": "ls"}, "output": "a.py"}
    return _lines(
        event("step_start", {"type": "step-start"}),
        event("reasoning", {"type": "reasoning", "text": "List first."}),
        event("tool_use", {"type": "tool", "callID": "c1", "tool": "bash", "state": tool_state}),
        event("step_finish", {"type": "step-finish", "reason": "tool-calls", "cost": 0.001}),
        event("step_start", {"type": "step-start"}),
        event("text", {"type": "text", "text": "There is a.py."}),
        event("step_finish", {"type": "step-finish", "reason": "stop", "cost": 0.001}),
    )


INSTRUCTION = "List the files in /app, then say which one holds the tests.\nBe brief."


def test_opencode_stream_in_a_trial_takes_the_instruction_from_the_command_log(
    tmp_path: Path,
) -> None:
    command = (
        "opencode --model anthropic/claude-sonnet-4-5 run --format=json "
        f"{shlex.quote(INSTRUCTION)} 2>&1 | tee /logs/agent/opencode.txt"
    )
    result = result_doc("t1", {"reward": 1.0}, agent_info={"name": "opencode", "model_info": {}})
    trial = write_trial(
        tmp_path,
        "t1",
        {
            "result.json": result,
            "agent/command-0/command.txt": "mkdir -p /logs/agent",
            "agent/command-1/command.txt": command,
            "agent/opencode.txt": _opencode_stream(),
        },
    )
    bundle = read_trial(trial)
    assert bundle["format"] == "harbor-opencode"
    (record,) = bundle["records"]
    assert record["messages"][1] == {"role": "user", "content": INSTRUCTION}
    assert record["messages"][2]["reasoning_content"] == "List first."
    assert bundle["warnings"] == []
    assert_valid_records(bundle["records"])


def test_standalone_opencode_stream_without_a_prompt_is_kept_with_a_warning(
    tmp_path: Path,
) -> None:
    path = tmp_path / "opencode.txt"
    path.write_bytes(_opencode_stream())
    assert detect_format(path) == "opencode"
    (bundle,) = opencode.read(path)
    (record,) = bundle["records"]
    assert [m["role"] for m in record["messages"]][:3] == ["system", "user", "assistant"]
    assert record["messages"][1]["content"] == ""
    assert any("empty user message" in w for w in bundle["warnings"])


# --- ATIF shapes ---------------------------------------------------------------------------


def _atif(steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": "s",
        "agent": {"name": "my-agent", "version": "1"},
        "steps": steps,
        **extra,
    }


def _read_atif(tmp_path: Path, doc: dict[str, Any]) -> Bundle:
    path = tmp_path / "run.json"
    path.write_bytes(orjson.dumps(doc))
    (bundle,) = atif.read(path)
    return bundle


def test_text_action_atif_observations_are_user_messages(tmp_path: Path) -> None:
    """No function calling: the action is in the text, the observation comes back as a user
    turn (not a tool message answering no call)."""
    steps = [
        {"step_id": 1, "source": "user", "message": "Count the files."},
        {
            "step_id": 2,
            "source": "agent",
            "message": "```bash\nls | wc -l\n```",
            "observation": {"results": [{"content": "3"}]},
        },
        {"step_id": 3, "source": "agent", "message": "There are 3 files."},
    ]
    bundle = _read_atif(tmp_path, _atif(steps))
    (record,) = bundle["records"]
    assert [(m["role"], m["content"]) for m in record["messages"][1:]] == [
        ("user", "Count the files."),
        ("assistant", "```bash\nls | wc -l\n```"),
        ("user", "3"),
        ("assistant", "There are 3 files."),
    ]
    assert record["tools"] == []
    assert_valid_records(bundle["records"])


def _agent_steps() -> list[dict[str, Any]]:
    call = {"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "ls"}}
    return [
        {
            "step_id": 2,
            "source": "agent",
            "message": "Looking.",
            "tool_calls": [call],
            "observation": {"results": [{"source_call_id": "c1", "content": "a.py"}]},
        },
        {"step_id": 3, "source": "agent", "message": "Done."},
    ]


def test_atif_without_a_user_step_keeps_its_steps_and_warns(tmp_path: Path) -> None:
    system = {"step_id": 1, "source": "system", "message": "You are an agent."}
    bundle = _read_atif(tmp_path, _atif([system, *_agent_steps()]))
    (record,) = bundle["records"]
    roles = [m["role"] for m in record["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert any("no user message" in w for w in bundle["warnings"])
    assert_valid_records(bundle["records"])


def test_atif_without_a_user_step_in_a_trial_takes_the_instruction(tmp_path: Path) -> None:
    doc = _atif(_agent_steps())
    command = f"claude --output-format stream-json -p {shlex.quote(INSTRUCTION)} </dev/null"
    trial = good_trial(
        tmp_path,
        "t2",
        {"agent/trajectory.json": doc, "agent/command-0/command.txt": command},
    )
    bundle = read_trial(trial)
    assert bundle["records"][0]["messages"][1] == {"role": "user", "content": INSTRUCTION}
    assert not any("no user message" in w for w in bundle["warnings"])


def test_dropped_steps_are_counted_in_a_warning(tmp_path: Path) -> None:
    steps = [
        {"step_id": 1, "source": "user", "message": "Go."},
        {"step_id": 2, "source": "agent", "message": "old", "is_copied_context": True},
        {"step_id": 3, "source": "agent", "message": "dispatch", "llm_call_count": 0},
        {"step_id": 4, "source": "environment", "message": "?"},
        *_agent_steps(),
    ]
    warnings = _read_atif(tmp_path, _atif(steps))["warnings"]
    assert "run.json: 1 step(s) dropped: copied context (is_copied_context, an SFT rule)" in (
        warnings
    )
    assert any("1 step(s) dropped: no model call (llm_call_count 0" in w for w in warnings)
    assert "run.json: 1 step(s) dropped: unknown source 'environment'" in warnings


def test_forced_atif_on_a_near_atif_file_warns_and_names_calls(tmp_path: Path) -> None:
    """OpenAI-shaped calls in an ATIF-like file: read with their names, and warned."""
    openai_call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    steps = [
        {"step_id": 1, "source": "user", "message": "Go."},
        {"step_id": 2, "source": "agent", "message": "", "tool_calls": [openai_call]},
    ]
    bundle = _read_atif(tmp_path, _atif(steps))
    call = bundle["records"][0]["messages"][2]["tool_calls"][0]
    assert call["function"]["name"] == "bash" and call["id"] == "c1"
    assert any("OpenAI-shaped" in w and "function_name" in w for w in bundle["warnings"])


def test_a_call_without_a_name_is_a_bundle_warning(tmp_path: Path) -> None:
    steps = [
        {"step_id": 1, "source": "user", "message": "Go."},
        {
            "step_id": 2,
            "source": "agent",
            "message": "",
            "tool_calls": [{"tool_call_id": "c1", "tool": "bash", "arguments": {}}],
            "observation": {"results": [{"source_call_id": "c1", "content": "ok"}]},
        },
        {"step_id": 3, "source": "agent", "message": "Done."},
    ]
    bundle = _read_atif(tmp_path, _atif(steps))
    expected = "1 tool call(s) have no name"
    assert any(expected in w for w in bundle["warnings"])
    metadata = bundle["records"][0]["meta_info"]["unique_info"]["_instance_metadata"]
    assert any(expected in w for w in metadata["warnings"])


# --- one-line reasons for near misses ------------------------------------------------------


def _refusal(path: Path) -> str:
    with pytest.raises(ReaderError) as caught:
        detect_format(path)
    return str(caught.value)


@pytest.mark.parametrize(
    ("doc", "named"),
    [
        ({"session_id": "s", "steps": [{"step_id": 1, "source": "user"}]}, "no `schema_version`"),
        (
            {"schema_version": "1.7", "steps": [{"step_id": 1, "source": "user"}]},
            "`schema_version` is '1.7'",
        ),
        (
            {
                "schema_version": "ATIF-v1.7",
                "steps": [{"step_id": 1, "role": "user", "message": "hi"}],
            },
            "step 1 has `role` ('user') instead of ATIF's `source`",
        ),
    ],
)
def test_near_atif_documents_name_the_field_that_breaks_the_schema(
    tmp_path: Path, doc: dict[str, Any], named: str
) -> None:
    path = tmp_path / "trajectory.json"
    # pretty-printed, as agents write it: the first line alone is no JSON object
    path.write_text(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    if doc.get("schema_version") == "ATIF-v1.7":
        assert detect_format(path) == "atif"  # an ATIF version: read, with the problem warned
        (bundle,) = atif.read(path)
        assert any(named in w for w in bundle["warnings"])
        return
    reason = _refusal(path)
    assert "ATIF-like trajectory" in reason and named in reason
    assert "--format atif" in reason


def _events() -> list[dict[str, Any]]:
    return [
        {"id": 0, "timestamp": "2026-07-02T10:00:00", "source": "user", "message": "Say hi.",
         "action": "message", "args": {"content": "Say hi."}},
        {"id": 1, "timestamp": "2026-07-02T10:00:01", "source": "agent", "message": "hi",
         "action": "message", "args": {"content": "hi"}},
    ]  # fmt: skip


def test_an_openhands_event_file_is_refused_naming_what_to_give(tmp_path: Path) -> None:
    events = tmp_path / "sessions" / "abc" / "events"
    events.mkdir(parents=True)
    for event in _events():
        (events / f"{event['id']}.json").write_bytes(orjson.dumps(event))
    reason = _refusal(events / "1.json")
    assert "an OpenHands event, give the events folder or the trial" in reason
    assert detect_format(events) == "openhands"
    (unit,) = discover([tmp_path])
    assert (unit.path, unit.format) == (events, "openhands")
    (bundle,) = read_openhands(events)
    assert bundle["instance_id"] == "abc"
    assert [m["content"] for m in bundle["records"][0]["messages"]] == ["", "Say hi.", "hi"]
