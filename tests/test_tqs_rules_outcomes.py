"""TQS V2 observation rules: test-run outcomes (§8, §14.17) and error detection (§3, §14.2)."""

from __future__ import annotations

import re

import pytest

from scorers.tqs_v2 import errors
from scorers.tqs_v2.errors import Outcome, is_error_observation
from scorers.tqs_v2.errors import test_outcome as outcome_of
from scorers.tqs_v2.patterns import Rule, RuleSet

PASS, FAIL, UNKNOWN = Outcome.PASS, Outcome.FAIL, Outcome.UNKNOWN

# --- zero-test markers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "----------------------------------------------------------------------\n"
        "Ran 0 tests in 0.000s\n\nOK",
        "============ no tests ran in 0.01s ============",
        "collected 0 items\n\n=== 1 passed in 0.01s ===",
        "no test files were found",
    ],
    ids=["unittest-ran-0", "pytest-no-tests-ran", "collected-0-beats-pass", "no-test-found"],
)
def test_zero_tests_marker_is_unknown(text: str) -> None:
    assert outcome_of(text) is UNKNOWN


def test_go_no_test_files_is_not_a_zero_tests_marker() -> None:
    text = "ok  \texample.com/widget/a\t0.12s\n?   \texample.com/widget/b\t[no test files]"
    assert outcome_of(text) is PASS


def test_fail_patterns_win_over_zero_tests() -> None:
    assert outcome_of("collected 0 items / 1 error\nERROR tests/test_a.py") is FAIL


# --- pass / fail patterns by ecosystem ------------------------------------------------------

OUTCOMES = [
    # Python
    ("pytest-passed", "tests/test_a.py ...\n===== 3 passed in 0.12s =====", PASS),
    ("pytest-failed", "===== 1 failed, 2 passed in 0.20s =====", FAIL),
    ("pytest-FAILED-line", "FAILED tests/test_a.py::test_x - assert 1 == 2", FAIL),
    ("unittest-ok", "...\n" + "-" * 70 + "\nRan 3 tests in 0.01s\n\nOK", PASS),
    ("unittest-failures", "Ran 3 tests in 0.01s\n\nFAILED (failures=1)", FAIL),
    ("unittest-FAIL-line", "FAIL: test_x (tests.test_a.T)\nAssertionError", FAIL),
    # Go
    ("go-ok", "ok  \texample.com/widget/pkg\t0.1s", PASS),
    ("go-PASS", "=== RUN   TestX\n--- PASS: TestX (0.00s)\nPASS", PASS),
    ("go-fail", "--- FAIL: TestX (0.00s)\nFAIL\nFAIL\texample.com/widget/pkg\t0.1s", FAIL),
    # Rust
    ("rust-ok", "test result: ok. 3 passed; 0 failed; 0 ignored", PASS),
    ("rust-failed", "test result: FAILED. 1 passed; 2 failed; 0 ignored", FAIL),
    ("rust-error-code", "error[E0425]: cannot find value `x` in this scope", FAIL),
    ("rust-error-plain", "error: could not compile `widget`", FAIL),
    # Java
    ("maven-pass", "Tests run: 5, Failures: 0, Errors: 0, Skipped: 0", PASS),
    ("maven-failures", "Tests run: 5, Failures: 2, Errors: 0, Skipped: 0", FAIL),
    ("maven-build-failure", "[INFO] BUILD FAILURE", FAIL),
    ("maven-zero-tests-build-success", "Tests run: 0, Failures: 0, Errors: 0\nBUILD SUCCESS", PASS),
    ("gradle-failed", "3 tests completed, 1 failed", FAIL),
    ("gradle-test-failed", "ParserTest > parsesEmpty FAILED", FAIL),
    ("gradle-success", "BUILD SUCCESSFUL in 4s", PASS),
    # JS / TS
    ("jest-failed", "Tests:       1 failed, 2 passed, 3 total", FAIL),
    ("jest-passed", "Tests:       3 passed, 3 total", PASS),
    ("mocha-passing", "  3 passing (12ms)", PASS),
    ("mocha-failing", "  2 passing (12ms)\n  1 failing", FAIL),
    ("tsc-error-count-0", "Found 0 errors. error count: 0", PASS),
    # C / C++
    ("ctest-pass", "100% tests passed, 0 tests failed out of 4", PASS),
    ("ctest-fail", "75% tests passed, 1 tests failed out of 4", FAIL),
    ("ctest-following", "The following tests FAILED:\n\t  2 - parser (Failed)", FAIL),
    ("gtest-passed", "[==========] 3 tests ran.\n[  PASSED  ] 3 tests.", PASS),
    ("gtest-failed", "[  FAILED  ] ParserTest.Empty (0 ms)", FAIL),
    # Ruby, PHP, .NET and friends (§14.17)
    ("rspec-pass", "Finished in 0.1 seconds\n5 examples, 0 failures", PASS),
    ("rspec-fail", "5 examples, 1 failure", FAIL),
    ("phpunit-failures", "FAILURES!\nTests: 3, Assertions: 5, Failures: 1.", FAIL),
    ("phpunit-ok-assertions", "OK (8 tests, 14 assertions)", UNKNOWN),
    ("phpunit-ok-tests", "OK (3 tests)", PASS),
    (
        "dotnet-passed",
        "Passed!  - Failed:     0, Passed:     5, Skipped:     0, Total:     5",
        UNKNOWN,
    ),
    (
        "dotnet-failed",
        "Failed!  - Failed:     1, Passed:     4, Skipped:     0, Total:     5",
        UNKNOWN,
    ),
    ("elixir", "Finished in 0.05 seconds\n7 tests, 0 failures", UNKNOWN),
    ("swift", "Executed 5 tests, with 0 failures (0 unexpected)", UNKNOWN),
    # Echoed exit codes and scaffold marker lines
    ("echo-exit-0", "hello\nexit: 0", PASS),
    ("echo-exit-code-2", "hello\nexit code=2", FAIL),
    ("marker-line-exit-0", "hello\n[The command completed with exit code 0.]", UNKNOWN),
    ("marker-line-hides-exit-0", "hello\n[Current working directory: /srv/exit=0]", UNKNOWN),
    ("marker-line-exit-1-is-hard", "3 passed\n[The command completed with exit code 1.]", FAIL),
    # Tool errors, HARD and SOFT errors
    ("hard-error-beats-pass", "3 passed\nbash: foo: command not found", FAIL),
    ("soft-error", "Traceback (most recent call last):\n  File 'x.py'\nValueError: bad", FAIL),
    ("pass-beats-soft-error", "ValueError was expected\n3 passed", PASS),
    ("plain-output", "hello world", UNKNOWN),
    # ANSI colours are stripped first
    ("ansi-pass", "\x1b[32m===== 3 passed in 0.1s =====\x1b[0m", PASS),
    ("ansi-fail-line-start", "\x1b[31mFAILED\x1b[0m tests/test_a.py::test_x", FAIL),
    ("ansi-gtest", "\x1b[0;32m[  PASSED  ] \x1b[m3 tests.", PASS),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, o) for _, t, o in OUTCOMES], ids=[i for i, _, _ in OUTCOMES]
)
def test_outcome_patterns(text: str, expected: Outcome) -> None:
    assert outcome_of(text) is expected


def test_go_dash_fail_line_alone_is_a_fail() -> None:
    """Spec §8: Go's `--- FAIL:` is a fail even without a line-start FAIL summary."""
    assert outcome_of("--- FAIL: TestParse (0.00s)") is FAIL


# --- the 3000 + 3000 character scan window --------------------------------------------------


def long_output(middle: str) -> str:
    filler = "".join(f"line {i:05d} of noisy build output\n" for i in range(400))  # ~13k chars
    return filler[:4000] + middle + "\n" + filler[4000:] + "===== 3 passed in 1.00s ====="


def test_fail_line_in_the_unscanned_middle_is_ignored() -> None:
    text = long_output("===== 1 failed in 1.00s =====")
    assert len(text) > 6000
    assert outcome_of(text) is PASS


def test_fail_line_in_the_scanned_head_counts() -> None:
    text = "===== 1 failed in 1.00s =====\n" + long_output("")
    assert outcome_of(text) is FAIL


def test_tail_is_moved_to_the_next_line_start() -> None:
    """The last 3000 characters start inside `xxxxFAIL: cut`: that cut line is dropped."""
    tail = "FAIL: cut\n" + "y" * 2990
    assert outcome_of("a" * 4000 + "\nxxxx" + tail) is UNKNOWN
    # No newline in the tail's first 300 characters: the tail is kept as cut.
    tail = "FAIL: cut " + "y" * 400 + "\n" + "y" * 2589
    assert len(tail) == 3000
    assert outcome_of("a" * 4000 + "\nxxxx" + tail) is FAIL


# --- error detection (§3) -------------------------------------------------------------------

ERRORS = [
    # tool-error markers count on any tool
    ("tool-use-error", "<tool_use_error>File does not exist.</tool_use_error>", False, False, True),
    ("invalid-arguments", "The arguments provided to the tool are invalid: x", False, False, True),
    ("execution-error", "[An error occurred during execution.]", False, False, True),
    ("validating-args", "Error validating args {'x': 1} for tool read", False, False, True),
    ("error-executing", "Error executing tool edit: boom", False, False, True),
    ("no-replacement", "No replacement was performed, old_str not found", False, False, True),
    ("param-required", "parameter is required for 'str_replace' command", False, False, True),
    ("param-required-capital", "Parameter is required for 'create' command", False, False, False),
    ("invalid-param", "Invalid `view_range` parameter: [1, 2]", False, False, True),
    ("ERROR-at-start", "ERROR: could not open file", False, False, True),
    ("ERROR-after-whitespace", "  \nERROR: could not open file", False, False, True),
    ("ERROR-later-line", "reading\nERROR: could not open file", False, False, False),
    ("error-lowercase", "error: could not open file", False, False, False),
    # HARD errors: execution tools only
    ("not-found-exec", "bash: frob: command not found", True, False, True),
    ("not-found-read", "bash: frob: command not found", False, False, False),
    ("permission-exec", "cp: cannot create x: Permission denied", True, False, True),
    ("Exit-Code-1", "Exit Code 1", True, False, True),
    ("exit-code-minus-1", "exit code: -1", True, False, True),
    ("exit-code-0", "exit code 0", True, False, False),
    ("non-zero-status", "returned non-zero exit status 2", True, False, True),
    ("hard-on-formal-test", "bash: pytest: command not found", True, True, True),
    # SOFT errors: execution tools, not formal test runs
    ("traceback-exec", "Traceback (most recent call last):\n  x", True, False, True),
    ("traceback-formal", "Traceback (most recent call last):\n  x", True, True, False),
    ("traceback-read", "Traceback (most recent call last):\n  x", False, False, False),
    ("value-error", "ValueError: invalid literal", True, False, True),
    ("stop-iteration", "StopIteration", True, False, True),
    ("type-error-inside-word", "class MyTypeErrorHandler: pass", True, False, False),
    ("no-such-file", "ls: cannot access 'x': No such file or directory", True, False, True),
    ("FAILED-word", "1 FAILED", True, False, True),
    ("FAILED-formal", "FAILED tests/test_a.py::test_x", True, True, False),
    ("failed-lowercase", "1 failed", True, False, False),
    ("ansi-stripped", "\x1b[31mTraceback (most recent call last)\x1b[0m", True, False, True),
]


@pytest.mark.parametrize(
    ("text", "is_execution", "is_formal", "expected"),
    [e[1:] for e in ERRORS],
    ids=[e[0] for e in ERRORS],
)
def test_is_error_observation(
    text: str, is_execution: bool, is_formal: bool, expected: bool
) -> None:
    assert is_error_observation(text, is_execution, is_formal) is expected


def test_every_rule_pattern_compiles() -> None:
    # Rules compile lazily, on the first text holding a hint: check them all up front.
    rules = [value for value in vars(errors).values() if isinstance(value, Rule)]
    for value in vars(errors).values():
        if isinstance(value, RuleSet):
            rules.extend(value.rules)
    assert len(rules) > 50
    for rule in rules:
        assert re.compile(rule.pattern, rule.flags).pattern == rule.pattern
