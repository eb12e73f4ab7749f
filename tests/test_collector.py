"""The cycle collector around a run: frozen set-up during it, everything handed back after."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.collector import set_up_frozen


@pytest.mark.parametrize("collect_cycles", [True, False])
def test_the_set_up_is_frozen_during_the_block_and_handed_back_after(collect_cycles: bool) -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with set_up_frozen(collect_cycles=collect_cycles):
        assert gc.get_freeze_count() > 1000  # the imports' objects
        assert gc.isenabled() is collect_cycles
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_failing_block_hands_the_collector_back_too() -> None:
    with pytest.raises(RuntimeError), set_up_frozen(collect_cycles=False):
        raise RuntimeError("boom")
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_run_leaves_the_collector_as_it_found_it(composed: Path, tmp_path: Path) -> None:
    argv = ["run", "--no-progress", "--input", str(composed), "--output", str(tmp_path)]
    assert main(argv) == 0
    assert gc.isenabled() and gc.get_freeze_count() == 0
