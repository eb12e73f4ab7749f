"""Read-ahead: a helper process opens read units while the run curates the ones before.

On the in-process runner with one worker (the default local run), opening trials takes about
a third of the run's CPU time, and everything else waits for it. With read-ahead, a helper
process, forked when the run starts (before Beam is imported, while no other thread is alive
to be copied holding a lock), runs the same `open_unit` on the units the run sends it and
sends back what each yields. The run unpickles that (about a third of what reading costs)
and curates it while the helper opens the next units: reading and curation share two cores.

Nothing else changes: the helper runs the same readers with the same limits, confinement
and budgets, and the run takes the results back in the order it sent the units, so every
bundle, reject and dead letter is the one reading in the run's own process gives. Local
units go to the helper; a trial on an object store is read where it is curated, and so is an
IM file: parsing IM is about as fast as unpickling the records it gives, so sending them back
saves nothing (measured: a run over 7,850 IM records took longer with the helper). What a
unit yields comes back one item at a time, as its reader yields it, so a unit of many
bundles (an OpenHands `output.jsonl`) is never held whole: the helper runs at most
`PIPE_BYTES` of results ahead (the pipe's capacity) plus the bundle it is reading, so memory
stays flat.

When the helper cannot go on (it was killed, a result could not be pickled), the units it
still held are opened in the run's process (one it had begun to send back, past what came
back), and so is the rest: nothing is lost or repeated, and the reason is printed once on
stderr. `--read-ahead off` never starts it; nor does a process pinned to one CPU
(`taskset`), where it could only slow the run.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from multiprocessing.connection import Connection
from typing import Any

from transforms.readers.confined import ReadLimits
from transforms.readers.discover import ReadUnit

__all__ = [
    "READ_AHEAD_MODES",
    "ReadAhead",
    "claim",
    "helper_for",
    "opened_line",
    "release",
    "start",
    "stop",
    "usable_cores",
]

READ_AHEAD_MODES = ("auto", "off")
READ_IN_PLACE = frozenset({"im"})  # formats whose reading the helper would not save
PIPE_BYTES = 1 << 20  # results the helper may send before the run takes them (Linux)
UNITS_AHEAD = 8  # units sent to the helper before the oldest is taken back
_MORE, _OK, _FAILED = "more", "ok", "failed"  # a unit's output, its last, the helper's end
_HELPER: ReadAhead | None = None


def usable_cores() -> int:
    """The CPUs this process may run on (`taskset` and cgroup cpusets narrow them)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


class ReadAhead:
    """A forked helper that opens units in the order they are sent (see the module doc)."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("fork")
        requests_out, self._requests = context.Pipe(duplex=False)
        self._results, results_in = context.Pipe(duplex=False)
        _widen(results_in)
        self._process = context.Process(
            target=_serve,
            args=(requests_out, results_in, (self._requests, self._results)),
            name="trajcurate-read-ahead",
            daemon=True,  # it never outlives the run
        )
        self._process.start()
        requests_out.close()
        results_in.close()
        self.pending: deque[tuple[ReadUnit, ReadLimits]] = deque()
        self.failed: str | None = None
        self.opened_there = 0  # units whose results came back from the helper
        self.taking = False  # in the middle of a unit's results
        self._owner: object | None = None

    @staticmethod
    def takes(unit: ReadUnit) -> bool:
        """Whether `unit` goes to the helper: a local unit that is not an IM file (one on an
        object store is read where it is curated, and so is IM, whose parse costs about what
        sending its records back would)."""
        return unit.url is None and unit.format not in READ_IN_PLACE

    def send(self, unit: ReadUnit, limits: ReadLimits) -> None:
        self.pending.append((unit, limits))
        if self.failed is None:
            try:
                self._requests.send((unit, limits))
            except (OSError, ValueError, pickle.PicklingError) as exc:
                self._fail(f"could not be sent a unit ({exc})")

    def take(self) -> Iterator[Any]:
        """What opening the oldest unit sent yields, as it comes back; if the helper fails,
        the unit is opened here and what already came back is skipped. Consume it whole
        before the next `take` (`release` stops a helper left in the middle of one)."""
        unit, limits = self.pending.popleft()
        self.taking = True
        return self._receive(unit, limits)

    def _receive(self, unit: ReadUnit, limits: ReadLimits) -> Iterator[Any]:
        received = 0
        while self.failed is None:
            try:
                status, items = self._results.recv()
            except (EOFError, OSError) as exc:
                self._fail(f"stopped ({_exit_text(self._process.exitcode) or exc})")
                break
            if status == _FAILED:
                self._fail(str(items))
                break
            received += len(items)
            yield from items
            if status == _OK:
                self.opened_there += 1
                break
        if self.failed is not None:
            yield from islice(_open_unit(unit, limits), received, None)
        self.taking = False

    def push(self, unit: ReadUnit, limits: ReadLimits) -> Iterator[Iterable[Any]]:
        """What opening each unit yields, in the order the units came, as soon as it is
        ready: `unit` goes to the helper if it `takes` it (its outputs come out
        `UNITS_AHEAD` units later, or from `drain`); otherwise the units still pending come
        out first, then `unit` opened here, streamed."""
        if not self.takes(unit):
            yield from self.drain()
            yield _open_unit(unit, limits)
            return
        self.send(unit, limits)
        while len(self.pending) > UNITS_AHEAD:
            yield self.take()

    def drain(self) -> Iterator[Iterator[Any]]:
        while self.pending:
            yield self.take()

    def _fail(self, why: str) -> None:
        self.failed = f"read-ahead off: its helper process {why}; the rest is read in the run"
        print(f"trajcurate: {self.failed}", file=sys.stderr)
        self.close()

    def close(self) -> None:
        for end in (self._requests, self._results):
            with contextlib.suppress(OSError):
                end.close()
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()


def _widen(connection: Connection) -> None:
    """Let the helper run up to `PIPE_BYTES` ahead (Linux; elsewhere the default pipe)."""
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass


def _exit_text(code: int | None) -> str:
    if code is None:
        return ""
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def _open_unit(unit: ReadUnit, limits: ReadLimits) -> Iterator[Any]:
    from transforms.intake import open_unit

    return open_unit(unit, limits)


def _messages(items: Iterator[Any]) -> Iterator[tuple[str, list[Any]]]:
    """A unit's outputs one message each as they come, the last marked the unit's end."""
    previous: list[Any] = []
    for item in items:
        if previous:
            yield _MORE, previous
        previous = [item]
    yield _OK, previous


def _serve(requests: Connection, results: Connection, run_ends: tuple[Connection, ...]) -> None:
    """The helper: open each unit received and send back what it yielded, until the run
    closes its end (or goes away)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    for end in run_ends:  # the fork copied the run's ends too: the run's close is the end
        end.close()
    while True:
        try:
            unit, limits = requests.recv()
        except (EOFError, OSError):
            return
        for message in _messages(_open_unit(unit, limits)):
            try:
                payload = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # open_unit routes what readers raise: this is pickling
                _send(results, pickle.dumps((_FAILED, f"could not send a result back ({exc!r})")))
                return  # the run reads the rest itself
            if not _send(results, payload):
                return


def _send(results: Connection, payload: bytes) -> bool:
    """Send `payload`; False when the run has closed its end."""
    try:
        results.send_bytes(payload)
    except OSError:
        return False
    return True


def start(mode: str = "auto") -> ReadAhead | None:
    """The helper of this run, started if `mode` is auto, two CPUs are usable and no other
    thread is alive (a fork copies only the calling thread); None otherwise."""
    global _HELPER
    alone = threading.active_count() == 1
    if _HELPER is None and mode == "auto" and usable_cores() > 1 and alone:
        _HELPER = ReadAhead()
    return _HELPER


def claim(owner: object) -> ReadAhead | None:
    """The helper for `owner` (a bundle of the open stage) to use, if this process has one
    that works and no other owner holds it; `release` gives it back."""
    helper = _HELPER
    if helper is None or helper.failed is not None or helper._owner is not None:
        return None
    helper._owner = owner
    return helper


def release(owner: object) -> None:
    """Give the helper back; if `owner` stopped before taking back every unit it sent (it
    raised), the helper's results no longer match what a next owner would send: it stops,
    and later units are opened where they are curated."""
    helper = _HELPER
    if helper is None or helper._owner is not owner:
        return
    helper._owner = None
    if (helper.pending or helper.taking) and helper.failed is None:
        helper.failed = "left with units its owner did not take back"
        helper.close()


def stop() -> None:
    global _HELPER
    helper, _HELPER = _HELPER, None
    if helper is not None:
        helper.close()


@contextlib.contextmanager
def helper_for(mode: str) -> Iterator[None]:
    """A command's helper: started (see `start`) for the command's run, stopped after it."""
    start(mode)
    try:
        yield
    finally:
        stop()


def opened_line() -> str:
    """The summary's line of what this run's helper opened ("" if it opened nothing)."""
    opened = 0 if _HELPER is None else _HELPER.opened_there
    if not opened:
        return ""
    return f"read-ahead: {opened} unit{'' if opened == 1 else 's'} opened in a helper process"
