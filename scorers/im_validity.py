"""IM validity beyond the schema: role order (formats.md §4) and instance-aware checks.

A bundle (all records of one trial) is valid only if every record is: a trainer must never
see a subagent record whose main record was dropped, or the reverse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from scorers.im import InvalidRecord, validate_im_record

_ALLOWED_NEXT = {
    "user": frozenset({"assistant"}),
    "assistant": frozenset({"tool", "user"}),
    "tool": frozenset({"tool", "assistant"}),
}


def role_order_problem(record: Mapping[str, Any]) -> str | None:
    """Why the record's message roles are not in a trainable order, or None if they are."""
    messages = record.get("messages") or []
    roles = [m.get("role") for m in messages if m.get("role") != "system"]
    if not roles:
        return "no messages besides the system prompt"
    if roles[0] != "user":
        return f"first non-system message is {roles[0]!r}, expected 'user'"
    if roles[-1] != "assistant":
        return f"last message is {roles[-1]!r}, expected 'assistant'"
    for index, (current, following) in enumerate(pairwise(roles)):
        if following not in _ALLOWED_NEXT.get(current or "", frozenset()):
            return f"message {index + 2} ({following!r}) may not follow {current!r}"
    if _calls_tools(record):
        assistants = [m for m in messages if m.get("role") == "assistant"]
        for position, message in enumerate(assistants[:-1], start=1):
            if not message.get("tool_calls"):
                return f"assistant message {position} of {len(assistants)} has no tool_calls"
    return None


def _calls_tools(record: Mapping[str, Any]) -> bool:
    """Tool-calling scaffolds declare named tools; Terminus-2 records declare none."""
    tools = record.get("tools") or []
    return any(isinstance(t, Mapping) and (t.get("function") or {}).get("name") for t in tools)


def record_problem(record: object) -> str | None:
    """Schema and role-order problems of one record, as a one-line reason."""
    try:
        valid = validate_im_record(record)
    except InvalidRecord as exc:
        return f"invalid IM record: {exc}"
    problem = role_order_problem(valid)
    return f"invalid role order: {problem}" if problem else None


def bundle_problem(records: Sequence[object]) -> str | None:
    """The first problem of any record of a bundle (which then is dropped whole)."""
    if not records:
        return "no records"
    for index, record in enumerate(records):
        problem = record_problem(record)
        if problem:
            return f"record {index + 1} of {len(records)}: {problem}"
    return None
