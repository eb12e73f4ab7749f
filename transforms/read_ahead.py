"""Read-ahead: a helper process opens read units while the run curates the ones before.

On the in-process runner with one worker (the default local run), opening trials takes about
a third of the run's CPU time, and everything else waits for it. With read-ahead, a helper
process, forked when the run starts (before Beam is imported, while no other thread is alive
to be copied holding a lock), runs the same `open_unit` on the units the run sends it and
sends back what each yields. The run unpickles that (about a third of what reading costs)
and curates it while the helper opens the next units: reading and curation share two cores.
Given the run's chain settings (`trajcurate run` gives them), the helper also takes each
bundle through the chain's first stages (`chain.stages_where_read`: read, validate, redact)
and sends back a `chain.Begun` (the read counts taken before, those stages' counters, and
the bundle marked to go on from the next stage, or its drop): redaction is enough of the
run's CPU time to even the two processes out.

The run first tells the helper its plan (`plan`: the local inputs, the limits and the chain
settings), as soon as its options are parsed: while the run imports Beam and builds the
pipeline (about half a second), the helper detects the units as the pipeline will and opens
them in that order, holding their pickled results (at most `PLANNED_BYTES`) until they are
asked for. A unit asked for is handed over from there only if it is the plan's next one
with the same limits and settings; the first one asked for out of plan (another order,
another input) ends the plan, and from then on each unit is opened when asked for, as
without a plan. The plan changes when a unit is opened, never what opening it gives.

Nothing else changes: the helper runs the same readers with the same limits, confinement
and budgets, and the run takes the results back in the order it sent the units, so every
bundle, reject and dead letter is the one reading in the run's own process gives. Local
units go to the helper; a trial on an object store is read where it is curated, and so is an
IM file: parsing IM is about as fast as unpickling the records it gives, so sending them back
saves nothing (measured: a run over 7,850 IM records took longer with the helper). What a
unit yields comes back one item at a time, as its reader yields it, so a unit of many
bundles (an OpenHands `output.jsonl`) is never held whole once asked for: the helper runs
at most `PIPE_BYTES` of results ahead (the pipe's capacity) plus the bundle it is reading,
besides what it holds of the plan, so memory stays flat (a unit whose results would go over
the plan's room ends the plan, and is opened when asked for).

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
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from transforms.readers.confined import ReadLimits
from transforms.readers.discover import ReadUnit

if TYPE_CHECKING:
    from transforms.chain import ChainSettings, Stage

__all__ = [
    "READ_AHEAD_MODES",
    "ReadAhead",
    "claim",
    "helper_for",
    "opened_line",
    "plan",
    "release",
    "start",
    "stop",
    "usable_cores",
]

READ_AHEAD_MODES = ("auto", "off")
READ_IN_PLACE = frozenset({"im"})  # formats whose reading the helper would not save
PIPE_BYTES = 1 << 20  # results the helper may send before the run takes them (Linux)
UNITS_AHEAD = 8  # units sent to the helper before the oldest is taken back
PLANNED_BYTES = 16 * 2**20  # results of planned units the helper may hold before asked for
_MORE, _OK, _FAILED = "more", "ok", "failed"  # a unit's output, its last, the helper's end
_PLAN, _OPEN = "plan", "open"  # what the run asks of the helper
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

    def plan(
        self,
        inputs: Sequence[str],
        forced_format: str | None,
        limits: ReadLimits,
        chain: ChainSettings | None = None,
    ) -> None:
        """Tell the helper which units the run will send (the units of the local `inputs`,
        detected as the run detects them), so that it opens them while the run is still
        starting: see the module doc. Asking for a unit out of the plan only ends it."""
        from transforms.readers.remote import is_remote

        local = [path for path in inputs if not is_remote(path)]
        self._request(_PLAN, (local, forced_format, limits, chain), "its plan")

    def send(self, unit: ReadUnit, limits: ReadLimits, chain: ChainSettings | None = None) -> None:
        self.pending.append((unit, limits))
        self._request(_OPEN, (unit, limits, chain), "a unit")

    def _request(self, kind: str, what: tuple[Any, ...], name: str) -> None:
        if self.failed is None:
            try:
                self._requests.send((kind, what))
            except (OSError, ValueError, pickle.PicklingError) as exc:
                self._fail(f"could not be sent {name} ({exc})")

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

    def push(
        self, unit: ReadUnit, limits: ReadLimits, chain: ChainSettings | None = None
    ) -> Iterator[Iterable[Any]]:
        """What opening each unit yields, in the order the units came, as soon as it is
        ready: `unit` goes to the helper if it `takes` it (its outputs come out
        `UNITS_AHEAD` units later, or from `drain`); otherwise the units still pending come
        out first, then `unit` opened here, streamed. With `chain`, the helper also runs
        each bundle through the chain's first stages (`chain.stages_where_read`): what it
        yields is then `chain.Begun` (raw bundles and drops where this process opened)."""
        if not self.takes(unit):
            yield from self.drain()
            yield _open_unit(unit, limits)
            return
        self.send(unit, limits, chain)
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


_FIRST_STAGES: list[tuple[ChainSettings, list[Stage]]] = []  # the helper's, for its chain


def _begun(items: Iterator[Any], chain: ChainSettings) -> Iterator[Any]:
    """`items` through the chain's first stages (`chain.begin`)."""
    from transforms.chain import begin, stages_where_read

    if not _FIRST_STAGES or _FIRST_STAGES[0][0] != chain:
        _FIRST_STAGES[:] = [(chain, stages_where_read(chain))]
    stages = _FIRST_STAGES[0][1]
    return (begin(item, stages) for item in items)


def _payloads(
    unit: ReadUnit, limits: ReadLimits, chain: ChainSettings | None
) -> Iterator[tuple[bool, bytes]]:
    """The pickled messages of what opening `unit` yields (through the chain's first stages
    with `chain`), each with whether it is the last because a result could not be pickled
    (that message then says so, and the run reads the rest itself)."""
    items = _open_unit(unit, limits)
    for message in _messages(items if chain is None else _begun(items, chain)):
        try:
            yield False, pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # open_unit routes what readers raise: this is pickling
            yield True, pickle.dumps((_FAILED, f"could not send a result back ({exc!r})"))
            return


class _Planned:
    """The helper's side of `ReadAhead.plan`: the planned units, opened in order while no
    request waits, their pickled results held (up to `PLANNED_BYTES`) until asked for."""

    def __init__(self) -> None:
        self.units: Iterator[ReadUnit] | None = None
        self.key: tuple[ReadLimits, ChainSettings | None] | None = None
        self.opened: deque[tuple[ReadUnit, list[bytes]]] = deque()
        self.held = 0

    def start(
        self,
        inputs: list[str],
        forced_format: str | None,
        limits: ReadLimits,
        chain: ChainSettings | None,
    ) -> None:
        from transforms.intake import detect_units

        self.stop()
        self.key = (limits, chain)
        found = (unit for path in inputs for unit in detect_units(path, forced_format, limits))
        self.units = (u for u in found if isinstance(u, ReadUnit) and ReadAhead.takes(u))

    def open_next(self) -> bool:
        """Open the next planned unit if there is one and room to hold what it yields;
        whether one was opened. A unit whose results go over the room, or cannot be pickled,
        ends the plan (the run asks for it, and it is opened then)."""
        if self.units is None or self.key is None or self.held >= PLANNED_BYTES:
            return False
        payloads: list[bytes] = []
        held = self.held
        try:
            unit = next(self.units, None)
            if unit is None:
                self.units = None
                return False
            for failed, payload in _payloads(unit, *self.key):
                payloads.append(payload)
                held += len(payload)
                if failed or held > PLANNED_BYTES:
                    self.units = None
                    return False
        except Exception:  # detection failed: the run meets the same failure itself
            self.units = None
            return False
        self.held = held
        self.opened.append((unit, payloads))
        return True

    def take(
        self, unit: ReadUnit, limits: ReadLimits, chain: ChainSettings | None
    ) -> list[bytes] | None:
        """What opening `unit` gave, if it is the next planned unit and was opened; None if
        it is to be opened now. A unit asked for out of plan ends the plan."""
        if self.key is None:
            return None
        if (limits, chain) != self.key:
            self.stop()
            return None
        if self.opened:
            planned, payloads = self.opened.popleft()
            self.held -= sum(map(len, payloads))
            if planned == unit:
                return payloads
            self.stop()
            return None
        try:  # asked for before it was opened: the plan goes on after it
            if self.units is not None and next(self.units, None) != unit:
                self.stop()
        except Exception:
            self.stop()
        return None

    def stop(self) -> None:
        self.units, self.key, self.held = None, None, 0
        self.opened.clear()


def _serve(requests: Connection, results: Connection, run_ends: tuple[Connection, ...]) -> None:
    """The helper: open each unit received and send back what it yielded, until the run
    closes its end (or goes away); while no request waits, open the planned units."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    for end in run_ends:  # the fork copied the run's ends too: the run's close is the end
        end.close()
    planned = _Planned()
    while True:
        try:
            if not requests.poll() and planned.open_next():
                continue
            kind, what = requests.recv()
        except (EOFError, OSError):
            return
        if kind == _PLAN:
            planned.start(*what)
            continue
        held = planned.take(*what)
        for failed, payload in _payloads(*what) if held is None else ((False, p) for p in held):
            if not _send(results, payload) or failed:
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


def plan(
    inputs: Sequence[str],
    forced_format: str | None,
    limits: ReadLimits,
    chain: ChainSettings | None = None,
) -> None:
    """`ReadAhead.plan` for this process's helper, if it has one that works."""
    if _HELPER is not None and _HELPER.failed is None:
        _HELPER.plan(inputs, forced_format, limits, chain)


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
