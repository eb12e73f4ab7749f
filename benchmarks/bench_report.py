"""`make bench-report`: how long `trajcurate report` takes, and how big the report is.

First, the report of two real runs (made here by `trajcurate synth` + `trajcurate run
--diagnose`): the demo run (`make demo`: 2 jobs x 150 trials, seed 1) and a 1,000-trial one
(2 x 500), each built by `trajcurate report DIR` as a process of its own (interpreter
start-up and imports included; best of `--process-repeat`), against the target of <= 3 s,
with where the time goes: interpreter start-up, imports, reading, aggregation, examples, the
charts and the page, writing (each measured in fresh processes, best of as many; the CLI's
own argument parsing and exit are the rest).

Then a synthetic run of `--trials` (100k) trials, built in this process. Its output is made
up directly (no pipeline): `--jobs` job folders, each with a
`scores.jsonl` of synthetic rows (4 scaffolds, 6 models, 8 languages, `--tasks` tasks,
scores that separate resolved from unresolved to different degrees, tool-error signatures
from a pool), a `manifest.json` with counts, a `rejects.jsonl` for the rows rejected by
score, and an `im.jsonl` holding an IM record for every kept row (one small real record,
made by `trajcurate synth` + `trajcurate run`, with its instance id replaced), so the
report scans realistic files for its examples.

Prints the build time (best of `--repeat`) against the target of <= 15 s, its steps, and the
report's size, against the target of a page under a few MB (5 MiB here).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from measure import write_bytecode

from pipelines.cli import main as trajcurate
from scorers.tqs_v2 import SCORE_KEYS
from transforms.report import SIDECAR
from transforms.report.build import ReportSettings, build_report

SCAFFOLDS = ("claudecode", "opencode", "openhands", "terminus2")
AGENTS = {
    "claudecode": "claude-code",
    "opencode": "opencode",
    "openhands": "openhands",
    "terminus2": "terminus-2",
}
MODELS = ("model-a", "model-b", "model-c", "model-d", "model-e", "model-f")
LANGUAGES = ("python", "go", "rust", "typescript", "java", "ruby", "c++", "javascript")
DETECTORS = (
    ("loop", "high"),
    ("repeated_error", "medium"),
    ("truncation", "high"),
    ("unverified_finish", "medium"),
    ("no_successful_write", "high"),
    ("task_failure", "high"),
)
ERRORS = [
    (tool, f"{kind} error number <n> in <path>")
    for tool in ("bash", "edit", "read")
    for kind in (
        "ModuleNotFoundError",
        "AssertionError",
        "SyntaxError",
        "TypeError",
        "command not found",
        "No such file",
        "Permission denied",
        "timeout",
    )
]
MIN_SCORE = 0.5
ROOT = Path(__file__).resolve().parents[1]
RUNS = {"demo": 150, "1000": 500}  # trials per job of the two real runs (2 jobs, seed 1)
PROCESS_TARGET = 3.0
BUILD_TARGET = 15.0
# Run in a fresh interpreter: the imports the report needs, then one build, as seconds.
_STEPS = """
import json, sys, time
from pathlib import Path
began = time.perf_counter()
import pipelines.cli, pipelines.report_command
from transforms.report import page
from transforms.report.build import ReportSettings, build_report
imported = time.perf_counter() - began
result = build_report(Path(sys.argv[1]), Path(sys.argv[2]), ReportSettings())
print(json.dumps({"imports": imported, **result.steps}))
"""


def _quiet(argv: list[str]) -> int:
    """`trajcurate ARGV` in this process, its summary tables not printed."""
    with contextlib.redirect_stdout(io.StringIO()):
        return trajcurate(argv)


def _template(root: Path) -> dict[str, Any]:
    """The smallest scored main record of a tiny synthetic run."""
    assert (
        _quiet(
            ["synth", "--out", str(root / "jobs"), "--jobs", "1", "--trials", "30", "--seed", "5"]
        )
        == 0
    )
    assert (
        _quiet(
            [
                "run",
                "--input",
                str(root / "jobs"),
                "--output",
                str(root / "out"),
                "--instance-status",
                "all",
                "--no-progress",
            ]
        )
        == 0
    )
    lines = [
        line
        for path in (root / "out").glob("*/im.jsonl")
        for line in path.read_bytes().splitlines()
    ]
    mains = [orjson.loads(line) for line in lines if b'"_agent_type":"main"' in line]
    return min(mains, key=lambda r: len(orjson.dumps(r)))


def _diagnosis(rng: random.Random, resolved: bool) -> dict[str, Any]:
    """A `run --diagnose` sidecar diagnosis: each detector fires more on unresolved trials."""
    fired = [
        [name, severity, round(rng.uniform(0.6, 1.0), 2)]
        for name, severity in DETECTORS
        if rng.random() < (0.05 if resolved else 0.2)
    ]
    penalty = max((c * 0.6 for _, _, c in fired), default=0.0)
    return {
        "trajectory_score": round(1 - penalty, 4),
        "task_completion_score": 1.0 if resolved else round(rng.uniform(0.4, 1.0), 4),
        "detections": fired,
    }


def _row(rng: random.Random, job: str, index: int, tasks: int) -> dict[str, Any]:
    scaffold = rng.choice(SCAFFOLDS)
    task = f"task-{rng.randrange(tasks):04d}"
    skill = rng.random()
    resolved = rng.random() < 0.25 + 0.5 * skill
    score: dict[str, Any] = {key: None for key in SCORE_KEYS}
    for key in SCORE_KEYS:
        if key.endswith("_score") or key == "reproduce_first":
            # Some components follow resolution, some do not, one runs against it.
            lean = {"tvr_score": 0.3, "sub_score": 0.2, "oec_score": 0.0, "tte_score": -0.1}
            value = rng.gauss(0.55 + lean.get(key, 0.1) * (1 if resolved else -1) / 2, 0.2)
            score[key] = round(min(max(value, 0.0), 1.0), 4)
    score.update(
        scaffold=scaffold,
        assistant_turns=rng.randrange(2, 120),
        total_tool_calls=rng.randrange(1, 150),
    )
    errors = [[*rng.choice(ERRORS), rng.randrange(1, 5)] for _ in range(rng.randrange(0, 3))]
    kept = score["composite_score"] >= MIN_SCORE
    return {
        "instance_id": f"{task}__{index:07d}",
        "job": job,
        "task": task,
        "agent": AGENTS[scaffold],
        "model": rng.choice(MODELS),
        "scaffold": scaffold,
        "language": rng.choice(LANGUAGES),
        "reward": 1.0 if resolved else 0.0,
        "resolved": resolved,
        "turns": score["assistant_turns"],
        "score": score,
        "judges": None,
        "diagnosis": _diagnosis(rng, resolved),
        "decision": "kept" if kept else "rejected",
        "reason": None if kept else f"best main-agent composite_score below {MIN_SCORE}",
        "tool_errors": errors,
    }


def make_output(root: Path, trials: int, jobs: int, tasks: int, seed: int) -> Path:
    template = _template(root / "template")
    output = root / "output"
    rng = random.Random(seed)
    per_job = trials // jobs
    for number in range(jobs):
        job = f"bench-job-{number}"
        folder = output / job
        folder.mkdir(parents=True)
        rows = sorted(
            (_row(rng, job, number * per_job + i, tasks) for i in range(per_job)),
            key=lambda r: r["instance_id"],
        )
        with (
            (folder / SIDECAR).open("wb") as out,
            (folder / "im.jsonl").open("wb") as im,
            (folder / "rejects.jsonl").open("wb") as rejects,
        ):
            for row in rows:
                out.write(orjson.dumps(row) + b"\n")
                if row["decision"] == "kept":
                    template["meta_info"]["unique_info"]["_instance_id"] = row["instance_id"]
                    im.write(orjson.dumps(template) + b"\n")
                else:
                    rejects.write(
                        orjson.dumps(
                            {
                                "instance_id": row["instance_id"],
                                "stage": "filter",
                                "reason": row["reason"],
                            }
                        )
                        + b"\n"
                    )
        kept = sum(r["decision"] == "kept" for r in rows)
        manifest = {
            "job": job,
            "options": {"min_score": MIN_SCORE},
            "counts": {"read": per_job, "written": kept, "rejected.filter": per_job - kept},
            "accounting": {
                "in": per_job,
                "written": kept,
                "rejected": per_job - kept,
                "dead_lettered": 0,
                "balanced": True,
            },
        }
        (folder / "manifest.json").write_bytes(orjson.dumps(manifest))
    return output


def _process_env() -> dict[str, str]:
    """This checkout first on the path, as `trajcurate` runs it."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)}


def _wall(command: list[str]) -> float:
    write_bytecode()
    began = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=_process_env(), cwd=ROOT)
    return time.perf_counter() - began


def _steps(output: Path, target: Path) -> dict[str, float]:
    found = subprocess.run(
        [sys.executable, "-c", _STEPS, str(output), str(target)],
        check=True,
        capture_output=True,
        env=_process_env(),
        cwd=ROOT,
        text=True,
    )
    steps: dict[str, float] = orjson.loads(found.stdout.strip().splitlines()[-1])
    return steps


def _real_run(root: Path, name: str, per_job: int) -> tuple[Path, int]:
    """`trajcurate synth --jobs 2 --trials PER_JOB --seed 1` + `run --diagnose`; the output
    folder and its number of scored trials (sidecar rows)."""
    jobs, output = root / f"{name}-jobs", root / f"{name}-curated"
    synth = ["synth", "--out", str(jobs), "--jobs", "2", "--trials", str(per_job), "--seed", "1"]
    assert _quiet(synth) == 0
    run = ["run", "--input", str(jobs), "--output", str(output), "--diagnose", "--no-progress"]
    assert _quiet(run) == 0
    rows = sum(len(p.read_bytes().splitlines()) for p in output.glob(f"*/{SIDECAR}"))
    return output, rows


def _verdict(seconds: float, target: float) -> str:
    return f"target <= {target:g} s: {'met' if seconds <= target else 'NOT met'}"


def _print_steps(steps: dict[str, float]) -> None:
    print("    " + "  ".join(f"{name} {seconds:.2f}" for name, seconds in steps.items()))


def whole_process(root: Path, names: list[str], repeat: int) -> None:
    print(
        f"`trajcurate report DIR` as a process of its own (start-up and imports included), "
        f"best of {repeat}:"
    )
    command = [sys.executable, "-m", "pipelines.cli", "report"]
    start_up = min(_wall([sys.executable, "-c", "pass"]) for _ in range(repeat))
    for name in names:
        per_job = RUNS[name]
        output, rows = _real_run(root, name, per_job)
        target = root / f"{name}-report"
        best = min(_wall([*command, str(output), "-o", str(target)]) for _ in range(repeat))
        label = "demo run" if name == "demo" else f"{2 * per_job:,}-trial run"
        print(
            f"  {label} (synth --jobs 2 --trials {per_job} --seed 1, run --diagnose): "
            f"{rows:,} scored trials, {best:.2f} s ({_verdict(best, PROCESS_TARGET)})"
        )
        steps = min((_steps(output, target) for _ in range(repeat)), key=lambda s: sum(s.values()))
        _print_steps({"start-up": start_up, **steps})


def in_process(root: Path, args: argparse.Namespace) -> None:
    began = time.perf_counter()
    output = make_output(root, args.trials, args.jobs, args.tasks, args.seed)
    made = time.perf_counter() - began
    inputs = sum(p.stat().st_size for p in output.rglob("*") if p.is_file())
    print(
        f"synthetic run: {args.trials:,} trials in {args.jobs} jobs, "
        f"{inputs / 2**20:.1f} MiB of inputs ({made:.1f} s to make)"
    )
    best = None
    for _ in range(args.repeat):
        result = build_report(output, root / "report", ReportSettings())
        best = result if best is None or result.seconds < best.seconds else best
    assert best is not None
    files = {
        p.relative_to(best.folder).as_posix(): p.stat().st_size
        for p in sorted(best.folder.rglob("*"))
        if p.is_file()
    }
    print(
        f"report: {best.rows:,} trials, {best.examples} examples embedded, "
        f"built in {best.seconds:.1f} s in this process ({_verdict(best.seconds, BUILD_TARGET)})"
    )
    _print_steps(best.steps)
    for name, size in files.items():
        print(f"  {name:24s} {size / 2**20:7.2f} MiB")
    verdict = "met" if best.bytes < 5 * 2**20 else "NOT met"
    print(f"  {'total':24s} {best.bytes / 2**20:7.2f} MiB (target < 5 MiB: {verdict})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=100_000, help="0: no synthetic run")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--runs", nargs="*", choices=sorted(RUNS), default=["demo", "1000"], metavar="RUN"
    )
    parser.add_argument("--process-repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        root = Path(tmp)
        if args.runs:
            whole_process(root, args.runs, args.process_repeat)
        if args.trials:
            in_process(root, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
