"""Beam DoFns of the pipeline: thin adapters around the chain (`transforms/chain.py`).

Each DoFn passes what goes on to the main output and what left the chain to `REJECTED`
(with its reason) or `DEAD_LETTER` (with the error); the stages themselves, their order and
their routing live in `chain.py` and `intake.py`, shared with the plain-loop commands.
Counters are Beam metrics named `<stage>.in`, `<stage>.kept`, `<stage>.rejected`,
`<stage>.dead_letter`.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import Metrics
from apache_beam.pvalue import TaggedOutput
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from transforms import read_ahead
from transforms.chain import (
    DEAD_LETTER,
    REJECTED,
    Begun,
    Bundle,
    ChainSettings,
    Drop,
    Stage,
    job_of,
    read_counts,
    run_stages,
)
from transforms.intake import DETECT, OPEN, detect_units, open_unit
from transforms.progress import Progress
from transforms.read_ahead import ReadAhead
from transforms.readers.confined import ReadLimits
from transforms.readers.discover import ReadUnit

__all__ = [
    "DEAD_LETTER",
    "NAMESPACE",
    "READ",
    "REJECTED",
    "DetectUnits",
    "OpenUnits",
    "RunChain",
    "job_of",
]

NAMESPACE = "trajcurate"
_GLOBAL = (GlobalWindow(),)
READ = "read"  # tagged output of OpenUnits: (job, what the bundle adds to its job's counts)


class _Counting(beam.DoFn):
    """Beam counters, one per name: tallied in the DoFn and added to Beam's counters once
    per Beam bundle (a counter update costs more than the stage it counts)."""

    def __init__(self) -> None:
        self._tally: Counter[str] = Counter()

    def count(self, name: str) -> None:
        self._tally[name] += 1

    def start_bundle(self) -> None:
        self._tally = Counter()

    def finish_bundle(self) -> Iterable[Any] | None:
        self._flush_counts()
        return None

    def _flush_counts(self) -> None:
        tally, self._tally = self._tally, Counter()
        for name, value in tally.items():
            Metrics.counter(NAMESPACE, name).inc(value)


def _windowed(output: Any) -> Any:
    if isinstance(output, TaggedOutput):
        return TaggedOutput(output.tag, WindowedValue(output.value, MIN_TIMESTAMP, _GLOBAL))
    return WindowedValue(output, MIN_TIMESTAMP, _GLOBAL)


def _route(item: Any) -> Any:
    return TaggedOutput(item.kind, item.record) if isinstance(item, Drop) else item


class DetectUnits(_Counting):
    """An input path or glob -> read units, Harbor jobs split into trials."""

    def __init__(self, forced_format: str | None, limits: ReadLimits) -> None:
        super().__init__()
        self.forced_format = forced_format
        self.limits = limits

    def process(self, path: str) -> Iterator[Any]:
        self.count(f"{DETECT}.in")
        for item in detect_units(path, self.forced_format, self.limits):
            self.count(f"{DETECT}.{item.kind}" if isinstance(item, Drop) else f"{DETECT}.kept")
            yield _route(item)


class OpenUnits(_Counting):
    """A read unit -> its bundles, and on `READ` each bundle's read counts (job,
    `read_counts`), taken here: the chain changes a bundle in place, so a second reader of
    the opened bundles would see them changed or not depending on which ran first (on Dask,
    which shares a task's result between the tasks that read it, it would). With `progress`,
    a progress line on stderr on long runs: units opened out of `total` (a side input:
    every unit detected) with rate and ETA; when `processes` > 1 share the units, each
    prints plain lines of its own count and rate, named by its process id (a share of the
    total would read as a run stopped half-way). If this process has a read-ahead helper
    (`transforms/read_ahead.py`: the command starts one only where it pays), a bundle hands
    it the units it takes and takes their bundles back, in order, `UNITS_AHEAD` units later,
    the last at its end; with `chain`, the helper runs them through the chain's first stages
    too (`chain.Begun`: their read counts and those stages' counters come back with them)."""

    def __init__(
        self,
        limits: ReadLimits,
        progress: bool = False,
        processes: int = 1,
        chain: ChainSettings | None = None,
    ) -> None:
        super().__init__()
        self.limits = limits
        self.chain = chain
        self.progress = progress
        self.processes = processes
        self._progress: Progress | None = None
        self._opened = 0
        self._ahead: ReadAhead | None = None
        self._total: int | None = None

    def start_bundle(self) -> None:
        super().start_bundle()
        self._ahead = read_ahead.claim(self)

    def process(self, unit: ReadUnit, total: int | None = None) -> Iterator[Any]:
        self._total = total
        if self._ahead is None:
            yield from self._outputs(open_unit(unit, self.limits))
            return
        for items in self._ahead.push(unit, self.limits, self.chain):
            yield from self._outputs(items)

    def finish_bundle(self) -> Iterator[Any]:
        """The units the helper still holds (a bundle's last outputs are windowed values)."""
        if self._ahead is not None:
            for items in self._ahead.drain():
                yield from (_windowed(output) for output in self._outputs(items))
            read_ahead.release(self)
            self._ahead = None
        self._flush_counts()

    def _outputs(self, items: Iterable[Bundle | Drop]) -> Iterator[Any]:
        self.count(f"{OPEN}.in")
        for item in items:
            if isinstance(item, Drop):
                self.count(f"{OPEN}.{item.kind}")
                yield _route(item)
                continue
            self.count(f"{OPEN}.kept")
            if isinstance(item, Begun):
                yield TaggedOutput(READ, (item.job, item.read))
                self._tally.update(item.counts)
                yield _route(item.item)
                continue
            yield TaggedOutput(READ, (job_of(item), read_counts(item)))
            yield item
        self._show_progress(self._total)

    def _show_progress(self, total: int | None) -> None:
        if not self.progress:
            return
        if self._progress is None:
            label, shared = "trajcurate run: read", self.processes > 1
            self._progress = Progress(
                sys.stderr,
                f"{label} (process {os.getpid()})" if shared else label,
                every=1000,
                total=None if shared else total,
                unit="units",
                redraw=not shared,
            )
        self._opened += 1
        self._progress.update(self._opened)

    def teardown(self) -> None:
        if self._progress is not None:
            self._progress.close()


class RunChain(_Counting):
    """Run each bundle through `stages`: on, rejected or dead-lettered."""

    def __init__(self, stages: list[Stage]) -> None:
        super().__init__()
        self.stages = stages

    def process(self, bundle: dict[str, Any]) -> Iterator[Any]:
        yield _route(run_stages(bundle, self.stages, self.count))
