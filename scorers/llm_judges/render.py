"""Render an IM record (formats.md §4) as the text a judge reads.

Judges cite evidence by `assistant_turn_index` (0-based, counting assistant messages only),
so every assistant message is labelled with it; tool calls show their names and arguments
because *what* the agent ran is most of the evidence; every long piece is cut in the middle
with a visible marker (truncation.py) so one huge log cannot crowd out the rest. The output
is deterministic: same record, same text. What it renders is untrusted data; `record_blocks`
hands it over as `DataBlock`s for `isolation.fence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scorers.llm_judges.isolation import DataBlock
from scorers.llm_judges.truncation import (
    ASSISTANT_CONTENT_LIMIT,
    QUESTION_LIMIT,
    REASONING_LIMIT,
    SYSTEM_PROMPT_LIMIT,
    TOOL_ARGUMENTS_LIMIT,
    TOOL_RESULT_LIMIT,
    TOOL_SUMMARY_LIMIT,
    truncate_middle,
)

__all__ = [
    "TOOL_DESCRIPTION_CHARS",
    "record_blocks",
    "render_messages",
    "system_prompt_of",
    "tool_line",
    "tool_summary",
]

TOOL_DESCRIPTION_CHARS = 200
_NO_TOOLS = "(no tools)"


def tool_line(tool: Mapping[str, Any]) -> str:
    """`- name: description[:200] (params: a, b)` for one OpenAI-style tool.

    The description is folded onto one line first: real tool descriptions run to pages of
    Markdown, and the judge needs what the tool is for, not its manual.
    """
    function = tool.get("function")
    spec = function if isinstance(function, Mapping) else tool
    name = str(spec.get("name") or "?")
    description = " ".join(str(spec.get("description") or "").split())
    parameters = spec.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    params = ", ".join(properties) if isinstance(properties, Mapping) and properties else "none"
    return f"- {name}: {description[:TOOL_DESCRIPTION_CHARS]} (params: {params})"


def tool_summary(tools: Sequence[Mapping[str, Any]] | None, limit: int = TOOL_SUMMARY_LIMIT) -> str:
    """One `tool_line` per tool, cut to `limit` characters; `(no tools)` for none."""
    if not tools:
        return _NO_TOOLS
    return truncate_middle("\n".join(tool_line(tool) for tool in tools), limit)


def system_prompt_of(record: Mapping[str, Any]) -> str:
    """The record's system prompt (its first system message), uncut; "" when there is none."""
    for message in record.get("messages") or ():
        if message.get("role") == "system":
            return str(message.get("content") or "")
    return ""


def render_messages(messages: Sequence[Mapping[str, Any]]) -> str:
    """Every message under a header naming its role, assistants with `assistant_turn_index`.

    Limits: system 8,000 characters, the first user message (the task) 12,000, assistant
    content and reasoning 50,000 each, tool results and tool-call arguments 5,000. Later user
    messages get the tool-result limit: in Terminus-2 records they are observations.
    """
    blocks: list[str] = []
    turn = 0
    seen_user = False
    for message in messages:
        role = str(message.get("role") or "?")
        content = str(message.get("content") or "")
        if role == "assistant":
            blocks.append(_render_assistant(message, turn))
            turn += 1
        elif role == "tool":
            blocks.append(_render_tool(message))
        elif role == "user":
            limit = TOOL_RESULT_LIMIT if seen_user else QUESTION_LIMIT
            seen_user = True
            blocks.append(f"--- user ---\n{_body(content, limit)}")
        elif role == "system":
            blocks.append(f"--- system ---\n{_body(content, SYSTEM_PROMPT_LIMIT)}")
        else:
            blocks.append(f"--- {role} ---\n{_body(content, TOOL_RESULT_LIMIT)}")
    return "\n\n".join(blocks)


def record_blocks(record: Mapping[str, Any]) -> list[DataBlock]:
    """The tools summary and the rendered messages, as the two data blocks a judge reads.

    Both come from the record, so both are untrusted: `isolation.fence` puts each between
    tag lines the judge's instructions name.
    """
    return [
        DataBlock(
            "agent-tools", "the tools available to the agent", tool_summary(record.get("tools"))
        ),
        DataBlock(
            "trajectory", "the agent's trajectory", render_messages(record.get("messages") or ())
        ),
    ]


def _render_assistant(message: Mapping[str, Any], turn: int) -> str:
    parts = [f"--- assistant (assistant_turn_index={turn}) ---"]
    reasoning = str(message.get("reasoning_content") or "")
    if reasoning.strip():
        parts.append(f"[reasoning]\n{truncate_middle(reasoning, REASONING_LIMIT)}\n[/reasoning]")
    content = str(message.get("content") or "")
    if content.strip() or not message.get("tool_calls"):
        parts.append(_body(content, ASSISTANT_CONTENT_LIMIT))
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        function = function if isinstance(function, Mapping) else {}
        name = str(function.get("name") or "?")
        arguments = truncate_middle(str(function.get("arguments") or ""), TOOL_ARGUMENTS_LIMIT)
        call_id = call.get("id") if isinstance(call, Mapping) else None
        parts.append(f"[tool call {name} id={call_id or '?'}] {arguments}")
    return "\n".join(parts)


def _render_tool(message: Mapping[str, Any]) -> str:
    name = message.get("name")
    call_id = message.get("tool_call_id")
    label = ", ".join(
        part for part in (str(name) if name else "", f"id={call_id}" if call_id else "") if part
    )
    header = f"--- tool result ({label}) ---" if label else "--- tool result ---"
    return f"{header}\n{_body(str(message.get('content') or ''), TOOL_RESULT_LIMIT)}"


def _body(content: str, limit: int) -> str:
    return truncate_middle(content, limit) if content else "(empty)"
