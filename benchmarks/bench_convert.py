"""Do the readers stream? (`make bench-convert`)

Builds Harbor jobs of N trials by copying the composed sample job's trials under new trial
names, then runs `trajcurate convert` on them as a separate process, by default and with
`--read-ahead off`, and prints trials/s and the peak RSS of its processes. Two sizes are run:
if the readers stream, peak RSS stays flat while the number of trials grows.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from measure import measure

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JOB = REPO_ROOT.parent / "shared" / "data" / "composed" / "jobs" / "2026-06-16__12-00-00"


def build_jobs(source_job: Path, trials: int, dest: Path) -> int:
    """`dest/<job>/<trial>__<n>` copies of the source job's trials, `trials` in all."""
    job = dest / source_job.name
    job.mkdir(parents=True)
    for name in ("config.json", "result.json"):
        if (source_job / name).is_file():
            shutil.copy(source_job / name, job / name)
    samples = sorted(p for p in source_job.iterdir() if p.is_dir())
    for index in range(trials):
        sample = samples[index % len(samples)]
        shutil.copytree(sample, job / f"{sample.name[:24]}__{index:07d}")
    return trials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", type=Path, default=DEFAULT_JOB)
    parser.add_argument("--sizes", type=int, nargs="+", default=[600, 3000])
    args = parser.parse_args(argv)
    if not args.job.is_dir():
        print(f"bench: sample job not found at {args.job}", file=sys.stderr)
        return 2
    trajcurate = Path(sys.executable).with_name("trajcurate")
    print(
        f"{'trials':>8} {'wall s':>8} {'trials/s':>9} {'peak RSS MiB':>13} "
        f"{'read-ahead off s':>17} {'RSS MiB':>8}"
    )
    for size in sorted(args.sizes):
        with tempfile.TemporaryDirectory(prefix="trajcurate-bench-convert-") as tmp:
            jobs = Path(tmp) / "jobs"
            build_jobs(args.job, size, jobs)
            command = [str(trajcurate), "convert", str(jobs), "-o", str(Path(tmp) / "out.jsonl")]
            wall, peak = measure(command)
            wall_here, peak_here = measure([*command, "--read-ahead", "off"])
        print(
            f"{size:>8} {wall:>8.2f} {size / wall:>9.0f} {peak:>13.1f} "
            f"{wall_here:>17.2f} {peak_here:>8.1f}"
        )
    print(
        "peak RSS (the convert process and its read-ahead helper): flat across sizes means "
        "the readers stream"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
