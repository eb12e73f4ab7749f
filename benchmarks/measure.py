"""Wall time and peak RSS of one command, and the output comparison, for the benchmark scripts."""

from __future__ import annotations

import compileall
import filecmp
import functools
import subprocess
import sys
import time
from pathlib import Path

# Run the command, and print its exit code and peak RSS in KiB: the larger of its largest
# process's own peak and the peak of its processes' summed RSS, sampled every 0.1 s (a run
# with a read-ahead helper or worker processes is charged for all of them). The wait between
# samples ends the moment the command exits (its pidfd turns readable), so the wall time
# measured around this wrapper does not take up to a sample's interval more.
_PEAK_OF_CHILD = """
import os, resource, select, subprocess, sys

def tree(pid):
    pids = [pid]
    for pid in pids:
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as handle:
                    pids += [int(child) for child in handle.read().split()]
        except OSError:
            pass
    return pids

def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as handle:
            return next(int(l.split()[1]) for l in handle if l.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0

run = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
exited = os.pidfd_open(run.pid)
summed = 0
while run.poll() is None:
    summed = max(summed, sum(rss_kib(pid) for pid in tree(run.pid)))
    select.select([exited], [], [], 0.1)
own = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(run.returncode, max(own, summed))
"""


REPO = Path(__file__).resolve().parent.parent


@functools.cache
def write_bytecode() -> None:
    """The package's bytecode written once, as an installed package (or one run before) has
    it. Where PYTHONDONTWRITEBYTECODE is set, as on the development machine, every measured
    run would otherwise compile the ~180 modules it imports from source: about 0.13 s of each
    run that no user pays twice."""
    for package in ("pipelines", "transforms", "scorers"):
        compileall.compile_dir(REPO / package, quiet=1)


def measure(command: list[str], cwd: str | Path | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of `command`, run under a fresh parent process so that
    the peak is that of the command's processes alone; exits the benchmark if it fails."""
    write_bytecode()
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", _PEAK_OF_CHILD, *command], capture_output=True, text=True, cwd=cwd
    )
    wall = time.perf_counter() - started
    if len(result.stdout.split()) != 2:  # the command could not be started at all
        sys.exit(f"could not run {' '.join(command)}: {result.stderr.strip().splitlines()[-1:]}")
    code, peak_kib = result.stdout.split()
    if code != "0":
        sys.exit(f"command failed ({code}): {' '.join(command)}")
    return wall, int(peak_kib) / 1024


# `trajcurate run` on the local runner with two worker processes
TWO_PROCESSES = ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"]
# the data files two runs of the same corpus must write byte for byte
COMPARED = (
    "im.jsonl",
    "lf.json",
    "lf.stats.json",
    "rejects.jsonl",
    "dead_letter.jsonl",
    "scores.jsonl",
    "dataset_info.json",
)


def same_files(ran: Path, reference: Path) -> bool:
    """Whether `ran` holds every `COMPARED` file that `reference` holds, byte for byte."""
    names = [p.relative_to(reference) for p in reference.rglob("*") if p.name in COMPARED]
    return bool(names) and all(filecmp.cmp(reference / n, ran / n, shallow=False) for n in names)
