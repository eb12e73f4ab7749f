"""`trajcurate score` mechanics, in-process, with the scorer replaced by a reference lookup.

The fake returns the `_score` stored in cases.jsonl for the record's `_instance_id`, so every
figure below is a real reference figure; the real scorer is exercised in test_score_real.py.
"""

from __future__ import annotations

import gc
import hashlib
import io
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipelines.cli import main
from pipelines.curate_loop import CurationLoop
from pipelines.score_command import rejects_path
from scorers import tqs_v2
from scorers.im import agent_type
from transforms.chain import ChainSettings
from transforms.cleaning import clean_record
from transforms.progress import Progress
from transforms.readers.confined import ReadLimits
from transforms.sinks.schema import conform_im_record

Record = dict[str, Any]


def _tool_calls(record: Record) -> int:
    return sum(len(m.get("tool_calls") or []) for m in record["messages"])


class FakeScorer:
    """Reference `_score` by instance id; one error call per record that has tool calls."""

    def __init__(self, cases: list[Record]) -> None:
        self.scores: dict[str, dict[str, Any] | None] = {
            r["meta_info"]["unique_info"]["_instance_id"]: r["meta_info"]["unique_info"]["_score"]
            for r in cases
        }
        self.scaffolds: list[str | None] = []

    def score_record(
        self,
        record: Record,
        scaffold: str | None = None,
        scaffold_hints: bool = False,
        tools: str = "parity",
    ) -> dict[str, Any] | None:
        self.scaffolds.append(scaffold)
        if record["meta_info"]["unique_info"]["_instance_id"] == "explode":
            raise RuntimeError("boom")
        return self.scores[record["meta_info"]["unique_info"]["_instance_id"]]

    def count_tool_call_errors(
        self,
        record: Record,
        scaffold: str | None = None,
        scaffold_hints: bool = False,
        tools: str = "parity",
    ) -> tuple[int, int]:
        calls = _tool_calls(record)
        return calls, int(calls > 0)

    def score_and_count(
        self,
        record: Record,
        scaffold: str | None = None,
        scaffold_hints: bool = False,
        tools: str = "parity",
    ) -> tuple[dict[str, Any] | None, int, int]:
        return (self.score_record(record, scaffold), *self.count_tool_call_errors(record, scaffold))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, cases: list[Record]) -> FakeScorer:
    scorer = FakeScorer(cases)
    monkeypatch.setattr(tqs_v2, "score_record", scorer.score_record)
    monkeypatch.setattr(tqs_v2, "count_tool_call_errors", scorer.count_tool_call_errors)
    monkeypatch.setattr(tqs_v2, "score_and_count", scorer.score_and_count)
    return scorer


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _expect_provenance(expected: list[Record], files: list[Path]) -> None:
    """What the reader adds to each bundle's main record: the input file and the SHA-256 of
    every line the bundle was read from (`path#L<n>`)."""
    lines: dict[Path, list[bytes]] = {f: f.read_bytes().splitlines() for f in set(files)}
    numbers: dict[Path, int] = {}
    bundles: dict[tuple[Path, str], list[dict[str, str]]] = {}
    for record, file in zip(expected, files, strict=True):
        number = numbers[file] = numbers.get(file, 0) + 1
        entry = {"path": f"{file.name}#L{number}"}
        entry["sha256"] = hashlib.sha256(lines[file][number - 1]).hexdigest()
        instance = record["meta_info"]["unique_info"]["_instance_id"]
        bundles.setdefault((file, instance), []).append(entry)
    for record, file in zip(expected, files, strict=True):
        info = record["meta_info"]["unique_info"]
        if agent_type(record) == "main":
            read = bundles[(file, info["_instance_id"])]
            info["_instance_metadata"]["provenance"] = {"source": file.name, "files": read}


def _read(path: Path) -> list[Record]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _stale(record: Record) -> bytes:
    """The record as input: `_score` set to a stale value that the run must replace."""
    record["meta_info"]["unique_info"]["_score"] = {"stale": True}
    return orjson.dumps(record)


UNANSWERED = {
    "dpi-write-obs-missing": "message 10 calls Edit (id toolu_003730) and no tool message "
    "answers it before the model goes on",
    "tvr-missing-obs-parallel-cutoff": "message 14 calls Bash (id toolu_002207) and no tool "
    "message answers it before the model goes on",
}


def test_scores_every_record_in_input_order_keeping_keys(
    tmp_path: Path, cases: list[Record], fake: FakeScorer, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = [orjson.loads(orjson.dumps(r)) for r in cases]
    for record in expected:  # the chain's clean stage removes terminal escape sequences
        clean_record(record)
        info = record["meta_info"]["unique_info"]  # a score says which scorer version made it
        info["_scorer_version"] = tqs_v2.SCORER_VERSION if info["_score"] is not None else None
        # the two probes of a call whose result is missing are scored, and marked untrainable
        if info["_instance_id"] in UNANSWERED:
            reason = UNANSWERED[info["_instance_id"]]
            info["_trainable"] = f"record 1 of 1: unanswered call: {reason}"
    # ... and every IM writer writes the one output schema (transforms/sinks/schema.py)
    expected = [conform_im_record(r) for r in expected]
    first = _write(tmp_path / "a.jsonl", [_stale(r) for r in cases[:200]])
    second = _write(tmp_path / "b.jsonl", [_stale(r) for r in cases[200:]])
    out = tmp_path / "out" / "scored.jsonl"
    _expect_provenance(expected, [first] * 200 + [second] * (len(cases) - 200))

    assert main(["score", str(first), str(second), "-o", str(out)]) == 0

    written = out.read_bytes().splitlines()
    assert [orjson.loads(line) for line in written] == expected
    # byte-identical to the reference serialisation: same keys, same key order, same values
    assert written == [orjson.dumps(r) for r in expected]
    subagents = [r for r in _read(out) if agent_type(r) == "subagent"]
    assert len(subagents) == 4
    assert all(r["meta_info"]["unique_info"]["_score"] is None for r in subagents)
    assert rejects_path(out).read_bytes() == b""
    assert capsys.readouterr().err == ""


def test_summary_reports_counts_means_and_tool_call_error_rate(
    tmp_path: Path,
    cases_path: Path,
    cases: list[Record],
    fake: FakeScorer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["score", str(cases_path), "-o", str(tmp_path / "s.jsonl")]) == 0
    out = capsys.readouterr().out

    composites = [
        r["meta_info"]["unique_info"]["_score"]["composite_score"]
        for r in cases
        if agent_type(r) == "main"
    ]
    calls = sum(_tool_calls(r) for r in cases)
    errors = sum(_tool_calls(r) > 0 for r in cases)
    assert re.search(r"^records\s+335$", out, re.M)
    assert re.search(r"^  main\s+331$", out, re.M)
    assert re.search(r"^  subagent\s+4$", out, re.M)
    assert re.search(r"^rejected\s+0$", out, re.M)
    mean = sum(composites) / 331
    assert re.search(rf"^mean composite\s+{mean:.4f}  \(over 331 scored", out, re.M)
    assert re.search(r"^claudecode\s+198\s+0\.\d{4}$", out, re.M)
    assert re.search(r"^terminus2\s+27\s+0\.\d{4}$", out, re.M)
    assert re.search(rf"^tool calls\s+{calls}$", out, re.M)
    assert re.search(rf"^  errors\s+{errors}$", out, re.M)
    assert re.search(rf"^  error rate\s+{errors / calls:.6f}$", out, re.M)


def _renamed(record: Record, instance_id: str) -> Record:
    copy: Record = orjson.loads(orjson.dumps(record))
    copy["meta_info"]["unique_info"]["_instance_id"] = instance_id
    return copy


def test_bad_lines_are_rejected_with_file_line_and_reason(
    tmp_path: Path, cases: list[Record], fake: FakeScorer, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_role = _renamed(cases[0], "bad-role")
    bad_role["messages"][1]["role"] = "bot"
    long_line = b'{"x": "' + b"y" * 5000
    src = _write(
        tmp_path / "in.jsonl",
        [
            orjson.dumps(cases[0]),  # 1 ok
            b"{not json",  # 2
            b"",  # 3 blank: skipped silently
            b'{"k": "\xff"}',  # 4 invalid UTF-8
            orjson.dumps(bad_role),  # 5 not an IM record
            b"   ",  # 6 blank
            orjson.dumps(_renamed(cases[1], "explode")),  # 7 the scorer raises
            long_line,  # 8
            orjson.dumps(cases[2]),  # 9 ok
        ],
    )
    out = tmp_path / "scored.jsonl"

    assert main(["score", str(src), "-o", str(out)]) == 0

    assert [r["meta_info"]["unique_info"]["_instance_id"] for r in _read(out)] == [
        cases[0]["meta_info"]["unique_info"]["_instance_id"],
        cases[2]["meta_info"]["unique_info"]["_instance_id"],
    ]
    rejects = _read(tmp_path / "scored.rejects.jsonl")
    assert {r["stage"] for r in rejects} == {"read"}
    reasons = sorted(r["reason"] for r in rejects)
    assert [reason.split(": ", 1)[0] for reason in reasons] == [f"{src}:{n}" for n in (2, 4, 5, 8)]
    assert reasons[0].startswith(f"{src}:2: invalid JSON: ")
    assert reasons[1] == f"{src}:4: invalid UTF-8 at byte 7"
    assert reasons[2] == (
        f"{src}:5: not an IM record: messages.1.role: Input should be 'system', "
        "'user', 'assistant' or 'tool' (got \"bot\")"
    )
    (dead,) = _read(tmp_path / "scored.dead_letter.jsonl")
    assert (dead["stage"], dead["instance_id"]) == ("score", "explode")
    assert dead["error"] == "RuntimeError: boom"

    captured = capsys.readouterr()
    assert len(captured.err.splitlines()) == 5
    assert re.search(r"^records\s+2$", captured.out, re.M)
    assert re.search(r"^rejected\s+4$", captured.out, re.M)
    assert re.search(r"^dead-lettered\s+1$", captured.out, re.M)
    assert "in = written + rejected + dead-lettered: 7 = 2 + 4 + 1: yes" in captured.out


def test_rejects_file_is_rewritten_empty_on_a_clean_rerun(
    tmp_path: Path, cases: list[Record], fake: FakeScorer
) -> None:
    out = tmp_path / "scored.jsonl"
    dirty = _write(tmp_path / "dirty.jsonl", [b"[]", orjson.dumps(cases[0])])
    assert main(["score", str(dirty), "-o", str(out)]) == 0
    assert (
        _read(rejects_path(out))[0]["reason"]
        == f"{dirty}:1: a JSON array, expected an IM record object"
    )
    clean = _write(tmp_path / "clean.jsonl", [orjson.dumps(cases[0])])
    assert main(["score", str(clean), "-o", str(out)]) == 0
    assert rejects_path(out).read_bytes() == b""


def test_strict_makes_a_reject_fatal_and_writes_nothing(
    tmp_path: Path, cases: list[Record], fake: FakeScorer, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _write(tmp_path / "in.jsonl", [orjson.dumps(cases[0]), b"", b"oops"])
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(src), "-o", str(out), "--strict"]) == 1
    err = capsys.readouterr().err
    assert f"trajcurate score: error: {src}:3: invalid JSON: " in err
    assert err.rstrip().endswith("(--strict)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_strict_ignores_blank_lines(tmp_path: Path, cases: list[Record], fake: FakeScorer) -> None:
    src = _write(tmp_path / "in.jsonl", [b"", orjson.dumps(cases[0]), b" "])
    assert main(["score", str(src), "-o", str(tmp_path / "o.jsonl"), "--strict"]) == 0


def test_scaffold_option_is_passed_to_the_scorer(
    tmp_path: Path, cases: list[Record], fake: FakeScorer
) -> None:
    src = _write(tmp_path / "in.jsonl", [orjson.dumps(r) for r in cases[:3]])
    assert main(["score", str(src), "-o", str(tmp_path / "o.jsonl"), "--scaffold", "opencode"]) == 0
    assert fake.scaffolds == ["opencode"] * 3


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["score", "{tmp}/missing.jsonl", "-o", "{tmp}/o.jsonl"],
            "trajcurate score: error: cannot read {tmp}/missing.jsonl: No such file or directory",
        ),
        (
            ["score", "{tmp}", "-o", "{tmp}/o.jsonl"],
            "trajcurate score: error: cannot read {tmp}: Is a directory",
        ),
        (
            ["score", "{tmp}/in.jsonl", "-o", "{tmp}/in.jsonl"],
            "trajcurate score: error: output {tmp}/in.jsonl would overwrite an input",
        ),
        (
            ["score", "{tmp}/in.jsonl", "-o", "{tmp}"],
            "trajcurate score: error: output {tmp} is a directory",
        ),
        (
            ["score", "{tmp}/in.jsonl", "-o", "{tmp}/o.jsonl", "--scaffold", "cursor"],
            "trajcurate score: error: argument --scaffold: invalid choice: 'cursor' (choose from "
            "'claudecode', 'opencode', 'openhands', 'openhands_sdk', 'terminus2')",
        ),
        (
            ["score", "{tmp}/in.jsonl"],
            "trajcurate score: error: the following arguments are required: -o/--output",
        ),
        ([], "trajcurate: error: the following arguments are required: COMMAND"),
    ],
)
def test_usage_errors_and_unreadable_inputs_exit_2(
    tmp_path: Path,
    fake: FakeScorer,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    (tmp_path / "in.jsonl").write_bytes(b"")
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    assert _one_error_line(capsys) == message.format(tmp=tmp_path)


def test_unreadable_permission_exits_2(
    tmp_path: Path, fake: FakeScorer, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "secret.jsonl"
    src.write_bytes(b"")
    src.chmod(0)
    try:
        src.read_bytes()
        pytest.skip("running as a user that can read mode-000 files (root)")
    except PermissionError:
        pass
    assert main(["score", str(src), "-o", str(tmp_path / "o.jsonl")]) == 2
    expected = f"trajcurate score: error: cannot read {src}: Permission denied"
    assert _one_error_line(capsys) == expected


def test_rejects_path() -> None:
    assert rejects_path(Path("out/scored.jsonl")) == Path("out/scored.rejects.jsonl")
    assert rejects_path(Path("scored.out")) == Path("scored.out.rejects.jsonl")


def test_progress_reports_every_n_records_or_interval() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = Progress(stream, "run", every=3, interval=5.0, clock=lambda: now[0])
    for done in (1, 2):
        progress.update(done)
    assert stream.getvalue() == ""
    progress.update(3)
    now[0] = 6.0
    progress.update(4)  # interval passed
    progress.update(5)
    assert stream.getvalue().splitlines() == [
        "run: 3 records, 0.0 s, 0/s",
        "run: 4 records, 6.0 s, 1/s",
    ]


def test_the_scoring_chain_leaves_no_cyclic_garbage(tmp_path: Path, cases_path: Path) -> None:
    """`trajcurate score` runs with the cycle collector off (`_no_cycle_collection`): that is
    only safe while reading, the chain and the real TQS V2 scorer free everything by
    reference counting, which a reference cycle (an `Action` pointing at itself was one)
    would break."""
    data = _write(tmp_path / "in.jsonl", cases_path.read_bytes().splitlines()[:80])
    settings = ChainSettings(instance_status="all", trainable="mark")

    def curate() -> int:
        written: list[int] = []
        loop = CurationLoop(settings, ReadLimits(), write=lambda b: written.append(1), drop=print)
        loop.run([str(data)], "im")
        return len(written)

    assert curate() == 80  # the first run compiles rules and imports lazily
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        assert curate() == 80
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
