"""Acceptance fuzz test: no run lost to one bad trial, nothing leaks in or out.

A corpus of synth Harbor jobs (`fuzz_corpus.py`) with over 1000 trials damaged in 60-odd
ways (truncation, wrong types, deep nesting, huge strings, bad encodings, symlinks and
references out of the trial, FIFOs, /dev/zero, odd job names) goes through `trajcurate run`
and `trajcurate convert`, each in its own process with a timeout (a FIFO must not hang the
test) and a memory cap (/dev/zero must not take the machine). Then: every job has a
balanced manifest, nothing was written outside the output folder, and no byte of a file
outside the trials (marker strings, /etc/passwd lines) reached an output.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from cli_sandbox import WatchedRun, folder_state, listing, tail, watched_run
from fuzz_corpus import JOB_NAME_KINDS, KINDS, FuzzCorpus, build_fuzz_corpus

REPO_ROOT = Path(__file__).resolve().parents[1]
SEED = 20260611
TRIALS = 1250
RUN_TIMEOUT = 600
TRACEBACK = "Traceback (most recent call last)"

REQUIRED_KINDS = {
    "truncate_result", "truncate_trajectory", "truncate_native", "byte_flip_result",
    "byte_flip_trajectory", "wrong_type_message", "wrong_type_content", "wrong_type_steps",
    "wrong_type_rewards", "wrong_type_tool_calls", "wrong_type_arguments", "deep_result_250",
    "deep_result_5000", "deep_trajectory_250", "deep_trajectory_5000", "huge_string",
    "invalid_utf8_result", "invalid_utf8_trajectory", "utf16_result", "utf16_trajectory",
    "utf8_bom_result", "utf8_bom_trajectory", "empty_result", "empty_trajectory",
    "missing_result", "missing_agent", "missing_trajectory", "result_is_dir",
    "reward_txt_is_dir", "symlink_reward_passwd", "symlink_result_outside",
    "symlink_agent_outside", "symlink_trajectory_outside", "symlink_result_dev_zero",
    "symlink_trajectory_dev_zero", "fifo_reward_txt", "fifo_trajectory", "subagent_ref_escape",
    "subagent_ref_etc_passwd", "subagent_ref_abs_outside", "continuation_ref_escape",
    "nan_infinity_result", "nan_infinity_trajectory", "duplicate_keys_result",
    "duplicate_keys_trajectory", "empty_trial", "config_only_trial",
}  # fmt: skip


CliRun = WatchedRun


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> FuzzCorpus:
    return build_fuzz_corpus(tmp_path_factory.mktemp("fuzz"), SEED, TRIALS)


@pytest.fixture(scope="module")
def run_output(corpus: FuzzCorpus) -> Path:
    return corpus.root / "out" / "curated"


@pytest.fixture(scope="module")
def pipeline_run(corpus: FuzzCorpus, run_output: Path) -> CliRun:
    run_output.parent.mkdir()
    args = ("run", "--no-progress", "--input", str(corpus.jobs_dir), "--output", str(run_output))
    return _watched_cli(corpus, (*args, "--instance-status", "all"), allowed=run_output)


@pytest.fixture(scope="module")
def convert_output(corpus: FuzzCorpus) -> Path:
    return corpus.root / "conv" / "conv.jsonl"


@pytest.fixture(scope="module")
def convert_run(corpus: FuzzCorpus, convert_output: Path) -> CliRun:
    convert_output.parent.mkdir()
    args = ("convert", str(corpus.jobs_dir), "-o", str(convert_output))
    return _watched_cli(corpus, args, allowed=convert_output.parent)


# ---------------------------------------------------------------------------- the corpus


def test_corpus_has_enough_kinds_and_damaged_trials(corpus: FuzzCorpus) -> None:
    assert len(corpus.kind_counts) >= 25
    assert corpus.corrupted_trials >= 1000
    assert set(corpus.kind_counts) >= REQUIRED_KINDS, REQUIRED_KINDS - set(corpus.kind_counts)
    assert set(corpus.kind_counts) == set(KINDS)
    assert min(corpus.kind_counts.values()) >= 3  # each kind used several times
    clean = sum(1 for kind in corpus.mutations.values() if kind == "clean")
    assert clean >= 100
    assert clean + corpus.corrupted_trials == len(corpus.mutations) == corpus.total_trials


def test_corpus_counts_match_the_folders(corpus: FuzzCorpus) -> None:
    on_disk = {
        job.name: sum(1 for p in job.iterdir() if p.is_dir() and not p.is_symlink())
        for job in corpus.jobs_dir.iterdir()
    }
    assert sum(on_disk.values()) == corpus.total_trials >= TRIALS
    assert {folder.name for folder in corpus.job_dirs.values()} == set(on_disk)
    for name, folder in corpus.job_dirs.items():
        assert corpus.expected_trials[name] == on_disk[folder.name], name
    odd = {name for name in JOB_NAME_KINDS.values() if name is not None}
    assert odd <= set(corpus.expected_trials)
    assert {"../escape", "/abs/path", "a/b/c", "..", "x\x00y", "j" * 300} <= odd


def test_outside_files_carry_markers(corpus: FuzzCorpus) -> None:
    files = [p for p in corpus.outside_dir.rglob("*") if p.is_file()]
    assert len(files) >= 5
    for path in files:
        assert any(m.encode() in path.read_bytes() for m in corpus.markers), path
    agent = corpus.outside_dir / "agent-valid" / "trajectory.json"
    steps = json.loads(agent.read_bytes())["steps"]
    texts = [s["message"] for s in steps if isinstance(s.get("message"), str) and s["message"]]
    assert texts and all(any(m in t for m in corpus.markers) for t in texts)


def test_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    first = build_fuzz_corpus(tmp_path / "a", SEED, 300)
    second = build_fuzz_corpus(tmp_path / "b", SEED, 300)
    assert first.mutations == second.mutations
    assert _digest(first.root) == _digest(second.root)
    other = build_fuzz_corpus(tmp_path / "c", SEED + 1, 300)
    assert _digest(other.root) != _digest(first.root)


# ---------------------------------------------------------------------------- trajcurate run


def test_run_completes_without_a_traceback(pipeline_run: CliRun) -> None:
    assert pipeline_run.returncode is not None, f"still running after {RUN_TIMEOUT} s"
    assert pipeline_run.returncode == 0, tail(pipeline_run.stderr)
    assert TRACEBACK not in pipeline_run.stderr, tail(pipeline_run.stderr)


def test_every_job_has_a_balanced_manifest(
    corpus: FuzzCorpus, pipeline_run: CliRun, run_output: Path
) -> None:
    manifests = _job_manifests(run_output)
    problems = []
    for job, expected in sorted(corpus.expected_trials.items()):
        found = manifests.pop(job, [])
        if not job:  # an empty job_name is no name: the folder's, as when there is none
            found += manifests.pop(corpus.job_dirs[job].name, [])
        if len(found) != 1:
            problems.append(f"{job!r}: {len(found)} manifests ({expected} trials)")
            continue
        accounting = found[0]["accounting"]
        parts = sum(accounting[k] for k in ("written", "rejected", "dead_lettered"))
        if accounting["in"] != expected or parts != expected or not accounting["balanced"]:
            problems.append(f"{job!r}: {expected} trials, accounting {accounting}")
    problems += [f"manifest for a job not in the corpus: {job!r}" for job in sorted(manifests)]
    assert not problems, listing(f"{len(problems)} job problems", problems)
    run_manifest = json.loads((run_output / "manifest.json").read_bytes())
    assert run_manifest["accounting"]["in"] == corpus.total_trials
    assert run_manifest["accounting"]["balanced"] is True


def test_run_writes_nothing_outside_its_output(pipeline_run: CliRun) -> None:
    _assert_stayed_inside(pipeline_run)


def test_run_outputs_hold_no_byte_from_outside_the_trials(
    corpus: FuzzCorpus, pipeline_run: CliRun, run_output: Path
) -> None:
    assert run_output.is_dir(), tail(pipeline_run.stderr)
    problems = _leaks([run_output], _needles(corpus))
    assert not problems, listing("outside bytes in the outputs", problems)


# ---------------------------------------------------------------------------- trajcurate convert


def test_convert_accounts_for_every_trial(
    corpus: FuzzCorpus, convert_run: CliRun, convert_output: Path
) -> None:
    """Each trial is written, rejected (`OUT.rejects.jsonl`) or dead-lettered, exactly once."""
    assert convert_run.returncode is not None, f"still running after {RUN_TIMEOUT} s"
    assert convert_run.returncode == 0, tail(convert_run.stderr)
    assert TRACEBACK not in convert_run.stderr, tail(convert_run.stderr)
    printed = {
        what: _printed_count(convert_run.stdout, what)
        for what in ("bundles", "rejects", "dead letters")
    }
    assert printed["bundles"] is not None and printed["rejects"] is not None, convert_run.stdout
    rejects = _lines(convert_output.with_name("conv.rejects.jsonl"))
    dead = _lines(convert_output.with_name("conv.dead_letter.jsonl"))
    assert len(rejects) == printed["rejects"]
    assert len(dead) == (printed["dead letters"] or 0)
    mains = [
        record
        for record in map(json.loads, _lines(convert_output))
        if record["meta_info"]["unique_info"].get("_agent_type") != "subagent"
    ]
    assert len(mains) == printed["bundles"]
    counted = len(mains) + len(rejects) + len(dead)
    assert counted == corpus.total_trials, (
        f"{len(mains)} written + {len(rejects)} rejected + {len(dead)} dead-lettered "
        f"!= {corpus.total_trials} trials"
    )


def test_convert_writes_nothing_outside_and_leaks_nothing(
    corpus: FuzzCorpus, convert_run: CliRun, convert_output: Path
) -> None:
    _assert_stayed_inside(convert_run)
    problems = _leaks([convert_output.parent], _needles(corpus))
    assert not problems, listing("outside bytes in the convert outputs", problems)


# ---------------------------------------------------------------------------- helpers


def _watched_cli(corpus: FuzzCorpus, args: tuple[str, ...], allowed: Path) -> CliRun:
    """Run `trajcurate ARGS` in a child process; note what changed outside `allowed`."""
    cwd = corpus.root / "cwd"  # relative paths a command might write land here, in view
    cwd.mkdir(exist_ok=True)
    run = watched_run(args, cwd, corpus.root, allowed, RUN_TIMEOUT)
    if "abs" in run.root_added:  # the job named "/abs/path" was written there: noted, cleaned up
        shutil.rmtree("/abs")
    return run


def _assert_stayed_inside(run: CliRun) -> None:
    assert not run.changed, listing("changed outside the output folder", run.changed)
    assert not run.parent_added, listing("new beside the corpus root", run.parent_added)
    assert not run.root_added, listing("new in /", run.root_added)
    assert not os.path.lexists("/abs/path") and not os.path.lexists("/abs")


def _needles(corpus: FuzzCorpus) -> list[bytes]:
    needles = [marker.encode() for marker in corpus.markers]
    passwd = Path("/etc/passwd").read_bytes().splitlines()
    needles += [line.strip() for line in passwd if len(line.strip()) > 10]
    return needles


def _leaks(folders: Iterable[Path], needles: list[bytes]) -> list[str]:
    problems = []
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in (*dirnames, *filenames):
                path = Path(dirpath, name)
                mode = os.lstat(path).st_mode
                if stat.S_ISLNK(mode):
                    problems.append(f"{path}: a symlink in the outputs")
                elif not stat.S_ISDIR(mode) and not stat.S_ISREG(mode):
                    problems.append(f"{path}: not a regular file")
                elif stat.S_ISREG(mode):
                    data = path.read_bytes()
                    found = [n for n in needles if n in data or n in os.fsencode(path)]
                    problems += [f"{path}: holds {n[:40]!r}" for n in found]
    return problems


def _job_manifests(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Job manifests under `folder` (job folder names may be sanitised), by their `job`."""
    found: dict[str, list[dict[str, Any]]] = {}
    for dirpath, _, filenames in os.walk(folder):
        if "manifest.json" in filenames:
            doc = json.loads(Path(dirpath, "manifest.json").read_bytes())
            if isinstance(doc, dict) and "job" in doc:
                found.setdefault(doc["job"], []).append(doc)
    return found


def _digest(root: Path) -> dict[str, str]:
    """Relative path -> content hash (symlink target), with `root` itself written as <ROOT>."""
    out = {}
    for path, state in folder_state(root).items():
        relative = os.path.relpath(path, root)
        if stat.S_ISREG(state[0]):
            data = Path(path).read_bytes().replace(os.fsencode(root), b"<ROOT>")
            out[relative] = hashlib.sha256(data).hexdigest()
        elif stat.S_ISLNK(state[0]):
            out[relative] = "-> " + str(state[1]).replace(str(root), "<ROOT>")
        else:
            out[relative] = oct(state[0])
    return out


def _printed_count(stdout: str, what: str) -> int | None:
    """N from the summary line `trajcurate convert: N <what> -> PATH`, if printed."""
    found = re.search(rf"(\d+) {what} -> ", stdout)
    return int(found.group(1)) if found else None


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines() if path.exists() else []
