"""Secrets planted in real trials never reach any output or log; the manifests count them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_redact import CASES

from pipelines.cli import main

JOB = "2026-06-16__12-00-00"
TRIAL = "maas-controller-conflict-detecti__j56vc8R"  # resolved, Claude Code ATIF
PLACES = ("message", "tool_arguments", "tool_result")
ALL_SECRETS = "\n".join(text for text, _ in CASES.values())
SUBSTRINGS = [part for _, parts in CASES.values() for part in parts]


def _plant(trajectory: dict[str, Any], place: str) -> None:
    steps = trajectory["steps"]
    tool_step = next(s for s in steps if s.get("tool_calls"))
    if place == "message":
        steps[0]["message"] += "\nHere is my setup:\n" + ALL_SECRETS
    elif place == "tool_arguments":
        tool_step["tool_calls"][0]["arguments"]["description"] = ALL_SECRETS
    else:
        result = tool_step["observation"]["results"][0]
        result["content"] += "\n$ cat .env\n" + ALL_SECRETS


@pytest.fixture(scope="module")
def jobs(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("secret-jobs")
    source = shared_dir / "data" / "composed" / "jobs" / JOB
    (root / JOB).mkdir()
    shutil.copy(source / "config.json", root / JOB / "config.json")
    for place in PLACES:
        trial = root / JOB / f"{TRIAL}-{place}"
        shutil.copytree(source / TRIAL, trial)
        path = trial / "agent" / "trajectory.json"
        trajectory = orjson.loads(path.read_bytes())
        _plant(trajectory, place)
        path.write_bytes(orjson.dumps(trajectory))
        result = orjson.loads((trial / "result.json").read_bytes())
        result["trial_name"] = trial.name
        (trial / "result.json").write_bytes(orjson.dumps(result))
    return root


def _leaks(folder: Path, logs: str) -> list[str]:
    found = [f"log: {s}" for s in SUBSTRINGS if s in logs]
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes().decode("utf-8", "replace")
            found += [f"{path.name}: {s}" for s in SUBSTRINGS if s in data]
    return found


def test_masked_everywhere_and_counted(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["run", "--input", str(jobs), "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert _leaks(out, captured.out + captured.err) == []
    manifest = orjson.loads((out / JOB / "manifest.json").read_bytes())
    assert manifest["accounting"]["written"] == len(PLACES)
    counts = manifest["counts"]
    stats = orjson.loads((out / JOB / "lf.stats.json").read_bytes())
    for kind in CASES:
        assert counts.get(f"redacted.{kind}", 0) >= len(PLACES), kind
        assert stats["redacted"][kind] == counts[f"redacted.{kind}"], kind
    records = [orjson.loads(line) for line in (out / JOB / "im.jsonl").read_bytes().splitlines()]
    assert all("[REDACTED:" in orjson.dumps(r).decode() for r in records)
    for record in records:
        for message in record["messages"]:
            for call in message.get("tool_calls") or []:
                orjson.loads(call["function"]["arguments"])  # still JSON


def test_drop_rejects_every_trial_holding_a_secret(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert (
        main(
            ["run", "--no-progress", "--input", str(jobs), "--output", str(out), "--redact", "drop"]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert _leaks(out, captured.out + captured.err) == []
    rejects = [orjson.loads(x) for x in (out / JOB / "rejects.jsonl").read_bytes().splitlines()]
    assert [r["stage"] for r in rejects] == ["redact"] * len(PLACES)
    assert all(r["reason"].startswith("secrets found (") for r in rejects)
    assert (out / JOB / "im.jsonl").read_bytes() == b""


def test_convert_masks_the_same_secrets(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.jsonl"
    assert main(["convert", str(jobs), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert _leaks(tmp_path, captured.out + captured.err) == []
    assert "redacted.private_key" in captured.out
