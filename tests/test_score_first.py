"""Every trajectory is scored as the reference scores it; only then is it judged trainable.

- `trajcurate score` on the reference sets with their scores stripped writes every record,
  each `_score` equal to the reference's, whatever its role order; records that cannot be
  SFT data (a run that stops after a tool result, two assistant turns in a row, ...) carry
  `_trainable` with the reason, the others null.
- `trajcurate run` on a truncated trajectory with reward 1 (an IM record ending on a tool
  result; a Harbor trial whose ATIF trajectory stops after a tool result): its `scores.jsonl`
  row carries the score, it is rejected from the SFT files at `trainable` with its reason,
  and the report counts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import CASES_RELPATH
from reader_checks import good_trial, trajectory_doc
from test_tqs_reference import format_diff, score_diff

from pipelines.cli import main

SETS = {"cases.jsonl": 335, "randomized.jsonl": 1539, "randomized-v2.jsonl": 1018}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _stripped(source: Path, target: Path) -> Path:
    records = _lines(source)
    for record in records:
        record["meta_info"]["unique_info"]["_score"] = None
    target.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return target


def _differences(expected: dict[str, Any] | None, got: dict[str, Any] | None) -> str:
    if expected is None or got is None:
        return "" if expected is got else f"expected {expected!r}, got {got!r}"
    # keys the reference has no value for (trajcurate's schema writes them as null) aside
    rows = [r for r in score_diff(expected, got) if r[0] in expected or r[2] is not None]
    return format_diff(rows) if rows else ""


@pytest.mark.parametrize("name", sorted(SETS))
def test_score_writes_every_record_with_the_reference_score(
    name: str, shared_dir: Path, tmp_path: Path
) -> None:
    reference = _lines(shared_dir / CASES_RELPATH.with_name(name))
    stripped = _stripped(shared_dir / CASES_RELPATH.with_name(name), tmp_path / name)
    out = tmp_path / f"scored-{name}"
    assert main(["score", str(stripped), "-o", str(out)]) == 0
    written = _lines(out)
    assert len(written) == len(reference) == SETS[name]
    assert _lines(tmp_path / f"scored-{name.removesuffix('.jsonl')}.rejects.jsonl") == []
    untrainable = truncated = 0
    for want, got in zip(reference, written, strict=True):
        info, want_info = got["meta_info"]["unique_info"], want["meta_info"]["unique_info"]
        assert info["_instance_id"] == want_info["_instance_id"]
        problem = _differences(want_info["_score"], info["_score"])
        assert not problem, f"{info['_instance_id']}:\n{problem}"
        untrainable += info["_trainable"] is not None
        if want["messages"][-1]["role"] != "assistant":
            truncated += 1
            assert "last message is" in info["_trainable"]
    # every truncated run is marked, and more (two assistant turns in a row, stray results,
    # in cases.jsonl only the two probes of a call whose result is missing)
    assert untrainable >= truncated
    assert (untrainable == 2) if name == "cases.jsonl" else (untrainable > 0)


def _truncated_record(shared_dir: Path) -> tuple[dict[str, Any], float]:
    """A reference record that stops after a tool result, with reward 1 as its trial had,
    and the composite score the reference gave it."""
    for record in _lines(shared_dir / CASES_RELPATH.with_name("randomized.jsonl")):
        info = record["meta_info"]["unique_info"]
        if record["messages"][-1]["role"] == "tool" and info["_agent_type"] == "main":
            composite = info["_score"]["composite_score"]
            info["_score"] = None
            info["_instance_metadata"]["rewards"] = {"reward": 1.0}
            info["_instance_metadata"]["reward_source"] = "reward.txt"
            return record, composite
    raise AssertionError("randomized.jsonl has no record ending on a tool result")


def test_a_truncated_resolved_run_is_scored_reported_and_kept_out_of_sft(
    shared_dir: Path, tmp_path: Path
) -> None:
    record, composite = _truncated_record(shared_dir)
    instance = record["meta_info"]["unique_info"]["_instance_id"]
    source = tmp_path / "truncated.jsonl"
    source.write_bytes(orjson.dumps(record) + b"\n")
    out = tmp_path / "out"
    args = ["run", "--no-progress", "--input", str(source), "--output", str(out), "--report"]
    assert main(args) == 0
    job = out / "standalone"
    rows = _lines(job / "scores.jsonl")
    assert [r["instance_id"] for r in rows] == [instance]
    assert rows[0]["score"]["composite_score"] == pytest.approx(composite, abs=1e-4)
    assert rows[0]["decision"] == "rejected"
    rejects = _lines(job / "rejects.jsonl")
    assert [(r["stage"], r["instance_id"]) for r in rejects] == [("trainable", instance)]
    assert "last message is 'tool', expected 'assistant'" in rejects[0]["reason"]
    assert (job / "im.jsonl").read_bytes() == b""
    assert (job / "lf.json").read_bytes() == b""  # no LF example: an empty file
    manifest = orjson.loads((job / "manifest.json").read_bytes())
    assert manifest["counts"]["rejected.trainable"] == 1
    page = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert "1 scored trials" in page.replace("\n", " ")


def _cut_off_trajectory() -> dict[str, Any]:
    """An ATIF trajectory whose last step is a call and its result: the agent was stopped
    (a timeout) before the model answered the result."""
    doc = trajectory_doc()
    doc["steps"] = doc["steps"][:2]
    return doc


def test_a_harbor_trial_stopped_after_a_tool_result_is_scored_reported_and_kept_out_of_sft(
    tmp_path: Path,
) -> None:
    job = tmp_path / "jobs" / "job"
    job.mkdir(parents=True)
    (job / "config.json").write_bytes(orjson.dumps({"job_name": "job"}))
    good_trial(job, "finished")
    good_trial(job, "cut-off", {"agent/trajectory.json": _cut_off_trajectory()})
    out = tmp_path / "out"
    args = ["run", "--no-progress", "--input", str(tmp_path / "jobs"), "--output", str(out)]
    assert main([*args, "--report"]) == 0
    rows = {r["instance_id"]: r for r in _lines(out / "job" / "scores.jsonl")}
    assert sorted(rows) == ["cut-off", "finished"]
    cut = rows["cut-off"]
    # scored as the reference scores a claudecode run that ends on a call: SUB base 0, the
    # truncation penalty in DPI
    assert cut["score"]["composite_score"] is not None
    assert cut["score"]["sub_score"] == 0.0
    assert cut["decision"] == "rejected"
    assert rows["finished"]["decision"] == "kept"
    rejects = _lines(out / "job" / "rejects.jsonl")
    assert [(r["stage"], r["instance_id"]) for r in rejects] == [("trainable", "cut-off")]
    assert "truncated: the run stopped after 1 tool result(s)" in rejects[0]["reason"]
    kept = [r["meta_info"]["unique_info"]["_instance_id"] for r in _lines(out / "job" / "im.jsonl")]
    assert kept == ["finished"]
    assert len(orjson.loads((out / "job" / "lf.json").read_bytes())) == 1
    manifest = orjson.loads((out / "job" / "manifest.json").read_bytes())
    assert manifest["counts"]["rejected.trainable"] == 1
    assert manifest["fidelity"]["harbor-atif"]["unanswered_tool_results_dropped"] == 1
    page = (out / "report" / "index.html").read_text(encoding="utf-8").replace("\n", " ")
    assert "2 scored trials" in page
