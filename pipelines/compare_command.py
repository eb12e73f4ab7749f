"""`trajcurate compare`: process quality of two result sets of the same tasks, paired by task.

    trajcurate compare RUN_A RUN_B [--bootstrap N] [--seed S] [--top-detectors K] [--json FILE]

Each result set is a run's output folder or IM files (`pipelines/diagnosis_runs.py`;
records without `_diagnosis` or `_score` are diagnosed / scored on the fly). Runs are paired
by task (`_instance_metadata.task_name`, else the instance id): a task's value in a set is the
mean over its runs there (several attempts of a task are averaged, not paired at random), and
only tasks present in both sets count. For every TQS V2 score and every diagnosis score the
command prints the mean of B - A over the paired tasks with a 95% bootstrap interval
(percentile, tasks resampled, fixed seed: the same inputs print the same interval), and the
detectors whose rates (share of a task's runs where the detector fired, averaged over the
paired tasks) changed most. A task where a score is null in either set (a component that
does not apply) is left out of that score's row; `n` says how many remained.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.chain_options import CHAIN_OPTIONS, ConfigError
from pipelines.diagnose_options import (
    BOOTSTRAP,
    DIAGNOSE_PROFILE,
    SEED,
    TOP_DETECTORS,
    diagnose_settings,
)
from pipelines.diagnosis_runs import ResultSet, Run, fired, read_result_set
from pipelines.outputs import CommandError, run_reporting_errors
from scorers.diagnose import DETECTORS
from scorers.tqs_v2 import SCORE_KEYS

PROG = "trajcurate compare"
TQS_SCORES = tuple(k for k in SCORE_KEYS if k.endswith("_score") or k == "reproduce_first")
DIAGNOSIS_SCORES = ("trajectory_score", "task_completion_score", "orchestration_quality_overall")

Values = dict[str, list[float]]  # task -> the values of its runs


@dataclass(frozen=True)
class ScoreDelta:
    score: str
    n: int
    mean_a: float | None
    mean_b: float | None
    delta: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class RateDelta:
    detector: str
    rate_a: float
    rate_b: float

    @property
    def delta(self) -> float:
        return self.rate_b - self.rate_a


def add_parser(subcommands: Any) -> None:
    """Register `compare` on the `trajcurate` subcommand parser."""
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "compare",
        help="mean score deltas between two result sets of the same tasks, paired by task",
        description="Pair the runs of two result sets by task and print the mean delta (B - A) "
        "of every TQS V2 and diagnosis score with a 95%% bootstrap interval, and the detectors "
        "whose rates changed most.",
    )
    parser.add_argument("run_a", type=Path, metavar="RUN_A")
    parser.add_argument("run_b", type=Path, metavar="RUN_B")
    for option in (BOOTSTRAP, SEED, TOP_DETECTORS):
        option.add_to(parser, option.default)
    DIAGNOSE_PROFILE.add_to(parser, None)
    CHAIN_OPTIONS["scaffold"].add_to(parser, None)
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the result as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings = diagnose_settings(vars(args))
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2

    def work() -> dict[str, Any]:
        sets = [read_result_set([p], settings, need_scores=True) for p in (args.run_a, args.run_b)]
        for path, result in zip((args.run_a, args.run_b), sets, strict=True):
            if result.problems:
                raise CommandError(f"{path}: {result.problems[0]}")
        return compare(sets[0], sets[1], args.bootstrap, args.seed, args.top_detectors)

    result = run_reporting_errors(PROG, work)
    if isinstance(result, int):
        return result
    print(render(result))
    if args.json is not None:
        try:
            args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"{PROG}: error: cannot write {args.json}: {exc.strerror}", file=sys.stderr)
            return 2
    return 0


def _by_task(runs: Iterable[Run], value: Callable[[Run], Any]) -> Values:
    table: Values = {}
    for item in runs:
        got = value(item)
        if isinstance(got, int | float) and not isinstance(got, bool):
            table.setdefault(item.task, []).append(float(got))
    return table


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def bootstrap_interval(deltas: Sequence[float], resamples: int, seed: int) -> tuple[float, float]:
    """Percentile 95% interval of the mean of `deltas`, tasks drawn with replacement."""
    import numpy as np

    values = np.asarray(deltas, dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(values), size=(resamples, len(values)))
    means = values[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def score_delta(
    name: str, a: Values, b: Values, tasks: Sequence[str], resamples: int, seed: int
) -> ScoreDelta:
    paired = [(_mean(a[t]), _mean(b[t])) for t in tasks if t in a and t in b]
    if not paired:
        return ScoreDelta(name, 0, None, None, None, None, None)
    deltas = [y - x for x, y in paired]
    low, high = bootstrap_interval(deltas, resamples, seed)
    return ScoreDelta(
        name,
        len(paired),
        _mean([x for x, _ in paired]),
        _mean([y for _, y in paired]),
        _mean(deltas),
        low,
        high,
    )


def detector_rates(runs: Sequence[Run], tasks: Sequence[str]) -> dict[str, float]:
    """Per detector: the share of a task's runs where it fired, averaged over `tasks`."""
    by_task: dict[str, list[set[str]]] = {}
    for item in runs:
        by_task.setdefault(item.task, []).append(fired(item))
    rates: dict[str, float] = {}
    for detector in DETECTORS:
        shares = [
            sum(detector in f for f in by_task[t]) / len(by_task[t]) for t in tasks if t in by_task
        ]
        rates[detector] = _mean(shares) if shares else 0.0
    return rates


def compare(a: ResultSet, b: ResultSet, resamples: int, seed: int, top: int) -> dict[str, Any]:
    """Paired deltas of every score and the detectors whose rates changed most."""
    tasks = sorted({r.task for r in a.runs} & {r.task for r in b.runs})
    if not tasks:
        raise CommandError("no task in common between the two result sets")
    rows: list[ScoreDelta] = []
    for name in TQS_SCORES:

        def tqs(run: Run, key: str = name) -> Any:
            return (run.score or {}).get(key)

        rows.append(
            score_delta(name, _by_task(a.runs, tqs), _by_task(b.runs, tqs), tasks, resamples, seed)
        )
    for name in DIAGNOSIS_SCORES:

        def diag(run: Run, key: str = name) -> Any:
            return run.diagnosis.get(key)

        rows.append(
            score_delta(
                name, _by_task(a.runs, diag), _by_task(b.runs, diag), tasks, resamples, seed
            )
        )
    rates_a, rates_b = detector_rates(a.runs, tasks), detector_rates(b.runs, tasks)
    changes = [RateDelta(d, rates_a[d], rates_b[d]) for d in DETECTORS]
    changes = [c for c in changes if c.delta != 0.0]
    changes.sort(key=lambda c: (-abs(c.delta), c.detector))
    return {
        "tasks": {
            "paired": len(tasks),
            "a": len({r.task for r in a.runs}),
            "b": len({r.task for r in b.runs}),
        },
        "runs": {"a": len(a.runs), "b": len(b.runs)},
        "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95},
        "scores": [row.__dict__ for row in rows],
        "detectors": [
            {"detector": c.detector, "rate_a": c.rate_a, "rate_b": c.rate_b, "delta": c.delta}
            for c in changes[:top]
        ],
    }


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def render(result: dict[str, Any]) -> str:
    tasks, runs = result["tasks"], result["runs"]
    lines = [
        f"{PROG}: {tasks['paired']} tasks paired (A: {tasks['a']} tasks, {runs['a']} runs;"
        f" B: {tasks['b']} tasks, {runs['b']} runs); delta = B - A, 95% bootstrap interval",
        f"{'score':<30} {'n':>5} {'mean A':>8} {'mean B':>8} {'delta':>8}  interval",
    ]
    for row in result["scores"]:
        interval = "—" if row["low"] is None else f"[{row['low']:+.4f}, {row['high']:+.4f}]"
        lines.append(
            f"{row['score']:<30} {row['n']:>5} {_number(row['mean_a']):>8}"
            f" {_number(row['mean_b']):>8} {_number(row['delta'], True):>8}  {interval}"
        )
    if not result["detectors"]:
        lines.append("no detector rate changed")
        return "\n".join(lines)
    lines.append("detector rates (share of a task's runs), largest changes:")
    lines.append(f"{'detector':<30} {'A':>7} {'B':>7} {'delta':>8}")
    for row in result["detectors"]:
        lines.append(
            f"{row['detector']:<30} {row['rate_a']:>7.3f} {row['rate_b']:>7.3f}"
            f" {row['delta']:>+8.3f}"
        )
    return "\n".join(lines)
