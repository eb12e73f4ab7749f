"""Files a shell command writes, found by patterns as the reference does (TQS V2 §7, §14.16).

This is deliberately a scanner, not a shell parser: heredoc bodies are scanned too, quotes
are not understood, and a few well-known quirks (pinned by the reference cases) follow.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

_TARGET = r"([^\s;|&<>]+)"
_FILES = r"((?:[ \t]+[^\s;|&<>]+(?=\s|$))*)"
_SCRIPT = r"['\"s/]\S*"

# Patterns whose single group is one target.
_SINGLE_TARGET = [
    re.compile(rf"\bcat\s*>>?\s*{_TARGET}"),
    re.compile(rf"\bcat\s+\S*\s+>>?\s*{_TARGET}"),
    re.compile(rf"\b(?:echo|printf)\s[^>\n]*?>>?\s*{_TARGET}"),
    re.compile(rf"\btee\s+(?:-\S+\s+)*{_TARGET}"),
    re.compile(rf"(?:^|[;&|]\s*)patch\s+{_TARGET}", re.MULTILINE),
]
# Patterns whose single group is a run of whitespace-separated targets.
_MULTI_TARGET = [
    re.compile(rf"\bg?sed\s+-i\S*\s+(?:-e\s+)?{_SCRIPT}{_FILES}", re.MULTILINE),
    re.compile(rf"\bperl\s+-i\S*\s+(?:-\w+\s+)*{_SCRIPT}{_FILES}", re.MULTILINE),
]
_HINTS = ("cat", "echo", "printf", "tee", "patch", "sed", "perl")
_SYSTEM_PREFIXES = ("/dev/", "/proc/", "/sys/")
_META_TOKENS = frozenset({"EOF", "-"})
_WORKSPACE_PREFIXES = ("/workspace/", "/testbed/", "/repo/", "/home/swe-bench/")


def _keep(target: str) -> bool:
    if not target or target in _META_TOKENS or target.startswith("&"):
        return False
    return not target.startswith(_SYSTEM_PREFIXES) and target not in ("/dev", "/proc", "/sys")


@lru_cache(maxsize=4096)
def shell_write_targets(command: str) -> tuple[str, ...]:
    """Every file the command writes, once per write form that matched (order of patterns)."""
    if not any(hint in command for hint in _HINTS):
        return ()
    targets: list[str] = []
    for pattern in _SINGLE_TARGET:
        targets.extend(m.group(1) for m in pattern.finditer(command))
    for pattern in _MULTI_TARGET:
        for match in pattern.finditer(command):
            targets.extend(match.group(1).split())
    return tuple(t for t in targets if _keep(t))


@lru_cache(maxsize=16384)
def normalise_path(path: str) -> str:
    """Strip a sandbox prefix and normalise, so the same file compares equal."""
    for prefix in _WORKSPACE_PREFIXES:
        if path.startswith(prefix):
            path = path[len(prefix) :]
            break
    return posixpath.normpath(path) if path else path
