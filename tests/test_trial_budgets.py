"""One trial cannot stall a run: per-trial budgets, linear listings, a record-size cap.

A trial over `--max-trial-files`, `--max-trial-mb` or `--max-trial-seconds` is rejected at
`open` with the budget it broke, and the run goes on; a record over `--max-record-mb` of text
is rejected at `read` with its size. The Claude Code listings look at each file once: the
test counts the work (peeks, links) instead of timing it.
"""

from __future__ import annotations

import shutil
from itertools import count
from pathlib import Path
from typing import Any

import orjson
import pytest
from reader_checks import good_trial, trajectory_doc

from pipelines.cli import main
from transforms.intake import open_unit
from transforms.readers import claude_code, confined
from transforms.readers.claude_code_agents import link_subagents
from transforms.readers.claude_code_conversation import MAIN, Conversation
from transforms.readers.confined import OverBudget, ReadLimits, TrialFiles
from transforms.readers.discover import ReadUnit
from transforms.readers.harbor_trial import read_trial

FIXTURE = Path(__file__).parent / "fixtures" / "readers" / "multi-turn-claude-code"
JOB = "2026-07-01__09-00-00"
TRIAL = "fix-date-parsing__Ab3dE7q"
PROJECT = Path("agent/sessions/projects/-app")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _claude_job(tmp_path: Path, junk_files: int = 0) -> Path:
    """The multi-turn Claude Code job, its trial with `junk_files` more transcripts in the
    project folder (bookkeeping lines only), beside a plain ATIF trial."""
    jobs = tmp_path / "jobs"
    shutil.copytree(FIXTURE, jobs)
    junk = jobs / JOB / TRIAL / PROJECT / "junk"
    junk.mkdir()
    for i in range(junk_files):
        (junk / f"j{i:06d}.jsonl").write_bytes(b'{"type": "summary", "summary": "x"}\n')
    good_trial(jobs / JOB, "other__trial")
    return jobs


def _run(jobs: Path, out: Path, *flags: str) -> int:
    argv = ["run", "--no-progress", "--input", str(jobs), "--output", str(out), *flags]
    return main([*argv, "--instance-status", "all"])


def _rejects(out: Path) -> dict[str, str]:
    return {Path(r["source"]).name: r["reason"] for r in _lines(out / JOB / "rejects.jsonl")}


def test_a_trial_with_too_many_files_is_rejected_and_the_run_goes_on(tmp_path: Path) -> None:
    jobs = _claude_job(tmp_path, junk_files=10_050)
    out = tmp_path / "out"
    assert _run(jobs, out) == 0
    assert _rejects(out) == {
        TRIAL: "trial over its budget: more than 10,000 files looked at or opened "
        "(--max-trial-files)"
    }
    manifest = orjson.loads((out / JOB / "manifest.json").read_bytes())
    assert manifest["accounting"] == {
        "in": 2,
        "written": 1,
        "rejected": 1,
        "dead_lettered": 0,
        "balanced": True,
    }
    assert _run(jobs, tmp_path / "raised", "--max-trial-files", "20000") == 0
    assert _rejects(tmp_path / "raised") == {}


def test_a_trial_reading_more_than_its_mb_is_rejected(tmp_path: Path) -> None:
    job = tmp_path / "jobs" / "job"
    big = trajectory_doc("x" * 40_000)
    good_trial(job, "big", {"agent/trajectory.json": big})
    good_trial(job, "small")
    out = tmp_path / "out"
    assert _run(tmp_path / "jobs", out, "--max-trial-mb", "0.02") == 0
    rejects = {Path(r["source"]).name: r["reason"] for r in _lines(out / "job" / "rejects.jsonl")}
    assert rejects == {"big": "trial over its budget: more than 20971 bytes read (--max-trial-mb)"}


def test_a_trial_over_its_time_budget_is_rejected_at_the_next_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fake clock that moves 100 s at every look: the second file access is too late."""
    job = tmp_path / "job"
    slow, fast = good_trial(job, "slow"), good_trial(job, "fast")
    ticks = count(step=100.0)
    monkeypatch.setattr(confined.time, "monotonic", lambda: next(ticks))
    limits = ReadLimits(max_trial_seconds=150.0)
    (drop,) = open_unit(ReadUnit(slow, "harbor", job="job"), limits)
    assert drop.record["reason"] == (
        "trial over its budget: reading it took more than 150 s (--max-trial-seconds)"
    )
    monkeypatch.setattr(confined.time, "monotonic", lambda: 0.0)
    (bundle,) = open_unit(ReadUnit(fast, "harbor", job="job"), limits)
    assert bundle["records"] and bundle["instance_id"] == "fast"


def test_the_budget_is_no_reader_error_an_optional_look_could_swallow(tmp_path: Path) -> None:
    for name in "abc":
        (tmp_path / name).write_bytes(name.encode())
    files = TrialFiles(tmp_path, ReadLimits(max_trial_files=2))
    assert [files.optional_bytes(tmp_path / "a") for _ in range(3)] == [b"a"] * 3  # one file
    assert files.optional_bytes(tmp_path / "b") == b"b"
    with pytest.raises(OverBudget, match="more than 2 files"):
        files.optional_bytes(tmp_path / "c")
    listing = TrialFiles(tmp_path, ReadLimits(max_trial_files=1), scope="the input")
    assert [listing.read_bytes(tmp_path / n) for n in "abc"] == [b"a", b"b", b"c"]  # no budget


def test_a_record_over_the_size_cap_is_rejected_with_its_size(tmp_path: Path) -> None:
    job = tmp_path / "jobs" / "job"
    good_trial(job, "huge", {"agent/trajectory.json": trajectory_doc("y" * 3 * 2**20)})
    good_trial(job, "fine")
    out = tmp_path / "out"
    assert _run(tmp_path / "jobs", out, "--max-record-mb", "2") == 0
    rejects = _lines(out / "job" / "rejects.jsonl")
    assert [(Path(r["source"]).name, r["stage"]) for r in rejects] == [("huge", "read")]
    assert rejects[0]["reason"].startswith("record too large: the main record holds 3.0 MiB")
    assert rejects[0]["reason"].endswith("over the --max-record-mb cap of 2 MiB")
    written = [
        r["meta_info"]["unique_info"]["_instance_id"] for r in _lines(out / "job" / "im.jsonl")
    ]
    assert written == ["fine"]


def _session(folder: Path, name: str, session: str) -> None:
    user = {
        "type": "user",
        "sessionId": session,
        "uuid": f"{name}-u",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "fix it"},
    }
    assistant = {
        **user,
        "type": "assistant",
        "uuid": f"{name}-a",
        "parentUuid": f"{name}-u",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    }
    (folder / name).write_bytes(b"\n".join(orjson.dumps(e) for e in (user, assistant)))


def test_a_folder_of_sessions_peeks_each_subagent_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code 2.0 keeps subagent files beside the sessions: each session looked at every
    `agent-*.jsonl` of the folder (n sessions x n files)."""
    sessions = 40
    for i in range(sessions):
        _session(tmp_path, f"s{i:03d}.jsonl", f"session-{i}")
        _session(tmp_path, f"agent-{i:03d}.jsonl", f"session-{i}")
    peeked: list[Path] = []
    real = claude_code._peeked_session

    def counting(files: TrialFiles, path: Path) -> str | None:
        peeked.append(path)
        return real(files, path)

    monkeypatch.setattr(claude_code, "_peeked_session", counting)
    claude_code._INDEXES.clear()
    for i in range(sessions):
        (bundle,) = claude_code.read(tmp_path / f"s{i:03d}.jsonl")
        assert bundle["instance_id"] == f"s{i:03d}"
    assert len(peeked) == sessions  # once each, not 40 x 40


def test_streams_sharing_one_prompt_link_to_distinct_calls_in_order() -> None:
    """2,000 subagent streams with one prompt (the old lookup scanned every call for every
    stream; the index hands each the next unused call: `make bench-trial-files` times it)."""
    n = 2_000
    calls = [
        {"type": "tool_use", "id": f"call{i}", "name": "Task", "input": {"prompt": "p"}}
        for i in range(n)
    ]
    turn = {"type": "assistant", "uuid": "m", "message": {"role": "assistant", "content": calls}}
    conversations = {MAIN: Conversation([turn], MAIN)}
    for i in range(n):
        stream = [{"type": "user", "uuid": f"s{i}", "message": {"role": "user", "content": "p"}}]
        conversations[f"side{i}"] = Conversation(stream, f"side{i}")
    links = link_subagents(conversations)
    assert [links[f"side{i}"].id for i in range(n)] == [f"call{i}" for i in range(n)]


def test_a_trial_with_many_subagent_references_lists_each_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each referenced ATIF subagent file looked for its `.cont-<n>` siblings by listing
    its folder again (5,000 references: 10.5 s; now 0.6 s): each folder is listed once, and
    the continuations are still found."""
    doc = trajectory_doc("done", "task")
    trial = good_trial(tmp_path / "job", "t")
    subagents = trial / "agent" / "subagents"
    subagents.mkdir()
    refs = []
    for i in range(200):
        steps = [
            {"step_id": 1, "source": "user", "message": f"check {i}"},
            {"step_id": 2, "source": "agent", "message": f"fine {i}"},
        ]
        sub = {**doc, "session_id": f"s{i}", "steps": steps}
        (subagents / f"sub-{i:03d}.json").write_bytes(orjson.dumps(sub))
        refs.append({"session_id": f"s{i}", "trajectory_path": f"subagents/sub-{i:03d}.json"})
    more = [{"step_id": 3, "source": "agent", "message": "and more"}]
    (subagents / "sub-007.cont-1.json").write_bytes(orjson.dumps({**doc, "steps": more}))
    doc["steps"][1]["observation"]["results"].append({"subagent_trajectory_ref": refs})
    (trial / "agent" / "trajectory.json").write_bytes(orjson.dumps(doc))
    listed: list[str] = []
    real_listdir = confined.os.listdir

    def counting(path: Any) -> list[str]:
        listed.append(str(path))
        return real_listdir(path)

    monkeypatch.setattr(confined.os, "listdir", counting)
    bundle = read_trial(trial, "job")
    assert len(bundle["records"]) == 201
    assert listed.count(str(subagents)) == 1
    seventh = next(r for r in bundle["records"] if "check 7" in orjson.dumps(r).decode())
    assert "and more" in orjson.dumps(seventh).decode()


def _im_case(case: dict[str, Any], instance: str, prompt: str) -> bytes:
    """One IM line: a reference record renamed `instance`, its first user message `prompt`."""
    record = orjson.loads(orjson.dumps(case))
    record["meta_info"]["unique_info"]["_instance_id"] = instance
    first = next(m for m in record["messages"] if m["role"] == "user")
    first["content"] = prompt
    return orjson.dumps(record)


def test_an_im_record_is_capped_by_its_text_not_its_line(
    tmp_path: Path, cases: list[dict[str, Any]]
) -> None:
    """The IM reader's line lengths bound a record's text, so most records are never
    serialised to be measured; a long line is still measured: 1.5 MiB of newlines take 3 MiB
    of `\\n` escapes in the line and are under a 2 MiB cap."""
    lines = [
        _im_case(cases[0], "huge", "y" * 3 * 2**20),
        _im_case(cases[0], "escaped", "\n" * (3 * 2**19)),
        _im_case(cases[0], "fine", "fix it"),
    ]
    assert len(lines[1]) > 3 * 2**20
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(source), "-o", str(out), "--max-record-mb", "2"]) == 0
    (reject,) = _lines(tmp_path / "out.rejects.jsonl")
    assert (reject["instance_id"], reject["stage"]) == ("huge", "read")
    assert reject["reason"].startswith("record too large: the main record holds 3.0 MiB")
    written = [r["meta_info"]["unique_info"]["_instance_id"] for r in _lines(out)]
    assert written == ["escaped", "fine"]


def test_line_lengths_bound_the_text_of_every_reference_record(cases_path: Path) -> None:
    """What the reader adds to a record after its line was read (UTC timestamps, warnings,
    provenance) is inside the bound (`_line_bound`), for every record of the reference file."""
    from transforms.bundle_steps import _line_bound, text_size
    from transforms.readers.bundle import LINE_BYTES

    bundles = list(open_unit(ReadUnit(cases_path, "im"), ReadLimits()))
    assert sum(len(b["records"]) for b in bundles) == len(cases_path.read_bytes().splitlines())
    for bundle in bundles:
        sizes = bundle[LINE_BYTES]
        assert len(sizes) == len(bundle["records"])
        for record, size in zip(bundle["records"], sizes, strict=True):
            assert text_size(record) <= _line_bound(record, size) <= size + 2**16
