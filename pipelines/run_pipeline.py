"""The trajcurate pipeline: Harbor jobs (and other sources) -> IM / LF / stats per job.

    inputs -> discover -> reshuffle paths -> read bundles -> reward gate -> validate
      -> TQS V2 -> bundled score filter -> (job, shard) group -> im / lf files
                                         -> stats per job and for the run
    rejects (with reasons) and dead letters (with the error) -> one file per job

The bundle (one trial: main record + subagents) is the element from read to filter; the
only grouping is at the sinks, once, to write sorted and deterministic files.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import apache_beam as beam
from apache_beam.transforms import combiners

from pipelines.config import RunConfig
from transforms import bundle_steps as steps
from transforms.sinks.beam_sinks import (
    RUN_KEY,
    SpillBundle,
    WriteJobJson,
    WriteJobLines,
    WriteShard,
    sum_counts,
)
from transforms.sinks.beam_stats import MergeStats, StatsCombineFn
from transforms.stages import (
    DEAD_LETTER,
    REJECTED,
    CheckBundle,
    DiscoverUnits,
    ReadBundles,
    TransformBundle,
    job_of,
)

COUNTS_FILE = ".counts.json"
DRY_RUN_FILE = "llm_dry_run.json"
RESHAPES_FILE = ".lf_reshapes.json"


def _split(pcoll: Any, label: str, dofn: beam.DoFn) -> Any:
    return pcoll | label >> beam.ParDo(dofn).with_outputs(REJECTED, DEAD_LETTER, main="main")


def build(pipeline: beam.Pipeline, config: RunConfig) -> None:
    """Add every stage and sink of a run to `pipeline`."""
    gate = steps.GateSettings(config.instance_status, config.reward_key, config.reward_threshold)
    score_filter = steps.FilterSettings(config.min_score, config.score_key)

    units = _split(
        pipeline | "Inputs" >> beam.Create(sorted(config.inputs)),
        "Discover",
        DiscoverUnits(config.input_format),
    )
    read = _split(
        units.main | "ReshufflePaths" >> beam.Reshuffle(), "Read", ReadBundles(config.progress)
    )
    readable = _split(read.main, "ReadCheck", CheckBundle("read", steps.read_problem))
    gated = _split(
        readable.main, "RewardGate", CheckBundle("gate", partial(steps.gate_problem, settings=gate))
    )
    valid = _split(gated.main, "Validate", CheckBundle("validate", steps.validation_problem))
    scored = _split(valid.main, "ScoreTQSv2", TransformBundle("score", steps.score_bundle))
    judged = _judge(scored.main, config)
    kept = _split(
        judged,
        "ScoreFilter",
        CheckBundle("filter", partial(steps.score_filter_problem, settings=score_filter)),
    )
    stages = (units, read, readable, gated, valid, scored, kept)
    rejects = [s[REJECTED] for s in stages] | "AllRejects" >> beam.Flatten()
    dead = [s[DEAD_LETTER] for s in stages] | "AllDeadLetters" >> beam.Flatten()
    _write_outputs(config, read.main, kept.main, rejects, dead)


def _judge(scored: Any, config: RunConfig) -> Any:
    """The optional LLM judges, on batches of bundles (or only their cost, in a dry run)."""
    if not config.llm_judge:
        return scored
    from transforms.judge_stage import JudgeBundles, PlanJudgeCalls, sum_estimates

    settings = config.judge_settings()
    batches = scored | "BatchForJudge" >> beam.BatchElements(
        min_batch_size=1, max_batch_size=config.llm_batch_size
    )
    if not config.llm_dry_run:
        return batches | "LLMJudge" >> beam.ParDo(JudgeBundles(settings))
    planned = batches | "PlanJudgeCalls" >> beam.ParDo(PlanJudgeCalls(settings)).with_outputs(
        "estimate", main="bundles"
    )
    (
        planned.estimate
        | "AllEstimates" >> combiners.ToList()
        | "SumEstimates" >> beam.Map(lambda estimates: (RUN_KEY, sum_estimates(estimates)))
        | "WriteEstimate" >> beam.ParDo(WriteJobJson(config.output, DRY_RUN_FILE))
    )
    return planned.bundles


def _write_outputs(config: RunConfig, read: Any, kept: Any, rejects: Any, dead: Any) -> None:
    out = config.output
    reshapes = (
        kept
        | "SpillBundles"
        >> beam.ParDo(SpillBundle(out, config.num_shards, config.chat_template_tokenizer))
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(WriteShard(out, config.num_shards))
    )
    (
        reshapes
        | "SumReshapes" >> beam.CombinePerKey(sum_counts)
        | "WriteReshapes" >> beam.ParDo(WriteJobJson(out, RESHAPES_FILE))
    )
    for name, pcoll in (("rejects.jsonl", rejects), ("dead_letter.jsonl", dead)):
        (
            pcoll
            | f"KeyByJob {name}" >> beam.Map(lambda r: (r["job"], r))
            | f"Group {name}" >> beam.GroupByKey()
            | f"Write {name}" >> beam.ParDo(WriteJobLines(out, name))
        )
    per_job = (
        kept
        | "StatsByJob" >> beam.Map(lambda b: (job_of(b), b))
        | "CombineStats" >> beam.CombinePerKey(StatsCombineFn(config.tokenizer))
    )
    (
        per_job
        | "StatsJson" >> beam.MapTuple(lambda job, stats: (job, stats.to_json()))
        | "WriteStats" >> beam.ParDo(WriteJobJson(out, "lf.stats.json"))
    )
    (
        per_job
        | "JobStats" >> beam.Values()
        | "MergeRunStats" >> beam.CombineGlobally(MergeStats())
        | "KeyRunStats" >> beam.Map(lambda stats: (RUN_KEY, stats))
        | "WriteRunStats" >> beam.ParDo(WriteJobJson(out, "lf.stats.json"))
    )
    counts = (
        (
            read | "CountRead" >> beam.Map(lambda b: (job_of(b), {"read": 1})),
            kept | "CountWritten" >> beam.Map(_written_counts),
            rejects
            | "CountRejects" >> beam.Map(lambda r: (r["job"], {f"rejected.{r['stage']}": 1})),
            dead | "CountDead" >> beam.Map(lambda r: (r["job"], {f"dead_letter.{r['stage']}": 1})),
        )
        | "AllCounts" >> beam.Flatten()
        | "SumCounts" >> beam.CombinePerKey(sum_counts)
    )
    counts | "WriteCounts" >> beam.ParDo(WriteJobJson(out, COUNTS_FILE))


def _written_counts(bundle: dict[str, Any]) -> tuple[str, dict[str, int]]:
    main = sum(
        1
        for r in bundle["records"]
        if r["meta_info"]["unique_info"].get("_agent_type", "main") == "main"
    )
    return job_of(bundle), {
        "written": 1,
        "records.main": main,
        "records.subagent": len(bundle["records"]) - main,
    }
