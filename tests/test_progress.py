"""Progress on long runs: count, rate, and with a known total a percentage and time left;
redrawn in place on a terminal, plain lines anywhere else."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from pipelines.cli import main
from transforms.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_known_total_gives_percentage_rate_and_time_left() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = Progress(stream, "run", every=100, clock=lambda: now[0], total=1000, unit="units")
    for done in (100, 400):
        now[0] += 2.0
        progress.update(done)
    progress.close()
    assert stream.getvalue().splitlines() == [
        "run:  10% 100/1000 [00:02<00:18, 50.00 units/s]",
        "run:  40% 400/1000 [00:04<00:06, 100.00 units/s]",
    ]


def test_a_terminal_gets_one_line_redrawn_with_a_bar() -> None:
    now = [0.0]
    stream = Terminal()
    progress = Progress(stream, "run", every=1, clock=lambda: now[0], total=4, unit="units")
    for done in (1, 2, 3, 4):
        now[0] += 1.0
        progress.update(done)
    progress.close()
    text = stream.getvalue()
    assert text.count("\r") == 4 and text.endswith("\n") and text.count("\n") == 1
    assert "100%|" in text and "4/4" in text


def test_a_short_run_prints_nothing() -> None:
    stream = Terminal()
    progress = Progress(stream, "run", every=1000, clock=lambda: 0.0, total=10)
    progress.update(3)
    progress.close()
    assert stream.getvalue() == ""


def test_a_long_run_shows_units_out_of_their_total_and_writes_the_same_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = tmp_path / "jobs"
    synth = ["synth", "--out", str(jobs), "--jobs", "1", "--trials", "1001", "--seed", "4"]
    assert main(synth) == 0
    capsys.readouterr()
    assert main(["run", "--input", str(jobs), "--output", str(tmp_path / "with")]) == 0
    lines = capsys.readouterr().err.splitlines()  # every 1,000 units, or every 5 s
    assert lines and all(
        line.startswith("trajcurate run: read: ") and "/1001 [" in line and "units/s]" in line
        for line in lines
    ), lines
    assert any(" 1000/1001 [" in line for line in lines), lines
    quiet = tmp_path / "without"
    assert main(["run", "--no-progress", "--input", str(jobs), "--output", str(quiet)]) == 0
    for path in sorted(quiet.rglob("*.json*")):
        if path.name not in ("manifest.json", "runs.jsonl"):
            assert (tmp_path / "with" / path.relative_to(quiet)).read_bytes() == path.read_bytes()


def test_processes_sharing_the_units_print_their_own_counts_in_plain_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker process sees only its share: a bar of the whole would stop half-way."""
    from transforms.readers.confined import ReadLimits
    from transforms.stages import OpenUnits

    stream = Terminal()
    monkeypatch.setattr("sys.stderr", stream)
    reader = OpenUnits(ReadLimits(), progress=True, processes=2)
    for _ in range(1000):
        reader._show_progress(2000)
    reader.teardown()
    (line,) = stream.getvalue().splitlines()
    assert line.startswith(f"trajcurate run: read (process {os.getpid()}): 1000 units, ")
    assert "\r" not in stream.getvalue() and "%" not in line
