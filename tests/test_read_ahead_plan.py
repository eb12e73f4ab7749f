"""The read-ahead helper's plan (`read_ahead.plan`, `_Planned`): the units a run will ask
for, opened before it asks while it starts, and handed over only when asked for in order.

`_Planned` is the helper's side, run here in the test's own process (no fork): what it
holds for a unit must be what opening the unit when asked gives.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from transforms import read_ahead
from transforms.chain import Begun, ChainSettings, Drop, begin, stages_where_read
from transforms.intake import detect_units, open_unit
from transforms.read_ahead import _Planned
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits
from transforms.readers.discover import ReadUnit

CHAIN = ChainSettings(instance_status="all")


def _units(job: Path) -> list[ReadUnit]:
    return [u for u in detect_units(str(job), None, DEFAULT_LIMITS) if not isinstance(u, Drop)]


def _items(payloads: list[bytes]) -> list[Any]:
    return [item for payload in payloads for item in pickle.loads(payload)[1]]


def _planned(job: Path, chain: ChainSettings | None = CHAIN) -> _Planned:
    planned = _Planned()
    planned.start([str(job)], None, DEFAULT_LIMITS, chain)
    return planned


def _open_all(planned: _Planned) -> int:
    opened = 0
    while planned.open_next():
        opened += 1
    return opened


def test_planned_units_are_handed_over_in_order_as_opening_them_gives(composed: Path) -> None:
    planned = _planned(composed)
    units = _units(composed)
    assert _open_all(planned) == len(units) == 6
    assert planned.held > 0
    stages = stages_where_read(CHAIN)
    for unit in units:
        payloads = planned.take(unit, DEFAULT_LIMITS, CHAIN)
        assert payloads is not None
        expected = [begin(item, stages) for item in open_unit(unit, DEFAULT_LIMITS)]
        got = _items(payloads)
        assert got == expected
        assert all(isinstance(item, Begun) for item in got)
        assert pickle.loads(payloads[-1])[0] == "ok"
    assert planned.held == 0


def test_without_a_chain_the_plan_holds_the_bundles_as_opened(composed: Path) -> None:
    planned = _planned(composed, chain=None)
    unit = _units(composed)[0]
    assert planned.open_next()
    payloads = planned.take(unit, DEFAULT_LIMITS, None)
    assert payloads is not None
    assert _items(payloads) == list(open_unit(unit, DEFAULT_LIMITS))


def test_a_unit_asked_for_out_of_plan_ends_the_plan(composed: Path) -> None:
    planned = _planned(composed)
    units = _units(composed)
    _open_all(planned)
    assert planned.take(units[1], DEFAULT_LIMITS, CHAIN) is None  # the plan's next is units[0]
    assert (planned.units, planned.held, len(planned.opened)) == (None, 0, 0)
    assert planned.take(units[0], DEFAULT_LIMITS, CHAIN) is None
    assert not planned.open_next()


def test_other_limits_or_another_chain_end_the_plan(composed: Path) -> None:
    unit = _units(composed)[0]
    for limits, chain in (
        (ReadLimits(max_file_bytes=1024), CHAIN),
        (DEFAULT_LIMITS, ChainSettings(instance_status="all", redact="off")),
    ):
        planned = _planned(composed)
        assert planned.open_next()
        assert planned.take(unit, limits, chain) is None
        assert not planned.opened and not planned.open_next()


def test_a_unit_asked_for_before_it_was_opened_is_skipped_in_the_plan(composed: Path) -> None:
    planned = _planned(composed)
    units = _units(composed)
    assert planned.take(units[0], DEFAULT_LIMITS, CHAIN) is None  # opened by the asker
    assert planned.open_next()
    payloads = planned.take(units[1], DEFAULT_LIMITS, CHAIN)
    assert payloads is not None
    stages = stages_where_read(CHAIN)
    assert _items(payloads) == [begin(i, stages) for i in open_unit(units[1], DEFAULT_LIMITS)]


def test_the_plan_holds_no_more_than_its_room(
    composed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unit whose results would go over `PLANNED_BYTES` is not held: the plan ends there,
    the units held before it are still handed over, and it is opened when asked for."""
    whole = _planned(composed)
    whole.open_next()
    first_unit_bytes = whole.held
    monkeypatch.setattr(read_ahead, "PLANNED_BYTES", first_unit_bytes + 1)
    planned = _planned(composed)
    assert _open_all(planned) == 1
    assert planned.held == first_unit_bytes
    units = _units(composed)
    assert planned.take(units[0], DEFAULT_LIMITS, CHAIN) is not None
    assert planned.take(units[1], DEFAULT_LIMITS, CHAIN) is None


def test_an_object_store_input_is_left_out_of_the_plan() -> None:
    """Its trials are read where they are curated, and listing the store would need the
    options the run sets after planning."""
    sent: list[tuple[str, tuple[Any, ...]]] = []
    helper = object.__new__(read_ahead.ReadAhead)
    helper.failed = None
    helper._request = lambda kind, what, name: sent.append((kind, what))  # type: ignore[method-assign]
    helper.plan(["s3://bucket/jobs", "/data/jobs"], None, DEFAULT_LIMITS, CHAIN)
    assert sent == [("plan", (["/data/jobs"], None, DEFAULT_LIMITS, CHAIN))]
