"""Exclusive CPU time per stage name, for `stage_shares.py` (a module of its own: the
pipeline pickles its DoFns, and the timed functions in them must reach these totals by
module name, not carry a copy).

Timers nest per thread: a stage's time excludes the stages it calls. They read the calling
thread's CPU clock (`time.thread_time`), not the wall clock: the shares are of the run's CPU
time, and a stage is not charged for the time it waits for the GIL or for the machine (on a
busy 2-core machine, wall-clock timers put a second more on reading alone at 2,000 trials).
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

TOTALS: defaultdict[str, float] = defaultdict(float)
_LOCAL = threading.local()
_LOCK = threading.Lock()


def timed(name: str, run: Callable[[], Any]) -> Any:
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    stack.append(0.0)  # time of the stages this one calls
    start = time.thread_time()
    try:
        return run()
    finally:
        elapsed = time.thread_time() - start
        inner = stack.pop()
        if stack:
            stack[-1] += elapsed
        with _LOCK:
            TOTALS[name] += elapsed - inner


def wrap(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` timed; a generator function is timed step by step (not its consumer)."""
    if inspect.isgeneratorfunction(function):

        @functools.wraps(function)
        def generator(*args: Any, **kwargs: Any) -> Iterator[Any]:
            steps = function(*args, **kwargs)
            while True:
                try:
                    item = timed(name, lambda: next(steps))
                except StopIteration:
                    return
                yield item

        return generator

    @functools.wraps(function)
    def timed_call(*args: Any, **kwargs: Any) -> Any:
        return timed(name, lambda: function(*args, **kwargs))

    return timed_call
