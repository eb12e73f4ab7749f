"""The same pipeline on other runners: multi-process local, portable form, Dataflow (offline)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.config import RunConfig

pytest.register_assert_rewrite("object_stores")

from object_stores import StoreServer, beam_store_options, create_bucket, upload_tree  # noqa: E402

pytest_plugins = ["object_stores"]

JOB = "2026-06-16__12-00-00"
DATA_FILES = ("im.jsonl", "lf.json", "lf.stats.json", "rejects.jsonl", "dead_letter.jsonl")


def run(composed: Path, out: Path, *extra: str) -> int:
    return main(["run", "--no-progress", "--input", str(composed), "--output", str(out), *extra])


def test_multi_processing_gives_the_same_files_and_prints_nothing(
    composed: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every DoFn pickles and keeps no hidden global state: separate worker processes agree.
    `--direct_num_workers 2` alone runs them as processes, which print nothing of their
    start. Installed without the `gcp` extra, Beam warns at import that apitools is
    missing, and each worker printed that warning and its `Logging handler created.` line:
    here the workers import an apitools that fails, as in such an install."""
    fake = tmp_path / "site" / "apitools"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('not installed')\n")
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(fake.parent), path])))
    assert run(composed, tmp_path / "memory") == 0
    capfd.readouterr()
    assert run(composed, tmp_path / "procs", "--direct_num_workers=2") == 0
    assert capfd.readouterr().err == ""
    for name in DATA_FILES:
        memory = (tmp_path / "memory" / JOB / name).read_bytes()
        assert (tmp_path / "procs" / JOB / name).read_bytes() == memory, name


def test_a_quiet_root_logger_prints_no_first_warning() -> None:
    """What keeps a worker's start silent: with a handler on the root logger, a first
    `logging.warning` installs none on stderr (without it, it prints)."""
    from pipelines.local_worker import MODULE

    code = "import logging; {}; logging.warning('planted'); logging.getLogger('x').info('too')"
    quiet = f"from {MODULE} import quiet_root_logger; quiet_root_logger()"
    for setup, expected in (("pass", "WARNING:root:planted\n"), (quiet, "")):
        done = subprocess.run(
            [sys.executable, "-c", code.format(setup)], capture_output=True, text=True, check=True
        )
        assert done.stderr == expected


@pytest.mark.parametrize(
    ("beam_args", "mode", "log_level"),
    [
        ([], "in_memory", None),
        (["--direct_num_workers=2"], "multi_processing", "ERROR"),
        (["--direct_num_workers", "0"], "multi_processing", "ERROR"),  # 0: one per CPU
        (
            ["--direct_num_workers=2", "--direct_running_mode=multi_threading"],
            "multi_threading",
            "ERROR",
        ),
        (
            ["--direct_num_workers=2", "--default_sdk_harness_log_level=INFO"],
            "multi_processing",
            "INFO",
        ),
        (["--direct_num_workers=2", "--runner=PortableRunner"], "in_memory", None),
    ],
)
def test_local_workers_are_processes_unless_a_mode_is_given(
    beam_args: list[str], mode: str, log_level: str | None
) -> None:
    """Beam's default in_memory mode runs every local worker in one thread: more than one
    worker then only adds a reshuffle, so without a mode they run as processes."""
    from apache_beam.options.pipeline_options import DirectOptions, WorkerOptions

    from pipelines.runner import pipeline_options

    options = pipeline_options(beam_args)
    assert options.view_as(DirectOptions).direct_running_mode == mode
    assert options.view_as(WorkerOptions).default_sdk_harness_log_level == log_level


def test_a_template_launch_s_job_publishes_what_a_driver_publishes(
    composed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `--template_location` no driver is there at the end: the job's last stage
    completes and publishes the outputs (run here by the local runner, as a worker would)."""
    import orjson

    assert run(composed, tmp_path / "driver") == 0
    capsys.readouterr()
    template = ("--template_location", str(tmp_path / "graph.json"))
    assert run(composed, tmp_path / "job", *template) == 0
    assert "the job publishes its outputs" in capsys.readouterr().out
    for name in (*DATA_FILES, "dataset_info.json"):
        driver = (tmp_path / "driver" / JOB / name).read_bytes()
        assert (tmp_path / "job" / JOB / name).read_bytes() == driver, name
    assert (tmp_path / "job" / "lf.stats.json").read_bytes() == (
        tmp_path / "driver" / "lf.stats.json"
    ).read_bytes()
    manifest = orjson.loads((tmp_path / "job" / JOB / "manifest.json").read_bytes())
    assert manifest["accounting"]["balanced"] and manifest["wall_seconds"] is None
    assert not [p.name for p in (tmp_path / "job").iterdir() if p.name.startswith(".staging")]
    (line,) = (tmp_path / "job" / "runs.jsonl").read_bytes().splitlines()
    assert orjson.loads(line)["curated_jobs"] == [JOB]


def test_portable_form_builds(composed: Path, tmp_path: Path) -> None:
    import apache_beam as beam

    from pipelines.run_pipeline import build

    pipeline = beam.Pipeline()
    build(pipeline, RunConfig(inputs=(str(composed),), output=str(tmp_path)))
    proto = pipeline.to_runner_api()
    names = {t.unique_name for t in proto.components.transforms.values()}
    assert {"Detect", "Open", "Curate", "Filter", "SpillBundles", "GroupShards"} <= names


@pytest.mark.parametrize(
    ("beam_args", "reshuffled"),
    [
        ([], False),  # the in-process runner, one worker: nothing to spread the units over
        (["--direct_num_workers=2", "--direct_running_mode=multi_processing"], True),
        (["--runner=PortableRunner", "--job_endpoint=localhost:1"], True),
    ],
)
def test_units_are_spread_only_where_there_are_workers(
    composed: Path, tmp_path: Path, beam_args: list[str], reshuffled: bool
) -> None:
    import apache_beam as beam

    from pipelines.run_pipeline import build
    from pipelines.runner import pipeline_options

    pipeline = beam.Pipeline(options=pipeline_options(beam_args))
    build(pipeline, RunConfig(inputs=(str(composed),), output=str(tmp_path)))
    names = {t.unique_name for t in pipeline.to_runner_api().components.transforms.values()}
    assert ("ReshuffleUnits" in names) is reshuffled


@pytest.mark.skipif(
    importlib.util.find_spec("apitools") is None
    or importlib.util.find_spec("google.cloud.storage") is None,
    reason="needs the optional apache-beam[gcp] extra (pip install 'trajcurate[gcp]')",
)
def test_dataflow_dry_run_translates_a_gcs_job_offline(
    composed: Path, gcs_store: StoreServer, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = create_bucket(gcs_store, "trajcurate-dry-run")
    upload_tree(gcs_store, composed, f"{bucket}jobs/")
    options = [
        "--runner",
        "DataflowRunner",
        "--dry_run=True",
        "--project",
        "trajcurate-test",
        "--region",
        "us-central1",
        f"--temp_location={bucket}tmp",
        f"--staging_location={bucket}staging",
    ]
    argv = ["run", "--no-progress", "--input", f"{bucket}jobs", "--output", f"{bucket}out"]
    assert main([*argv, *options, *beam_store_options("gcs")]) == 0
    assert "dry run" in capsys.readouterr().out


@pytest.mark.parametrize("local", ["--input", "--output"])
def test_dataflow_refuses_local_paths_in_one_line(
    composed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], local: str
) -> None:
    paths = {"--input": "gs://in-bucket/jobs", "--output": "gs://out-bucket/curated"}
    paths[local] = str(composed if local == "--input" else tmp_path / "out")
    argv = ["run", "--input", paths["--input"], "--output", paths["--output"]]
    assert main([*argv, "--runner", "DataflowRunner", "--project", "p"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"trajcurate run: error: {local}: {paths[local]} is a local path, which Dataflow "
        "workers cannot reach; give a gs:// path"
    )


@pytest.mark.skipif(
    importlib.util.find_spec("apitools") is None
    or importlib.util.find_spec("google.cloud.storage") is None,
    reason="needs the optional apache-beam[gcp] extra (pip install 'trajcurate[gcp]')",
)
def test_the_deploy_readme_offline_validation_translates_a_gcs_job() -> None:
    """deploy/README.md's command, as written: the flex-template launcher, a dry run, gs://
    paths; nothing is contacted."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    command = [
        sys.executable,
        "deploy/dataflow/launcher.py",
        "--input=gs://my-bucket/in",
        "--output=gs://my-bucket/out",
        "--min_score=0.6",
        "--runner=DataflowRunner",
        "--dry_run=True",
        "--project=my-project",
        "--region=us-central1",
        "--temp_location=gs://my-bucket/tmp",
        "--staging_location=gs://my-bucket/staging",
    ]
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "dry run: the job was translated" in done.stdout


def test_dataflow_without_an_sdk_image_is_warned(capsys: pytest.CaptureFixture[str]) -> None:
    from pipelines.run_checks import check_cloud_paths

    config = RunConfig(
        inputs=("gs://b/jobs",),
        output="gs://b/out",
        beam_args=("--runner=DataflowRunner", "--temp_location=gs://b/tmp"),
    )
    check_cloud_paths(config)
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("trajcurate run: warning: no --sdk_container_image:")
    assert "lacks trajcurate" in line
    with_image = RunConfig(
        inputs=("gs://b/jobs",),
        output="gs://b/out",
        beam_args=(
            "--runner=DataflowRunner",
            "--temp_location=gs://b/t",
            "--sdk_container_image=i",
        ),
    )
    check_cloud_paths(with_image)
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(
    importlib.util.find_spec("apitools") is None
    or importlib.util.find_spec("google.cloud.storage") is None,
    reason="needs the optional apache-beam[gcp] extra (pip install 'trajcurate[gcp]')",
)
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--project=my-project"],
            "--temp_location: Dataflow needs a gs:// temp location (without one Beam goes "
            "online to create a default bucket)",
        ),
        (
            ["--project=BAD_Project!", "--temp_location=gs://my-bucket/tmp"],
            "Beam refused the pipeline options: Invalid Project ID (BAD_Project!). Please make "
            "sure you specified the Project ID, not project description.",
        ),
    ],
)
def test_dataflow_option_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    argv = ["run", "--input", "gs://my-bucket/in", "--output", "gs://my-bucket/out"]
    flags = ["--runner", "DataflowRunner", "--dry_run=True", "--region=us-central1", *options]
    assert main([*argv, *flags]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"trajcurate run: error: {message}"
