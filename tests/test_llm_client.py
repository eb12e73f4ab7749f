"""The LLM client against a real loopback chat-completions server with scripted faults.

Retries never sleep for real (the retry policy's `sleep` records the waits); only the one
end-to-end rate test runs on the wall clock, for about two seconds.
"""

from __future__ import annotations

import logging
import pickle
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Literal

import httpx
import pytest
from fake_llm_server import (
    SECRET,
    FakeLLMServer,
    Fault,
    Sleeps,
    Verdict,
    ask,
    drop,
    invalid,
    make_client,
    malformed,
    max_in_window,
    min_in_full_windows,
    sample_for_schema,
    slow,
    status,
)
from pydantic import BaseModel, Field

from scorers.llm_judges.json_answers import json_objects
from transforms.llm.chat_format import parse_answer
from transforms.llm.client import ChatClient, Completion, JudgeError
from transforms.llm.rate_limit import SlidingWindowLimiter
from transforms.llm.retry import AdaptiveRate, RetryPolicy


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def test_structured_answer_with_usage_and_a_strict_json_schema_request(
    server: FakeLLMServer, sleeps: Sleeps
) -> None:
    with make_client(server, sleeps) as client:
        completion = client.complete(ask())
    assert isinstance(completion.answer, Verdict)
    assert completion.answer.checks[0].score == 3  # the middle of 1..5
    assert completion.attempts == 1 and not completion.cached
    (seen,) = server.requests
    assert seen.body["temperature"] == 0
    assert seen.body["max_tokens"] == 400
    assert seen.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": Verdict.model_json_schema(), "strict": True},
    }
    assert seen.authorization == f"Bearer {SECRET}"
    assert completion.tokens_in > 0 and completion.tokens_out > 0
    snapshot = client.counters.snapshot()
    assert snapshot["requests"] == 1 and snapshot["completions"] == 1
    assert (snapshot["tokens_in"], snapshot["tokens_out"]) == (
        completion.tokens_in,
        completion.tokens_out,
    )
    assert snapshot["latency_p50_s"] is not None


def test_every_request_ends_in_an_answer_or_a_judge_error_under_faults(
    server: FakeLLMServer, sleeps: Sleeps
) -> None:
    server.script(
        status(429, retry_after="2"),
        status(500),
        status(503),
        drop(),
        slow(3.0),  # longer than the client's timeout
        malformed(),
        invalid(),
        status(502),
    )
    results: list[Completion[Verdict] | JudgeError] = []
    lock = threading.Lock()
    # The timeout leaves a slow moment room to answer the other requests in time: at 0.15 s
    # a full CI run once counted 24 requests, not 20 (four normal answers too late).
    with make_client(server, sleeps, timeout_s=1.0) as client:

        def judge(n: int) -> None:
            try:
                outcome: Completion[Verdict] | JudgeError = client.complete(ask(n))
            except JudgeError as exc:
                outcome = exc
            with lock:
                results.append(outcome)

        threads = [threading.Thread(target=judge, args=(n,)) for n in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        counts = client.counters.snapshot()
    assert len(results) == 12  # none lost
    assert all(isinstance(r, Completion) for r in results)  # 8 retries each: all recover
    assert counts["completions"] == 12 and counts["failures"] == 0
    assert counts["requests"] == len(server.requests) == 12 + 8
    assert counts["retries"] == 6  # transport and HTTP faults
    assert counts["repairs"] == 2  # the two bad answers, asked again with a repair turn
    assert counts["rate_limited"] == 1
    assert counts["server_errors"] == 3
    assert counts["transport_errors"] == 2  # the dropped connection and the timeout
    assert counts["malformed"] == 2
    assert sum(r.attempts for r in results if isinstance(r, Completion)) == 20
    assert any(2.0 <= wait <= 2.2 for wait in sleeps.waits)  # Retry-After honoured


def test_an_exhausted_retry_budget_raises_a_short_judge_error(
    server: FakeLLMServer, sleeps: Sleeps
) -> None:
    server.script(*[status(503)] * 4)
    with make_client(server, sleeps, max_retries=3) as client:
        with pytest.raises(JudgeError) as caught:
            client.complete(ask())
        assert client.complete(ask()).attempts == 1  # the next call is unaffected
    assert str(caught.value) == "HTTP 503: scripted failure; gave up after 4 attempts"
    assert caught.value.attempts == 4 and caught.value.purpose == "judge"
    assert sleeps.waits == [0.25, 0.5, 1.0]  # 0.5 x min(4, 0.5 * 2**n): full jitter drawn at 0.5
    counts = client.counters.snapshot()
    assert (counts["failures"], counts["completions"], counts["requests"]) == (1, 1, 5)


def test_client_errors_are_not_retried(server: FakeLLMServer, sleeps: Sleeps) -> None:
    server.script(status(404))
    with make_client(server, sleeps) as client, pytest.raises(JudgeError, match="HTTP 404"):
        client.complete(ask())
    assert len(server.requests) == 1 and sleeps.waits == []


def test_retry_after_as_an_http_date(server: FakeLLMServer, sleeps: Sleeps) -> None:
    now = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
    server.script(status(429, retry_after=format_datetime(now + timedelta(seconds=9), usegmt=True)))
    retry = RetryPolicy(random=lambda: 0.0, sleep=sleeps, wall_clock=now.timestamp)
    with make_client(server, sleeps, retry=retry) as client:
        client.complete(ask())
    assert sleeps.waits == [pytest.approx(9.0)]


def test_pushback_slows_the_limiter_and_successes_restore_it(
    server: FakeLLMServer, sleeps: Sleeps
) -> None:
    waited: list[float] = []
    limiter = SlidingWindowLimiter(6000, clock=lambda: sum(waited), sleep=waited.append)
    retry = RetryPolicy(
        random=lambda: 0.0,
        sleep=sleeps,
        adaptive=AdaptiveRate(limiter, decrease=0.5, increase=0.25),
    )
    server.script(status(429, retry_after="0"), status(503), status(500))
    with make_client(server, sleeps, retry=retry, limiter=limiter) as client:
        client.complete(ask())
        assert waited[-1] == pytest.approx(60 / 6000 / 0.25 * 1.02)  # paced 4x slower
        assert limiter.rate_factor == 0.25 + 0.25  # halved twice (a 500 is no pushback), +1 step
        client.complete(ask(1))
        client.complete(ask(2))
    assert limiter.rate_factor == 1.0
    assert client.counters.snapshot()["retries"] == 3


def test_response_format_falls_back_to_json_object_and_remembers_it(
    sleeps: Sleeps,
) -> None:
    with FakeLLMServer(reject_formats={"json_schema"}) as server:
        with make_client(server, sleeps) as client:
            first = client.complete(ask())
            second = client.complete(ask(1))
            assert client.response_format == "json_object"
        assert [r.answered for r in server.requests] == ["400 json_schema", "ok", "ok"]
        assert [r.format_type for r in server.requests] == [
            "json_schema",
            "json_object",
            "json_object",
        ]
        system = server.requests[1].body["messages"][0]
        assert system["role"] == "system" and '"checks"' in system["content"]  # schema in prompt
    assert first.response_format == second.response_format == "json_object"
    assert (first.attempts, second.attempts) == (2, 1)
    assert client.counters.snapshot()["format_fallbacks"] == 1
    assert client.counters.snapshot()["retries"] == 0
    assert sleeps.waits == []


def test_response_format_falls_back_to_plain_text_and_extracts_the_json(sleeps: Sleeps) -> None:
    with FakeLLMServer(reject_formats={"json_schema", "json_object"}) as server:
        with make_client(server, sleeps) as client:
            completion = client.complete(ask())
        assert [r.format_type for r in server.requests] == ["json_schema", "json_object", "text"]
        assert "response_format" not in server.requests[-1].body
    assert completion.raw_text.startswith("Here is my assessment.")
    assert completion.answer.summary == "sample answer text"
    assert completion.response_format == "text"
    assert client.counters.snapshot()["format_fallbacks"] == 2


def test_malformed_answers_are_retried_with_the_error_shown(
    server: FakeLLMServer, sleeps: Sleeps
) -> None:
    server.script(malformed(), invalid())
    with make_client(server, sleeps) as client:
        completion = client.complete(ask())
    assert completion.attempts == 3
    repaired = server.requests[2].body["messages"]
    assert repaired[:2] == ask().messages
    assert repaired[2] == {"role": "assistant", "content": '{"unexpected": true}'}
    assert "does not fit the schema (summary: Field required)" in repaired[3]["content"]
    counts = client.counters.snapshot()
    assert (counts["malformed"], counts["repairs"], counts["completions"]) == (2, 2, 1)
    assert counts["retries"] == 0  # a repair turn is not a transport retry
    assert sleeps.waits == []  # the server is fine: no backoff


def test_at_most_two_repair_turns_whatever_the_retry_budget(
    server: FakeLLMServer, sleeps: Sleeps
) -> None:
    server.script(malformed(), malformed("still not json"), invalid(), malformed())
    with make_client(server, sleeps, max_retries=8) as client, pytest.raises(JudgeError) as caught:
        client.complete(ask())
    assert str(caught.value) == (
        "malformed answer: answer does not fit the schema (summary: Field required); "
        "gave up after 3 answers"
    )
    assert len(server.requests) == 3  # the first answer and two repair turns, no more
    second_repair = server.requests[2].body["messages"]
    assert second_repair[2] == {"role": "assistant", "content": "still not json"}


def test_a_server_answer_that_is_no_chat_completion_is_retried_not_repaired(
    server: FakeLLMServer, sleeps: Sleeps
) -> None:
    server.script(Fault("not_chat"))
    with make_client(server, sleeps) as client:
        completion = client.complete(ask())
    counts = client.counters.snapshot()
    assert (completion.attempts, counts["retries"], counts["repairs"]) == (2, 1, 0)
    assert server.requests[1].body["messages"] == ask().messages


def test_the_api_key_never_leaks(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, sleeps: Sleeps
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    with FakeLLMServer(api_key="sk-the-right-one") as server:
        server_url = server.base_url
        client = ChatClient(
            "fake-judge", base_url=server_url, retry=RetryPolicy(max_retries=0, sleep=sleeps)
        )
        with pytest.raises(JudgeError) as caught:
            client.complete(ask())
        assert server.requests[0].authorization == f"Bearer {SECRET}"  # sent, from the env
    assert str(caught.value) == "HTTP 401: Incorrect API key provided: [redacted]"
    for text in (
        str(caught.value),
        repr(caught.value),
        repr(client),
        str(client.counters.snapshot()),
        caplog.text,
    ):
        assert SECRET not in text
    assert repr(client) == (
        f"ChatClient(model='fake-judge', base_url='{server_url}', response_format='json_schema')"
    )
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(client)
    client.close()


def test_base_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert ChatClient("m").base_url == "http://127.0.0.1:9/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert ChatClient("m").base_url == "https://api.openai.com/v1"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        content = (
            '{"summary": "ok", "checks": ['
            + ",".join(['{"check_id": "a", "status": "passed", "score": 5}'] * 2)
            + "]}"
        )
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})

    client = ChatClient(
        "m", base_url="http://judge.invalid/v1", transport=httpx.MockTransport(answer)
    )
    assert client.complete(ask()).answer.checks[1].score == 5
    assert str(seen[0].url) == "http://judge.invalid/v1/chat/completions"
    assert "authorization" not in seen[0].headers  # no key: none sent (local vLLM)


def test_the_limiter_holds_a_rate_on_the_real_server(sleeps: Sleeps) -> None:
    """600 requests/min scaled to a 1-second window (10 per window), 4 threads, ~2.4 s."""
    limiter = SlidingWindowLimiter(600, window_s=1.0, pacing_margin=0.05)
    with FakeLLMServer() as server, make_client(server, sleeps, limiter=limiter) as client:

        def judge(first: int) -> None:
            for n in range(first, first + 6):
                client.complete(ask(n))

        threads = [threading.Thread(target=judge, args=(6 * t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        arrivals = server.arrivals()
    assert len(arrivals) == 24
    assert max_in_window(arrivals, 1.0) <= 10
    assert min_in_full_windows(arrivals, 1.0) >= 9


# -- answer extraction ---------------------------------------------------------------------


def test_json_is_found_in_a_fence_or_the_first_balanced_object() -> None:
    good = sample_for_schema(Verdict.model_json_schema())
    body = '{"summary": "a } brace \\" quote", "checks": ' + str(good["checks"]).replace("'", '"')
    fenced = f"Sure.\n```json\n{body}}}\n```"
    assert parse_answer(fenced, Verdict)[0].summary == 'a } brace " quote'
    prose = f"<think>maybe {{not this}}</think> Final: {body}}} -- done"
    assert parse_answer(prose, Verdict)[0].checks[0].check_id == good["checks"][0]["check_id"]
    assert list(json_objects("no json here")) == []
    with pytest.raises(ValueError, match="no JSON object"):
        parse_answer("[1, 2]", Verdict)


class Item(BaseModel):
    check_id: str = Field(min_length=3)
    category_id: Literal["user_query", "verification"]
    score: int = Field(ge=0, le=1)
    weight: float = Field(gt=0, lt=1)
    evidence: list[str] = Field(min_length=1, max_length=3)
    note: str | None = None


class Checklist(BaseModel):
    items: list[Item] = Field(min_length=3)
    strict_mode: bool


def test_the_fake_server_answers_fit_nested_schemas() -> None:
    sample = sample_for_schema(Checklist.model_json_schema())
    checklist = Checklist.model_validate(sample)
    assert len(checklist.items) == 3
    assert checklist.items[0].category_id == "user_query" and checklist.items[0].score == 0
