"""Sidecar rows wait for their job's decision spilled to disk, not in the runner's grouping."""

from __future__ import annotations

from pathlib import Path

import orjson

from transforms.selection import Verdict
from transforms.sinks.row_spill import RowSpill, line_reader, remove_rows, rows_folder
from transforms.sinks.scores import sidecar_bytes, sidecar_lines


def test_a_local_row_travels_as_a_reference_and_reads_back_as_written(tmp_path: Path) -> None:
    spill = RowSpill(str(tmp_path))
    lines = [orjson.dumps({"instance_id": f"t{i}", "score": i / 3}) for i in range(3)]
    refs = [spill.keep("job-a", line) for line in lines]
    spill.close()
    assert all(isinstance(ref, tuple) and len(ref) == 3 for ref in refs)
    line_of, close = line_reader()
    assert [line_of(ref) for ref in refs] == lines
    close()
    other = RowSpill(str(tmp_path))
    other.keep("job-a", b"{}")  # another raw job name's rows in the same folder
    other.close()
    assert len(list(Path(rows_folder(str(tmp_path), "job-a")).iterdir())) == 2
    remove_rows(refs)
    assert len(list(Path(rows_folder(str(tmp_path), "job-a")).iterdir())) == 1


def test_a_row_stays_inline_on_an_object_store() -> None:
    spill = RowSpill("s3://bucket/out")
    assert spill.keep("job", b'{"a":1}') == b'{"a":1}'


def test_spilled_and_inline_rows_give_the_same_sorted_sidecar(tmp_path: Path) -> None:
    rows = [
        ("b", b'{"id":"b"}', None),
        ("a", b'{"id":"a","n":2}', None),
        ("a", b'{"id":"a","n":1}', Verdict(False, reason="duplicate", stage="dedup")),
    ]
    inline = sidecar_bytes(list(rows))
    spill = RowSpill(str(tmp_path))
    spilled = [(iid, spill.keep("j", line), verdict) for iid, line, verdict in rows]
    spill.close()
    line_of, close = line_reader()
    assert b"".join(sidecar_lines(spilled, line_of)) == inline
    close()
    written = [orjson.loads(line) for line in inline.splitlines()]
    assert [row["id"] for row in written] == ["a", "a", "b"]  # by id, then by line
    assert written[0]["decision"] == "rejected" and written[0]["reason"] == "duplicate"
