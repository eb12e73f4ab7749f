"""`_instance_metadata.provenance`: every record says which input it was read from, relative
to the input root, with the SHA-256 of every file it was read from — and those hashes are
the files' own (checked against the files on disk, read again here)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipelines.cli import main
from transforms.readers.confined import TrialFiles
from transforms.readers.provenance import input_base, relative_to

COMPOSED = "2026-06-16__12-00-00"


def _run(tmp_path: Path, *inputs: Path, name: str = "out") -> Path:
    out = tmp_path / name
    argv = ["run", "--no-progress", "--instance-status", "all", "--output", str(out)]
    for path in inputs:
        argv += ["--input", str(path)]
    assert main(argv) == 0
    return out


def _main_records(out: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted(out.glob("*/im.jsonl")):
        for line in path.read_bytes().splitlines():
            record = orjson.loads(line)
            if record["meta_info"]["unique_info"]["_agent_type"] == "main":
                records.append(record)
    assert records
    return records


def _provenance(record: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = record["meta_info"]["unique_info"]["_instance_metadata"]["provenance"]
    return value


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _on_disk(root: Path, entry: dict[str, str]) -> str:
    """The hash of what the entry names, read again from the input: a whole file, or one
    line (`file#L3`) of a streamed corpus."""
    name, _, line = entry["path"].rpartition("#L")
    if name and line.isdigit():
        lines = (root / name).read_bytes().split(b"\n")
        return _sha256(lines[int(line) - 1].rstrip(b"\r"))
    return _sha256((root / entry["path"]).read_bytes())


def _check_hashes(records: list[dict[str, Any]], *roots: Path) -> int:
    """Every entry's hash is the file's (under the input root it was found in)."""
    checked = 0
    for record in records:
        provenance = _provenance(record)
        assert provenance["source"] and provenance["files"], provenance
        (root,) = [r for r in roots if (r / provenance["source"]).exists()]
        for entry in provenance["files"]:
            assert not os.path.isabs(entry["path"]) and ".." not in entry["path"].split("/")
            source = provenance["source"]  # a trial folder, or a file and files beside it
            beside = source.rpartition("/")[0] + "/" if (root / source).is_file() else source
            assert entry["path"].startswith(beside), provenance
            assert entry["sha256"] == _on_disk(root, entry), entry["path"]
            checked += 1
    return checked


def test_harbor_provenance_hashes_equal_the_input_files(shared_dir: Path, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    assert main(["synth", "--out", str(jobs), "--jobs", "1", "--trials", "5", "--seed", "4"]) == 0
    shutil.copytree(shared_dir / "data" / "composed" / "jobs" / COMPOSED, jobs / COMPOSED)
    records = _main_records(_run(tmp_path, jobs))
    assert _check_hashes(records, jobs) >= 2 * len(records)  # a trajectory and result.json each
    by_source = {_provenance(r)["source"]: r for r in records}
    trial = f"{COMPOSED}/hello-world__R8do6e5"  # Terminus-2 with a continuation file
    paths = [entry["path"] for entry in _provenance(by_source[trial])["files"]]
    assert paths == [
        f"{trial}/agent/trajectory.cont-1.json",
        f"{trial}/agent/trajectory.json",
        f"{trial}/result.json",
    ]
    raw = (tmp_path / "out" / COMPOSED / "im.jsonl").read_text(encoding="utf-8")
    assert str(tmp_path) not in raw.replace(str(jobs / COMPOSED), "")  # no machine path added


def test_standalone_files_and_streamed_lines_hash_as_read(shared_dir: Path, tmp_path: Path) -> None:
    real = shared_dir / "data" / "real"
    records = _main_records(_run(tmp_path, real / "native", real / "atif"))
    assert _check_hashes(records, real / "native", real / "atif") >= len(records)
    sources = {_provenance(r)["source"] for r in records}
    # an input folder is the root: a file below it is named from there
    assert "claude-code/codemie/incremental-subagents/turn-2.jsonl" in sources
    turn = "incremental-subagents/turn-2.jsonl"
    session = next(r for r in records if _provenance(r)["source"].endswith(turn))
    assert [e["path"] for e in _provenance(session)["files"]] == [
        "claude-code/codemie/incremental-subagents/turn-2.jsonl",
        "claude-code/codemie/incremental-subagents/turn-2/subagents/agent-a485154.jsonl",
    ]
    lines = [e["path"] for r in records for e in _provenance(r)["files"] if "#L" in e["path"]]
    evaluated = [r for r in records if _provenance(r)["source"] == "openhands-eval/output.jsonl"]
    assert len(lines) == len(evaluated) >= 2  # one line each (one instance is rejected)
    assert set(lines) <= {f"openhands-eval/output.jsonl#L{n}" for n in (1, 2, 3)}


def _check_against(root: Path, records: list[dict[str, Any]]) -> None:
    for record in records:
        for entry in _provenance(record)["files"]:
            assert entry["sha256"] == _on_disk(root, entry)


def test_an_input_that_is_the_unit_is_named_by_its_name(shared_dir: Path, tmp_path: Path) -> None:
    trial = shared_dir / "data" / "composed" / "jobs" / COMPOSED / "hello-world__69aUCrP"
    session = shared_dir / "data" / "real" / "native" / "openhands" / "basic.json"
    records = _main_records(_run(tmp_path, trial, session))
    named = f"{COMPOSED}/{trial.name}"  # a Harbor trial: always `<job folder>/<trial>`
    assert sorted(_provenance(r)["source"] for r in records) == [named, "basic.json"]
    _check_against(trial.parent.parent, [r for r in records if _provenance(r)["source"] == named])
    _check_against(session.parent, [r for r in records if _provenance(r)["source"] != named])


def test_im_read_back_keeps_where_its_records_were_read_from(
    shared_dir: Path, tmp_path: Path
) -> None:
    jobs = shared_dir / "data" / "composed" / "jobs"
    first = _main_records(_run(tmp_path, jobs, name="first"))
    again = _main_records(_run(tmp_path, tmp_path / "first" / COMPOSED / "im.jsonl", name="again"))
    assert sorted(orjson.dumps(_provenance(r)) for r in again) == sorted(
        orjson.dumps(_provenance(r)) for r in first
    )


def test_trial_files_hash_what_is_read_whole_and_not_what_is_probed(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b'{"a": 1}')
    (tmp_path / "b.jsonl").write_bytes(b"1\n2\r\n3")
    (tmp_path / "c.jsonl").write_bytes(b"1\n2\n")
    (tmp_path / "d.txt").write_bytes(b"probed only")
    files = TrialFiles(tmp_path)
    files.read_bytes(tmp_path / "a.json")
    assert [line for _, line in files.iter_lines(tmp_path / "b.jsonl")] == [b"1", b"2", b"3"]
    lines = files.iter_lines(tmp_path / "c.jsonl")
    next(lines)  # left before its end: not read whole
    lines.close()
    files.head(tmp_path / "d.txt", 4)
    assert files.is_file(tmp_path / "d.txt")
    assert files.read_files == {
        str(tmp_path / "a.json"): _sha256(b'{"a": 1}'),
        str(tmp_path / "b.jsonl"): _sha256(b"1\n2\r\n3"),
    }


@pytest.mark.parametrize(
    "root, unit, base",
    [
        ("in", "in/job/trial", "in"),
        ("in/trial", "in/trial", os.path.abspath("in")),
        ("in/a.jsonl", "in/a.jsonl", os.path.abspath("in")),
        ("in/*/x.json", "in/j/x.json", "in"),
        ("s3://b/jobs", "s3://b/jobs/job/trial", "s3://b/jobs"),
        ("s3://b/jobs/job/trial/", "s3://b/jobs/job/trial", "s3://b/jobs/job"),
    ],
)
def test_the_input_root_of_a_unit(root: str, unit: str, base: str) -> None:
    assert input_base(root, unit) == base


def test_paths_are_relative_and_never_leave_the_root() -> None:
    assert relative_to("in/job/trial/agent/t.json", "in") == "job/trial/agent/t.json"
    assert relative_to("/elsewhere/t.json", "in") == "t.json"
    assert relative_to("s3://b/jobs/j/t/result.json", "s3://b/jobs") == "j/t/result.json"
