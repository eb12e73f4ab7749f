"""Read-ahead (`transforms/read_ahead.py`): a helper process opens the trials of a local run
(or of `trajcurate convert`) while the ones before are curated, and changes nothing written.

Each run here is a process of its own: the helper is forked at the start of `trajcurate
run` and `convert` only while no other thread is alive, which a test process cannot promise.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from test_outputs_unchanged import DATA_FILES

REPO = Path(__file__).resolve().parents[1]


def _trajcurate(*args: str, pin: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [*(pin or []), sys.executable, "-m", "pipelines.cli", *args]
    result = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def _run(
    inputs: list[Path], output: Path, *options: str, pin: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    given = [arg for path in inputs for arg in ("--input", str(path))]
    arguments = ["run", *given, "--output", str(output), "--instance-status", "all", *options]
    return _trajcurate(*arguments, pin=pin)


def _read_ahead_line(result: subprocess.CompletedProcess[str]) -> str | None:
    return next(
        (line for line in result.stdout.splitlines() if line.startswith("read-ahead")), None
    )


def _data_files(output: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(output)): path.read_bytes()
        for path in sorted(output.rglob("*"))
        if path.name in DATA_FILES
    }


@pytest.mark.parametrize("progress", [[], ["--no-progress"]], ids=["progress", "no-progress"])
def test_read_ahead_writes_what_reading_in_the_run_writes(
    tmp_path: Path, composed: Path, synth_jobs: Path, progress: list[str]
) -> None:
    """The composed job's real trajectories and two synth jobs with corrupt trials (rejects
    and dead letters among them), with and without the progress line (which counts every
    unit first, so opening is not fused with detection)."""
    ahead = _run([composed, synth_jobs], tmp_path / "ahead", *progress)
    here = _run([composed, synth_jobs], tmp_path / "here", "--read-ahead", "off", *progress)

    manifest = json.loads((tmp_path / "ahead" / "manifest.json").read_text())
    # the helper also ran the first stages (read, validate, redact): their counters too
    # come out as a run reading in place counts them
    in_place = json.loads((tmp_path / "here" / "manifest.json").read_text())
    assert manifest["beam_metrics"] == in_place["beam_metrics"]
    assert manifest["beam_metrics"]["redact.in"] > 0
    opened = manifest["beam_metrics"]["open.in"]
    assert _read_ahead_line(ahead) == f"read-ahead: {opened} units opened in a helper process"
    assert _read_ahead_line(here) is None
    files = _data_files(tmp_path / "ahead")
    assert files == _data_files(tmp_path / "here")
    assert sum(name.endswith("im.jsonl") for name in files) == 3  # every job written
    dropped = [name for name, data in files.items() if "rejects" in name or "dead" in name]
    assert any(files[name] for name in dropped), "the corpus should hold bad trials"
    assert manifest["accounting"]["balanced"]


def test_a_process_pinned_to_one_cpu_reads_in_the_run(tmp_path: Path, composed: Path) -> None:
    taskset = shutil.which("taskset")
    if taskset is None:
        pytest.skip("taskset not found")
    pinned = _run([composed], tmp_path / "pinned", pin=[taskset, "-c", "0"])
    assert _read_ahead_line(pinned) is None
    assert "wall time" in pinned.stdout


def test_an_im_corpus_is_read_in_the_run(tmp_path: Path, cases_lines: list[bytes]) -> None:
    """Parsing IM costs what sending its records back would: an IM file stays in the run."""
    corpus = tmp_path / "cases.jsonl"
    corpus.write_bytes(b"\n".join(cases_lines[:40]) + b"\n")
    result = _run([corpus], tmp_path / "out")
    assert _read_ahead_line(result) is None
    assert (tmp_path / "out" / "standalone" / "im.jsonl").stat().st_size > 0


def test_a_unit_of_many_bundles_comes_back_a_bundle_at_a_time(
    tmp_path: Path, shared_dir: Path
) -> None:
    """An OpenHands `output.jsonl` is one unit of one bundle per line: the helper sends each
    as it is read, and the run writes what reading it in place writes."""
    corpus = shared_dir / "data" / "real" / "native" / "openhands-eval" / "output.jsonl"
    ahead = _run([corpus], tmp_path / "ahead")
    here = _run([corpus], tmp_path / "here", "--read-ahead", "off")
    assert _read_ahead_line(ahead) == "read-ahead: 1 unit opened in a helper process"
    assert _read_ahead_line(here) is None
    files = _data_files(tmp_path / "ahead")
    assert files == _data_files(tmp_path / "here")
    assert files["standalone/im.jsonl"].count(b"\n") > 1


def _convert(inputs: list[Path], output: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return _trajcurate("convert", *map(str, inputs), "-o", str(output), *options)


def _convert_outputs(output: Path) -> list[bytes]:
    names = (output.name, f"{output.stem}.rejects.jsonl", f"{output.stem}.dead_letter.jsonl")
    return [(output.parent / name).read_bytes() for name in names]


def test_convert_reads_ahead_in_the_order_of_its_inputs(
    tmp_path: Path, composed: Path, synth_jobs: Path, cases_lines: list[bytes], shared_dir: Path
) -> None:
    """`convert` writes bundles in the order it opens them: an IM file (read in the run)
    between trials and standalone real files (read by the helper) must come out in place."""
    corpus = tmp_path / "cases.jsonl"
    corpus.write_bytes(b"\n".join(cases_lines[:20]) + b"\n")
    inputs = [composed, corpus, synth_jobs, shared_dir / "data" / "real" / "atif"]
    ahead = _convert(inputs, tmp_path / "ahead.jsonl")
    here = _convert(inputs, tmp_path / "here.jsonl", "--read-ahead", "off")

    assert _convert_outputs(tmp_path / "ahead.jsonl") == _convert_outputs(tmp_path / "here.jsonl")
    line = _read_ahead_line(ahead)
    assert line is not None and line.endswith("units opened in a helper process")
    assert int(line.split()[1]) >= 6 + 120  # the composed job's trials and the synth jobs'
    assert _read_ahead_line(here) is None
    summary = [text for text in ahead.stdout.splitlines() if not text.startswith("read-ahead")]
    assert summary == [text.replace("here.", "ahead.") for text in here.stdout.splitlines()]
    assert _convert_outputs(tmp_path / "ahead.jsonl")[1], "the corpus should hold bad trials"


KILLED_HELPER = """
import json, os, signal, sys
from transforms import read_ahead
from transforms.chain import Drop
from transforms.intake import detect_units, open_unit
from transforms.readers.confined import DEFAULT_LIMITS

helper = read_ahead.start()
assert helper is not None, "no helper in a fresh process with two CPUs"
units = [u for u in detect_units(sys.argv[1], None, DEFAULT_LIMITS) if not isinstance(u, Drop)]
# More results than their pipe holds, so the helper is still at work when killed; but every
# request (~350 bytes a unit) fits the 64 KiB request pipe: all are sent before any result
# is taken, and one that did not fit would block the run while the helper waits for it.
sent = units * int(sys.argv[2])
for unit in sent:
    helper.send(unit, DEFAULT_LIMITS)
stream = helper.take()
first = [next(stream) for _ in range(int(sys.argv[3]))]  # the first unit's first items
os.kill(helper._process.pid, signal.SIGKILL)
taken = [first + list(stream), *map(list, helper.drain())]
expected = [list(open_unit(unit, DEFAULT_LIMITS)) for unit in sent]
print(json.dumps({
    "same": taken == expected,
    "units": len(taken),
    "failed": helper.failed,
    "opened_there": helper.opened_there,
}))
"""


def _script(source: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`source` run by Python in a fresh process (no thread alive but its own)."""
    result = subprocess.run(
        [sys.executable, "-c", source, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def test_a_killed_helper_loses_nothing(composed: Path) -> None:
    # 120 units: ~1.9 MB of results (the composed job's six give ~95 KB), ~42 KB of requests
    result = _script(KILLED_HELPER, str(composed), "20", "1")
    outcome = orjson.loads(result.stdout)
    assert outcome["same"] is True
    assert outcome["units"] == 6 * 20
    assert 1 <= outcome["opened_there"] < outcome["units"]
    assert outcome["failed"] == (
        "read-ahead off: its helper process stopped (killed by signal 9); the rest is read "
        "in the run"
    )
    assert f"trajcurate: {outcome['failed']}" in result.stderr


def test_a_helper_killed_inside_a_streamed_unit_repeats_nothing(
    tmp_path: Path, cases_lines: list[bytes]
) -> None:
    """Killed after sending three bundles of a unit of many (an IM file, sent to the helper
    directly here): the run opens the unit itself and skips the three, so each bundle comes
    out once."""
    corpus = tmp_path / "cases.jsonl"
    corpus.write_bytes(b"\n".join(cases_lines[:200]) + b"\n")  # more than the pipe holds
    outcome = orjson.loads(_script(KILLED_HELPER, str(corpus), "2", "3").stdout)
    assert outcome["same"] is True
    assert outcome["units"] == 2
    assert outcome["opened_there"] == 0
    assert outcome["failed"].startswith("read-ahead off: its helper process stopped")


def test_read_ahead_accepts_auto_and_off_only(tmp_path: Path, composed: Path) -> None:
    command = [sys.executable, "-m", "pipelines.cli", "run", "--input", str(composed)]
    result = subprocess.run(
        [*command, "--output", str(tmp_path / "o"), "--read-ahead", "on"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "--read-ahead" in result.stderr and "'auto', 'off'" in result.stderr


OUT_OF_PLAN = """
import json, sys
from transforms import read_ahead
from transforms.chain import Begun, ChainSettings, Drop
from transforms.intake import detect_units, open_unit
from transforms.readers.confined import DEFAULT_LIMITS

helper = read_ahead.start()
chain = ChainSettings(instance_status="all")
units = [u for u in detect_units(sys.argv[1], None, DEFAULT_LIMITS) if not isinstance(u, Drop)]
read_ahead.plan([sys.argv[1]], None, DEFAULT_LIMITS, chain)
asked = [*units[:2], *reversed(units[2:])]  # the plan's order, then out of it
for unit in asked:
    helper.send(unit, DEFAULT_LIMITS, chain)
taken = [list(helper.take()) for _ in asked]
bundles = [[item.item if isinstance(item, Begun) else item for item in got] for got in taken]
expected = [list(open_unit(unit, DEFAULT_LIMITS)) for unit in asked]
same = [[b["instance_id"] for b in got] == [b["instance_id"] for b in want]
        for got, want in zip(bundles, expected)]
print(json.dumps({"same": same, "begun": all(isinstance(i, Begun) for t in taken for i in t)}))
"""


def test_units_asked_for_out_of_plan_come_back_as_asked(composed: Path) -> None:
    """The helper plans the job's six trials; the run asks for two in order, then the rest
    reversed: each comes back as the unit asked for, through the first stages."""
    outcome = orjson.loads(_script(OUT_OF_PLAN, str(composed)).stdout)
    assert outcome == {"same": [True] * 6, "begun": True}


LEFT_PENDING = """
import json, sys
from transforms import read_ahead
from transforms.chain import Drop
from transforms.intake import detect_units
from transforms.readers.confined import DEFAULT_LIMITS

read_ahead.start()
owner = object()
helper = read_ahead.claim(owner)
units = [u for u in detect_units(sys.argv[1], None, DEFAULT_LIMITS) if not isinstance(u, Drop)]
for unit in units:
    helper.send(unit, DEFAULT_LIMITS)
read_ahead.release(owner)  # as when a bundle raises before it took its units back
print(json.dumps({"failed": helper.failed, "claimed": read_ahead.claim(object()) is not None}))
"""


def test_a_helper_left_with_units_is_not_handed_on(composed: Path) -> None:
    """A next owner would take back the results of units it never sent."""
    result = _script(LEFT_PENDING, str(composed))
    assert orjson.loads(result.stdout) == {
        "failed": "left with units its owner did not take back",
        "claimed": False,
    }
