"""Running `trajcurate` in a child process the way the fuzz suites need it, and snapshots
of a folder to tell what a run changed.

`run_cli` starts `python -m pipelines.cli` in its own session with an address-space cap (a
runaway read ends in MemoryError instead of taking the machine), kills only that group on
timeout, and gives (exit status or None on timeout, stdout, stderr). `watched_run` adds what
changed on disk around the run. `folder_state` maps every path under a folder (links not
followed) to its type and, for files, size, mtime and link count, for symlinks their target.
"""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
MEMORY_LIMIT = 6 * 2**30  # address space of each trajcurate process


def _limit_memory() -> None:  # runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_cli(args: tuple[str, ...], cwd: Path, timeout: float) -> tuple[int | None, str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO_ROOT), env.get("PYTHONPATH"))))
    process = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_limit_memory,
    )
    try:
        out, err = process.communicate(timeout=timeout)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the group this test started, nothing else
        out, err = process.communicate()
        returncode = None
    return returncode, out.decode(errors="replace"), err.decode(errors="replace")


def folder_state(folder: Path) -> dict[str, tuple[Any, ...]]:
    state: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in (*dirnames, *filenames):
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            kind = stat.S_IFMT(info.st_mode)
            if stat.S_ISDIR(info.st_mode):
                state[path] = (kind,)
            elif stat.S_ISLNK(info.st_mode):
                state[path] = (kind, os.readlink(path))
            else:
                state[path] = (kind, info.st_size, info.st_mtime_ns, info.st_nlink)
    return state


@dataclass(frozen=True)
class WatchedRun:
    """One `trajcurate` process and what changed on disk around it."""

    argv: tuple[str, ...]
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float
    changed: tuple[str, ...]  # paths under the watched root, outside `allowed`, that changed
    parent_added: tuple[str, ...]  # new entries beside the watched root
    root_added: tuple[str, ...]  # new entries in /


def watched_run(
    args: tuple[str, ...], cwd: Path, root: Path, allowed: Path, timeout: float
) -> WatchedRun:
    """`run_cli`, with the state of `root` (and of / and root's parent) taken before and
    after: what changed outside `allowed` is listed."""
    root_before, parent_before = set(os.listdir("/")), set(os.listdir(root.parent))
    before = folder_state(root)
    started = time.monotonic()
    returncode, stdout, stderr = run_cli(args, cwd, timeout)
    seconds = time.monotonic() - started
    after = folder_state(root)
    inside = str(allowed) + os.sep
    changed = sorted(
        path
        for path in before.keys() | after.keys()
        if before.get(path) != after.get(path) and path != str(allowed)
        if not path.startswith(inside)
    )
    return WatchedRun(
        argv=args,
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        seconds=seconds,
        changed=tuple(changed),
        parent_added=tuple(sorted(set(os.listdir(root.parent)) - parent_before)),
        root_added=tuple(sorted(set(os.listdir("/")) - root_before)),
    )


SHOW = 15  # items a failure message lists


def tail(text: str, lines: int = 30) -> str:
    """The last lines of a process's output, for a failure message."""
    return "\n".join(text.splitlines()[-lines:])


def listing(title: str, items: Iterable[str]) -> str:
    """`title (n):` and the first `SHOW` items, one per line, for a failure message."""
    items = list(items)
    shown = "\n  ".join(items[:SHOW])
    more = f"\n  ... and {len(items) - SHOW} more" if len(items) > SHOW else ""
    return f"{title} ({len(items)}):\n  {shown}{more}"
