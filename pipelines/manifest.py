"""After the pipeline: complete each staged job folder, publish it with its manifest.

The pipeline writes the data files into a staging folder and, per job, the counts it saw
(`.counts.json`) and the LF reshapes (`.lf_reshapes.json`). Here the driver adds what only
it knows — wall time, versions, the input signature — creates the empty files of a job that
wrote nothing (so a job folder always has the full set), registers the LF files in
`dataset_info.json`, checks that every bundle is accounted for (in = written + rejected +
dead-lettered), and publishes each job's files into `--output` together, manifest last
(`pipelines/output_folder.py`).
"""

from __future__ import annotations

import hashlib
import os
import platform
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from apache_beam.io.filesystems import FileSystems

from pipelines.config import RunConfig
from pipelines.output_folder import publish_job, publish_run_files, verify_outputs
from pipelines.run_pipeline import COUNTS_FILE, RESHAPES_FILE
from scorers.tqs_v2 import SCORER_NAME, SCORER_VERSION
from transforms.chain import accounting
from transforms.readers.discover import expand_globs
from transforms.readers.remote import is_remote
from transforms.sinks import layout
from transforms.sinks.lf import dataset_info
from transforms.sinks.lf_render import rendered_dataset_info_entry


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


# Options that change how a run behaves, not what it writes.
_NOT_IN_SIGNATURE = frozenset({"beam_args", "skip_unchanged", "progress"})


def input_signature(config: RunConfig) -> str:
    """A hash of every input file (path, size, mtime), the options and the scorer version."""
    digest = hashlib.sha256()
    digest.update(
        orjson.dumps(
            {k: v for k, v in config.public().items() if k not in _NOT_IN_SIGNATURE},
            option=orjson.OPT_SORT_KEYS,
        )
    )
    digest.update(f"{SCORER_NAME}/{SCORER_VERSION}/{_version('trajcurate')}".encode())
    for given in config.inputs:
        if is_remote(given):
            listing = FileSystems.match([given.rstrip("/") + "/**"])[0].metadata_list
            for m in sorted(listing, key=lambda m: m.path):
                digest.update(
                    f"{m.path}\0{m.size_in_bytes}\0{m.last_updated_in_seconds}\n".encode()
                )
    local = (Path(p) for p in config.inputs if not is_remote(p))
    for path in sorted(_files(expand_globs(local))):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            for root, _dirs, names in os.walk(path):
                yield from (Path(root) / name for name in names)
        else:
            yield path


def _previous_manifest(output: str) -> dict[str, Any]:
    path = FileSystems.join(output, "manifest.json")
    if not layout.exists(path):
        return {}
    try:
        manifest = orjson.loads(layout.read_bytes(path))
    except orjson.JSONDecodeError:
        return {}
    return manifest if isinstance(manifest, dict) else {}


def unchanged_since_last_run(output: str, signature: str) -> str | None:
    """Why the last run's outputs can stand (None if they cannot): same inputs, options and
    scorer, and every file it published still matches its manifest (size and sha256)."""
    manifest = _previous_manifest(output)
    if manifest.get("input_signature") != signature:
        return None
    folders = manifest.get("job_folders")
    if not isinstance(folders, dict):
        return None
    for where in ["", *sorted(str(f) for f in folders.values())]:
        folder = FileSystems.join(output, where) if where else output
        if verify_outputs(folder) is not None:
            return None
    return f"inputs, options and scorer unchanged, {len(folders)} job folder(s) verified"


def _job_folders(staging: str) -> list[str]:
    pattern = FileSystems.join(staging, "*", COUNTS_FILE)
    matches = FileSystems.match([pattern])[0].metadata_list
    return sorted(layout.basename(m.path.rsplit("/", 1)[0]) for m in matches)


def _pop_json(path: str) -> dict[str, Any]:
    if not layout.exists(path):
        return {}
    value = orjson.loads(layout.read_bytes(path))
    layout.delete([path])
    return value if isinstance(value, dict) else {}


def _complete(folder: str, num_shards: int) -> list[str]:
    """Create the files a job is owed but did not write; return every output file name."""
    names = [
        *layout.shard_names(layout.IM, num_shards),
        *layout.shard_names(layout.LF, num_shards),
        "rejects.jsonl",
        "dead_letter.jsonl",
    ]
    for name in names:
        path = f"{folder}/{name}"
        if not layout.exists(path):
            empty = layout.json_array([]) if name.endswith(".json") else b""
            layout.write_bytes(path, empty)
    return names


def finalize(
    config: RunConfig,
    staging: str,
    signature: str,
    wall_seconds: float,
    metrics: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Complete and publish every staged job folder, then the run files; return the manifests."""
    common = {
        "trajcurate_version": _version("trajcurate"),
        "beam_version": _version("apache-beam"),
        "python": platform.python_version(),
        "scorer": {"name": SCORER_NAME, "version": SCORER_VERSION},
        "options": config.public(),
        "input_signature": signature,
        "wall_seconds": round(wall_seconds, 3),
    }
    jobs: dict[str, Any] = {}
    folders: dict[str, str] = {}
    for folder in _job_folders(staging):
        staged = FileSystems.join(staging, folder)
        counted = _pop_json(f"{staged}/{COUNTS_FILE}")
        job = counted["job"] if isinstance(counted.get("job"), str) else folder
        counts = counted.get("counts") or {}
        reshapes = _pop_json(f"{staged}/{RESHAPES_FILE}")
        layout.delete([f"{staged}/{layout.PARTS}"])
        files = _complete(staged, config.num_shards)
        lf_files = layout.shard_names(layout.LF, config.num_shards)
        _write_json(f"{staged}/dataset_info.json", _dataset_info(config, lf_files, job))
        manifest = {
            **common,
            "job": job,
            "job_folder": folder,
            "counts": counts,
            "accounting": accounting(counts),
            "lf_reshapes": reshapes,
            "outputs": sorted([*files, "dataset_info.json", "lf.stats.json"]),
        }
        jobs[job] = publish_job(config.output, staging, folder, manifest)
        folders[job] = folder
    totals: dict[str, int] = {}
    for manifest in jobs.values():
        for key, value in manifest["counts"].items():
            totals[key] = totals.get(key, 0) + value
    run = {
        **common,
        "jobs": sorted(jobs),
        "job_folders": folders,
        "counts": dict(sorted(totals.items())),
        "accounting": accounting(totals),
        "beam_metrics": metrics or {},
    }
    run = publish_run_files(config.output, staging, run)
    layout.delete([staging])
    return {"run": run, "jobs": jobs}


def _dataset_info(config: RunConfig, lf_files: list[str], job: str) -> dict[str, Any]:
    """LLaMA-Factory registration: sharegpt, or plain text when rendered by a chat template."""
    if not config.chat_template_tokenizer:
        return dataset_info(lf_files, job)
    if len(lf_files) == 1:
        return {job: rendered_dataset_info_entry(lf_files[0])}
    return {f"{job}_{i:05d}": rendered_dataset_info_entry(f) for i, f in enumerate(lf_files)}


def _write_json(path: str, value: Any) -> None:
    layout.write_bytes(
        path, orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
    )
