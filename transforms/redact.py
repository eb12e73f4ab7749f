"""Secrets never reach training data: redaction of IM records (no Beam).

Every well-known secret shape in a record's text is replaced by a typed placeholder
`[REDACTED:<kind>]` (the kinds are `KINDS`), with a count per kind:

- `redact_text(text)`: one string;
- `redact_record(record)`: in place over every string of one IM record: message `content`
  and `reasoning_content` and every other message field, tool names, descriptions and
  parameter schemas (defaults, enums, property names), every `meta_info` field (the model
  in `teacher`, `query_source`, all of `unique_info`), nested to `MAX_DEPTH`. A tool
  call's `function.arguments` (a JSON string) is parsed, its strings redacted, and written
  back compactly with orjson only when something was found, so it stays valid JSON and is
  byte-identical otherwise. A key split between two messages (a known prefix ending one
  tool result, the rest starting the next message) is masked in both;
- `redact_bundle(bundle, mode)`: every record of a bundle in "mask" and "drop" mode (the
  caller rejects the bundle in "drop" mode when the count is not empty), nothing in "off";
- `redact_object(value)`: every string of a JSON-like object (the LLM judges' answers);
- `mask_url_credentials(url)`, `mask_secrets_in_text(text)`: for option values and messages
  written to manifests and logs.

Inside JSON (tool-call arguments, `unique_info`) a string under a secret's key
(`{"password": "..."}`, `{"env": {"GITHUB_TOKEN": "..."}}`) is judged as a value assigned
to that name. Detectors read each text as the cleaner will leave it (no zero-width or other
invisible characters), and base64 runs are decoded where the record mentions base64
(`transforms/redaction/text.py`).

Speed: one pass in C over every string of a record (`transforms/redaction/survey.py`, the
same pass tells cleaning whether it has anything to do) returns a record without any
trigger, invisible character or mention of base64 untouched right there. A record it flags
has its strings joined and scanned by the prefilter (`transforms/redaction/patterns.py`: a
few literal searches, no detector), and only the strings of a record that matched go one
by one through the detectors. The survey, asked again, finds them: once for each message
(not for the whole record or its list of messages, which would walk every string again
each time), then for each part of a message it flags, and so on down. Long texts found
clean (system prompts, tool descriptions and schemas, repeated file contents) are
remembered and not scanned again. `benchmarks/bench_redact.py` measures it against scoring.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import orjson

from transforms.cleaning import SURVEYED
from transforms.json_text import json_value
from transforms.redaction.patterns import PREFILTER, search_any
from transforms.redaction.rules import NONE, high_entropy, literal_secret, looks_random, name_tier
from transforms.redaction.survey import CLEAN, SECRET, survey_record, survey_value
from transforms.redaction.text import (
    has_b64_hint,
    may_hide,
    placeholder,
    prefixed_spans,
    redact_text,
    scan,
)

__all__ = [
    "KINDS",
    "MAX_DEPTH",
    "REDACT_MODES",
    "clear_cache",
    "mask_secrets_in_text",
    "mask_url_credentials",
    "redact_bundle",
    "redact_object",
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
    "huggingface_token",
    "sendgrid_api_key",
    "telegram_bot_token",
    "private_key",
    "jwt",
    "url_password",
    "url_signature",
    "docker_auth",
    "cli_password",
    "env_assignment",
    "high_entropy_secret",
)
MAX_DEPTH = 64


def redact_record(record: dict[str, Any]) -> Counter[str]:
    """Redact one IM record in place; the count of secrets found per kind."""
    return _redact_surveyed(record)[0]


def _redact_surveyed(record: dict[str, Any]) -> tuple[Counter[str], int]:
    """`redact_record`, and the record's survey bits (`survey.CLEAN` says whether cleaning may
    have something to do), both bits when redaction replaced a secret: the record changed.
    (Every replacement is counted; a record with none found is left as it was.)"""
    counts: Counter[str] = Counter()
    bits = survey_record(record)
    if not bits & SECRET:  # one pass in C: nothing to look at
        return counts, bits
    texts = _texts(record)
    if texts is None:
        b64 = True
    else:
        joined = "\n".join(texts[0] + texts[1])
        if not search_any(joined) and not may_hide(joined):
            for text in texts[0]:
                _remember_clean(text)
            return counts, bits
        b64 = has_b64_hint(joined)
    messages = record.get("messages")
    if isinstance(messages, list):
        _redact_split_keys(messages, counts)
    # The record, flagged, is not surveyed again, nor its messages as a whole (nearly all of
    # its text is there): each message is, once.
    _redact_container(record, counts, 0, b64, whole="messages")
    return counts, (SECRET | CLEAN) if counts else bits


def _texts(record: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """Every string of the record not known to be clean, for the prefilter: message texts
    and the tools as JSON (worth remembering when clean: they repeat across records), then
    the other fields of messages, tool calls and `meta_info` (as JSON: the prefilter allows
    its escapes). None when a part is not of the IM shape (then every string is looked at
    one by one). The hot path: plain loops."""
    texts: list[str] = []
    others: list[str] = []
    append = texts.append
    clean = _clean
    dumps = orjson.dumps
    try:
        for message in record["messages"]:
            if not message.keys() <= _MESSAGE_KEYS:  # keys of its own (an IM input's)
                others.extend(map(str, message))
            for field, value in message.items():
                if value is None:
                    continue
                if field == "content" or field == "reasoning_content":
                    if type(value) is not str:
                        return None
                    if value and (len(value) < _CACHE_MIN or value not in clean):
                        append(value)
                elif field == "tool_calls":
                    for call in value:
                        if not call.keys() <= _CALL_KEYS:
                            others.extend(map(str, call))
                        for part, item in call.items():
                            if part == "function":
                                _add_values(item, others, _FUNCTION_KEYS)
                            else:
                                others.append(item if type(item) is str else dumps(item).decode())
                elif field == "role":
                    if value not in _ROLES:
                        others.append(value if type(value) is str else dumps(value).decode())
                else:
                    others.append(value if type(value) is str else dumps(value).decode())
        tools = record.get("tools")
        if tools:  # a scaffold's records share their tool set: remembered as a whole
            text = dumps(tools).decode()
            if len(text) < _CACHE_MIN or text not in clean:
                append(text)
        if not record.keys() <= _RECORD_KEYS:
            others.extend(map(str, record))
        for field, value in record.items():
            if field == "meta_info":
                _add_values(value, others, _META_KEYS)
            elif field != "messages" and field != "tools":
                others.append(value if type(value) is str else dumps(value).decode())
    except (KeyError, TypeError, AttributeError):
        return None
    return texts, others


_ROLES = frozenset(("system", "user", "assistant", "tool"))
# the IM format's keys (formats.md §4); a record's other keys are strings to look at too
_RECORD_KEYS = frozenset(("version", "meta_info", "tools", "messages"))
_META_KEYS = frozenset(
    "teacher query_source response_generate_time response_update_time owner language "
    "category rounds unique_info".split()
)
_MESSAGE_KEYS = frozenset(
    ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")
)
_CALL_KEYS = frozenset(("id", "type", "function"))
_FUNCTION_KEYS = frozenset(("name", "arguments"))


def _add_values(mapping: dict[str, Any], out: list[str], keys: frozenset[str]) -> None:
    """Each value of `mapping` (a string as it is, anything else as JSON), and its keys when
    they are not all the format's `keys`."""
    if not mapping.keys() <= keys:
        out.extend(map(str, mapping))
    for item in mapping.values():
        out.append(item if type(item) is str else orjson.dumps(item).decode())


# Texts of >= _CACHE_MIN chars found clean, by the prefilter or by the detectors (system
# prompts, tool descriptions and file contents repeat across the records of a corpus), up to
# _CACHE_CHARS in all.
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
    main record's own objects, already done then). The count of secrets found per kind.

    The same pass tells cleaning which records it found nothing to clean in: the bundle gets
    `cleaning.SURVEYED` (one flag per record), which the `clean` stage takes (`after_survey`).
    """
    if mode not in REDACT_MODES:
        raise ValueError(f"redaction mode must be one of {', '.join(REDACT_MODES)}: {mode!r}")
    counts: Counter[str] = Counter()
    if mode == "off":
        return counts
    records = bundle.get("records")
    surveyed: list[bool] = []
    for record in records if isinstance(records, list) else ():
        bits = SECRET | CLEAN
        if isinstance(record, dict):
            found, bits = _redact_surveyed(record)
            if found:  # nearly always empty: `Counter.update` costs even then
                counts.update(found)
        surveyed.append(not bits & CLEAN)
    changed = False
    for field in ("metadata", "usage", "warnings"):
        value = bundle.get(field)
        if isinstance(value, dict | list):
            found = redact_object(value)
            if found:
                changed = True
                counts.update(found)
    if isinstance(bundle, dict) and isinstance(records, list) and not changed:
        bundle[SURVEYED] = surveyed
    return counts


def redact_object(value: dict[str, Any] | list[Any]) -> Counter[str]:
    """Every string of a JSON-like object redacted in place (keys too; a string under a
    secret's key judged as assigned to it), to `MAX_DEPTH`: bundle metadata, the LLM judges'
    answers. The count per kind."""
    counts: Counter[str] = Counter()
    if not survey_value(value, named=True) & SECRET:
        return counts
    try:
        b64 = has_b64_hint(orjson.dumps(value).decode())
    except TypeError:  # not serialisable as it is: look at every base64 run
        b64 = True
    _redact_value(value, counts, 0, b64)
    return counts


def _redact_string(text: str, counts: Counter[str], b64: bool) -> str:
    """One string. Unless its record mentions base64 (`b64`: then every base64 run of every
    string is decoded), a text known clean or without any trigger is returned at once."""
    if not b64:
        if len(text) >= _CACHE_MIN and text in _clean:
            return text
        if not survey_value(text) & SECRET:
            return text
        if not search_any(text) and not may_hide(text):
            _remember_clean(text)
            return text
    out = scan(text, counts, b64)
    # a trigger but no secret: not scanned again either, unless it may end in the first half
    # of a split key (a text known clean is left out of its record's prefilter, which then
    # would not send the record to `_redact_split_keys`)
    if out is text and not b64 and not _key_prefix_size(text):
        _remember_clean(text)
    return out


def _redact_value(value: Any, counts: Counter[str], depth: int, b64: bool) -> Any:
    """A string redacted, or a list / dict redacted in place (keys too), to `MAX_DEPTH`,
    unless the survey finds nothing in it (no trigger, no secret's name)."""
    if isinstance(value, str):
        return _redact_string(value, counts, b64) if value else value
    if depth >= MAX_DEPTH or (not b64 and not survey_value(value, named=True) & SECRET):
        return value
    return _redact_container(value, counts, depth, b64)


def _redact_container(
    value: Any, counts: Counter[str], depth: int, b64: bool, whole: str | None = None
) -> Any:
    """A list / dict (below `MAX_DEPTH`) redacted in place, keys too, without a survey of its
    own: its caller knows that the survey flagged it. Each of its items is surveyed
    (`_redact_value`) but, in a dict, the one under the key `whole`: its own items are."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str | list | dict):
                value[index] = _redact_value(item, counts, depth + 1, b64)
    elif isinstance(value, dict):
        _redact_fields(value, counts, depth, b64, whole)
    return value


def _redact_fields(
    value: dict[Any, Any], counts: Counter[str], depth: int, b64: bool, whole: str | None
) -> None:
    """A dict's values (a string under `arguments` is a tool call's JSON arguments,
    `_redact_arguments`), then its keys if one of them may hold a secret."""
    renamed = False
    for key, item in value.items():
        if isinstance(item, str):
            if key == "arguments":
                value[key] = _redact_arguments(item, counts, b64)
            else:
                value[key] = _redact_named(key, item, counts, b64)
        elif key == whole and isinstance(item, list | dict):
            _redact_container(item, counts, depth + 1, b64)
        elif isinstance(item, list | dict):
            _redact_value(item, counts, depth + 1, b64)
        renamed = renamed or (isinstance(key, str) and _key_may_hold(key))
    if renamed:
        items = [
            (_redact_string(key, counts, b64) if isinstance(key, str) else key, item)
            for key, item in value.items()
        ]
        value.clear()
        value.update(items)


def _key_may_hold(key: str) -> bool:
    return PREFILTER.search(key) is not None or (not key.isascii() and may_hide(key))


def _redact_named(key: Any, value: str, counts: Counter[str], b64: bool) -> str:
    """A string value under `key`: redacted as text, else judged as assigned to `key`."""
    redacted = _redact_string(value, counts, b64) if value else value
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


def _redact_arguments(arguments: str, counts: Counter[str], b64: bool) -> str:
    """Tool-call arguments: the JSON is decoded so that escaped secrets (a PEM key whose
    newlines are `\\n`, `\\u0041KIA...`, a `\\u200b` inside a key) are found, and re-encoded
    only when one was."""
    if not b64 and (
        not survey_value(arguments) & SECRET
        or (not search_any(arguments) and not may_hide(arguments))
    ):
        return arguments
    found: Counter[str] = Counter()
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        try:
            parsed = json_value(arguments)
        except ValueError:  # not JSON (or nested too deeply to read): as text
            return _redact_string(arguments, counts, b64)
    if isinstance(parsed, str):
        redacted: Any = _redact_string(parsed, found, b64)
    elif isinstance(parsed, list | dict):
        redacted = _redact_value(parsed, found, 0, b64)
    else:
        return arguments
    if not found:
        return arguments
    counts += found
    try:
        return orjson.dumps(redacted).decode()
    except TypeError:  # e.g. an integer wider than 64 bits: stdlib json, as compact
        return json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))


# A key split over two messages (`head -c 20 key.txt`, then `tail -c +21 key.txt`): a known
# prefix in the last word of one message's text, the rest at the start of the next one's
# (the next message, and for a tool result the next tool result too).
_SPLIT_TAIL = 160
_SPLIT_PREFIX = re.compile(
    r"(?:sk-|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|A[KS]IA|AIza|[sr]k_live_|hf_|SG\.|eyJ)"
    r"[A-Za-z0-9_.-]*\Z"
)
# what a key's prefix and rest are made of ([A-Za-z0-9_.-], as `str.rstrip` takes it)
_KEY_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_SPLIT_HEAD = re.compile(r"[A-Za-z0-9_.+/=-]{4,512}(?![^\s\"'`,;)\]}<>])")


def _redact_split_keys(messages: list[Any], counts: Counter[str]) -> None:
    """Mask both halves of every key split between two messages' `content`."""
    texts = [
        message
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), str)
    ]
    for position, message in enumerate(texts):
        size = _key_prefix_size(message["content"])
        if not size:
            continue
        for following in _following(texts, position):
            if _join_split(message, following, size, counts):
                break


def _key_prefix_size(text: str) -> int:
    """How many characters of a key's known prefix end `text` (before trailing blanks), 0
    when none: the first half of a key split over two messages."""
    tail = text[-_SPLIT_TAIL:].rstrip()
    # a prefix and the rest are key characters to the end: the match, if any, starts in the
    # run of them that ends the text (within its last word)
    run = len(tail.rstrip(_KEY_CHARS))
    match = _SPLIT_PREFIX.search(tail, run) if run < len(tail) else None
    return 0 if match is None else len(tail) - match.start()


def _following(texts: list[dict[str, Any]], position: int) -> list[dict[str, Any]]:
    """The message after `texts[position]` and, for a tool result, the next tool result."""
    out = texts[position + 1 : position + 2]
    if texts[position].get("role") == "tool":
        out += [message for message in texts[position + 2 :] if message.get("role") == "tool"][:1]
    return out


def _join_split(
    first: dict[str, Any], second: dict[str, Any], size: int, counts: Counter[str]
) -> bool:
    """Whether the last `size` chars of `first`'s content (before trailing blanks) and the
    first word of `second`'s form a key; if so both halves are masked."""
    head = _SPLIT_HEAD.match(second["content"])
    if head is None or not looks_random(head.group(0)):
        return False
    text = first["content"]
    end = len(text.rstrip())
    start = end - size
    joined = text[max(start - 1, 0) : end] + head.group(0)
    junction = end - max(start - 1, 0)
    for span_start, span_end, kind in prefixed_spans(joined):
        if span_start < junction < span_end:
            mask = placeholder(kind)
            first["content"] = text[: end - junction + span_start] + mask + text[end:]
            second["content"] = mask + second["content"][span_end - junction :]
            counts[kind] += 1
            return True
    return False


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
