"""Second fuzz suite: a hostile corpus (`hostile_corpus.py`) through one `trajcurate run`.

About 1,000 synth trials, most clean, the others attacks on the reader: hard links out of
the input, symlink loops, tens of thousands of files, thousands of subagent references,
colliding and reserved job names, forged trial ids and a sibling aliased in, format
characters, secrets, records over the record cap, rewards that are not in [0, 1]. One run
(its own process, DirectRunner, `--max-record-mb 2`, a 20-minute timeout as the bound on its
time, printed) must exit 0 and: count every trial folder exactly once in its own job,
publish each job name in its own folder, write nothing outside `--output`, let no byte of an
outside file and no planted secret into an output, keep format characters out of im/lf,
keep instance ids non-empty, clean and unique per job, and no reward outside [0, 1]; each
planted trial ends as `Plant.expect` says. The generator self-tests are quick and unmarked;
the run is `slow`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import stat
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cli_sandbox import WatchedRun, folder_state, listing, tail, watched_run
from hostile_corpus import (
    ATTACKS,
    FORMAT_CHARACTERS,
    NAME_JOBS,
    REJECTED,
    WRITTEN,
    HostileCorpus,
    Plant,
    build_hostile_corpus,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
SEED = 20260621
TRIALS = 1000
RUN_TIMEOUT = 1200  # seconds: the bound on the run's time
RUN_ARGS = ("--max-record-mb", "2")
TRACEBACK = "Traceback (most recent call last)"
# Names a job folder may not take (files and folders the run writes beside the jobs).
RUN_LEVEL = frozenset(
    {"manifest.json", "lf.stats.json", "llm_dry_run.json", "runs.jsonl", "report"}
)
FORBIDDEN = frozenset(FORMAT_CHARACTERS) | {"\u2029"}


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> HostileCorpus:
    """A quick corpus for the generator's self-tests (same attacks, smaller bulk ones)."""
    return build_hostile_corpus(tmp_path_factory.mktemp("hostile-small"), SEED, 400, 300, 50)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> HostileCorpus:
    return build_hostile_corpus(tmp_path_factory.mktemp("hostile"), SEED, TRIALS)


@pytest.fixture(scope="module")
def run_output(corpus: HostileCorpus) -> Path:
    return corpus.root / "out" / "curated"


HostileRun = WatchedRun


@pytest.fixture(scope="module")
def run(corpus: HostileCorpus, run_output: Path) -> HostileRun:
    run_output.parent.mkdir()
    cwd = corpus.root / "cwd"  # where a relative path would land, in view
    cwd.mkdir()
    args = ("run", "--no-progress", "--input", str(corpus.jobs_dir), "--output", str(run_output))
    return watched_run((*args, *RUN_ARGS), cwd, corpus.root, run_output, RUN_TIMEOUT)


@dataclass
class JobOutput:
    """One published job folder, parsed."""

    folder: str
    manifest: dict[str, Any]
    im: list[dict[str, Any]] = field(default_factory=list)
    lf: list[Any] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)
    rejects: list[dict[str, Any]] = field(default_factory=list)
    dead: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mains(self) -> list[dict[str, Any]]:
        return [r for r in self.im if _unique(r).get("_agent_type") == "main"]

    @property
    def dropped(self) -> list[dict[str, Any]]:
        return [*self.rejects, *self.dead]


@dataclass
class RunOutput:
    manifest: dict[str, Any]  # the run's
    jobs: dict[str, JobOutput]  # raw job name -> its folder (by the folder manifest's `job`)
    strays: list[str]  # job manifests found twice for one name, or not in job_folders


@pytest.fixture(scope="module")
def outputs(run: HostileRun, run_output: Path) -> RunOutput:
    """What the run published (whatever it is: the tests say what is missing)."""
    manifest = _json(run_output / "manifest.json", {})
    jobs: dict[str, JobOutput] = {}
    strays = []
    listed = set((manifest.get("job_folders") or {}).values())
    folders = sorted(run_output.iterdir()) if run_output.is_dir() else []
    for folder in (p for p in folders if (p / "manifest.json").is_file()):
        doc = _json(folder / "manifest.json", {})
        if "job" not in doc:
            continue
        if doc["job"] in jobs or folder.name not in listed:
            strays.append(f"{folder.name}: a manifest for job {doc['job']!r}")
            continue
        jobs[doc["job"]] = JobOutput(
            folder=folder.name,
            manifest=doc,
            im=_jsonl(folder / "im.jsonl"),
            lf=_json(folder / "lf.json", []),
            scores=_jsonl(folder / "scores.jsonl"),
            rejects=_jsonl(folder / "rejects.jsonl"),
            dead=_jsonl(folder / "dead_letter.jsonl"),
        )
    return RunOutput(manifest, jobs, strays)


# ---------------------------------------------------------------------------- the corpus


def test_corpus_plants_every_attack_on_several_trials(small_corpus: HostileCorpus) -> None:
    assert set(ATTACKS) <= set(small_corpus.kind_counts)
    assert min(small_corpus.kind_counts.values()) >= 2, small_corpus.kind_counts
    assert small_corpus.clean_trials >= 0.8 * small_corpus.total_trials
    assert {"../x", "runs.jsonl", "report", ".staging-1", "Foo", "foo"} <= set(small_corpus.entries)
    twins = [folder for folder, name in NAME_JOBS if name == "twin"]
    assert [p.name for p in small_corpus.job_dirs["twin"]] == twins
    texts = [p for p in small_corpus.plants.values() if p.kind == "format_characters"]
    assert texts and all(p.text and not set(p.text) & FORBIDDEN for p in texts)
    assert len(small_corpus.secrets) == 5 * small_corpus.kind_counts["secrets"]


def test_corpus_counts_match_the_folders(small_corpus: HostileCorpus) -> None:
    _assert_entries_on_disk(small_corpus)


def test_hard_links_lead_outside_the_input(small_corpus: HostileCorpus) -> None:
    linked = [p for p in small_corpus.plants.values() if p.kind.startswith("hard_link_")]
    assert len(linked) >= 9
    outside = {
        (info.st_dev, info.st_ino): path
        for path in small_corpus.outside_dir.rglob("*")
        if (info := path.stat()) and stat.S_ISREG(info.st_mode)
    }
    for plant in linked:
        trial = small_corpus.jobs_dir / plant.folder / plant.entry
        (path,) = [p for p in trial.rglob("*") if p.is_file() and p.stat().st_nlink > 1]
        info = path.stat()
        assert (info.st_dev, info.st_ino) in outside, plant.key
        data = path.read_bytes()
        assert path.name == "reward.txt" or any(m.encode() in data for m in small_corpus.markers)


def test_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    first = build_hostile_corpus(tmp_path / "a", SEED, 400, 300, 50)
    second = build_hostile_corpus(tmp_path / "b", SEED, 400, 300, 50)
    assert first.plants == second.plants and first.secrets == second.secrets
    assert _digest(first.root) == _digest(second.root)
    other = build_hostile_corpus(tmp_path / "c", SEED + 1, 400, 300, 50)
    assert _digest(other.root) != _digest(first.root)


# ---------------------------------------------------------------------------- trajcurate run


@pytest.mark.slow
def test_full_corpus_counts_match_the_folders(corpus: HostileCorpus) -> None:
    assert corpus.total_trials >= TRIALS
    _assert_entries_on_disk(corpus)


@pytest.mark.slow
def test_run_exits_0_in_bounded_time_without_a_traceback(
    corpus: HostileCorpus, run: HostileRun, capsys: pytest.CaptureFixture[str]
) -> None:
    with capsys.disabled():
        print(
            f"\nhostile fuzz: trajcurate run over {corpus.total_trials} trial folders "
            f"({corpus.clean_trials} clean) took {run.seconds:.1f} s (rc {run.returncode})"
        )
    assert run.returncode is not None, f"still running after {RUN_TIMEOUT} s"
    assert run.returncode == 0, tail(run.stderr)
    assert TRACEBACK not in run.stderr, tail(run.stderr)


@pytest.mark.slow
def test_every_job_name_is_published_in_its_own_folder(
    corpus: HostileCorpus, outputs: RunOutput
) -> None:
    folders: dict[str, str] = outputs.manifest.get("job_folders") or {}
    problems = [f"job {job!r}: not in job_folders" for job in corpus.entries if job not in folders]
    problems += [
        f"job_folders: {job!r} is no input job" for job in folders if job not in corpus.entries
    ]
    owners: dict[str, list[str]] = {}
    for job, folder in folders.items():
        owners.setdefault(folder, []).append(job)
    problems += [
        f"{folder!r} is the folder of {jobs!r}" for folder, jobs in owners.items() if len(jobs) > 1
    ]
    for job, folder in sorted(folders.items()):
        if folder.lower() in RUN_LEVEL or folder.startswith(".") or "/" in folder:
            problems.append(f"job {job!r}: published as {folder!r}, a reserved or hidden name")
        published = outputs.jobs.get(job)
        if published is None or published.folder != folder:
            where = published.folder if published else None
            problems.append(
                f"job {job!r}: job_folders says {folder!r}, its manifest is in {where!r}"
            )
    problems += outputs.strays
    assert not problems, listing("job folder problems", problems)


@pytest.mark.slow
def test_every_trial_folder_is_counted_once_in_its_own_job(
    corpus: HostileCorpus, outputs: RunOutput
) -> None:
    """Per job: `in` is its trial-folder entries, in = written + rejected + dead-lettered,
    and each entry is one main record (its folder name the instance id) or one drop (its
    `source` the entry)."""
    kinds = {(p.job, p.entry): p.kind for p in corpus.plants.values()}
    problems = []
    for job, entries in sorted(corpus.entries.items()):
        published = outputs.jobs.get(job)
        if published is None:
            problems.append(f"job {job!r}: no published folder ({len(entries)} trial folders)")
            continue
        accounting = published.manifest.get("accounting") or {}
        parts = sum(accounting.get(k, 0) for k in ("written", "rejected", "dead_lettered"))
        if accounting.get("in") != len(entries) or parts != accounting.get("in"):
            problems.append(f"job {job!r}: {len(entries)} trial folders, accounting {accounting}")
        seen = Counter(_instance_id(r) for r in published.mains)
        seen.update(os.path.basename(str(d.get("source") or "")) for d in published.dropped)
        expected = Counter(entries)
        for entry in sorted((seen | expected).keys()):
            if seen[entry] != expected[entry]:
                kind = kinds.get((job, entry), "clean" if expected[entry] else "no such folder")
                problems.append(
                    f"job {job!r}: {entry!r} ({kind}) counted {seen[entry]} times, "
                    f"{expected[entry]} trial folder(s) of that name"
                )
    total = outputs.manifest.get("accounting") or {}
    if total.get("in") != corpus.total_trials or not total.get("balanced"):
        problems.append(f"run: {corpus.total_trials} trial folders, accounting {total}")
    assert not problems, listing("trial folders not counted exactly once", problems)


@pytest.mark.slow
def test_run_writes_nothing_outside_its_output(run: HostileRun) -> None:
    assert not run.changed, listing("changed outside the output folder", run.changed)
    assert not run.parent_added, listing("new beside the corpus root", run.parent_added)
    assert not run.root_added, listing("new in /", run.root_added)


@pytest.mark.slow
def test_no_outside_byte_and_no_planted_secret_in_any_output(
    corpus: HostileCorpus, run: HostileRun, run_output: Path
) -> None:
    assert run_output.is_dir(), tail(run.stderr)
    needles = {m: "an outside marker" for m in corpus.markers}
    for secret in corpus.secrets:
        needles[secret] = "a planted secret"
        needles[base64.b64encode(secret.encode()).decode()] = "a planted secret, base64"
        needles[base64.urlsafe_b64encode(secret.encode()).decode()] = "a planted secret, base64"
    needles.update({part: "part of a planted secret" for part in corpus.secret_parts})
    problems = []
    for path in _files(run_output):
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            problems.append(f"{path}: not a regular file")
            continue
        data = path.read_bytes()
        escaped = data.replace(b"\\n", b"\n")  # a PEM block as JSON writes it
        for needle, what in needles.items():
            raw = needle.encode()
            if raw in data or raw in escaped or raw in os.fsencode(path):
                problems.append(f"{path.relative_to(run_output)}: holds {what} {needle[:24]!r}")
    assert not problems, listing("outside bytes or secrets in the outputs", problems)


@pytest.mark.slow
def test_no_format_character_in_im_or_lf(outputs: RunOutput) -> None:
    problems = []
    for job, published in sorted(outputs.jobs.items()):
        for name, records in (("im.jsonl", published.im), ("lf.json", published.lf)):
            for n, record in enumerate(records):
                found = {c for text in _strings(record) for c in text if c in FORBIDDEN}
                if found:
                    codes = ", ".join(f"U+{ord(c):04X}" for c in sorted(found))
                    problems.append(f"job {job!r} {name} record {n} ({_label(record)}): {codes}")
    assert not problems, listing("format characters in the training files", problems)


@pytest.mark.slow
def test_instance_ids_are_clean_and_unique_in_each_job(outputs: RunOutput) -> None:
    problems = []
    for job, published in sorted(outputs.jobs.items()):
        ids = [("im.jsonl", _instance_id(r)) for r in published.im]
        ids += [("scores.jsonl", row.get("instance_id")) for row in published.scores]
        ids += [("rejects/dead letters", d.get("instance_id")) for d in published.dropped]
        for where, value in ids:
            if where != "im.jsonl" and value is None:
                continue  # a reject before any trial was read (an alias) has no id
            if not isinstance(value, str) or not value or any(map(_invisible, value)):
                problems.append(f"job {job!r} {where}: instance id {value!r}")
        twice = [i for i, n in Counter(_instance_id(r) for r in published.mains).items() if n > 1]
        problems += [f"job {job!r}: {n!r} is the id of several main records" for n in twice]
    assert not problems, listing("instance id problems", problems)


@pytest.mark.slow
def test_no_reward_outside_zero_to_one(outputs: RunOutput) -> None:
    problems = []
    for job, published in sorted(outputs.jobs.items()):
        for record in published.im:
            rewards = _unique(record).get("_instance_metadata", {}).get("rewards") or {}
            for key, value in rewards.items():
                if not _in_unit_range(value):
                    problems.append(f"job {job!r} {_label(record)}: rewards[{key!r}] = {value!r}")
        for row in published.scores:
            if row.get("reward") is not None and not _in_unit_range(row["reward"]):
                problems.append(f"job {job!r} scores {row.get('instance_id')!r}: {row['reward']!r}")
    assert not problems, listing("rewards outside [0, 1]", problems)


@pytest.mark.slow
def test_each_planted_trial_ends_as_planned(corpus: HostileCorpus, outputs: RunOutput) -> None:
    problems = []
    for plant in sorted(corpus.plants.values(), key=lambda p: p.key):
        where = f"{plant.kind} {plant.key} (job {plant.job!r})"
        published = outputs.jobs.get(plant.job)
        if published is None:
            problems.append(f"{where}: its job was not published")
            continue
        records = [r for r in published.im if _instance_id(r) == plant.entry]
        mains = [r for r in records if _unique(r).get("_agent_type") == "main"]
        dropped = [
            d for d in published.dropped if os.path.basename(str(d.get("source"))) == plant.entry
        ]
        if plant.expect == WRITTEN:
            found = _written_problems(plant, mains, records, dropped)
            problems += [f"{where}: {p}" for p in found]
        elif plant.expect == REJECTED:
            problems += [f"{where}: {p}" for p in _rejected_problems(plant, mains, dropped)]
    assert not problems, listing("planted trials that did not end as planned", problems)


# ---------------------------------------------------------------------------- checks


def _written_problems(
    plant: Plant,
    mains: list[dict[str, Any]],
    records: list[dict[str, Any]],
    dropped: list[dict[str, Any]],
) -> Iterator[str]:
    """One main record; the planted text in one of the instance's records (a subagent's,
    when it went to a sidechain step); the warning on the main record."""
    if len(mains) != 1:
        why = "; ".join(str(d.get("reason") or d.get("error"))[:120] for d in dropped)
        yield f"{len(mains)} main records, expected 1" + (f" (dropped: {why})" if why else "")
        return
    if plant.text is not None and not any(plant.text in t for t in _strings(records)):
        yield f"no record of it holds {plant.text!r}"
    warnings = _unique(mains[0]).get("_instance_metadata", {}).get("warnings") or []
    if plant.warning is not None and not any(plant.warning in str(w) for w in warnings):
        yield f"no warning names {plant.warning!r} (warnings: {warnings!r:.300})"


def _rejected_problems(
    plant: Plant, mains: list[dict[str, Any]], dropped: list[dict[str, Any]]
) -> Iterator[str]:
    if mains:
        yield f"written ({len(mains)} main records), expected rejected"
    if len(dropped) != 1:
        yield f"{len(dropped)} rejects / dead letters, expected 1"
        return
    reason = str(dropped[0].get("reason") or dropped[0].get("error") or "")
    missing = [group for group in plant.reason if not any(word in reason for word in group)]
    if missing:
        yield f"reason {reason[:200]!r} lacks {' and '.join('/'.join(g) for g in missing)}"
    if plant.stage is not None and dropped[0].get("stage") != plant.stage:
        yield f"dropped at stage {dropped[0].get('stage')!r}, expected {plant.stage!r}: {reason!r}"


def _assert_entries_on_disk(corpus: HostileCorpus) -> None:
    """Each raw job name's entries are the non-hidden folders (and links to folders) of its
    input folders; every input folder belongs to one name."""
    on_disk: dict[str, list[str]] = {}
    for job, folders in corpus.job_dirs.items():
        for folder in folders:
            names = [p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
            on_disk.setdefault(job, []).extend(names)
    assert {job: sorted(n) for job, n in on_disk.items()} == {
        job: sorted(n) for job, n in corpus.entries.items()
    }
    listed = sorted(p.name for folders in corpus.job_dirs.values() for p in folders)
    assert listed == sorted(p.name for p in corpus.jobs_dir.iterdir() if p.is_dir())
    for plant in corpus.plants.values():
        assert plant.entry in corpus.entries[plant.job], plant.key


# ---------------------------------------------------------------------------- helpers


def _digest(root: Path) -> dict[str, str]:
    """Relative path -> content hash and link count (symlink -> target), `root` as <ROOT>."""
    out = {}
    for path, state in folder_state(root).items():
        relative = os.path.relpath(path, root)
        if state[0] == stat.S_IFREG:
            data = Path(path).read_bytes().replace(os.fsencode(root), b"<ROOT>")
            out[relative] = f"{hashlib.sha256(data).hexdigest()} x{state[3]}"
        elif state[0] == stat.S_IFLNK:
            out[relative] = "-> " + str(state[1]).replace(str(root), "<ROOT>")
        else:
            out[relative] = oct(state[0])
    return out


def _files(folder: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in (*dirnames, *filenames):
            path = Path(dirpath, name)
            if not os.path.isdir(path) or os.path.islink(path):
                yield path


def _json(path: Path, default: Any) -> Any:
    return json.loads(path.read_bytes()) if path.is_file() else default


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _unique(record: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = (record.get("meta_info") or {}).get("unique_info") or {}
    return info


def _instance_id(record: dict[str, Any]) -> Any:
    return _unique(record).get("_instance_id")


def _label(record: Any) -> str:
    if isinstance(record, dict) and "meta_info" in record:
        return f"instance {_instance_id(record)!r}"
    return "an LF record"


def _strings(value: Any) -> Iterator[str]:
    """Every string in a parsed JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _invisible(char: str) -> bool:
    """A control, format, surrogate, private-use or unassigned character, or a separator."""
    return unicodedata.category(char)[0] == "C" or unicodedata.category(char) in ("Zl", "Zp")


def _in_unit_range(value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value) and 0.0 <= value <= 1.0
