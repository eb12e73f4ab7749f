"""`trajcurate score --workers N`: worker processes write what one process writes.

The real chain and scorer, on the reference records rebuilt into instances of one to three
lines (a main record and its subagents) with bad lines among them; spans are made small
(`MIN_SPAN_BYTES`) so these few megabytes are shared out as a large file would be.
"""

from __future__ import annotations

import itertools
import os
import pickle
import random
import signal
from pathlib import Path
from typing import Any

import orjson
import pytest

import pipelines.score_workers as score_workers
from pipelines.cli import main
from pipelines.score_workers import worker_count
from transforms.jsonl import ByteWindow
from transforms.read_ahead import usable_cores
from transforms.readers.im_spans import Span, cut_problem, reading_problem, split_spans

SUFFIXES = (".jsonl", ".rejects.jsonl", ".dead_letter.jsonl")


@pytest.fixture
def small_spans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Spans of 64 KiB; returns the list that gets each shared-out run's number of shares."""
    monkeypatch.setattr(score_workers, "MIN_SPAN_BYTES", 64 * 1024)
    shares: list[int] = []
    real = score_workers._shares

    def counted(pieces: list[Any], workers: int) -> list[list[Any]]:
        result = real(pieces, workers)
        shares.append(len(result))
        return result

    monkeypatch.setattr(score_workers, "_shares", counted)
    return shares


def _instances(cases: list[dict[str, Any]]) -> list[bytes]:
    """The records as lines, every third instance with two subagent records after its main
    (copies of the next records, renamed into it)."""
    lines: list[bytes] = []
    index = 0
    while index < len(cases):
        main_record = cases[index]
        info = main_record["meta_info"]["unique_info"]
        lines.append(orjson.dumps(main_record))
        if index % 3 == 0 and info.get("_agent_type", "main") == "main":
            for sub in cases[index + 1 : index + 3]:
                sub_info = sub["meta_info"]["unique_info"]
                sub_info["_instance_id"], sub_info["_agent_type"] = info["_instance_id"], "subagent"
                sub_info.pop("_instance_metadata", None)
                lines.append(orjson.dumps(sub))
            index += 3
        else:
            index += 1
    return lines


def _with_bad_lines(lines: list[bytes]) -> list[bytes]:
    """Bad lines spread over the file: not JSON, not an object, a blank line, and after an
    instance's lines one naming it that is no IM record (which rejects the instance whole)."""
    out = list(lines)
    for fraction, bad in ((0.1, b'{"not json'), (0.5, b"[1, 2]"), (0.55, b""), (0.9, b'{"no')):
        out.insert(int(len(out) * fraction), bad)
    at = int(len(out) * 0.7)
    named = orjson.loads(out[at])["meta_info"]["unique_info"]["_instance_id"]
    while orjson.loads(out[at + 1])["meta_info"]["unique_info"]["_instance_id"] == named:
        at += 1
    out.insert(at + 1, orjson.dumps({"meta_info": {"unique_info": {"_instance_id": named}}}))
    return out


def _write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _score(inputs: list[Path], output: Path, *flags: str) -> int:
    return main(["score", *flags, *map(str, inputs), "-o", str(output)])


def _outputs(output: Path) -> list[bytes]:
    stem = output.name.removesuffix(".jsonl")
    return [output.with_name(stem + suffix).read_bytes() for suffix in SUFFIXES]


def _summary(text: str, output: Path) -> str:
    return text.replace(str(output.with_suffix("")), "OUT")


def _one_and_many(
    tmp_path: Path, inputs: list[Path], capsys: pytest.CaptureFixture[str], workers: str = "3"
) -> tuple[str, str]:
    """Score `inputs` in one process, then with `workers`; assert the same exit code, files
    and summary; return each run's stderr."""
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    code_one = _score(inputs, one, "--workers", "1")
    run_one = capsys.readouterr()
    code_many = _score(inputs, many, "--workers", workers)
    run_many = capsys.readouterr()
    assert code_many == code_one
    assert _outputs(many) == _outputs(one)
    assert _summary(run_many.out, many) == _summary(run_one.out, one)
    return run_one.err, run_many.err


@pytest.fixture
def instances(cases: list[dict[str, Any]]) -> list[bytes]:
    return _instances(cases)


def test_workers_write_what_one_process_writes(
    tmp_path: Path,
    instances: list[bytes],
    small_spans: list[int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = _with_bad_lines(instances)
    path = _write_lines(tmp_path / "in.jsonl", lines)
    one_err, many_err = _one_and_many(tmp_path, [path], capsys)
    assert small_spans == [3]  # shared out: no line says it ran in one process
    assert "one process" not in many_err
    echoed = [line for line in one_err.splitlines() if "records," not in line]
    assert len(echoed) == 4 and echoed == many_err.splitlines()  # the drops, in input order
    bad = [n for n, line in enumerate(lines, 1) if line and not line.startswith(b'{"version"')]
    rejects = _outputs(tmp_path / "many.jsonl")[1].splitlines()
    assert [orjson.loads(r)["reason"].split(": ")[0] for r in rejects] == [
        f"{path}:{n}" for n in bad
    ]


def test_several_inputs_are_shared_whole_or_by_span(
    tmp_path: Path,
    instances: list[bytes],
    small_spans: list[int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    parts = (instances[:40], instances[40:60], instances[60:])
    inputs = [_write_lines(tmp_path / f"in{n}.jsonl", part) for n, part in enumerate(parts)]
    _, many_err = _one_and_many(tmp_path, inputs, capsys, workers="2")
    assert small_spans == [2] and "one process" not in many_err


def test_interleaved_instances_are_scored_in_one_process_saying_why(
    tmp_path: Path,
    instances: list[bytes],
    small_spans: list[int],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Known from the first look at the spans, before any worker curates a record (a worker
    that did would fail the run differently)."""
    shuffled = list(instances)
    random.Random(5).shuffle(shuffled)  # a main record and its subagents apart
    path = _write_lines(tmp_path / "in.jsonl", shuffled)
    monkeypatch.setattr(score_workers, "_curate_share", _raising)
    _, many_err = _one_and_many(tmp_path, [path], capsys, workers="2")
    assert f"trajcurate score: scoring in one process: {path}: an instance has lines on both " in (
        many_err
    )


def test_a_span_without_an_im_record_is_scored_in_one_process(
    tmp_path: Path,
    instances: list[bytes],
    small_spans: list[int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The whole file's reader holds rejected lines back until it has seen a record; a span
    of nothing else cannot say what it would have done."""
    filler = orjson.dumps({"x": "y" * 1000})
    size = sum(map(len, instances[:60]))
    path = _write_lines(tmp_path / "in.jsonl", instances[:60] + [filler] * (size // 1000))
    _, many_err = _one_and_many(tmp_path, [path], capsys, workers="2")
    assert "scoring in one process" in many_err and "no IM record among the lines from" in many_err


def _killed(job: Any) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _raising(job: Any) -> None:
    raise MemoryError("out of memory")


@pytest.mark.parametrize(
    ("fail", "said"),
    [
        (_killed, "a worker stopped before it was done"),
        (_raising, "a worker failed: MemoryError: out of memory"),
    ],
)
def test_a_failed_worker_loses_nothing(
    tmp_path: Path,
    instances: list[bytes],
    small_spans: list[int],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fail: Any,
    said: str,
) -> None:
    real = score_workers._curate_share

    def second_fails(job: Any) -> Any:
        if job.index == 1:
            fail(job)
        return real(job)

    monkeypatch.setattr(score_workers, "_curate_share", second_fails)
    path = _write_lines(tmp_path / "in.jsonl", instances)
    _, many_err = _one_and_many(tmp_path, [path], capsys, workers="2")
    assert f"trajcurate score: scoring in one process: {said}" in many_err
    assert not list(tmp_path.glob("*.w[0-9]*"))  # no worker's part is left behind


def test_a_file_that_grows_while_read_is_scored_again_whole(
    tmp_path: Path,
    instances: list[bytes],
    small_spans: list[int],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lines appended after the cuts would be missing from the spans: one process reads to
    the end of the file as it is then."""
    path = _write_lines(tmp_path / "in.jsonl", instances[:-5])
    real = score_workers._check_spans

    def append_then_check(pieces: list[Any], problem_of: Any) -> None:
        if problem_of is reading_problem and path.stat().st_size < sum(map(len, instances)):
            with open(path, "ab") as handle:
                handle.write(b"".join(line + b"\n" for line in instances[-5:]))
        real(pieces, problem_of)

    monkeypatch.setattr(score_workers, "_check_spans", append_then_check)
    out = tmp_path / "out.jsonl"
    assert _score([path], out, "--workers", "2") == 0
    assert (
        f"scoring in one process: {path}: it changed while it was read" in capsys.readouterr().err
    )
    assert len(out.read_bytes().splitlines()) == len(instances)  # the appended ones too


def test_strict_and_small_inputs_run_in_this_process(
    tmp_path: Path,
    instances: list[bytes],
    small_spans: list[int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write_lines(tmp_path / "in.jsonl", instances)
    assert _score([path], tmp_path / "out.jsonl", "--workers", "2", "--strict") == 0
    assert small_spans == []
    tiny = _write_lines(tmp_path / "tiny.jsonl", instances[:1])
    assert _score([tiny], tmp_path / "out.jsonl", "--workers", "2") == 0
    assert "one process" not in capsys.readouterr().err  # too little to share: nothing said


def test_workers_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert worker_count(0) == usable_cores() and worker_count(3) == 3
    assert _score([tmp_path / "x.jsonl"], tmp_path / "o.jsonl", "--workers", "-1") == 2
    assert "error: argument --workers: a whole number from 0 to 256\n" in capsys.readouterr().err
    diagnose = ["diagnose", "--workers", "2", str(tmp_path / "x.jsonl"), "-o", "o.jsonl"]
    assert main(diagnose) == 2  # `diagnose` runs in one process: it takes no --workers
    assert "unrecognized arguments: --workers" in capsys.readouterr().err


def _spans_of(data: bytes, parts: int, path: Path) -> list[Span]:
    path.write_bytes(data)
    with open(path, "rb") as handle:
        return split_spans(handle, parts, 2**20)


def test_spans_cut_between_instances_and_number_their_lines(tmp_path: Path) -> None:
    lines = [b'{"_instance_id": "a%d", "n": %d}' % (n // 3, n) for n in range(300)]
    data = b"".join(line + b"\n" for line in lines)
    spans = _spans_of(data, 4, tmp_path / "f.jsonl")
    assert len(spans) == 4 and spans[0].start == 0 and spans[-1].stop == len(data)
    for before, after in itertools.pairwise(spans):
        assert before.stop == after.start
    for span in spans:
        assert span.first_line == data[: span.start].count(b"\n") + 1
        assert (span.first_line - 1) % 3 == 0  # never inside an instance's three lines
    one_instance = b"".join(b'{"_instance_id": "a"}\n' for _ in range(3000))
    assert len(_spans_of(one_instance, 4, tmp_path / "g.jsonl")) == 1  # no cut within reach


def test_spans_say_why_they_cannot_be_read_apart() -> None:
    def span(first: int, ids: set[str] | None, trusted: bool = True, valid: int = 1) -> Span:
        return Span(0, 1, first, None if ids is None else frozenset(ids), trusted, valid)

    apart = [span(1, {"a"}), span(9, {"b"})]
    assert cut_problem(apart) is None and reading_problem(apart) is None
    assert "on both sides of line 9" in str(cut_problem([span(1, {"a"}), span(9, {"a"})]))
    assert "could not be counted" in str(cut_problem([span(1, None)]))
    assert "no IM record among the lines from 9" in str(
        reading_problem([span(1, {"a"}), span(9, {"b"}, valid=0)])
    )
    assert "could not be counted" in str(reading_problem([span(1, {"a"}, trusted=False)]))


def test_a_span_is_pickled_without_its_counts() -> None:
    looked = Span(0, 10, 1, frozenset({"a"}), looked=True, counts={"a": 2})
    again = pickle.loads(pickle.dumps(looked))
    assert again.counts is None and again.ids == frozenset({"a"}) and again.looked


def test_byte_window_reads_lines_up_to_its_length(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"one\ntwo\nthree\n")
    with open(path, "rb") as handle:
        handle.seek(4)
        assert list(ByteWindow(handle, 4)) == [b"two\n"]
        handle.seek(4)
        assert ByteWindow(handle, 10).readline(2) == b"tw"
