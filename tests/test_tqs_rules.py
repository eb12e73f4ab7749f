"""TQS V2 weighted components with the spec's numbers: STP, FEC, composite, DPI, TVR, SUB.

Outcome/error patterns, shell rules and scaffolds live in the other test_tqs_rules_*.py files.
"""

from __future__ import annotations

from typing import Any

import pytest
from tqs_builders import (
    Turn,
    assistant,
    bash_step,
    call,
    claude_code_record,
    openhands_record,
    step,
    terminus_answer,
    terminus_record,
)

from scorers.tqs_v2 import components, score_record
from scorers.tqs_v2.score import composite

NOT_FOUND = "bash: frobnicate: command not found"
DONE = assistant("Done.")


def scored(record: dict[str, Any]) -> dict[str, Any]:
    result = score_record(record)
    assert result is not None
    return result


def edit(path: str) -> Turn:
    return step([call("Edit", file_path=path, old_string="a", new_string="b")])


def write(path: str) -> Turn:
    return step([call("Write", file_path=path, content="x = 1\n")])


def read(path: str) -> Turn:
    return step([call("Read", file_path=path)], ["1\tx = 1"])


# --- STP (§6) -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (0, 0.0),
        (4, 0.8),
        (5, 1.0),
        (80, 1.0),
        (81, (1 - 1 / 120) ** 1.5),
        (199, (1 - 119 / 120) ** 1.5),
        (200, 0.0),
    ],
    ids=lambda v: str(v) if isinstance(v, int) else None,
)
def test_step_score(turns: int, expected: float) -> None:
    assert components.step_score(turns) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("turns", "expected"), [(4, 0.8), (81, 0.9875), (200, 0.0)])
def test_stp_of_a_full_record(turns: int, expected: float) -> None:
    record = claude_code_record([*[bash_step("ls")] * (turns - 1), DONE])
    result = scored(record)
    assert result["assistant_turns"] == turns
    assert result["stp_score"] == expected == round(components.step_score(turns), 4)


def test_stp_without_assistant_turns_is_zero() -> None:
    assert scored(claude_code_record([]))["stp_score"] == 0.0


# --- FEC (§7) -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        pytest.param([bash_step("ls"), read("src/a.py")], None, id="no-edits-null"),
        pytest.param([edit("src/a.py")] * 3, 0.5, id="3-edits-one-file"),
        pytest.param([edit("src/a.py")] * 7, 0.0, id="7-edits-one-file"),
        pytest.param([edit("a.py"), edit("b.py"), write("c.py")], 1.0, id="one-edit-per-file"),
        pytest.param([edit("a.py"), edit("a.py"), edit("b.py")], 0.875, id="3-edits-2-files"),
        pytest.param(
            [edit("/testbed/src/a.py"), edit("src/./a.py"), edit("/workspace/src//a.py")],
            0.5,
            id="paths-normalised",
        ),
        pytest.param(
            [bash_step("sed -i 's/x/y/' src/a.py"), edit("src/a.py")], 0.75, id="shell-write"
        ),
    ],
)
def test_file_edit_concentration(turns: list[Turn], expected: float | None) -> None:
    assert scored(claude_code_record([*turns, DONE]))["fec_score"] == expected


def test_fec_counts_editor_writes_but_not_views() -> None:
    def editor(command: str) -> Turn:
        return step([call("str_replace_editor", command=command, path="/testbed/a.py")])

    record = openhands_record([editor("view"), editor("create"), editor("str_replace"), DONE])
    assert scored(record)["fec_score"] == 0.75


# --- composite (§4) -------------------------------------------------------------------------


def test_composite_applies_fec_power_5_and_dpi_power_3() -> None:
    values = {
        "sub_score": 1.0,
        "stp_score": 1.0,
        "tvr_score": 1.0,
        "fec_score": 0.5,
        "dpi_score": 0.5,
        "oec_score": 0.0,  # diagnostics have weight 0
        "iac_score": 0.0,
    }
    expected = 0.33 + 0.27 + 0.23 + 0.10 * 0.5**5 + 0.07 * 0.5**3
    assert composite(values) == pytest.approx(expected)
    assert composite(values) == pytest.approx(0.841875)


def test_null_fec_drops_its_weight_from_the_denominator() -> None:
    values = {"sub_score": 1.0, "stp_score": 0.4, "tvr_score": 0.7, "dpi_score": 0.6}
    expected = (0.33 * 1.0 + 0.27 * 0.4 + 0.23 * 0.7 + 0.07 * 0.6**3) / 0.90
    assert composite({**values, "fec_score": None}) == pytest.approx(expected)
    # The same values through a record: passing pytest, no edits, two turns.
    record = claude_code_record([bash_step("pytest -q", "3 passed in 0.10s"), DONE])
    result = scored(record)
    assert {k: result[k] for k in values} == values
    assert result["fec_score"] is None
    assert result["composite_score"] == round(expected, 4) == 0.6824


def test_composite_of_nothing_is_zero() -> None:
    assert composite({}) == 0.0
    assert composite({"fec_score": None, "oec_score": 1.0}) == 0.0


# --- DPI (§10) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        pytest.param([edit("a.py"), DONE], 1.0, id="clean"),
        pytest.param([bash_step("ls"), DONE], 0.6, id="no-write"),
        pytest.param(
            [
                step(
                    [call("Edit", file_path="a.py", old_string="q", new_string="r")],
                    ["<tool_use_error>String to replace not found</tool_use_error>"],
                ),
                DONE,
            ],
            0.6,
            id="only-write-failed",
        ),
        pytest.param([edit("a.py")], 0.6, id="truncated"),
        pytest.param([bash_step("ls")], 0.2, id="truncated-and-no-write"),
        pytest.param([*[read("a.py")] * 5, edit("a.py"), DONE], 0.7, id="loop-5-reads-capped"),
        pytest.param([*[read("a.py")] * 4, edit("a.py"), DONE], 1.0, id="4-reads-no-loop"),
        pytest.param(
            [*[bash_step("frobnicate", NOT_FOUND)] * 3, edit("a.py"), DONE],
            0.7,
            id="3-identical-errors-capped",
        ),
    ],
)
def test_dirty_pattern_index(turns: list[Turn], expected: float) -> None:
    assert scored(claude_code_record(turns))["dpi_score"] == expected


def test_loop_penalty_is_three_times_the_loop_fraction() -> None:
    reads = [call("Read", file_path="a.py") for _ in range(5)]
    reads += [call("Read", file_path=f"f{i}.py") for i in range(45)]
    record = claude_code_record([step(reads), edit("b.py"), DONE])
    # 5 looping actions out of 51 targeted ones.
    assert scored(record)["dpi_score"] == round(1 - 3 * 5 / 51, 4) == 0.7059


def test_error_repeats_compare_the_first_80_characters() -> None:
    head = NOT_FOUND.ljust(80, ".")
    outputs = [head + " first", head + " second", "fine", "Permission denied", NOT_FOUND]
    turns = [bash_step(f"cmd{i}", out) for i, out in enumerate(outputs)]
    # 4 error observations, one adjacent identical pair: 0.6 * 1/4 = 0.15.
    assert scored(claude_code_record([*turns, edit("a.py"), DONE]))["dpi_score"] == 0.85


# --- TVR (§9) -------------------------------------------------------------------------------

PYTEST_PASS = bash_step("pytest -q", "3 passed in 0.10s")
PYTEST_FAIL = bash_step("pytest -q", "1 failed, 2 passed in 0.10s")
TEST_WRITE = write("tests/test_parser.py")


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        pytest.param([PYTEST_PASS], 0.7, id="run-passing-no-test-written"),
        pytest.param([TEST_WRITE, PYTEST_PASS], 1.0, id="written-and-passing"),
        pytest.param([TEST_WRITE, PYTEST_FAIL], 0.72, id="written-and-failing"),
        pytest.param([TEST_WRITE], 0.3, id="written-only"),
        pytest.param([bash_step("python repro.py", "hello")], 0.54, id="run-unknown"),
        pytest.param([bash_step("ls")], 0.0, id="nothing"),
        pytest.param([PYTEST_PASS, PYTEST_FAIL], 0.42, id="last-run-fails"),
        pytest.param([PYTEST_FAIL, PYTEST_PASS], 0.7, id="last-run-passes"),
        pytest.param(
            [PYTEST_PASS, assistant("", call("Bash", command="pytest -q"))],
            0.54,
            id="last-run-missing-observation",
        ),
        pytest.param(
            [bash_step("cat > tests/test_new.py <<'EOF'\ndef test(): pass\nEOF"), PYTEST_PASS],
            1.0,
            id="test-written-by-shell",
        ),
        pytest.param([bash_step("pip install pytest", "Installed")], 0.0, id="install-not-a-run"),
        pytest.param([bash_step("python -c 'print(1)'", "1")], 0.54, id="python-c"),
    ],
)
def test_test_verification(turns: list[Turn], expected: float) -> None:
    assert scored(claude_code_record([*turns, DONE]))["tvr_score"] == expected


# --- SUB (§5, §14.1) ------------------------------------------------------------------------


def ten_steps(errors: set[int], pytest_at: int | None = None) -> list[Turn]:
    """Ten bash steps: errors at the given observation indexes, passing pytest at one."""
    turns: list[Turn] = []
    for index in range(10):
        if index == pytest_at:
            turns.append(PYTEST_PASS)
        else:
            turns.append(bash_step("ls", NOT_FOUND if index in errors else "ok"))
    return turns


@pytest.mark.parametrize(
    ("errors", "pytest_at", "expected"),
    [
        pytest.param(set(range(7)), None, 1.0, id="early-errors-ignored"),
        pytest.param({8}, None, 0.9, id="1-of-3-late-errors"),
        pytest.param({7, 8, 9}, None, 0.7, id="all-late-errors"),
        pytest.param({7, 8}, 9, 0.95, id="late-test-bonus"),
        pytest.param({7, 8}, 0, 0.8, id="early-test-no-bonus"),
        pytest.param({8}, 9, 1.0, id="bonus-capped-at-1"),
    ],
)
def test_sub_late_errors_and_late_test_bonus(
    errors: set[int], pytest_at: int | None, expected: float
) -> None:
    record = claude_code_record([*ten_steps(errors, pytest_at), DONE])
    assert scored(record)["sub_score"] == expected


@pytest.mark.parametrize(("pytest_at", "expected"), [(7, 0.15), (6, 0.0)], ids=["turn-8", "turn-7"])
def test_sub_bonus_applies_when_base_is_zero(pytest_at: int, expected: float) -> None:
    """Truncated (ends on a tool message): base 0; 10 turns, bonus from 1-based turn 8."""
    record = claude_code_record(ten_steps(set(), pytest_at))
    assert scored(record)["sub_score"] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The fix is complete.", 1.0),
        ("All tests now pass.", 1.0),
        ("I successfully fixed the parser.", 1.0),
        ("The implementation is working.", 1.0),
        ("Bug resolved", 1.0),
        ("Completed.", 0.8),
        ("I think we're done", 0.8),
        ("Verified the output", 0.8),
        ("I changed parser.py.", 0.5),
        ("", 0.5),
    ],
)
def test_openhands_text_summary_base(text: str, expected: float) -> None:
    record = openhands_record([bash_step("ls", name="execute_bash"), assistant(text)])
    assert scored(record)["sub_score"] == expected


@pytest.mark.parametrize("sdk", [False, True], ids=["openhands", "openhands_sdk"])
def test_openhands_finish_call_and_truncation(sdk: bool) -> None:
    shell = "terminal" if sdk else "execute_bash"
    finish = step([call("finish", message="Working on it")])
    assert (
        scored(openhands_record([bash_step("ls", name=shell), finish], sdk=sdk))["sub_score"] == 1.0
    )
    truncated = scored(openhands_record([finish, bash_step("ls", name=shell)], sdk=sdk))
    assert truncated["sub_score"] == 0.0
    assert truncated["scaffold"] == ("openhands_sdk" if sdk else "openhands")


@pytest.mark.parametrize(
    ("last_answer", "expected"),
    [
        (terminus_answer(task_complete=True), 1.0),
        (terminus_answer(task_complete="true"), 0.0),
        (terminus_answer(task_complete=1), 0.0),
        (terminus_answer(task_complete=False), 0.0),
        ('{"analysis": "done", "task_complete": true', 0.0),
    ],
    ids=["true", "string-true", "one", "false", "malformed-json"],
)
def test_terminus_task_complete_must_be_exactly_true(last_answer: str, expected: float) -> None:
    record = terminus_record([terminus_answer("ls\n"), last_answer], ["$ ls\nsrc"])
    assert scored(record)["sub_score"] == expected
