"""Selection in `trajcurate run` (and in the plain loop): dedup, best-of-k and curriculum on
a synthetic job with copied trials; counts conserve with the selection drops as rejects."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from pipelines.cli import main
from transforms.selection import SelectionSettings

ROOT = Path(__file__).resolve().parent.parent
COMPARED = ("im.jsonl", "lf.json", "lf.stats.json", "rejects.jsonl", "scores.jsonl")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _resolved_trials(job: Path) -> list[Path]:
    found = []
    for result in sorted(job.glob("*/result.json")):
        rewards = (orjson.loads(result.read_bytes()).get("verifier_result") or {}).get("rewards")
        if isinstance((rewards or {}).get("reward"), int | float) and rewards["reward"] >= 1:
            found.append(result.parent)
    return found


def copy_trial(trial: Path, name: str) -> Path:
    """A copy of a trial folder under a new trial name (its result and config say it too)."""
    copy = trial.parent / name
    shutil.copytree(trial, copy)
    for file in ("result.json", "config.json"):
        path = copy / file
        if path.exists():
            path.write_text(path.read_text().replace(trial.name, name))
    return copy


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One synthetic job of 40 trials plus three copies of two resolved trials."""
    jobs = tmp_path_factory.mktemp("selection") / "jobs"
    assert (
        main(
            [
                "synth",
                "--out",
                str(jobs),
                "--jobs",
                "1",
                "--trials",
                "40",
                "--seed",
                "5",
                "--bad-share",
                "0",
            ]
        )
        == 0
    )
    (jobs / "synth-manifest.jsonl").unlink()
    (job,) = [p for p in jobs.iterdir() if p.is_dir()]
    first, second = _resolved_trials(job)[:2]
    for trial, name in ((first, "copy1"), (first, "copy2"), (second, "copy1")):
        copy_trial(trial, f"{trial.name}-{name}")
    return jobs


def run(corpus: Path, out: Path, *extra: str) -> Path:
    argv = ["run", "--no-progress", "--input", str(corpus), "--output", str(out), *extra]
    assert main(argv) == 0
    return out


def _job(out: Path) -> Path:
    (folder,) = [p for p in out.iterdir() if p.is_dir() and (p / "manifest.json").exists()]
    return folder


def _mains(folder: Path) -> list[dict[str, Any]]:
    return [
        r
        for r in _jsonl(folder / "im.jsonl")
        if r["meta_info"]["unique_info"]["_agent_type"] == "main"
    ]


def _main_ids(folder: Path) -> list[str]:
    return [r["meta_info"]["unique_info"]["_instance_id"] for r in _mains(folder)]


def _balanced(folder: Path) -> dict[str, Any]:
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    acc = manifest["accounting"]
    assert acc["balanced"] and acc["in"] == acc["written"] + acc["rejected"] + acc["dead_lettered"]
    return dict(manifest["counts"])


def test_exact_dedup_drops_the_copies_by_default(corpus: Path, tmp_path: Path) -> None:
    folder = _job(run(corpus, tmp_path / "default"))
    counts = _balanced(folder)
    dedup = [r for r in _jsonl(folder / "rejects.jsonl") if r["stage"] == "dedup"]
    assert counts["rejected.dedup"] == len(dedup) == 3
    for reject in dedup:
        original = reject["instance_id"].rsplit("-copy", 1)[0]
        assert reject["reason"] == f"exact duplicate of {original} (same normalised messages)"
    assert not any("-copy" in i for i in _main_ids(folder))
    rows = {r["instance_id"]: r for r in _jsonl(folder / "scores.jsonl")}
    assert {i for i, r in rows.items() if r["reason"] and "duplicate" in r["reason"]} == {
        r["instance_id"] for r in dedup
    }
    kept = _job(run(corpus, tmp_path / "off", "--dedup", "off"))
    counts_off = _balanced(kept)
    assert "rejected.dedup" not in counts_off
    assert counts_off["written"] == counts["written"] + 3


def test_best_of_k_keeps_the_best_scored_per_task(corpus: Path, tmp_path: Path) -> None:
    folder = _job(run(corpus, tmp_path / "best", "--best-of-k", "1", "--dedup", "off"))
    counts = _balanced(folder)
    rows = _jsonl(folder / "scores.jsonl")
    rejects = _jsonl(folder / "rejects.jsonl")
    untrainable = {r["instance_id"] for r in rejects if r["stage"] == "trainable"}
    candidates = defaultdict(list)  # the resolved, trainable trials: what reached selection
    for row in rows:
        if row["resolved"] and row["instance_id"] not in untrainable:
            candidates[row["task"]].append(row)
    expected = sorted(
        min(group, key=lambda r: (-r["score"]["composite_score"], r["instance_id"]))["instance_id"]
        for group in candidates.values()
    )
    assert sorted(_main_ids(folder)) == expected
    dropped = [r for r in rejects if r["stage"] == "best_of_k"]
    assert (
        counts["rejected.best_of_k"] == len(dropped) == sum(len(g) - 1 for g in candidates.values())
    )
    assert len(dropped) >= 3
    winner = {r["task"]: r["instance_id"] for r in rows if r["decision"] == "kept"}
    for reject in dropped:
        row = next(r for r in rows if r["instance_id"] == reject["instance_id"])
        assert reject["reason"] == f"best-of-1 for task {row['task']}: kept {winner[row['task']]}"
        assert row["decision"] == "rejected" and row["reason"] == reject["reason"]


def test_curriculum_orders_the_output_and_writes_the_key(corpus: Path, tmp_path: Path) -> None:
    folder = _job(run(corpus, tmp_path / "curriculum", "--curriculum"))
    _balanced(folder)
    rows = _jsonl(folder / "scores.jsonl")
    tasks: dict[str, list[bool]] = defaultdict(list)
    for row in rows:  # every scored trial of the job, kept or not
        tasks[row["task"]].append(row["resolved"])
    turns = {r["instance_id"]: r["turns"] for r in rows}
    records = _jsonl(folder / "im.jsonl")
    keys = [r["meta_info"]["unique_info"]["_curriculum"] for r in records]
    mains = _mains(folder)
    assert [r["meta_info"]["unique_info"]["_curriculum"]["rank"] for r in mains] == list(
        range(len(mains))
    )
    order = []
    for record in mains:
        info = record["meta_info"]["unique_info"]
        task = info["_instance_metadata"]["task_name"]
        rate = round(sum(tasks[task]) / len(tasks[task]), 6)
        assert info["_curriculum"]["pass_rate"] == rate
        assert info["_curriculum"]["turns"] == turns[info["_instance_id"]]
        order.append((-rate, info["_curriculum"]["turns"], info["_instance_id"]))
    assert order == sorted(order)
    assert len({rate for rate, _, _ in order}) > 1  # the corpus has easier and harder tasks
    assert all(key is not None for key in keys)  # subagent records carry their main's key
    lf = orjson.loads((folder / "lf.json").read_bytes())
    assert [e["_instance_id"] for e in lf] == [
        r["meta_info"]["unique_info"]["_instance_id"] for r in records
    ]
    assert [orjson.loads(e["_curriculum"]) for e in lf] == keys  # LF metadata: JSON text


def test_without_curriculum_the_key_is_null(corpus: Path, tmp_path: Path) -> None:
    folder = _job(run(corpus, tmp_path / "plain"))
    assert all(r["meta_info"]["unique_info"]["_curriculum"] is None for r in _mains(folder))
    ids = _main_ids(folder)
    assert ids == sorted(ids)


def test_counts_conserve_with_every_selection_at_once(corpus: Path, tmp_path: Path) -> None:
    extra = ("--dedup", "near", "--best-of-k", "1", "--curriculum", "--min-score", "0.3")
    folder = _job(run(corpus, tmp_path / "all", *extra))
    counts = _balanced(folder)
    assert counts["rejected.dedup"] >= 3
    assert counts["rejected.best_of_k"] >= 1
    rejects = _jsonl(folder / "rejects.jsonl")
    for stage in ("dedup", "best_of_k", "gate"):
        assert counts[f"rejected.{stage}"] == sum(r["stage"] == stage for r in rejects)
    assert counts["written"] == len(_mains(folder))


def _sequential_loop() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "sequential_loop", ROOT / "benchmarks" / "sequential_loop.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("sequential_loop", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "settings",
    [SelectionSettings("near", 1, True), SelectionSettings("off")],
    ids=["near-best1-curriculum", "off"],
)
def test_the_plain_loop_selects_the_same_way(
    corpus: Path, tmp_path: Path, settings: SelectionSettings
) -> None:
    extra = ["--dedup", settings.dedup]
    if settings.best_of_k is not None:
        extra += ["--best-of-k", str(settings.best_of_k)]
    if settings.curriculum:
        extra.append("--curriculum")
    pipeline = _job(run(corpus, tmp_path / "pipeline", *extra))
    loop = tmp_path / "loop"
    assert _sequential_loop().main(corpus, loop, "resolved", settings) == 0
    for name in COMPARED:
        assert (loop / pipeline.name / name).read_bytes() == (pipeline / name).read_bytes(), name
