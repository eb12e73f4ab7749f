"""Each stage's share of one `trajcurate run`'s CPU time (run by `bench_pipeline.py`).

Runs the pipeline in this process (the in-process runner) with a timer around the entry
point of every stage: detecting and reading trials, each chain stage by its name (validate,
redact, score, clean, ...), rendering IM records, LF conversion, the conversation exports,
selection's candidates and decision, the stats, and writing (spills, shards, sidecar, the
small per-job files). Timers nest: a stage's time excludes the stages it calls, so the
shares add up. What no timer covers is the runner's own work (Beam's bundles, coders and
groupings) and the run's set-up and end (argument checks, manifests, the card): "Beam and
the rest". Start-up (interpreter and imports up to `pipelines.cli`) is timed on its own.

    python benchmarks/stage_shares.py OUT_JSON -- run --input JOBS --output DIR ...

writes {"startup": s, "cpu": s, "wall": s, "stages": {name: s}} to OUT_JSON.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

STARTED = time.perf_counter()


def _patch(timers: Any) -> None:
    """Put a timer around each stage's entry point, where the pipeline looks it up."""
    from pipelines import run_pipeline
    from transforms import chain, stages
    from transforms.sinks import beam_scores, beam_sinks, beam_stats, layout, records

    def patch(owner: Any, attribute: str, name: str) -> None:
        setattr(owner, attribute, timers.wrap(name, getattr(owner, attribute)))

    patch(stages, "detect_units", "read")
    patch(stages, "open_unit", "read")
    patch(beam_sinks, "bundle_payload", "render IM")
    patch(records, "conform_im_record", "conform schema")
    patch(records, "to_lf_example", "LF")
    patch(records, "export_lines", "exports")
    patch(beam_scores, "candidate_item", "selection")
    patch(beam_scores, "decide_job", "selection")
    patch(beam_scores, "add_bundle", "stats")
    patch(beam_stats, "add_bundle", "stats")
    patch(beam_sinks.SpillBundle, "_spill", "writing")
    patch(beam_sinks.WriteShard, "_write_files", "writing")
    patch(beam_scores, "sidecar_lines", "writing")
    patch(layout, "write_bytes", "writing")

    def timed_stages(make: Callable[..., list[chain.Stage]]) -> Callable[..., list[chain.Stage]]:
        def made(settings: Any) -> list[chain.Stage]:
            return [_timed_stage(timers, stage) for stage in make(settings)]

        return made

    run_pipeline.stages_before_judge = timed_stages(run_pipeline.stages_before_judge)
    run_pipeline.stages_after_judge = timed_stages(run_pipeline.stages_after_judge)


def _timed_stage(timers: Any, stage: Any) -> Any:
    from transforms.chain import Stage

    if stage.check is not None:
        return Stage(stage.name, check=timers.wrap(stage.name, stage.check))
    return Stage(stage.name, transform=timers.wrap(stage.name, stage.transform))


def main(argv: list[str]) -> int:
    out, separator, *run = argv
    if separator != "--":
        sys.exit("usage: stage_shares.py OUT_JSON -- run ARGS...")
    import stage_timers as timers  # by name: Beam pickles the DoFns, not the totals

    from pipelines.cli import main as trajcurate

    startup = time.perf_counter() - STARTED
    _patch(timers)
    cpu_before = time.process_time()
    begun = time.perf_counter()
    code = trajcurate(run)
    wall = time.perf_counter() - begun
    cpu = time.process_time() - cpu_before
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {"startup": startup, "cpu": cpu, "wall": wall, "rss_mib": peak}
    result["stages"] = dict(timers.TOTALS)
    with open(out, "wb") as handle:
        handle.write(orjson.dumps(result))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
