"""The response cache (never pay twice) and the dry-run cost estimate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_llm_server import (
    FakeLLMServer,
    Request,
    Sleeps,
    Verdict,
    ask,
    invalid,
    make_client,
    malformed,
    status,
)

from transforms.llm.cache import ResponseCache, cache_key
from transforms.llm.client import ChatClient
from transforms.llm.dry_run import estimate_run


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def body(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": "m",
        "temperature": 0.0,
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "v", "strict": True}},
    }
    return {**base, **changes}


def test_the_key_is_the_content_of_the_request() -> None:
    reordered = dict(reversed(list(body().items())))
    assert cache_key("m", body()) == cache_key("m", reordered)
    assert len(cache_key("m", body())) == 64
    different = [
        cache_key("other-model", body()),
        cache_key("m", body(temperature=0.5)),
        cache_key("m", body(messages=[{"role": "user", "content": "hi!"}])),
        cache_key("m", body(response_format={"type": "json_object"})),
    ]
    assert cache_key("m", body()) not in different
    assert len(set(different)) == len(different)


def test_entries_round_trip_atomically(tmp_path: Path) -> None:
    cache = ResponseCache(str(tmp_path / "llm-cache"))
    key = cache_key("m", body())
    assert cache.lookup(key).entry is None and cache.lookup(key).corrupt is None
    assert cache.put(key, {"raw_text": '{"x": 1}', "finish_reason": "stop"})
    assert cache.lookup(key).entry == {
        "raw_text": '{"x": 1}',
        "finish_reason": "stop",
        "key": key,
        "version": 2,
    }
    assert sorted(p.name for p in (tmp_path / "llm-cache").iterdir()) == [f"{key}.json"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"answer": {"x": 1}, "raw_te', "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"key": "another", "answer": {}, "raw_text": ""}', "stored under another key"),
    ],
)
def test_a_corrupt_entry_is_a_reported_miss(tmp_path: Path, content: bytes, reason: str) -> None:
    cache = ResponseCache(str(tmp_path))
    key = cache_key("m", body())
    (tmp_path / f"{key}.json").write_bytes(content)
    found = cache.lookup(key)
    assert found.entry is None and found.corrupt == reason


def test_a_rerun_with_the_same_cache_sends_no_request(tmp_path: Path, sleeps: Sleeps) -> None:
    cache_dir = str(tmp_path / "cache")
    with FakeLLMServer() as server:
        with make_client(server, sleeps, cache=ResponseCache(cache_dir)) as first:
            answers = [first.complete(ask(n)).answer for n in range(5)]
        assert len(server.requests) == 5
        server.reset()
        with make_client(server, sleeps, cache=ResponseCache(cache_dir)) as second:
            again = [second.complete(ask(n)) for n in range(5)]
        assert len(server.requests) == 0
    assert [c.answer for c in again] == answers
    assert all(c.cached and c.attempts == 0 and c.tokens_in > 0 for c in again)
    counts = second.counters.snapshot()
    assert (counts["cache_hits"], counts["completions"], counts["requests"]) == (5, 5, 0)
    assert (counts["tokens_in"], counts["tokens_out"]) == (0, 0)  # nothing spent


def test_only_the_answer_that_parsed_is_cached_never_a_malformed_one(
    tmp_path: Path, sleeps: Sleeps
) -> None:
    cache_dir = str(tmp_path / "cache")
    with FakeLLMServer([malformed(), invalid()]) as server:
        with make_client(server, sleeps, cache=ResponseCache(cache_dir)) as first:
            answer = first.complete(ask()).answer
        assert len(server.requests) == 3  # two bad answers, two repair turns
        # the repaired answer, stored under the conversation that holds the bad ones
        assert len(list((tmp_path / "cache").glob("*.json"))) == 1
        server.reset()
        server.script(malformed(), invalid())  # a model at temperature 0 repeats itself
        with make_client(server, sleeps, cache=ResponseCache(cache_dir)) as second:
            again = second.complete(ask())
        assert len(server.requests) == 2  # asked again; the repaired answer came from the cache
    assert again.answer == answer and again.attempts == 2
    counts = second.counters.snapshot()
    assert (counts["malformed"], counts["repairs"], counts["cache_hits"]) == (2, 2, 0)


def test_an_answer_that_never_parsed_is_asked_again(tmp_path: Path, sleeps: Sleeps) -> None:
    cache_dir = str(tmp_path / "cache")
    bad = [malformed(), malformed("no"), malformed("still no")]
    with FakeLLMServer([*bad, *bad]) as server:
        for _ in range(2):
            client = make_client(server, sleeps, cache=ResponseCache(cache_dir))
            with client, pytest.raises(Exception, match="gave up after 3 answers"):
                client.complete(ask())
        assert len(server.requests) == 6  # nothing unusable was replayed
    assert list((tmp_path / "cache").glob("*.json")) == []


def test_an_entry_of_the_first_cache_version_still_answers(tmp_path: Path, sleeps: Sleeps) -> None:
    cache = ResponseCache(str(tmp_path))
    with FakeLLMServer() as server, make_client(server, sleeps, cache=cache) as client:
        key = cache_key(client.model, client.request_body(ask()))
        raw_text = '{"summary": "old", "checks": [{"check_id": "a", "status": "passed", '
        raw_text += '"score": 3}, {"check_id": "b", "status": "failed", "score": 1}]}'
        old = {"key": key, "version": 1, "answer": json.loads(raw_text), "raw_text": raw_text}
        (tmp_path / f"{key}.json").write_text(json.dumps(old))
        hit = client.complete(ask())
        assert server.requests == []
    assert hit.cached and hit.answer.summary == "old"


def test_a_negotiated_format_still_hits_the_cache(tmp_path: Path, sleeps: Sleeps) -> None:
    cache = ResponseCache(str(tmp_path))
    with FakeLLMServer(reject_formats={"json_schema", "json_object"}) as server:
        with make_client(server, sleeps, cache=cache) as first:
            first.complete(ask())
        server.reset()
        with make_client(server, sleeps, cache=cache) as second:
            hit = second.complete(ask())
        assert server.requests == []
    assert hit.cached and hit.response_format == "text"


def test_a_corrupt_entry_is_asked_again_and_rewritten(tmp_path: Path, sleeps: Sleeps) -> None:
    cache = ResponseCache(str(tmp_path))
    with FakeLLMServer() as server, make_client(server, sleeps, cache=cache) as client:
        key = cache_key(client.model, client.request_body(ask()))
        (tmp_path / f"{key}.json").write_text('{"truncated')
        client.complete(ask())
        assert len(server.requests) == 1
        assert client.counters.snapshot()["cache_corrupt"] == 1
        assert client.complete(ask()).cached
    raw_text = json.loads((tmp_path / f"{key}.json").read_text())["raw_text"]
    assert Verdict.model_validate_json(raw_text).summary


def test_a_failed_call_is_not_cached(tmp_path: Path, sleeps: Sleeps) -> None:
    cache = ResponseCache(str(tmp_path))
    with FakeLLMServer([status(400)]) as server, make_client(server, sleeps, cache=cache) as client:
        with pytest.raises(Exception, match="HTTP 400"):
            client.complete(ask())
        assert not client.complete(ask()).cached
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_dry_run_counts_calls_tokens_and_cost(tmp_path: Path, sleeps: Sleeps) -> None:
    requests = [ask(n) for n in range(4)] + [
        Request([{"role": "user", "content": "x" * 4000}], max_tokens=1000, purpose="generate")
    ]
    estimate = estimate_run(requests, model="fake-judge", price_in_per_m=2.0, price_out_per_m=8.0)
    assert estimate.calls == 5 and estimate.cached == 0
    assert estimate.calls_by_purpose == {"judge": 4, "generate": 1}
    assert estimate.tokens_out_max == 4 * 400 + 1000
    assert estimate.tokens_in > 1000  # the 4,000-character prompt alone is ~1,000 tokens
    expected_cost = (estimate.tokens_in * 2.0 + 2600 * 8.0) / 1e6
    assert estimate.as_dict()["cost_usd_max"] == round(expected_cost, 4)
    line = estimate.line()
    assert line.startswith("LLM dry run: 5 calls (generate 1, judge 4; 0 already cached)")
    assert "$2/M in, $8/M out" in line

    cache = ResponseCache(str(tmp_path))
    with FakeLLMServer() as server, make_client(server, sleeps, cache=cache) as client:
        client.complete(ask(0))
        client.complete(ask(1))
    rerun = estimate_run(
        requests, model="fake-judge", price_in_per_m=2.0, price_out_per_m=8.0, cache=cache
    )
    assert (rerun.calls, rerun.cached) == (3, 2)
    assert rerun.cost_usd < estimate.cost_usd


def test_the_cache_key_ignores_the_client_but_not_the_model(tmp_path: Path) -> None:
    request = ask()
    one = ChatClient("model-a", base_url="http://127.0.0.1:9/v1", api_key="k1")
    two = ChatClient("model-a", base_url="http://127.0.0.1:8/v1", api_key="k2")
    three = ChatClient("model-b", base_url="http://127.0.0.1:9/v1", api_key="k1")
    keys = {
        c.model + str(i): cache_key(c.model, c.request_body(request))
        for i, c in enumerate((one, two, three))
    }
    assert keys["model-a0"] == keys["model-a1"] != keys["model-b2"]
    assert (
        Verdict.model_json_schema()
        == one.request_body(request)["response_format"]["json_schema"]["schema"]
    )
