"""Progress on stderr for long runs: count, rate and, when the total is known, a bar and ETA.

On a terminal the line is redrawn in place (`\\r`); anywhere else (a log file, CI) it is a
plain line every N records or every few seconds. Short runs print nothing. The text comes
from tqdm's meter formatter (`format_meter`), so it reads like every other progress bar.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Report `done` counts to `stream` once `every` more records or `interval` s have passed.

    Without `total` the line is the count, elapsed time and rate; with it, also a bar, the
    percentage and the time left. `redraw=False` prints plain lines on a terminal too (for
    processes that share one). `clock` is injectable so tests need not sleep.
    """

    def __init__(
        self,
        stream: TextIO,
        label: str,
        every: int = 10_000,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        total: int | None = None,
        unit: str = "records",
        redraw: bool = True,
    ) -> None:
        self._stream = stream
        self._label = label
        self._every = every
        self._interval = interval
        self._clock = clock
        self._total = total
        self._unit = unit
        self._tty = redraw and _is_tty(stream)
        self._start = clock()
        self._last_time = self._start
        self._last_done = 0
        self._drawn = False

    def update(self, done: int) -> None:
        """Called after each record with the number of records handled so far."""
        now = self._clock()
        if done - self._last_done < self._every and now - self._last_time < self._interval:
            return
        self._show(done, now - self._start)
        self._last_time = now
        self._last_done = done

    def close(self) -> None:
        """End a line redrawn in place on a terminal (nothing to do elsewhere)."""
        if self._tty and self._drawn:
            print(file=self._stream, flush=True)
            self._drawn = False

    def _show(self, done: int, elapsed: float) -> None:
        if self._total is None:
            rate = done / elapsed if elapsed > 0 else 0.0
            text = f"{self._label}: {done} {self._unit}, {elapsed:.1f} s, {rate:.0f}/s"
        else:  # tqdm is imported only here: it costs 20 ms, a run with no total never needs it
            from tqdm import tqdm

            meter = tqdm.format_meter(
                done, self._total, elapsed, ncols=100 if self._tty else 0, unit=f" {self._unit}"
            )
            text = f"{self._label}: {meter}"
        if self._tty:
            print("\r" + text, end="", file=self._stream, flush=True)
            self._drawn = True
        else:
            print(text, file=self._stream, flush=True)


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
