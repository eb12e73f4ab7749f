"""Beam's DoFn state and timer specs, remembered per DoFn object (`pipelines/dofn_specs.py`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.coders import VarIntCoder
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import userstate
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec

from pipelines.dofn_specs import _Remembering, remember_dofn_specs
from pipelines.runner import make_pipeline

COUNT = ReadModifyWriteStateSpec("count", VarIntCoder())
COUNT_STATE = beam.DoFn.StateParam(COUNT)


class Plain(beam.DoFn):  # type: ignore[misc]
    def process(self, element: Any) -> Iterator[Any]:
        yield element


class Stateful(beam.DoFn):  # type: ignore[misc]
    def process(self, element: Any, count: Any = COUNT_STATE) -> Iterator[Any]:
        yield element


class Counting:
    """Beam's own `get_dofn_specs`, counting its calls."""

    def __init__(self) -> None:
        self.original = userstate.get_dofn_specs
        self.calls = 0

    def __call__(self, dofn: Any) -> tuple[set[Any], set[Any]]:
        self.calls += 1
        return self.original(dofn)


@pytest.fixture
def beam_specs() -> Iterator[Counting]:
    counting = Counting()
    yield counting
    userstate.get_dofn_specs = counting.original


def test_each_dofn_object_is_inspected_once_with_beam_s_answer(beam_specs: Counting) -> None:
    remembering = _Remembering(beam_specs)
    stateful, plain = Stateful(), Plain()
    for _ in range(3):
        assert remembering(stateful) == beam_specs.original(stateful) == ({COUNT}, set())
        assert remembering(plain) == (set(), set())
    assert beam_specs.calls == 2
    assert remembering(Stateful()) == ({COUNT}, set())  # another object: inspected itself
    assert beam_specs.calls == 3


def test_callers_get_sets_of_their_own(beam_specs: Counting) -> None:
    remembering = _Remembering(beam_specs)
    stateful = Stateful()
    remembering(stateful)[0].clear()
    assert remembering(stateful) == ({COUNT}, set())


def test_a_dofn_that_goes_is_forgotten(beam_specs: Counting) -> None:
    remembering = _Remembering(beam_specs)
    dofn = Plain()
    remembering(dofn)
    assert len(remembering._known) == 1
    del dofn
    gc.collect()
    assert remembering._known == {}


def test_an_object_without_weak_references_is_inspected_every_time() -> None:
    calls: list[object] = []

    def inspect_specs(dofn: Any) -> tuple[set[Any], set[Any]]:
        calls.append(dofn)
        return set(), set()

    remembering = _Remembering(inspect_specs)
    assert remembering(1) == remembering(1) == (set(), set())  # ints cannot be weakly referred to
    assert len(calls) == 2


def test_making_a_pipeline_installs_it_once(beam_specs: Counting) -> None:
    userstate.get_dofn_specs = beam_specs
    pipeline = make_pipeline([])
    installed = userstate.get_dofn_specs
    assert isinstance(installed, _Remembering)
    remember_dofn_specs()
    assert userstate.get_dofn_specs is installed
    with pipeline:  # a stateful DoFn still runs, keyed, with its state
        keyed = pipeline | beam.Create([("a", 1), ("a", 2), ("b", 3)]) | beam.ParDo(Stateful())
        assert_that(keyed | beam.combiners.Count.Globally(), equal_to([3]))
    # Beam asks 183 times about this pipeline's DoFns; the worker's unpickled copies and the
    # DoFns of `Count` and `assert_that` are other objects, each inspected once
    assert 1 <= beam_specs.calls <= 60
