"""The cheaper paths of a run give what the general ones give: a trial unit read with its
job known, parts spilled many to a file and read back by offset."""

from __future__ import annotations

from pathlib import Path

from transforms.intake import open_unit
from transforms.readers.confined import DEFAULT_LIMITS
from transforms.readers.discover import discover_trials
from transforms.readers.harbor import read, read_trial_unit
from transforms.readers.provenance import attach_provenance
from transforms.sinks.parts import PartReader, SpillFile, decode_part, encode_part

COMPOSED = Path("data/composed/jobs/2026-06-16__12-00-00")


def test_a_trial_unit_with_its_job_reads_as_the_harbor_reader_does(shared_dir: Path) -> None:
    units = list(discover_trials([shared_dir / COMPOSED]))
    assert units and all(u.format == "harbor" and u.job for u in units)
    for unit in units:
        assert unit.job is not None
        fast = list(read_trial_unit(unit.path, DEFAULT_LIMITS, job=unit.job))
        assert fast == list(read(unit.path))
        for bundle in fast:  # what open_unit adds: the files read become the provenance
            attach_provenance(bundle, unit.root, str(unit.path), trial=True)
        assert fast == list(open_unit(unit, DEFAULT_LIMITS))
        assert all(
            b["records"][0]["meta_info"]["unique_info"]["_instance_metadata"]["provenance"]
            for b in fast
        )


def test_a_folder_that_is_no_trial_falls_back_to_the_harbor_reader(tmp_path: Path) -> None:
    job = tmp_path / "job"
    (job / "trial" / "agent").mkdir(parents=True)
    (job / "empty").mkdir()
    fast = list(read_trial_unit(job / "empty", DEFAULT_LIMITS, job="job"))
    assert fast == list(read(job / "empty"))
    assert fast[0]["records"] == [] and fast[0]["job"] == "job"


def test_parts_spilled_to_one_file_read_back_by_offset(tmp_path: Path) -> None:
    spill = SpillFile(str(tmp_path / "parts" / "a.spill"))
    parts = [encode_part(b"im %d\n" % n, b"lf %d" % n if n % 2 else b"") for n in range(5)]
    refs = [(spill.append(part), len(part)) for part in parts]
    spill.close()
    reader = PartReader()
    try:
        read_back = [reader.read(spill.path, offset, size) for offset, size in reversed(refs)]
    finally:
        reader.close()
    assert read_back == parts[::-1]
    assert decode_part(parts[3]) == (b"im 3\n", b"lf 3")
    assert decode_part(parts[2]) == (b"im 2\n", b"")
