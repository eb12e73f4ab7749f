"""A real, loopback-only OpenAI-compatible server for the LLM client's tests.

`FakeLLMServer` speaks `POST /v1/chat/completions` on 127.0.0.1 (a free port) from a thread.
It answers with JSON that fits the schema it was sent (`response_format.json_schema.schema`,
or, at the weaker levels, the schema it finds in the prompt), as bare JSON for structured
requests and as prose around a fenced block for plain-text ones, with `usage` counts. Faults
are scripted: each request takes the next `Fault` of the plan (then answers normally), and
the server can refuse response formats with a 400 like real servers do. With `rng`, answers
are random schema-valid JSON (`random_for_schema`: any enum value, any count between
minItems and maxItems, any number in range — the answers a real schema-following server may
give) and `fail_rate` of the unscripted requests get an HTTP 500. Every request is recorded
with its monotonic arrival time so tests can check rates.

Below the server: a judge-shaped request/answer model and a client whose retries never sleep.
"""

from __future__ import annotations

import json
import random
import threading
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from pydantic import BaseModel, Field

from transforms.llm.client import ChatClient
from transforms.llm.retry import Backoff, RetryPolicy

JSON_HEADERS = {"Content-Type": "application/json"}


def max_in_window(times: list[float], window: float) -> int:
    """The most events any half-open window [t, t + window) holds (for rate checks)."""
    ordered = sorted(times)
    return max(bisect_left(ordered, t + window) - i for i, t in enumerate(ordered))


def min_in_full_windows(times: list[float], window: float) -> int:
    """The fewest events a window [t, t + window) holds, t an event, window inside the run."""
    ordered = sorted(times)
    return min(
        bisect_left(ordered, t + window) - i
        for i, t in enumerate(ordered)
        if t + window <= ordered[-1]
    )


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour: kind is status | slow | drop | malformed | invalid |
    not_chat (a 200 whose body is not a chat completion)."""

    kind: str
    status: int = 0
    retry_after: str | None = None
    delay_s: float = 0.0
    content: str = ""


def status(code: int, retry_after: str | None = None) -> Fault:
    return Fault("status", status=code, retry_after=retry_after)


def slow(delay_s: float) -> Fault:
    """Answer normally after `delay_s` seconds."""
    return Fault("slow", delay_s=delay_s)


def drop() -> Fault:
    """Read the request, then close the connection without answering."""
    return Fault("drop")


def malformed(content: str = "I think the answer is {probably good") -> Fault:
    """A 200 whose message content is not JSON."""
    return Fault("malformed", content=content)


def invalid() -> Fault:
    """A 200 whose content is JSON that does not fit the schema."""
    return Fault("invalid", content='{"unexpected": true}')


@dataclass(frozen=True)
class Reply:
    """A status, headers, a body (None: drop the connection), a label for the record, and a
    server-side delay before answering."""

    code: int
    headers: dict[str, str]
    payload: bytes | None
    answered: str
    delay_s: float = 0.0


@dataclass(frozen=True)
class RecordedRequest:
    arrival: float
    path: str
    body: dict[str, Any]
    authorization: str | None
    answered: str

    @property
    def format_type(self) -> str:
        return str((self.body.get("response_format") or {}).get("type", "text"))


def sample_for_schema(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A value that fits `schema`: required properties, enums, bounded numbers, minItems."""
    root = schema if root is None else root
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).removeprefix("#/").split("/"):
            target = target[part]
        return sample_for_schema(target, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in schema:
            options = [o for o in schema[combinator] if o.get("type") != "null"]
            return sample_for_schema((options or schema[combinator])[0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: sample_for_schema(sub, root) for name, sub in properties.items()}
    if kind == "array":
        count = max(int(schema.get("minItems", 1)), 1)
        count = min(count, int(schema.get("maxItems", count)))
        return [sample_for_schema(schema.get("items", {}), root) for _ in range(count)]
    if kind in ("integer", "number"):
        return _sample_number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    text = "sample answer text"
    low, high = int(schema.get("minLength", 0)), int(schema.get("maxLength", 10**6))
    return (text * (low // len(text) + 1))[: max(low, min(len(text), high))]


def _sample_number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if "exclusiveMinimum" in schema and "minimum" not in schema:
        low = low + 1 if integer else low + 0.5
    if "exclusiveMaximum" in schema and "maximum" not in schema:
        high = high - 1 if integer else high - 0.5
    if low is not None and high is not None:
        middle = (low + high) / 2
        return int(middle) if integer else middle
    value = low if low is not None else high if high is not None else 0
    return int(value) if integer else float(value)


def random_for_schema(
    schema: Mapping[str, Any], rng: random.Random, root: Mapping[str, Any] | None = None
) -> Any:
    """A random value that fits `schema` (the subset strict structured output uses: $ref,
    const, enum, anyOf, objects, arrays with min/maxItems, bounded numbers, strings)."""
    root = schema if root is None else root
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).removeprefix("#/").split("/"):
            target = target[part]
        return random_for_schema(target, rng, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            return random_for_schema(rng.choice(schema[combinator]), rng, root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: random_for_schema(sub, rng, root) for name, sub in properties.items()}
    if kind == "array":
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", low + 4))
        items = schema.get("items", {})
        return [random_for_schema(items, rng, root) for _ in range(rng.randint(low, high))]
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", -3)), int(schema.get("maximum", 9)))
    if kind == "number":
        return rng.uniform(float(schema.get("minimum", -3)), float(schema.get("maximum", 9)))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    words = ("", "A1", "A1", " ", "ok", "turn 3 shows it", "x" * 30)
    return rng.choice(words)


def schema_in_prompt(messages: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The JSON schema a prompt quotes after 'schema:' (what a model reads at weaker levels)."""
    decoder = json.JSONDecoder()
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str) or "schema:" not in content:
            continue
        tail = content[content.rindex("schema:") + len("schema:") :].lstrip()
        try:
            value, _ = decoder.raw_decode(tail)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


class _QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many client threads connect at once (the default is 5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that timed out and hung up is expected here: say nothing."""


class FakeLLMServer:
    """Context manager: a chat-completions server on 127.0.0.1 with a scripted fault plan."""

    def __init__(
        self,
        plan: Iterable[Fault] = (),
        *,
        reject_formats: Collection[str] = (),
        api_key: str | None = None,
        model: str = "fake-judge",
        rng: random.Random | None = None,
        fail_rate: float = 0.0,
    ) -> None:
        self.reject_formats = set(reject_formats)
        self.rng = rng
        self.fail_rate = fail_rate
        self.api_key = api_key
        self.model = model
        self.requests: list[RecordedRequest] = []
        self._plan: deque[Fault] = deque(plan)
        self._lock = threading.Lock()
        self._httpd = _QuietHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, *faults: Fault) -> None:
        with self._lock:
            self._plan.extend(faults)

    def reset(self) -> None:
        """Forget recorded requests and the rest of the plan."""
        with self._lock:
            self.requests.clear()
            self._plan.clear()

    def arrivals(self) -> list[float]:
        with self._lock:
            return sorted(r.arrival for r in self.requests)

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self._plan.popleft() if self._plan else None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def respond(self, body: dict[str, Any], authorization: str | None) -> Reply:
        """What to answer `body`: a refusal, the next scripted fault, or a fitting answer."""
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            sent = (authorization or "").removeprefix("Bearer ")
            # Like some real servers, the error echoes the key it was given.
            return _error(401, f"Incorrect API key provided: {sent}", "401")
        requested = str((body.get("response_format") or {}).get("type", "text"))
        if requested in self.reject_formats:
            message = f"response_format type '{requested}' is not supported by this model"
            return _error(400, message, f"400 {requested}")
        fault = self._next_fault()
        if fault is None and self._random_failure():
            return _error(500, "random failure", "500")
        if fault is None:
            return self._completion(body, self._answer_content(body, requested), "ok")
        if fault.kind == "not_chat":
            return Reply(200, dict(JSON_HEADERS), b'{"object": "error"}', "not_chat")
        if fault.kind == "status":
            reply = _error(fault.status, "scripted failure", str(fault.status))
            if fault.retry_after is not None:
                reply.headers["Retry-After"] = fault.retry_after
            return reply
        if fault.kind == "drop":
            return Reply(0, {}, None, "drop")
        if fault.kind in ("malformed", "invalid"):
            return self._completion(body, fault.content, fault.kind)
        reply = self._completion(body, self._answer_content(body, requested), fault.kind)
        return Reply(reply.code, reply.headers, reply.payload, reply.answered, fault.delay_s)

    def _random_failure(self) -> bool:
        with self._lock:
            return self.rng is not None and self.rng.random() < self.fail_rate

    def _answer_content(self, body: Mapping[str, Any], requested: str) -> str:
        if requested == "json_schema":
            schema = body["response_format"]["json_schema"]["schema"]
        else:
            schema = schema_in_prompt(body.get("messages", [])) or {"type": "object"}
        if self.rng is None:
            answer = json.dumps(sample_for_schema(schema))
        else:
            with self._lock:
                answer = json.dumps(random_for_schema(schema, self.rng))
        if requested == "text":
            return f"Here is my assessment.\n```json\n{answer}\n```\nLet me know if you need more."
        return answer

    def _completion(self, body: Mapping[str, Any], content: str, answered: str) -> Reply:
        prompt_tokens = len(json.dumps(body.get("messages", []))) // 4 + 1
        payload = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(content) // 4 + 1,
                "total_tokens": prompt_tokens + len(content) // 4 + 1,
            },
        }
        return Reply(200, dict(JSON_HEADERS), json.dumps(payload).encode(), answered)


def _error(code: int, message: str, answered: str) -> Reply:
    payload = {"error": {"message": message, "type": "error", "param": None, "code": None}}
    return Reply(code, dict(JSON_HEADERS), json.dumps(payload).encode(), answered)


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = 1 << 16  # headers and body leave in one write (no delayed-ACK stalls)

        def do_POST(self) -> None:
            arrival = time.monotonic()
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(_error(404, f"no route {self.path}", "404"))
                return
            body = json.loads(raw or b"{}")
            authorization = self.headers.get("Authorization")
            reply = server.respond(body, authorization)
            server._record(RecordedRequest(arrival, self.path, body, authorization, reply.answered))
            time.sleep(reply.delay_s)
            if reply.payload is None:
                self.close_connection = True
                return
            self._send(reply)

        def _send(self, reply: Reply) -> None:
            assert reply.payload is not None
            self.send_response(reply.code)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.payload)))
            self.end_headers()
            self.wfile.write(reply.payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


# -- the client side of the tests: a judge-shaped request and a client that never sleeps ----

SECRET = "sk-test-DO-NOT-LEAK-1234567890abcdef"


class Check(BaseModel):
    check_id: str
    status: Literal["passed", "failed"]
    score: int = Field(ge=1, le=5)


class Verdict(BaseModel):
    summary: str
    checks: list[Check] = Field(min_length=2)


@dataclass(frozen=True)
class Request:
    """Shaped like scorers.llm_judges' ChatRequest."""

    messages: list[dict[str, Any]]
    schema_name: str = "verdict"
    json_schema: dict[str, Any] = field(default_factory=Verdict.model_json_schema)
    answer_model: type[Verdict] = Verdict
    max_tokens: int = 400
    purpose: str = "judge"


def ask(n: int = 0) -> Request:
    return Request(
        [
            {"role": "system", "content": "You grade agent trajectories."},
            {"role": "user", "content": f"Trajectory #{n}: the agent fixed the bug."},
        ]
    )


@dataclass
class Sleeps:
    waits: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_client(server: FakeLLMServer, sleeps: Sleeps, **kwargs: Any) -> ChatClient:
    retry = kwargs.pop("retry", None) or RetryPolicy(
        max_retries=kwargs.pop("max_retries", 8),
        backoff=Backoff(base_s=0.5, cap_s=4.0),
        random=lambda: 0.5,
        sleep=sleeps,
    )
    return ChatClient("fake-judge", base_url=server.base_url, api_key=SECRET, retry=retry, **kwargs)
