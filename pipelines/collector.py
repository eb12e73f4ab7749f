"""Python's cycle collector around a run: what the imports and set-up made is frozen.

A full collection walks every tracked object, and after the imports (Beam, pydantic, the
scorer) that is a few hundred thousand objects that live as long as the process. Frozen
(`gc.freeze`), they are left out of every collection while the run goes on; afterwards
they are handed back (`gc.unfreeze`), so a process that runs many commands (the tests)
still collects what each left behind.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def set_up_frozen(*, collect_cycles: bool = True) -> Iterator[None]:
    """Freeze what exists now for the block; with `collect_cycles` False, also run the
    block without the cycle collector (for code that makes no reference cycles)."""
    enabled = gc.isenabled()
    gc.freeze()
    if not collect_cycles:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        gc.unfreeze()
