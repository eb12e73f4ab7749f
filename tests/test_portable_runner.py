"""`trajcurate run` the way a Flink cluster runs it: PortableRunner, a job service, and SDK
workers in other processes started by an EXTERNAL worker pool (Flink's worker-pool sidecar).

Beam's Flink job server cannot be fetched here, so Beam's Python job service stands in for it;
the worker pool is the same `worker_pool_main` the `apache/beam_python3.11_sdk --worker_pool`
image runs. The workers write `<output>/.staging-<id>/` and the driver publishes it: the data
files must be byte-identical to a local run's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_pipeline_run import DATA_FILES  # every data file; manifests differ in wall time

from pipelines.cli import main

START_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 300.0  # a worker that cannot start makes a portable job wait forever


@pytest.fixture(scope="module")
def composed(shared_dir: Path) -> Path:
    return shared_dir / "data" / "composed" / "jobs"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def python_env() -> dict[str, str]:
    """The worker pool starts each SDK worker as `python` from PATH: make it this venv's."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


class Service:
    """A Beam service in its own process, logging to a file; stopped on exit."""

    def __init__(self, name: str, args: list[str], port: int, folder: Path) -> None:
        self.name, self.port = name, port
        self.log = folder / f"{name}.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", *args],
                cwd=folder,
                env=python_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_until_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"{self.name} exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                with socket.create_connection(("localhost", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        pytest.fail(f"{self.name} not listening on {self.port} after {START_TIMEOUT_S} s")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Terminate, then kill, the service's own process group (the pool's SDK workers too)."""
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)  # the session start_new_session gave it
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace)


@pytest.fixture(scope="module")
def portable_services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Service]]:
    folder = tmp_path_factory.mktemp("beam-services")
    services: dict[str, Service] = {}
    try:
        job_port, pool_port = free_port(), free_port()
        services["job_service"] = Service(
            "job_service",
            ["apache_beam.runners.portability.local_job_service_main", "--port", str(job_port)],
            job_port,
            folder,
        )
        services["worker_pool"] = Service(
            "worker_pool",
            ["apache_beam.runners.worker.worker_pool_main", f"--service_port={pool_port}"],
            pool_port,
            folder,
        )
        for service in services.values():
            service.wait_until_listening()
        yield services
    finally:
        for service in services.values():
            service.stop()


def manifest(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads(path.read_bytes())
    return loaded


def test_portable_run_with_external_workers_matches_a_local_run(
    composed: Path, tmp_path: Path, portable_services: dict[str, Service]
) -> None:
    jobs, pool = portable_services["job_service"], portable_services["worker_pool"]
    portable, local = tmp_path / "portable", tmp_path / "local"
    command = [
        sys.executable,
        "-m",
        "pipelines.cli",
        "run",
        "--input",
        str(composed),
        "--output",
        str(portable),
        "--runner",
        "PortableRunner",
        "--job_endpoint",
        f"localhost:{jobs.port}",
        # deploy/flink/run-local.sh's flags; Beam's Python job service serves artifacts on
        # its job port (Flink's job server: 8098) and ignores Flink's --parallelism.
        "--artifact_endpoint",
        f"localhost:{jobs.port}",
        "--environment_type",
        "EXTERNAL",
        "--environment_config",
        f"localhost:{pool.port}",
        "--parallelism",
        "4",
        "--no-progress",
    ]
    try:
        done = subprocess.run(
            command,
            cwd=tmp_path,
            env=python_env(),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"portable run timed out\n{jobs.tail()}\n{pool.tail()}")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{jobs.tail()}\n{pool.tail()}"
    # The bundles ran in SDK worker processes the pool started, not in the driver.
    assert "Starting worker with command" in pool.log.read_text(), pool.tail()

    assert main(["run", "--no-progress", "--input", str(composed), "--output", str(local)]) == 0

    assert not list(portable.glob(".staging-*")), "the staging folder was published and removed"
    job_folders = sorted(p.name for p in local.iterdir() if p.is_dir())
    assert job_folders, "the local run wrote no job folder"
    assert sorted(p.name for p in portable.iterdir() if p.is_dir()) == job_folders
    for job in job_folders:
        names = sorted(p.name for p in (local / job).iterdir())
        assert sorted(p.name for p in (portable / job).iterdir()) == names, job
        assert set(DATA_FILES) <= set(names), job
        for name in DATA_FILES:
            assert (portable / job / name).read_bytes() == (local / job / name).read_bytes(), (
                f"{job}/{name}"
            )
        ran, reference = (
            manifest(portable / job / "manifest.json"),
            manifest(local / job / "manifest.json"),
        )
        assert ran["counts"] == reference["counts"], job
        assert ran["accounting"] == reference["accounting"], job
    assert (portable / "lf.stats.json").read_bytes() == (local / "lf.stats.json").read_bytes()
    ran, reference = manifest(portable / "manifest.json"), manifest(local / "manifest.json")
    assert ran["accounting"]["balanced"]
    for key in ("counts", "accounting", "beam_metrics"):  # metrics come back through the job API
        assert ran[key] == reference[key], key
