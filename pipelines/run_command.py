"""`trajcurate run`: the Beam pipeline from trajectories to IM / LF / stats per job.

Apache Beam is imported only when a run starts, so the rest of the CLI stays light.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pipelines.beam_args import option_strings, unknown_argument_error, unknown_beam_args
from pipelines.collector import set_up_frozen
from pipelines.config import ConfigError, RunConfig, add_run_arguments, config_from_args
from pipelines.output_folder import (
    OutputError,
    OutputLock,
    check_writable,
    new_run_id,
    remove_staging,
    staging_root,
)
from pipelines.run_checks import (
    PROG,
    check_cloud_paths,
    check_inputs,
    check_tokenizers,
    root_cause,
    set_filesystem_options,
)
from pipelines.run_log import RunLog
from pipelines.terminal import escaped
from transforms import read_ahead

if TYPE_CHECKING:
    from pipelines.manifest import Increment


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
    # Forked now, before Beam starts any thread (`transforms/read_ahead.py`); stopped again
    # once the options show it unused (`--read-ahead off` in a config file, another runner).
    with read_ahead.helper_for("off" if getattr(args, "read_ahead", None) == "off" else "auto"):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        beam_args = list(getattr(args, "beam_args", []))
        if unknown := unknown_beam_args(beam_args):
            raise ConfigError(unknown_argument_error(unknown, args.own_options))
        config = config_from_args(args, beam_args)
        _plan_reading(config)
        check_cloud_paths(config)
        if _dry_run_requested(config):  # translation only: no store is listed, probed, locked
            return translate(config)
        set_filesystem_options(config)
        check_inputs(config)
        check_tokenizers(config)
        check_writable(config.output)
        with OutputLock(config.output):
            remove_staging(config.output)  # what a killed run left behind
            return execute(config)
    except (ConfigError, OutputError) as exc:
        print(f"{PROG}: error: {escaped(str(exc))}", file=sys.stderr)
        return 2


def _plan_reading(config: RunConfig) -> None:
    """The read-ahead helper (if there is one) is told which trials the run will open, in
    the order the pipeline opens them, and opens them while this process checks the options,
    imports Beam and builds the pipeline (`read_ahead.plan`). Not for a dry run, which
    reads nothing (told here from its flag: Beam's parser is not imported yet)."""
    dry_run = any(arg.startswith("--dry_run") for arg in config.beam_args)
    if config.read_ahead != "auto" or dry_run:
        return
    limits, chain = config.read_limits(), config.chain_settings()
    read_ahead.plan(sorted(config.inputs), config.input_format, limits, chain)


def _reads_ahead(config: RunConfig, pipeline: Any) -> bool:
    """Whether the run's read-ahead helper is used: on by default, and only the in-process
    runner with one worker opens trials in this process (`transforms/read_ahead.py`)."""
    from pipelines.runner import one_local_worker

    return config.read_ahead == "auto" and bool(one_local_worker(pipeline.options))


def _dry_run_requested(config: RunConfig) -> bool:
    from pipelines.runner import pipeline_options

    return bool(pipeline_options(config.beam_args).get_all_options().get("dry_run"))


def _make_pipeline(config: RunConfig) -> Any:
    """The pipeline for the options; Beam's option validation errors become one line."""
    from pipelines.runner import make_pipeline

    try:
        return make_pipeline(config.beam_args)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"Beam refused the pipeline options: {root_cause(exc)}") from None


def translate(config: RunConfig) -> int:
    """A dry run: the job is built and translated for its runner, and nothing else happens."""
    from pipelines.run_pipeline import build

    pipeline = _make_pipeline(config)
    build(pipeline, config, staging_root(config.output, new_run_id()))
    try:
        pipeline.run()
    except Exception as exc:
        raise ConfigError(f"the job could not be translated: {root_cause(exc)}") from None
    print(f"{PROG}: dry run: the job was translated for its runner and not submitted")
    return 0


def execute(config: RunConfig) -> int:
    """Run the pipeline for `config`, finalize the outputs, print the summary; exit code.
    Every run that got this far adds its line to the run log (`DIR/runs.jsonl`)."""
    from pipelines.manifest import package_version

    run_id = new_run_id()
    log = RunLog(config.output, run_id, package_version("trajcurate"))
    try:
        return _curate(config, run_id, log)
    except OutputError as exc:
        with contextlib.suppress(OSError):  # the run's own error is the one to report
            log.append("failed", error=str(exc))
        raise


def _curate(config: RunConfig, run_id: str, log: RunLog) -> int:
    from pipelines.manifest import Increment, finalize

    increment, inputs = Increment(), config.inputs
    if config.skip_unchanged:
        planned = _plan_increment(config, log)
        if planned is None:
            return _report(config)
        increment, inputs = planned
    started = time.monotonic()
    pipeline = _make_pipeline(config)
    if not _reads_ahead(config, pipeline):
        read_ahead.stop()
    # A template launch only stages the graph: its job runs later, with no driver to
    # publish, so the job publishes its own outputs (`finalize_stage.py`).
    template = _is_template_launch(pipeline)
    staging = staging_root(config.output, run_id)
    metrics: dict[str, int] | None = {}
    if inputs:  # an incremental run may keep every job: then there is nothing to run
        todo = replace(config, inputs=inputs)
        in_job = (config, increment, log) if template else None
        metrics = _run_pipeline(pipeline, todo, staging, in_job)
    wall = time.monotonic() - started
    if template and inputs:
        print(
            f"{PROG}: template launch: the job graph is staged for the launcher to submit; "
            "the job publishes its outputs and manifests itself when it ends"
        )
        return 0
    try:
        summary = finalize(config, staging, wall, metrics, increment)
    except OutputError:
        remove_staging(config.output)
        raise
    print(render_summary(summary, config.output, wall))
    if opened := read_ahead.opened_line():
        print(opened)
    if config.llm_judge:
        print(_judge_line(config, summary["run"]))
    log.finished(summary["run"], incremental=bool(increment.job_signatures))
    if not summary["run"]["accounting"]["balanced"]:
        return 1
    if (failed := _every_judge_call_failed(config, summary["run"])) is not None:
        print(f"{PROG}: {failed}", file=sys.stderr)
        return JUDGE_FAILED
    return _report(config)


# Exit status of a run whose outputs were published but whose every LLM judge call failed.
JUDGE_FAILED = 3


def _every_judge_call_failed(config: RunConfig, run: dict[str, Any]) -> str | None:
    """The one-line reason when the judge was asked and never answered, else None."""
    if not config.llm_judge or config.llm_dry_run:
        return None
    metrics = run.get("beam_metrics", {})
    failures, answers = metrics.get("llm.failures", 0), metrics.get("llm.completions", 0)
    if failures == 0 or answers > 0:
        return None
    return (
        f"every LLM judge call failed ({failures} failures, no answer): the outputs are "
        "published without judge scores (each record's llm_error says why); check "
        "--llm-base-url, --llm-model and the API key"
    )


def _report(config: RunConfig) -> int:
    """`--report`: the static report of the output (as `trajcurate report OUTPUT` builds it)
    into OUTPUT/report once the run succeeded; an object-store output gets one line saying
    how to build it instead. Its exit status is the report's (0, or 2 naming the problem)."""
    if not config.report:
        return 0
    from pathlib import Path

    from pipelines import report_command

    if "://" in config.output:
        print(
            f"{PROG}: --report: no report for an object-store output; copy the output to a "
            "local folder and run `trajcurate report DIR`"
        )
        return 0
    target = Path(config.output) / "report"
    if report_command.job_folder_conflict(target, target.parent) is not None:
        print(f"{PROG}: --report: {target} is a job's folder; run `trajcurate report --out DIR`")
        return 0
    defaults = {name: option.default for name, option in report_command.REPORT_OPTIONS.items()}
    args = argparse.Namespace(output=Path(config.output), out=target, **defaults)
    return report_command.run(args)


def _plan_increment(config: RunConfig, log: RunLog) -> tuple[Increment, tuple[str, ...]] | None:
    """`--skip-unchanged`: None when nothing changed; else what the run knows and the inputs
    it has to curate (only the new and changed jobs, when it can tell; maybe none)."""
    from pipelines.incremental import kept_jobs, plan_inputs
    from pipelines.manifest import Increment, package_version, read_manifest
    from pipelines.manifest import unchanged_since_last_run as unchanged

    plan = plan_inputs(config, package_version("trajcurate"))
    if why := unchanged(config.output, plan.signature):
        print(f"{PROG}: {why}: nothing to do")
        last = read_manifest(config.output)
        log.append("unchanged", kept=last.get("jobs") or [], accounting=last.get("accounting"))
        return None
    if plan.jobs is None:
        print(f"{PROG}: --skip-unchanged: {plan.why_not}, so every input is curated again")
        return Increment(plan.signature), config.inputs
    kept = kept_jobs(plan.jobs, config.output)
    todo = [job for folder, job in sorted(plan.jobs.items()) if folder not in kept]
    print(
        f"{PROG}: --skip-unchanged: {len(todo)} job(s) new or changed, "
        f"{len(kept)} unchanged and kept"
    )
    signatures = {folder: job.signature for folder, job in plan.jobs.items()}
    sources = tuple(source for job in todo for source in job.sources)
    return Increment(plan.signature, signatures, kept), sources


def _run_pipeline(
    pipeline: Any,
    config: RunConfig,
    staging: str,
    publish_in_job: tuple[RunConfig, Increment, RunLog] | None = None,
) -> dict[str, int] | None:
    """Run the pipeline for `config` into `staging`; its Beam metrics (None: the runner
    reports none). With `publish_in_job`
    (the run's config, increment and log) the job's last stage completes and publishes the
    outputs and logs the run: no driver will be there to do it."""
    from pipelines.run_pipeline import build

    writes = build(pipeline, config, staging)
    if publish_in_job is not None:
        from pipelines.finalize_stage import add_finalize

        run_config, increment, log = publish_in_job
        add_finalize(writes, run_config, staging, increment, log)
    try:
        with set_up_frozen():  # Beam makes reference cycles: the collector stays on
            result = pipeline.run()
            result.wait_until_finish()
    except Exception as exc:
        remove_staging(config.output)
        raise OutputError(f"the run failed, nothing was published: {root_cause(exc)}") from None
    return stage_metrics(result)


def stage_metrics(result: Any) -> dict[str, int] | None:
    """Beam counters of the run (`<stage>.in/kept/rejected/dead_letter`, `llm.*`); None
    when the runner reports no metrics (Dask): the manifest then says so, and the counts
    come from the pipeline's own counts files alone."""
    from apache_beam.metrics.metric import MetricsFilter

    try:
        counters = result.metrics().query(MetricsFilter().with_namespace("trajcurate"))["counters"]
    except Exception:  # a runner without metrics support still gets its files
        return None
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
    kept = summary.get("kept") or {}
    total = "TOTAL, with kept jobs" if kept else "TOTAL"
    rows.append((total, summary["run"]["counts"], summary["run"]["accounting"]))
    for job, counts, acc in rows:
        lines.append(
            f"{escaped(job)[:28]:<28} {acc['in']:>7} {acc['written']:>8} {acc['rejected']:>9} "
            f"{acc['dead_lettered']:>6} {counts.get('records.main', 0):>6} "
            f"{counts.get('records.subagent', 0):>6}"
        )
    if kept:
        lines.append(f"kept as the last run left them (unchanged): {len(kept)} job(s)")
    balanced = summary["run"]["accounting"]["balanced"]
    lines.append(f"in = written + rejected + dead-lettered: {'yes' if balanced else 'NO'}")
    seen = summary["run"]["accounting"].get("pipeline_in")
    counted = sum(m["accounting"]["in"] for m in summary["jobs"].values())
    if unchecked := summary["run"]["accounting"].get("pipeline_in_unchecked"):
        lines.append(f"pipeline_in not checked: {unchecked}")
    if seen is not None and seen != counted:
        lines.append(f"the pipeline took in {seen} input(s), the job manifests count {counted}")
    lines.append(
        f"outputs: {output}/<job>/ (im, lf, lf.stats.json, rejects, dead_letter, scores, manifest)"
    )
    lines.append(f"wall time: {wall:.1f} s")
    return "\n".join(lines)
