"""Which reader a path needs, decided by content (the file name only breaks ties).

Only the head of a file is read (64 KiB), so detection stays cheap on huge inputs. An input
trajcurate does not read gets a one-line `ReaderError` naming what it looks like and the
supported formats. The head is read through `confined.TrialFiles`: a FIFO, a device or a
socket is refused without being opened (nothing blocks); a UTF-8 BOM is skipped and UTF-16
text decoded before sniffing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from transforms.readers.atif_schema import schema_problems
from transforms.readers.bundle import ReaderError
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles, utf8_head
from transforms.readers.harbor_layout import HEAD_BYTES, looks_like_harbor
from transforms.readers.openhands import is_events_folder
from transforms.readers.registry import FORMATS

__all__ = ["HEAD_BYTES", "detect_format", "looks_like_harbor", "supported", "unsupported"]
_CLAUDE_CODE_EVENTS = frozenset(
    "user assistant system summary queue-operation attachment last-prompt "
    "file-history-snapshot".split()
)
# Claude Code's message events carry sessionId / uuid / parentUuid; its bookkeeping lines
# (summary: leafUuid; file-history-snapshot: messageId + snapshot) carry these instead.
_CLAUDE_CODE_KEYS = frozenset({"sessionId", "uuid", "parentUuid", "leafUuid", "messageId"})
_OPENHANDS_EVENT = frozenset({"id", "source"})
_HEAD_LINES = 50
_OPENCODE_EVENTS = frozenset("user step_start text reasoning tool_use step_finish error".split())
_ATIF = re.compile(rb'"schema_version"\s*:\s*"ATIF-')
# Formats known by sight that trajcurate does not read: (pattern on the head, description).
_KNOWN_UNSUPPORTED = (
    (re.compile(rb'"projectHash"|"type"\s*:\s*"gemini"'), "a Gemini CLI session"),
    (re.compile(rb'"transcript_groups"|"transcripts"\s*:'), "a Docent agent_run export"),
)


def supported() -> str:
    return ", ".join(FORMATS)


def unsupported(path: Path, looks_like: str) -> ReaderError:
    return ReaderError(f"unsupported input: {looks_like}; supported formats: {supported()}")


def detect_format(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> str:
    """The registry name of the reader for `path`, or `ReaderError` saying why none fits."""
    if path.is_dir():
        if looks_like_harbor(path, limits):
            return "harbor"
        if is_events_folder(path):
            return "openhands"
        raise unsupported(path, "a folder that is not a Harbor job, jobs folder or trial")
    head = _read_head(path, limits)
    text = head.lstrip()
    if not text:
        raise unsupported(path, "an empty file")
    if text[:1] == b"[":
        return _detect_array(path, head)
    if text[:1] != b"{":
        raise unsupported(path, "neither JSON nor JSON Lines")
    for line in _head_objects(text):
        by_keys = _detect_object(line, path)
        if by_keys:
            return by_keys
    return _detect_document(path, head)


def _read_head(path: Path, limits: ReadLimits) -> bytes:
    """The first bytes of the input (trusted as given, but a regular file), as UTF-8."""
    head = utf8_head(TrialFiles.for_input(path, limits).head(path, HEAD_BYTES))
    if b"\x00" in head:
        raise unsupported(path, "a binary file")
    return head


def _head_objects(text: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects of the head's first lines, until one is not an object.

    A JSON Lines log can open with bookkeeping that names no format on its own (a Claude
    Code `summary` or `file-history-snapshot` line): the lines after it decide.
    """
    for line in text.split(b"\n")[:_HEAD_LINES]:
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if not isinstance(value, dict):
            return
        yield value


def _detect_object(obj: dict[str, Any], path: Path) -> str | None:
    keys = obj.keys()
    if {"version", "meta_info", "messages"} <= keys:
        return "im"
    if isinstance(obj.get("schema_version"), str) and obj["schema_version"].startswith("ATIF"):
        return "atif"
    if keys >= _OPENHANDS_EVENT and keys & {"action", "observation"}:
        raise unsupported(path, "an OpenHands event, give the events folder or the trial")
    kind = obj.get("type")
    if kind in _CLAUDE_CODE_EVENTS and keys & _CLAUDE_CODE_KEYS:
        return "claude-code"
    if kind in _OPENCODE_EVENTS and keys & {"sessionID", "part"}:
        return "opencode"
    if "trajectory" in keys and keys & {"history", "info", "environment"}:
        return "swe-agent"
    if "messages" in keys and "info" in keys:
        return "mini-swe-agent"
    return None


def _detect_document(path: Path, head: bytes) -> str:
    if _ATIF.search(head):
        return "atif"
    for pattern, description in _KNOWN_UNSUPPORTED:
        if pattern.search(head):
            raise unsupported(path, description)
    if re.search(rb'"trajectory"\s*:\s*\[', head) and re.search(rb'"(history|info)"\s*:', head):
        return "swe-agent"
    if re.search(rb'"messages"\s*:\s*\[', head) and (
        re.search(rb'"info"\s*:', head) or path.name.endswith(".traj.json")
    ):
        return "mini-swe-agent"
    if path.suffix == ".traj":
        return "swe-agent"
    near = _near_atif(head)
    if near:
        raise unsupported(path, near)
    raise unsupported(path, "a JSON document of unknown shape")


def _near_atif(head: bytes) -> str | None:
    """What keeps a trajectory with a `steps` array from being ATIF, when it has one.

    The whole document is checked when it fits in the head; a longer one is named by its
    missing ATIF `schema_version`. `--format atif` reads such a file anyway, with warnings.
    """
    if not re.search(rb'"steps"\s*:\s*\[', head):
        return None
    try:
        doc = orjson.loads(head)
    except orjson.JSONDecodeError:
        doc = None
    problems = schema_problems(doc, limit=1) if isinstance(doc, dict) else []
    why = problems[0] if problems else "no ATIF `schema_version`"
    return f"an ATIF-like trajectory, but {why} (read it anyway with --format atif)"


def _detect_array(path: Path, head: bytes) -> str:
    if re.search(rb'"action"\s*:', head) and re.search(rb'"source"\s*:', head):
        return "openhands"
    if re.search(rb'"role"\s*:', head) and re.search(rb'"content"\s*:', head):
        return "mini-swe-agent"
    raise unsupported(path, "a JSON array of unknown items")
