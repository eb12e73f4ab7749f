"""Get a validated answer out of what a model actually returns.

Servers that honour `response_format` return bare JSON; the ones that refuse it (and the
plain-text fallback) return JSON wrapped in prose, in a ```json fence, or after a
`<think>…</think>` block. `extract_json` finds the object in all of these; `parse_answer`
validates it against the answer model so a malformed answer is an `AnswerError` the client
can retry, never a silently wrong score. `strict_json_schema` turns a pydantic model into
the schema `response_format: json_schema, strict: true` demands (closed objects, every
property required).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

__all__ = ["AnswerError", "extract_json", "json_objects", "parse_answer", "strict_json_schema"]

ModelT = TypeVar("ModelT", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)
_DROPPED_KEYS = frozenset({"title", "default", "minLength", "maxLength"})
# Each `{` tried costs a scan to its closing brace; prose with many stray braces must not
# turn parsing into quadratic work, and a real answer object starts within the first few.
_MAX_BRACE_STARTS = 64


class AnswerError(ValueError):
    """A model answer that holds no JSON object or does not fit the answer schema."""


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in `text`: the whole text, a fenced block, or a balanced `{...}`.

    A leading `<think>…</think>` block is skipped first: reasoning often contains braces.
    """
    for obj in json_objects(text):
        return obj
    raise AnswerError("no JSON object found in the answer")


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object a model's answer may hold, most likely first: the whole text (after
    a leading `<think>` block), fenced code blocks, then balanced `{...}` spans."""
    text = _THINK.sub("", text, count=1).strip()
    candidates = [text, *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        obj = _loads_object(candidate)
        if obj is not None:
            yield obj
    start = text.find("{")
    for _ in range(_MAX_BRACE_STARTS):
        if start == -1:
            break
        end = _balanced_end(text, start)
        if end is not None:
            obj = _loads_object(text[start : end + 1])
            if obj is not None:
                yield obj
        start = text.find("{", start + 1)


def parse_answer(text: str, model: type[ModelT]) -> ModelT:
    """`text`'s JSON object validated as `model`; raises `AnswerError` with a short reason."""
    obj = extract_json(text)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        loc = ".".join(str(part) for part in first["loc"]) or "<answer>"
        more = f" [+{len(errors) - 1} more error(s)]" if len(errors) > 1 else ""
        raise AnswerError(f"{model.__name__} {loc}: {first['msg']}{more}") from None


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema made strict: closed objects, all properties required.

    Titles and model docstrings (`description` of an object) are dropped — they are written
    for developers and cost tokens on every call; field descriptions stay, they guide the model.
    String lengths are dropped too (strict mode rejects `minLength`); pydantic still checks them.
    """
    schema: dict[str, Any] = _strict_node(model.model_json_schema())
    return schema


def _strict_node(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict_node(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS:
            continue
        if key in ("properties", "$defs"):
            out[key] = {name: _strict_node(sub) for name, sub in value.items()}
        else:
            out[key] = _strict_node(value)
    if "properties" in out:
        out.pop("description", None)
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _balanced_end(text: str, start: int) -> int | None:
    """Index of the `}` closing the `{` at `start`, honouring JSON strings; None if unclosed."""
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i
    return None
