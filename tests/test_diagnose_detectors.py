"""Each detector on hand-made trajectories: it fires on the failure it names, with the message
indexes of the evidence, and stays silent on the clean variant of the same run.

Message indexes count from 0 over `messages`: the builders put the system prompt at 0 and the
task at 1, so the first assistant message is 2 and its tool result 3.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tqs_builders import (
    CLAUDE_CODE_TOOLS,
    assistant,
    bash_step,
    call,
    claude_code_record,
    im_record,
    openhands_record,
    step,
    terminus_answer,
    terminus_record,
    tool,
    tool_schema,
)

from scorers.diagnose import diagnose_records
from scorers.diagnose.detectors import (
    detect_abandoned_subagent,
    detect_compaction_churn,
    detect_context_overflow,
    detect_error_storm,
    detect_hallucinated_tool,
    detect_invalid_tool_arguments,
    detect_loop,
    detect_no_successful_write,
    detect_repeated_error,
    detect_run_exception,
    detect_task_failure,
    detect_truncation,
    detect_unused_delegation,
    detect_unverified_finish,
)
from scorers.diagnose.model import Finding
from scorers.diagnose.view import AgentView

Record = dict[str, Any]
EDIT = call("Edit", file_path="src/app.py", old_string="a", new_string="b")
DONE = assistant("The fix is complete and all tests pass.")
TRACEBACK = 'Traceback (most recent call last):\n  File "x.py", line {n}\nValueError: bad input'


def view(record: Record) -> AgentView:
    return AgentView(record)


def edit_step(output: str = "The file src/app.py has been updated.") -> list[dict[str, Any]]:
    return step([call("Edit", file_path="src/app.py", old_string="a", new_string="b")], [output])


def clean_run() -> Record:
    """Read, edit, test (passing), answer: nothing should fire on it."""
    return claude_code_record(
        [
            step([call("Read", file_path="src/app.py")], ["def f(): return 1"]),
            edit_step(),
            bash_step("python -m pytest -q", "3 passed in 0.12s"),
            DONE,
        ]
    )


def with_meta(record: Record, **metadata: Any) -> Record:
    record["meta_info"]["unique_info"]["_instance_metadata"] = metadata
    return record


def test_a_clean_run_fires_nothing() -> None:
    diagnosis = diagnose_records([clean_run()])[0]
    assert diagnosis["detections"] == []
    assert diagnosis["trajectory_score"] == 1.0
    assert diagnosis["task_completion_score"] == 1.0


# --- loop -------------------------------------------------------------------------------------


def test_loop_fires_on_three_identical_turns_with_their_messages() -> None:
    same = [bash_step("ls /app", "a.txt") for _ in range(3)]
    record = claude_code_record([*same, edit_step(), bash_step("pytest", "1 passed"), DONE])
    finding = detect_loop(view(record))
    assert finding is not None
    assert finding.messages == (2, 4, 6)
    assert finding.confidence == 0.6
    assert "Bash" in finding.snippets[0] or "bash" in finding.snippets[0]


def test_loop_confidence_grows_with_the_run_and_reports_the_longest() -> None:
    record = claude_code_record(
        [
            *[bash_step("ls", "x") for _ in range(3)],
            bash_step("pwd", "/app"),
            *[bash_step("cat a", "x") for _ in range(5)],
            DONE,
        ]
    )
    finding = detect_loop(view(record))
    assert finding is not None
    assert finding.confidence == 1.0
    assert finding.messages == (10, 12, 14, 16, 18)
    assert "2 such runs" in finding.description


def test_loop_does_not_fire_on_two_repeats_or_on_changing_arguments() -> None:
    assert detect_loop(view(claude_code_record([bash_step("ls"), bash_step("ls"), DONE]))) is None
    varied = [bash_step(f"sed -n {i},{i + 9}p a.py") for i in range(5)]
    assert detect_loop(view(claude_code_record([*varied, DONE]))) is None


# --- repeated_error / error_storm ----------------------------------------------------------------


def test_repeated_error_groups_the_same_error_at_other_lines() -> None:
    failing = [bash_step("python run.py", TRACEBACK.format(n=n)) for n in (10, 20, 30)]
    record = claude_code_record([*failing, DONE])
    finding = detect_repeated_error(view(record))
    assert finding is not None
    assert finding.messages == (3, 5, 7)
    assert finding.confidence == 0.7
    assert "ValueError: bad input" in finding.snippets[0]


def test_repeated_error_ignores_different_errors() -> None:
    errors = ["ValueError: a", "KeyError: 'b'", "TypeError: c"]
    record = claude_code_record([*(bash_step("python run.py", e) for e in errors), DONE])
    assert detect_repeated_error(view(record)) is None


def test_error_storm_fires_when_most_results_fail() -> None:
    outputs = ["Permission denied"] * 4 + ["ok"]
    record = claude_code_record([*(bash_step(f"cmd{i}", o) for i, o in enumerate(outputs)), DONE])
    finding = detect_error_storm(view(record))
    assert finding is not None
    assert finding.messages == (3, 5, 7, 9)
    assert finding.confidence == pytest.approx(0.84)


def test_error_storm_needs_five_results_and_half_failing() -> None:
    few = claude_code_record([*(bash_step(f"c{i}", "Permission denied") for i in range(4)), DONE])
    assert detect_error_storm(view(few)) is None
    outputs = ["Permission denied"] * 2 + ["ok"] * 4
    mostly_fine = claude_code_record(
        [*(bash_step(f"c{i}", o) for i, o in enumerate(outputs)), DONE]
    )
    assert detect_error_storm(view(mostly_fine)) is None


# --- truncation -------------------------------------------------------------------------------


def test_truncation_inside_a_tool_call_points_at_the_last_message() -> None:
    record = claude_code_record([edit_step(), bash_step("pytest", "running...")])
    finding = detect_truncation(view(record))
    assert finding is not None
    assert finding.confidence == 1.0
    assert finding.messages == (5,)


def test_truncation_of_terminus_without_task_complete_is_likely() -> None:
    answers = [terminus_answer("ls"), terminus_answer("cat a.txt")]
    record = terminus_record(answers, ["a.txt"])
    finding = detect_truncation(view(record))
    assert finding is not None
    assert finding.confidence == 0.7
    assert finding.messages == (4,)


def test_truncation_silent_on_a_finished_run() -> None:
    assert detect_truncation(view(clean_run())) is None
    finished = terminus_record(
        [terminus_answer("ls"), terminus_answer(task_complete=True)], ["a.txt"]
    )
    assert detect_truncation(view(finished)) is None


# --- unverified_finish ------------------------------------------------------------------------


def test_unverified_finish_when_nothing_was_ever_run() -> None:
    record = claude_code_record([edit_step(), DONE])
    finding = detect_unverified_finish(view(record))
    assert finding is not None
    assert finding.confidence == 0.9
    assert finding.messages == (2, 4)


def test_unverified_finish_when_the_test_ran_only_before_the_last_edit() -> None:
    record = claude_code_record([bash_step("pytest", "1 failed"), edit_step(), DONE])
    finding = detect_unverified_finish(view(record))
    assert finding is not None
    assert finding.confidence == 0.7
    assert finding.messages == (4, 6)


def test_unverified_finish_silent_when_verified_after_the_edit() -> None:
    assert detect_unverified_finish(view(clean_run())) is None


# --- context_overflow -------------------------------------------------------------------------


def test_context_overflow_from_the_trial_exception_is_certain() -> None:
    record = with_meta(
        claude_code_record([edit_step()]),
        exception_type="BadRequestError",
        exception_message="prompt is too long: 210000 tokens > 200000 maximum",
    )
    finding = detect_context_overflow(view(record))
    assert finding is not None
    assert finding.confidence == 1.0
    assert "prompt is too long" in finding.snippets[0]


def test_context_overflow_at_the_end_of_the_run() -> None:
    overflow = "Error: This model's maximum context length is 128000 tokens."
    record = claude_code_record([edit_step(), bash_step("cat big.log", overflow)])
    finding = detect_context_overflow(view(record))
    assert finding is not None
    assert finding.confidence == 0.9
    assert finding.messages == (5,)


def test_context_overflow_silent_on_ordinary_text() -> None:
    record = claude_code_record([step([call("Read", file_path="ctx.py")], ["context = {}"]), DONE])
    assert detect_context_overflow(view(record)) is None


# --- hallucinated_tool / invalid_tool_arguments --------------------------------------------------


def test_hallucinated_tool_names_the_unknown_tool() -> None:
    ghost = call("DeployToProd", target="prod")
    record = claude_code_record(
        [step([ghost], ["<tool_use_error>No such tool</tool_use_error>"]), DONE]
    )
    finding = detect_hallucinated_tool(view(record))
    assert finding is not None
    assert finding.messages == (2,)
    assert finding.snippets == ("DeployToProd",)


def test_hallucinated_tool_needs_a_declared_tool_list() -> None:
    record = im_record(
        [{"role": "user", "content": "x"}, *step([call("Anything", a="1")]), DONE], []
    )
    assert detect_hallucinated_tool(view(record)) is None
    assert detect_hallucinated_tool(view(clean_run())) is None


def test_invalid_arguments_from_unparseable_json_and_tool_validation() -> None:
    broken = call("Bash", command="ls")
    broken["function"]["arguments"] = '{"command": "ls'
    rejected = call("Edit", file_path="a.py")
    record = claude_code_record(
        [
            step([broken], ["<tool_use_error>InputValidationError: bad json</tool_use_error>"]),
            step(
                [rejected],
                [
                    "<tool_use_error>InputValidationError: old_string is a required"
                    " property</tool_use_error>"
                ],
            ),
            DONE,
        ]
    )
    finding = detect_invalid_tool_arguments(view(record))
    assert finding is not None
    assert finding.messages == (2, 3, 5)
    assert finding.confidence == 1.0


def test_invalid_terminus_answer_is_an_invalid_argument() -> None:
    record = terminus_record(
        ["I will now list the files", terminus_answer(task_complete=True)],
        ["Previous response had parsing errors"],
    )
    finding = detect_invalid_tool_arguments(view(record))
    assert finding is not None
    assert finding.messages == (2,)
    assert detect_invalid_tool_arguments(view(clean_run())) is None


def test_text_action_records_that_never_answer_json_are_not_invalid() -> None:
    """A tool-less record of another text-action agent is detected as Terminus-2 by TQS V2,
    but its answers were never meant to be JSON."""
    record = terminus_record(
        ["THOUGHT: look\n```bash\nls\n```", "THOUGHT: done\n```bash\nsubmit\n```"], ["a.txt"]
    )
    assert detect_invalid_tool_arguments(view(record)) is None
    hinted = with_meta(copy.deepcopy(record), scaffold="terminus2")
    finding = detect_invalid_tool_arguments(view(hinted))
    assert finding is not None and finding.messages == (2, 4)


def test_json_behind_a_leading_think_block_is_a_valid_answer() -> None:
    answer = "<think>\nplan\n</think>\n\n" + terminus_answer("ls")
    record = terminus_record([answer, terminus_answer(task_complete=True)], ["a.txt"])
    assert detect_invalid_tool_arguments(view(record)) is None


# --- outcome detectors ------------------------------------------------------------------------


def test_no_successful_write_when_every_write_failed() -> None:
    failed = "<tool_use_error>String to replace not found in file.</tool_use_error>"
    record = claude_code_record([edit_step(failed), edit_step(failed), DONE])
    finding = detect_no_successful_write(view(record))
    assert finding is not None
    assert finding.confidence == 0.9
    assert finding.messages == (2, 4)


def test_no_successful_write_when_none_was_tried() -> None:
    record = claude_code_record([bash_step("ls", "a"), DONE])
    finding = detect_no_successful_write(view(record))
    assert finding == Finding("no_successful_write", 0.8, "the agent never wrote a file")
    assert detect_no_successful_write(view(clean_run())) is None


def test_task_failure_when_finishing_right_after_a_failing_test() -> None:
    record = claude_code_record(
        [edit_step(), bash_step("python -m pytest", "1 failed, 2 passed"), DONE]
    )
    finding = detect_task_failure(view(record))
    assert finding is not None
    assert finding.confidence == 1.0  # the answer claims success
    assert finding.messages == (4, 5, 6)


def test_task_failure_silent_when_the_agent_fixed_it_after_the_failure() -> None:
    record = claude_code_record(
        [
            bash_step("python -m pytest", "1 failed"),
            edit_step(),
            bash_step("python -m pytest", "3 passed"),
            DONE,
        ]
    )
    assert detect_task_failure(view(record)) is None
    quiet = claude_code_record(
        [edit_step(), bash_step("python -m pytest", "1 failed"), assistant("Stopping here.")]
    )
    finding = detect_task_failure(view(quiet))
    assert finding is not None and finding.confidence == 0.8


def test_run_exception_reads_the_trial_metadata() -> None:
    record = with_meta(clean_run(), exception_type="AgentTimeoutError", exception_message="60 s")
    finding = detect_run_exception(view(record))
    assert finding is not None
    assert finding.snippets == ("AgentTimeoutError: 60 s",)
    assert detect_run_exception(view(clean_run())) is None


# --- delegation -------------------------------------------------------------------------------

TASK_TOOLS = [*CLAUDE_CODE_TOOLS, tool_schema("Task", "description", "prompt", "subagent_type")]


def delegating_run(*results: str | None) -> Record:
    """A main record delegating once per result (None: the result never came back)."""
    turns: list[Any] = []
    for result in results:
        task = call("Task", description="explore", prompt="find the bug", subagent_type="Explore")
        message = assistant("", task)
        turns.append([message] if result is None else [message, tool(result, task)])
    record = claude_code_record([*turns, edit_step(), bash_step("pytest", "2 passed"), DONE])
    record["tools"] = TASK_TOOLS
    return record


def subagent(finished: bool, name: str = "explore") -> Record:
    ending = [assistant("The bug is in src/app.py line 3.")] if finished else []
    record = claude_code_record(
        [step([call("Grep", pattern="bug", path="src")], ["src/app.py:3"]), *ending],
        agent_type="subagent",
    )
    return with_meta(record, agent={"name": name}, subagent={"agent_id": "a1"})


def test_unused_delegation_on_an_empty_or_failed_result() -> None:
    main = view(
        delegating_run("The bug is in app.py", "", "<tool_use_error>Agent crashed</tool_use_error>")
    )
    finding = detect_unused_delegation(main, [])
    assert finding is not None
    assert finding.messages == (4, 5, 6, 7)
    assert detect_unused_delegation(view(delegating_run("The bug is in app.py")), []) is None


def test_abandoned_subagent_on_a_lost_result_or_an_unfinished_subagent() -> None:
    lost = detect_abandoned_subagent(view(delegating_run(None)), [])
    assert lost is not None
    assert lost.confidence == 1.0
    assert lost.messages == (2,)
    unfinished = detect_abandoned_subagent(
        view(delegating_run("done")), [view(subagent(False, "explorer"))]
    )
    assert unfinished is not None
    assert unfinished.confidence == 0.8
    assert unfinished.snippets[0].startswith("explorer: stops at message 3")
    assert detect_abandoned_subagent(view(delegating_run("done")), [view(subagent(True))]) is None


def test_compaction_churn_counts_notes_and_summarisation_subagents() -> None:
    note = {
        "role": "user",
        "content": "This session is being continued from a previous conversation that ran out"
        " of context.",
    }
    record = claude_code_record([edit_step(), note, bash_step("pytest", "1 passed"), DONE])
    summariser = with_meta(subagent(True), agent={"name": "terminus-2-summarization-summary"})
    finding = detect_compaction_churn(view(record), [view(summariser)])
    assert finding is not None
    assert finding.messages == (4,)
    assert finding.snippets == ("terminus-2-summarization-summary",)
    assert finding.confidence == 0.6
    assert detect_compaction_churn(view(record), []) is None


def test_subagent_records_get_process_detectors_only() -> None:
    main, sub = delegating_run("result"), subagent(False)
    diagnoses = diagnose_records([main, sub])
    assert diagnoses[1]["task_completion_score"] is None
    assert [d["detector"] for d in diagnoses[1]["detections"]] == ["truncation"]
    assert "abandoned_subagent" in [d["detector"] for d in diagnoses[0]["detections"]]


def test_openhands_finish_counts_as_a_finish() -> None:
    edit = call(
        "str_replace_editor", command="str_replace", path="/app/a.py", old_str="a", new_str="b"
    )
    finish = call("finish", message="done")
    record = openhands_record(
        [
            step([edit], ["The file /app/a.py has been edited."]),
            bash_step("pytest", "1 passed", "execute_bash"),
            step([finish], ["ok"]),
        ]
    )
    assert detect_truncation(view(record)) is None
