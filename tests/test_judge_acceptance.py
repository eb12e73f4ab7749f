"""Issue 13 acceptance: judges accept what they ask for, and fail fast on a bad setup.

Against a loopback server that answers every request with random JSON that fits the schema
it was sent (any enum value, any array length the schema allows: statuses that contradict
scores, duplicate and empty check ids) and fails requests with HTTP 500 — a scripted one,
then 10% at random — every main record ends with judge scores, and a re-run with the same
cache sends no request at all.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from fake_llm_server import FakeLLMServer, status
from llm_judge_fixtures import judged_run, main_records

from transforms.llm.strategies import FixedChecklist

JOB = "2026-06-16__12-00-00"
KEY = "sk-test-acceptance-0123456789"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeLLMServer(api_key=KEY, rng=random.Random(13), fail_rate=0.1) as fake:
        yield fake


def judged(out: Path) -> list[dict[str, Any]]:
    return [r["meta_info"]["unique_info"]["_llm_judge"] for r in main_records(out, JOB)]


def metrics(out: Path) -> Mapping[str, int]:
    counted: dict[str, int] = orjson.loads((out / "manifest.json").read_bytes())["beam_metrics"]
    return counted


def test_schema_valid_answers_always_score_and_a_rerun_costs_nothing(
    composed: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    server.script(status(500))
    cache = str(tmp_path / "cache")
    judge = ("--llm-judge", "both", "--llm-cache", cache, "--llm-concurrency", "3")
    assert judged_run(composed, tmp_path / "a", server.base_url, *judge) == 0
    first = judged(tmp_path / "a")
    assert len(first) == 6  # every trial of the composed job
    for outputs in first:
        assert outputs["llm_error"] is None and outputs["llm_checklist_error"] is None, outputs
        assert 0.0 <= outputs["llm_composite_score"] <= 1.0
        assert 0.0 <= outputs["llm_checklist_csr"] <= 1.0
    counted = metrics(tmp_path / "a")
    assert counted["llm.server_errors"] >= 1 and counted["llm.failures"] == 0
    assert counted["llm.normalised"] > 0  # the random answers did need repairs
    assert counted["judge.in"] == counted["judge.kept"] == 6
    server.reset()
    assert judged_run(composed, tmp_path / "b", server.base_url, *judge) == 0
    assert server.requests == []
    assert judged(tmp_path / "b") == first
    replayed = metrics(tmp_path / "b")
    assert replayed["llm.requests"] == 0
    assert replayed["llm.cache_hits"] == replayed["llm.completions"] == counted["llm.completions"]


def test_a_judge_that_raises_dead_letters_its_bundle_only(
    composed: Path,
    tmp_path: Path,
    server: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judge = FixedChecklist.judge

    def broken_on_one(self: FixedChecklist, record: Mapping[str, Any], complete: Any) -> Any:
        if record["meta_info"]["unique_info"]["_instance_id"].endswith("69aUCrP"):
            raise KeyError("a bug in a strategy")
        return judge(self, record, complete)

    monkeypatch.setattr(FixedChecklist, "judge", broken_on_one)
    assert judged_run(composed, tmp_path, server.base_url, "--llm-judge", "fixed") == 0
    assert len(judged(tmp_path)) == 5
    (dead,) = [
        orjson.loads(line)
        for line in (tmp_path / JOB / "dead_letter.jsonl").read_bytes().splitlines()
    ]
    assert dead["stage"] == "judge" and dead["instance_id"].endswith("69aUCrP")
    assert dead["error"] == "KeyError: 'a bug in a strategy'"
    counted = metrics(tmp_path)
    assert (counted["judge.in"], counted["judge.kept"], counted["judge.dead_letter"]) == (6, 5, 1)
    manifest = orjson.loads((tmp_path / JOB / "manifest.json").read_bytes())
    assert manifest["accounting"]["balanced"] is True


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("base_url", "key", "message"),
    [
        (
            "http://127.0.0.1:{port}/v1",
            KEY,
            "--llm-base-url http://127.0.0.1:{port}: cannot connect (Connection refused)",
        ),
        ("ftp://llm.test/v1", KEY, "--llm-base-url ftp://llm.test/v1: give an http(s) URL"),
        (
            "http://127.0.0.1:{port}/v1",
            None,
            "--llm-judge needs OPENAI_API_KEY in the environment",
        ),
    ],
)
def test_a_setup_that_cannot_work_fails_before_any_trial_is_read(
    composed: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    base_url: str,
    key: str | None,
    message: str,
) -> None:
    port = closed_port()
    if key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    out = tmp_path / "out"
    assert judged_run(composed, out, base_url.format(port=port), "--llm-judge", "dynamic") == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"trajcurate run: error: {message.format(port=port)}")
    assert not (out / JOB).exists() and not (out / "manifest.json").exists()


def test_a_dry_run_needs_neither_key_nor_endpoint(
    composed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert judged_run(composed, tmp_path, url, "--llm-judge", "both", "--llm-dry-run") == 0
    assert (tmp_path / "llm_dry_run.json").exists()
