"""The two steps before the chain, shared by every driver: detect inputs, open read units.

Both turn one element into many, so they sit outside `run_stages`, but they route what they
cannot use the same way: a refused input is a reject (stage `detect` or `open`, with the
reason), a crash a dead letter; every drop carries the job of the trial it came from.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from transforms.chain import (
    DEAD_LETTER,
    DETECT,
    OPEN,
    REJECTED,
    Bundle,
    Drop,
    dead_letter_record,
    reject_record,
)
from transforms.readers.bundle import ReaderError
from transforms.readers.confined import OverBudget, ReadLimits
from transforms.readers.discover import ReadUnit, discover_trials
from transforms.readers.harbor import read_trial_unit
from transforms.readers.provenance import attach_provenance
from transforms.readers.registry import Reader, reader_for
from transforms.readers.remote import is_remote, iter_remote_units, read_remote_trial

__all__ = ["DETECT", "OPEN", "detect_units", "open_unit"]


def detect_units(
    path: str, forced_format: str | None, limits: ReadLimits
) -> Iterator[ReadUnit | Drop]:
    """The read units under one input path (Harbor jobs split into trials), or drops."""
    try:
        units = (
            (
                ReadUnit(Path(posixpath.basename(t.url)), "harbor", job=t.job, url=t.url)
                for t in iter_remote_units(path, limits)
            )
            if is_remote(path)
            else discover_trials([Path(path)], forced_format, limits)
        )
        for unit in units:
            if unit.format is not None:
                yield dataclasses.replace(unit, root=path)
                continue
            where = {"job": unit.job, "source": unit.url or str(unit.path)}
            yield Drop(REJECTED, reject_record(DETECT, where, unit.refusal or "unsupported"))
    except ReaderError as exc:
        yield Drop(REJECTED, reject_record(DETECT, {"source": path}, str(exc)))
    except Exception as exc:  # discovery must not lose the other inputs
        yield Drop(DEAD_LETTER, dead_letter_record(DETECT, {"source": path}, exc))


def open_unit(
    unit: ReadUnit, limits: ReadLimits, reader: Reader | None = None
) -> Iterator[Bundle | Drop]:
    """The bundles of one read unit (by its format's reader, or `reader`); a refused unit is
    a reject, a reader crash a dead letter."""
    assert unit.format is not None
    where = {"job": unit.job, "source": unit.url or str(unit.path), "format": unit.format}
    try:
        if unit.url is not None:
            remote = dict(read_remote_trial(unit.url, unit.job, limits))
            attach_provenance(remote, unit.root, unit.url, trial=True)
            yield remote
            return
        for bundle in (reader or _reader(unit))(unit.path, limits):
            if unit.job and not bundle.get("job"):
                bundle["job"] = unit.job
            opened = dict(bundle)
            trial = unit.format == "harbor" and unit.job is not None
            attach_provenance(opened, unit.root, str(unit.path), trial=trial)
            yield opened
    except (ReaderError, OverBudget) as exc:
        yield Drop(REJECTED, reject_record(OPEN, where, str(exc)))
    except Exception as exc:  # a reader bug costs this unit, not the run
        yield Drop(DEAD_LETTER, dead_letter_record(OPEN, where, exc))


def _reader(unit: ReadUnit) -> Reader:
    """The unit's reader; a Harbor trial unit with its job known reads just that trial."""
    if unit.format == "harbor" and unit.job is not None:
        return partial(read_trial_unit, job=unit.job)
    assert unit.format is not None
    return reader_for(unit.format)
