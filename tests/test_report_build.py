"""`trajcurate report` over a synthetic run with resolved and unresolved trials: the sidecar
rows, the folder it writes, the examples it embeds, and its one-line usage errors."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from report_corpus import make_run

from pipelines.cli import main as trajcurate
from scorers.tqs_v2 import SCORE_KEYS
from transforms.report import SIDECAR
from transforms.report.page import SECTIONS
from transforms.report.rows import read_rows

pytest.importorskip("matplotlib", reason="the report needs the 'report' extra (matplotlib)")


@pytest.fixture(scope="module")
def run_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("report-run"))


@pytest.fixture(scope="module")
def report(run_output: Path) -> Path:
    target = run_output.parent / "report"
    assert trajcurate(["report", str(run_output), "-o", str(target), "--resamples", "200"]) == 0
    return target


def _examples(report: Path) -> dict[str, dict[str, object]]:
    text = (report / "assets" / "data.js").read_text()
    match = re.search(r"window\.TRAJCURATE_EXAMPLES = (.*);\n", text)
    assert match is not None
    value: dict[str, dict[str, object]] = orjson.loads(match.group(1))
    return value


def test_sidecar_rows_cover_every_scored_trial_sorted(run_output: Path) -> None:
    rows = [
        row
        for job in sorted(run_output.iterdir())
        if (job / SIDECAR).is_file()
        for row in read_rows(job / SIDECAR)
    ]
    assert rows, "no sidecar rows"
    for job in {row["job"] for row in rows}:
        ids = [row["instance_id"] for row in rows if row["job"] == job]
        assert ids == sorted(ids) and len(ids) == len(set(ids))
    assert {row["resolved"] for row in rows} == {True, False}
    assert {row["decision"] for row in rows} == {"kept", "rejected"}
    assert all(set(row["score"]) == set(SCORE_KEYS) for row in rows)
    assert all(row["reason"] for row in rows if row["decision"] == "rejected")


def test_report_folder_is_self_contained(report: Path) -> None:
    html = (report / "index.html").read_text()
    for section, _ in SECTIONS:
        assert f'<section id="{section}">' in html
    assert {p.name for p in (report / "assets").iterdir()} == {"report.css", "report.js", "data.js"}
    # Nothing loads from elsewhere: every src / href is local, relative or a fragment.
    for reference in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert not re.match(r"[a-z]+://|//", reference), reference
    assert html.count("<svg") >= 60  # every score x segment dimension, deciles, overview
    size = sum(p.stat().st_size for p in report.rglob("*") if p.is_file())
    assert size < 5 * 2**20


def test_examples_carry_the_trajectory_or_say_it_is_not_curated(report: Path) -> None:
    examples = _examples(report)
    found = [e for e in examples.values() if e["found"]]
    missing = [e for e in examples.values() if not e["found"]]
    assert found and missing
    assert all(e["decision"] == "rejected" for e in missing)
    example = found[0]
    reasons = example["reasons"]
    assert isinstance(reasons, dict) and {"sub", "tvr", "dpi", "loops"} <= set(reasons)
    main = example["main"]
    assert isinstance(main, dict) and main["messages"]


def _sidecar_rows(run_output: Path) -> list[dict[str, Any]]:
    return [row for job in sorted(run_output.glob(f"*/{SIDECAR}")) for row in read_rows(job)]


def test_detector_rates_are_the_share_of_diagnosed_trials(run_output: Path, report: Path) -> None:
    rows = _sidecar_rows(run_output)
    assert rows and all(row["diagnosis"] for row in rows)  # the run had --diagnose
    fired = Counter(name for row in rows for name in {d[0] for d in row["diagnosis"]["detections"]})
    assert len(fired) >= 3
    html = (report / "index.html").read_text()
    section = html[html.index('<section id="diagnosis">') :]
    section = section[: section.index("</section>")]
    for name, count in fired.items():
        # each detector's row: its name, then (after its title and axis) trials and rate
        cells = re.search(
            rf"<td><code>{name}</code><br>[^<]*</td><td>\w+</td><td>(\d+)</td><td>([\d.]+)%</td>",
            section,
        )
        assert cells is not None, name
        assert int(cells.group(1)) == count
        assert float(cells.group(2)) == round(100 * count / len(rows), 1)
    clean = sum(1 for row in rows if not row["diagnosis"]["detections"])
    assert f"on {clean} of them no detector fired" in " ".join(section.split())


def test_examples_carry_their_diagnosis_with_evidence(report: Path) -> None:
    examples = _examples(report).values()
    diagnosed = [e for e in examples if e["found"] and e["diagnosis"]]
    assert diagnosed
    cited = 0
    for example in diagnosed:
        diagnosis = example["diagnosis"]
        assert isinstance(diagnosis, dict) and "trajectory_score" in diagnosis
        shown = {m["index"] for m in example["main"]["messages"] if "index" in m}  # type: ignore[index]
        for detection in diagnosis["detections"]:
            messages = detection["evidence"]["messages"]
            assert set(messages) <= shown  # every cited message is in the viewer
            cited += len(messages)
    assert cited > 0
    missing = [e for e in examples if not e["found"] and e["diagnosis"]]
    assert missing and all(
        "evidence" not in d for e in missing for d in e["diagnosis"]["detections"]
    )  # type: ignore[index]


def test_report_is_deterministic(run_output: Path, tmp_path: Path, report: Path) -> None:
    again = tmp_path / "again"
    assert trajcurate(["report", str(run_output), "-o", str(again), "--resamples", "200"]) == 0
    assert (again / "index.html").read_bytes() == (report / "index.html").read_bytes()
    assert (again / "assets" / "data.js").read_bytes() == (
        report / "assets" / "data.js"
    ).read_bytes()


def test_usage_errors_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert trajcurate(["report", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a folder" in err
    assert trajcurate(["report", str(tmp_path)]) == 2
    assert "no job folder" in capsys.readouterr().err
    assert trajcurate(["report", str(tmp_path), "--threshold", "1.5"]) == 2
    assert "--threshold" in capsys.readouterr().err
    job = tmp_path / "job"
    job.mkdir()
    (job / SIDECAR).write_text("{not json\n")
    assert trajcurate(["report", str(tmp_path)]) == 2
    assert f"{SIDECAR}:1: not JSON" in capsys.readouterr().err


def _row(index: int, task: str) -> dict[str, object]:
    resolved = index % 3 != 0
    composite = round((index % 10) / 10, 4)
    return {
        "instance_id": f"x__{index:03d}",
        "job": "hand",
        "task": task,
        "agent": "a",
        "model": "m",
        "scaffold": "claudecode",
        "language": "python",
        "reward": 1.0 if resolved else 0.0,
        "resolved": resolved,
        "turns": 4,
        "score": {**dict.fromkeys(SCORE_KEYS), "composite_score": composite},
        "judges": {"llm_composite_score": 1 - composite},
        "decision": "kept",
        "reason": None,
        "tool_errors": [["bash", "</script><script>alert(2)</script>", 1]],
        "diagnosis": {
            "trajectory_score": composite,
            "task_completion_score": None,
            "detections": [["<img src=x onerror=alert(3)>", "high", 0.5]] if index % 4 else [],
        },
    }


def test_judges_and_hostile_names_from_a_sidecar_alone(tmp_path: Path) -> None:
    # A job folder with only a sidecar (no manifest, no im.jsonl), LLM judge scores, and a
    # task name and an error line written to break out of the page.
    hostile = "<script>alert(1)</script>"
    job = tmp_path / "run" / "hand"
    job.mkdir(parents=True)
    rows = [_row(i, hostile if i % 2 else "plain-task") for i in range(30)]
    (job / SIDECAR).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    target = tmp_path / "report"
    assert (
        trajcurate(
            [
                "report",
                str(tmp_path / "run"),
                "-o",
                str(target),
                "--resamples",
                "100",
                "--threshold",
                "0.55",
            ]
        )
        == 0
    )
    html = (target / "index.html").read_text()
    assert hostile not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(2)" not in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(3)&gt;" in html
    data = (target / "assets" / "data.js").read_text()
    assert "</script" not in data
    assert "TQS vs llm_composite_score" in html
    assert "threshold 0.55 (given with --threshold)" in html
    examples = _examples(target)
    assert examples and not any(e["found"] for e in examples.values())


def test_a_run_without_sidecars_still_gets_its_overview(run_output: Path, tmp_path: Path) -> None:
    # An output written before runs wrote scores.jsonl: manifests and rejects, no sidecar.
    plain = tmp_path / "all"
    shutil.copytree(run_output.parent / "all", plain)
    for sidecar in plain.glob(f"*/{SIDECAR}"):
        sidecar.unlink()
    assert trajcurate(["report", str(plain), "-o", str(tmp_path / "r"), "--resamples", "100"]) == 0
    html = (tmp_path / "r" / "index.html").read_text()
    assert "no scores.jsonl" in html and "rejected.read" in html
    assert "No trial carries a diagnosis. Run with <code>--diagnose</code>" in html
