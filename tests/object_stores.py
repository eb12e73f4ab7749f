"""Real S3 and GCS servers on loopback for tests, reachable through Beam's FileSystems.

- `s3_server` (session): moto in server mode on a free 127.0.0.1 port.
- `gcs_server` (session): gcp-storage-emulator, in memory, on a free 127.0.0.1 port.
- `s3_store` / `gcs_store` (per test): the server plus the environment and Beam FileSystems
  options that point `s3://` / `gs://` at it; both are restored when the test ends, so nothing
  leaks into other tests, and nothing ever points at real AWS or GCP.

Use them from a test module with `pytest_plugins = ["object_stores"]` (tests/ is on sys.path)
or import the fixtures by name.

What each store needs (also `beam_store_options(kind)` / `store_env(kind)`):

S3 (moto): Beam args `--s3_endpoint_url http://127.0.0.1:PORT --s3_access_key_id testing
  --s3_secret_access_key testing --s3_region_name us-east-1`; env AWS_ACCESS_KEY_ID,
  AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 (so a client built without the
  Beam args still lands on loopback) and AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE pointed
  at nothing (no developer profile is read).

GCS (emulator): no Beam arg exists for the endpoint. google-cloud-storage's Client honours
  STORAGE_EMULATOR_HOST (it becomes the API endpoint), so Beam's gcsio talks to the emulator
  once that is set. Credentials: Beam's gcsio first calls google.auth.default() (with 4 retries
  and 2-16 s back-off, ~30 s, and a metadata-server probe on a non-loopback address) and only
  then falls back to an anonymous client. To skip that, GOOGLE_APPLICATION_CREDENTIALS points at
  a fake `authorized_user` file whose access token never expires: google.auth loads it without
  any network call, never refreshes it, and the emulator ignores the bearer token. Also
  NO_GCE_CHECK=True, GOOGLE_CLOUD_PROJECT=test, CLOUDSDK_CONFIG at an empty folder.
  Beam caches the credentials once per process (auth._Credentials); the fixture resets that
  cache before and after each test.
"""

from __future__ import annotations

import contextlib
import json
import socket
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

Kind = Literal["s3", "gcs"]

FAKE_AWS_KEY = "testing"
FAKE_AWS_SECRET = "testing"
FAKE_AWS_REGION = "us-east-1"
FAKE_GCP_PROJECT = "test"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (bind port 0, then close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_listening(port: int, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError as err:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no server came up on 127.0.0.1:{port}") from err
            time.sleep(0.05)


@dataclass
class StoreServer:
    """A running loopback object store: its kind, endpoint and the env that reaches it."""

    kind: Kind
    port: int
    scratch: Path
    env: dict[str, str] = field(default_factory=dict)
    handle: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def scheme(self) -> str:
        return "s3" if self.kind == "s3" else "gs"

    def url(self, bucket: str, key: str = "") -> str:
        return f"{self.scheme}://{bucket}/{key}"

    def beam_args(self) -> list[str]:
        """The Beam pipeline args a `trajcurate run` (or FileSystems) needs for this store."""
        if self.kind == "s3":
            return [
                f"--s3_endpoint_url={self.endpoint}",
                f"--s3_access_key_id={FAKE_AWS_KEY}",
                f"--s3_secret_access_key={FAKE_AWS_SECRET}",
                f"--s3_region_name={FAKE_AWS_REGION}",
            ]
        # GCS: the endpoint and credentials come from the environment (see module doc).
        return [f"--project={FAKE_GCP_PROJECT}"]


# The servers running in this session, so `beam_store_options(kind)` needs no handle.
_RUNNING: dict[Kind, StoreServer] = {}


def beam_store_options(kind: Kind) -> list[str]:
    """Beam args for a running `kind` store ("s3" or "gcs"); its env is `store_env(kind)`."""
    return _running(kind).beam_args()


def store_env(kind: Kind) -> dict[str, str]:
    """The environment variables a process (e.g. a `trajcurate run` subprocess) needs."""
    return dict(_running(kind).env)


def _running(kind: Kind) -> StoreServer:
    if kind not in _RUNNING:
        raise RuntimeError(f"no {kind} server is running: use the {kind}_server fixture")
    return _RUNNING[kind]


# The variables that could send a client somewhere real: dropped while a store is in use.
_AWS_UNSET = (
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
)
_GCP_UNSET = ("GOOGLE_CLOUD_QUOTA_PROJECT", "API_ENDPOINT_OVERRIDE", "GCLOUD_PROJECT")


def _s3_env(port: int, scratch: Path) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": FAKE_AWS_KEY,
        "AWS_SECRET_ACCESS_KEY": FAKE_AWS_SECRET,
        "AWS_DEFAULT_REGION": FAKE_AWS_REGION,
        "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}",
        "AWS_CONFIG_FILE": str(scratch / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(scratch / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def _gcs_env(port: int, scratch: Path) -> dict[str, str]:
    adc = scratch / "fake-adc.json"
    adc.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "fake-client.apps.example",
                "client_secret": "fake-secret",
                "refresh_token": "fake-refresh-token",
                "token": "fake-access-token",
                "expiry": "2099-01-01T00:00:00Z",
                "quota_project_id": FAKE_GCP_PROJECT,
            }
        )
    )
    gcloud = scratch / "gcloud"
    gcloud.mkdir(exist_ok=True)
    return {
        "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}",
        "GOOGLE_APPLICATION_CREDENTIALS": str(adc),
        "GOOGLE_CLOUD_PROJECT": FAKE_GCP_PROJECT,
        "CLOUDSDK_CONFIG": str(gcloud),
        "NO_GCE_CHECK": "True",
    }


# ---- servers (session) ---------------------------------------------------------------------


@contextlib.contextmanager
def _serving(kind: Kind, start: Callable[[int], Any]) -> Iterator[StoreServer]:
    """Start a `kind` server on a free loopback port (`start(port)` returns it started),
    register it while the session uses it, and stop it at the end."""
    with tempfile.TemporaryDirectory(prefix=f"{kind}-server-") as tmp:
        port = free_port()
        server = start(port)
        _wait_listening(port)
        env = _s3_env(port, Path(tmp)) if kind == "s3" else _gcs_env(port, Path(tmp))
        store = StoreServer(kind, port, Path(tmp), env, server)
        _RUNNING[kind] = store
        try:
            yield store
        finally:
            _RUNNING.pop(kind, None)
            server.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[StoreServer]:
    """moto in server mode on 127.0.0.1:<free port>; stopped at the end of the session."""
    moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed")
    pytest.importorskip("apache_beam.io.aws.s3filesystem")
    pytest.importorskip("boto3", reason="apache-beam[aws] is not installed")

    def start(port: int) -> Any:
        server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        return server

    with _serving("s3", start) as store:
        yield store


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[StoreServer]:
    """gcp-storage-emulator (in memory) on 127.0.0.1:<free port>; stopped at the end."""
    emulator = pytest.importorskip(
        "gcp_storage_emulator.server", reason="gcp-storage-emulator is not installed"
    )
    pytest.importorskip("apache_beam.io.gcp.gcsio", reason="apache-beam[gcp] is not installed")
    pytest.importorskip("google.cloud.storage", reason="apache-beam[gcp] is not installed")

    def start(port: int) -> Any:
        server = emulator.create_server("127.0.0.1", port, in_memory=True)
        server._api.daemon = True  # a test that dies mid-way must not hang the interpreter
        server.start()
        return server

    with _serving("gcs", start) as store:
        yield store


# ---- per-test: env + Beam FileSystems options, restored afterwards ---------------------------


def _reset_beam_gcp_credentials() -> None:
    """Forget the credentials Beam's gcsio cached for this process (they follow the env)."""
    try:
        from apache_beam.internal.gcp import auth
    except ImportError:  # pragma: no cover - no gcp extra
        return
    cache = auth._Credentials
    with cache._credentials_lock:
        cache._credentials_init = False
        cache._credentials = None


@pytest.fixture
def use_store() -> Iterator[Any]:
    """`use_store(server, *extra_beam_args)`: env + FileSystems options for the test only."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    saved_options = FileSystems._pipeline_options
    mp = pytest.MonkeyPatch()

    def apply(server: StoreServer, *extra: str) -> StoreServer:
        for name in _AWS_UNSET if server.kind == "s3" else _GCP_UNSET:
            mp.delenv(name, raising=False)
        for name, value in server.env.items():
            mp.setenv(name, value)
        if server.kind == "gcs":
            _reset_beam_gcp_credentials()
        FileSystems.set_options(PipelineOptions([*server.beam_args(), *extra]))
        return server

    try:
        yield apply
    finally:
        FileSystems.set_options(saved_options)
        mp.undo()
        _reset_beam_gcp_credentials()


@pytest.fixture
def s3_store(s3_server: StoreServer, use_store: Any) -> StoreServer:
    """The S3 server, with env and Beam FileSystems options set for this test only."""
    store: StoreServer = use_store(s3_server)
    return store


@pytest.fixture
def gcs_store(gcs_server: StoreServer, use_store: Any) -> StoreServer:
    """The GCS emulator, with env and Beam FileSystems options set for this test only."""
    store: StoreServer = use_store(gcs_server)
    return store


@pytest.fixture(params=["s3", "gcs"])
def store(request: pytest.FixtureRequest) -> StoreServer:
    """Each store in turn (a test using it runs once on S3, once on GCS)."""
    server: StoreServer = request.getfixturevalue(f"{request.param}_store")
    return server


# ---- helpers through the native clients (boto3 / google-cloud-storage) ----------------------


def _split(url: str) -> tuple[str, str]:
    scheme, _, rest = url.partition("://")
    if scheme not in ("s3", "gs") or not rest:
        raise ValueError(f"not an s3:// or gs:// url: {url!r}")
    bucket, _, key = rest.partition("/")
    return bucket, key


def s3_client(server: StoreServer) -> Any:
    import boto3

    return boto3.session.Session().client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=FAKE_AWS_KEY,
        aws_secret_access_key=FAKE_AWS_SECRET,
        region_name=FAKE_AWS_REGION,
    )


def gcs_client(server: StoreServer) -> Any:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    return storage.Client(
        project=FAKE_GCP_PROJECT,
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": server.endpoint},
    )


def create_bucket(server: StoreServer, bucket: str) -> str:
    """Create `bucket` (no error if it exists); returns its `s3://bucket/` / `gs://bucket/`."""
    if server.kind == "s3":
        client = s3_client(server)
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=bucket)
    else:
        from google.api_core.exceptions import Conflict

        with contextlib.suppress(Conflict):
            gcs_client(server).create_bucket(bucket)
    return server.url(bucket)


def upload_tree(server: StoreServer, local_dir: Path, url: str) -> list[str]:
    """Upload every file under `local_dir` to `url` (`s3://bucket/prefix/`); returns the urls."""
    bucket, prefix = _split(url)
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    files = sorted(p for p in Path(local_dir).rglob("*") if p.is_file())
    out: list[str] = []
    if server.kind == "s3":
        client = s3_client(server)
        for path in files:
            key = prefix + path.relative_to(local_dir).as_posix()
            client.upload_file(str(path), bucket, key)
            out.append(server.url(bucket, key))
    else:
        gbucket = gcs_client(server).bucket(bucket)
        for path in files:
            key = prefix + path.relative_to(local_dir).as_posix()
            gbucket.blob(key).upload_from_filename(str(path))
            out.append(server.url(bucket, key))
    return out


def list_prefix(server: StoreServer, url: str) -> dict[str, int]:
    """Every object under `url` (recursively): {full url: size in bytes}."""
    bucket, prefix = _split(url)
    found: dict[str, int] = {}
    if server.kind == "s3":
        paginator = s3_client(server).get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                found[server.url(bucket, obj["Key"])] = int(obj["Size"])
    else:
        for blob in gcs_client(server).list_blobs(bucket, prefix=prefix):
            found[server.url(bucket, blob.name)] = int(blob.size or 0)
    return found


def download_prefix(server: StoreServer, url: str, local_dir: Path) -> list[Path]:
    """Download every object under `url` into `local_dir`, keeping the paths below the prefix."""
    bucket, prefix = _split(url)
    local_dir = Path(local_dir)
    written: list[Path] = []
    for obj_url in sorted(list_prefix(server, url)):
        key = _split(obj_url)[1]
        rel = key[len(prefix) :].lstrip("/") if key.startswith(prefix) else key
        if not rel or rel.endswith("/"):
            continue
        dest = local_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if server.kind == "s3":
            s3_client(server).download_file(bucket, key, str(dest))
        else:
            gcs_client(server).bucket(bucket).blob(key).download_to_filename(str(dest))
        written.append(dest)
    return written


def read_object(server: StoreServer, url: str) -> bytes:
    bucket, key = _split(url)
    if server.kind == "s3":
        body: bytes = s3_client(server).get_object(Bucket=bucket, Key=key)["Body"].read()
        return body
    data: bytes = gcs_client(server).bucket(bucket).blob(key).download_as_bytes()
    return data


__all__ = [
    "StoreServer",
    "beam_store_options",
    "create_bucket",
    "download_prefix",
    "free_port",
    "gcs_client",
    "gcs_server",
    "gcs_store",
    "list_prefix",
    "read_object",
    "s3_client",
    "s3_server",
    "s3_store",
    "store_env",
    "upload_tree",
    "use_store",
]
