"""Tool names: canonicalisation, scaffold detection, and what a call does (TQS V2 §1, §2)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

KNOWN_NAMES = frozenset(
    "bash terminal execute_bash file_editor str_replace_editor edit write multiedit "
    "notebookedit patch finish think task_tracker".split()
)
OPENHANDS_SDK_NAMES = frozenset("terminal file_editor task_tracker finish think".split())
CLAUDE_CODE_NAMES = frozenset(
    "bash read edit write glob grep task webfetch websearch notebookedit todowrite taskoutput "
    "taskstop askuserquestion skill enterplanmode exitplanmode enterworktree".split()
)
EXECUTION_NAMES = frozenset(
    "bash terminal execute_bash shell cmd execute_ipython_cell run_ipython ipython python "
    "run_python".split()
)
EDITOR_NAMES = frozenset({"file_editor", "str_replace_editor"})
EDITOR_WRITE_COMMANDS = frozenset({"str_replace", "create", "insert"})
EDITOR_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit"})
PURE_EDIT_NAMES = frozenset({"edit", "write", "multiedit", "notebookedit", "patch"})
EDITOR_ONLY_KEYS = frozenset({"old_str", "new_str", "file_text", "view_range", "insert_line"})
NON_EXEC_KEYS = frozenset({"task_list", "thought", "task_completed"})
_NOT_EXECUTION_KEYS = EDITOR_ONLY_KEYS | NON_EXEC_KEYS
COMMAND_KEYS = ("command", "cmd", "keystrokes")
# What a call runs: a shell command, or an IPython-style tool's code (`!pytest -q` in it is a
# formal test run to the reference, as in a shell).
SHELL_TEXT_KEYS = (*COMMAND_KEYS, "code")
PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "notebookPath")


@lru_cache(maxsize=1024)
def canonical_name_by_parameters(params: tuple[str, ...]) -> str | None:
    """The OpenHands-style role of an unknown tool, read from its declared parameters."""
    names = set(params)
    if "task_completed" in names:
        return "finish"
    if "thought" in names and not names & {"command", "path"}:
        return "think"
    if "task_list" in names:
        return "task_tracker"
    if names & EDITOR_ONLY_KEYS:
        return "str_replace_editor"
    if "command" in names and names & {"is_input", "timeout"}:
        return "execute_bash"
    if "command" in names and "path" in names:
        return "str_replace_editor"
    return None


def canonical_tool_names(tools: Any) -> dict[str, str]:
    """Map each declared tool name to its canonical lower-case name."""
    mapping: dict[str, str] = {}
    if not isinstance(tools, list):
        return mapping
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            continue
        name = function.get("name")
        if not isinstance(name, str) or not name:
            continue
        lowered = name.lower()
        canonical = lowered
        if lowered not in KNOWN_NAMES:
            parameters = function.get("parameters")
            properties = parameters.get("properties") if isinstance(parameters, dict) else None
            if isinstance(properties, dict):
                canonical = canonical_name_by_parameters(tuple(properties)) or lowered
        mapping[name] = canonical
    return mapping


def detect_scaffold(canonical_names: Sequence[str], system_prompt: str) -> str:
    """Which agent scaffold produced the record, from its (canonicalised) tool names."""
    if not canonical_names:
        return "terminus2"
    if all(name in OPENHANDS_SDK_NAMES for name in canonical_names):
        return "openhands_sdk"
    if any(name in CLAUDE_CODE_NAMES for name in canonical_names):
        head = system_prompt[:500].lower()
        return "claudecode" if "claude code" in head or "anthropic" in head else "opencode"
    return "openhands"


def is_execution_call(name: str, args: dict[str, Any]) -> bool:
    """Whether a call runs code, decided by its arguments first and its name last."""
    subcommand = args.get("command")
    if isinstance(subcommand, str) and subcommand in EDITOR_COMMANDS:
        return False
    if not _NOT_EXECUTION_KEYS.isdisjoint(args):
        return False
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return True
    return name in EXECUTION_NAMES


def shell_text(args: dict[str, Any]) -> str:
    for key in SHELL_TEXT_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def declared_path(args: dict[str, Any]) -> str | None:
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _subcommand(args: dict[str, Any]) -> str:
    value = args.get("command")
    return value if isinstance(value, str) else ""


def is_editor_write(name: str, args: dict[str, Any]) -> bool:
    if name in PURE_EDIT_NAMES:
        return True
    return name in EDITOR_NAMES and _subcommand(args) in EDITOR_WRITE_COMMANDS


_KIND_BY_NAME = {
    "think": "think",
    "finish": "submit",
    "grep": "search",
    "glob": "search",
    "find": "search",
    "search": "search",
    "websearch": "search",
    "read": "read",
    "webfetch": "read",
    "view": "read",
    "edit": "write",
    "write": "write",
    "multiedit": "write",
    "notebookedit": "write",
    "patch": "write",
}


ACTION_KINDS = ("think", "submit", "bash", "search", "read", "write", "other")


def action_kind(name: str, args: dict[str, Any], by_arguments: bool = True) -> str:
    """think / submit / bash / search / read / write / other, for IAC, PED and TTE.

    A renamed tool that runs a command (`run_command {cmd}`) is `bash`, as the reference
    types it; a Terminus-2 command (`by_arguments` False) is typed by its first word alone.
    """
    if name in EDITOR_NAMES:
        return "write" if _subcommand(args) in EDITOR_WRITE_COMMANDS else "read"
    kind = _KIND_BY_NAME.get(name)
    if kind:
        return kind
    if name in EXECUTION_NAMES or (by_arguments and is_execution_call(name, args)):
        return "bash"
    return "other"
