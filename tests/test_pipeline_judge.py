"""The LLM judges inside `trajcurate run`, against a real chat-completions server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from fake_llm_server import FakeLLMServer, drop, malformed, slow, status
from llm_judge_fixtures import judged_run, main_records

JOB = "2026-06-16__12-00-00"
KEY = "sk-test-never-shown-0123456789"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeLLMServer(api_key=KEY) as fake:
        yield fake


def run(composed: Path, out: Path, server: FakeLLMServer, *extra: str) -> int:
    return judged_run(composed, out, server.base_url, "--llm-max-retries", "6", *extra)


def test_every_main_record_ends_judged_or_with_an_error_under_faults(
    composed: Path, tmp_path: Path, server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script(
        status(429, retry_after="0"),
        status(500),
        slow(0.05),
        drop(),
        malformed(),
        status(503),
        status(429, retry_after="0"),
        malformed(),
    )
    assert run(composed, tmp_path, server, "--llm-judge", "both", "--llm-concurrency", "3") == 0
    records = main_records(tmp_path, JOB)
    assert len(records) == 6  # every trial of the composed job, none lost
    for record in records:
        judged = record["meta_info"]["unique_info"]["_llm_judge"]
        # every fault is retried or repaired within its budget: every record is scored (the
        # server's answers fit the schema sent, so they are accepted)
        assert judged["llm_composite_score"] is not None and judged["llm_error"] is None
        assert judged["llm_checklist_csr"] is not None, judged["llm_checklist_error"]
        assert judged["llm_checklist_version"] == "fixed-checklist-v1+dynamic-checklist-v1"
    printed = capsys.readouterr()
    assert "LLM judge: requests" in printed.out
    assert KEY not in printed.out + printed.err
    assert KEY not in (tmp_path / JOB / "im.jsonl").read_text()
    assert KEY not in (tmp_path / "manifest.json").read_text()
    metrics = orjson.loads((tmp_path / "manifest.json").read_bytes())["beam_metrics"]
    assert metrics["llm.requests"] == len(server.requests)
    assert metrics["llm.retries"] >= 1


def test_tqs_score_and_judge_outputs_stay_apart(
    composed: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    assert run(composed, tmp_path, server, "--llm-judge", "fixed") == 0
    for record in main_records(tmp_path, JOB):
        info = record["meta_info"]["unique_info"]
        assert not any(key.startswith("llm_") for key in info["_score"])
        assert 0.0 <= info["_llm_judge"]["llm_composite_score"] <= 1.0


def test_a_rerun_with_the_same_cache_sends_no_request(
    composed: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    cache = tmp_path / "cache"
    assert (
        run(composed, tmp_path / "a", server, "--llm-judge", "fixed", "--llm-cache", str(cache))
        == 0
    )
    first = len(server.requests)
    assert first >= 6
    server.reset()
    assert (
        run(composed, tmp_path / "b", server, "--llm-judge", "fixed", "--llm-cache", str(cache))
        == 0
    )
    assert len(server.requests) == 0
    judged_a, judged_b = (
        [r["meta_info"]["unique_info"]["_llm_judge"] for r in main_records(tmp_path / name, JOB)]
        for name in ("a", "b")
    )
    assert judged_a == judged_b


def test_dry_run_counts_calls_and_cost_without_calling(
    composed: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    assert (
        run(
            composed,
            tmp_path,
            server,
            "--llm-judge",
            "both",
            "--llm-dry-run",
            "--llm-price-in",
            "0.15",
            "--llm-price-out",
            "0.60",
        )
        == 0
    )
    assert len(server.requests) == 0
    estimate = orjson.loads((tmp_path / "llm_dry_run.json").read_bytes())
    # 6 main records: 6 fixed + 6 judge calls, and one checklist per distinct task
    by_purpose = estimate["calls_by_purpose"]
    assert by_purpose["fixed_checklist"] == 6
    assert by_purpose["judge_checklist"] == 6
    assert 1 <= by_purpose["generate_checklist"] < 6  # the hello-world attempts share one
    assert estimate["calls"] == sum(by_purpose.values())
    assert estimate["cost_usd_max"] > 0
    records = main_records(tmp_path, JOB)
    # no judge output: the schema's `_llm_judge` key is there, null (transforms/sinks/schema.py)
    assert all(r["meta_info"]["unique_info"]["_llm_judge"] is None for r in records)


def test_filter_on_a_judge_score(composed: Path, tmp_path: Path, server: FakeLLMServer) -> None:
    assert (
        run(
            composed,
            tmp_path,
            server,
            "--llm-judge",
            "fixed",
            "--score-key",
            "llm_composite_score",
            "--min-score",
            "1.01",
        )
        == 2
    )  # out of range: usage error
    assert (
        run(
            composed,
            tmp_path,
            server,
            "--llm-judge",
            "fixed",
            "--score-key",
            "llm_composite_score",
            "--min-score",
            "0.0",
        )
        == 0
    )
    assert len(main_records(tmp_path, JOB)) == 6


def test_a_run_whose_every_judge_call_failed_exits_3(
    composed: Path,
    tmp_path: Path,
    server: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-the-wrong-key-0123456789")  # 401 on every call
    assert run(composed, tmp_path, server, "--llm-judge", "fixed") == 3
    printed = capsys.readouterr()
    (line,) = [x for x in printed.err.splitlines() if "every LLM judge call failed" in x]
    assert "no answer" in line and "--llm-base-url" in line
    records = main_records(tmp_path, JOB)  # published all the same, each with its error
    assert len(records) == 6
    assert all(r["meta_info"]["unique_info"]["_llm_judge"]["llm_error"] for r in records)


def test_a_run_with_some_judge_answers_exits_0(
    composed: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    server.script(status(401), status(401))
    assert run(composed, tmp_path, server, "--llm-judge", "fixed") == 0
