"""A per-worker cache of generated checklists with in-flight de-duplication.

Attempts of the same task (same question, system prompt and tools) share one checklist
(llm-judges.md): it costs a call to make, and judging attempts against the same checks is
what makes their scores comparable. Records of one task often arrive together, on several
threads of one worker, so the first caller of a key runs the factory and the others wait
for its result instead of paying for the same generation again. A failed factory call is
not cached: its callers see the error, and the next caller tries again.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

import orjson

__all__ = ["ChecklistCache", "checklist_key"]

T = TypeVar("T")


def checklist_key(question: str, system_prompt: str, tool_summary: str) -> str:
    """The cache key of a task: a SHA-256 over (question, system prompt, tool summary).

    Pass the strings given to `build_generate_request`; JSON-encoding the triple keeps
    ("ab", "c") and ("a", "bc") apart.
    """
    payload = orjson.dumps([question, system_prompt, tool_summary])
    return hashlib.sha256(payload).hexdigest()


class ChecklistCache(Generic[T]):
    """Values by key, made at most once at a time per key; the least recently used go first.

    `max_entries` bounds memory on a long run over many tasks. The cache pickles as an
    empty cache (locks do not pickle), so a DoFn may create it in `__init__` or `setup`.
    Counters: `hits` (value cached), `misses` (factory called), `waits` (joined a call
    already in flight).
    """

    def __init__(self, max_entries: int = 4_096) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._values: OrderedDict[str, T] = OrderedDict()
        self._in_flight: dict[str, Future[T]] = {}
        self.hits = self.misses = self.waits = 0

    def get_or_create(self, key: str, factory: Callable[[], T]) -> T:
        """The value for `key`, calling `factory()` only if no value is cached or in flight."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                self.hits += 1
                return self._values[key]
            future = self._in_flight.get(key)
            owner = future is None
            if future is None:
                future = self._in_flight[key] = Future()
                self.misses += 1
            else:
                self.waits += 1
        if not owner:
            return future.result()
        try:
            value = factory()
        except BaseException as exc:
            with self._lock:
                del self._in_flight[key]
            future.set_exception(exc)
            raise
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.max_entries:
                self._values.popitem(last=False)
            del self._in_flight[key]
        future.set_result(value)
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._values

    def __getstate__(self) -> dict[str, Any]:
        return {"max_entries": self.max_entries}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["max_entries"])  # type: ignore[misc]
