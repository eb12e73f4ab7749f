"""What every reader's output must satisfy: a structurally valid IM record in a valid order."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from scorers.im import validate_im_record

_ALLOWED_AFTER = {
    "user": {"assistant"},
    "assistant": {"tool", "user"},
    "tool": {"tool", "assistant"},
}


def role_order_problem(record: Mapping[str, Any]) -> str | None:
    """The first IM order rule (formats.md §4) the record breaks, or None."""
    messages = record["messages"]
    roles = [m["role"] for m in messages]
    body = roles[1:] if roles and roles[0] == "system" else roles
    if "system" in body:
        return "system message after the start"
    if not body or body[0] != "user":
        return f"first non-system role is {body[0] if body else None!r}, not 'user'"
    if body[-1] != "assistant":
        return f"last role is {body[-1]!r}, not 'assistant'"
    for before, after in pairwise(body):
        if after not in _ALLOWED_AFTER[before]:
            return f"{after!r} after {before!r}"
    if record["tools"]:
        assistants = [m for m in messages if m["role"] == "assistant"]
        for position, message in enumerate(assistants[:-1]):
            if not message.get("tool_calls"):
                return f"assistant message {position} has no tool_calls"
    return None


def assert_valid_records(records: list[dict[str, Any]]) -> None:
    """Every record validates, has a valid role order, and the main record comes first."""
    assert records, "no records"
    assert records[0]["meta_info"]["unique_info"]["_agent_type"] == "main"
    instance_ids = {r["meta_info"]["unique_info"]["_instance_id"] for r in records}
    assert len(instance_ids) == 1
    for record in records:
        validate_im_record(record)
        problem = role_order_problem(record)
        assert problem is None, f"{record['meta_info']['unique_info']['_agent_type']}: {problem}"
