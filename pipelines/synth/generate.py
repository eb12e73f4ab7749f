"""Write J synthetic Harbor jobs of N trials each into an empty folder, one trial at a time.

Every random choice comes from `random.Random` objects seeded with the run's seed and the
job and trial index, and every timestamp is derived from them, so the same options write
a byte-identical tree. Only the current trial's files and the job's eval tallies are held
in memory. Next to the jobs, `synth-manifest.jsonl` lists each trial's agent, format, run
profile, reward, exception and bad-file kind (the ground truth for reader tests).
"""

from __future__ import annotations

import heapq
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO, TextIO

from pipelines.synth.common import harbor_json, new_uuid
from pipelines.synth.corrupt import BAD_KINDS
from pipelines.synth.harbor import JobTally, job_config
from pipelines.synth.templates import TASKS
from pipelines.synth.trial import AGENT_SPECS, AGENT_WEIGHTS, Trial, make_trial

__all__ = ["MANIFEST", "SynthError", "SynthOptions", "SynthSummary", "generate"]

MANIFEST = "synth-manifest.jsonl"
PROGRESS_EVERY = 1000


class SynthError(Exception):
    """A run that cannot start (bad options, unusable output folder)."""


@dataclass(frozen=True)
class SynthOptions:
    out: Path
    jobs: int
    trials: int  # per job
    seed: int
    bad_share: float = 0.05


@dataclass
class SynthSummary:
    jobs: int = 0
    trials: int = 0
    files: int = 0
    bytes: int = 0
    by_agent: Counter[str] = field(default_factory=Counter)
    by_format: Counter[str] = field(default_factory=Counter)
    by_profile: Counter[str] = field(default_factory=Counter)
    rewards: Counter[str] = field(default_factory=Counter)
    exceptions: Counter[str] = field(default_factory=Counter)
    bad: Counter[str] = field(default_factory=Counter)

    def add(self, trial: Trial) -> None:
        self.trials += 1
        self.files += len(trial.files)
        self.bytes += sum(len(data) for _, data in trial.files)
        self.by_agent[trial.spec.name] += 1
        self.by_format[f"{trial.spec.name} {trial.format}"] += 1
        self.by_profile[trial.profile] += 1
        reward = trial.outcome.reward
        kind = (
            "no reward"
            if reward is None
            else "resolved (1)"
            if reward == 1.0
            else "unresolved (0)"
            if reward == 0.0
            else "fractional"
        )
        self.rewards[kind] += 1
        if trial.outcome.exception:
            self.exceptions[trial.outcome.exception] += 1
        if trial.bad:
            self.bad[trial.bad] += 1

    def render(self) -> str:
        lines = [
            f"jobs             {self.jobs}",
            f"trials           {self.trials}",
            f"files            {self.files} ({self.bytes / 1e6:.1f} MB)",
            f"bad trials       {sum(self.bad.values())}",
        ]
        for title, counter in (
            ("by agent", self.by_agent),
            ("by agent/format", self.by_format),
            ("by run profile", self.by_profile),
            ("rewards", self.rewards),
            ("exceptions", self.exceptions),
            ("bad files", self.bad),
        ):
            lines.append(title)
            lines.extend(f"  {name:<32} {n}" for name, n in sorted(counter.items()))
        return "\n".join(lines)


def generate(options: SynthOptions, progress: TextIO) -> SynthSummary:
    """Write the jobs under `options.out`; report progress every 1000 trials."""
    _check(options)
    options.out.mkdir(parents=True, exist_ok=True)
    summary = SynthSummary()
    total = options.jobs * options.trials
    start = _base_time(options.seed)
    with open(options.out / MANIFEST, "wb") as manifest:
        for index in range(options.jobs):
            start = _write_job(options, index, start, manifest, summary, total, progress)
    return summary


def _check(options: SynthOptions) -> None:
    if options.jobs < 1 or options.trials < 1:
        raise SynthError("--jobs and --trials must be at least 1")
    if not 0.0 <= options.bad_share <= 1.0:
        raise SynthError("--bad-share must be between 0 and 1")
    if options.out.exists():
        if not options.out.is_dir():
            raise SynthError(f"{options.out} exists and is not a folder")
        if any(options.out.iterdir()):
            raise SynthError(f"{options.out} is not empty; choose a new or empty folder")


def _base_time(seed: int) -> datetime:
    rng = random.Random(f"synth:{seed}:clock")
    base = datetime(2026, 1, 5, tzinfo=UTC)
    return base + timedelta(days=rng.randrange(300), seconds=rng.randrange(86_400))


def _write_job(
    options: SynthOptions,
    index: int,
    after: datetime,
    manifest: BinaryIO,
    summary: SynthSummary,
    total: int,
    progress: TextIO,
) -> datetime:
    """Write one job; return when it finished (the next job starts after it)."""
    rng = random.Random(f"synth:{options.seed}:job:{index}")
    started = after + timedelta(minutes=rng.randint(5, 240), seconds=rng.randrange(60))
    job_name = started.strftime("%Y-%m-%d__%H-%M-%S")
    job_dir = options.out / job_name
    job_dir.mkdir()
    job_id = new_uuid(rng)
    specs = [rng.choice([s for s in AGENT_SPECS if s.name == name]) for name in AGENT_WEIGHTS]
    concurrency = rng.choice((4, 8, 16))
    task_names = [t.name for t in TASKS]
    config = job_config(job_name, specs, task_names, concurrency)
    (job_dir / "config.json").write_bytes(harbor_json(config))
    n_bad = round(options.trials * options.bad_share)
    bad = sorted(rng.sample(range(options.trials), n_bad))
    # The kinds cycle on across jobs, so small runs still see every kind.
    kinds = {i: BAD_KINDS[(index * n_bad + k) % len(BAD_KINDS)] for k, i in enumerate(bad)}
    workers = [started] * concurrency
    taken: set[str] = set()
    tally = JobTally()
    finished = started
    for i in range(options.trials):
        trial_rng = random.Random(f"synth:{options.seed}:{index}:{i}")
        start = heapq.heappop(workers) + timedelta(milliseconds=trial_rng.randint(200, 5000))
        trial = make_trial((job_name, job_id, specs), start, kinds.get(i), taken, trial_rng)
        heapq.heappush(workers, trial.finished)
        finished = max(finished, trial.finished)
        taken.add(trial.name)
        _write_trial(job_dir / trial.name, trial)
        tally.add(trial.spec, trial.name, trial.outcome)
        summary.add(trial)
        manifest.write(json.dumps(trial.manifest_row(job_name)).encode() + b"\n")
        if summary.trials % PROGRESS_EVERY == 0:
            print(f"trajcurate synth: {summary.trials}/{total} trials", file=progress, flush=True)
    legacy = rng.random() < 0.3
    result = tally.result(job_id, started, finished, legacy)
    (job_dir / "result.json").write_bytes(harbor_json(result))
    (job_dir / "job.log").write_text(
        f"{started.strftime('%Y-%m-%d %H:%M:%S')} INFO Starting job {job_name} "
        f"({options.trials} trials, {concurrency} concurrent)\n"
        f"{finished.strftime('%Y-%m-%d %H:%M:%S')} INFO Job finished: {tally.trials} trials, "
        f"{tally.errors} errors\n"
    )
    summary.jobs += 1
    return finished


def _write_trial(folder: Path, trial: Trial) -> None:
    made: set[Path] = set()
    for relative, data in trial.files:
        path = folder / relative
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_bytes(data)
