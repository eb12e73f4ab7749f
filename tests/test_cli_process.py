"""`trajcurate` as a separate process: a light import, exit codes, and the real TQS V2 scorer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipelines.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]

# A real Claude Code run, a real Terminus-2 run, a synthetic probe, and a subagent record.
REAL_SCORER_CASES = (
    "real-atif-claude-code-pass",
    "real-atif-terminus-2-linear-history",
    "diag-ped-same-edit-retry",
    "subagent-loopy",
)


def _trajcurate() -> list[str]:
    script = Path(sys.executable).with_name("trajcurate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pipelines.cli"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_import_does_not_load_apache_beam() -> None:
    code = "import pipelines.cli, sys; assert 'apache_beam' not in sys.modules"
    result = _run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr


def test_missing_input_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    result = _run(
        *_trajcurate(), "score", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o.jsonl")
    )
    assert result.returncode == 2
    assert result.stderr == (
        f"trajcurate score: error: cannot read {tmp_path}/nope.jsonl: No such file or directory\n"
    )


def _selected(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {r["meta_info"]["unique_info"]["_instance_id"]: r for r in cases}
    return [by_id[instance_id] for instance_id in REAL_SCORER_CASES]


def _assert_scores_match(written: list[dict[str, Any]], reference: list[dict[str, Any]]) -> None:
    assert len(written) == len(reference)
    for got, want in zip(written, reference, strict=True):
        got_score = got["meta_info"]["unique_info"]["_score"]
        want_score = want["meta_info"]["unique_info"]["_score"]
        name = want["meta_info"]["unique_info"]["_instance_id"]
        if want_score is None:
            assert got_score is None, name
        else:  # written records carry every schema key; the reference's must match
            assert got_score.get("scaffold_source") is None, name
            mine = {key: got_score[key] for key in want_score}
            assert mine == pytest.approx(want_score, abs=1e-9), name


def test_real_scorer_subprocess_reproduces_reference_scores(
    tmp_path: Path, cases: list[dict[str, Any]]
) -> None:
    """Needs the real TQS V2 (scorers/tqs_v2), not the placeholder."""
    reference = _selected(cases)
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in reference))
    out = tmp_path / "scored.jsonl"
    result = _run(*_trajcurate(), "score", str(src), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    _assert_scores_match([orjson.loads(line) for line in out.read_bytes().splitlines()], reference)


def test_real_scorer_in_process_on_the_whole_reference_file(
    tmp_path: Path,
    cases_path: Path,
    cases: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Needs the real TQS V2: every stored `_score` of cases.jsonl comes back, in order."""
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(cases_path), "-o", str(out)]) == 0
    err_lines = capsys.readouterr().err.splitlines()
    assert all(line.startswith("trajcurate score: ") for line in err_lines)  # progress only
    _assert_scores_match([orjson.loads(line) for line in out.read_bytes().splitlines()], cases)


# `exit_without_teardown`: what the `trajcurate` script ends with.
_EXIT_PROGRAM = """
import atexit, sys, threading, time
from pipelines.cli import exit_without_teardown

class Noisy:
    def __del__(self):
        sys.stderr.write("torn down\\n")

kept = Noisy()  # a module global: only the interpreter's teardown deletes it
atexit.register(lambda: open(sys.argv[1], "w").write("exit handlers ran"))
print("x" * 200_000, end="")
sys.stderr.write("last words\\n")
if sys.argv[2] == "thread":
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread done", end=""))).start()
exit_without_teardown(3)
"""


def test_the_process_ends_without_teardown_and_loses_no_output(tmp_path: Path) -> None:
    marker = tmp_path / "atexit.txt"
    result = _run(sys.executable, "-c", _EXIT_PROGRAM, str(marker), "alone")
    assert result.returncode == 3
    assert result.stdout == "x" * 200_000  # flushed through the pipe before the end
    assert result.stderr == "last words\n"  # no teardown: the global's __del__ never ran
    assert marker.read_text() == "exit handlers ran"


def test_a_thread_still_running_is_waited_for_as_python_does(tmp_path: Path) -> None:
    marker = tmp_path / "atexit.txt"
    result = _run(sys.executable, "-c", _EXIT_PROGRAM, str(marker), "thread")
    assert result.returncode == 3
    assert result.stdout.endswith("thread done")
    assert "torn down" in result.stderr  # the usual exit, teardown included
    assert marker.read_text() == "exit handlers ran"


def test_the_trajcurate_script_is_the_entry_that_exits_so() -> None:
    script = Path(sys.executable).with_name("trajcurate")
    if not script.exists():
        pytest.skip("no installed trajcurate script")
    assert "from pipelines.cli import entry" in script.read_text()
