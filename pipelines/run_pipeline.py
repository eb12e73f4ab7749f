"""The trajcurate pipeline: Harbor jobs (and other sources) -> IM / LF / stats per job.

    inputs -> detect units -> reshuffle (unless one local worker) -> open (+ read counts)
      -> chain: read, validate, redact, score, clean, gate -> [LLM judges] -> chain: filter
      -> spill -> (job, shard) group
      -> im / lf files; stats per job and for the run
    candidates + sidecar rows of rejects after scoring -> job group -> selection (dedup,
      best-of-k, curriculum) -> scores.jsonl; verdicts -> the shard writer (side input)
    rejects (with reasons) and dead letters (with the error) -> one file per job

The bundle (one trial: main record + subagents) is the element from open to spill; the
groupings are at the sinks, over small items (part references, candidates), to write sorted
and deterministic files. The stages are those of `transforms/chain.py`, run by one generic
DoFn.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import apache_beam as beam
from apache_beam.transforms import combiners

from pipelines.chain_options import ConfigError
from pipelines.config import RunConfig
from pipelines.runner import local_processes, one_local_worker, recomputes_lost_tasks
from transforms.chain import stages_after_judge, stages_before_judge, written_counts
from transforms.sinks.beam_scores import (
    CANDIDATES,
    KEPT,
    SCORES,
    DecideJob,
    RunChainWithRows,
    SpillWithCandidates,
)
from transforms.sinks.beam_sinks import (
    RUN_KEY,
    WRITTEN,
    WriteJobJson,
    WriteJobLines,
    WriteShard,
    job_counts,
    keyed_line,
    stats_json,
    stats_state,
    sum_counts,
)
from transforms.sinks.beam_stats import MergeStats, StatsCombineFn
from transforms.sinks.names import counts_file_name
from transforms.sinks.parquet_sink import WriteParquet
from transforms.sinks.scores import stats_of
from transforms.stages import DEAD_LETTER, READ, REJECTED, DetectUnits, OpenUnits

DRY_RUN_FILE = "llm_dry_run.json"
RESHAPES_FILE = ".lf_reshapes.json"
STATS_STATE_FILE = ".stats_state.json"  # the job's mergeable stats, for incremental runs


def _split(
    pcoll: Any,
    label: str,
    dofn: beam.DoFn,
    *side_inputs: Any,
    rows: bool = False,
    read: bool = False,
) -> Any:
    """`rows`: the DoFn also gives the sidecar rows of bundles rejected after scoring;
    `read`: each opened bundle's read counts (`OpenUnits`)."""
    pardo = beam.ParDo(dofn, *side_inputs)
    tags = (REJECTED, DEAD_LETTER, SCORES) if rows else (REJECTED, DEAD_LETTER)
    return pcoll | label >> pardo.with_outputs(*tags, *((READ,) if read else ()), main="main")


def build(pipeline: beam.Pipeline, config: RunConfig, output: str | None = None) -> list[Any]:
    """Add every stage and sink of a run to `pipeline`; files go to `output` (a staging
    folder, published by the driver) or `config.output`. Returns the outputs of every
    writer: a stage that depends on all of them runs once every file is written."""
    settings = config.chain_settings()
    limits = config.read_limits()
    inputs = pipeline | "Inputs" >> beam.Create(sorted(config.inputs))
    units = _split(
        inputs,
        "Detect",
        DetectUnits(config.input_format, limits),
    )
    # With progress on, every unit is counted first: the progress line then has a total.
    total = (
        [beam.pvalue.AsSingleton(units.main | "CountUnits" >> combiners.Count.Globally())]
        if config.progress
        else []
    )
    # Reshuffled to spread the units of one input over the workers (a runner fuses detection
    # with what follows, so one input's trials would all stay with one worker); one local
    # worker has nothing to spread them over.
    spread = units.main
    if not one_local_worker(pipeline.options):
        spread = units.main | "ReshuffleUnits" >> beam.Reshuffle()
    opened = _split(
        spread,
        "Open",
        OpenUnits(
            limits,
            config.progress,
            local_processes(pipeline.options),
            settings,
        ),
        *total,
        read=True,
    )
    out = output or config.output
    # On Dask a worker's loss is repaired by recomputing its tasks from their inputs, so
    # the writers leave their spilled inputs to the driver (which deletes them on publish).
    keep = recomputes_lost_tasks(pipeline.options)
    curate = RunChainWithRows(stages_before_judge(settings), out)
    curated = _split(opened.main, "Curate", curate, rows=True)
    judged, writes, judge_dead = _judge(curated.main, config, out)
    kept = _split(judged, "Filter", RunChainWithRows(stages_after_judge(settings), out), rows=True)
    stages = (units, opened, curated, kept)
    rejects = [s[REJECTED] for s in stages]
    dead = [*(s[DEAD_LETTER] for s in stages), *judge_dead] | "AllDeadLetters" >> beam.Flatten()
    rows = (curated[SCORES], kept[SCORES])
    sinks = _write_outputs(config, out, inputs, opened[READ], kept.main, rejects, dead, rows, keep)
    return [*writes, *sinks]


def _judge(scored: Any, config: RunConfig, out: str) -> tuple[Any, list[Any], list[Any]]:
    """The optional LLM judges, on batches of bundles (or only their cost, in a dry run):
    the judged bundles, the writer of a dry run's estimate, and the judge's dead letters.
    What would fail every worker's setup fails here, before any trial is read."""
    if not config.llm_judge:
        return scored, [], []
    from apache_beam.options.pipeline_options import DirectOptions

    from pipelines.runner import is_local
    from transforms.judge_stage import JudgeBundles, PlanJudgeCalls, sum_estimates
    from transforms.llm.judging import JudgeSetupError, check_setup, worker_processes

    options, local = scored.pipeline.options, is_local(scored.pipeline.options)
    direct = options.view_as(DirectOptions)
    processes = worker_processes(
        config.llm_workers,
        local=local,
        running_mode=direct.direct_running_mode,
        num_workers=direct.direct_num_workers,
    )
    settings = replace(config.judge_settings(), workers=processes)
    try:
        check_setup(settings, local=local, dry_run=config.llm_dry_run)
    except JudgeSetupError as exc:
        raise ConfigError(str(exc)) from None
    batches = scored | "BatchForJudge" >> beam.BatchElements(
        min_batch_size=1, max_batch_size=config.llm_batch_size
    )
    if not config.llm_dry_run:
        judged = batches | "LLMJudge" >> beam.ParDo(JudgeBundles(settings)).with_outputs(
            DEAD_LETTER, main="main"
        )
        return judged.main, [], [judged[DEAD_LETTER]]
    planned = batches | "PlanJudgeCalls" >> beam.ParDo(PlanJudgeCalls(settings)).with_outputs(
        "estimate", main="bundles"
    )
    estimate = (
        planned.estimate
        | "AllEstimates" >> combiners.ToList()
        | "SumEstimates" >> beam.Map(lambda estimates: (RUN_KEY, sum_estimates(estimates)))
        | "WriteEstimate" >> beam.ParDo(WriteJobJson(out, DRY_RUN_FILE))
    )
    return planned.bundles, [estimate], []


def _write_outputs(
    config: RunConfig,
    out: str,
    inputs: Any,
    read: Any,
    kept: Any,
    rejects: list[Any],
    dead: Any,
    rows: tuple[Any, ...],
    keep_spills: bool = False,
) -> list[Any]:
    """The sinks; returns the outputs of every writer. Few transforms: Beam inspects every
    DoFn several times while it builds, translates and runs the pipeline (fixed cost)."""
    selection = config.selection_settings()
    exports = config.export_formats()
    spill = SpillWithCandidates(
        out,
        config.num_shards,
        config.lf_settings(),
        selection,
        config.tokenizer,
        exports,
        config.split_settings(),
    )
    spilled = kept | "SpillBundles" >> beam.ParDo(spill).with_outputs(
        WRITTEN, DEAD_LETTER, CANDIDATES, main="refs"
    )
    dead = (dead, spilled[DEAD_LETTER]) | "WithWriteDeadLetters" >> beam.Flatten()
    selected = _select(config, out, spilled, rows, keep_spills)
    rejects = [*rejects, *selected.rejects] | "AllRejects" >> beam.Flatten()
    shards = WriteShard(out, config.num_shards, exports, keep_spills)
    reshapes = (
        spilled.refs
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(shards, *selected.verdicts)
    )
    writes = [selected.sidecars, reshapes]
    if config.parquet:  # each job's Parquet twins, once all its shards are written
        writes.append(
            reshapes
            | "JobsWritten" >> beam.GroupByKey()
            | "WriteParquet"
            >> beam.ParDo(WriteParquet(out, config.num_shards, config.split_settings()))
        )
    writes.append(
        reshapes
        | "SumReshapes" >> beam.CombinePerKey(sum_counts)
        | "WriteReshapes" >> beam.ParDo(WriteJobJson(out, RESHAPES_FILE))
    )
    for name, pcoll in (("rejects.jsonl", rejects), ("dead_letter.jsonl", dead)):
        writes.append(
            pcoll
            | f"KeyByJob {name}" >> beam.Map(keyed_line)
            | f"Group {name}" >> beam.GroupByKey()
            | f"Write {name}" >> beam.ParDo(WriteJobLines(out, name))
        )
    per_job = selected.stats | "CombineStats" >> beam.CombinePerKey(
        StatsCombineFn(config.tokenizer)
    )
    writes.append(
        per_job | "WriteStats" >> beam.ParDo(WriteJobJson(out, "lf.stats.json", stats_json))
    )
    writes.append(
        per_job | "WriteStatsState" >> beam.ParDo(WriteJobJson(out, STATS_STATE_FILE, stats_state))
    )
    writes.append(_run_stats(inputs, per_job, out))
    # Each trial's counts summed per job where they are made (a combine right after its
    # producer runs in its stage): flattened first, they waited at the grouping one by one.
    counts = (
        (
            read | "SumRead" >> beam.CombinePerKey(sum_counts),  # of every opened bundle
            selected.counts | "SumWritten" >> beam.CombinePerKey(sum_counts),
            rejects
            | "CountRejects" >> beam.Map(lambda r: (r["job"], {f"rejected.{r['stage']}": 1})),
            dead | "CountDead" >> beam.Map(lambda r: (r["job"], {f"dead_letter.{r['stage']}": 1})),
        )
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombinePerKey(sum_counts)
    )
    counted = WriteJobJson(out, counts_file_name, job_counts)
    writes.append(counts | "WriteCounts" >> beam.ParDo(counted))
    return writes


@dataclass(frozen=True)
class _Selected:
    """What the per-job selection gives the sinks: its sidecar writer, the verdicts (a side
    input of the shard writer; none when selection is off), its rejects, and the stats and
    counts inputs of what is written."""

    sidecars: Any
    verdicts: list[Any]
    rejects: list[Any]
    stats: Any
    counts: Any


def _select(
    config: RunConfig, out: str, spilled: Any, rows: tuple[Any, ...], keep_rows: bool = False
) -> _Selected:
    """Per job: the candidates (what passed the chain, spilled) and the rows of its trials
    rejected after scoring, grouped; selection decides, the sidecar is written. With
    selection off, what was spilled is what is written: stats and counts come straight from
    the spilled bundles."""
    selection = config.selection_settings()
    decided = (
        (*rows, spilled[CANDIDATES])
        | "AllScored" >> beam.Flatten()
        | "GroupScored" >> beam.GroupByKey()
        | "DecideJobs"
        >> beam.ParDo(DecideJob(out, selection, keep_rows)).with_outputs(
            REJECTED, KEPT, main="verdicts"
        )
    )
    if not selection.active:
        written = spilled[WRITTEN]  # (job, bundle)
        counts = written | "CountWritten" >> beam.MapTuple(_written_counts)
        return _Selected(decided.verdicts, [], [], written, counts)
    kept = decided[KEPT]
    return _Selected(
        decided.verdicts,
        [beam.pvalue.AsDict(decided.verdicts)],
        [decided[REJECTED]],
        kept | "KeptStats" >> beam.MapTuple(lambda job, item: (job, stats_of(item["stats"]))),
        kept | "KeptCounts" >> beam.MapTuple(lambda job, item: (job, item["counts"])),
    )


def _run_stats(inputs: Any, per_job: Any, out: str) -> Any:
    """The run's stats, merged from the jobs': one key, seeded with one None per input so
    that a run in which no job has a written bundle still writes (empty) stats."""
    return (
        (
            per_job | "RunStatsOfJob" >> beam.MapTuple(lambda _job, stats: (RUN_KEY, stats)),
            inputs | "RunStatsSeed" >> beam.Map(lambda _input: (RUN_KEY, None)),
        )
        | "AllRunStats" >> beam.Flatten()
        | "MergeRunStats" >> beam.CombinePerKey(MergeStats())
        | "WriteRunStats" >> beam.ParDo(WriteJobJson(out, "lf.stats.json"))
    )


def _written_counts(job: str, bundle: dict[str, Any]) -> tuple[str, dict[str, int]]:
    return job, written_counts(bundle)
