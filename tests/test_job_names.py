"""safe_job_name: a job name from a config.json is data; its folder stays inside --output."""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reader_checks import good_trial

from pipelines.cli import main
from pipelines.terminal import escaped
from transforms.sinks.names import (
    MAX_LENGTH,
    WINDOWS_RESERVED,
    is_safe_job_name,
    safe_job_name,
)

ALLOWED = re.compile(r"[A-Za-z0-9._@+=~-]+")

HOSTILE = [
    "",
    ".",
    "..",
    "...",
    "../x",
    "../../etc/passwd",
    "x/../../y",
    "a/b",
    "a\\b",
    "..\\..\\windows",
    "/abs/path",
    "/",
    "//server/share",
    "C:\\Users\\x",
    "C:",
    "~",
    "~/x",
    ".hidden",
    ".staging-123",
    ".trajcurate.lock",
    "-rf",
    "--output",
    "x\0y",
    "\0",
    "line\nbreak",
    "tab\there",
    "\x1b[31mred",
    "\x7f",
    "a" * 101,
    "é" * 200,
    "CON",
    "con",
    "Con.txt",
    "NUL.json",
    "aux",
    "COM1",
    "lpt9.tar.gz",
    "prn",
    "name.",
    "name ",
    " leading space",
    "has space",
    "semi;colon",
    "star*",
    "question?",
    'quote"',
    "pipe|",
    "<angle>",
    "colon:x",
    "日本語",
    "emoji🙂",
    "manifest.json",
    "MANIFEST.JSON",
    "lf.stats.json",
    "llm_dry_run.json",
    "runs.jsonl",
    "report",
    "Report",
    "job.partial",
    "x" * 100 + "/..",
    "a..b",
    "\udcff",  # a surrogate-escaped byte from a file name
]

SAFE = [
    "2026-06-16__12-00-00",
    "standalone",
    "job_1",
    "run-a1b2c3d4",
    "exp.v2",
    "user@host",
    "a+b=c",
    "A" * MAX_LENGTH,
    "_underscore",
    "CONSOLE",  # only the exact device names are reserved
    "com10",
    "x.con",
]


def assert_one_component(folder: str) -> None:
    assert ALLOWED.fullmatch(folder), folder
    assert folder not in (".", "..")
    assert not folder.startswith((".", "-"))
    assert ".." not in folder
    assert 0 < len(folder) <= MAX_LENGTH
    assert folder.split(".", 1)[0].upper() not in WINDOWS_RESERVED
    assert os.path.basename(folder) == folder
    root = os.path.join(os.sep, "out")
    joined = os.path.normpath(os.path.join(root, folder))
    assert os.path.dirname(joined) == root


@pytest.mark.parametrize("name", SAFE)
def test_a_safe_name_is_unchanged(name: str) -> None:
    assert is_safe_job_name(name)
    assert safe_job_name(name) == name


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_becomes_one_safe_component(name: str) -> None:
    assert not is_safe_job_name(name)
    folder = safe_job_name(name)
    assert_one_component(folder)
    assert re.search(r"~[0-9a-f]{8}$", folder), folder
    assert not is_safe_job_name(folder)  # a tagged folder is never another job's literal name
    assert safe_job_name(folder) != folder
    assert safe_job_name(name) == folder  # deterministic


def test_hostile_names_keep_a_readable_part() -> None:
    assert safe_job_name("../x").startswith("x~")
    assert safe_job_name("/abs/path").startswith("abs_path~")
    assert safe_job_name("has space").startswith("has_space~")
    assert safe_job_name("CON.txt").startswith("_CON.txt~")
    assert safe_job_name("").startswith("job~")
    assert safe_job_name("report").startswith("report~")
    assert safe_job_name("RUNS.JSONL").startswith("RUNS.JSONL~")


def test_hostile_names_never_collide() -> None:
    folders = [safe_job_name(name) for name in HOSTILE]
    assert len(set(folders)) == len(HOSTILE)
    assert not set(folders) & set(SAFE)
    # Names that clean to the same text still get different folders.
    assert safe_job_name("a/b") != safe_job_name("a\\b") != safe_job_name("a b")


def test_a_hostile_name_cannot_escape_a_real_folder(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    for name in HOSTILE:
        folder = root / safe_job_name(name)
        folder.mkdir()
        (folder / "im.jsonl").write_bytes(b"")
        assert folder.resolve().parent == root.resolve()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


names = st.text(
    alphabet=st.one_of(
        st.sampled_from('./\\-_. @+=~:*?"<>|\0\n\t'),
        st.characters(codec="utf-8"),
    ),
    max_size=150,
) | st.sampled_from(HOSTILE + SAFE)


@settings(max_examples=600, deadline=None)
@given(names)
def test_property_result_is_one_safe_component(name: str) -> None:
    folder = safe_job_name(name)
    assert_one_component(folder)
    assert safe_job_name(name) == folder
    if folder != name:  # a tagged folder, given as a job name, gets a folder of its own
        assert safe_job_name(folder) not in (folder, name)
    if is_safe_job_name(name):
        assert folder == name


@settings(max_examples=600, deadline=None)
@given(names, names)
def test_property_distinct_names_get_distinct_folders(a: str, b: str) -> None:
    if a != b:
        assert safe_job_name(a) != safe_job_name(b)


def test_a_crafted_job_name_cannot_fake_a_summary_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job name with LF / CR / ESC / a bidi override is shown escaped, on its own row."""
    hostile = "evil\nTOTAL        999      999\r\x1b[2K\u202e"
    job = tmp_path / "jobs" / "job"
    job.mkdir(parents=True)
    (job / "config.json").write_bytes(orjson.dumps({"job_name": hostile}))
    good_trial(job, "t1")
    out = tmp_path / "out"
    assert (
        main(["run", "--no-progress", "--input", str(tmp_path / "jobs"), "--output", str(out)]) == 0
    )
    shown = capsys.readouterr().out
    assert not any(line.startswith("TOTAL        999") for line in shown.splitlines())
    assert "\x1b" not in shown and "\r" not in shown and "\u202e" not in shown
    assert "evil\\nTOTAL" in shown
    assert escaped(hostile) == "evil\\nTOTAL        999      999\\r\\x1b[2K\\u202e"


def _run(tmp_path: Path, *names: str) -> int:
    """`trajcurate run` over one job per name (the config.json `job_name`), one trial each."""
    for i, name in enumerate(names):
        job = tmp_path / "jobs" / f"job{i}"
        job.mkdir(parents=True)
        (job / "config.json").write_bytes(orjson.dumps({"job_name": name}))
        good_trial(job, f"t{i}")
    out = tmp_path / "out"
    return main(["run", "--no-progress", "--input", str(tmp_path / "jobs"), "--output", str(out)])


def _published(out: Path) -> dict[str, int]:
    """Each published job's name -> its manifest's `in`."""
    run = orjson.loads((out / "manifest.json").read_bytes())
    return {
        job: orjson.loads((out / folder / "manifest.json").read_bytes())["accounting"]["in"]
        for job, folder in run["job_folders"].items()
    }


def test_a_job_named_like_another_jobs_tagged_folder_keeps_its_own(tmp_path: Path) -> None:
    """`../x` goes to a tagged folder; a second job literally named that folder used to
    replace it (one job left, TOTAL 1 for two trial folders, exit 0)."""
    assert _run(tmp_path, "../x", safe_job_name("../x"), "x") == 0
    out = tmp_path / "out"
    assert _published(out) == {"../x": 1, safe_job_name("../x"): 1, "x": 1}
    run = orjson.loads((out / "manifest.json").read_bytes())
    assert len(set(run["job_folders"].values())) == 3
    assert run["accounting"]["in"] == 3 and run["accounting"]["pipeline_in"] == 3


def test_jobs_named_like_run_files_are_published_beside_them(tmp_path: Path) -> None:
    """A job named `runs.jsonl` made every later run into the folder crash; `report` took
    the report's folder; `manifest.json` the run's manifest."""
    names = ("runs.jsonl", "report", "manifest.json", "lf.stats.json")
    assert _run(tmp_path, *names) == 0
    out = tmp_path / "out"
    assert _published(out) == dict.fromkeys(names, 1)
    assert len((out / "runs.jsonl").read_text().splitlines()) == 1  # the run log, one run
    assert main(["report", str(out)]) == 0
    assert (out / "report" / "index.html").is_file()
    assert _run(tmp_path / "again", *names) == 0  # a second run into a folder like it


def test_two_names_that_reach_one_folder_stop_the_run_before_publishing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 32-bit hash collision (or a case-insensitive filesystem folding `Foo` onto `foo`):
    simulated by a folder function that sends both jobs to one folder."""
    from transforms.sinks import layout

    monkeypatch.setattr(layout, "safe_job_name", lambda name: "same")
    assert _run(tmp_path, "Foo", "foo") == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1, error
    assert "jobs 'Foo', 'foo' map to one output folder 'same'" in error[0]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["runs.jsonl"]


def test_a_run_whose_job_counts_went_missing_is_not_balanced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run's check beyond in = written + rejected + dead-lettered: the jobs between them
    count every input the pipeline's counters saw."""
    from pipelines import manifest

    real = manifest._job_folders

    def first_job_only(staging: str) -> dict[str, str]:
        return dict(list(real(staging).items())[:1])

    monkeypatch.setattr(manifest, "_job_folders", first_job_only)
    assert _run(tmp_path, "a", "b") == 1
    shown = capsys.readouterr().out
    assert "in = written + rejected + dead-lettered: NO" in shown
    assert "the pipeline took in 2 input(s), the job manifests count 1" in shown


def test_the_report_never_writes_into_a_job_folder_named_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run never names a job folder `report` now; an output of an older version may hold
    one: `trajcurate report OUT` then stops instead of writing into it."""
    assert _run(tmp_path, "old") == 0
    out = tmp_path / "out"
    (out / "old").rename(out / "report")
    before = {p.name: p.read_bytes() for p in (out / "report").iterdir()}
    assert "im.jsonl" in before
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    error = capsys.readouterr().err
    assert "is inside the job folder" in error and "--out DIR" in error
    assert {p.name: p.read_bytes() for p in (out / "report").iterdir()} == before
    assert main(["report", str(out), "--out", str(tmp_path / "page")]) == 0
    assert (tmp_path / "page" / "index.html").is_file()
