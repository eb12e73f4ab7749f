"""Objects that guard their state with a `_lock` and still pickle (Beam ships DoFn state)."""

from __future__ import annotations

import threading
from typing import Any


class PicklesWithoutLock:
    """Drops `_lock` when pickled and makes a fresh one when unpickled."""

    _lock: threading.Lock

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
