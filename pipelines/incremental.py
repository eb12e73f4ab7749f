"""`--skip-unchanged`: what a run over a growing corpus has to curate again.

Each input is listed once (local: a walk that follows no link; object store: one
`FileSystems.match(prefix/**)`), giving every file's path, size and modification time. From
that listing:

- the **run signature** hashes the options, the scorer version and every file of every
  input: when it equals the last run's and every published file still matches its manifest,
  there is nothing to do;
- when the inputs are Harbor jobs (a job, a trial, or a prefix of jobs), each job gets a
  **job signature** (its options, its source path, and its own files). A job whose signature
  equals the one in its folder's manifest, and whose files still match that manifest, is
  kept as it is; the others (new, changed, damaged, or curated with other options) are
  curated again, and only they are given to the pipeline.

Nothing here reads a trajectory: the signatures are computed only when `--skip-unchanged`
asks for them. Inputs that are not Harbor jobs (standalone files, IM JSONL) cannot be split
by job, so any change there means a full run (and the plan says why).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pipelines.config import RunConfig
from scorers.tqs_v2 import SCORER_NAME, SCORER_VERSION
from transforms.readers.confined import ReadLimits
from transforms.readers.discover import expand_globs
from transforms.readers.harbor_layout import child_folders, is_job, is_trial, job_name
from transforms.readers.remote import Listing, find_remote_trials, is_remote
from transforms.sinks.names import safe_job_name

# Options that change how a run behaves, not what it writes.
_NOT_IN_SIGNATURE = frozenset({"beam_args", "skip_unchanged", "progress", "report", "read_ahead"})


@dataclass(frozen=True, slots=True)
class InputFile:
    """One file of an input: its path below the input root ('/'-separated), size, mtime;
    or a local folder (its path ends in '/'; size and mtime 0: its files speak for it)."""

    path: str
    size: int
    mtime: float


@dataclass(slots=True)
class JobPlan:
    """One output job folder: the job's name, the inputs it is read from, its signature."""

    folder: str
    job: str
    sources: list[str] = field(default_factory=list)
    signature: str = ""


@dataclass(slots=True)
class Plan:
    """What `--skip-unchanged` knows before a run: the run signature and, when the inputs
    are Harbor jobs, each job's plan by folder (else None and `why_not` says why)."""

    signature: str
    jobs: dict[str, JobPlan] | None
    why_not: str | None = None


def plan_inputs(config: RunConfig, version: str) -> Plan:
    """List every input once and sign the run and (when they are Harbor jobs) each job."""
    options = _options_header(config, version)
    run = hashlib.sha256(options)
    roots = _roots(config.inputs)
    jobs: dict[str, JobPlan] | None = {}
    why_not: str | None = None
    for root in roots:
        files = list_input(root)
        run.update(f"{root}\n".encode())
        _sign_files(run, files)
        if jobs is None:
            continue
        found = _jobs_of(root, files, config.read_limits())
        if isinstance(found, str):
            jobs, why_not = None, found
            continue
        for prefix, name in found:
            _add_job(jobs, name, _source(root, prefix), _below(files, prefix), options)
    return Plan(run.hexdigest(), jobs, why_not)


def _options_header(config: RunConfig, version: str) -> bytes:
    options = {
        k: v
        for k, v in config.public().items()
        if k not in _NOT_IN_SIGNATURE and k not in ("inputs", "output")
    }
    scorer = f"{SCORER_NAME}/{SCORER_VERSION}/{version}\n"
    return orjson.dumps(options, option=orjson.OPT_SORT_KEYS) + scorer.encode()


def _roots(inputs: Iterable[str]) -> list[str]:
    """Each input as it is read: a local glob becomes its matches; a prefix loses its '/'."""
    roots: list[str] = []
    for given in sorted(inputs):
        if is_remote(given):
            roots.append(given.rstrip("/"))
        else:
            roots.extend(str(p) for p in expand_globs([Path(given)]))
    return roots


def _sign_files(digest: Any, files: Iterable[InputFile]) -> None:
    for f in files:
        digest.update(f"{f.path}\0{f.size}\0{f.mtime!r}\n".encode())


def list_input(root: str) -> list[InputFile]:
    """Every file under `root` (or `root` itself when it is a file), sorted by path."""
    return sorted(_remote_files(root) if is_remote(root) else _local_files(root), key=_path_of)


def _path_of(f: InputFile) -> str:
    return f.path


def _local_files(root: str) -> list[InputFile]:
    try:
        top = os.lstat(root)
    except OSError:
        return []
    if not os.path.isdir(root):
        return [InputFile("", top.st_size, top.st_mtime_ns)]
    files: list[InputFile] = []
    for folder, dirs, names in os.walk(root):  # links to folders are not entered
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        # Every folder of a job is a trial unit, an empty one too: folders are listed.
        files.extend(InputFile(f"{prefix}{name}/", 0, 0) for name in dirs)
        for name in names:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            files.append(InputFile(prefix + name, st.st_size, st.st_mtime_ns))
    return files


def _remote_files(root: str) -> list[InputFile]:
    from apache_beam.io.filesystems import FileSystems

    files = []
    for m in FileSystems.match([root + "/**"])[0].metadata_list:
        key = m.path[len(root) + 1 :] if m.path.startswith(root + "/") else ""
        if key and not key.endswith("/"):
            files.append(InputFile(key, int(m.size_in_bytes), float(m.last_updated_in_seconds)))
    return files


def _jobs_of(root: str, files: list[InputFile], limits: ReadLimits) -> list[tuple[str, str]] | str:
    """(prefix below `root`, job name) of each job the input is made of, or why it cannot be
    split by job."""
    if is_remote(root):
        return _remote_jobs(root, files, limits)
    path = Path(root)
    if not path.is_dir():
        return f"{root} is a file, not a Harbor job"
    if is_trial(path, limits):
        return [("", job_name(path.parent, limits))]
    if is_job(path, limits):
        return [("", job_name(path, limits))]
    found: list[tuple[str, str]] = []
    for child, refusal in child_folders(path, "the input"):
        if refusal is not None:
            return refusal
        if is_job(child, limits):
            found.append((child.name, job_name(child, limits)))
    return found or f"{root} holds no Harbor job"


def _remote_jobs(
    root: str, files: list[InputFile], limits: ReadLimits
) -> list[tuple[str, str]] | str:
    listing = Listing(root, {f.path: f.size for f in files})
    found: dict[str, str] = {}
    for trial in find_remote_trials(listing, limits):
        if trial.job is None:
            return f"{root} is a trial without its job"
        parent = posixpath.dirname(trial.url)
        found[parent[len(root) + 1 :] if parent.startswith(root + "/") else ""] = trial.job
    return sorted(found.items()) or f"{root} holds no Harbor job"


def _source(root: str, prefix: str) -> str:
    if not prefix:
        return root
    return f"{root}/{prefix}" if is_remote(root) else str(Path(root) / prefix)


def _below(files: list[InputFile], prefix: str) -> list[InputFile]:
    if not prefix:
        return files
    head = prefix + "/"
    return [
        InputFile(f.path[len(head) :], f.size, f.mtime) for f in files if f.path.startswith(head)
    ]


def _add_job(
    jobs: dict[str, JobPlan], name: str, source: str, files: list[InputFile], options: bytes
) -> None:
    """Add a job's source; two sources of one job folder (the same job name) sign together."""
    folder = safe_job_name(name)
    plan = jobs.setdefault(folder, JobPlan(folder, name))
    digest = hashlib.sha256(options)
    digest.update(plan.signature.encode())
    digest.update(f"{source}\n".encode())
    _sign_files(digest, files)
    plan.sources.append(source)
    plan.signature = digest.hexdigest()


def kept_jobs(jobs: dict[str, JobPlan], output: str) -> dict[str, dict[str, Any]]:
    """The jobs whose folder in `output` can stand (folder -> its manifest): signed as now,
    with the stats state an incremental run merges, and every file matching the manifest."""
    from apache_beam.io.filesystems import FileSystems

    from pipelines.manifest import read_manifest
    from pipelines.output_folder import verify_outputs

    kept: dict[str, dict[str, Any]] = {}
    for folder, job in sorted(jobs.items()):
        where = FileSystems.join(output, folder)
        manifest = read_manifest(where)
        if (
            manifest.get("input_signature") == job.signature
            and manifest.get("job_folder") == folder
            and "stats_state" in manifest
            and verify_outputs(where) is None
        ):
            kept[folder] = manifest
    return kept
