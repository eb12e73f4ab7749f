"""`trajcurate run` with inputs and outputs on real loopback object stores (S3: moto, GCS:
gcp-storage-emulator), through Beam's FileSystems: the same files as a local run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

pytest.register_assert_rewrite("object_stores")

from object_stores import (  # noqa: E402
    StoreServer,
    beam_store_options,
    create_bucket,
    download_prefix,
    upload_tree,
)

from pipelines.cli import main  # noqa: E402

pytest_plugins = ["object_stores"]

JOB = "2026-06-16__12-00-00"
DATA_FILES = ("im.jsonl", "lf.json", "lf.stats.json", "dataset_info.json")


def _run(inputs: str, output: str, *extra: str) -> int:
    argv = ["run", "--no-progress", "--instance-status", "all", "--input", inputs]
    return main([*argv, "--output", output, *extra])


@pytest.fixture(scope="module")
def local_run(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local")
    assert _run(str(shared_dir / "data" / "composed" / "jobs"), str(out)) == 0
    return out


def test_a_bucket_run_writes_what_a_local_run_writes(
    store: StoreServer, shared_dir: Path, local_run: Path, tmp_path: Path
) -> None:
    bucket = create_bucket(store, "corpus")
    upload_tree(store, shared_dir / "data" / "composed" / "jobs", f"{bucket}jobs/")
    fetched = tmp_path / "fetched"
    out = f"{bucket}curated"
    assert _run(f"{bucket}jobs", out, *beam_store_options(store.kind)) == 0
    download_prefix(store, out + "/", fetched)
    assert (fetched / JOB / "dead_letter.jsonl").read_bytes() == b""  # an empty object
    for name in DATA_FILES:
        assert (fetched / JOB / name).read_bytes() == (local_run / JOB / name).read_bytes(), name
    remote = orjson.loads((fetched / JOB / "manifest.json").read_bytes())
    local = orjson.loads((local_run / JOB / "manifest.json").read_bytes())
    assert remote["counts"] == local["counts"]
    assert remote["accounting"]["balanced"]
    rejects = [json.loads(x) for x in (fetched / JOB / "rejects.jsonl").read_text().splitlines()]
    assert all(r["source"].startswith(f"{bucket}jobs/{JOB}/") for r in rejects)


def test_a_reference_out_of_the_trial_prefix_is_refused(
    store: StoreServer, shared_dir: Path, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    shutil.copytree(shared_dir / "data" / "composed" / "jobs" / JOB, jobs / JOB)
    trial = jobs / JOB / "hello-world__69aUCrP"
    other = "maas-controller-conflict-detecti__j56vc8R"
    path = trial / "agent" / "trajectory.json"
    trajectory = orjson.loads(path.read_bytes())
    step = next(s for s in trajectory["steps"] if s.get("observation"))
    escape = f"../../{other}/agent/trajectory.json"
    step["observation"]["results"][0]["subagent_trajectory_ref"] = [
        {"session_id": "x", "trajectory_path": escape}
    ]
    path.write_bytes(orjson.dumps(trajectory))
    bucket = create_bucket(store, "escape")
    upload_tree(store, jobs, f"{bucket}jobs/")
    out = tmp_path / "out"
    assert _run(f"{bucket}jobs", str(out), *beam_store_options(store.kind)) == 0
    records = [orjson.loads(x) for x in (out / JOB / "im.jsonl").read_bytes().splitlines()]
    (main_record,) = [
        r for r in records if r["meta_info"]["unique_info"]["_instance_id"] == trial.name
    ]
    warnings = main_record["meta_info"]["unique_info"]["_instance_metadata"]["warnings"]
    assert any("refused trajectory path" in w and escape in w for w in warnings), warnings
    assert [r["meta_info"]["unique_info"]["_agent_type"] for r in records].count("subagent") <= 1


def test_a_missing_bucket_is_one_line_and_exit_2(
    store: StoreServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scheme = "s3" if store.kind == "s3" else "gs"
    missing = f"{scheme}://no-such-bucket-here/jobs"
    assert _run(missing, str(tmp_path / "o"), *beam_store_options(store.kind)) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("trajcurate run: error: --input: ") and missing in line, line
    assert len(line) < 400
    assert not (tmp_path / "o").exists()


def test_an_unreachable_store_is_one_line_in_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from object_stores import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"
    argv = ["--s3_endpoint_url", endpoint, "--s3_access_key_id", "x", "--s3_secret_access_key", "y"]
    assert _run("s3://bucket/jobs", str(tmp_path / "o"), *argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"trajcurate run: error: cannot reach the object store at {endpoint}: Connection refused"
    )


def test_every_folder_of_a_job_in_a_bucket_is_a_counted_trial(
    store: StoreServer, shared_dir: Path, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    shutil.copytree(shared_dir / "data" / "composed" / "jobs" / JOB, jobs / JOB)
    (jobs / JOB / "config-only__aaaaaaa").mkdir()
    (jobs / JOB / "config-only__aaaaaaa" / "config.json").write_text("{}")
    folders = sum(1 for p in (jobs / JOB).iterdir() if p.is_dir())
    bucket = create_bucket(store, "counted")
    upload_tree(store, jobs, f"{bucket}jobs/")
    out = tmp_path / "out"
    assert _run(f"{bucket}jobs", str(out), *beam_store_options(store.kind)) == 0
    manifest = orjson.loads((out / JOB / "manifest.json").read_bytes())
    assert manifest["job"] == JOB  # the job's config.json job_name, read from the bucket
    assert manifest["accounting"]["in"] == folders
    assert manifest["accounting"]["balanced"]
    rejects = [json.loads(x) for x in (out / JOB / "rejects.jsonl").read_text().splitlines()]
    assert any(r["instance_id"] == "config-only__aaaaaaa" for r in rejects)


def test_no_aws_credentials_is_one_line_not_minutes_of_retries(
    s3_store: StoreServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bucket = create_bucket(s3_store, "nocred")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to probe
    argv = ["--s3_endpoint_url", s3_store.endpoint]
    assert _run(f"{bucket}jobs", str(tmp_path / "o"), *argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"trajcurate run: error: --input: no AWS credentials for {bucket}jobs")
    assert not (tmp_path / "o").exists()


def test_no_google_credentials_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("STORAGE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))  # no gcloud login here
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # and no metadata server to ask
    assert _run("gs://corpus/jobs", str(tmp_path / "o")) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("trajcurate run: error: --input: no Google Cloud credentials for")
