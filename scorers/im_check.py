"""A fast, conservative structural check for IM records (formats.md §4).

`is_im_record(obj)` mirrors the strict pydantic schema in `scorers.im` by hand, level by level,
so that the common case — a valid record fresh from `orjson.loads` — is accepted without
pydantic. It is sound: True implies the pydantic adapter accepts `obj`. It is exact on JSON
values but conservative elsewhere: it accepts only the exact built-in types (`dict`, `list`,
`str`, `int`; never subclasses, which pydantic's strict mode does accept) and requires every
key of every checked dict to be a `str`. A False answer is not a verdict: the caller falls back
to pydantic, which is the authority and writes the error message.

Schema summary (all levels except the top allow extra keys; `X?` = NotRequired):
  record     {version: "2.0.0", meta_info, tools: [tool] | None, messages: [message]} only
  meta_info  {teacher, query_source, response_generate_time, response_update_time, owner,
              language, category: str, rounds: int >= 0, unique_info}
  unique_info {_instance_id: str, _agent_type?: "main" | "subagent",
               _score?, _gen_params?, _usage?, _instance_metadata?: dict[str, Any] | None}
  tool       {type: "function", function: {name: str, description?: str | None,
              parameters?: dict[str, Any] | None}}
  message    {role: "system" | "user" | "assistant" | "tool", content: str,
              name?, reasoning_content?, tool_call_id?: str | None, tool_calls?: [call] | None}
  tool_call  {id: str, type: "function", function: {name: str, arguments: str}}

Each object level is one pass over its items — the key must be a `str`, a known key's value
must have the right type, and the required keys are counted — which is faster than looking the
keys up one by one, interpreted or compiled. Written for mypyc: plain typed functions and
for-loops, module-level constants.
"""

# The loops stay loops rather than `all(<generator>)`: faster when interpreted, plain for mypyc.
# ruff: noqa: SIM110

from __future__ import annotations

from typing import Final

__all__ = ["is_im_record"]

_IM_VERSION: Final = "2.0.0"
_FUNCTION: Final = "function"
_ROLES: Final = frozenset(("system", "user", "assistant", "tool"))
_AGENT_TYPES: Final = frozenset(("main", "subagent"))
_META_INFO_STR_KEYS: Final = frozenset(
    (
        "teacher",
        "query_source",
        "response_generate_time",
        "response_update_time",
        "owner",
        "language",
        "category",
    )
)
_UNIQUE_INFO_DICT_KEYS: Final = frozenset(("_score", "_gen_params", "_usage", "_instance_metadata"))


def is_im_record(obj: object) -> bool:
    """True only if the strict pydantic IM schema accepts `obj` (False may be a false alarm)."""
    if type(obj) is not dict:
        return False
    found = 0  # exactly the four keys, all required; no extras at the top level
    for key, item in obj.items():
        if type(key) is not str:
            return False
        if key == "messages":
            if not _messages_ok(item):
                return False
        elif key == "tools":
            if item is not None and not _tools_ok(item):
                return False
        elif key == "meta_info":
            if not _meta_info_ok(item):
                return False
        elif key == "version":
            if type(item) is not str or item != _IM_VERSION:
                return False
        else:
            return False
        found += 1
    return found == 4


def _str_keys(mapping: dict[object, object]) -> bool:
    """Every key is an exact `str` (pydantic rejects any non-str key)."""
    for key in mapping:
        if type(key) is not str:
            return False
    return True


def _optional_str_dict_ok(value: object) -> bool:
    """`dict[str, Any] | None`: None, or a dict with str keys (values are not checked)."""
    return value is None or (type(value) is dict and _str_keys(value))


def _meta_info_ok(value: object) -> bool:
    if type(value) is not dict:
        return False
    found = 0  # 7 str fields + rounds + unique_info, all required
    for key, item in value.items():
        if type(key) is not str:
            return False
        if key in _META_INFO_STR_KEYS:
            if type(item) is not str:
                return False
            found += 1
        elif key == "rounds":
            if type(item) is not int or item < 0:
                return False
            found += 1
        elif key == "unique_info":
            if not _unique_info_ok(item):
                return False
            found += 1
    return found == 9


def _unique_info_ok(value: object) -> bool:
    if type(value) is not dict:
        return False
    found = 0  # _instance_id is the one required field
    for key, item in value.items():
        if type(key) is not str:
            return False
        if key == "_instance_id":
            if type(item) is not str:
                return False
            found += 1
        elif key == "_agent_type":  # may be absent, but not null
            if type(item) is not str or item not in _AGENT_TYPES:
                return False
        elif key in _UNIQUE_INFO_DICT_KEYS and not _optional_str_dict_ok(item):
            return False
    return found == 1


def _tools_ok(value: object) -> bool:
    if type(value) is not list:
        return False
    for tool in value:
        if not _tool_ok(tool):
            return False
    return True


def _tool_ok(value: object) -> bool:
    if type(value) is not dict:
        return False
    found = 0  # type, function
    for key, item in value.items():
        if type(key) is not str:
            return False
        if key == "type":
            if type(item) is not str or item != _FUNCTION:
                return False
            found += 1
        elif key == "function":
            if not _function_spec_ok(item):
                return False
            found += 1
    return found == 2


def _function_spec_ok(value: object) -> bool:
    if type(value) is not dict:
        return False
    found = 0  # name
    for key, item in value.items():
        if type(key) is not str:
            return False
        if key == "name":
            if type(item) is not str:
                return False
            found += 1
        elif key == "description":
            if item is not None and type(item) is not str:
                return False
        elif key == "parameters" and not _optional_str_dict_ok(item):
            return False
    return found == 1


def _messages_ok(value: object) -> bool:
    if type(value) is not list:
        return False
    for message in value:
        if not _message_ok(message):
            return False
    return True


def _message_ok(value: object) -> bool:
    if type(value) is not dict:
        return False
    found = 0  # role, content
    for key, item in value.items():
        if type(key) is not str:
            return False
        if key == "role":
            if type(item) is not str or item not in _ROLES:
                return False
            found += 1
        elif key == "content":
            if type(item) is not str:
                return False
            found += 1
        elif key in ("reasoning_content", "tool_call_id", "name"):
            if item is not None and type(item) is not str:
                return False
        elif key == "tool_calls" and item is not None and not _tool_calls_ok(item):
            return False
    return found == 2


def _tool_calls_ok(value: object) -> bool:
    if type(value) is not list:
        return False
    for call in value:
        if not _tool_call_ok(call):
            return False
    return True


def _tool_call_ok(value: object) -> bool:
    if type(value) is not dict:
        return False
    found = 0  # id, type, function
    for key, item in value.items():
        if type(key) is not str:
            return False
        if key == "id":
            if type(item) is not str:
                return False
            found += 1
        elif key == "type":
            if type(item) is not str or item != _FUNCTION:
                return False
            found += 1
        elif key == "function":
            if not _function_call_ok(item):
                return False
            found += 1
    return found == 3


def _function_call_ok(value: object) -> bool:
    if type(value) is not dict:
        return False
    found = 0  # name, arguments
    for key, item in value.items():
        if type(key) is not str:
            return False
        if key in ("name", "arguments"):
            if type(item) is not str:
                return False
            found += 1
    return found == 2
