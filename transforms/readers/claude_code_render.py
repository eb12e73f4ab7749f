"""How Harbor renders Claude Code content into ATIF text (harbor 0.26, `ClaudeCode`).

The session reader renders with the same rules so that a trial read from its native
session or from Harbor's `trajectory.json` gives the same messages (and TQS scores): a
`tool_result` becomes its text plus, from the event's `toolUseResult`, `[stdout]`,
`[stderr]`, `[exit_code] N` and `[metadata] {...}` chunks, and `[error] tool reported
failure` when `is_error`. Non-text values are JSON with Python's `json.dumps` spacing and
no ASCII escaping. One deliberate difference: images become `[image]`, not base64 JSON.
Content that is a JSON number or boolean, or a content block that is neither an object nor
text, is refused (`ReaderError` naming where), not rendered.
"""

from __future__ import annotations

import json
from typing import Any

from transforms.readers.bundle import ReaderError
from transforms.readers.source_files import json_type

_RESULT_KEYS_SHOWN = ("stdout", "stderr", "exitCode", "exit_code", "interrupted", "isImage")


def check_content(value: Any, what: str) -> Any:
    """`value` unless it is a JSON number or boolean (content is text, blocks or null)."""
    if isinstance(value, bool | int | float):
        raise ReaderError(f"{what} is a JSON {json_type(value)}, expected text or content blocks")
    return value


def tool_result_text(block: dict[str, Any], tool_use_result: Any, what: str = "tool_result") -> str:
    """A `tool_result` block as Harbor renders it into ATIF (see the module docstring)."""
    parts: list[str] = []
    content = block.get("content")
    if isinstance(content, str):
        append_stripped(parts, content)
    elif isinstance(content, list):
        for number, item in enumerate(content, 1):
            append_stripped(parts, block_text(item, f"{what} content block {number}"))
    elif content not in (None, ""):
        parts.append(stringify(check_content(content, f"{what} content")))
    if isinstance(tool_use_result, dict) and tool_use_result:
        chunks = _result_chunks(tool_use_result)
        if chunks:
            parts.append("\n".join(chunks))
    if block.get("is_error") is True:
        parts.append("[error] tool reported failure")
    return "\n\n".join(p for p in parts if p).strip()


def _result_chunks(result: dict[str, Any]) -> list[str]:
    chunks = []
    if result.get("stdout"):
        chunks.append(f"[stdout]\n{result['stdout']}".rstrip())
    if result.get("stderr"):
        chunks.append(f"[stderr]\n{result['stderr']}".rstrip())
    exit_code = result.get("exitCode") or result.get("exit_code")
    if exit_code not in (None, 0):
        chunks.append(f"[exit_code] {exit_code}")
    if result.get("interrupted"):
        chunks.append(f"[interrupted] {result['interrupted']}")
    if result.get("isImage"):
        chunks.append(f"[is_image] {result['isImage']}")
    remaining = {k: v for k, v in result.items() if k not in _RESULT_KEYS_SHOWN}
    if remaining:
        chunks.append(f"[metadata] {stringify(remaining)}")
    return [chunk for chunk in chunks if chunk]


def block_text(block: Any, what: str = "content block") -> str:
    """A content block as text; a block that is neither an object nor text is refused."""
    if not isinstance(block, str | dict):
        raise ReaderError(f"{what} is a JSON {json_type(block)}, expected an object or text")
    if isinstance(block, dict) and block.get("type") == "image":
        return "[image]"
    return stringify(block)


def stringify(value: Any) -> str:
    """Harbor's rendering of a non-text value: Python's `json.dumps` spacing, no escaping."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def append_stripped(parts: list[str], text: str) -> None:
    if text.strip():
        parts.append(text.strip())
