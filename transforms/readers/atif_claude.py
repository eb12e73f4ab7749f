"""What Harbor's Claude Code converter wrote into ATIF that the model never saw or said.

Harbor's `ClaudeCode` agent (`src/harbor/agents/installed/claude_code.py`) converts the
session JSONL into ATIF. Its `_format_tool_result` turns a `tool_result` block into the
observation text as

    "\\n\\n".join([content, chunks, "[error] tool reported failure"]).strip()

- `content`: a string content stripped; a list content with every item JSON-dumped
  (`json.dumps(item, ensure_ascii=False)`, so a text block reads `{"type": "text", ...}`);
- `chunks`: from the event's `toolUseResult` (Claude Code's UI metadata), "\\n"-joined:
  `[stdout]\\n<stdout>` and `[stderr]\\n<stderr>` (right-stripped), `[exit_code] <n>` (not
  0), `[interrupted] <v>`, `[is_image] <v>`, and `[metadata] <json of the other keys>`;
- the error marker when the block has `is_error: true`.

It keeps the block itself as `tool_result_metadata.raw_tool_result` in the result's `extra`
(ATIF v1.7) or the step's `extra` (v1.2 one-call steps). Before Harbor bundled one response
into one step (v1.2), every tool call was its own step whose message is the placeholder
`"Executed <function_name> <tool_call_id>"`, carrying the reasoning of the response again.

The rules here, for Claude Code trajectories only (agent name `claude-code`):

- a step message that is exactly that placeholder for one of the step's calls is dropped
  (`placeholders_removed`); the step's calls stay; its reasoning, when it repeats the
  reasoning of the agent step before it, is dropped too (`duplicate_reasoning_removed`);
- a tool result is the tool's own text: the appended chunks (`ui_metadata_removed`) and the
  error marker (`error_markers_removed`) are cut off — exactly the chunk text rebuilt from
  the `toolUseResult` Harbor kept, else from the first chunk header that starts a
  "\\n\\n"-separated part — and the error becomes structured data: the call id is listed in
  `_instance_metadata.errored_tool_call_ids` (as the Claude Code session reader does);
- what is left is given back as the model got it: the raw block's content when Harbor kept
  it (whitespace and all), else a complete dump of text / image blocks read back (their
  texts "\\n\\n"-joined, images left out: `images_dropped`), else the text as it stands
  (a dump the source file truncated is not guessed at).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from transforms.json_text import JSON_OBJECT, python_json

__all__ = ["ERROR_MARKER", "HarborClaudeCleanup", "is_claude_code"]

ERROR_MARKER = "[error] tool reported failure"
TEXT_JOINER = "\n\n"
# `toolUseResult` keys Harbor writes as their own chunks; every other key goes in [metadata]
_CHUNK_KEYS = frozenset({"stdout", "stderr", "exitCode", "exit_code", "interrupted", "isImage"})
# the first chunk Harbor appended: at the start, or after a blank line (two patterns: one that
# begins with a literal is searched for that literal, not tried at every position)
_CHUNK_NAMES = r"\[(?:stdout\]\n|stderr\]\n|exit_code\] |interrupted\] |is_image\] |metadata\] \{)"
_CHUNK_AT_START = re.compile(_CHUNK_NAMES)
_CHUNK_AFTER_BLANK = re.compile(r"\n\n" + _CHUNK_NAMES)
_TEXT_BLOCK_KEYS = frozenset({"type", "text", "citations", "cache_control"})
_IMAGE_BLOCK_KEYS = frozenset({"type", "source", "cache_control"})


def is_claude_code(agent_name: Any) -> bool:
    return isinstance(agent_name, str) and agent_name.strip().lower() in (
        "claude-code",
        "claudecode",
    )


def placeholder_for(message: str, calls: list[dict[str, Any]]) -> bool:
    """The message is Harbor's `"Executed <function_name> <tool_call_id>"` for a step's call."""
    return any(message == f"Executed {c['name']} {c['id']}" for c in calls if c["name"] and c["id"])


@dataclass
class HarborClaudeCleanup:
    """Cleans one trajectory's (main or one sidechain's) steps; counts what it removed."""

    counts: Counter[str] = field(default_factory=Counter)
    errored_call_ids: list[str] = field(default_factory=list)
    _last_reasoning: str = ""

    def agent_text(
        self, message: str, reasoning: str, calls: list[dict[str, Any]]
    ) -> tuple[str, str]:
        """(message, reasoning) of an agent step without the placeholder and the reasoning it
        repeats from the agent step before it."""
        if placeholder_for(message, calls):
            self.counts["placeholders_removed"] += 1
            message = ""
            if reasoning and reasoning == self._last_reasoning:
                self.counts["duplicate_reasoning_removed"] += 1
                return message, ""
        if reasoning:
            self._last_reasoning = reasoning
        return message, reasoning

    def result_text(
        self, text: str, result: Mapping[str, Any], step: Mapping[str, Any], call_id: str
    ) -> str:
        """The tool's text of one observation result (see the module docstring)."""
        metadata = _result_metadata(result, step)
        raw = metadata.get("raw_tool_result")
        raw = raw if raw is not None and isinstance(raw, JSON_OBJECT) else {}
        body, errored = self._without_appended(text, metadata.get("tool_use_result"))
        failed = errored or raw.get("is_error") is True or _flag(result, step)
        if failed and call_id and call_id not in self.errored_call_ids:
            self.errored_call_ids.append(call_id)
        return self._body(body, raw)

    def _without_appended(self, text: str, tool_use_result: Any) -> tuple[str, bool]:
        errored = False
        if text == ERROR_MARKER or text.endswith(TEXT_JOINER + ERROR_MARKER):
            text = text[: -len(ERROR_MARKER)].removesuffix(TEXT_JOINER)
            self.counts["error_markers_removed"] += 1
            errored = True
        exact = (
            chunk_text(tool_use_result)
            if tool_use_result is not None and isinstance(tool_use_result, JSON_OBJECT)
            else ""
        )
        if exact and (text == exact or text.endswith(TEXT_JOINER + exact)):
            self.counts["ui_metadata_removed"] += 1
            return text[: -len(exact)].removesuffix(TEXT_JOINER), errored
        start = _chunk_start(text)
        if start is None:
            return text, errored
        self.counts["ui_metadata_removed"] += 1
        return text[:start], errored

    def _body(self, body: str, raw: Mapping[str, Any]) -> str:
        content = raw.get("content")
        if isinstance(content, str) and content.strip() == body:
            return content
        if isinstance(content, list) and harbor_list_text(content) == body:
            blocks = [b for b in content if isinstance(b, Mapping | str)]
            if len(blocks) == len(content):
                return self._blocks_text(blocks)
        dumped = dumped_blocks(body)
        return body if dumped is None else self._blocks_text(dumped)

    def _blocks_text(self, blocks: list[Any]) -> str:
        texts = []
        for block in blocks:
            if isinstance(block, str):
                texts.append(block)
            elif block.get("type") == "image":
                self.counts["images_dropped"] += 1
            elif isinstance(block.get("text"), str):
                texts.append(block["text"])
            else:
                self.counts["non_text_blocks_dropped"] += 1
        return TEXT_JOINER.join(t for t in texts if t)


def _result_metadata(result: Mapping[str, Any], step: Mapping[str, Any]) -> Mapping[str, Any]:
    """`tool_result_metadata` Harbor kept: on the result (v1.7), else on a one-call step (v1.2)."""
    for holder in (result, step):
        extra = holder.get("extra")
        if extra is not None and isinstance(extra, JSON_OBJECT):
            for key in ("tool_result_metadata", "metadata"):
                metadata = extra.get(key)
                if metadata is not None and isinstance(metadata, JSON_OBJECT):
                    return metadata
    return {}


def _flag(result: Mapping[str, Any], step: Mapping[str, Any]) -> bool:
    """Harbor's `tool_result_is_error` (result extra in v1.7, step extra in v1.2)."""
    for holder in (result, step):
        extra = holder.get("extra")
        if extra is None or not isinstance(extra, JSON_OBJECT):
            continue
        if extra.get("tool_result_is_error") is True:
            return True
    return False


def _chunk_start(text: str) -> int | None:
    """Where the first appended chunk starts (its blank line included), or None."""
    if _CHUNK_AT_START.match(text) is not None:
        return 0
    match = _CHUNK_AFTER_BLANK.search(text)
    return None if match is None else match.start()


def chunk_text(tool_use_result: Mapping[str, Any]) -> str:
    """The chunks Harbor appended for a `toolUseResult` (its `_format_tool_result`)."""
    exit_code = tool_use_result.get("exitCode") or tool_use_result.get("exit_code")
    chunks = []
    if tool_use_result.get("stdout"):
        chunks.append(f"[stdout]\n{tool_use_result['stdout']}".rstrip())
    if tool_use_result.get("stderr"):
        chunks.append(f"[stderr]\n{tool_use_result['stderr']}".rstrip())
    if exit_code not in (None, 0):
        chunks.append(f"[exit_code] {_python_str(exit_code)}")
    if tool_use_result.get("interrupted"):
        chunks.append(f"[interrupted] {_python_str(tool_use_result['interrupted'])}")
    if tool_use_result.get("isImage"):
        chunks.append(f"[is_image] {_python_str(tool_use_result['isImage'])}")
    remaining = {k: v for k, v in tool_use_result.items() if k not in _CHUNK_KEYS}
    if remaining:
        chunks.append(f"[metadata] {python_json(remaining)}")
    return "\n".join(c for c in chunks if c)


def _python_str(value: Any) -> str:
    """`str(value)` as Python formats the JSON value (what the f-string in Harbor wrote)."""
    return value if isinstance(value, str) else str(value)


def harbor_list_text(content: list[Any]) -> str:
    """A list content as Harbor's converter wrote it: items JSON-dumped, stripped, joined."""
    parts = []
    for item in content:
        text = item if isinstance(item, str) else python_json(item)
        if text.strip():
            parts.append(text.strip())
    return TEXT_JOINER.join(parts)


def dumped_blocks(text: str) -> list[dict[str, Any]] | None:
    """The text / image blocks of a text that is nothing but their JSON dumps, "\\n\\n"-joined;
    None for any other text (a tool's own JSON output stays text)."""
    if not text.startswith('{"type": '):
        return None
    decoder = json.JSONDecoder()
    blocks: list[dict[str, Any]] = []
    position = 0
    while position < len(text):
        try:
            block, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
        if not _is_content_block(block):
            return None
        blocks.append(block)
        if end < len(text) and not text.startswith(TEXT_JOINER + '{"type": ', end):
            return None
        position = end + len(TEXT_JOINER)
    return blocks


def _is_content_block(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    if block.get("type") == "text":
        return isinstance(block.get("text"), str) and set(block) <= _TEXT_BLOCK_KEYS
    if block.get("type") == "image":
        return isinstance(block.get("source"), Mapping) and set(block) <= _IMAGE_BLOCK_KEYS
    return False
