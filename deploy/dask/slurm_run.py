"""`trajcurate run --runner dask` on a Slurm cluster: dask-jobqueue submits the Dask workers
as Slurm jobs, this process is the scheduler and the driver.

Run it on a login (or submit) node, in the trajcurate environment, with the inputs and the
output on a filesystem every node mounts at the same path (or on gs:// / s3://):

    python deploy/dask/slurm_run.py --python /shared/trajcurate/.venv/bin/python \\
        --jobs 4 --cores 8 --memory 32GB --partition cpu --walltime 04:00:00 \\
        -- --input /shared/harbor/jobs --output /shared/curated --min-score 0.6

Everything after `--` is `trajcurate run`'s (its `--runner dask --dask_address` are added
here). `--print-job-script` prints the sbatch script dask-jobqueue would submit and exits
(no Slurm needed; tests/test_dask_runner.py runs it). Each Slurm job is one node share of
`--cores` worker processes with one thread each (the pipeline's DoFns are Python: processes,
not threads). The workers run the same environment as the driver (`--python`): trajcurate,
apache-beam 2.77.0, dask and distributed 2026.8.0 (`pip install 'trajcurate[dask]'`), the
compiled scorer built for the nodes' CPU. Needs `pip install dask-jobqueue==0.9.0` here.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the trajcurate venv's python on the nodes")
    parser.add_argument("--jobs", type=int, default=2, help="Slurm jobs (worker nodes)")
    parser.add_argument("--cores", type=int, default=8, help="worker processes per job")
    parser.add_argument("--memory", default="32GB", help="memory per job")
    parser.add_argument("--partition", default=None, help="Slurm partition (-p)")
    parser.add_argument("--account", default=None, help="Slurm account (-A)")
    parser.add_argument("--walltime", default="04:00:00")
    parser.add_argument("--interface", default=None, help="network interface, e.g. ib0")
    parser.add_argument("--local-directory", default="$TMPDIR", help="workers' scratch")
    parser.add_argument("--print-job-script", action="store_true")
    parser.add_argument("run_args", nargs=argparse.REMAINDER, help="-- trajcurate run ...")
    return parser


def make_cluster(args: argparse.Namespace) -> Any:
    from dask_jobqueue import SLURMCluster

    return SLURMCluster(
        cores=args.cores,
        processes=args.cores,  # one thread per worker process
        memory=args.memory,
        queue=args.partition,
        account=args.account,
        walltime=args.walltime,
        interface=args.interface,
        python=args.python,
        local_directory=args.local_directory,
        job_name="trajcurate-dask",
        # Workers must not outlive the driver: a lost scheduler ends them within a minute.
        death_timeout=60,
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run_args = args.run_args[1:] if args.run_args[:1] == ["--"] else args.run_args
    cluster = make_cluster(args)
    try:
        if args.print_job_script:
            print(cluster.job_script())
            return 0
        from distributed import Client

        cluster.scale(jobs=args.jobs)
        with Client(cluster) as client:
            client.wait_for_workers(1, timeout=3600)  # the queue decides when the rest come
        from pipelines.cli import main as trajcurate

        address = ["--runner", "dask", "--dask_address", cluster.scheduler_address]
        code: int = trajcurate(["run", *run_args, *address])
        return code
    finally:
        cluster.close()


if __name__ == "__main__":
    sys.exit(main())
