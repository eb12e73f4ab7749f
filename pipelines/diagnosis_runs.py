"""The runs of a result set, diagnosed: what `trajcurate gate` and `compare` read.

A result set is a run's output folder (`<job>/im.jsonl`, or its shards `im-*-of-*.jsonl`), a
folder of IM files, or IM files. Records are read as bundles by the IM reader (lines grouped
by `_instance_id`: trajcurate writes instances contiguously); a record that has no
`_diagnosis` yet is diagnosed on the fly with its bundle (and scored, when the caller needs
TQS V2 scores and it has none), so a plain `run` output can be gated without a re-run. Each
main record is one run of a task; lines that cannot be read are collected as problems.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.outputs import CommandError
from scorers.im import agent_type
from scorers.tqs_v2 import score_record
from transforms.diagnose_step import DIAGNOSIS_KEY, DiagnoseSettings, diagnose_bundle
from transforms.readers.bundle import ReaderError
from transforms.readers.im_jsonl import read as read_im

SIDE_FILES = (".rejects.jsonl", ".dead_letter.jsonl")


@dataclass(frozen=True)
class Run:
    """One main record of a result set: where it is, its task, its scores and diagnosis."""

    job: str
    instance_id: str
    task: str
    score: dict[str, Any] | None
    diagnosis: dict[str, Any]


@dataclass
class ResultSet:
    runs: list[Run] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: int = 0


def im_files(paths: Iterable[Path]) -> list[Path]:
    """The IM files of the given files and folders (a folder: its own `im*.jsonl` and those
    of its job folders, sorted); CommandError when a path has none or does not exist."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
            continue
        if not path.is_dir():
            raise CommandError(f"{path}: no such file or folder")
        inside = sorted({*path.glob("im*.jsonl"), *path.glob("*/im*.jsonl")})
        inside = [p for p in inside if p.is_file() and not p.name.endswith(SIDE_FILES)]
        if not inside:
            raise CommandError(f"{path}: no IM files (<job>/im.jsonl or im*.jsonl) in it")
        found.extend(inside)
    return found


def _job_of(path: Path, metadata: dict[str, Any]) -> str:
    job = metadata.get("job")
    return job if isinstance(job, str) and job else path.parent.name or path.stem


def _metadata(record: dict[str, Any]) -> dict[str, Any]:
    value = record["meta_info"]["unique_info"].get("_instance_metadata")
    return value if isinstance(value, dict) else {}


def _runs_of(
    path: Path, bundle: dict[str, Any], settings: DiagnoseSettings, need_scores: bool
) -> Iterator[Run]:
    records = bundle["records"]
    infos = [record["meta_info"]["unique_info"] for record in records]
    if any(not isinstance(info.get(DIAGNOSIS_KEY), dict) for info in infos):
        diagnose_bundle(bundle, settings)
    for record, info in zip(records, infos, strict=True):
        if agent_type(record) != "main":
            continue
        score = info.get("_score")
        if need_scores and not isinstance(score, dict):
            score = score_record(record, settings.scaffold)
        metadata = _metadata(record)
        task = metadata.get("task_name")
        instance_id = str(info.get("_instance_id"))
        yield Run(
            job=_job_of(path, metadata),
            instance_id=instance_id,
            task=task if isinstance(task, str) and task else instance_id,
            score=score if isinstance(score, dict) else None,
            diagnosis=info[DIAGNOSIS_KEY],
        )


def read_result_set(
    paths: Iterable[Path], settings: DiagnoseSettings, need_scores: bool = False
) -> ResultSet:
    """Every main-record run of the result set, diagnosed; unreadable lines as problems."""
    result = ResultSet()
    for path in im_files(paths):
        result.files += 1
        try:
            for bundle in read_im(path):
                if not bundle["records"]:
                    reason = next(iter(bundle["warnings"]), "no records")
                    result.problems.append(reason.removeprefix("rejected: "))
                    continue
                result.runs.extend(_runs_of(path, dict(bundle), settings, need_scores))
        except ReaderError as exc:
            raise CommandError(f"{path}: {exc}") from None
    return result


def fired(run: Run) -> set[str]:
    """The detectors that fired on a run."""
    return {d["detector"] for d in run.diagnosis.get("detections") or []}
