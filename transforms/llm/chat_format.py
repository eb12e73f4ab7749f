"""The wire shape of a judge call: the request a judge hands over, the chat-completions body
built from it, and the answer read back out of the model's text.

Pure functions, no I/O: `build_body` (per response-format level), `estimate_prompt_tokens`,
`parse_answer` (whole text, a fenced block or the first balanced `{...}` that validates),
`read_chat` (text, usage and finish reason of a response body).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from scorers.llm_judges.json_answers import json_objects

FORMAT_LEVELS = ("json_schema", "json_object", "text")
MAX_REASON = 200

AnswerT = TypeVar("AnswerT", bound=BaseModel)
AnswerT_co = TypeVar("AnswerT_co", bound=BaseModel, covariant=True)


class ChatRequestLike(Protocol[AnswerT_co]):
    """What a judge hands the client (scorers.llm_judges' `ChatRequest` fits)."""

    @property
    def messages(self) -> Sequence[Mapping[str, object]]: ...
    @property
    def schema_name(self) -> str: ...
    @property
    def json_schema(self) -> Mapping[str, Any]: ...
    @property
    def answer_model(self) -> type[AnswerT_co]: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def purpose(self) -> str: ...


@dataclass(frozen=True)
class Completion(Generic[AnswerT]):
    """A validated answer. Tokens are summed over attempts (for a cache hit: the original
    call's); `latency_s` is the whole `complete()` call; `attempts` counts HTTP requests."""

    answer: AnswerT
    raw_text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    attempts: int
    cached: bool = False
    response_format: str = "json_schema"


class JudgeError(Exception):
    """A request that ended without a usable answer; `reason` is short and secret-free."""

    def __init__(self, reason: str, *, attempts: int = 0, purpose: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts
        self.purpose = purpose


def estimate_prompt_tokens(request: ChatRequestLike[BaseModel]) -> int:
    """A rough prompt size (~4 characters a token, plus message overhead and the schema)."""
    chars = sum(len(str(m.get("content") or "")) for m in request.messages)
    chars += len(json.dumps(request.json_schema))
    return chars // 4 + 4 * len(request.messages) + 3


def build_body(
    model: str,
    request: ChatRequestLike[BaseModel],
    level: str = "json_schema",
    *,
    temperature: float = 0.0,
    messages: Sequence[Mapping[str, object]] | None = None,
) -> dict[str, Any]:
    """The chat-completions body for `request` at a response-format level."""
    chat = [dict(m) for m in (request.messages if messages is None else messages)]
    body: dict[str, Any] = {
        "model": model,
        "temperature": temperature,
        "max_tokens": request.max_tokens,
    }
    if level == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": request.schema_name,
                "schema": dict(request.json_schema),
                "strict": True,
            },
        }
    else:
        chat = _with_schema_hint(chat, request.json_schema)
        if level == "json_object":
            body["response_format"] = {"type": "json_object"}
    body["messages"] = chat
    return body


def _with_schema_hint(
    chat: list[dict[str, object]], schema: Mapping[str, Any]
) -> list[dict[str, object]]:
    hint = (
        "Reply with only a JSON object (no prose, no code fence) that conforms to this JSON "
        f"schema:\n{json.dumps(schema, sort_keys=True)}"
    )
    if chat and chat[0].get("role") == "system" and isinstance(chat[0].get("content"), str):
        return [{**chat[0], "content": f"{chat[0]['content']}\n\n{hint}"}, *chat[1:]]
    return [{"role": "system", "content": hint}, *chat]


def parse_answer(text: str, model: type[AnswerT]) -> tuple[AnswerT, dict[str, Any]]:
    """The first JSON object in `text` that validates as `model` (and the raw object)."""
    error: str | None = None
    for candidate in json_objects(text):
        try:
            return model.model_validate(candidate), candidate
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "answer"
            error = error or f"answer does not fit the schema ({where}: {first['msg']})"
    raise ValueError(error or "no JSON object in the answer")


def normalisations_of(answer: BaseModel) -> int:
    """How many parts of a schema-valid answer its model repaired (`normalisations()` of
    the judge answer models; 0 for a model without it)."""
    count = getattr(answer, "normalisations", None)
    return int(count()) if callable(count) else 0


def read_chat(data: Any) -> tuple[str | None, tuple[int, int], str | None]:
    """(answer text, (tokens in, tokens out), finish_reason) of a decoded response body; the
    text is None when `data` is not a chat completion."""
    if not isinstance(data, dict):
        return None, (0, 0), None
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    tokens = (_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))
    try:
        choice = data["choices"][0]
        return _content_text(choice["message"].get("content")), tokens, choice.get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None, tokens, None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _content_text(content: Any) -> str:
    """Message content as text (a string, or a list of text parts); '' when absent."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    if content is None:
        return ""
    raise TypeError("unexpected message content")


def repair_turns(raw_text: str, reason: str | None, level: str) -> list[dict[str, object]]:
    """The bad answer and a request to fix it, so a deterministic model does not repeat it."""
    turns: list[dict[str, object]] = []
    if raw_text.strip():
        turns.append({"role": "assistant", "content": raw_text[:4000]})
    ask = (
        "the JSON object"
        if level != "text"
        else "only the JSON object, without prose or code fence"
    )
    turns.append(
        {
            "role": "user",
            "content": f"That answer could not be used: {reason}. "
            f"Reply with {ask} that fits the schema.",
        }
    )
    return turns
