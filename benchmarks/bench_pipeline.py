"""Pipeline vs plain loop, and memory vs corpus size (`make bench-pipeline`).

For each size, generates a synthetic corpus (`trajcurate synth`, two jobs), then times, as
separate processes with their peak RSS: `trajcurate run` (local in-process runner) and
`sequential_loop.py` doing the same reading, scoring and writing one trial at a time.
Targets (issue 4): pipeline time <= 1.4x the loop; peak RSS at the largest size <= 1.2x
that at the smallest.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from measure import measure

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    trajcurate = str(Path(sys.executable).with_name("trajcurate"))
    rows = []
    for size in sorted(args.sizes):
        with tempfile.TemporaryDirectory(prefix="trajcurate-bench-pipeline-") as tmp:
            corpus = Path(tmp) / "jobs"
            subprocess.run(
                [
                    trajcurate,
                    "synth",
                    "--out",
                    str(corpus),
                    "--jobs",
                    "2",
                    "--trials",
                    str(size // 2),
                    "--seed",
                    str(args.seed),
                ],
                check=True,
                capture_output=True,
            )
            pipeline = measure(
                [
                    trajcurate,
                    "run",
                    "--no-progress",
                    "--input",
                    str(corpus),
                    "--output",
                    str(Path(tmp) / "pipeline"),
                ]
            )
            loop = measure(
                [
                    sys.executable,
                    str(HERE / "sequential_loop.py"),
                    str(corpus),
                    str(Path(tmp) / "loop"),
                ]
            )
        rows.append((size, pipeline, loop))
    print(
        f"{'trials':>7} {'pipeline s':>10} {'trials/s':>8} {'RSS MiB':>8} "
        f"{'loop s':>8} {'trials/s':>8} {'RSS MiB':>8} {'time ratio':>10}"
    )
    for size, (p_wall, p_rss), (l_wall, l_rss) in rows:
        print(
            f"{size:>7} {p_wall:>10.1f} {size / p_wall:>8.0f} {p_rss:>8.0f} "
            f"{l_wall:>8.1f} {size / l_wall:>8.0f} {l_rss:>8.0f} {p_wall / l_wall:>9.2f}x"
        )
    first, last = rows[0], rows[-1]
    print(
        f"pipeline peak RSS at {last[0]} / at {first[0]} trials: "
        f"{last[1][1] / first[1][1]:.2f}x (target <= 1.2x)"
    )
    print(
        f"pipeline time / loop time at {last[0]} trials: "
        f"{last[1][0] / last[2][0]:.2f}x (target <= 1.4x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
