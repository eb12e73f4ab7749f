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

ALLOWED = re.compile(r"[A-Za-z0-9._@+=-]+")

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
    assert re.search(r"-[0-9a-f]{8}$", folder), folder
    assert is_safe_job_name(folder)
    assert safe_job_name(folder) == folder
    assert safe_job_name(name) == folder  # deterministic


def test_hostile_names_keep_a_readable_part() -> None:
    assert safe_job_name("../x").startswith("x-")
    assert safe_job_name("/abs/path").startswith("abs_path-")
    assert safe_job_name("has space").startswith("has_space-")
    assert safe_job_name("CON.txt").startswith("_CON.txt-")
    assert safe_job_name("").startswith("job-")


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
    assert safe_job_name(folder) == folder  # a folder name is a fixed point
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


def test_the_report_never_writes_into_a_job_folder_named_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "jobs" / "job"
    job.mkdir(parents=True)
    (job / "config.json").write_bytes(orjson.dumps({"job_name": "report"}))
    good_trial(job, "t1")
    out = tmp_path / "out"
    assert (
        main(["run", "--no-progress", "--input", str(tmp_path / "jobs"), "--output", str(out)]) == 0
    )
    before = {p.name: p.read_bytes() for p in (out / "report").iterdir()}
    assert "im.jsonl" in before
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    error = capsys.readouterr().err
    assert "is inside the job folder" in error and "--out DIR" in error
    assert {p.name: p.read_bytes() for p in (out / "report").iterdir()} == before
    assert main(["report", str(out), "--out", str(tmp_path / "page")]) == 0
    assert (tmp_path / "page" / "index.html").is_file()
