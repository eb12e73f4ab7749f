"""Compiled modules (setup.py) never run older than their source, and the build's list of
them is what the Makefile rebuilds on."""

from __future__ import annotations

import importlib.machinery
import os
import re
from pathlib import Path

import pytest

from scorers import StaleCompiledModule, refuse_stale_compiled_modules

REPO = Path(__file__).resolve().parent.parent
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def test_a_compiled_module_older_than_its_source_is_refused(tmp_path: Path) -> None:
    (tmp_path / f"mod{SUFFIX}").write_bytes(b"")
    source = tmp_path / "mod.py"
    source.write_text("x = 1\n")
    os.utime(tmp_path / f"mod{SUFFIX}", (1_000_000, 1_000_000))
    with pytest.raises(StaleCompiledModule, match=r"mod\.py.*make venv"):
        refuse_stale_compiled_modules((str(tmp_path),))
    os.utime(source, (900_000, 900_000))
    refuse_stale_compiled_modules((str(tmp_path),))  # built after its source: fine


def test_every_compiled_source_is_one_the_makefile_rebuilds_on() -> None:
    setup = (REPO / "setup.py").read_text()
    compiled = re.findall(r'"((?:scorers|transforms)/[\w/]+\.py)"', setup)
    makefile = (REPO / "Makefile").read_text()
    block = makefile[makefile.index("NATIVE_SOURCES :=") :].split("\n\n")[0]
    assert "transforms/readers/im_builder.py" in compiled
    for path in compiled:
        assert path in block or f"{path.rsplit('/', 1)[0]}/*.py" in block, path
