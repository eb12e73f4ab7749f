"""Progress lines on stderr for long runs: every N records or every few seconds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Report `done` counts to `stream` once `every` more records or `interval` s have passed.

    Short runs print nothing. `clock` is injectable so tests need not sleep.
    """

    def __init__(
        self,
        stream: TextIO,
        label: str,
        every: int = 10_000,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._label = label
        self._every = every
        self._interval = interval
        self._clock = clock
        self._start = clock()
        self._last_time = self._start
        self._last_done = 0

    def update(self, done: int) -> None:
        """Called after each record with the number of records handled so far."""
        now = self._clock()
        if done - self._last_done < self._every and now - self._last_time < self._interval:
            return
        elapsed = now - self._start
        rate = done / elapsed if elapsed > 0 else 0.0
        print(
            f"{self._label}: {done} records, {elapsed:.1f} s, {rate:.0f}/s",
            file=self._stream,
            flush=True,
        )
        self._last_time = now
        self._last_done = done
