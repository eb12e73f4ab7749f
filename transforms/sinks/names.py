"""The folder name of a job: a job name is data (a Harbor config.json's `job_name`), not a path.

`safe_job_name` returns a name that is always one plain path component on POSIX, Windows and
object stores: a safe name comes back unchanged, anything else is cleaned and tagged with 8 hex
characters of the SHA-256 of the original, so `../x`, `/abs/path`, `CON` or a 300-character
name can never write outside `--output`, over a run-level file, or onto another job's folder
(two different unsafe names share a folder only on a 32-bit hash collision).
"""

from __future__ import annotations

import hashlib
import re

MAX_LENGTH = 100
SAFE_CHARACTERS = "A-Za-z0-9._@+=-"
_SAFE = re.compile(f"[{SAFE_CHARACTERS}]+")
_UNSAFE_CHARACTER = re.compile(f"[^{SAFE_CHARACTERS}]")
_DOTS = re.compile(r"\.{2,}")
_HASH_CHARS = 8

# Windows device names: reserved with any extension (`CON.txt`) and in any case.
WINDOWS_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"COM{i}" for i in range(10)] + [f"LPT{i}" for i in range(10)]
)
# What a run writes in DIR beside the job folders: a job may not take these names.
RUN_LEVEL_NAMES = frozenset(["manifest.json", "lf.stats.json", "llm_dry_run.json"])


def is_safe_job_name(name: str) -> bool:
    """True if `name` can be used as a job folder name as it is."""
    return (
        0 < len(name) <= MAX_LENGTH
        and _SAFE.fullmatch(name) is not None
        and name[0] not in ".-"
        and not name.endswith(".")
        and ".." not in name
        and name.split(".", 1)[0].upper() not in WINDOWS_RESERVED
        and name.lower() not in RUN_LEVEL_NAMES
        and not name.lower().endswith(".partial")  # cleaned away as a stale temporary
    )


def safe_job_name(name: str) -> str:
    """The folder name for job `name`: unchanged when safe, else cleaned + `-` + 8 hex chars."""
    if is_safe_job_name(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    cleaned = _DOTS.sub("_", _UNSAFE_CHARACTER.sub("_", name)).strip("._-")
    cleaned = cleaned[: MAX_LENGTH - _HASH_CHARS - 2] or "job"
    result = f"{cleaned}-{digest}"
    if result.split(".", 1)[0].upper() in WINDOWS_RESERVED:  # `CON.x` keeps its stem
        result = "_" + result
    return result
