"""The checks `trajcurate run` makes before any work: inputs reachable and matching,
tokenizers present, cloud runners given paths their workers can reach. Each failure is one
`ConfigError` line (exit 2), so a run never fails late for what could be known at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipelines.config import ConfigError, RunConfig
from transforms.readers.discover import expand_globs
from transforms.readers.remote import is_remote, list_prefix

PROG = "trajcurate run"


def root_cause(exc: BaseException) -> str:
    """The last line of what went wrong: Beam wraps a worker's error in its own messages."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[-1] if lines else type(exc).__name__
    return text.split(" [while running", 1)[0]


def check_tokenizers(config: RunConfig) -> None:
    import importlib.util

    for flag, path in (
        ("--tokenizer", config.tokenizer),
        ("--chat-template-tokenizer", config.chat_template_tokenizer),
    ):
        if path is None:
            continue
        if importlib.util.find_spec("transformers") is None:
            raise ConfigError(f"{flag} needs `transformers`: pip install 'trajcurate[tokenizer]'")
        if "://" not in path and not Path(path).is_dir():
            raise ConfigError(f"{flag}: {path} is not a local tokenizer folder")


CLOUD_RUNNERS = ("DataflowRunner", "dataflow")


def check_cloud_paths(config: RunConfig) -> None:
    """On Dataflow the workers run elsewhere: a local input or output cannot reach them."""
    from pipelines.runner import pipeline_options

    options = pipeline_options(config.beam_args).get_all_options()
    if options.get("runner") not in CLOUD_RUNNERS:
        return
    for flag, path in (*(("--input", p) for p in config.inputs), ("--output", config.output)):
        if not is_remote(path):
            raise ConfigError(
                f"{flag}: {path} is a local path, which Dataflow workers cannot reach; "
                "give a gs:// path"
            )
    if not options.get("temp_location") and not options.get("gcp_temp_location"):
        raise ConfigError(
            "--temp_location: Dataflow needs a gs:// temp location (without one Beam goes "
            "online to create a default bucket)"
        )
    if not options.get("sdk_container_image") and not options.get("dry_run"):
        print(
            f"{PROG}: warning: no --sdk_container_image: Dataflow workers would start from "
            "Beam's stock image, which lacks trajcurate (pipelines, transforms, scorers); "
            "build deploy/dataflow/Dockerfile (deploy/README.md) and pass its image",
            file=sys.stderr,
        )


def set_filesystem_options(config: RunConfig) -> None:
    """Object stores read their settings (endpoint, credentials) from the Beam options; the
    driver lists inputs and publishes outputs before and after the pipeline runs."""
    if any(is_remote(path) for path in (*config.inputs, config.output)):
        from apache_beam.io.filesystems import FileSystems

        from pipelines.runner import pipeline_options
        from transforms.sinks.s3_empty import allow_empty_s3_objects

        FileSystems.set_options(pipeline_options(config.beam_args))
        allow_empty_s3_objects()


def check_inputs(config: RunConfig) -> None:
    """Every input matches something; an object-store prefix is listed (unreachable store,
    missing bucket, no credentials: one line, before any work)."""
    for given in config.inputs:
        if is_remote(given):
            _check_remote_input(given, config.beam_args)
            continue
        matched = list(expand_globs([Path(given)]))
        if not any(p.exists() for p in matched):
            raise ConfigError(f"--input: {given} matches nothing")


def _endpoint(given: str, beam_args: tuple[str, ...]) -> str | None:
    """The store endpoint a run was pointed at (S3 `--s3_endpoint_url`, the GCS emulator's
    `STORAGE_EMULATOR_HOST`); None for the stores' public endpoints."""
    import os

    if given.startswith("s3://"):
        for index, arg in enumerate(beam_args):
            if arg.startswith("--s3_endpoint_url="):
                return arg.split("=", 1)[1]
            if arg == "--s3_endpoint_url" and index + 1 < len(beam_args):
                return beam_args[index + 1]
    if given.startswith("gs://"):
        return os.environ.get("STORAGE_EMULATOR_HOST")
    return None


def _check_reachable(endpoint: str, timeout: float = 5.0) -> None:
    """Beam retries an unreachable store for minutes: a plain connect says so in seconds."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "localhost", port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"cannot reach the object store at {endpoint}: {reason}") from None


def _check_credentials(given: str, beam_args: tuple[str, ...]) -> None:
    """Without credentials Beam retries a listing for minutes: say so in one line first."""
    if given.startswith("s3://") and not any(
        arg.split("=", 1)[0] == "--s3_access_key_id" for arg in beam_args
    ):
        import boto3

        if boto3.session.Session().get_credentials() is None:
            raise ConfigError(
                f"--input: no AWS credentials for {given}: give --s3_access_key_id and "
                "--s3_secret_access_key, or set AWS_ACCESS_KEY_ID / AWS_PROFILE"
            )
    if given.startswith("gs://") and not _endpoint(given, beam_args):
        import google.auth
        from google.auth.exceptions import DefaultCredentialsError

        try:
            google.auth.default()
        except DefaultCredentialsError:
            raise ConfigError(
                f"--input: no Google Cloud credentials for {given}: run `gcloud auth "
                "application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"
            ) from None


def _check_remote_input(given: str, beam_args: tuple[str, ...]) -> None:
    if endpoint := _endpoint(given, beam_args):
        _check_reachable(endpoint)
    _check_credentials(given, beam_args)
    try:
        listing = list_prefix(given)
    except Exception as exc:  # the store's own error, whatever its type
        cause = root_cause(exc)
        cause = cause if len(cause) <= 240 else cause[:240] + "…"
        raise ConfigError(f"--input: cannot list {given}: {cause}") from None
    if not listing.sizes:
        raise ConfigError(f"--input: {given} matches nothing")
