"""Per-language facts a synthetic agent run needs: commands and what they print.

Each `Language` knows how its test suite is run, what a passing and a failing run print
(in that ecosystem's usual shape, so outcome detectors have something real to match), the
project files next to the task's source, and how a new regression test file looks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipelines.synth.templates import Task

__all__ = ["LANGUAGES", "Language", "TestRun"]


@dataclass(frozen=True, slots=True)
class TestRun:
    total: int
    failed: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Language:
    name: str
    test_command: str
    broken_command: str  # a test command the image cannot run
    broken_output: str
    comment: str
    project_files: tuple[str, ...]
    regression_path: Callable[[Task], str]
    regression_test: Callable[[Task], str]
    passed: Callable[[Task, TestRun], str]
    failed: Callable[[Task, TestRun], str]

    def output(self, task: Task, run: TestRun) -> str:
        return self.failed(task, run) if run.failed else self.passed(task, run)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


def _dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


# --- Python / pytest ---------------------------------------------------------------------
_PYTEST_HEAD = (
    "============================= test session starts ==============================\n"
    "platform linux -- Python 3.11.9, pytest-8.2.2, pluggy-1.5.0\nrootdir: /app\n"
)


def _pytest_pass(task: Task, run: TestRun) -> str:
    return (
        f"{_PYTEST_HEAD}collected {run.total} items\n\n{task.test_path} {'.' * run.total}"
        f"    [100%]\n\n============ {run.total} passed in {run.seconds:.2f}s ============\n"
    )


def _pytest_fail(task: Task, run: TestRun) -> str:
    ok = run.total - run.failed
    return (
        f"{_PYTEST_HEAD}collected {run.total} items\n\n{task.test_path} {'.' * ok}"
        f"{'F' * run.failed}    [100%]\n\n=================== FAILURES ===================\n"
        f"______________ {task.test_name} ______________\n\n    def {task.test_name}():\n"
        f">       {task.check}\nE       {task.failure}\n\n{task.test_path}:14: AssertionError\n"
        f"=========== short test summary info ============\n"
        f"FAILED {task.test_path}::{task.test_name} - {task.failure.splitlines()[0]}\n"
        f"====== {run.failed} failed, {ok} passed in {run.seconds:.2f}s ======\n"
    )


def _pytest_regression(task: Task) -> str:
    module = task.path.removesuffix(".py").replace("/", ".")
    return (
        f"from {module} import {task.symbol}\n\n\ndef test_{task.symbol.lower()}_regression():\n"
        f"    {task.check}\n"
    )


# --- Go ----------------------------------------------------------------------------------
def _go_pass(task: Task, run: TestRun) -> str:
    return f"ok  \texample.test/app/{_dir(task.path)}\t{run.seconds:.3f}s\n"


def _go_fail(task: Task, run: TestRun) -> str:
    pkg = _dir(task.path)
    return (
        f"--- FAIL: {task.test_name} (0.00s)\n    {_stem(task.test_path)}.go:27: {task.failure}\n"
        f"FAIL\nFAIL\texample.test/app/{pkg}\t{run.seconds:.3f}s\nFAIL\n"
    )


def _go_regression(task: Task) -> str:
    pkg = _dir(task.path).rsplit("/", 1)[-1]
    return (
        f'package {pkg}\n\nimport "testing"\n\nfunc {task.test_name}Regression'
        f"(t *testing.T) {{\n\t{task.check}\n}}\n"
    )


# --- Rust / cargo ------------------------------------------------------------------------
def _cargo_head(task: Task, run: TestRun) -> str:
    return (
        "   Compiling app v0.1.0 (/app)\n    Finished `test` profile [unoptimized + debuginfo]"
        f" target(s) in {run.seconds * 40:.2f}s\n     Running {task.test_path}\n\n"
        f"running {run.total} tests\n"
    )


def _cargo_pass(task: Task, run: TestRun) -> str:
    lines = "".join(f"test case_{i} ... ok\n" for i in range(run.total - 1))
    return (
        f"{_cargo_head(task, run)}{lines}test {task.test_name} ... ok\n\ntest result: ok. "
        f"{run.total} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; "
        f"finished in {run.seconds:.2f}s\n"
    )


def _cargo_fail(task: Task, run: TestRun) -> str:
    ok = run.total - run.failed
    lines = "".join(f"test case_{i} ... ok\n" for i in range(ok))
    return (
        f"{_cargo_head(task, run)}{lines}test {task.test_name} ... FAILED\n\nfailures:\n\n"
        f"---- {task.test_name} stdout ----\nthread '{task.test_name}' panicked at "
        f"{task.path}:9:13:\n{task.failure}\n\nfailures:\n    {task.test_name}\n\n"
        f"test result: FAILED. {ok} passed; {run.failed} failed; 0 ignored; 0 measured; "
        f"0 filtered out; finished in {run.seconds:.2f}s\n\n"
        f"error: test failed, to rerun pass `--test {_stem(task.test_path)}`\n"
    )


def _rust_regression(task: Task) -> str:
    return f"use app::*;\n\n#[test]\nfn {task.test_name}_regression() {{\n    {task.check}\n}}\n"


# --- TypeScript / jest -------------------------------------------------------------------
def _jest_pass(task: Task, run: TestRun) -> str:
    return (
        f"PASS {task.test_path}\n  {task.symbol}\n    \u2713 {task.test_name} (3 ms)\n\n"
        f"Test Suites: 1 passed, 1 total\nTests:       {run.total} passed, {run.total} total\n"
        f"Snapshots:   0 total\nTime:        {run.seconds * 10:.3f} s\nRan all test suites.\n"
    )


def _jest_fail(task: Task, run: TestRun) -> str:
    ok = run.total - run.failed
    return (
        f"FAIL {task.test_path}\n  \u25cf {task.symbol} \u203a {task.test_name}\n\n"
        f"    expect(received).toBe(expected) // Object.is equality\n\n    {task.failure}\n\n"
        f"Test Suites: 1 failed, 1 total\nTests:       {run.failed} failed, {ok} passed, "
        f"{run.total} total\nSnapshots:   0 total\nTime:        {run.seconds * 10:.3f} s\n"
        "Ran all test suites.\n"
    )


def _jest_regression(task: Task) -> str:
    module = "./" + _stem(task.path)
    return (
        f'import {{ {task.symbol} }} from "{module}";\n\n'
        f'test("{task.test_name} (regression)", () => {{\n  {task.check}\n}});\n'
    )


# --- Java / maven ------------------------------------------------------------------------
def _class_of(task: Task) -> str:
    return "org.example." + _stem(task.test_path)


def _maven_pass(task: Task, run: TestRun) -> str:
    return (
        "[INFO] -------------------------------------------------------\n[INFO]  T E S T S\n"
        "[INFO] -------------------------------------------------------\n"
        f"[INFO] Running {_class_of(task)}\n[INFO] Tests run: {run.total}, Failures: 0, "
        f"Errors: 0, Skipped: 0, Time elapsed: {run.seconds:.3f} s\n[INFO] \n[INFO] Results:\n"
        f"[INFO] \n[INFO] Tests run: {run.total}, Failures: 0, Errors: 0, Skipped: 0\n"
        "[INFO] \n[INFO] BUILD SUCCESS\n"
    )


def _maven_fail(task: Task, run: TestRun) -> str:
    name = _stem(task.test_path)
    return (
        "[INFO] -------------------------------------------------------\n[INFO]  T E S T S\n"
        "[INFO] -------------------------------------------------------\n"
        f"[INFO] Running {_class_of(task)}\n[ERROR] Tests run: {run.total}, Failures: "
        f"{run.failed}, Errors: 0, Skipped: 0, Time elapsed: {run.seconds:.3f} s <<< FAILURE!\n"
        f"[ERROR] {name}.{task.test_name}:31 {task.failure}\n[INFO] \n[INFO] Results:\n"
        f"[INFO] \n[ERROR] Tests run: {run.total}, Failures: {run.failed}, Errors: 0, "
        "Skipped: 0\n[INFO] \n[INFO] BUILD FAILURE\n"
    )


def _junit_regression(task: Task) -> str:
    name = _stem(task.test_path).removesuffix("Test") + "RegressionTest"
    return (
        "package org.example;\n\nimport static org.junit.jupiter.api.Assertions.*;\n\n"
        f"import org.junit.jupiter.api.Test;\n\nclass {name} {{\n    @Test\n"
        f"    void {task.test_name}Regression() {{\n        {task.check}\n    }}\n}}\n"
    )


# --- Ruby / rspec ------------------------------------------------------------------------
def _rspec_pass(task: Task, run: TestRun) -> str:
    return (
        f"{'.' * run.total}\n\nFinished in {run.seconds:.5f} seconds (files took 0.11 seconds "
        f"to load)\n{run.total} examples, 0 failures\n"
    )


def _rspec_fail(task: Task, run: TestRun) -> str:
    ok = run.total - run.failed
    plural = "failure" if run.failed == 1 else "failures"
    return (
        f"{'.' * ok}{'F' * run.failed}\n\nFailures:\n\n  1) {task.symbol} {task.test_name}\n"
        f"     Failure/Error: {task.check}\n\n       {task.failure}\n"
        f"     # ./{task.test_path}:12\n\nFinished in {run.seconds:.5f} seconds\n"
        f"{run.total} examples, {run.failed} {plural}\n\nFailed examples:\n\n"
        f"rspec ./{task.test_path}:12 # {task.symbol} {task.test_name}\n"
    )


def _rspec_regression(task: Task) -> str:
    return (
        f'require_relative "../{task.path.removesuffix(".rb")}"\n\n'
        f'RSpec.describe "{task.symbol} regression" do\n  it "{task.test_name}" do\n'
        f"    {task.check}\n  end\nend\n"
    )


# --- C / make ----------------------------------------------------------------------------
def _make_head(task: Task) -> str:
    stem = _stem(task.test_path)
    return (
        f"cc -Wall -Wextra -O1 -g -Iinclude -fsanitize=address -o build/{stem} "
        f"{task.test_path} {task.path}\n./build/{stem}\n"
    )


def _make_pass(task: Task, run: TestRun) -> str:
    lines = "".join(f"[PASS] case_{i}\n" for i in range(run.total - 1))
    return f"{_make_head(task)}{lines}[PASS] {task.test_name}\nall tests passed\n"


def _make_fail(task: Task, run: TestRun) -> str:
    ok = run.total - run.failed
    lines = "".join(f"[PASS] case_{i}\n" for i in range(ok))
    return (
        f"{_make_head(task)}{lines}[FAIL] {task.test_name}: {task.failure}\n"
        f"{run.failed} failed, {ok} passed\nmake: *** [Makefile:18: test] Error 1\n"
    )


def _c_regression(task: Task) -> str:
    return f'#include "check.h"\n\nTEST({task.test_name}_regression) {{\n    {task.check}\n}}\n'


def _insert_before_ext(path: str, marker: str) -> str:
    folder, _, name = path.rpartition("/")
    stem, _, ext = name.partition(".")
    return f"{folder}/{stem}{marker}.{ext}" if folder else f"{stem}{marker}.{ext}"


LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in (
        Language(
            "python",
            "python -m pytest -q tests",
            "pytest -q tests",
            "bash: pytest: command not found",
            "#",
            ("pyproject.toml", "README.md"),
            lambda t: _insert_before_ext(t.test_path, "_regression"),
            _pytest_regression,
            _pytest_pass,
            _pytest_fail,
        ),
        Language(
            "go",
            "go test ./...",
            "gotestsum --format testname ./...",
            "bash: gotestsum: command not found",
            "//",
            ("go.mod", "README.md"),
            lambda t: t.test_path.replace("_test.go", "_regression_test.go"),
            _go_regression,
            _go_pass,
            _go_fail,
        ),
        Language(
            "rust",
            "cargo test",
            "cargo nextest run",
            "bash: cargo-nextest: command not found",
            "//",
            ("Cargo.toml", "src/lib.rs"),
            lambda t: _insert_before_ext(t.test_path, "_regression"),
            _rust_regression,
            _cargo_pass,
            _cargo_fail,
        ),
        Language(
            "typescript",
            "npx jest --ci",
            "yarn jest --ci",
            "bash: yarn: command not found",
            "//",
            ("package.json", "tsconfig.json"),
            lambda t: t.test_path.replace(".test.ts", ".regression.test.ts"),
            _jest_regression,
            _jest_pass,
            _jest_fail,
        ),
        Language(
            "java",
            "mvn -q test",
            "gradle test",
            "bash: gradle: command not found",
            "//",
            ("pom.xml", "README.md"),
            lambda t: t.test_path.replace("Test.java", "RegressionTest.java"),
            _junit_regression,
            _maven_pass,
            _maven_fail,
        ),
        Language(
            "ruby",
            "bundle exec rspec",
            "rspec --format progress",
            "bash: rspec: command not found",
            "#",
            ("Gemfile", "Rakefile"),
            lambda t: t.test_path.replace("_spec.rb", "_regression_spec.rb"),
            _rspec_regression,
            _rspec_pass,
            _rspec_fail,
        ),
        Language(
            "c",
            "make test",
            "ctest --test-dir build --output-on-failure",
            "bash: ctest: command not found",
            "//",
            ("Makefile", "include/check.h"),
            lambda t: _insert_before_ext(t.test_path, "_regression"),
            _c_regression,
            _make_pass,
            _make_fail,
        ),
    )
}
