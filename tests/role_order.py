"""The IM role-order rule of formats.md §4, as a test helper (the convert command has its own).

first non-system role `user`; last role `assistant`; after `user` only `assistant`; after
`assistant` only `tool` or `user`; after `tool` only `tool` or `assistant`; a system
message only first; every assistant message but the last carries `tool_calls` unless the
record has no tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

ALLOWED_NEXT = {
    "user": {"assistant"},
    "assistant": {"tool", "user"},
    "tool": {"tool", "assistant"},
}


def role_order_errors(record: Mapping[str, Any]) -> list[str]:
    """Every violation as `message <i>: <what>`; empty when the order is valid."""
    messages = record["messages"]
    roles = [m["role"] for m in messages]
    errors: list[str] = []
    for index, role in enumerate(roles):
        if role == "system" and index > 0:
            errors.append(f"message {index}: system message after the start")
    body = [(i, r) for i, r in enumerate(roles) if not (r == "system" and i == 0)]
    if not body:
        return ["no message besides the system message"]
    if body[0][1] != "user":
        errors.append(f"message {body[0][0]}: first non-system role is {body[0][1]}, not user")
    if body[-1][1] != "assistant":
        errors.append(f"message {body[-1][0]}: last role is {body[-1][1]}, not assistant")
    for (_, role), (index, following) in pairwise(body):
        if following not in ALLOWED_NEXT.get(role, set()):
            errors.append(f"message {index}: {following} after {role}")
    if record.get("tools"):
        last = body[-1][0]
        for index, message in enumerate(messages):
            if message["role"] == "assistant" and index != last and not message.get("tool_calls"):
                errors.append(f"message {index}: assistant without tool_calls before the end")
    return errors


def assert_valid_role_order(record: Mapping[str, Any]) -> None:
    errors = role_order_errors(record)
    assert not errors, "; ".join(errors[:5]) + (
        f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
    )
