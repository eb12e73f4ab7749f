"""Pure scorers: TQS V2, the IM record schema, LLM-judge prompts. Nothing here imports Beam.

Some modules may be compiled in place (mypyc, see setup.py). Python imports a compiled
module in preference to its source, so a compiled module older than its source would
silently run old code: importing `scorers` refuses that with a clear error instead.
"""

from __future__ import annotations

import importlib.machinery
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
# Where compiled modules can be: this package and its subpackages, one level down
# (`transforms/__init__.py` runs the same check over its own folders).
_COMPILED_DIRS = (_HERE, os.path.join(_HERE, "tqs_v2"))


class StaleCompiledModule(ImportError):
    """A compiled module is older than the source it was built from."""


def _stale_sources(directory: str) -> list[str]:
    """Sources (.py or .c) in `directory` newer than the module compiled from them."""
    stale = []
    names = set(os.listdir(directory))
    for name in names:
        suffix = next((s for s in importlib.machinery.EXTENSION_SUFFIXES if name.endswith(s)), "")
        if not suffix:
            continue
        built = os.path.getmtime(os.path.join(directory, name))
        for source in (name[: -len(suffix)] + ".py", name[: -len(suffix)] + ".c"):
            path = os.path.join(directory, source)
            if source in names and os.path.getmtime(path) > built:
                stale.append(os.path.relpath(path, os.path.dirname(_HERE)))
    return stale


def refuse_stale_compiled_modules(directories: tuple[str, ...] = _COMPILED_DIRS) -> None:
    """Raise `StaleCompiledModule` if a compiled module in `directories` is older than its
    source (this package's own by default)."""
    stale = [path for directory in directories for path in _stale_sources(directory)]
    if stale:
        raise StaleCompiledModule(
            f"compiled modules are older than their source: {', '.join(sorted(stale))}; "
            "rebuild them with `make venv` (pip install -e .) or delete the .so files"
        )


refuse_stale_compiled_modules()
