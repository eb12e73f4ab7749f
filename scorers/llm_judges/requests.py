"""The contract between the pure judge prompts and the HTTP client that sends them.

Scorers build a `ChatRequest`; the client (transforms/llm) sends it to an OpenAI-compatible
chat-completions endpoint at temperature 0, asks for `response_format()` first, and parses
the text it gets back with `parse()`. Keeping the request a plain frozen value means the
client can hash it for its response cache and the dry run can size it without a network.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import orjson
from pydantic import BaseModel

from scorers.llm_judges.json_answers import parse_answer, strict_json_schema

__all__ = ["AnswerT", "ChatRequest", "Purpose", "estimate_tokens", "system_user_request"]

AnswerT = TypeVar("AnswerT", bound=BaseModel)
Purpose = Literal["fixed_checklist", "generate_checklist", "judge_checklist"]


@dataclass(frozen=True)
class ChatRequest(Generic[AnswerT]):
    """One chat-completions call and the answer schema it expects.

    `messages` are chat messages (`{"role", "content"}`) ready to send; `json_schema` is the
    strict schema of the answer, derived from `answer_model`, which validates it; `purpose`
    names the judge step, for counters and the dry-run report.
    """

    model: str
    messages: list[dict[str, str]]
    schema_name: str
    json_schema: dict[str, Any]
    answer_model: type[AnswerT]
    max_tokens: int
    purpose: Purpose

    def response_format(self) -> dict[str, Any]:
        """The structured-output `response_format` to try first (the spec's preferred mode)."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.schema_name, "schema": self.json_schema, "strict": True},
        }

    def parse(self, text: str) -> AnswerT:
        """The validated answer in `text` (bare JSON, fenced or in prose); raises `AnswerError`."""
        return parse_answer(text, self.answer_model)


@functools.lru_cache(maxsize=16)
def _schema(answer_model: type[BaseModel]) -> dict[str, Any]:
    """The strict schema of an answer model, derived once per model (not per record)."""
    return strict_json_schema(answer_model)


def system_user_request(
    model: str,
    system: str,
    user: str,
    answer_model: type[AnswerT],
    *,
    schema_name: str,
    max_tokens: int,
    purpose: Purpose,
) -> ChatRequest[AnswerT]:
    """A request of one system and one user message answered by `answer_model`'s JSON."""
    return ChatRequest(
        model=model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        schema_name=schema_name,
        json_schema=_schema(answer_model),
        answer_model=answer_model,
        max_tokens=max_tokens,
        purpose=purpose,
    )


def estimate_tokens(request: ChatRequest[Any]) -> int:
    """Input tokens of `request`, estimated as characters / 4 (rounded up), for dry runs.

    Counts the message texts and the answer schema (it is sent too, in `response_format`);
    the answer itself is bounded by `request.max_tokens`. A rough figure on purpose: a
    tokenizer per model is not worth a dependency for a cost estimate.
    """
    chars = sum(len(m.get("content", "")) for m in request.messages)
    chars += len(orjson.dumps(request.json_schema))
    return -(-chars // 4)
