"""After the pipeline: complete each staged job folder, publish it with its manifest.

The pipeline writes the data files (the sidecar `scores.jsonl` among them) into a staging
folder and, per job, the counts it saw (`.counts.json`), the LF reshapes
(`.lf_reshapes.json`) and the mergeable stats (`.stats_state.json`). Here the driver adds
what only it knows — wall time, versions, the input signatures, the jobs an incremental run
kept — creates the empty files of a job that wrote nothing (so a job folder always has the
full set), registers the LF files in
`dataset_info.json`, checks that every bundle is accounted for (in = written + rejected +
dead-lettered), and publishes each job's files into `--output` together, manifest last
(`pipelines/output_folder.py`); then the run's files, among them the dataset card and the
merged `dataset_info.json` of every job (`pipelines/card_files.py`).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Any

import orjson
from apache_beam.io.filesystems import FileSystems

from pipelines.card_files import write_card_files
from pipelines.config import RunConfig
from pipelines.output_folder import OutputError, publish_job, publish_run_files, verify_outputs
from pipelines.run_pipeline import RESHAPES_FILE, STATS_STATE_FILE
from pipelines.terminal import escaped
from scorers.tqs_v2 import SCORER_NAME, SCORER_VERSION
from transforms.chain import accounting, fidelity_summary, pipeline_inputs
from transforms.report import SIDECAR
from transforms.sinks import layout
from transforms.sinks.beam_stats import MergeStats
from transforms.sinks.exports import export_names, export_section
from transforms.sinks.lf import dataset_info, rendered_dataset_info_entry
from transforms.sinks.names import COUNTS_PATTERN
from transforms.sinks.parquet_sink import json_names, parquet_names, write_empty
from transforms.sinks.split import (
    NO_SPLIT,
    TRAIN,
    VALIDATION,
    SplitSettings,
    split_counts,
    split_files,
)
from transforms.sinks.stats import Stats


def package_version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def read_manifest(folder: str) -> dict[str, Any]:
    """The manifest.json in `folder` (the run's, or a job's), or {} when there is none."""
    path = FileSystems.join(folder, "manifest.json")
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
    manifest = read_manifest(output)
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


def _job_folders(staging: str) -> dict[str, str]:
    """Each staged job folder and its counts file. Two counts files in one folder are two
    raw job names written into it (a hash collision, or a case-insensitive filesystem
    folding `Foo` onto `foo`): the run stops before anything is published."""
    pattern = FileSystems.join(staging, "*", COUNTS_PATTERN)
    found: dict[str, list[str]] = {}
    for match in FileSystems.match([pattern])[0].metadata_list:
        folder = layout.basename(match.path.rsplit("/", 1)[0])
        found.setdefault(folder, []).append(match.path)
    for folder, paths in sorted(found.items()):
        if len(paths) > 1:
            jobs = sorted(str(_read_json(path).get("job")) for path in paths)
            shown = ", ".join(repr(escaped(job)) for job in jobs)
            raise OutputError(
                f"jobs {shown} map to one output folder {escaped(folder)!r}; nothing was "
                "published: give one of them another job_name (config.json)"
            )
    return {folder: paths[0] for folder, paths in sorted(found.items())}


def _read_json(path: str) -> dict[str, Any]:
    value = orjson.loads(layout.read_bytes(path))
    return value if isinstance(value, dict) else {}


def _pop_json(path: str) -> dict[str, Any]:
    if not layout.exists(path):
        return {}
    value = _read_json(path)
    layout.delete([path])
    return value


def _complete(
    folder: str,
    num_shards: int,
    parquet: bool = False,
    split: SplitSettings = NO_SPLIT,
    exports: tuple[str, ...] = (),
) -> list[str]:
    """Create the files a job is owed but did not write; return every output file name."""
    names = [
        *json_names(num_shards, split),  # `--val-fraction`: the validation files too
        *export_names(exports, num_shards, split),  # `--messages-format`
        "rejects.jsonl",
        "dead_letter.jsonl",
        SIDECAR,  # a job none of whose trials reached scoring: an empty sidecar
    ]
    for name in names:  # an empty lf.json too is empty, not `[]` (`WriteShard`)
        path = f"{folder}/{name}"
        if not layout.exists(path):
            layout.write_bytes(path, b"")
    if not parquet:
        return names
    for name in parquet_names(num_shards, split):  # `--parquet`: a shard no record went to
        if not layout.exists(f"{folder}/{name}"):
            write_empty(folder, name)
    return [*names, *parquet_names(num_shards, split)]


@dataclass(slots=True)
class Increment:
    """What the driver knows of a run beyond its staging folder (`--skip-unchanged`): the
    run's input signature, each job folder's, and the jobs kept as the last run left them
    (folder -> their manifest)."""

    signature: str | None = None
    job_signatures: dict[str, str] = field(default_factory=dict)
    kept: dict[str, dict[str, Any]] = field(default_factory=dict)


def finalize(
    config: RunConfig,
    staging: str,
    wall_seconds: float | None,
    metrics: dict[str, int] | None = None,
    increment: Increment | None = None,
) -> dict[str, Any]:
    """Complete and publish every staged job folder, then the run files; return the manifests
    (`jobs` holds the jobs curated by this run and the jobs kept)."""
    increment = increment or Increment()
    common = {
        "trajcurate_version": package_version("trajcurate"),
        "beam_version": package_version("apache-beam"),
        "python": platform.python_version(),
        "scorer": {"name": SCORER_NAME, "version": SCORER_VERSION},
        "options": config.public(),
        "input_signature": increment.signature,
        "wall_seconds": None if wall_seconds is None else round(wall_seconds, 3),
    }
    jobs: dict[str, Any] = {}
    folders: dict[str, str] = {}
    for folder, counts_file in _job_folders(staging).items():
        signature = increment.job_signatures.get(folder, increment.signature)
        own = {**common, "input_signature": signature}
        job, manifest = _finish_job(config, staging, folder, counts_file, own)
        jobs[job] = publish_job(config.output, staging, folder, manifest)
        folders[job] = folder
    kept = {m["job"]: m for f, m in increment.kept.items() if f not in folders.values()}
    folders.update({job: m["job_folder"] for job, m in kept.items()})
    totals = _summed([*jobs.values(), *kept.values()])
    if kept:
        merged = _merged_stats([*jobs.values(), *kept.values()])
        _write_json(FileSystems.join(staging, "lf.stats.json"), merged)
    run = {
        **common,
        "jobs": sorted([*jobs, *kept]),
        "job_folders": dict(sorted(folders.items())),
        "curated_jobs": sorted(jobs),
        "kept_jobs": sorted(kept),
        "counts": dict(sorted(totals.items())),
        "accounting": _run_accounting(totals, _summed(list(jobs.values())), metrics),
        "fidelity": fidelity_summary(totals),
        "beam_metrics": metrics or {},
    }
    if metrics is None:
        run["beam_metrics_missing"] = NO_METRICS
    write_card_files(config, staging, run, {**kept, **jobs})  # README.md, dataset_info.json
    run = publish_run_files(config.output, staging, run)
    layout.delete([staging])
    return {"run": run, "jobs": jobs, "kept": kept}


def _summed(manifests: list[dict[str, Any]]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for manifest in manifests:
        for key, value in manifest["counts"].items():
            totals[key] = totals.get(key, 0) + value
    return totals


# Why a run's accounting has no `pipeline_in`: the runner (Dask; a template job's worker)
# reports no Beam metrics, so the jobs' `in` could not be checked against the counters.
NO_METRICS = "the runner reports no Beam metrics (the counts are the pipeline's own counts files)"


def _run_accounting(
    totals: dict[str, int], curated: dict[str, int], metrics: dict[str, int] | None
) -> dict[str, Any]:
    """The run's in = written + rejected + dead-lettered, and one more check: the jobs
    curated by this run count, between them, every input the pipeline's counters saw (a job
    whose counts were lost — two jobs in one folder — unbalances the run). With no metrics
    (None: the runner reports none) that check cannot be made, and the accounting says so
    rather than passing it."""
    result = accounting(totals)
    if metrics is None:
        result["pipeline_in"] = None
        result["pipeline_in_unchecked"] = NO_METRICS
        return result
    expected = pipeline_inputs(metrics)
    if expected is not None:
        result["pipeline_in"] = expected
        result["balanced"] = result["balanced"] and accounting(curated)["in"] == expected
    return result


def _finish_job(
    config: RunConfig, staging: str, folder: str, counts_file: str, common: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """Complete one staged job folder; its job name and manifest (not yet published)."""
    staged = FileSystems.join(staging, folder)
    counted = _pop_json(counts_file)
    job = counted["job"] if isinstance(counted.get("job"), str) else folder
    counts = counted.get("counts") or {}
    split = config.split_settings()
    exports = config.export_formats()
    reshapes, splits = split_counts(_pop_json(f"{staged}/{RESHAPES_FILE}"), split)
    reshapes, exported = export_section(reshapes, exports, config.num_shards, split)
    stats_state = _pop_json(f"{staged}/{STATS_STATE_FILE}") or None
    layout.delete([f"{staged}/{layout.PARTS}"])
    files = _complete(staged, config.num_shards, config.parquet, split, exports)
    info = _dataset_info(config, split_files(layout.LF, config.num_shards, split, TRAIN), job)
    if split.active:  # the validation files: their own LLaMA-Factory dataset, `<job>_val`
        val_files = split_files(layout.LF, config.num_shards, split, VALIDATION)
        info.update(_dataset_info(config, val_files, f"{job}_val"))
    _write_json(f"{staged}/dataset_info.json", info)
    extra = {"split": splits} if split.active else {}
    return job, {
        **common,
        "job": job,
        "job_folder": folder,
        "counts": counts,
        "accounting": accounting(counts),
        "fidelity": fidelity_summary(counts),
        "lf_reshapes": reshapes,
        **({"exports": exported} if exports else {}),
        **extra,
        "outputs": sorted([*files, "dataset_info.json", "lf.stats.json"]),
        "stats_state": stats_state,
    }


def _merged_stats(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's `lf.stats.json` from its jobs' states, merged by the pipeline's own
    combiner (a job without a state wrote nothing and adds nothing)."""
    combine = MergeStats()
    merged = combine.create_accumulator()
    for manifest in sorted(manifests, key=lambda m: str(m["job"])):
        if isinstance(state := manifest.get("stats_state"), dict):
            merged = combine.add_input(merged, Stats.from_state(state))
    return combine.extract_output(merged)


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
