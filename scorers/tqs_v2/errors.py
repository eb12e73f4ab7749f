"""Error detection in tool observations (TQS V2 §3) and test-run outcomes (§8)."""

from __future__ import annotations

import re
from enum import Enum

from scorers.tqs_v2.text import scan_window, strip_ansi

# Markers that mean "the tool itself failed", whatever the tool. Case-sensitive.
_TOOL_ERROR = re.compile(
    r"<tool_use_error>"
    r"|The arguments provided to the tool are invalid"
    r"|\[An error occurred during execution\.\]"
    r"|Error validating args .*? for tool"
    r"|Error executing tool"
    r"|\A\s*ERROR:"
    r"|No replacement was performed"
    r"|parameter is required for '[^']*' command"
    r"|Invalid `[^`]*` parameter",
    re.DOTALL,
)

# Errors that only count on execution tools.
_HARD = re.compile(
    r"command not found|Permission denied|returned non-zero exit status"
    r"|(?i:exit code[:\s]+-?[1-9])"
)
_SOFT = re.compile(
    r"Traceback \(most recent call last\)"
    r"|\b(?:SyntaxError|TypeError|ValueError|KeyError|IndexError|AttributeError|ImportError"
    r"|ModuleNotFoundError|FileNotFoundError|NameError|RuntimeError|OSError|IOError"
    r"|PermissionError|ZeroDivisionError|NotImplementedError|StopIteration|RecursionError"
    r"|AssertionError|UnicodeDecodeError)\b"
    r"|No such file or directory"
    r"|\bFAILED\b"
)


def has_tool_error_marker(text: str) -> bool:
    return _TOOL_ERROR.search(text) is not None


def has_hard_error(text: str) -> bool:
    return _HARD.search(text) is not None


def has_soft_error(text: str) -> bool:
    return _SOFT.search(text) is not None


def is_error_observation(text: str, is_execution: bool, is_formal_test: bool) -> bool:
    """Whether an observation counts as an error (ANSI codes removed first)."""
    clean = strip_ansi(text)
    if has_tool_error_marker(clean):
        return True
    if not is_execution:
        return False
    if has_hard_error(clean):
        return True
    return not is_formal_test and has_soft_error(clean)


class Outcome(Enum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"


_N = r"[1-9]\d*"
_FAIL = re.compile(
    "|".join(
        [
            rf"(?i:\bexit(?: code)?\s*[:=]\s*-?{_N})",
            r"^(?:FAILED|ERROR) \S",
            rf"\b{_N} failed",
            r"^(?:FAIL|ERROR):",
            r"^--- FAIL:",
            r"^FAIL\b",
            r"test result: FAILED",
            r"^error(?:\[E\d+\])?:",
            r"Couldn't compile the test",
            r"error: (?:doctest failed|test failed)",
            rf"Tests run:.*?(?:Failures|Errors): {_N}",
            r"BUILD FAILURE",
            r"^\[ERROR\] ",
            r"\w+Test > \S+ FAILED",
            rf"\d+ tests completed, {_N} failed",
            r"The following tests FAILED",
            rf"{_N} tests failed out of",
            r"Errors while running CTest",
            r"\[  FAILED  \]",
            rf"^Tests:.*?\b{_N} failed",
            rf"^Test Suites:.*?\b{_N} failed",
            rf"\b{_N} failing",
            r"No test files found",
            r"error Command failed with exit code [1-9]",
            r"^FAILURES!",
            rf"\b{_N} failures?\b",
            r"fail: [1-9]",
            r"compilation failed",
            r"build failed",
        ]
    ),
    re.MULTILINE,
)
_ZERO_TESTS = re.compile(r"Ran 0 tests|no tests? (?:ran|were found|to run|found)|collected 0 items")
_PASS = re.compile(
    "|".join(
        [
            r"test result: ok\.",
            r"^ok\s+\S",
            r"^PASS\b",
            r"\b\d+ passed",
            r"100% tests passed",
            r"BUILD SUCCESS(?:FUL)?",
            r"Tests run: \d+, Failures: 0, Errors: 0",
            r"OK \(\d+ tests?\)",
            r"^\[  PASSED  \]",
            r"\b\d+ passing",
            r"\b\d+ examples?, 0 failures",
            r"Pass: \d+, fail: 0",
            r"(?i:all (?:tests|checks) pass(?:ed)?)",
            r"Ran \d+ tests? in [\d.]+s\n\nOK",
            r"^OK(?: \(skipped=\d+\))?$",
            r"error count: 0",
        ]
    ),
    re.MULTILINE,
)
_MARKER_LINE = re.compile(
    r"^\[(?:The command completed with exit code -?\d+\.|Command finished with exit code -?\d+"
    r"|Current working directory: [^\n]*|Python interpreter: [^\n]*"
    r"|Below is the output of the previous command\.)\]$",
    re.MULTILINE,
)
_ECHO_EXIT_ZERO = re.compile(r"\bexit(?: code)?\s*[:=]\s*0\b", re.IGNORECASE)


def test_outcome(text: str) -> Outcome:
    """Classify the observation of a test/verification run (TQS V2 §8, in order)."""
    window = scan_window(strip_ansi(text))
    if has_tool_error_marker(window) or has_hard_error(window):
        return Outcome.FAIL
    if _FAIL.search(window):
        return Outcome.FAIL
    if _ZERO_TESTS.search(window):
        return Outcome.UNKNOWN
    if _PASS.search(window):
        return Outcome.PASS
    if _ECHO_EXIT_ZERO.search(_MARKER_LINE.sub("", window)):
        return Outcome.PASS
    if has_soft_error(window):
        return Outcome.FAIL
    return Outcome.UNKNOWN
