"""Loopback S3 (moto) and GCS (gcp-storage-emulator) servers, driven through Beam FileSystems."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("object_stores")

from object_stores import (  # noqa: E402
    StoreServer,
    beam_store_options,
    create_bucket,
    download_prefix,
    free_port,
    list_prefix,
    store_env,
    upload_tree,
)

pytest_plugins = ["object_stores"]


@pytest.fixture(params=["s3", "gcs"])
def store(request: pytest.FixtureRequest) -> StoreServer:
    server: StoreServer = request.getfixturevalue(f"{request.param}_store")
    return server


def _fs() -> Any:
    from apache_beam.io.filesystems import FileSystems

    return FileSystems


def test_create_match_read_rename_delete(store: StoreServer) -> None:
    fs = _fs()
    base = create_bucket(store, "roundtrip")
    payload = bytes(range(256)) * 300 + b"\n\xff tail"
    with fs.create(base + "run/a/one.bin") as f:
        f.write(payload)
    with fs.create(base + "run/b/c/two.txt") as f:
        f.write(b"two")

    found = {m.path: m.size_in_bytes for m in fs.match([base + "run/**"])[0].metadata_list}
    assert found == {base + "run/a/one.bin": len(payload), base + "run/b/c/two.txt": 3}
    assert found == list_prefix(store, base + "run/")

    with fs.open(base + "run/a/one.bin") as f:
        assert f.read() == payload

    fs.rename([base + "run/a/one.bin"], [base + "run/moved/one.bin"])
    assert set(list_prefix(store, base + "run/")) == {
        base + "run/moved/one.bin",
        base + "run/b/c/two.txt",
    }
    with fs.open(base + "run/moved/one.bin") as f:
        assert f.read() == payload

    fs.delete([base + "run/moved/one.bin", base + "run/b/c/two.txt"])
    assert list_prefix(store, base + "run/") == {}
    assert fs.match([base + "run/**"])[0].metadata_list == []


def test_upload_tree_then_match_and_download(store: StoreServer, tmp_path: Path) -> None:
    src = tmp_path / "src"
    files = {"job/trial-1/result.json": b'{"reward": 1}', "job/trial-2/agent/log.txt": b"x" * 5000}
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    base = create_bucket(store, "tree")
    urls = upload_tree(store, src, base + "in/")
    assert sorted(urls) == sorted(base + "in/" + rel for rel in files)

    matched = _fs().match([base + "in/**"])[0].metadata_list
    assert {m.path: m.size_in_bytes for m in matched} == {
        base + "in/" + rel: len(data) for rel, data in files.items()
    }
    got = download_prefix(store, base + "in/", tmp_path / "dst")
    assert {p.relative_to(tmp_path / "dst").as_posix(): p.read_bytes() for p in got} == files


def test_options_and_env_helpers(s3_server: StoreServer, gcs_server: StoreServer) -> None:
    assert beam_store_options("s3") == [
        f"--s3_endpoint_url=http://127.0.0.1:{s3_server.port}",
        "--s3_access_key_id=testing",
        "--s3_secret_access_key=testing",
        "--s3_region_name=us-east-1",
    ]
    assert store_env("s3")["AWS_ENDPOINT_URL_S3"] == s3_server.endpoint
    assert store_env("gcs")["STORAGE_EMULATOR_HOST"] == gcs_server.endpoint
    assert Path(store_env("gcs")["GOOGLE_APPLICATION_CREDENTIALS"]).is_file()


def test_env_does_not_leak(s3_server: StoreServer, gcs_server: StoreServer) -> None:
    """Only the *_store fixtures set the env; the session servers alone set nothing."""
    import os

    assert os.environ.get("STORAGE_EMULATOR_HOST") != gcs_server.endpoint
    assert os.environ.get("AWS_ENDPOINT_URL_S3") != s3_server.endpoint


def test_missing_bucket_s3(s3_store: StoreServer) -> None:
    from apache_beam.io.aws.clients.s3.messages import S3ClientError

    fs = _fs()
    # Beam's S3 match treats a 404 on list as "no objects": a missing bucket matches nothing.
    assert fs.match([s3_store.url("no-such-bucket", "p/**")])[0].metadata_list == []
    with pytest.raises(FileNotFoundError, match="Not found: s3://no-such-bucket/x"):
        fs.open(s3_store.url("no-such-bucket", "x")).read()
    with (
        pytest.raises(S3ClientError, match="NoSuchBucket") as err,
        fs.create(s3_store.url("no-such-bucket", "x")) as f,
    ):
        f.write(b"x")
    assert err.value.code == 404


def test_missing_bucket_gcs(gcs_store: StoreServer) -> None:
    from apache_beam.io.filesystem import BeamIOError
    from google.api_core.exceptions import NotFound

    fs = _fs()
    with pytest.raises(BeamIOError, match="NotFound"):
        fs.match([gcs_store.url("no-such-bucket", "p/**")])
    with pytest.raises(NotFound):
        fs.open(gcs_store.url("no-such-bucket", "x")).read()


def test_unreachable_s3_endpoint(
    s3_server: StoreServer, use_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A closed port: Beam wraps botocore's connect error in S3ClientError(code=None).

    Beam retries that (7 times, 5 s doubling: ~10 minutes of back-off before it gives up), so
    the back-off sleeps are skipped here; the product has to probe the endpoint itself to
    fail fast.
    """
    from apache_beam.io.aws.clients.s3.messages import S3ClientError
    from apache_beam.utils import retry

    monkeypatch.setattr(retry.Clock, "sleep", lambda self, value: None)
    dead = StoreServer("s3", free_port(), s3_server.scratch, dict(s3_server.env))
    dead.env["AWS_ENDPOINT_URL_S3"] = dead.endpoint
    use_store(dead)
    start = time.monotonic()
    with pytest.raises(S3ClientError, match="Could not connect to the endpoint URL") as err:
        _fs().open(dead.url("bucket", "x")).read()
    assert err.value.code is None
    assert time.monotonic() - start < 30
