"""The task instruction of a Harbor trial, for logs that never echo the prompt.

Harbor's result.json does not hold the instruction, but an installed agent's run command
does: Harbor logs each command it runs in `agent/command-<n>/command.txt`, and the agent's
command line carries the instruction as one shell-quoted argument (`opencode ... run
--format=json '<instruction>'`, `claude ... -p '<instruction>'`). The instruction is taken
as the longest argument that holds whitespace, of the last command that has one (setup
commands come first); a `bash -c '<script>'` wrapper is looked into. None when no command
file is there or none parses.
"""

from __future__ import annotations

import os
import re
import shlex

from transforms.readers.bundle import ReaderError
from transforms.readers.confined import FileMissing, TrialFiles

__all__ = ["COMMAND_FILE", "task_instruction"]

COMMAND_FILE = "command.txt"
_COMMAND_DIR = re.compile(r"command-(\d+)\Z")
_SHELL_FLAGS = frozenset({"-c", "-lc", "-ic", "-lic"})
_MAX_DEPTH = 3


def task_instruction(
    files: TrialFiles, agent_dir: str | os.PathLike[str]
) -> tuple[str, str] | None:
    """(instruction, the command file it came from, relative to the trial), or None."""
    folder_of = os.fspath(agent_dir)
    # `files.glob(agent_dir, "command-*", dirs=True)`: the names matched before any probe
    folders = [
        os.path.join(folder_of, name)
        for name in files.list_names(folder_of)
        if name.startswith("command-") and files.is_dir(os.path.join(folder_of, name))
    ]
    folders = [folder for folder in folders if _number(folder) >= 0]
    for folder in sorted(folders, key=_number, reverse=True):
        path = os.path.join(folder, COMMAND_FILE)
        try:
            command = files.read_text(path)
        except (FileMissing, ReaderError):
            continue
        found = _longest_text_argument(command, 0)
        if found:
            name = os.path.basename(folder_of)
            return found, f"{name}/{os.path.basename(folder)}/{COMMAND_FILE}"
    return None


def _number(folder: str) -> int:
    match = _COMMAND_DIR.match(os.path.basename(folder))
    return int(match.group(1)) if match else -1


def _longest_text_argument(command: str, depth: int) -> str | None:
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    candidates = []
    for before, token in zip(["", *tokens], tokens, strict=False):
        if before in _SHELL_FLAGS and depth < _MAX_DEPTH:
            inner = _longest_text_argument(token, depth + 1)
            if inner:
                candidates.append(inner)
        elif not token.startswith("-") and any(c.isspace() for c in token.strip()):
            candidates.append(token)
    return max(candidates, key=len) if candidates else None
