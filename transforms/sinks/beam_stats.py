"""`lf.stats.json` as a Beam CombineFn over written bundles (per job and for the run)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import apache_beam as beam

from transforms.sinks.bundle_stats import add_bundle
from transforms.sinks.lf_render import load_tokenizer
from transforms.sinks.stats import ESTIMATE_METHOD, Stats, Tokenizer, tokenizer_method


class StatsCombineFn(beam.CombineFn):
    """Adds every record of each bundle to a mergeable `Stats`; outputs its JSON object."""

    def __init__(self, tokenizer_path: str | None = None) -> None:
        self.tokenizer_path = tokenizer_path
        self._tokenizer: Tokenizer | None = None

    def setup(self) -> None:
        if self.tokenizer_path:
            self._tokenizer = load_tokenizer(self.tokenizer_path)

    def _method(self) -> str:
        return tokenizer_method(self.tokenizer_path) if self.tokenizer_path else ESTIMATE_METHOD

    def create_accumulator(self) -> Stats:
        return Stats(self._method())

    def add_input(self, stats: Stats, bundle: dict[str, Any] | Stats) -> Stats:
        if isinstance(bundle, Stats):  # a bundle's own stats, counted once selection kept it
            return stats.merge(bundle)
        if self.tokenizer_path and self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.tokenizer_path)
        return add_bundle(stats, bundle, self._tokenizer)

    def merge_accumulators(self, accumulators: Iterable[Stats]) -> Stats:
        merged: Stats | None = None
        for stats in accumulators:
            merged = stats if merged is None else merged.merge(stats)
        return merged if merged is not None else self.create_accumulator()

    def extract_output(self, stats: Stats) -> Stats:
        return stats


class MergeStats(beam.CombineFn):
    """Merges per-job `Stats` into the run's (no record is counted twice); a None input
    (the pipeline's seed, so that a run with no job still has its stats) adds nothing. An
    input is never changed: it is also the job's own stats, which its writer may read after
    this (on Dask, which shares a result between the tasks that read it, a job's
    `lf.stats.json` got the whole run's counts when the run's merge ran first)."""

    def create_accumulator(self) -> Stats | None:
        return None

    def add_input(self, merged: Stats | None, stats: Stats | None) -> Stats | None:
        if stats is None:
            return merged
        if merged is None:
            merged = Stats(stats.token_method)  # an accumulator of its own, not the input
        return merged.merge(stats)

    def merge_accumulators(self, accumulators: Iterable[Stats | None]) -> Stats | None:
        merged: Stats | None = None
        for stats in accumulators:
            if stats is not None:
                merged = stats if merged is None else merged.merge(stats)
        return merged

    def extract_output(self, merged: Stats | None) -> dict[str, Any]:
        return merged.to_json() if merged is not None else Stats().to_json()
