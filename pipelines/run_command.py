"""`trajcurate run`: the Beam pipeline from trajectories to IM / LF / stats per job.

Apache Beam is imported only when a run starts, so the rest of the CLI stays light.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any

from pipelines.beam_args import option_strings, unknown_argument_error, unknown_beam_args
from pipelines.config import ConfigError, RunConfig, add_run_arguments, config_from_args
from pipelines.output_folder import (
    OutputError,
    OutputLock,
    check_writable,
    new_run_id,
    remove_staging,
    staging_root,
)
from transforms.readers.discover import expand_globs
from transforms.readers.remote import is_remote, list_prefix

PROG = "trajcurate run"


def add_parser(subcommands: Any) -> None:
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "run",
        help="run the pipeline: trajectories -> IM / LF / stats per job",
        description=(
            "Run the trajcurate Beam pipeline. Options the parser does not know are passed "
            "to Beam (e.g. --runner DataflowRunner --project P, --direct_num_workers 2)."
        ),
    )
    add_run_arguments(parser)
    parser.set_defaults(handler=run, accepts_beam_args=True, own_options=option_strings(parser))


def run(args: argparse.Namespace) -> int:
    _quiet_beam_logging()  # before Beam is first imported: it logs warnings at import
    try:
        beam_args = list(getattr(args, "beam_args", []))
        if unknown := unknown_beam_args(beam_args):
            raise ConfigError(unknown_argument_error(unknown, args.own_options))
        config = config_from_args(args, beam_args)
        _check_cloud_paths(config)
        if _dry_run_requested(config):  # translation only: no store is listed, probed, locked
            return translate(config)
        _set_filesystem_options(config)
        _check_inputs(config)
        _check_tokenizers(config)
        check_writable(config.output)
        with OutputLock(config.output):
            remove_staging(config.output)  # what a killed run left behind
            return execute(config)
    except (ConfigError, OutputError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2


def _check_tokenizers(config: RunConfig) -> None:
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


def _check_cloud_paths(config: RunConfig) -> None:
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


def _set_filesystem_options(config: RunConfig) -> None:
    """Object stores read their settings (endpoint, credentials) from the Beam options; the
    driver lists inputs and publishes outputs before and after the pipeline runs."""
    if any(is_remote(path) for path in (*config.inputs, config.output)):
        from apache_beam.io.filesystems import FileSystems

        from pipelines.runner import pipeline_options

        FileSystems.set_options(pipeline_options(config.beam_args))


def _check_inputs(config: RunConfig) -> None:
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


def _check_remote_input(given: str, beam_args: tuple[str, ...]) -> None:
    if endpoint := _endpoint(given, beam_args):
        _check_reachable(endpoint)
    try:
        listing = list_prefix(given)
    except Exception as exc:  # the store's own error, whatever its type
        cause = _root_cause(exc)
        cause = cause if len(cause) <= 240 else cause[:240] + "…"
        raise ConfigError(f"--input: cannot list {given}: {cause}") from None
    if not listing.sizes:
        raise ConfigError(f"--input: {given} matches nothing")


def _dry_run_requested(config: RunConfig) -> bool:
    from pipelines.runner import pipeline_options

    return bool(pipeline_options(config.beam_args).get_all_options().get("dry_run"))


def _make_pipeline(config: RunConfig) -> Any:
    """The pipeline for the options; Beam's option validation errors become one line."""
    from pipelines.runner import make_pipeline

    try:
        return make_pipeline(config.beam_args)
    except Exception as exc:
        raise ConfigError(f"Beam refused the pipeline options: {_root_cause(exc)}") from None


def translate(config: RunConfig) -> int:
    """A dry run: the job is built and translated for its runner, and nothing else happens."""
    from pipelines.run_pipeline import build

    pipeline = _make_pipeline(config)
    build(pipeline, config, staging_root(config.output, new_run_id()))
    try:
        pipeline.run()
    except Exception as exc:
        raise ConfigError(f"the job could not be translated: {_root_cause(exc)}") from None
    print(f"{PROG}: dry run: the job was translated for its runner and not submitted")
    return 0


def execute(config: RunConfig) -> int:
    """Run the pipeline for `config`, finalize the outputs, print the summary; exit code."""
    from pipelines.manifest import finalize, input_signature, unchanged_since_last_run

    signature = input_signature(config)
    if config.skip_unchanged and (why := unchanged_since_last_run(config.output, signature)):
        print(f"{PROG}: {why}: nothing to do")
        return 0
    from pipelines.run_pipeline import build

    started = time.monotonic()
    pipeline = _make_pipeline(config)
    # A template launch only stages the graph: its job runs later, with no driver to publish.
    staging = (
        config.output
        if _is_template_launch(pipeline)
        else staging_root(config.output, new_run_id())
    )
    build(pipeline, config, staging)
    try:
        result = pipeline.run()
        result.wait_until_finish()
    except Exception as exc:
        remove_staging(config.output)
        raise OutputError(f"the run failed, nothing was published: {_root_cause(exc)}") from None
    wall = time.monotonic() - started
    if _is_template_launch(pipeline):
        print(
            f"{PROG}: template launch: the job graph is staged for the launcher to submit; "
            "manifests are not written by this process"
        )
        return 0
    summary = finalize(config, staging, signature, wall, stage_metrics(result))
    print(render_summary(summary, config.output, wall))
    if config.llm_judge:
        print(_judge_line(config, summary["run"]))
    return 0 if summary["run"]["accounting"]["balanced"] else 1


def _root_cause(exc: BaseException) -> str:
    """The last line of what went wrong: Beam wraps a worker's error in its own messages."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[-1] if lines else type(exc).__name__
    return text.split(" [while running", 1)[0]


def stage_metrics(result: Any) -> dict[str, int]:
    """Beam counters of the run (`<stage>.in/kept/rejected/dead_letter`, `llm.*`)."""
    from apache_beam.metrics.metric import MetricsFilter

    try:
        counters = result.metrics().query(MetricsFilter().with_namespace("trajcurate"))["counters"]
    except Exception:  # a runner without metrics support still gets its files
        return {}
    totals: dict[str, int] = {}
    for counter in counters:
        name = counter.key.metric.name
        totals[name] = totals.get(name, 0) + int(counter.committed or counter.attempted or 0)
    return dict(sorted(totals.items()))


def _judge_line(config: RunConfig, run: dict[str, Any]) -> str:
    if config.llm_dry_run:
        from pipelines.run_pipeline import DRY_RUN_FILE

        return f"LLM dry run: estimate in {config.output}/{DRY_RUN_FILE} (no request sent)"
    metrics = run.get("beam_metrics", {})
    names = (
        "requests",
        "retries",
        "rate_limited",
        "failures",
        "cache_hits",
        "tokens_in",
        "tokens_out",
    )
    return "LLM judge: " + ", ".join(f"{n} {metrics.get('llm.' + n, 0)}" for n in names)


def _is_template_launch(pipeline: Any) -> bool:
    """A Dataflow flex-template launch: `run()` only stages the graph, no job runs here."""
    return bool(pipeline.options.get_all_options().get("template_location"))


def _quiet_beam_logging() -> None:
    """Beam logs a worker's failure with its traceback; the run reports it in one line."""
    logging.getLogger().setLevel(logging.ERROR)
    logging.getLogger("root").setLevel(logging.ERROR)
    logging.getLogger("apache_beam").setLevel(logging.CRITICAL)


def render_summary(summary: dict[str, Any], output: str, wall: float) -> str:
    header = (
        f"{'job':<28} {'in':>7} {'written':>8} {'rejected':>9} {'dead':>6} {'main':>6} {'sub':>6}"
    )
    lines = [header, "-" * len(header)]
    rows = [(job, m["counts"], m["accounting"]) for job, m in sorted(summary["jobs"].items())]
    rows.append(("TOTAL", summary["run"]["counts"], summary["run"]["accounting"]))
    for job, counts, acc in rows:
        lines.append(
            f"{job[:28]:<28} {acc['in']:>7} {acc['written']:>8} {acc['rejected']:>9} "
            f"{acc['dead_lettered']:>6} {counts.get('records.main', 0):>6} "
            f"{counts.get('records.subagent', 0):>6}"
        )
    balanced = summary["run"]["accounting"]["balanced"]
    lines.append(f"in = written + rejected + dead-lettered: {'yes' if balanced else 'NO'}")
    lines.append(
        f"outputs: {output}/<job>/ (im, lf, lf.stats.json, rejects, dead_letter, manifest)"
    )
    lines.append(f"wall time: {wall:.1f} s")
    return "\n".join(lines)
