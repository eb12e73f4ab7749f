"""OpenHands reader: the real native trajectories, Harbor's per-event files, refusals."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from reader_checks import native_records
from role_order import assert_valid_role_order

from scorers.im import validate_im_record
from scorers.tqs_v2 import score_record
from transforms.readers import openhands
from transforms.readers.bundle import Bundle, ReaderError

NATIVE = "data/real/native/openhands"
# file -> (main records, subagent records, assistant turns, tool calls)
EXPECTED = {
    "basic.json": (1, 0, 2, 2),
    "wrong_initial_state.json": (1, 0, 4, 4),
    "rfc-openhands_trajectory.json": (1, 0, 2, 2),
}


def _one(path: Path) -> Bundle:
    bundles = list(openhands.read(path))
    assert len(bundles) == 1
    return bundles[0]


def _calls(record: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for m in record["messages"]
        for c in m.get("tool_calls") or []
    ]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_trajectories_read_as_valid_records(shared_dir: Path, name: str) -> None:
    bundle = _one(shared_dir / NATIVE / name)
    mains = [r for r in bundle["records"] if r["meta_info"]["unique_info"]["_agent_type"] == "main"]
    subs = [
        r for r in bundle["records"] if r["meta_info"]["unique_info"]["_agent_type"] == "subagent"
    ]
    main_count, sub_count, turns, calls = EXPECTED[name]
    assert (len(mains), len(subs)) == (main_count, sub_count)
    assert bundle["warnings"] == []
    for record in bundle["records"]:
        validate_im_record(record)
        assert_valid_role_order(record)
    record = mains[0]
    assert record["meta_info"]["rounds"] == turns
    assert len(_calls(record)) == calls
    assert _calls(record)[-1][0] == "finish"  # every sample ends in `finish`
    assert record["meta_info"]["unique_info"]["_instance_metadata"]["scaffold"] == "openhands"
    score = score_record(record)
    assert score is not None and score["sub_score"] == 1.0


def test_system_prompt_tools_and_what_the_model_saw(shared_dir: Path) -> None:
    record = _one(shared_dir / NATIVE / "rfc-openhands_trajectory.json")["records"][0]
    system, user, run, result, finish = record["messages"]
    assert system["content"].startswith("You are OpenHands agent")
    tools = "execute_bash think finish execute_ipython_cell task_tracker str_replace_editor"
    assert [t["function"]["name"] for t in record["tools"]] == tools.split()
    assert (
        user["content"] == 'Create a file called hello.txt with "Hello, world!" as the content.\n'
    )
    assert run["tool_calls"][0]["id"] == "call_ruehvjC2P8Qd6aIW5wqdqL7J"
    assert json.loads(run["tool_calls"][0]["function"]["arguments"])["timeout"] == 120
    assert result["content"] == (
        "Created /app/hello.txt\nSize: 14 bytes\nContent: Hello, world!"
        "\n[The command completed with exit code 0.]"
    )
    assert json.loads(finish["tool_calls"][0]["function"]["arguments"])["message"].startswith(
        "Created"
    )
    info = record["meta_info"]["unique_info"]
    assert info["_instance_metadata"]["agent"] == {
        "name": "openhands",
        "version": "0.58.0",
        "model": "gpt-5-2025-08-07",
    }
    assert info["_usage"] == {
        "total_prompt_tokens": 11859,
        "total_completion_tokens": 1086,
        "total_cached_tokens": 5632,
        "total_cost_usd": 0.01934775,
    }


def test_without_a_system_event_tools_are_rebuilt_and_editor_output_is_used(
    shared_dir: Path,
) -> None:
    record = _one(shared_dir / NATIVE / "basic.json")["records"][0]
    assert record["messages"][0]["content"] == ""
    assert [t["function"]["name"] for t in record["tools"]] == ["str_replace_editor", "finish"]
    # The editor's own output, not the diff OpenHands stores for display.
    assert (
        record["messages"][3]["content"] == "File created successfully at: /workspace/game_2048.py"
    )


def test_harbor_event_files_give_the_same_record(tmp_path: Path, shared_dir: Path) -> None:
    events = orjson.loads((shared_dir / NATIVE / "rfc-openhands_trajectory.json").read_bytes())
    folder = tmp_path / "agent" / "sessions" / "abc" / "events"
    folder.mkdir(parents=True)
    for event in events:  # written out of order: the reader sorts by the numeric file name
        (folder / f"{event['id']}.json").write_bytes(orjson.dumps(event))
    found = native_records(openhands, tmp_path / "agent", "hello__1")
    assert found is not None
    (record,), warnings = found
    assert warnings == []
    standalone = _one(shared_dir / NATIVE / "rfc-openhands_trajectory.json")["records"][0]
    assert record["messages"] == standalone["messages"]
    assert record["meta_info"]["unique_info"]["_instance_id"] == "hello__1"
    assert native_records(openhands, tmp_path) is None


def _action(event_id: int, response: str, call: str, command: str) -> dict[str, Any]:
    tool_calls = [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "execute_bash", "arguments": json.dumps({"command": f"cmd{i}"})},
        }
        for i in (1, 2)
    ]
    metadata = {
        "function_name": "execute_bash",
        "tool_call_id": call,
        "model_response": {
            "id": response,
            "model": "m",
            "choices": [{"message": {"content": "Two at once.", "tool_calls": tool_calls}}],
        },
        "total_calls_in_response": 2,
    }
    return {
        "id": event_id,
        "source": "agent",
        "action": "run",
        "args": {"command": command},
        "tool_call_metadata": metadata,
    }


def test_calls_of_one_response_are_one_assistant_message(tmp_path: Path) -> None:
    events = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "Run both."}},
        _action(2, "r1", "c1", "cmd1"),
        {"id": 3, "source": "agent", "observation": "run", "cause": 2, "content": "out1"},
        _action(4, "r1", "c2", "cmd2"),
        {"id": 5, "source": "agent", "observation": "run", "cause": 4, "content": "out2"},
        {"id": 6, "source": "environment", "observation": "agent_state_changed", "content": ""},
        {"id": 7, "source": "agent", "action": "message", "args": {"content": "Both ran."}},
    ]
    path = tmp_path / "events.json"
    path.write_bytes(orjson.dumps(events))
    record = _one(path)["records"][0]
    assert [m["role"] for m in record["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert [c["id"] for c in record["messages"][2]["tool_calls"]] == ["c1", "c2"]
    assert [m["content"] for m in record["messages"][3:]] == ["out1", "out2", "Both ran."]
    assert_valid_role_order(record)


def _raw(content: bytes) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / "trajectory.json"
        path.write_bytes(content)
        return path

    return make


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (_raw(b""), "^empty file$"),
        (
            _raw(b'[{"id": 0, "source": "user", "action": "mess'),
            r"^invalid JSON: .* \(the file looks truncated\)$",
        ),
        (_raw(b'{"events": []}'), "^expected a JSON array of OpenHands events, got a JSON object$"),
        (
            _raw(b'[1, "two", {"id": 3}]'),
            r"^no OpenHands events \(objects with an `action` or `observation`\)$",
        ),
        (
            _raw(b'[{"id": 0, "source": "agent", "action": "system", "args": {"content": "hi"}}]'),
            "^no messages",
        ),
    ],
    ids=["empty", "truncated", "object", "no-events", "no-conversation"],
)
def test_refused_inputs_say_why(tmp_path: Path, make: Callable[[Path], Path], reason: str) -> None:
    with pytest.raises(ReaderError, match=reason):
        list(openhands.read(make(tmp_path)))
