"""TQS V2 scaffolds: detection (§1, §14.8), ending rules (§5, §10, §14.10), subagents, and the
dataset-level tool-call error counts (§13)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tqs_builders import (
    CLAUDE_CODE_SYSTEM,
    CLAUDE_CODE_TOOLS,
    OPENCODE_SYSTEM,
    TASK,
    Message,
    assistant,
    bash_step,
    call,
    claude_code_record,
    im_record,
    opencode_record,
    step,
    terminus_answer,
    terminus_record,
    tool_schema,
)

from scorers.tqs_v2 import count_tool_call_errors, score_and_count, score_record
from scorers.tqs_v2.tools import (
    ACTION_KINDS,
    CLAUDE_CODE_NAMES,
    EXECUTION_NAMES,
    KNOWN_NAMES,
    action_kind,
    canonical_name_by_parameters,
    detect_scaffold,
)


def record_with(tools: list[dict[str, Any]] | None, system: str = "") -> dict[str, Any]:
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": TASK},
        assistant("Done."),
    ]
    return im_record(messages, tools)


def scaffold_of(tools: list[dict[str, Any]] | None, system: str = "") -> str:
    result = score_record(record_with(tools, system))
    assert result is not None
    return str(result["scaffold"])


# --- detection ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "system", "expected"),
    [
        pytest.param([], "", "terminus2", id="no-tools"),
        pytest.param(["terminal", "file_editor", "finish"], "", "openhands_sdk", id="sdk-subset"),
        pytest.param(["terminal", "file_editor", "browser"], "", "openhands", id="sdk-plus-other"),
        pytest.param(["Bash", "Read"], CLAUDE_CODE_SYSTEM, "claudecode", id="claude-code"),
        pytest.param(["Bash", "Read"], "Made by ANTHROPIC.", "claudecode", id="anthropic"),
        pytest.param(["bash", "read"], OPENCODE_SYSTEM, "opencode", id="opencode"),
        pytest.param(["Bash"], "x" * 500 + "Claude Code", "opencode", id="beyond-500-chars"),
        pytest.param(["TodoWrite", "search"], "", "opencode", id="any-claude-name"),
        pytest.param(["execute_bash", "str_replace_editor"], "", "openhands", id="openhands"),
    ],
)
def test_detect_scaffold(names: list[str], system: str, expected: str) -> None:
    assert detect_scaffold([n.lower() for n in names], system) == expected
    assert scaffold_of([tool_schema(n) for n in names], system) == expected


def test_tools_null_or_nameless_is_terminus2() -> None:
    assert scaffold_of(None) == "terminus2"
    assert scaffold_of([tool_schema("")]) == "terminus2"


def test_only_the_first_system_message_is_read() -> None:
    record = claude_code_record([assistant("Done.")])
    record["messages"][0]["content"] = "You are a helpful agent."
    record["messages"].insert(1, {"role": "system", "content": CLAUDE_CODE_SYSTEM})
    result = score_record(record)
    assert result is not None
    assert result["scaffold"] == "opencode"


@pytest.mark.parametrize(
    ("params", "canonical"),
    [
        (["task_completed", "message"], "finish"),
        (["thought"], "think"),
        (["thought", "command"], None),
        (["task_list", "command"], "task_tracker"),
        (["path", "old_str"], "str_replace_editor"),
        (["file_text"], "str_replace_editor"),
        (["command", "is_input"], "execute_bash"),
        (["command", "timeout"], "execute_bash"),
        (["command", "path"], "str_replace_editor"),
        (["command"], None),
    ],
    ids=lambda v: ",".join(v) if isinstance(v, list) else str(v),
)
def test_canonical_name_by_parameters(params: list[str], canonical: str | None) -> None:
    assert canonical_name_by_parameters(tuple(params)) == canonical


def test_canonicalisation_runs_before_detection() -> None:
    tools = [
        tool_schema("terminal", "command", "is_input"),
        tool_schema("ponder", "thought"),  # -> think
        tool_schema("done", "task_completed"),  # -> finish
    ]
    assert scaffold_of(tools) == "openhands_sdk"
    # `shell_exec` becomes execute_bash, which is not an SDK name.
    assert scaffold_of([*tools, tool_schema("shell_exec", "command", "timeout")]) == "openhands"
    # Known names keep their name whatever their parameters.
    assert scaffold_of([tool_schema("Bash", "command", "timeout")], CLAUDE_CODE_SYSTEM) == (
        "claudecode"
    )


def test_a_canonicalised_finish_tool_ends_an_openhands_run() -> None:
    tools = [tool_schema("run", "command", "timeout"), tool_schema("done", "task_completed")]
    messages = [
        {"role": "system", "content": ""},
        {"role": "user", "content": TASK},
        *bash_step("ls", name="run"),
        *step([call("done", task_completed="true")]),
    ]
    result = score_record(im_record(messages, tools))
    assert result is not None
    assert (result["scaffold"], result["sub_score"]) == ("openhands", 1.0)


def test_explicit_scaffold_overrides_detection() -> None:
    record = claude_code_record([bash_step("ls"), assistant("Done.")])
    result = score_record(record, scaffold="openhands")
    assert result is not None
    assert result["scaffold"] == "openhands"
    assert result["sub_score"] == 0.8  # the openhands text summary: "Done." is a weak word


# --- ending rules of claudecode / opencode (§5, §10, §14.10) --------------------------------

EDIT = step([call("Edit", file_path="a.py", old_string="a", new_string="b")])


@pytest.mark.parametrize(
    ("ending", "sub", "dpi"),
    [
        pytest.param([assistant("All good.")], 1.0, 1.0, id="final-text"),
        pytest.param([assistant("")], 1.0, 1.0, id="final-empty-text"),
        pytest.param([], 0.0, 0.6, id="final-tool-message"),
        pytest.param([assistant("", call("Bash", command="ls"))], 0.0, 0.6, id="final-tool-call"),
        pytest.param([{"role": "user", "content": "continue"}], 0.0, 0.6, id="final-user"),
    ],
)
@pytest.mark.parametrize("builder", [claude_code_record, opencode_record])
def test_tool_scaffold_endings(builder: Any, ending: list[Message], sub: float, dpi: float) -> None:
    result = score_record(builder([EDIT, *ending]))
    assert result is not None
    assert (result["sub_score"], result["dpi_score"]) == (sub, dpi)


# --- subagents and dataset tool-call error counts (§12, §13) --------------------------------


def test_subagent_records_are_not_scored_but_their_calls_are_counted() -> None:
    record = claude_code_record(
        [bash_step("frob", "bash: frob: command not found"), assistant("Done.")],
        agent_type="subagent",
    )
    assert score_record(record) is None
    assert count_tool_call_errors(record) == (1, 1)
    assert score_and_count(record) == (None, 1, 1)


def test_tool_call_errors_of_a_tool_call_record() -> None:
    record = claude_code_record(
        [
            bash_step("ls"),
            bash_step("frob", "bash: frob: command not found"),
            step([call("Read", file_path="x.py")], ["<tool_use_error>No file</tool_use_error>"]),
            step([call("Read", file_path="y.py")], ["Permission denied"]),  # HARD: exec only
            bash_step("pytest", "FAILED tests/test_a.py::t\n1 failed"),  # formal: no SOFT
            bash_step("python x.py", "Traceback (most recent call last):\nValueError"),
            bash_step("pytest", "bash: pytest: command not found"),  # HARD even on formal
            assistant("", call("Bash", command="ls"), call("Bash", command="pwd")),
            {"role": "tool", "content": "ok"},  # the second call has no observation
            assistant("Done."),
        ]
    )
    expected = (8, 4)
    assert count_tool_call_errors(record) == expected
    score, calls, errors = score_and_count(record)
    assert (calls, errors) == expected
    assert score == score_record(record)
    assert score is not None
    assert score["total_tool_calls"] == 9


def test_terminus_counts_every_command_but_one_error_per_observation() -> None:
    answers = [
        terminus_answer("frob\n", "frob\n", "frob\n"),
        terminus_answer("ls\n", "pwd\n"),
        "{not json",
        terminus_answer(task_complete=True),
    ]
    outputs = ["bash: frob: command not found\n" * 3, "src\n/app", "Previous response had errors"]
    record = terminus_record(answers, outputs)
    assert count_tool_call_errors(record) == (5, 1)
    score, calls, errors = score_and_count(record)
    assert (calls, errors) == (5, 1)
    assert score is not None
    assert (score["scaffold"], score["total_tool_calls"]) == ("terminus2", 5)


def test_terminus_total_tool_calls_counts_non_empty_keystrokes() -> None:
    answers = [terminus_answer("ls\n", "", "pwd\n"), terminus_answer(task_complete=True)]
    result = score_record(terminus_record(answers, ["src\n/app"]))
    assert result is not None
    assert result["total_tool_calls"] == 2


def test_total_tool_calls_skips_nameless_calls() -> None:
    nameless = call("")
    record = claude_code_record([step([call("Bash", command="ls"), nameless]), assistant("ok")])
    result = score_record(record)
    assert result is not None
    assert result["total_tool_calls"] == 1


def test_claude_code_builder_uses_claude_code_tools() -> None:
    """Guard the builders: the declared tools and prompt make a claudecode record."""
    record = claude_code_record([assistant("Done.")])
    assert record["tools"] == CLAUDE_CODE_TOOLS
    assert scaffold_of(record["tools"], CLAUDE_CODE_SYSTEM) == "claudecode"


KNOWN_TOOL_NAMES = sorted(KNOWN_NAMES | CLAUDE_CODE_NAMES | EXECUTION_NAMES)


@given(
    name=st.one_of(st.sampled_from(KNOWN_TOOL_NAMES), st.text(max_size=12)),
    command=st.sampled_from(["view", "create", "str_replace", "insert", "undo_edit", "ls", 3]),
)
def test_action_kinds_are_the_seven_tte_counts(name: str, command: object) -> None:
    # TTE normalises by log2(7 * 7) and counts bigrams of these seven kinds.
    assert len(ACTION_KINDS) == 7
    assert action_kind(name, {"command": command}) in ACTION_KINDS
