"""The folder name of a job: a job name is data (a Harbor config.json's `job_name`), not a path.

`safe_job_name` returns a name that is always one plain path component on POSIX, Windows and
object stores: a safe name comes back unchanged, anything else is cleaned and tagged with `~`
and 8 hex characters of the SHA-256 of the original, so `../x`, `/abs/path`, `CON`, `report`
or a 300-character name can never write outside `--output`, over a run-level file or folder,
or onto another job's folder. `~` is never in a safe name, so a tagged folder can never be
some other job's literal name; two different unsafe names share a folder only on a 32-bit
hash collision, which the run detects (`counts_file_name`) and refuses in one line.
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "COUNTS_PATTERN",
    "MAX_LENGTH",
    "RUN_LEVEL_NAMES",
    "SAFE_CHARACTERS",
    "TAG",
    "WINDOWS_RESERVED",
    "counts_file_name",
    "is_safe_job_name",
    "safe_job_name",
]

MAX_LENGTH = 100
SAFE_CHARACTERS = "A-Za-z0-9._@+=-"
_SAFE = re.compile(f"[{SAFE_CHARACTERS}]+")
_UNSAFE_CHARACTER = re.compile(f"[^{SAFE_CHARACTERS}]")
_DOTS = re.compile(r"\.{2,}")
_HASH_CHARS = 8
TAG = "~"  # joins a cleaned unsafe name and its hash: never in a safe name

# Windows device names: reserved with any extension (`CON.txt`) and in any case.
WINDOWS_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"COM{i}" for i in range(10)] + [f"LPT{i}" for i in range(10)]
)
# What a run writes in DIR beside the job folders (files, the run log, `--report`'s folder):
# a job may not take these names, in any case.
RUN_LEVEL_NAMES = frozenset(
    [
        "manifest.json",
        "lf.stats.json",
        "llm_dry_run.json",
        "runs.jsonl",
        "report",
        "readme.md",
        "dataset_info.json",
    ]
)


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
    """The folder name for job `name`: unchanged when safe, else cleaned + `~` + 8 hex chars."""
    if is_safe_job_name(name):
        return name
    digest = _digest(name)[:_HASH_CHARS]
    cleaned = _DOTS.sub("_", _UNSAFE_CHARACTER.sub("_", name)).strip("._-")
    cleaned = cleaned[: MAX_LENGTH - _HASH_CHARS - 2] or "job"
    result = f"{cleaned}{TAG}{digest}"
    if result.split(".", 1)[0].upper() in WINDOWS_RESERVED:  # `CON.x` keeps its stem
        result = "_" + result
    return result


COUNTS_PATTERN = ".counts-*.json"


def counts_file_name(job: str | None) -> str:
    """The name of a job's staged counts file, unique per raw job name (64 bits of its hash):
    two raw names that reach one folder leave two counts files there, and the run stops
    instead of publishing one job's files as the other's."""
    return f".counts-{_digest(job or '')[:16]}.json"


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
