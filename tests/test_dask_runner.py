"""`trajcurate run --runner dask` on a real Dask cluster: a `dask scheduler` and two
`dask worker` processes (each under its nanny, as `dask worker` starts them) on loopback.

The composed job and a 300-trial synth corpus run on it through the CLI, in a process of its
own (the driver), and every file of the output but the manifests and the run log (which
hold wall time, options and the Beam metrics) must be byte-identical to a local
(in-process FnApiRunner) run's, with the same counts and accounting. One worker is killed
(SIGKILL) in the middle of a run: Dask recomputes what it held elsewhere, and the run must
still publish the same files. The Dask runner reports no Beam metrics, and the manifest and
the summary say so. Marked `dask` (plain `pytest`, `make test` and CI run it; about a
minute); `-m 'not dask'` skips it.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from distributed import Client
from test_portable_runner import Service, free_port, python_env

from pipelines.cli import main
from pipelines.synth import SynthOptions, generate

pytestmark = pytest.mark.dask

DEPLOY = Path(__file__).resolve().parents[1] / "deploy" / "dask"

RUN_TIMEOUT_S = 300.0
NOT_DATA = ("manifest.json", "runs.jsonl")  # wall time, options, metrics: differ by design


class DaskCluster:
    """A scheduler and two worker processes; `client` is the test's own connection."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler = Service(
            "dask_scheduler",
            [
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dashboard-address",
                ":0",
            ],
            self.port,
            folder,
        )
        self.scheduler.wait_until_listening()
        self.workers = [
            Service(
                f"dask_worker_{i}",
                [
                    "distributed.cli.dask_worker",
                    self.address,
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--host",
                    "127.0.0.1",
                    "--no-dashboard",
                    "--name",
                    f"worker-{i}",
                ],
                self.port,
                folder,
            )
            for i in (1, 2)
        ]
        self.client = Client(self.address, timeout=30)
        self.wait_for_workers()

    def wait_for_workers(self, n: int = 2) -> None:
        self.client.wait_for_workers(n, timeout=120)

    def worker_pids(self) -> dict[str, int]:
        """Each worker's address and the pid of its process (not its nanny's)."""
        pids: dict[str, int] = self.client.run(os.getpid)
        return pids

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        for service in [*self.workers, self.scheduler]:
            service.stop()


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    cluster = DaskCluster(tmp_path_factory.mktemp("dask"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def synth300(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synth jobs of 150 trials (rejects, subagents, four Harbor agent formats)."""
    jobs = tmp_path_factory.mktemp("synth300") / "jobs"
    generate(SynthOptions(jobs, 2, 150, 5, 0.05), progress=io.StringIO())
    return jobs


def local_run(inputs: Path, output: Path) -> Path:
    assert main(["run", "--no-progress", "--input", str(inputs), "--output", str(output)]) == 0
    return output


@pytest.fixture(scope="module")
def composed_local(composed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return local_run(composed, tmp_path_factory.mktemp("composed-local") / "out")


@pytest.fixture(scope="module")
def synth_local(synth300: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return local_run(synth300, tmp_path_factory.mktemp("synth-local") / "out")


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "pipelines.cli", "run", "--no-progress", *args]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli(*args), cwd=cwd, env=python_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )


def files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in NOT_DATA
    }


def manifest(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads(path.read_bytes())
    return loaded


def assert_same_outputs(ran: Path, reference: Path) -> None:
    """Every data file byte for byte; each manifest's counts and accounting."""
    expected, got = files(reference), files(ran)
    assert sorted(got) == sorted(expected)
    assert any(name.endswith("im.jsonl") for name in expected)
    for name, data in expected.items():
        assert got[name] == data, name
    assert not list(ran.glob(".staging-*")), "the staging folder was published and removed"
    for job_manifest in sorted(reference.glob("*/manifest.json")):
        job = job_manifest.parent.name
        mine, theirs = manifest(ran / job / "manifest.json"), manifest(job_manifest)
        assert mine["counts"] == theirs["counts"], job
        assert mine["accounting"] == theirs["accounting"], job
        assert mine["files"] == theirs["files"], job  # sizes and sha256 of every file
    run, local = manifest(ran / "manifest.json"), manifest(reference / "manifest.json")
    assert run["counts"] == local["counts"]
    assert run["accounting"]["balanced"] and local["accounting"]["balanced"]
    without = ("pipeline_in", "pipeline_in_unchecked")
    assert {k: v for k, v in run["accounting"].items() if k not in without} == {
        k: v for k, v in local["accounting"].items() if k not in without
    }


def assert_says_no_metrics(done: subprocess.CompletedProcess[str], output: Path) -> None:
    """No Beam metrics: the pipeline_in check is said not to be made, in the summary and in
    the run manifest, and the run still balances by its own counts."""
    assert "pipeline_in not checked: the runner reports no Beam metrics" in done.stdout
    run = manifest(output / "manifest.json")
    assert run["beam_metrics"] == {} and "no Beam metrics" in run["beam_metrics_missing"]
    assert run["accounting"]["pipeline_in"] is None
    assert "no Beam metrics" in run["accounting"]["pipeline_in_unchecked"]


def test_composed_job_on_two_dask_workers_matches_a_local_run(
    composed: Path, composed_local: Path, dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    out = tmp_path / "dask"
    done = run_cli(
        "--input", str(composed), "--output", str(out), "--runner", "dask",
        "--dask_address", dask_cluster.address, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr + dask_cluster.scheduler.tail()
    assert_same_outputs(out, composed_local)
    assert_says_no_metrics(done, out)


def test_synth_corpus_on_two_dask_workers_matches_a_local_run(
    synth300: Path, synth_local: Path, dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    """Beam's own runner name and option (`--dask_client_address`) work as well."""
    out = tmp_path / "dask"
    done = run_cli(
        "--input", str(synth300), "--output", str(out),
        "--runner", "apache_beam.runners.dask.dask_runner.DaskRunner",
        "--dask_client_address", dask_cluster.address, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr + dask_cluster.scheduler.tail()
    assert_same_outputs(out, synth_local)
    rejects = (
        out / next(iter(sorted(p.name for p in out.iterdir() if p.is_dir())))
    ) / "rejects.jsonl"
    assert rejects.read_bytes(), "the synth corpus has rejects; their file must not be empty"
    assert_says_no_metrics(done, out)


def _wait_for_results_on(cluster: DaskCluster, worker: str, run: subprocess.Popen[str]) -> int:
    """How many results `worker` holds once it holds some, while the run goes on."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and run.poll() is None:
        held = len(cluster.client.has_what().get(worker, ()))
        if held >= 10:
            return held
        time.sleep(0.05)
    pytest.fail(f"the run ended (or timed out) before {worker} held results")


def test_a_killed_worker_is_survived_with_the_same_outputs(
    synth300: Path, synth_local: Path, dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    """SIGKILL of one worker process mid-run: the scheduler recomputes what it held (the
    writers find their spilled parts again: the driver deletes them, not the writers) and
    the run publishes the same files. The nanny starts a new worker process."""
    dask_cluster.wait_for_workers()
    out = tmp_path / "dask"
    command = cli(
        "--input", str(synth300), "--output", str(out), "--runner", "dask",
        "--dask_address", dask_cluster.address,
    )  # fmt: skip
    run = subprocess.Popen(
        command, cwd=tmp_path, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        victim, pid = sorted(dask_cluster.worker_pids().items())[0]
        held = _wait_for_results_on(dask_cluster, victim, run)
        os.kill(pid, signal.SIGKILL)
        stdout, stderr = run.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if run.poll() is None:
            run.kill()
    log = dask_cluster.scheduler.log.read_text(errors="replace")
    assert run.returncode == 0, f"{stdout}\n{stderr}\n{dask_cluster.scheduler.tail()}"
    assert held >= 10
    # The scheduler saw the worker go and lost results it held, recomputed elsewhere.
    lost = f"Removing worker '{victim}' caused the cluster to lose already computed task(s)"
    assert lost in log, dask_cluster.scheduler.tail()
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 0)
        pytest.fail(f"worker process {pid} still alive")
    assert_same_outputs(out, synth_local)
    dask_cluster.wait_for_workers()  # the nanny's new worker, for whatever runs next


def test_a_local_cluster_is_started_when_no_scheduler_is_given(
    composed: Path, composed_local: Path, tmp_path: Path
) -> None:
    out = tmp_path / "dask"
    done = run_cli(
        "--input", str(composed), "--output", str(out), "--runner", "DaskRunner",
        "--dask_workers", "2", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert_same_outputs(out, composed_local)


def test_an_unreachable_scheduler_fails_in_one_line_and_publishes_nothing(
    composed: Path, tmp_path: Path
) -> None:
    out = tmp_path / "dask"
    done = run_cli(
        "--input", str(composed), "--output", str(out), "--runner", "dask",
        "--dask_address", f"tcp://127.0.0.1:{free_port()}", "--dask_connection_timeout", "2",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("trajcurate run: error: the run failed, nothing was published: ")
    # Nothing published: no manifest, no job folder; the run log says why the run failed.
    assert not (out / "manifest.json").exists()
    assert not [p for p in out.iterdir() if p.is_dir()]
    (logged,) = (out / "runs.jsonl").read_bytes().splitlines()
    assert orjson.loads(logged)["mode"] == "failed"


def test_the_runner_s_names_and_options_are_checked(
    composed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--dry_run` translates the job for Dask and runs nothing; a misspelt Dask option is
    refused with the closest one, as every Beam option is."""
    for runner in ("dask", "DaskRunner", "apache_beam.runners.dask.dask_runner.DaskRunner"):
        args = ["run", "--input", str(composed), "--output", str(tmp_path / "out")]
        assert main([*args, "--runner", runner, "--dry_run=True"]) == 0, runner
        assert "dry run: the job was translated" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()
    args = ["run", "--input", str(composed), "--output", str(tmp_path / "out"), "--runner", "dask"]
    assert main([*args, "--dask_adress", "tcp://127.0.0.1:8786"]) == 2
    assert "did you mean --dask_address?" in capsys.readouterr().err


def test_each_bundle_runs_once_and_changes_no_element_another_transform_reads(
    synth300: Path, tmp_path: Path
) -> None:
    """Dask hands a task's result, the same objects, to every task that reads it on that
    worker: a DoFn that changed its input would change it for the others, by schedule
    (a job's lf.stats.json once got the run's counts so). And each partition of each ParDo
    runs once (`Bag.map_partitions` with a side input copied its whole upstream, writers
    included). The Dask translation runs here on Dask's synchronous scheduler, every input
    pickled before and after each bundle."""
    import apache_beam as beam
    import dask

    from pipelines import dask_runner
    from pipelines.config import RunConfig
    from pipelines.run_pipeline import build
    from pipelines.runner import pipeline_options

    changed: dict[str, int] = {}
    ran: dict[str, int] = {}
    run_bundle = dask_runner.run_bundle

    def checked(elements: Any, spec: Any, *sides: Any) -> Any:
        ran[spec.label] = ran.get(spec.label, 0) + 1
        elements = list(elements)
        before = [pickle.dumps(e) for e in [elements, *sides]]
        outputs = run_bundle(elements, spec, *sides)
        if [pickle.dumps(e) for e in [elements, *sides]] != before:
            changed[spec.label] = changed.get(spec.label, 0) + 1
        return outputs

    options = pipeline_options(["--runner", "dask"])
    pipeline = beam.Pipeline(runner=dask_runner.DaskRunner(), options=options)
    config = RunConfig(inputs=(str(synth300),), output=str(tmp_path), progress=False)
    build(pipeline, config, str(tmp_path / ".staging-test"))
    pipeline.replace_all([dask_runner._GroupByKeyOverride(), *dask_runner.dask_overrides()])
    translation = dask_runner._Translation(options, 4)
    readers: dict[int, list[str]] = {}

    class Readers(beam.pipeline.PipelineVisitor):  # type: ignore[misc]
        def visit_transform(self, applied: Any) -> None:
            for pcoll in applied.inputs:
                readers.setdefault(id(pcoll), []).append(applied.full_label)

    pipeline.visit(Readers())
    shared = {label for labels in readers.values() if len(labels) > 1 for label in labels}
    original, dask_runner.run_bundle = dask_runner.run_bundle, checked
    try:
        pipeline.visit(translation)
        dask.compute(*translation.leaves(), scheduler="sync")
    finally:
        dask_runner.run_bundle = original
    assert shared, "some PCollection is read by two transforms"
    assert not {label for label in changed if label in shared}, changed
    assert ran["Open/ParDo(OpenUnits)"] == 4 and max(ran.values()) == 4, ran


def test_the_kubernetes_recipe_s_commands_parse(
    composed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """deploy/dask/k8s: the submit Job's `trajcurate run` arguments (with the volume's paths
    swapped for the composed job) translate the job for Dask; it connects to the Service the
    operator makes for the DaskCluster; the scheduler's and workers' commands parse with
    distributed's own CLI."""
    import yaml
    from distributed.cli.dask_scheduler import main as scheduler_cli
    from distributed.cli.dask_worker import main as worker_cli

    job = yaml.safe_load((DEPLOY / "k8s" / "submit-job.yaml").read_text())
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["trajcurate"]
    paths = {"/data/jobs": str(composed), "/data/curated": str(tmp_path / "out")}
    args = list(container["args"])
    for volume, here in paths.items():
        args = [arg.replace(volume, here) for arg in args]
    assert main([*args, "--dry_run=True"]) == 0
    assert "translated" in capsys.readouterr().out
    cluster = yaml.safe_load((DEPLOY / "k8s" / "dask-cluster.yaml").read_text())
    address = next(a.split("=", 1)[1] for a in container["args"] if a.startswith("--dask_address"))
    assert address == f"tcp://{cluster['metadata']['name']}-scheduler:8786"
    for role, cli_main in (("scheduler", scheduler_cli), ("worker", worker_cli)):
        (pod,) = cluster["spec"][role]["spec"]["containers"]
        assert pod["command"] == ["dask"] and pod["args"][0] == role
        cli_main.make_context(f"dask {role}", list(pod["args"][1:]))  # raises on a bad flag


def test_the_slurm_recipe_renders_its_job_script() -> None:
    """deploy/dask/slurm_run.py --print-job-script: the sbatch script dask-jobqueue would
    submit (no Slurm needed): one-thread worker processes in the given environment."""
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "slurm_run.py"), "--python", "/shared/venv/bin/python",
         "--cores", "4", "--memory", "16GB", "--partition", "cpu", "--print-job-script",
         "--", "--input", "/shared/jobs", "--output", "/shared/curated"],
        env=python_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    script = done.stdout
    assert "#SBATCH -p cpu" in script and "#SBATCH --cpus-per-task=4" in script
    worker = next(line for line in script.splitlines() if "dask_worker" in line)
    assert worker.startswith("/shared/venv/bin/python -m distributed.cli.dask_worker tcp://")
    assert "--nworkers 4" in worker and "--nthreads 1" in worker
