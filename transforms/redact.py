"""Secrets never reach training data: redaction of IM records (no Beam).

Every well-known secret shape in a record's text is replaced by a typed placeholder
`[REDACTED:<kind>]` (the kinds are `KINDS`), with a count per kind:

- `redact_text(text)`: one string;
- `redact_record(record)`: in place over one IM record: every message's `content` and
  `reasoning_content`, every tool call's `function.arguments` (a JSON string: parsed, its
  strings redacted, and written back compactly with orjson only when something was found,
  so it stays valid JSON and is byte-identical otherwise), `tools[].function.description`
  and every string inside `meta_info.unique_info` (nested, to `MAX_DEPTH`). Tool names,
  parameter schemas and the other `meta_info` fields are left alone;
- `redact_bundle(bundle, mode)`: every record of a bundle in "mask" and "drop" mode (the
  caller rejects the bundle in "drop" mode when the count is not empty), nothing in "off";
- `mask_url_credentials(url)`, `mask_secrets_in_text(text)`: for option values and messages
  written to manifests and logs.

Inside JSON (tool-call arguments, `unique_info`) a string under a secret's key
(`{"password": "..."}`, `{"env": {"GITHUB_TOKEN": "..."}}`) is judged as a value assigned
to that name.

Speed: the texts of a record are joined and scanned once by the prefilter
(`transforms/redaction/patterns.py`: a few literal searches, no detector), so a record
without any trigger is returned untouched right there; only the strings of a record that
matched go one by one through the detectors. Long texts found clean (system prompts, tool
descriptions, repeated file contents) are remembered and not scanned again.
`benchmarks/bench_redact.py` measures it against scoring.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import orjson

from transforms.redaction.patterns import PREFILTER, search_any
from transforms.redaction.rules import NONE, high_entropy, literal_secret, name_tier
from transforms.redaction.text import placeholder, redact_matched, redact_text

__all__ = [
    "KINDS",
    "MAX_DEPTH",
    "REDACT_MODES",
    "clear_cache",
    "mask_secrets_in_text",
    "mask_url_credentials",
    "redact_bundle",
    "redact_record",
    "redact_text",
]

REDACT_MODES = ("off", "mask", "drop")
KINDS = (
    "openai_api_key",
    "anthropic_api_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "slack_webhook",
    "google_api_key",
    "stripe_key",
    "private_key",
    "jwt",
    "url_password",
    "env_assignment",
    "high_entropy_secret",
)
MAX_DEPTH = 64


def redact_record(record: dict[str, Any]) -> Counter[str]:
    """Redact one IM record in place; the count of secrets found per kind."""
    counts: Counter[str] = Counter()
    texts = _texts(record)
    if texts is not None and not search_any("\n".join(texts[0] + texts[1])):
        for text in texts[0]:
            _remember_clean(text)
        return counts
    messages = record.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        for field in ("content", "reasoning_content"):
            value = message.get(field)
            if isinstance(value, str | list | dict):
                message[field] = _redact_value(value, counts, 0)
        for function in _functions(message):
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                function["arguments"] = _redact_arguments(arguments, counts)
            elif isinstance(arguments, list | dict):
                function["arguments"] = _redact_value(arguments, counts, 0)
    for function in _functions(record, "tools"):
        if isinstance(function.get("description"), str):
            function["description"] = _redact_string(function["description"], counts)
    unique_info = _unique_info(record)
    if unique_info is not None:
        _redact_value(unique_info, counts, 0)
    return counts


def _texts(record: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """The record's texts not known to be clean: message texts and tool descriptions (worth
    remembering when clean: they repeat across records), then tool-call arguments and
    `unique_info` as JSON (the prefilter allows its escapes). None when a part is not of the
    IM shape (then every string is looked at one by one). The hot path: plain loops."""
    texts: list[str] = []
    others: list[str] = []
    append = texts.append
    clean = _clean
    try:
        for message in record["messages"]:
            for field in ("content", "reasoning_content"):
                value = message.get(field)
                if type(value) is str:
                    if value and (len(value) < _CACHE_MIN or value not in clean):
                        append(value)
                elif value is not None:
                    return None
            calls = message.get("tool_calls")
            if calls:
                for call in calls:
                    arguments = call["function"]["arguments"]
                    if type(arguments) is not str:
                        return None
                    others.append(arguments)
        for tool in record.get("tools") or ():
            description = tool["function"].get("description")
            if type(description) is str and (
                len(description) < _CACHE_MIN or description not in clean
            ):
                append(description)
        others.append(orjson.dumps(record["meta_info"]["unique_info"]).decode())
    except (KeyError, TypeError, AttributeError):
        return None
    return texts, others


def _functions(owner: dict[str, Any], field: str = "tool_calls") -> list[dict[str, Any]]:
    """The `function` objects of a message's tool calls or of a record's tools."""
    items = owner.get(field)
    if not items or not isinstance(items, list):
        return []
    return [
        item["function"]
        for item in items
        if isinstance(item, dict) and isinstance(item.get("function"), dict)
    ]


def _unique_info(record: dict[str, Any]) -> dict[str, Any] | None:
    meta_info = record.get("meta_info")
    unique_info = meta_info.get("unique_info") if isinstance(meta_info, dict) else None
    return unique_info if isinstance(unique_info, dict) else None


# Texts of >= _CACHE_MIN chars the prefilter found clean (system prompts, tool descriptions
# and file contents repeat across the records of a corpus), up to _CACHE_CHARS in all.
_CACHE_MIN = 256
_CACHE_CHARS = 1 << 22
_clean: dict[str, None] = {}
_clean_chars = [0]


def clear_cache() -> None:
    """Forget the texts known to be clean (for benchmarks and tests)."""
    _clean.clear()
    _clean_chars[0] = 0


def _remember_clean(text: str) -> None:
    size = len(text)
    if size < _CACHE_MIN or text in _clean:
        return
    while _clean_chars[0] + size > _CACHE_CHARS and _clean:
        try:
            oldest = next(iter(_clean))
            del _clean[oldest]
        except (KeyError, RuntimeError, StopIteration):  # another thread got there first
            break
        _clean_chars[0] -= len(oldest)
    _clean[text] = None
    _clean_chars[0] += size


def redact_bundle(bundle: Mapping[str, Any], mode: str) -> Counter[str]:
    """Redact every record of a bundle (`transforms/readers/bundle.py`) in place in "mask"
    and "drop" mode; nothing in "off". Its `metadata`, `usage` and `warnings` too (mostly the
    main record's own objects, already done then). The count of secrets found per kind."""
    if mode not in REDACT_MODES:
        raise ValueError(f"redaction mode must be one of {', '.join(REDACT_MODES)}: {mode!r}")
    counts: Counter[str] = Counter()
    if mode == "off":
        return counts
    records = bundle.get("records")
    for record in records if isinstance(records, list) else ():
        if isinstance(record, dict):
            counts += redact_record(record)
    for field in ("metadata", "usage", "warnings"):
        value = bundle.get(field)
        if isinstance(value, dict | list):
            _redact_value(value, counts, 0)
    return counts


def _redact_string(text: str, counts: Counter[str]) -> str:
    if len(text) >= _CACHE_MIN and text in _clean:
        return text
    if not search_any(text):
        _remember_clean(text)
        return text
    return redact_matched(text, counts)


def _redact_value(value: Any, counts: Counter[str], depth: int) -> Any:
    """A string redacted, or a list / dict redacted in place (keys too), to `MAX_DEPTH`."""
    if isinstance(value, str):
        return _redact_string(value, counts) if value else value
    if depth >= MAX_DEPTH:
        return value
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str | list | dict):
                value[index] = _redact_value(item, counts, depth + 1)
    elif isinstance(value, dict):
        renamed = False
        for key, item in value.items():
            if isinstance(item, str):
                value[key] = _redact_named(key, item, counts)
            elif isinstance(item, list | dict):
                _redact_value(item, counts, depth + 1)
            renamed = renamed or (isinstance(key, str) and PREFILTER.search(key) is not None)
        if renamed:
            items = [
                (_redact_string(key, counts) if isinstance(key, str) else key, item)
                for key, item in value.items()
            ]
            value.clear()
            value.update(items)
    return value


def _redact_named(key: Any, value: str, counts: Counter[str]) -> str:
    """A string value under `key`: redacted as text, else judged as assigned to `key`."""
    redacted = _redact_string(value, counts) if value else value
    if redacted is not value or not isinstance(key, str):
        return redacted
    tier = name_tier(key) if _SECRET_WORD.search(key) else NONE
    if tier == NONE:
        return value
    if literal_secret(value, tier, wordy_ok=True):
        kind = "env_assignment"
    elif high_entropy(value):
        kind = "high_entropy_secret"
    else:
        return value
    counts[kind] += 1
    return placeholder(kind)


_SECRET_WORD = re.compile(r"(?i)key|token|secret|pass")


def _redact_arguments(arguments: str, counts: Counter[str]) -> str:
    """Tool-call arguments: the JSON is decoded so that escaped secrets (a PEM key whose
    newlines are `\\n`, `\\u0041KIA...`) are found, and re-encoded only when one was."""
    if not search_any(arguments):
        return arguments
    found: Counter[str] = Counter()
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        try:
            parsed = json.loads(arguments)
        except ValueError:  # not JSON: as text
            return _redact_string(arguments, counts)
    if isinstance(parsed, str):
        redacted: Any = _redact_string(parsed, found)
    elif isinstance(parsed, list | dict):
        redacted = _redact_value(parsed, found, 0)
    else:
        return arguments
    if not found:
        return arguments
    counts += found
    try:
        return orjson.dumps(redacted).decode()
    except TypeError:  # e.g. an integer wider than 64 bits: stdlib json, as compact
        return json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@")
_SECRET_QUERY = re.compile(
    r"(?i)(?P<name>[?&;](?:[A-Za-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|pass|pwd|auth"
    r"|credential|signature)|sig|code)=)(?P<value>[^&#;\s]+)"
)


def mask_url_credentials(url: str) -> str:
    """`https://user:secret@host/v1` -> `https://***@host/v1`; secret-named query values
    (`?api_key=...`, `&sig=...`) -> `***` too. For values written to manifests and logs."""
    masked = _USERINFO.sub(r"\g<scheme>***@", url, count=1)
    return _SECRET_QUERY.sub(r"\g<name>***", masked)


def mask_secrets_in_text(text: str) -> str:
    """`text` with every secret `redact_text` finds and every URL's credentials masked."""
    redacted, _ = redact_text(text)
    return _URL_IN_TEXT.sub(lambda match: mask_url_credentials(match.group(0)), redacted)


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
