"""The curation chain in a plain loop, for `convert` and `score` (no Beam).

The same intake (`transforms/intake.py`) and the same stages (`transforms/chain.py`) as the
pipeline, in the same order, routed by the same `run_stages`; only the driving differs. The
counts come out in the pipeline's shape — per stage (`<stage>.in/kept/rejected/dead_letter`)
and per job (`read`, `written`, `rejected.<stage>`, `dead_letter.<stage>`, records, tallies)
— so a command's summary and the pipeline's manifest can be compared key by key.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from transforms import read_ahead
from transforms.chain import (
    DEAD_LETTER,
    Bundle,
    ChainSettings,
    Drop,
    accounting,
    job_of,
    read_counts,
    run_stages,
    stages_after_judge,
    stages_before_judge,
    written_counts,
)
from transforms.intake import detect_units, open_unit
from transforms.progress import Progress
from transforms.read_ahead import ReadAhead
from transforms.readers.confined import ReadLimits
from transforms.readers.discover import ReadUnit

STDERR_DROP_LIMIT = 50  # drops echoed on stderr; the rest only go to the files


class Meter(Protocol):
    """What the loop reports its progress to (`Progress`, or a worker's shared count)."""

    def update(self, done: int) -> None: ...

    def close(self) -> None: ...


@dataclass
class LoopCounts:
    """What a loop run saw: per stage, and per job in the pipeline manifest's keys."""

    stages: Counter[str] = field(default_factory=Counter)
    jobs: dict[str, Counter[str]] = field(default_factory=dict)

    def job(self, name: str) -> Counter[str]:
        counts = self.jobs.get(name)
        if counts is None:  # not `setdefault`: that makes a Counter every call
            counts = self.jobs[name] = Counter()
        return counts

    def totals(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for counts in self.jobs.values():
            total.update(counts)
        return total

    def accounting(self) -> dict[str, Any]:
        return accounting(self.totals())

    def drops_by_stage(self, kind: str) -> dict[str, int]:
        prefix = f"{kind}."
        return {
            k.removeprefix(prefix): v
            for k, v in sorted(self.totals().items())
            if k.startswith(prefix)
        }

    def render_accounting(self) -> str:
        acc = self.accounting()
        verdict = "yes" if acc["balanced"] else "NO"
        return (
            f"in = written + rejected + dead-lettered: {acc['in']} = {acc['written']} + "
            f"{acc['rejected']} + {acc['dead_lettered']}: {verdict}"
        )


class CurationLoop:
    """Detect, open and curate every input; hand kept bundles to `write`, drops to `drop`."""

    def __init__(
        self,
        settings: ChainSettings,
        limits: ReadLimits,
        write: Callable[[Bundle], None],
        drop: Callable[[Drop], None],
        *,
        on_read: Callable[[Bundle], None] | None = None,
        stderr: TextIO | None = None,
        label: str = "trajcurate",
        by_unit: bool = False,
    ) -> None:
        """Inputs are detected first, then opened. `by_unit`: progress counts read units out
        of their total (with a bar and ETA); else it counts bundles (one IM file holds many).
        Units are opened by this process's read-ahead helper if the command started one
        (`transforms/read_ahead.py`), in the same order."""
        self.stages = [*stages_before_judge(settings), *stages_after_judge(settings)]
        self.limits = limits
        self.write = write
        self.drop = drop
        self.on_read = on_read
        self.stderr = stderr
        self.counts = LoopCounts()
        self.label = label
        self.by_unit = by_unit
        self.progress: Meter | None = None
        self._dropped = 0

    def run(self, paths: Iterable[str], forced_format: str | None = None) -> LoopCounts:
        units = self.detect(paths, forced_format)
        if self.stderr is not None:
            total = len(units) if self.by_unit else None
            unit_name = "units" if self.by_unit else "records"
            self.progress = Progress(self.stderr, self.label, 1000, total=total, unit=unit_name)
        helper = read_ahead.claim(self)
        try:
            self.curate_opened(self._opened(units, helper))
        finally:
            read_ahead.release(self)
        if self.progress is not None:
            self.progress.close()
        return self.counts

    def detect(self, paths: Iterable[str], forced_format: str | None = None) -> list[ReadUnit]:
        """The read units of `paths`; what detection refuses is dropped here."""
        return [unit for path in paths for unit in self._detect(path, forced_format)]

    def curate_opened(self, opened: Iterable[Iterable[Bundle | Drop]]) -> None:
        """Curate what opening each unit yields (`open_unit`), unit by unit."""
        for done, items in enumerate(opened, 1):
            self._count("open.in")
            for item in items:
                self._count_outcome("open", item)
                if isinstance(item, Drop):
                    self._drop(item)
                else:
                    self._curate(item)
            if self.progress is not None and self.by_unit:
                self.progress.update(done)

    def _opened(
        self, units: list[ReadUnit], helper: ReadAhead | None
    ) -> Iterator[Iterable[Bundle | Drop]]:
        """What opening each unit yields, unit by unit in order (opened here or by `helper`)."""
        for unit in units:
            if helper is None:
                yield open_unit(unit, self.limits)
            else:
                yield from helper.push(unit, self.limits)
        if helper is not None:
            yield from helper.drain()

    def _detect(self, path: str, forced_format: str | None) -> Iterator[ReadUnit]:
        self._count("detect.in")
        for unit in detect_units(path, forced_format, self.limits):
            self._count_outcome("detect", unit)
            if isinstance(unit, Drop):
                self._drop(unit)
            else:
                yield unit

    def _count_outcome(self, stage: str, item: object) -> None:
        self._count(f"{stage}.{item.kind if isinstance(item, Drop) else 'kept'}")

    def _curate(self, bundle: Bundle) -> None:
        job = self.counts.job(job_of(bundle))
        _add(job, read_counts(bundle))
        if self.on_read is not None:
            self.on_read(bundle)
        result = run_stages(bundle, self.stages, self._count)
        if isinstance(result, Drop):
            self._drop(result)
        else:
            self.write(result)
            _add(job, written_counts(result))
        if self.progress is not None and not self.by_unit:
            self.progress.update(self.counts.stages["open.kept"])

    def _count(self, name: str) -> None:
        self.counts.stages[name] += 1

    def _drop(self, item: Drop) -> None:
        record = item.record
        self.counts.job(job_of(record))[f"{item.kind}.{record['stage']}"] += 1
        self._dropped += 1
        if self.stderr is not None and self._dropped <= STDERR_DROP_LIMIT:
            what = record["error"] if item.kind == DEAD_LETTER else record["reason"]
            label = f"{record['source']} [{record['instance_id']}]"
            print(f"{label}: {record['stage']}: {what}", file=self.stderr)
        self.drop(item)


def _add(counter: Counter[str], counts: dict[str, int]) -> None:
    """`counter.update(counts)` without its Mapping check and method lookups (twice a bundle)."""
    get = counter.get
    for key, value in counts.items():
        counter[key] = get(key, 0) + value
