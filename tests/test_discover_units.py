"""Discovery: every trial folder of a job is a unit (with its job's name), nothing outside an
input is followed, and no FIFO or device blocks detection. Real folders under tmp_path."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from reader_checks import good_trial, no_hang, result_doc, write_trial

from transforms.readers import detect, harbor, harbor_layout
from transforms.readers.bundle import Bundle
from transforms.readers.confined import ReadLimits
from transforms.readers.discover import ReadUnit, discover, discover_trials
from transforms.readers.registry import reader_for


@pytest.fixture(autouse=True)
def _guard() -> Iterator[None]:
    with no_hang(30):
        yield


def _job(root: Path, name: str, job_name: str | None = None) -> Path:
    """A job with one good trial and an empty, a config-only and a truncated-result folder."""
    job = root / name
    good_trial(job, "a__good")
    (job / "b__empty").mkdir()
    write_trial(job, "c__config_only", {"config.json": {"trial_name": "c__cfg"}}, agent=False)
    truncated = orjson.dumps(result_doc("d__truncated"))[:10]  # cut before "trial_name"
    write_trial(job, "d__truncated", {"result.json": truncated}, agent=False)
    (job / ".hidden").mkdir()  # not a trial unit
    (job / "job.log").write_text("log")  # files are not units
    if job_name is not None:
        (job / "config.json").write_bytes(orjson.dumps({"job_name": job_name}))
    return job


def _reasons(bundles: list[Bundle]) -> dict[str, str | None]:
    return {b["instance_id"]: (b["warnings"][0] if not b["records"] else None) for b in bundles}


def test_every_subfolder_of_a_job_is_a_trial_unit(tmp_path: Path) -> None:
    job = _job(tmp_path, "2026-01-01__00-00-00")
    units = list(discover_trials([job]))
    assert [(u.path.name, u.format, u.job) for u in units] == [
        (name, "harbor", "2026-01-01__00-00-00")
        for name in ("a__good", "b__empty", "c__config_only", "d__truncated")
    ]
    bundles = list(harbor.read(job))
    assert len(bundles) == len(units) == 4
    assert _reasons(bundles) == {
        "a__good": None,
        "b__empty": "empty trial folder: no result.json, agent/ or verifier/",
        "c__config_only": "not a usable trial folder: no result.json, agent/ or verifier/ "
        "(config.json)",
        "d__truncated": "result.json: corrupt JSON (unexpected end of data: line 1 column 11 "
        "(char 10))",
    }
    assert {b["job"] for b in bundles} == {"2026-01-01__00-00-00"}
    # the pipeline reads each unit on its own: the same bundle, the same reason
    for unit, bundle in zip(units, bundles, strict=True):
        assert unit.format is not None
        (alone,) = reader_for(unit.format)(unit.path, ReadLimits())
        assert alone == bundle


def test_per_job_counts_and_raw_job_names(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    _job(jobs, "j1", job_name="../odd name/")
    _job(jobs, "j2")  # no config.json: the folder name
    _job(jobs, "j3", job_name="")  # a name is data: kept raw, even empty
    good_trial(jobs / "j4", "only__1")
    (jobs / "not-a-job" / "x").mkdir(parents=True)
    units = list(discover_trials([jobs]))
    counts = Counter(u.job for u in units)
    assert counts == {"../odd name/": 4, "j2": 4, "": 4, "j4": 1}
    bundles = list(harbor.read(jobs))
    assert Counter(b["job"] for b in bundles) == counts
    assert all(u.format == "harbor" and u.refusal is None for u in units)
    assert harbor_layout.job_name(jobs / "j1") == "../odd name/"


def test_a_single_trial_knows_its_job(tmp_path: Path) -> None:
    job = _job(tmp_path, "folder", job_name="the job")
    (unit,) = discover_trials([job / "a__good"])
    assert unit == ReadUnit(job / "a__good", "harbor", job="the job")
    (unit,) = discover([job])
    assert unit == ReadUnit(job, "harbor")


def test_a_trial_linked_out_of_its_job_is_refused(tmp_path: Path) -> None:
    job = _job(tmp_path, "job")
    elsewhere = good_trial(tmp_path / "elsewhere", "z__secret")
    (job / "e__linked").symlink_to(elsewhere, target_is_directory=True)
    units = {u.path.name: u for u in discover_trials([job])}
    reason = "refused e__linked: a symlink to a folder outside the job"
    assert units["e__linked"] == ReadUnit(job / "e__linked", None, reason, job="job")
    bundles = {Path(b["source"]).name: b for b in harbor.read(job)}
    assert len(bundles) == len(units) == 5
    assert bundles["e__linked"]["records"] == [] and bundles["e__linked"]["warnings"] == [reason]
    assert "z__secret" not in orjson.dumps(list(bundles.values())).decode()


def test_a_link_to_a_sibling_trial_is_one_trial_not_two(tmp_path: Path) -> None:
    """`alias -> a__good` inside the job was a second trial with the same instance id."""
    job = _job(tmp_path, "job")
    (job / "f__alias").symlink_to(job / "a__good", target_is_directory=True)
    (job / "g__self").symlink_to(job, target_is_directory=True)
    (job / "h__into").symlink_to(job / "a__good" / "agent", target_is_directory=True)
    hidden = good_trial(job / ".store", "i__stored")
    (job / "i__stored").symlink_to(hidden, target_is_directory=True)  # inside, read once
    units = {u.path.name: u for u in discover_trials([job])}
    assert (
        units["f__alias"].refusal
        == "refused f__alias: a symlink to a__good, which is read on its own"
    )
    assert units["g__self"].refusal == "refused g__self: a symlink to the job itself"
    assert (
        units["h__into"].refusal
        == "refused h__into: a symlink to a__good, which is read on its own"
    )
    assert units["i__stored"].refusal is None and units["a__good"].refusal is None
    ids = [b["instance_id"] for b in harbor.read(job) if b["records"]]
    assert sorted(ids) == ["a__good", "i__stored"]


def test_the_instance_id_is_the_trial_folder_not_the_trial_name(tmp_path: Path) -> None:
    """`trial_name` is data an agent could write: trial B claiming A's id put two main
    records with one id into one im.jsonl (rewards 1 and 0), merged on reading back."""
    job = tmp_path / "job"
    good_trial(job, "a__real")
    forged = good_trial(job, "b__impostor")
    result = orjson.loads((forged / "result.json").read_bytes())
    (forged / "result.json").write_bytes(orjson.dumps({**result, "trial_name": "a__real"}))
    odd = good_trial(job, "c__odd\u202e\x1b")
    result = orjson.loads((odd / "result.json").read_bytes())
    (odd / "result.json").write_bytes(orjson.dumps({**result, "trial_name": "\u0000"}))
    bundles = {Path(b["source"]).name: b for b in harbor.read(job)}
    assert bundles["a__real"]["instance_id"] == "a__real"
    assert bundles["b__impostor"]["instance_id"] == "b__impostor"
    main = bundles["b__impostor"]["records"][0]["meta_info"]["unique_info"]["_instance_metadata"]
    assert main["trial_name"] == "a__real"  # kept, as metadata
    odd_id = bundles["c__odd\u202e\x1b"]["instance_id"]
    assert re.fullmatch(r"c__odd__~[0-9a-f]{8}", odd_id), odd_id


def test_two_job_folders_with_one_name_keep_one_trial_per_id(tmp_path: Path) -> None:
    """A copied job (same job_name, same trial folders) is one job: a trial folder name it
    shares with the first is refused, naming the first, instead of one id twice."""
    jobs = tmp_path / "jobs"
    _job(jobs, "j1", job_name="same")
    _job(jobs, "j2", job_name="same")
    units = list(discover_trials([jobs]))
    refused = {u.path.relative_to(jobs).as_posix(): u.refusal for u in units if u.refusal}
    assert refused == {
        f"j2/{name}": f"refused j2/{name}: its job already has a trial {name} (in j1/); give "
        "one of the job folders its own job_name"
        for name in ("a__good", "b__empty", "c__config_only", "d__truncated")
    }


def test_a_walk_stays_inside_its_input(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_bytes(orjson.dumps({"schema_version": "ATIF-v1.7"}))
    root = tmp_path / "input"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)  # visited once
    (root / "out_dir").symlink_to(outside, target_is_directory=True)
    (root / "out_file.json").symlink_to(outside / "secret.json")
    os.mkfifo(root / "sub" / "pipe.jsonl")
    (root / "sub" / "ok.traj.json").write_bytes(orjson.dumps({"messages": [], "info": {}}))
    units = {u.path.relative_to(root).as_posix(): u for u in discover([root])}
    assert units == {
        "out_dir": ReadUnit(
            root / "out_dir", None, "refused out_dir: a symlink to a target outside the input"
        ),
        "out_file.json": ReadUnit(
            root / "out_file.json",
            None,
            "refused out_file.json: a symlink to a target outside the input",
        ),
        "sub/ok.traj.json": ReadUnit(root / "sub" / "ok.traj.json", "mini-swe-agent"),
        "sub/pipe.jsonl": ReadUnit(
            root / "sub" / "pipe.jsonl", None, "refused pipe.jsonl: a FIFO, not a regular file"
        ),
    }


def test_inputs_given_directly(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (unit,) = discover([tmp_path / "pipe"])
    assert unit.refusal == "refused pipe: a FIFO, not a regular file"
    (unit,) = discover([Path("/dev/zero")])
    assert unit.refusal == "refused zero: a character device, not a regular file"
    # the path a user gives is trusted as given, even a symlink out of anywhere
    job = _job(tmp_path / "real", "job")
    (tmp_path / "link").symlink_to(job, target_is_directory=True)
    assert len(list(discover_trials([tmp_path / "link"]))) == 4


def test_one_definition_of_a_trial(tmp_path: Path) -> None:
    assert not hasattr(detect, "is_trial")
    assert harbor.is_trial is harbor_layout.is_trial
    trial = write_trial(tmp_path, "t", {"result.json": result_doc("t")}, agent=False)
    assert harbor_layout.is_trial(trial)
    os.mkfifo(tmp_path / "fifo_trial")  # not a folder: not a trial, and nothing blocks
    assert not harbor_layout.is_trial(tmp_path / "fifo_trial")
    fifo_result = tmp_path / "f"
    fifo_result.mkdir()
    os.mkfifo(fifo_result / "result.json")
    assert not harbor_layout.is_trial(fifo_result)
