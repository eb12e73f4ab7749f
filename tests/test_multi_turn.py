"""Multi-turn sessions are valid records (formats.md §4, corrected) and survive a whole run.

The fixture is a Harbor trial written for this test in Claude Code's documented session
shape (`sessions/projects/<cwd>/<session>.jsonl` + `<session>/subagents/agent-<id>.jsonl`):
the user asks a question, the agent reads a file and answers in text, the user follows up
("please fix it"), and the agent delegates a search to a subagent, edits, tests and reports.
The file opens with `summary` and `file-history-snapshot` bookkeeping lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from role_order import role_order_errors

from pipelines.cli import main
from scorers.im_validity import record_problem, role_order_problem

FIXTURES = Path(__file__).parent / "fixtures" / "readers"
JOBS = FIXTURES / "multi-turn-claude-code"
JOB = "2026-07-01__09-00-00"
TRIAL = "fix-date-parsing__Ab3dE7q"
FOLLOW_UP = "Please fix it and check that nothing else calls it with the old format."


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def run_records(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """`trajcurate run` on the in-process DirectRunner, default gate (resolved trials)."""
    out = tmp_path_factory.mktemp("multi-turn")
    argv = ["run", "--no-progress", "--output", str(out), "--input", str(JOBS)]
    assert main([*argv, "--runner", "DirectRunner", "--direct_running_mode", "in_memory"]) == 0
    assert _jsonl(out / JOB / "rejects.jsonl") == []
    return _jsonl(out / JOB / "im.jsonl")


def test_the_session_and_its_subagent_are_written(run_records: list[dict[str, Any]]) -> None:
    kinds = [r["meta_info"]["unique_info"]["_agent_type"] for r in run_records]
    assert kinds == ["main", "subagent"]
    assert {r["meta_info"]["unique_info"]["_instance_id"] for r in run_records} == {TRIAL}
    for record in run_records:
        assert record_problem(record) is None
        assert role_order_errors(record) == []


def test_the_follow_up_request_comes_after_the_text_answer(
    run_records: list[dict[str, Any]],
) -> None:
    main_record = run_records[0]
    messages = [m for m in main_record["messages"] if m["role"] != "system"]
    roles = [m["role"] for m in messages]
    assert roles == [
        "user",
        "assistant",
        "tool",
        "assistant",  # the text answer, no tool_calls
        "user",  # the follow-up request
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    answer, follow_up = messages[3], messages[4]
    assert not answer.get("tool_calls") and "day-month-year" in answer["content"]
    assert follow_up["content"] == FOLLOW_UP
    assert main_record["meta_info"]["rounds"] == 6
    subagent = run_records[1]
    assert subagent["messages"][1]["content"].startswith("List every caller of parse_date")


def _record(*messages: dict[str, Any]) -> dict[str, Any]:
    tools = [
        {"type": "function", "function": {"name": "Bash", "description": "", "parameters": {}}}
    ]
    return {"tools": tools, "messages": [{"role": "system", "content": ""}, *messages]}


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "Bash", "arguments": "{}"}}


USER = {"role": "user", "content": "q"}
TEXT = {"role": "assistant", "content": "a", "reasoning_content": ""}


def _calls(*ids: str) -> dict[str, Any]:
    return {**TEXT, "tool_calls": [_call(i) for i in ids]}


def _tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "content": "r", "tool_call_id": call_id}


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        # a text answer, a follow-up, then tool use: valid in a tool-calling record
        ((USER, TEXT, USER, _calls("a"), _tool("a"), TEXT), None),
        ((USER, _calls("a", "b"), _tool("a"), _tool("b"), TEXT, USER, TEXT), None),
        # a run cut off after its last calls
        ((USER, _calls("a"), _tool("a"), _calls("b")), None),
        # a call whose result was lost is tolerated, the others answered in order
        ((USER, _calls("a", "b"), _tool("b"), TEXT), None),
        ((USER, TEXT, _tool("x"), TEXT), "without tool_calls"),
        ((USER, _calls("a"), _tool("zz"), TEXT), "tool calls are ['a']"),
        ((USER, _calls("a", "b"), _tool("b"), _tool("a"), TEXT), "in call order"),
        ((USER, _calls("a"), USER, TEXT), "not answered by tool messages"),
    ],
)
def test_role_order_follows_the_corrected_rule(
    messages: tuple[dict[str, Any], ...], problem: str | None
) -> None:
    found = role_order_problem(_record(*messages))
    if problem is None:
        assert found is None
        assert role_order_errors(_record(*messages)) == []
    else:
        assert found is not None and problem in found
        assert role_order_errors(_record(*messages)) != []
