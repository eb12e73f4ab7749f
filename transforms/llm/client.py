"""An OpenAI-compatible chat-completions client for the LLM judges: one method, `complete`.

The judges (scorers/llm_judges) build a request — messages, the answer's JSON schema and its
pydantic model — and get back a validated answer or a `JudgeError`. Everything between is
here: rate limiting, retries with backoff, the response cache, structured-output negotiation
and counting.

Structured output: the client asks for `response_format: json_schema` (strict); when the
server refuses it (a 400/422 whose body names response_format/json_schema/json_object) it
falls back to `json_object`, then to plain text, adding the schema to the system prompt, and
keeps the level that worked for its later requests. Every answer is parsed (whole text, a
fenced block, or the first balanced `{...}`) and validated with the answer model, which
accepts every answer that fits the schema it sent (normalising what JSON Schema cannot say,
counted as `normalised`). A malformed answer is not sent again as it was — a model at
temperature 0 would repeat it — but answered with a repair turn (the bad answer and what is
wrong with it), at most `max_repairs` (2) times; 429/5xx/timeouts/dropped connections are
retried with backoff within `retry.max_retries`, a separate budget.

Cache: every exchange whose answer parses (conversation so far -> raw answer) is stored,
under the body the judge asked for; a malformed answer never is, so a re-run asks again
rather than replaying an answer that could not be used (a repaired answer is stored under the
conversation that holds the bad one: a model that repeats itself is answered from the cache
after its repair turn). The raw text is parsed again on replay, so a newer parser may accept
what an older one refused.

The API key comes from `OPENAI_API_KEY` (or `api_key=`). It is sent only as the
Authorization header: never logged, never in an exception, a repr, a counter or an output,
and the client refuses to be pickled (build it in `DoFn.setup`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx
from pydantic import BaseModel

from transforms.llm.cache import ResponseCache, cache_key
from transforms.llm.chat_format import (
    FORMAT_LEVELS,
    MAX_REASON,
    AnswerT,
    ChatRequestLike,
    Completion,
    JudgeError,
    build_body,
    estimate_prompt_tokens,
    normalisations_of,
    parse_answer,
    read_chat,
    repair_turns,
)
from transforms.llm.counters import LLMCounters
from transforms.llm.rate_limit import Limiter
from transforms.llm.retry import PUSHBACK_STATUSES, RetryPolicy, is_retryable_exception
from transforms.llm.retry import is_retryable_status as _retryable_status

__all__ = ["ChatClient", "ChatRequestLike", "Completion", "JudgeError"]

_LOG = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_FORMAT_WORDS = ("response_format", "json_schema", "json_object")


@dataclass
class _Attempts:
    """Book-keeping of one `complete()` call: the conversation so far (repair turns
    included), HTTP requests and transport retries, repair turns, tokens spent."""

    messages: list[Mapping[str, object]]
    requests: int = 0
    retries: int = 0
    repairs: int = 0
    answers: int = 0
    tokens_in: int = 0
    tokens_out: int = 0


@dataclass(frozen=True)
class _Exchange:
    """One answer to one conversation: from the server, or replayed from the cache."""

    raw_text: str
    finish_reason: str | None
    level: str
    tokens: tuple[int, int]
    cached: bool = False


class ChatClient:
    """Chat completions with structured answers, limits, retries, a cache and counters."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        temperature: float = 0.0,
        response_format: str = "json_schema",
        limiter: Limiter | None = None,
        retry: RetryPolicy | None = None,
        cache: ResponseCache | None = None,
        counters: LLMCounters | None = None,
        max_repairs: int = 2,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if response_format not in FORMAT_LEVELS:
            raise ValueError(f"response_format must be one of {FORMAT_LEVELS}")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        self.temperature = temperature
        self.limiter = limiter
        self.retry = retry or RetryPolicy()
        self.cache = cache
        self.counters = counters if counters is not None else LLMCounters()
        if max_repairs < 0:
            raise ValueError("max_repairs must be >= 0")
        self.max_repairs = max_repairs
        self._clock = clock
        self._level = response_format
        self._level_lock = threading.Lock()
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._redact = _redactor(key)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            transport=transport,
        )

    @property
    def response_format(self) -> str:
        """The structured-output level this client currently uses."""
        return self._level

    def request_body(
        self, request: ChatRequestLike[BaseModel], level: str = "json_schema"
    ) -> dict[str, Any]:
        return build_body(self.model, request, level, temperature=self.temperature)

    def complete(self, request: ChatRequestLike[AnswerT]) -> Completion[AnswerT]:
        """A validated answer to `request`, from the cache or the server; else `JudgeError`."""
        started = self._clock()
        state = _Attempts(messages=list(request.messages))
        try:
            completion = self._answer(request, state, started)
        except JudgeError:
            self.counters.add("failures")
            raise
        self.counters.add("completions")
        return completion

    def _answer(
        self, request: ChatRequestLike[AnswerT], state: _Attempts, started: float
    ) -> Completion[AnswerT]:
        """Exchanges until one answer parses: a malformed answer gets a repair turn (the bad
        answer and what is wrong with it), at most `max_repairs` times."""
        while True:
            exchange, unstored_key = self._exchange(request, state)
            try:
                answer, _parsed = parse_answer(exchange.raw_text, request.answer_model)
            except ValueError as exc:
                self._repair_or_fail(str(exc), exchange, state, request)
                continue
            if unstored_key is not None:
                self._store(unstored_key, request, exchange)
            self.counters.add("normalised", normalisations_of(answer))
            if state.requests == 0:
                self.counters.add("cache_hits")
            return Completion(
                answer,
                exchange.raw_text,
                state.tokens_in,
                state.tokens_out,
                self._clock() - started,
                state.requests,
                cached=state.requests == 0,
                response_format=exchange.level,
            )

    def _exchange(
        self, request: ChatRequestLike[BaseModel], state: _Attempts
    ) -> tuple[_Exchange, str | None]:
        """The answer to the conversation in `state`, replayed from the cache (no request,
        no token spent) or sent; with the cache key to store a sent answer under once it
        parses (None: nothing to store). A malformed answer is never cached: a re-run asks
        again instead of replaying an answer that could not be used."""
        key = None
        if self.cache is not None:
            key = self.exchange_key(request, state.messages)
            cached = self._from_cache(key)
            if cached is not None:
                self._add_tokens(state, cached.tokens)
                state.answers += 1
                return cached, None
        exchange = self._send(request, state)
        state.answers += 1
        return exchange, key

    def exchange_key(
        self, request: ChatRequestLike[BaseModel], messages: list[Mapping[str, object]]
    ) -> str:
        """The cache key of one exchange: the body the judge asked for (structured output,
        whatever level this client negotiated) with the conversation so far; for the first
        exchange, `cache_key(model, request_body(request))`."""
        body = build_body(
            self.model, request, "json_schema", temperature=self.temperature, messages=messages
        )
        return cache_key(self.model, body)

    def _from_cache(self, key: str) -> _Exchange | None:
        assert self.cache is not None
        found = self.cache.lookup(key)
        if found.entry is not None:
            entry = found.entry
            return _Exchange(
                entry["raw_text"],
                entry.get("finish_reason"),
                str(entry.get("response_format", "json_schema")),
                (int(entry.get("tokens_in", 0)), int(entry.get("tokens_out", 0))),
                cached=True,
            )
        if found.corrupt is not None:
            self.counters.add("cache_corrupt")
        self.counters.add("cache_misses")
        return None

    def _repair_or_fail(
        self,
        error: str,
        exchange: _Exchange,
        state: _Attempts,
        request: ChatRequestLike[BaseModel],
    ) -> None:
        reason = error[:MAX_REASON]
        if exchange.finish_reason == "length":
            reason = f"answer cut at max_tokens ({reason})"
        self.counters.add("malformed")
        if state.repairs >= self.max_repairs:
            self._fail(
                f"malformed answer: {reason}; gave up after {state.answers} answers",
                state,
                request,
            )
        state.repairs += 1
        self.counters.add("repairs")
        state.messages = [
            *request.messages,
            *repair_turns(exchange.raw_text, reason, exchange.level),
        ]

    def _send(self, request: ChatRequestLike[BaseModel], state: _Attempts) -> _Exchange:
        """POST the conversation until the server answers with a chat completion; 429, 5xx,
        timeouts and dropped connections are retried within `retry.max_retries`."""
        budget = estimate_prompt_tokens(request) + request.max_tokens
        while True:
            level = self._level
            body = build_body(
                self.model, request, level, temperature=self.temperature, messages=state.messages
            )
            if self.limiter is not None:
                self.limiter.acquire(budget)
            state.requests += 1
            self.counters.add("requests")
            sent = self._clock()
            try:
                response = self._http.post("/chat/completions", json=body)
            except httpx.HTTPError as exc:
                self._after_transport_error(exc, state, request)
                continue
            if response.is_success:
                self.retry.note_success()
                raw_text, usage, finish_reason = read_chat(_json_or_none(response))
                self._add_tokens(state, usage)
                self.counters.add("tokens_in", usage[0])
                self.counters.add("tokens_out", usage[1])
                if raw_text is not None:
                    self.counters.record_latency(self._clock() - sent)
                    return _Exchange(raw_text, finish_reason, level, usage)
                self.counters.add("server_errors")
                self._backoff_or_fail("the response is not a chat completion", None, state, request)
            elif not self._downgraded(response, level):
                self._after_http_error(response, state, request)

    @staticmethod
    def _add_tokens(state: _Attempts, tokens: tuple[int, int]) -> None:
        state.tokens_in += tokens[0]
        state.tokens_out += tokens[1]

    def _after_transport_error(
        self, exc: httpx.HTTPError, state: _Attempts, request: ChatRequestLike[BaseModel]
    ) -> None:
        kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "connection failed"
        reason = f"{kind} ({type(exc).__name__})"
        self.counters.add("transport_errors")
        if not is_retryable_exception(exc):
            self._fail(reason, state, request, exc)
        self._backoff_or_fail(reason, None, state, request, exc)

    def _after_http_error(
        self, response: httpx.Response, state: _Attempts, request: ChatRequestLike[BaseModel]
    ) -> None:
        status = response.status_code
        reason = f"HTTP {status}{_error_message(response, self._redact)}"
        if not _retryable_status(status):
            self._fail(reason, state, request)
        if status == 429:
            self.counters.add("rate_limited")
        elif status >= 500:
            self.counters.add("server_errors")
        if status in PUSHBACK_STATUSES:
            self.retry.note_pushback()
        self._backoff_or_fail(reason, response.headers.get("retry-after"), state, request)

    def _backoff_or_fail(
        self,
        reason: str,
        retry_after: str | None,
        state: _Attempts,
        request: ChatRequestLike[BaseModel],
        cause: BaseException | None = None,
    ) -> None:
        if state.retries >= self.retry.max_retries:
            self._fail(f"{reason}; gave up after {state.requests} attempts", state, request, cause)
        delay = self.retry.delay_s(state.retries, retry_after)
        if delay is None:
            self._fail(f"{reason}; Retry-After {retry_after} is too long", state, request, cause)
        _LOG.info(
            "LLM %s: %s, retry %d in %.2fs", request.purpose, reason, state.retries + 1, delay
        )
        state.retries += 1
        self.counters.add("retries")
        self.retry.sleep(delay)

    def _downgraded(self, response: httpx.Response, level: str) -> bool:
        """Step down one response-format level when the server refused this one."""
        if response.status_code not in (400, 422) or level == "text":
            return False
        if not any(word in response.text.lower() for word in _FORMAT_WORDS):
            return False
        with self._level_lock:
            if self._level == level:
                self._level = FORMAT_LEVELS[FORMAT_LEVELS.index(level) + 1]
                _LOG.warning("LLM server refused response_format %s: using %s", level, self._level)
        self.counters.add("format_fallbacks")
        return True

    def _store(self, key: str, request: ChatRequestLike[BaseModel], exchange: _Exchange) -> None:
        assert self.cache is not None
        entry = {
            "model": self.model,
            "purpose": request.purpose,
            "raw_text": exchange.raw_text,
            "finish_reason": exchange.finish_reason,
            "tokens_in": exchange.tokens[0],
            "tokens_out": exchange.tokens[1],
            "response_format": exchange.level,
        }
        self.cache.put(key, entry)

    def _fail(
        self,
        reason: str,
        state: _Attempts,
        request: ChatRequestLike[BaseModel],
        cause: BaseException | None = None,
    ) -> NoReturn:
        raise JudgeError(
            self._redact(reason), attempts=state.requests, purpose=request.purpose
        ) from cause

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "ChatClient holds a connection and a secret and is not pickled: "
            "build it in DoFn.setup()"
        )

    def __repr__(self) -> str:
        url = httpx.URL(self.base_url).copy_with(username=None, password=None, query=None)
        return (
            f"ChatClient(model={self.model!r}, base_url={str(url)!r}, "
            f"response_format={self._level!r})"
        )


def _redactor(secret: str | None) -> Callable[[str], str]:
    def redact(text: str) -> str:
        return text.replace(secret, "[redacted]") if secret else text

    return redact


def _error_message(response: httpx.Response, redact: Callable[[str], str]) -> str:
    """': <the server's error message>' cut short, or '' when there is none."""
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    if not isinstance(message, str) or not message.strip():
        return ""
    return f": {redact(message.strip())[:MAX_REASON]}"


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
