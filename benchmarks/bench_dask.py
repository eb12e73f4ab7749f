"""`--runner dask` against the local runner, 1 and 2 Dask workers (`make bench-dask`).

For each size (default 2,000 and 10,000 trials: a synthetic corpus of two jobs), times as
separate processes (median of `--repeat`; the machine may be busy):

- `trajcurate run` on the local in-process runner, and with `--direct_num_workers 2
  --direct_running_mode multi_processing`;
- `trajcurate run --runner dask --dask_address ...` against a loopback cluster of a
  `dask scheduler` and 1, then 2, `dask worker` processes (one thread each), started once
  per worker count before the runs, so the figures are the run's and not the cluster's
  start-up, which is given on its own line (`--runner dask --dask_workers N` with no
  scheduler pays it on every run);

and checks that every Dask run's data files are byte-identical to the local run's. Wall
time, the driver's peak RSS, and the largest worker's peak RSS (Dask workers are long-lived:
it is their peak so far); also the number of Dask tasks of a run. A benchmark, not a test:
it prints, it does not fail.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from measure import TWO_PROCESSES, measure, same_files


def _trajcurate() -> str:
    return str(Path(sys.executable).with_name("trajcurate"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Cluster:
    """`dask scheduler` and `workers` `dask worker` processes on loopback."""

    def __init__(self, workers: int, folder: Path) -> None:
        from distributed import Client

        started = time.perf_counter()
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        port = self.address.rsplit(":", 1)[1]
        self.procs = [
            self._start(
                folder / "scheduler.log",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                port,
                "--dashboard-address",
                ":0",
            )
        ]
        for i in range(workers):
            self.procs.append(
                self._start(
                    folder / f"worker-{i}.log",
                    "distributed.cli.dask_worker",
                    self.address,
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--host",
                    "127.0.0.1",
                    "--no-dashboard",
                )
            )
        self.client = Client(self.address, timeout=60)
        self.client.wait_for_workers(workers, timeout=120)
        self.start_seconds = time.perf_counter() - started

    @staticmethod
    def _start(log: Path, *args: str) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            return subprocess.Popen(
                [sys.executable, "-m", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def worker_peak_mib(self) -> float:
        def peak() -> float:
            import resource

            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        peaks: dict[str, float] = self.client.run(peak)
        return max(peaks.values())

    def tasks_since(self, start: float) -> int:
        return len(self.client.get_task_stream(start=start))

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        for proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--repeat", type=int, default=1, help="runs per measure (median)")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"bench-dask: {os.cpu_count()} cores, load {load}; work in {tmp}")
    try:
        results = _run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _report(results, args)
    return 0


def _run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    corpora = {}
    for size in args.sizes:
        corpus = tmp / f"synth-{size}"
        subprocess.run(
            [
                _trajcurate(),
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
        corpora[size] = corpus
    walls: dict[tuple[str, int], list[float]] = {}
    rss: dict[tuple[str, int], float] = {}
    extra: dict[str, Any] = {"start": {}, "tasks": {}, "worker_rss": {}, "same": {}}

    def timed(label: str, size: int, command: list[str], out: Path) -> None:
        for _ in range(args.repeat):
            shutil.rmtree(out, ignore_errors=True)
            wall, peak = measure([*command, "--output", str(out)], cwd=tmp)
            walls.setdefault((label, size), []).append(wall)
            rss[(label, size)] = max(rss.get((label, size), 0.0), peak)

    for size, corpus in corpora.items():
        run = [_trajcurate(), "run", "--no-progress", "--input", str(corpus)]
        timed("local", size, run, tmp / f"local-{size}")
        timed("local, 2 processes", size, [*run, *TWO_PROCESSES], tmp / f"procs-{size}")
        print(f"  {size}: local {statistics.median(walls[('local', size)]):.1f} s")
    for workers in args.workers:
        cluster = Cluster(workers, tmp)
        extra["start"][workers] = cluster.start_seconds
        try:
            cluster.client.get_task_stream()  # installs the scheduler's task-stream plugin
            for size, corpus in corpora.items():
                label = f"dask, {workers} worker{'s' if workers > 1 else ''}"
                out = tmp / f"dask-{workers}-{size}"
                run = [
                    _trajcurate(),
                    "run",
                    "--no-progress",
                    "--input",
                    str(corpus),
                    "--runner",
                    "dask",
                    "--dask_address",
                    cluster.address,
                ]
                start = time.time()
                timed(label, size, run, out)
                extra["tasks"][(label, size)] = cluster.tasks_since(start) // args.repeat
                extra["worker_rss"][(label, size)] = cluster.worker_peak_mib()
                extra["same"][(label, size)] = same_files(out, tmp / f"local-{size}")
                print(f"  {size}: {label} {statistics.median(walls[(label, size)]):.1f} s")
        finally:
            cluster.stop()
    return {"walls": walls, "rss": rss, **extra}


def _report(results: dict[str, Any], args: argparse.Namespace) -> None:
    walls, rss = results["walls"], results["rss"]
    labels = list(dict.fromkeys(label for label, _ in walls))
    print()
    print(
        f"{'runner':<22} {'trials':>7} {'wall s':>8} {'ms/trial':>9} {'driver MiB':>11} "
        f"{'worker MiB':>11} {'tasks':>7} {'same files':>11}"
    )
    for label in labels:
        for size in args.sizes:
            wall = statistics.median(walls[(label, size)])
            worker = results["worker_rss"].get((label, size))
            tasks = results["tasks"].get((label, size))
            same = results["same"].get((label, size))
            print(
                f"{label:<22} {size:>7} {wall:>8.1f} {1000 * wall / size:>9.2f} "
                f"{rss[(label, size)]:>11.0f} {'' if worker is None else f'{worker:.0f}':>11} "
                f"{'' if tasks is None else tasks:>7} "
                f"{'' if same is None else ('yes' if same else 'NO'):>11}"
            )
    for workers, seconds in results["start"].items():
        print(f"cluster start-up (scheduler + {workers} worker(s), not in a run): {seconds:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
