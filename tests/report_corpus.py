"""A run's output with `scores.jsonl` sidecars, made without the pipeline writing them.

`trajcurate run --instance-status all --diagnose` keeps every scored bundle, so its
`im.jsonl` holds a scored and diagnosed main record of each; a second run of the same jobs
with `--min-score` (and `--diagnose`) decides which of them are kept (in its `im.jsonl`) and
why the others were rejected (its `rejects.jsonl`). `write_sidecars` builds each job's rows
with `score_row` from the first run and the fates from the second, and writes them into the
second run's job folders, where the report reads them (so the viewer finds the kept
trajectories and shows "not in the curated output" for the rejected ones).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from pipelines.cli import main as trajcurate
from transforms.report import SIDECAR
from transforms.report.rows import record_reward, score_row, write_rows


def _instance_ids(path: Path) -> set[str]:
    ids = set()
    for line in path.read_bytes().splitlines():
        if line.strip():
            ids.add(orjson.loads(line)["meta_info"]["unique_info"]["_instance_id"])
    return ids


def _reasons(path: Path) -> dict[str, str]:
    rejects = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return {str(r["instance_id"]): str(r["reason"]) for r in rejects}


def write_sidecars(everything: Path, curated: Path) -> int:
    """Write `curated/<job>/scores.jsonl` from the records of `everything/<job>/im.jsonl`;
    returns the number of rows."""
    total = 0
    for job in sorted(p for p in everything.iterdir() if (p / "im.jsonl").is_file()):
        kept = _instance_ids(curated / job.name / "im.jsonl")
        reasons = _reasons(curated / job.name / "rejects.jsonl")
        rows = []
        for line in (job / "im.jsonl").read_bytes().splitlines():
            record = orjson.loads(line)
            info = record["meta_info"]["unique_info"]
            if info.get("_agent_type") == "subagent":
                continue
            reward = record_reward(record)
            instance = info["_instance_id"]
            decision = "kept" if instance in kept else "rejected"
            rows.append(
                score_row(
                    record,
                    job=job.name,
                    reward=reward,
                    resolved=reward is not None and reward >= 1.0,
                    decision=decision,
                    reason=reasons.get(instance),
                )
            )
        total += write_rows(curated / job.name / SIDECAR, rows)
    return total


def _curate(root: Path, output: str, *extra: str) -> None:
    """`trajcurate run` of `root/jobs` into `root/output`, keeping every scored bundle."""
    argv = ["run", "--input", str(root / "jobs"), "--output", str(root / output)]
    argv += ["--instance-status", "all", "--diagnose", "--no-progress", *extra]
    assert trajcurate(argv) == 0


def make_run(
    root: Path, jobs: int = 2, trials: int = 60, seed: int = 7, min_score: float = 0.7
) -> Path:
    """Synth jobs, two runs and the sidecars; returns the curated output folder."""
    synth = ["synth", "--out", str(root / "jobs"), "--jobs", str(jobs), "--trials", str(trials)]
    assert trajcurate([*synth, "--seed", str(seed)]) == 0
    _curate(root, "all")
    _curate(root, "curated", "--min-score", str(min_score))
    write_sidecars(root / "all", root / "curated")
    return root / "curated"
