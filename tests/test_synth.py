"""`trajcurate synth`: deterministic synthetic Harbor jobs.

Small runs (2 jobs x 40 trials) generated once per module; every check reads the files the
generator wrote, the way a reader of the job folders would.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pipelines import synth_command
from pipelines.synth import MANIFEST, SynthError, SynthOptions, generate, trial_name_for
from pipelines.synth.corrupt import ESCAPING_PATH

JOBS, TRIALS, SEED, BAD_SHARE = 2, 40, 3, 0.1
TRIAL_NAME = re.compile(r"^[^/]{1,32}__[A-Za-z0-9]{7}$")


def _synth(out: Path, seed: int = SEED, bad_share: float = BAD_SHARE) -> Path:
    generate(SynthOptions(out, JOBS, TRIALS, seed, bad_share), progress=io.StringIO())
    return out


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _synth(tmp_path_factory.mktemp("synth") / "out")


@pytest.fixture(scope="module")
def manifest(tree: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tree / MANIFEST).read_text().splitlines()]


def _trial_dirs(tree: Path) -> list[Path]:
    return sorted(t for job in tree.iterdir() if job.is_dir() for t in job.iterdir() if t.is_dir())


def test_same_seed_writes_identical_bytes(tree: Path, tmp_path: Path) -> None:
    again = _synth(tmp_path / "again")
    assert _digest(again) == _digest(tree)


def test_different_seed_writes_a_different_tree(tree: Path, tmp_path: Path) -> None:
    other = _digest(_synth(tmp_path / "other", seed=SEED + 1))
    assert other != _digest(tree)
    assert not set(other) & {k for k in _digest(tree) if "__" in k}  # no shared trial names


def test_counts_of_jobs_trials_and_folders(tree: Path, manifest: list[dict[str, Any]]) -> None:
    jobs = sorted(p for p in tree.iterdir() if p.is_dir())
    assert len(jobs) == JOBS
    assert len(manifest) == JOBS * TRIALS
    for job in jobs:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d__\d\d-\d\d-\d\d", job.name)
        trials = [t for t in job.iterdir() if t.is_dir()]
        assert len(trials) == TRIALS
        result = json.loads((job / "result.json").read_text())
        assert result["n_total_trials"] == TRIALS
        evals = result["stats"]["evals"]
        assert sum(e["n_trials"] for e in evals.values()) == TRIALS
        assert json.loads((job / "config.json").read_text())["job_name"] == job.name
        for trial in trials:
            assert (trial / "config.json").is_file() and (trial / "result.json").is_file()


def test_trial_names_follow_harbor_rule(tree: Path) -> None:
    for trial in _trial_dirs(tree):
        result = json.loads((trial / "result.json").read_text())
        assert result["trial_name"] == trial.name
        assert TRIAL_NAME.match(trial.name)
        assert trial.name == trial_name_for(result["task_name"], trial.name[-7:])
    assert trial_name_for("api-pagination-counts-last-page-when-partial", "Ab3dE6g") == (
        "api-pagination-counts-last-page__Ab3dE6g"
    )


def test_every_good_trajectory_parses_and_has_steps(
    tree: Path, manifest: list[dict[str, Any]]
) -> None:
    good = {(r["job"], r["trial"]) for r in manifest if r["bad"] is None}
    checked = Counter[str]()
    for job, trial in good:
        agent = tree / job / trial / "agent"
        for path in agent.rglob("trajectory*.json"):
            doc = json.loads(path.read_bytes().decode("utf-8"))
            assert doc["schema_version"] in ("ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7")
            assert isinstance(doc["steps"], list) and doc["steps"]
            assert [s["step_id"] for s in doc["steps"]] == list(range(1, len(doc["steps"]) + 1))
            checked["atif"] += 1
        for path in [*agent.rglob("*.jsonl"), *agent.glob("opencode.txt")]:
            events = [json.loads(line) for line in path.read_bytes().decode().splitlines()]
            assert events and all(isinstance(e, dict) for e in events)
            checked["native"] += 1
        assert any(agent.iterdir())
    assert checked["atif"] > 20 and checked["native"] > 5


def test_mix_of_agents_and_formats(manifest: list[dict[str, Any]]) -> None:
    formats = {(r["agent"], r["format"]) for r in manifest}
    assert {a for a, _ in formats} == {"claude-code", "terminus-2", "openhands", "opencode"}
    assert {
        ("claude-code", "atif"),
        ("claude-code", "claude-code-jsonl"),
        ("opencode", "opencode-jsonl"),
        ("terminus-2", "atif+cont"),
        ("terminus-2", "atif+summary"),
    } <= formats


def test_share_of_bad_trials_matches_bad_share(tree: Path, manifest: list[dict[str, Any]]) -> None:
    per_job = Counter(r["job"] for r in manifest if r["bad"])
    assert set(per_job.values()) == {round(TRIALS * BAD_SHARE)}
    kinds = Counter(r["bad"] for r in manifest if r["bad"])
    assert len(kinds) >= 5
    for row in manifest:
        agent = tree / row["job"] / row["trial"] / "agent"
        kind = row["bad"]
        if kind == "missing_agent":
            assert not agent.exists()
            continue
        data = _main_file(agent).read_bytes()
        if kind is None:
            assert _parses(data)
        elif kind == "empty":
            assert data == b""
        elif kind in ("truncated", "invalid_utf8", "binary"):
            assert not _parses(data), (kind, row["trial"])
        elif kind == "escaping_ref":
            assert ESCAPING_PATH in data.decode()
        else:
            assert kind == "wrong_types"
            assert _has_wrong_types(json.loads(data))


def _main_file(agent: Path) -> Path:
    for name in ("trajectory.json", "opencode.txt"):
        if (agent / name).exists():
            return agent / name
    return next((agent / "sessions" / "projects" / "-app").glob("*.jsonl"))


def _parses(data: bytes) -> bool:
    """UTF-8 JSON, or UTF-8 JSON lines."""
    try:
        text = data.decode("utf-8")
        if text.lstrip().startswith("{") and "\n{" in text.strip():
            [json.loads(line) for line in text.splitlines()]
        else:
            json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    return True


def _has_wrong_types(doc: dict[str, Any]) -> bool:
    steps = doc["steps"]
    if not isinstance(steps, list) or not isinstance(doc["agent"], dict):
        return True
    return any(
        not isinstance(s["step_id"], int)
        or not isinstance(s.get("message", ""), str)
        or not isinstance(s.get("tool_calls", []), list)
        for s in steps
    )


def test_no_bad_trials_without_bad_share(tmp_path: Path) -> None:
    out = _synth(tmp_path / "clean", bad_share=0.0)
    rows = [json.loads(line) for line in (out / MANIFEST).read_text().splitlines()]
    assert not [r for r in rows if r["bad"]]


def test_rewards_mix_resolved_unresolved_fractional_and_errors(tree: Path) -> None:
    rewards: Counter[str] = Counter()
    for trial in _trial_dirs(tree):
        result = json.loads((trial / "result.json").read_text())
        verifier = result["verifier_result"]
        if verifier is None:
            rewards["null"] += 1
            assert result["exception_info"]["exception_type"]
            continue
        value = verifier["rewards"]["reward"]
        rewards["1" if value == 1.0 else "0" if value == 0.0 else "fraction"] += 1
        txt = trial / "verifier" / "reward.txt"
        if txt.exists():
            assert float(txt.read_text()) == value
    assert rewards["1"] > 0 and rewards["0"] > 0
    assert rewards["fraction"] > 0 and rewards["null"] > 0


def test_cli_refuses_a_non_empty_folder_and_prints_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    synth_command.add_parser(parser.add_subparsers())
    argv = ["synth", "--out", str(tmp_path / "cli"), "--jobs", "1", "--trials", "12", "--seed", "9"]
    args = parser.parse_args(argv)
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "12 trials in 1 jobs" in out and "by agent/format" in out
    assert args.handler(args) == 2
    assert "is not empty" in capsys.readouterr().err
    with pytest.raises(SynthError):
        generate(SynthOptions(tmp_path / "x", 1, 0, 1), progress=io.StringIO())
