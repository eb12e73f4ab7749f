"""Beam DoFns of the pipeline: thin adapters that route, count and dead-letter.

Every DoFn here wraps a pure function (readers, `bundle_steps`) and does three things only:
pass what goes on to the main output, send drops to `REJECTED` with their reason, and send
exceptions to `DEAD_LETTER` with the input and the error. Counters are Beam metrics named
`<stage>.in`, `<stage>.kept`, `<stage>.rejected`, `<stage>.dead_letter`.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import Metrics
from apache_beam.pvalue import TaggedOutput

from transforms.progress import Progress
from transforms.readers.bundle import ReaderError
from transforms.readers.discover import discover_trials
from transforms.readers.registry import reader_for

REJECTED = "rejected"
DEAD_LETTER = "dead_letter"
STANDALONE_JOB = "standalone"
NAMESPACE = "trajcurate"


def job_of(bundle: dict[str, Any]) -> str:
    return bundle.get("job") or STANDALONE_JOB


def reject_record(stage: str, bundle: dict[str, Any], reason: str) -> dict[str, Any]:
    return {
        "job": job_of(bundle),
        "stage": stage,
        "instance_id": bundle.get("instance_id"),
        "source": bundle.get("source"),
        "format": bundle.get("format"),
        "records": len(bundle.get("records") or []),
        "reason": reason,
    }


def dead_letter_record(stage: str, where: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {
        "job": where.get("job") or STANDALONE_JOB,
        "stage": stage,
        "instance_id": where.get("instance_id"),
        "source": where.get("source"),
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": "".join(lines[-6:]),
    }


class _Counted(beam.DoFn):
    """Counters for one stage."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self.seen = Metrics.counter(NAMESPACE, f"{stage}.in")
        self.kept = Metrics.counter(NAMESPACE, f"{stage}.kept")
        self.dropped = Metrics.counter(NAMESPACE, f"{stage}.rejected")
        self.failed = Metrics.counter(NAMESPACE, f"{stage}.dead_letter")


class DiscoverUnits(_Counted):
    """An input path or glob -> (path, format) read units, Harbor jobs split into trials."""

    def __init__(self, forced_format: str | None = None) -> None:
        super().__init__("discover")
        self.forced_format = forced_format

    def process(self, path: str) -> Iterator[Any]:
        self.seen.inc()
        try:
            for unit in discover_trials([Path(path)], self.forced_format):
                if unit.format is None:
                    self.dropped.inc()
                    where = {"source": str(unit.path), "instance_id": None}
                    yield TaggedOutput(REJECTED, reject_record("detect", where, unit.refusal or ""))
                else:
                    self.kept.inc()
                    yield (str(unit.path), unit.format)
        except Exception as exc:
            self.failed.inc()
            yield TaggedOutput(DEAD_LETTER, dead_letter_record("discover", {"source": path}, exc))


class ReadBundles(_Counted):
    """A read unit -> bundles; a refused input is a reject, a reader crash a dead letter.

    With `progress`, each worker prints a progress line to stderr on long runs.
    """

    def __init__(self, progress: bool = False) -> None:
        super().__init__("read")
        self.progress = progress
        self._progress: Progress | None = None
        self._read = 0

    def setup(self) -> None:
        if self.progress:
            self._progress = Progress(sys.stderr, "trajcurate run: read", every=1000)

    def process(self, unit: tuple[str, str]) -> Iterator[Any]:
        path, fmt = unit
        self.seen.inc()
        try:
            for bundle in reader_for(fmt)(Path(path)):
                self.kept.inc()
                self._read += 1
                if self._progress is not None:
                    self._progress.update(self._read)
                yield dict(bundle)
        except ReaderError as exc:
            self.dropped.inc()
            where = {"source": path, "format": fmt, "instance_id": None}
            yield TaggedOutput(REJECTED, reject_record("open", where, str(exc)))
        except Exception as exc:
            self.failed.inc()
            where = {"source": path, "instance_id": None}
            yield TaggedOutput(DEAD_LETTER, dead_letter_record("open", where, exc))


class CheckBundle(_Counted):
    """Apply `check(bundle) -> reason | None`: None keeps the bundle, a reason rejects it."""

    def __init__(self, stage: str, check: Callable[[dict[str, Any]], str | None]) -> None:
        super().__init__(stage)
        self.check = check

    def process(self, bundle: dict[str, Any]) -> Iterator[Any]:
        self.seen.inc()
        try:
            problem = self.check(bundle)
        except Exception as exc:
            self.failed.inc()
            yield TaggedOutput(DEAD_LETTER, dead_letter_record(self.stage, bundle, exc))
            return
        if problem is None:
            self.kept.inc()
            yield bundle
        else:
            self.dropped.inc()
            yield TaggedOutput(REJECTED, reject_record(self.stage, bundle, problem))


class TransformBundle(_Counted):
    """Apply `step(bundle) -> bundle`; an exception sends the bundle to the dead letters."""

    def __init__(self, stage: str, step: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        super().__init__(stage)
        self.step = step

    def process(self, bundle: dict[str, Any]) -> Iterator[Any]:
        self.seen.inc()
        try:
            result = self.step(bundle)
        except Exception as exc:
            self.failed.inc()
            yield TaggedOutput(DEAD_LETTER, dead_letter_record(self.stage, bundle, exc))
            return
        self.kept.inc()
        yield result
