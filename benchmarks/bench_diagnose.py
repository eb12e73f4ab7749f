"""What does the diagnosis cost per record, next to TQS V2? (`make bench-diagnose`)

Times, in one process over the reference records (each instance as `trajcurate diagnose`
sees it: its records together), best of `--repeat` passes after one warm-up pass:
  tqs-v2     `scorers.tqs_v2.score_and_count` on every record (what the `score` stage does);
  diagnose   `scorers.diagnose.diagnose_records` on every instance (the `diagnose` stage),
             which builds TQS V2's trajectory again and runs every detector;
and the part of the diagnosis that is building the trajectory. Target from the issue: the
diagnosis costs at most 2x TQS V2 per record.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scorers.diagnose import diagnose_records  # noqa: E402
from scorers.tqs_v2 import scaffold_hint, score_and_count  # noqa: E402
from scorers.tqs_v2.trajectory import build_trajectory  # noqa: E402

DEFAULT_CASES = REPO_ROOT.parent / "shared" / "data" / "reference-scored" / "cases.jsonl"
TARGET_RATIO = 2.0


def instances(path: Path) -> list[list[dict[str, Any]]]:
    """The records grouped by `_instance_id`, in file order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_bytes().splitlines():
        if line.strip():
            record = orjson.loads(line)
            groups.setdefault(record["meta_info"]["unique_info"]["_instance_id"], []).append(record)
    return list(groups.values())


def best_seconds(work: Callable[[], None], repeat: int) -> float:
    work()  # warm-up: regex compilation, caches
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if not args.cases.is_file():
        print(f"no reference records at {args.cases} (pass --cases)", file=sys.stderr)
        return 2
    groups = instances(args.cases)
    records = [record for group in groups for record in group]

    def tqs() -> None:
        for record in records:
            score_and_count(record)

    def diagnose() -> None:
        for group in groups:
            diagnose_records(group)

    def trajectories() -> None:
        for record in records:
            build_trajectory(record, scaffold_hint(record))

    timings = {
        "tqs-v2": best_seconds(tqs, args.repeat),
        "diagnose": best_seconds(diagnose, args.repeat),
        "  of which building trajectories": best_seconds(trajectories, args.repeat),
    }
    n = len(records)
    print(f"{n} records ({len(groups)} instances) from {args.cases}, best of {args.repeat}")
    print(f"{'':34} {'total s':>8} {'us/record':>10}")
    for name, seconds in timings.items():
        print(f"{name:34} {seconds:8.4f} {seconds / n * 1e6:10.1f}")
    ratio = timings["diagnose"] / timings["tqs-v2"]
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    print(f"diagnose / tqs-v2: {ratio:.2f}x (target <= {TARGET_RATIO:g}x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
