"""Beam side of the sidecar and of selection: thin DoFns around `bundle_steps.decided_row`,
`transforms/selection.py` and `transforms/sinks/scores.py`.

Memory stays flat: whole bundles never wait at a grouping. Every bundle that passed the
chain is spilled as before, and the spill also gives its small `candidate` item (sort key,
selection keys, sidecar row, and — when selection may drop it — its counts and one-bundle
stats); what is grouped per job is those items and the sidecar rows of the job's bundles
rejected after scoring. `DecideJob` then decides the job, writes its `scores.jsonl`, emits
the rejects of selection drops and, per job, the verdicts the shard writer reads as a side
input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import apache_beam as beam
from apache_beam.pvalue import TaggedOutput

from transforms.chain import REJECTED, Drop, Stage, run_stages
from transforms.selection import SelectionSettings, Verdict
from transforms.sinks import layout
from transforms.sinks.beam_sinks import WRITTEN, SpillBundle
from transforms.sinks.bundle_stats import add_bundle
from transforms.sinks.lf import LfSettings
from transforms.sinks.lf_render import load_tokenizer
from transforms.sinks.row_spill import RowSpill, line_reader, remove_rows
from transforms.sinks.scores import (
    CANDIDATE,
    ROW,
    SIDECAR,
    candidate_item,
    decide_job,
    kept_outcomes,
    prior_row,
    settle_job,
    sidecar_lines,
)
from transforms.sinks.split import NO_SPLIT, SplitSettings
from transforms.sinks.stats import ESTIMATE_METHOD, Stats, Tokenizer, tokenizer_method
from transforms.sinks.wire import Packer, Unpacker
from transforms.stages import RunChain

SCORES = "scores"  # tagged output: (job, ("row", sidecar row)) of bundles rejected after scoring
CANDIDATES = "candidates"  # tagged output of the spill: (job, ("candidate", item))
KEPT = "kept"  # tagged output of DecideJob: (job, outcome) of an item selection kept


class RunChainWithRows(RunChain):
    """`RunChain` whose rejects after scoring also give their sidecar row (`SCORES`), its
    line spilled under `output` (`RowSpill`)."""

    def __init__(self, stages: list[Stage], output: str | None = None) -> None:
        super().__init__(stages)
        self.output = output
        self._rows = RowSpill(output)
        self._packer = Packer(output or "")

    def start_bundle(self) -> None:
        super().start_bundle()
        self._rows = RowSpill(self.output)

    def finish_bundle(self) -> None:
        super().finish_bundle()  # the stages' counters
        self._rows.close()

    def teardown(self) -> None:
        self._rows.close()

    def process(self, bundle: dict[str, Any]) -> Iterator[Any]:
        item = run_stages(bundle, self.stages, self.count)
        if not isinstance(item, Drop):
            yield item
            return
        if item.row is not None:
            job = item.record["job"]
            instance_id, task, resolved, line = prior_row(item.row)
            row = (instance_id, task, resolved, self._rows.keep(job, line))
            yield TaggedOutput(SCORES, (job, (ROW, self._packer.prior_row(job, row))))
        yield TaggedOutput(item.kind, item.record)


class SpillWithCandidates(SpillBundle):
    """`SpillBundle` that also gives each spilled bundle's candidate item, (job, ("candidate",
    item)) on `CANDIDATES`: what the job's decision and its sidecar need of it. With
    selection active the item carries the bundle's counts and stats, which count only if
    selection keeps it, and the bundle itself is not passed on (`WRITTEN`): nothing else
    needs it. Built here, where the bundle is, so that no second consumer of the bundles
    makes the runner hold them."""

    def __init__(
        self,
        output: str,
        num_shards: int,
        lf: LfSettings,
        selection: SelectionSettings,
        tokenizer_path: str | None = None,
        exports: Sequence[str] = (),
        split: SplitSettings = NO_SPLIT,
    ) -> None:
        super().__init__(output, num_shards, lf, exports, split)
        self.selection = selection
        self.tokenizer_path = tokenizer_path
        self._tokenizer: Tokenizer | None = None
        self._rows = RowSpill(output)
        self._packer = Packer(output)

    def setup(self) -> None:
        if self.selection.active and self.tokenizer_path:
            self._tokenizer = load_tokenizer(self.tokenizer_path)

    def process(self, bundle: dict[str, Any]) -> Iterator[Any]:
        for out in super().process(bundle):
            if not (isinstance(out, TaggedOutput) and out.tag == WRITTEN):
                yield out
                continue
            job, written = out.value
            item = candidate_item(written, self.selection, self._stats(written))
            for line in ("row", "outcome"):
                if item.get(line) is not None:
                    item[line] = self._rows.keep(job, item[line])
            yield TaggedOutput(CANDIDATES, (job, (CANDIDATE, self._packer.candidate(job, item))))
            if not self.selection.active:
                yield out

    def start_bundle(self) -> None:
        super().start_bundle()
        self._rows = RowSpill(self.output)

    def _close(self) -> None:
        super()._close()
        self._rows.close()

    def _stats(self, bundle: dict[str, Any]) -> Stats | None:
        if not self.selection.active:
            return None
        method = tokenizer_method(self.tokenizer_path) if self.tokenizer_path else ESTIMATE_METHOD
        return add_bundle(Stats(method), bundle, self._tokenizer)


class DecideJob(beam.DoFn):
    """(job, its candidate items and prior rows) -> DIR/<job>/scores.jsonl; main output
    (job, {key: curriculum order or None}) of the kept bundles, `REJECTED` the reject records
    of selection drops, `KEPT` (job, outcome: counts and stats) of the kept ones (selection
    active). With `keep_rows` the spilled rows are left for the driver's cleanup of `.parts`
    (a runner that recomputes a lost task may decide the job again: `WriteShard`'s
    `keep_parts`)."""

    def __init__(self, output: str, settings: SelectionSettings, keep_rows: bool = False) -> None:
        self.output = output
        self.settings = settings
        self.keep_rows = keep_rows

    def process(self, element: tuple[str, Iterable[tuple[str, Any]]]) -> Iterator[Any]:
        job, items = element
        verdicts, entries, written = decide_job(_unpacked(items, self.output, job), self.settings)
        line_of, close = line_reader()
        try:
            with layout.FileWriter(f"{layout.job_dir(self.output, job)}/{SIDECAR}") as sidecar:
                for line in sidecar_lines(entries, line_of):
                    sidecar.write(line)
            if self.settings.active:
                yield from self._settled(job, verdicts, written, line_of)
        finally:
            close()
        if not self.keep_rows:
            spilled = [row for _, row, _ in entries] + [item.get("outcome") for item in written]
            remove_rows(spilled)

    def _settled(
        self,
        job: str,
        verdicts: dict[tuple[str, str], Verdict],
        written: list[dict[str, Any]],
        line_of: Callable[[Any], bytes],
    ) -> Iterator[Any]:
        kept, dropped = settle_job(verdicts, written, line_of)
        for record in dropped:
            yield TaggedOutput(REJECTED, record)
        for outcome in kept_outcomes(written, kept, line_of):
            yield TaggedOutput(KEPT, (job, outcome))
        yield job, kept


def _unpacked(
    items: Iterable[tuple[str, bytes]], output: str, job: str
) -> Iterator[tuple[str, Any]]:
    """A job's grouped values as `decide_job` takes them, unpacked one at a time."""
    unpack = Unpacker(output, job)
    for kind, packed in items:
        yield kind, unpack.prior_row(packed) if kind == ROW else unpack.candidate(packed)


__all__ = ["CANDIDATES", "KEPT", "SCORES", "DecideJob", "RunChainWithRows", "SpillWithCandidates"]
