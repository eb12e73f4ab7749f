"""A job's grouped values travel packed: one `bytes` each, spill files named relative to the
job's folder, unpacked back to exactly what was packed."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from transforms.selection import Verdict
from transforms.sinks import layout
from transforms.sinks.row_spill import RowSpill, line_reader
from transforms.sinks.scores import kept_outcomes, settle_job
from transforms.sinks.wire import Packer, Unpacker

JOB = "2026-05-28__01-00-25"


def _spill(output: str) -> str:
    return layout.spill_path(output, JOB, 0)


def test_a_part_ref_comes_back_as_it_was_packed(tmp_path: Path) -> None:
    output = str(tmp_path / "out")
    ref = (("task__a1", "/jobs/x/task__a1"), _spill(output), 1234567, 2345, {"lf.reshaped": 1})
    packed = Packer(output).part_ref(JOB, ref)
    assert isinstance(packed, bytes)
    assert output.encode() not in packed  # the folder is not carried by every ref
    assert Unpacker(output, JOB).part_ref(packed) == ref


def test_prior_rows_and_candidates_come_back_spilled_or_inline(tmp_path: Path) -> None:
    output = str(tmp_path / "out")
    spill = RowSpill(output)
    spilled = spill.keep(JOB, b'{"instance_id":"t1"}')
    spill.close()
    inline = RowSpill("s3://bucket/out").keep(JOB, b'{"instance_id":"t2"}')
    packer, unpacker = Packer(output), Unpacker(output, JOB)
    for line in (spilled, inline):
        row = ("t1", "task", True, line)
        assert unpacker.prior_row(packer.prior_row(JOB, row)) == row
        item = {"key": ("t1", "/jobs/x/t1"), "row": line, "candidate": None}
        assert unpacker.candidate(packer.candidate(JOB, item)) == item
    missing = {"key": ("t3", ""), "row": None, "candidate": None}  # no sidecar row
    assert unpacker.candidate(packer.candidate(JOB, missing)) == missing


def test_refs_of_one_spill_file_share_its_path(tmp_path: Path) -> None:
    output, packer = str(tmp_path / "out"), Packer(str(tmp_path / "out"))
    path = _spill(output)
    unpacker = Unpacker(output, JOB)
    first, second = (
        unpacker.part_ref(packer.part_ref(JOB, (("t", ""), path, offset, 10, {})))
        for offset in (0, 10)
    )
    assert first[1] == path and first[1] is second[1]


def test_packed_values_are_a_fraction_of_the_objects(tmp_path: Path) -> None:
    output = str(tmp_path / "out")
    ref = (("task__a1" * 5, "/jobs/x/" + "task__a1" * 5), _spill(output), 1234567, 2345, {})
    packed = Packer(output).part_ref(JOB, ref)
    as_objects = sys.getsizeof(ref) + sum(sys.getsizeof(v) for v in (*ref, *ref[0]))
    assert sys.getsizeof(packed) < as_objects / 2


def test_a_spill_file_outside_its_jobs_folder_is_refused(tmp_path: Path) -> None:
    stray = _spill(str(tmp_path / "elsewhere"))
    with pytest.raises(ValueError, match="not in its job's folder"):
        Packer(str(tmp_path / "out")).part_ref(JOB, (("t", ""), stray, 0, 1, {}))


def test_a_candidates_outcome_waits_spilled_and_is_read_back_only_when_settled(
    tmp_path: Path,
) -> None:
    output = str(tmp_path / "out")
    spill = RowSpill(output)
    reject = {"job": JOB, "stage": "", "instance_id": "t1", "reason": ""}
    stats = b'{"count":1,"histogram":{"composite_score":[0,0,0,0,0,0,1,0,0,0]}}'
    outcome_line = orjson.dumps(
        {"counts": {"written": 1}, "stats": orjson.Fragment(stats), "reject": reject}
    )
    items = [
        {"key": (name, f"/jobs/x/{name}"), "row": None, "candidate": None}
        | {"outcome": spill.keep(JOB, outcome_line)}
        for name in ("t1", "t2")
    ]
    spill.close()
    packer, unpacker = Packer(output), Unpacker(output, JOB)
    packed = [packer.candidate(JOB, item) for item in items]
    assert all(b"histogram" not in p and output.encode() not in p for p in packed)
    written = [unpacker.candidate(p) for p in packed]
    assert written == items
    verdicts = {("t2", "/jobs/x/t2"): Verdict(False, "dedup", "same as t1")}
    line_of, close = line_reader()
    kept, dropped = settle_job(verdicts, written, line_of)
    outcomes = list(kept_outcomes(written, kept, line_of))
    close()
    assert kept == {("t1", "/jobs/x/t1"): None}
    assert dropped == [{**reject, "stage": "dedup", "reason": "same as t1"}]
    assert outcomes == [{"counts": {"written": 1}, "stats": orjson.loads(stats), "reject": reject}]
