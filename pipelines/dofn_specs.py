"""Beam's DoFn state and timer specs, worked out once per DoFn object.

Beam 2.77 asks `userstate.get_dofn_specs(dofn)` whether a DoFn declares state or timers
about seven times per ParDo while it builds, translates and runs a pipeline (220 calls for
this pipeline's 29 ParDos and one trial), and each call runs `inspect.signature` on every
method of the DoFn (~30): about 0.15 s of a run's fixed cost. The answer depends only on
the DoFn object's methods and their default arguments, which nothing changes once a ParDo
holds it, so `remember_dofn_specs` makes the function keep each object's answer until the
object goes. An object that cannot be weakly referenced is inspected on every call, as
before. Each caller gets sets of its own.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from apache_beam.transforms import userstate

Specs = tuple[set[Any], set[Any]]

__all__ = ["remember_dofn_specs"]


def remember_dofn_specs() -> None:
    """Replace `userstate.get_dofn_specs` (which Beam calls through the module) with a
    remembering one; calling this again changes nothing."""
    if not isinstance(userstate.get_dofn_specs, _Remembering):
        userstate.get_dofn_specs = _Remembering(userstate.get_dofn_specs)


class _Remembering:
    """`get_dofn_specs` keeping each DoFn object's answer, by identity (a DoFn that
    defines equality is still one object), until the object goes."""

    def __init__(self, inspect_specs: Callable[[Any], Specs]) -> None:
        self._inspect = inspect_specs
        self._known: dict[int, tuple[weakref.ref[Any], Specs]] = {}

    def __call__(self, dofn: Any) -> Specs:
        key = id(dofn)
        known = self._known.get(key)
        if known is not None and known[0]() is dofn:
            states, timers = known[1]
            return set(states), set(timers)
        try:
            ref = weakref.ref(dofn, lambda _gone: self._known.pop(key, None))
        except TypeError:  # an object without weak references: inspected every time
            return self._inspect(dofn)
        specs = self._inspect(dofn)
        self._known[key] = (ref, specs)
        return set(specs[0]), set(specs[1])
