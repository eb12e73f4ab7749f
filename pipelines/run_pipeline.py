"""The trajcurate pipeline: Harbor jobs (and other sources) -> IM / LF / stats per job.

    inputs -> detect units -> reshuffle -> open -> chain: read, gate, clean, validate,
      redact, score -> [LLM judges] -> chain: filter -> spill -> (job, shard) group
      -> im / lf files; stats per job and for the run
    rejects (with reasons) and dead letters (with the error) -> one file per job

The bundle (one trial: main record + subagents) is the element from open to spill; the
only grouping is at the sinks, once, to write sorted and deterministic files. The stages are
those of `transforms/chain.py`, run by one generic DoFn.
"""

from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.transforms import combiners

from pipelines.config import RunConfig
from transforms.chain import stages_after_judge, stages_before_judge, written_counts
from transforms.sinks.beam_sinks import (
    RUN_KEY,
    WRITTEN,
    SpillBundle,
    WriteJobJson,
    WriteJobLines,
    WriteShard,
    job_counts,
    stats_json,
    stats_state,
    sum_counts,
)
from transforms.sinks.beam_stats import MergeStats, StatsCombineFn
from transforms.sinks.parquet_sink import WriteParquet
from transforms.stages import DEAD_LETTER, REJECTED, DetectUnits, OpenUnits, RunChain, job_of

COUNTS_FILE = ".counts.json"
DRY_RUN_FILE = "llm_dry_run.json"
RESHAPES_FILE = ".lf_reshapes.json"
STATS_STATE_FILE = ".stats_state.json"  # the job's mergeable stats, for incremental runs


def _split(pcoll: Any, label: str, dofn: beam.DoFn, *side_inputs: Any) -> Any:
    pardo = beam.ParDo(dofn, *side_inputs)
    return pcoll | label >> pardo.with_outputs(REJECTED, DEAD_LETTER, main="main")


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
    opened = _split(
        units.main | "ReshuffleUnits" >> beam.Reshuffle(),
        "Open",
        OpenUnits(limits, config.progress),
        *total,
    )
    curated = _split(opened.main, "Curate", RunChain(stages_before_judge(settings)))
    judged, writes = _judge(curated.main, config, output or config.output)
    kept = _split(judged, "Filter", RunChain(stages_after_judge(settings)))
    stages = (units, opened, curated, kept)
    rejects = [s[REJECTED] for s in stages] | "AllRejects" >> beam.Flatten()
    dead = [s[DEAD_LETTER] for s in stages] | "AllDeadLetters" >> beam.Flatten()
    out = output or config.output
    return [*writes, *_write_outputs(config, out, inputs, opened.main, kept.main, rejects, dead)]


def _judge(scored: Any, config: RunConfig, out: str) -> tuple[Any, list[Any]]:
    """The optional LLM judges, on batches of bundles (or only their cost, in a dry run);
    the judged bundles, and the writer of a dry run's estimate."""
    if not config.llm_judge:
        return scored, []
    from transforms.judge_stage import JudgeBundles, PlanJudgeCalls, sum_estimates

    settings = config.judge_settings()
    batches = scored | "BatchForJudge" >> beam.BatchElements(
        min_batch_size=1, max_batch_size=config.llm_batch_size
    )
    if not config.llm_dry_run:
        return batches | "LLMJudge" >> beam.ParDo(JudgeBundles(settings)), []
    planned = batches | "PlanJudgeCalls" >> beam.ParDo(PlanJudgeCalls(settings)).with_outputs(
        "estimate", main="bundles"
    )
    estimate = (
        planned.estimate
        | "AllEstimates" >> combiners.ToList()
        | "SumEstimates" >> beam.Map(lambda estimates: (RUN_KEY, sum_estimates(estimates)))
        | "WriteEstimate" >> beam.ParDo(WriteJobJson(out, DRY_RUN_FILE))
    )
    return planned.bundles, [estimate]


def _write_outputs(
    config: RunConfig, out: str, inputs: Any, read: Any, kept: Any, rejects: Any, dead: Any
) -> list[Any]:
    """The sinks; returns the outputs of every writer. Few transforms: Beam inspects every
    DoFn several times while it builds, translates and runs the pipeline (fixed cost)."""
    spilled = kept | "SpillBundles" >> beam.ParDo(
        SpillBundle(out, config.num_shards, config.lf_settings())
    ).with_outputs(WRITTEN, DEAD_LETTER, main="refs")
    written = spilled[WRITTEN]  # (job, bundle)
    dead = (dead, spilled[DEAD_LETTER]) | "WithWriteDeadLetters" >> beam.Flatten()
    reshapes = (
        spilled.refs
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(WriteShard(out, config.num_shards))
    )
    writes = [reshapes]
    if config.parquet:  # each job's Parquet twins, once all its shards are written
        writes.append(
            reshapes
            | "JobsWritten" >> beam.GroupByKey()
            | "WriteParquet" >> beam.ParDo(WriteParquet(out, config.num_shards))
        )
    writes.append(
        reshapes
        | "SumReshapes" >> beam.CombinePerKey(sum_counts)
        | "WriteReshapes" >> beam.ParDo(WriteJobJson(out, RESHAPES_FILE))
    )
    for name, pcoll in (("rejects.jsonl", rejects), ("dead_letter.jsonl", dead)):
        writes.append(
            pcoll
            | f"KeyByJob {name}" >> beam.Map(lambda r: (r["job"], r))
            | f"Group {name}" >> beam.GroupByKey()
            | f"Write {name}" >> beam.ParDo(WriteJobLines(out, name))
        )
    per_job = written | "CombineStats" >> beam.CombinePerKey(StatsCombineFn(config.tokenizer))
    writes.append(
        per_job | "WriteStats" >> beam.ParDo(WriteJobJson(out, "lf.stats.json", stats_json))
    )
    writes.append(
        per_job | "WriteStatsState" >> beam.ParDo(WriteJobJson(out, STATS_STATE_FILE, stats_state))
    )
    writes.append(_run_stats(inputs, per_job, out))
    counts = (
        (
            read | "CountRead" >> beam.Map(lambda b: (job_of(b), {"read": 1})),
            written | "CountWritten" >> beam.MapTuple(_written_counts),
            rejects
            | "CountRejects" >> beam.Map(lambda r: (r["job"], {f"rejected.{r['stage']}": 1})),
            dead | "CountDead" >> beam.Map(lambda r: (r["job"], {f"dead_letter.{r['stage']}": 1})),
        )
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombinePerKey(sum_counts)
    )
    writes.append(counts | "WriteCounts" >> beam.ParDo(WriteJobJson(out, COUNTS_FILE, job_counts)))
    return writes


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
