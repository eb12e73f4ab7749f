"""Build IM records (formats.md §4) from messages a reader has put in OpenAI shape.

Readers produce messages as `{"role", "content", "reasoning_content"?, "tool_calls"?:
[{"id", "name", "arguments"}], "tool_call_id"?}` and call `build_im_record`; this module
owns the IM rules every reader shares: the leading empty system message, JSON-string tool
arguments, filled tool-call ids, `<think>` splitting, rebuilt tool lists, language, rounds.

Content is text, null, or content parts (a list of strings / part objects, or one part
object). Anything else (`message: 42`, `[1, 2, 3]`) is not turned into text: `as_text`
refuses it with a `ReaderError` naming where it was, and the reader refuses the trajectory.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from transforms.readers.bundle import ReaderError
from transforms.readers.source_files import json_type

IM_VERSION = "2.0.0"
UNKNOWN_DATE = "1970-01-01"
AGENT_SCAFFOLDS = {
    "claude-code": "claudecode",
    "claudecode": "claudecode",
    "opencode": "opencode",
    "openhands": "openhands",
    "openhands-sdk": "openhands_sdk",
    "openhands_sdk": "openhands_sdk",
    "terminus-2": "terminus2",
    "terminus2": "terminus2",
    "terminus": "terminus2",
    # SWE-agent and mini-swe-agent drive one bash-like tool and end by submitting: the
    # closest TQS scaffold is openhands (execution by arguments, finish/summary endings).
    "swe-agent": "openhands",
    "mini-swe-agent": "openhands",
    # Agents TQS V2 has no scaffold for: the name is recorded, and even `--scaffold-hints`
    # scores such a record by the scaffold it detects (an unknown hint is not used).
    "codex": "codex",
    "gemini-cli": "gemini_cli",
}
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_THINK = re.compile(r"\A\s*<think>(.*?)</think>\s*", re.DOTALL)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def scaffold_for_agent(agent_name: Any) -> str | None:
    """The TQS V2 scaffold an agent's records follow (claude-code -> claudecode, ...)."""
    if not isinstance(agent_name, str) or not agent_name:
        return None
    return AGENT_SCAFFOLDS.get(agent_name.strip().lower())


def utc_moment(timestamp: Any) -> dt.datetime | None:
    """The UTC moment of an ISO 8601 text (`Z`, an offset, or none: taken as UTC, as Harbor
    records it) or of epoch seconds / milliseconds; None when it is neither."""
    moment: dt.datetime | None = None
    if isinstance(timestamp, str):
        try:
            moment = dt.datetime.fromisoformat(timestamp.strip())
        except ValueError:
            return None
    elif isinstance(timestamp, int | float) and not isinstance(timestamp, bool) and timestamp > 0:
        seconds = timestamp / 1000 if timestamp > 1e11 else timestamp
        try:
            moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if moment is None:
        return None
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)


# An ISO 8601 text already in UTC (`Z`, `+00:00` or no offset) with 0, 3 or 6 fraction
# digits: its UTC form is its own digits (once `fromisoformat` has found them a valid time).
_UTC_TEXT = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]{6}|\.[0-9]{3})?(?:Z|\+00:00)?"
)


def utc_timestamp(timestamp: Any) -> str | None:
    """A timestamp as the one form IM records carry: ISO 8601 in UTC with microseconds and
    `Z` (`2026-05-26T00:21:11.642229Z`); None when `timestamp` is none (see `utc_moment`)."""
    found = _UTC_TEXT.fullmatch(timestamp) if isinstance(timestamp, str) else None
    if found is not None:  # the common case, without building the text from a datetime
        try:
            dt.datetime.fromisoformat(timestamp)
        except ValueError:
            return None
        fraction = found.group(2) or "."
        return f"{found.group(1)}{fraction.ljust(7, '0')}Z"
    moment = utc_moment(timestamp)
    if moment is None:
        return None
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def date_of(timestamp: Any) -> str:
    """`YYYY-MM-DD` (the UTC date) from an ISO timestamp or epoch seconds/milliseconds; a text
    holding a date otherwise (`2026-05-26 12:00 PST`) gives that date; unknown -> 1970-01-01."""
    moment = utc_moment(timestamp)
    if moment is not None:
        return moment.strftime("%Y-%m-%d")
    if isinstance(timestamp, str):
        match = _DATE.search(timestamp)
        return match.group(0) if match else UNKNOWN_DATE
    return UNKNOWN_DATE


# The timestamps an IM record carries (formats.md §4 `_instance_metadata`, from Harbor's
# TrialResult): the trial's, and each phase's under `timings`.
TIMESTAMP_KEYS = ("started_at", "finished_at")


def with_utc_timestamps(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """`_instance_metadata` with its timestamps (`started_at`, `finished_at`,
    `timings.<phase>.started_at` / `finished_at`) as `utc_timestamp` gives them (a copy:
    the given mapping and its `timings` are left as they are). A value that is no timestamp
    becomes null, and a warning says so."""
    out = dict(metadata)
    warnings: list[str] = []
    _utc_span(out, "", warnings)
    timings = out.get("timings")
    if isinstance(timings, Mapping):
        out["timings"] = {
            phase: _utc_span(dict(span), f"timings.{phase}.", warnings)
            if isinstance(span, Mapping)
            else span
            for phase, span in timings.items()
        }
    if warnings:
        out["warnings"] = [*(out.get("warnings") or []), *warnings]
    return out


def _utc_span(span: dict[str, Any], where: str, warnings: list[str]) -> dict[str, Any]:
    for key in TIMESTAMP_KEYS:
        value = span.get(key)
        if value is not None:
            span[key] = utc_timestamp(value)
            if span[key] is None:
                warnings.append(f"{where}{key}: not a timestamp ({str(value)[:40]!r}), left out")
    return span


def as_text(value: Any, what: str = "content") -> str:
    """Message content as text: strings pass, content parts are joined, images are left out.

    Any other JSON value is refused (`ReaderError`: "<what> is a JSON number, expected text or
    content parts"); `what` says where it was, e.g. "step 3: message".
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_part_text(part, f"{what} part {n}") for n, part in enumerate(value, 1))
    if isinstance(value, Mapping):
        return _part_text(value, what)
    raise ReaderError(f"{what} is a JSON {json_type(value)}, expected text or content parts")


def _part_text(part: Any, what: str) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        raise ReaderError(f"{what} is a JSON {json_type(part)}, expected an object or text")
    kind = part.get("type")
    if kind in ("image", "image_url", "input_image"):
        return ""  # an image is not text: no marker of ours stands in for it
    for key in ("text", "content", "output"):
        if key in part:
            return as_text(part[key], f"{what} {key}")
    return ""


def openai_reasoning(message: Mapping[str, Any], what: str = "message") -> str:
    """The model's reasoning recorded on an OpenAI-style message, "" when there is none.

    Where logs put it: `reasoning_content` (OpenAI-compatible servers, LiteLLM, IM),
    `reasoning` (text), `thinking_blocks[].thinking` (LiteLLM's Anthropic blocks), and the
    same fields on the raw LiteLLM response a log keeps beside the message
    (`extra.response.choices[0].message`, as mini-swe-agent writes it).
    """
    found = _reasoning_fields(message, what)
    if found:
        return found
    extra = message.get("extra")
    response = extra.get("response") if isinstance(extra, Mapping) else None
    choices = response.get("choices") if isinstance(response, Mapping) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    raw = first.get("message") if isinstance(first, Mapping) else None
    return _reasoning_fields(raw, f"{what} response") if isinstance(raw, Mapping) else ""


def _reasoning_fields(message: Mapping[str, Any], what: str) -> str:
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str | list) and value:
            text = as_text(value, f"{what} {key}").strip()
            if text:
                return text
    blocks = message.get("thinking_blocks")
    thoughts = [
        block["thinking"].strip()
        for block in (blocks if isinstance(blocks, list) else [])
        if isinstance(block, Mapping) and isinstance(block.get("thinking"), str)
    ]
    return "\n\n".join(t for t in thoughts if t)


def arguments_json(arguments: Any) -> str:
    """Tool-call arguments as the JSON string IM requires (a string that is JSON stays)."""
    return _arguments(arguments)[0]


def _arguments(arguments: Any) -> tuple[str, Any]:
    """(`arguments_json(arguments)`, the value that string holds): the value is what
    `orjson.loads` reads back from the string, without reading it back."""
    if isinstance(arguments, str):
        try:
            value = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            raw = {"raw": arguments}
            return orjson.dumps(raw).decode(), raw
        return arguments, value
    value = arguments if arguments is not None else {}
    return orjson.dumps(value).decode(), value


def _split_think(content: str, reasoning: str) -> tuple[str, str]:
    match = _THINK.match(content)
    if not match:
        return content, reasoning
    thought = match.group(1).strip()
    return content[match.end() :], (reasoning + "\n" + thought).strip() if reasoning else thought


def _normalise(
    message: Mapping[str, Any], tool_keys: dict[str, set[str]] | None = None
) -> dict[str, Any]:
    """The IM message; with `tool_keys`, each call's argument names are added under its
    function name (what `tools_from_calls` reads back from the arguments' JSON)."""
    role = message["role"]
    content = message.get("content")
    if not isinstance(content, str):  # the message's name is built only when it is needed
        content = as_text(content, f"{role} message content")
    out: dict[str, Any] = {"role": role, "content": content}
    if message.get("name"):
        out["name"] = str(message["name"])
    if role == "assistant":
        reasoning = message.get("reasoning_content")
        if not isinstance(reasoning, str):
            reasoning = as_text(reasoning, "assistant reasoning_content")
        content, reasoning = _split_think(content, reasoning)
        out["content"] = content
        out["reasoning_content"] = reasoning
        calls = message.get("tool_calls") or []
        if calls:
            out["tool_calls"] = [_call(call, tool_keys) for call in calls]
    elif role == "tool":
        out["tool_call_id"] = str(message.get("tool_call_id") or "")
    return out


def _call(call: Mapping[str, Any], tool_keys: dict[str, set[str]] | None) -> dict[str, Any]:
    name = str(call.get("name") or "")
    arguments, value = _arguments(call.get("arguments"))
    if tool_keys is not None:
        tool_keys.setdefault(name, set()).update(value if isinstance(value, dict) else {})
    return {
        "id": str(call.get("id") or ""),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def _fill_call_ids(messages: list[dict[str, Any]], instance_id: str) -> None:
    """Missing call ids come from the following tool messages, else are generated."""
    generated = 0
    for index, message in enumerate(messages):
        calls = message.get("tool_calls")
        if not calls:
            continue
        following = []
        for later in messages[index + 1 :]:
            if later["role"] != "tool":
                break
            following.append(later)
        for position, call in enumerate(calls):
            if call["id"]:
                continue
            tool = following[position] if position < len(following) else None
            if tool is not None and tool.get("tool_call_id"):
                call["id"] = tool["tool_call_id"]
            else:
                generated += 1
                call["id"] = f"call_{instance_id}_{generated}"
                if tool is not None:
                    tool["tool_call_id"] = call["id"]


def tools_from_calls(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rebuild a tool list from the calls seen (Claude Code's ATIF has none)."""
    seen: dict[str, set[str]] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            name = call["function"]["name"]
            try:
                args = orjson.loads(call["function"]["arguments"])
            except orjson.JSONDecodeError:
                args = {}
            seen.setdefault(name, set()).update(args if isinstance(args, dict) else {})
    return _tools(seen)


def _tools(seen: Mapping[str, set[str]]) -> list[dict[str, Any]]:
    """The tool list of the calls seen: function name -> the argument names they used."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": "",
                "parameters": {"type": "object", "properties": {k: {} for k in sorted(keys)}},
            },
        }
        for name, keys in seen.items()
        if name
    ]


def _language(messages: list[dict[str, Any]]) -> str:
    for message in messages:
        if message["role"] == "user":
            return "zh" if _CJK.search(message["content"]) else "en"
    return "en"


def build_im_record(
    messages: Iterable[Mapping[str, Any]],
    *,
    instance_id: str,
    agent_type: str = "main",
    tools: list[dict[str, Any]] | None = None,
    rebuild_tools: bool = False,
    agent: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    usage: Mapping[str, Any] | None = None,
    gen_params: Mapping[str, Any] | None = None,
    query_source: str = "unknown",
    date: str = UNKNOWN_DATE,
    extra_unique_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One IM record. `agent` = {name, version, model}; its scaffold goes into metadata."""
    tool_keys: dict[str, set[str]] | None = {} if tools is None and rebuild_tools else None
    normalised = [_normalise(m, tool_keys) for m in messages]
    if not normalised or normalised[0]["role"] != "system":
        normalised.insert(0, {"role": "system", "content": ""})
    _fill_call_ids(normalised, instance_id)
    if tool_keys is not None:  # the calls' names and argument names, seen as serialised
        tools = _tools(tool_keys)
    instance_metadata = with_utc_timestamps(metadata or {})
    if agent:
        instance_metadata["agent"] = dict(agent)
        scaffold = scaffold_for_agent(agent.get("name"))
        if scaffold:
            instance_metadata["scaffold"] = scaffold
    unique_info: dict[str, Any] = {
        "_instance_id": instance_id,
        "_agent_type": agent_type,
        "_score": None,
        "_gen_params": dict(gen_params or {}),
        "_usage": dict(usage or {}),
        "_instance_metadata": instance_metadata,
    }
    unique_info.update(extra_unique_info or {})
    model = (agent or {}).get("model") or "unknown"
    return {
        "version": IM_VERSION,
        "meta_info": {
            "teacher": str(model),
            "query_source": query_source,
            "response_generate_time": date,
            "response_update_time": date,
            "owner": "trajcurate",
            "language": _language(normalised),
            "category": "code",
            "rounds": sum(1 for m in normalised if m["role"] == "assistant"),
            "unique_info": unique_info,
        },
        "tools": tools if tools is not None else [],
        "messages": normalised,
    }
