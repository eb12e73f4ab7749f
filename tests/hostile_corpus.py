"""A hostile corpus of Harbor jobs: clean synth trials, a few of them attacks on the reader.

`build_hostile_corpus(root, seed, trials)` writes `root/jobs/` (the input) and
`root/outside/` (files that hard links in the trials point at: every string in them carries a
marker that must never reach an output), and returns a `HostileCorpus` saying what was
planted where (`plants`, one per attacked trial folder or alias), the planted secrets, and,
per raw job name, the trial-folder entries a run must count (a symlinked alias too).

The attacks (see `ATTACKS`): trial files hard-linked to files outside the input; continuation
and subagent references caught in a symlink loop and a trial subfolder linked to its parent;
a Claude Code trial with tens of thousands of extra session files and an ATIF trial with
thousands of subagent references; `trial_name`s forged to a sibling's folder name, NUL, the
empty string or a bidi override, and a sibling linked in as a second trial folder; format
characters and secrets in message texts and tool outputs; tool outputs far above a record cap;
rewards that are not numbers in [0, 1]. Besides the four synth jobs, job folders carry
colliding and reserved `job_name`s (`NAME_JOBS`): `../x` and the folder name it is cleaned
to, run-level file names, `Foo` and `foo`, two folders sharing one name.

Every choice comes from `random.Random(seed)` and the synth generator, so one seed writes the
same bytes (symlink targets are relative; only the absolute paths of the roots differ).
Attacks whose effect only shows when the trial would otherwise be written go to trials that
a clean run writes (`WRITABLE_PROFILES`, reward 1, no exception).
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import string
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzz_corpus import TRAJECTORY_KEEP, mark_strings

from pipelines.synth import MANIFEST, SynthOptions, generate
from transforms.sinks.names import safe_job_name

__all__ = [
    "ACCOUNTED",
    "ATTACKS",
    "FORMAT_CHARACTERS",
    "NAME_JOBS",
    "REJECTED",
    "WRITTEN",
    "HostileCorpus",
    "Plant",
    "build_hostile_corpus",
]

BASE_JOBS = 4
TRIALS_PER_NAME_JOB = 6
MARKER_PREFIX = "HOSTILE-OUTSIDE-"
MANY_FILES = 20_000  # extra files in a Claude Code trial (over a 10,000-file cap)
MANY_REFS = 5_000  # subagent references (and files) in an ATIF trial
HUGE_MB = (3, 5)  # size range of a huge tool output, MB
# Synth run profiles whose trials a clean run writes when resolved and without an exception.
WRITABLE_PROFILES = frozenset({"clean", "quick", "struggle", "test_first"})
# Code points that must never reach a training record (U+2028 becomes a newline).
FORMAT_CHARACTERS = ("\u202e", "\u200b", "\ufeff", "\u2028", "\ufffe", "\U0010ffff", "\u061c")
BAD_REWARD_TXT = ("1_0", "nan", "inf", "0x1", "2", "-1")
BAD_VERIFIER_REWARDS = ("NaN", "Infinity", "1.5")  # bare tokens in result.json's text
FORGED_NAMES = {"forged_id_nul": "\u0000", "forged_id_empty": "", "forged_id_rlo": "\u202e"}

# (input folder, raw job_name in its config.json): colliding and reserved names.
NAME_JOBS: tuple[tuple[str, str], ...] = (
    ("name-dotdot-x", "../x"),
    ("name-cleaned-literal", safe_job_name("../x")),
    ("name-runs-jsonl", "runs.jsonl"),
    ("name-report", "report"),
    ("name-manifest-json", "manifest.json"),
    ("name-lf-stats-json", "lf.stats.json"),
    ("name-staging", ".staging-1"),
    ("name-foo-upper", "Foo"),
    ("name-foo-lower", "foo"),
    ("name-twin-a", "twin"),
    ("name-twin-b", "twin"),
)

# What a run must do with a planted entry.
WRITTEN = "written"  # one main record with the entry's folder name as instance id
REJECTED = "rejected"  # in rejects.jsonl / dead_letter.jsonl, reason as `Plant.reason` says
ACCOUNTED = "accounted"  # counted once, however it ends


@dataclass(frozen=True)
class Plant:
    """One attacked entry of a job folder and what a run must make of it."""

    kind: str
    job: str  # raw job name
    folder: str  # input job folder
    entry: str  # trial folder (or alias) name in it
    expect: str  # WRITTEN, REJECTED or ACCOUNTED
    reason: tuple[tuple[str, ...], ...] = ()  # REJECTED: one word of each group in the reason
    stage: str | None = None  # REJECTED: the stage that must reject it
    text: str | None = None  # WRITTEN: a string the main record must hold
    warning: str | None = None  # WRITTEN: a substring of one of the record's warnings

    @property
    def key(self) -> str:
        return f"{self.folder}/{self.entry}"


@dataclass
class HostileCorpus:
    root: Path
    jobs_dir: Path
    outside_dir: Path
    markers: tuple[str, ...]  # in every outside file: must never appear in an output
    secrets: tuple[str, ...]  # planted secrets: none may appear in an output
    secret_parts: tuple[str, ...]  # their random bodies (and PEM lines): none either
    entries: dict[str, tuple[str, ...]]  # raw job name -> trial-folder entries (all folders)
    job_dirs: dict[str, tuple[Path, ...]]  # raw job name -> its input folder(s)
    plants: dict[str, Plant]  # "<job folder>/<entry>" -> what was planted there
    kind_counts: Counter[str] = field(default_factory=Counter)

    @property
    def expected_trials(self) -> dict[str, int]:
        """Raw job name -> the trial-folder entries a run must count in it."""
        return {job: len(names) for job, names in self.entries.items()}

    @property
    def total_trials(self) -> int:
        return sum(len(names) for names in self.entries.values())

    @property
    def clean_trials(self) -> int:
        return self.total_trials - len(self.plants)


@dataclass
class _Trial:
    folder: str  # input job folder
    name: str
    path: Path
    fmt: str  # synth format: atif, atif+cont, atif+summary, claude-code-jsonl, opencode-jsonl
    writable: bool

    @property
    def key(self) -> str:
        return f"{self.folder}/{self.name}"

    @property
    def trajectory(self) -> Path:
        return self.path / "agent" / "trajectory.json"

    @property
    def session(self) -> Path:
        return sorted((self.path / "agent" / "sessions" / "projects").glob("*/*.jsonl"))[0]


@dataclass
class _Context:
    rng: random.Random
    outside: Path
    markers: tuple[str, ...]
    job_of: dict[str, str]  # input folder -> raw job name
    trials: list[_Trial]
    many_files: int = MANY_FILES
    many_refs: int = MANY_REFS
    taken: set[str] = field(default_factory=set)  # trial keys attacked or reserved
    aliases: dict[str, list[str]] = field(default_factory=dict)  # folder -> alias entries
    secrets: list[str] = field(default_factory=list)
    secret_parts: list[str] = field(default_factory=list)

    def plant(self, trial: _Trial, kind: str, expect: str, **more: Any) -> Plant:
        self.taken.add(trial.key)
        return Plant(kind, self.job_of[trial.folder], trial.folder, trial.name, expect, **more)

    def partner(self, trial: _Trial) -> _Trial | None:
        """Another writable, untouched trial in the same job folder (rng-chosen), or None."""
        pool = [
            t
            for t in self.trials
            if t.folder == trial.folder and t.key != trial.key
            if t.writable and t.key not in self.taken
        ]
        return self.rng.choice(pool) if pool else None


Attack = Callable[[_Trial, _Context, int], list[Plant]]


# ---------------------------------------------------------------------------- helpers


def _dump(doc: Any) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False).encode()


def _load(path: Path) -> Any:
    return json.loads(path.read_bytes())


def _agent_steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in doc.get("steps") or [] if isinstance(s, dict) and s.get("source") == "agent"]


def _message_step(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """An agent step with a text message (any agent step when none has one)."""
    steps = _agent_steps(doc)
    spoken = [s for s in steps if isinstance(s.get("message"), str) and s["message"]]
    return rng.choice(spoken or steps)


def _tool_results(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        result
        for step in _agent_steps(doc)
        for result in (step.get("observation") or {}).get("results") or []
        if isinstance(result, dict) and isinstance(result.get("content"), str)
    ]


def _results_of(step: dict[str, Any]) -> list[Any]:
    """The step's observation results list (created when absent or mistyped)."""
    observation = step.get("observation")
    if not isinstance(observation, dict):
        observation = step["observation"] = {}
    if not isinstance(observation.get("results"), list):
        observation["results"] = []
    results: list[Any] = observation["results"]
    return results


def _append_to_message(doc: dict[str, Any], text: str, rng: random.Random) -> None:
    step = _message_step(doc, rng)
    message = step.get("message")
    step["message"] = f"{message} {text}" if isinstance(message, str) and message else text


def _append_to_tool_output(doc: dict[str, Any], text: str, rng: random.Random) -> None:
    results = _tool_results(doc)
    if not results:
        _append_to_message(doc, text, rng)
        return
    result = rng.choice(results)
    result["content"] = f"{result['content']}\n{text}"


def _edit_session(path: Path, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    events = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    edit(events)
    path.write_bytes(b"".join(json.dumps(e, ensure_ascii=False).encode() + b"\n" for e in events))


def _session_texts(events: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    """The text blocks of assistant messages (`role` "text") or the string tool results
    (`role` "tool_result") of a Claude Code session's main stream."""
    blocks = []
    for event in events:
        message = event.get("message")
        if event.get("isSidechain") or not isinstance(message, dict):
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != role:
                continue
            if isinstance(block.get("text" if role == "text" else "content"), str):
                blocks.append(block)
    return blocks


def _plant_text(trial: _Trial, texts: list[str], rng: random.Random) -> None:
    """Each text into a message or a tool output of the trial (ATIF or Claude Code)."""
    if trial.fmt.startswith("atif"):
        doc = _load(trial.trajectory)
        for n, text in enumerate(texts):
            (_append_to_message if n % 2 == 0 else _append_to_tool_output)(doc, text, rng)
        trial.trajectory.write_bytes(_dump(doc))
        return

    def edit(events: list[dict[str, Any]]) -> None:
        said, results = _session_texts(events, "text"), _session_texts(events, "tool_result")
        for n, text in enumerate(texts):
            if (n % 2 == 1 and results) or not said:
                block = rng.choice(results)
                block["content"] = f"{block['content']}\n{text}"
            else:
                block = rng.choice(said)
                block["text"] = f"{block['text']} {text}"

    _edit_session(trial.session, edit)


def _no_result_reward(trial: _Trial) -> None:
    """Leave the trial no reward but the one a caller writes: no verifier_result, no
    reward.json, no reward.txt."""
    result = trial.path / "result.json"
    doc = _load(result)
    doc["verifier_result"] = None
    result.write_bytes(_dump(doc))
    verifier = trial.path / "verifier"
    verifier.mkdir(exist_ok=True)
    for name in ("reward.json", "reward.txt"):
        (verifier / name).unlink(missing_ok=True)


# What makes a trajectory one (the first fuzz corpus's set, and the session id): left
# unmarked, so that reading a linked file would produce a record (and show the marker in it).
_STRUCTURAL_KEYS = TRAJECTORY_KEEP | {"session_id"}


def _alnum(
    rng: random.Random, size: int, alphabet: str = string.ascii_letters + string.digits
) -> str:
    while True:
        text = "".join(rng.choice(alphabet) for _ in range(size))
        if any(c.isdigit() for c in text) and any(c.isupper() for c in text):
            return text


# ---------------------------------------------------------------------------- hard links


def _hard_link(kind: str, relative: str) -> Attack:
    """The trial's file becomes a hard link to a marked copy of it outside the input."""

    def attack(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
        path = trial.path / relative
        target = ctx.outside / "hard-links" / f"{kind}-{index}-{path.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative.endswith("reward.txt"):  # a number carries no marker: read, it would
            _no_result_reward(trial)  # make the trial resolved
            target.write_bytes(b"1.0\n")
            reason: tuple[tuple[str, ...], ...] = (("reward",),)
        else:
            marker = ctx.markers[index % len(ctx.markers)]
            target.write_bytes(_dump(mark_strings(_load(path), marker, _STRUCTURAL_KEYS)))
            path.unlink()
            reason = (("hard link",),)
        os.link(target, path)
        return [ctx.plant(trial, kind, REJECTED, reason=reason)]

    return attack


# ---------------------------------------------------------------------------- symlink loops

LOOP_A, LOOP_B = "loop-a.json", "loop-b.json"


def _loop_files(trial: _Trial) -> None:
    agent = trial.path / "agent"
    (agent / LOOP_A).symlink_to(LOOP_B)
    (agent / LOOP_B).symlink_to(LOOP_A)


def _loop_subagent_ref(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    _loop_files(trial)
    doc = _load(trial.trajectory)
    ref = {"session_id": f"loop-subagent-{index}", "trajectory_path": LOOP_A}
    _results_of(_message_step(doc, ctx.rng)).append({"subagent_trajectory_ref": [ref]})
    trial.trajectory.write_bytes(_dump(doc))
    return [ctx.plant(trial, "loop_subagent_ref", WRITTEN, warning=LOOP_A)]


def _loop_continuation_ref(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    _loop_files(trial)
    doc = _load(trial.trajectory)
    doc["continued_trajectory_ref"] = LOOP_A
    trial.trajectory.write_bytes(_dump(doc))
    return [ctx.plant(trial, "loop_continuation_ref", WRITTEN, warning=LOOP_A)]


def _loop_trial_folder(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    """`agent/loop -> ..` (and, in a Claude Code trial, one beside the sessions too)."""
    (trial.path / "agent" / "loop").symlink_to("..", target_is_directory=True)
    if trial.fmt == "claude-code-jsonl":
        (trial.session.parent / "loop").symlink_to("..", target_is_directory=True)
    return [ctx.plant(trial, "loop_trial_folder", WRITTEN)]


# ---------------------------------------------------------------------------- many files


def _many_files(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    """MANY_FILES extra files below the session's project folder: half of them `.jsonl`
    (a one-line session summary), the rest junk a crashed agent might leave."""
    project = trial.session.parent
    per_folder = 200
    for n in range(ctx.many_files):
        folder = project / f"junk-{n // per_folder:03d}"
        if n % per_folder == 0:
            folder.mkdir()
        if n % 2 == 0:
            event = {"type": "summary", "summary": f"junk session {n}", "leafUuid": f"leaf-{n}"}
            (folder / f"session-{n:05d}.jsonl").write_bytes(json.dumps(event).encode() + b"\n")
        else:
            (folder / f"junk-{n:05d}.tmp").write_bytes(b"x" * (n % 7))
    return [ctx.plant(trial, "many_files", REJECTED, reason=(("files",),))]


def _many_subagent_refs(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    """MANY_REFS subagent references, each to its own small subagent trajectory file."""
    doc = _load(trial.trajectory)
    folder = trial.path / "agent" / "subagents"
    folder.mkdir()
    refs = []
    for n in range(ctx.many_refs):
        name = f"sub-{n:05d}.json"
        sub = {
            "schema_version": doc.get("schema_version"),
            "session_id": f"sub-{index}-{n}",
            "agent": doc.get("agent"),
            "steps": [
                {"step_id": 1, "source": "user", "message": f"Check file {n} for the bug."},
                {"step_id": 2, "source": "agent", "message": f"File {n} is fine."},
            ],
        }
        (folder / name).write_bytes(json.dumps(sub).encode())
        refs.append({"session_id": sub["session_id"], "trajectory_path": f"subagents/{name}"})
    _results_of(_message_step(doc, ctx.rng)).append({"subagent_trajectory_ref": refs})
    trial.trajectory.write_bytes(_dump(doc))
    return [ctx.plant(trial, "many_subagent_refs", ACCOUNTED)]


# ---------------------------------------------------------------------------- forged ids


def _forge(trial: _Trial, name: str) -> None:
    """`trial_name` (result.json, its config copy, config.json) set to `name`."""
    result = trial.path / "result.json"
    doc = _load(result)
    doc["trial_name"] = name
    if isinstance(doc.get("config"), dict):
        doc["config"]["trial_name"] = name
    result.write_bytes(_dump(doc))
    config = trial.path / "config.json"
    if config.is_file():
        doc = _load(config)
        doc["trial_name"] = name
        config.write_bytes(_dump(doc))


def _forged_sibling(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    victim = ctx.partner(trial)
    if victim is None:
        return []
    _forge(trial, victim.name)
    return [
        ctx.plant(trial, "forged_id_sibling", WRITTEN),
        ctx.plant(victim, "forged_id_victim", WRITTEN),
    ]


def _forged(kind: str) -> Attack:
    def attack(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
        _forge(trial, FORGED_NAMES[kind])
        return [ctx.plant(trial, kind, WRITTEN)]

    return attack


def _alias_sibling(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    """`alias-<n> -> <trial>` in the trial's job: one trial folder seen under two names."""
    alias = f"alias-{index}"
    (trial.path.parent / alias).symlink_to(trial.name, target_is_directory=True)
    ctx.aliases.setdefault(trial.folder, []).append(alias)
    job = ctx.job_of[trial.folder]
    return [
        ctx.plant(trial, "alias_target", WRITTEN),
        Plant("alias_sibling", job, trial.folder, alias, REJECTED, stage="detect"),
    ]


# ---------------------------------------------------------------------------- texts


def _format_characters(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    """A sentinel word with every format character in it; cleaned, U+2028 is a newline."""
    tag = f"FMT{index:02d}x{ctx.rng.getrandbits(32):08x}"
    letters = "abcdefgh"
    raw = tag + "".join(f"{letters[i]}{c}" for i, c in enumerate(FORMAT_CHARACTERS)) + letters[-1]
    cleaned = tag + "".join(
        letters[i] + ("\n" if c == "\u2028" else "") for i, c in enumerate(FORMAT_CHARACTERS)
    )
    _plant_text(trial, [raw, f"tool said {raw} too"], ctx.rng)
    return [ctx.plant(trial, "format_characters", WRITTEN, text=cleaned + letters[-1])]


def _new_secrets(ctx: _Context) -> list[str]:
    """One secret of each planted kind, random; bodies and PEM lines kept as needles too."""
    rng = ctx.rng
    github = "ghp_" + _alnum(rng, 36)
    aws = "AKIA" + _alnum(rng, 16, string.ascii_uppercase + string.digits)
    anthropic = "sk-ant-api03-" + _alnum(rng, 40)
    slack = f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**11, 10**12)}-" + _alnum(
        rng, 24
    )
    b64 = string.ascii_letters + string.digits + "+/"
    lines = [_alnum(rng, 64, b64) for _ in range(6)]
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"
    ctx.secrets += [github, aws, anthropic, slack, pem]
    ctx.secret_parts += [github[4:], aws[4:], anthropic[13:], slack[5:], *lines]
    return [
        f"the token is {github} (do not share)",
        f"AWS_ACCESS_KEY_ID={aws}\nregion=us-east-1",
        f"Using key {anthropic} for the API",
        f"slack bot token: {slack}",
        f"cat ~/.ssh/id_rsa\n{pem}\n",
    ]


def _secrets(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    _plant_text(trial, _new_secrets(ctx), ctx.rng)
    return [ctx.plant(trial, "secrets", WRITTEN)]


def _huge_record(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    """A tool output of 3-5 MB: the record is far above a 2 MB record cap."""
    size = ctx.rng.randint(*HUGE_MB) * 1_000_000
    word = ctx.rng.choice(("PASSED test_case ", "compiling module ", "row,value,total\n"))
    doc = _load(trial.trajectory)
    results = _tool_results(doc)
    text = (word * (size // len(word) + 1))[:size]
    if results:
        ctx.rng.choice(results)["content"] = text
    else:
        _message_step(doc, ctx.rng)["message"] = text
    trial.trajectory.write_bytes(_dump(doc))
    return [ctx.plant(trial, "huge_record", REJECTED, reason=(("record",), ("MB", "MiB")))]


# ---------------------------------------------------------------------------- rewards


def _bad_reward_txt(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    _no_result_reward(trial)
    text = BAD_REWARD_TXT[index % len(BAD_REWARD_TXT)]
    (trial.path / "verifier" / "reward.txt").write_bytes(text.encode() + b"\n")
    return [ctx.plant(trial, "bad_reward_txt", REJECTED, reason=(("reward",),))]


def _bad_verifier_reward(trial: _Trial, ctx: _Context, index: int) -> list[Plant]:
    _no_result_reward(trial)
    path = trial.path / "result.json"
    doc = _load(path)
    doc["verifier_result"] = {"rewards": {"reward": "__BAD__"}}
    bad = BAD_VERIFIER_REWARDS[index % len(BAD_VERIFIER_REWARDS)]
    path.write_bytes(_dump(doc).replace(b'"__BAD__"', bad.encode()))
    return [ctx.plant(trial, "bad_verifier_reward", REJECTED, reason=(("reward",),))]


# ---------------------------------------------------------------------------- the attacks


def _writable(trial: _Trial) -> bool:
    return trial.writable


def _atif(trial: _Trial) -> bool:  # a plain ATIF trajectory (no continuation files)
    return trial.writable and trial.fmt == "atif"


def _texts(trial: _Trial) -> bool:
    return trial.writable and trial.fmt in ("atif", "claude-code-jsonl")


def _claude_code(trial: _Trial) -> bool:
    return trial.fmt == "claude-code-jsonl"


# kind -> (which trials it fits, how many, the attack); the narrowest pools first.
ATTACKS: dict[str, tuple[Callable[[_Trial], bool], int, Attack]] = {
    "many_files": (_claude_code, 2, _many_files),
    "many_subagent_refs": (_atif, 2, _many_subagent_refs),
    "hard_link_result": (_writable, 3, _hard_link("hard_link_result", "result.json")),
    "hard_link_trajectory": (_atif, 3, _hard_link("hard_link_trajectory", "agent/trajectory.json")),
    "hard_link_reward": (_writable, 3, _hard_link("hard_link_reward", "verifier/reward.txt")),
    "loop_subagent_ref": (_atif, 3, _loop_subagent_ref),
    "loop_continuation_ref": (_atif, 3, _loop_continuation_ref),
    "loop_trial_folder": (_writable, 4, _loop_trial_folder),
    "forged_id_sibling": (_writable, 3, _forged_sibling),
    "forged_id_nul": (_writable, 3, _forged("forged_id_nul")),
    "forged_id_empty": (_writable, 3, _forged("forged_id_empty")),
    "forged_id_rlo": (_writable, 3, _forged("forged_id_rlo")),
    "alias_sibling": (_writable, 3, _alias_sibling),
    "format_characters": (_texts, 6, _format_characters),
    "secrets": (_texts, 8, _secrets),
    "huge_record": (_atif, 4, _huge_record),
    "bad_reward_txt": (_writable, 2 * len(BAD_REWARD_TXT), _bad_reward_txt),
    "bad_verifier_reward": (_writable, 2 * len(BAD_VERIFIER_REWARDS), _bad_verifier_reward),
}


# ---------------------------------------------------------------------------- building


def build_hostile_corpus(
    root: Path,
    seed: int,
    trials: int = 1000,
    many_files: int = MANY_FILES,
    many_refs: int = MANY_REFS,
) -> HostileCorpus:
    """Write the corpus under `root` (jobs/, outside/): at least `trials` trial folders.
    `many_files` / `many_refs` size the two bulk attacks (smaller for quick self-tests)."""
    rng = random.Random(seed)
    jobs_dir, outside = root / "jobs", root / "outside"
    per_job = max(1, math.ceil(trials / BASE_JOBS))
    generate(SynthOptions(jobs_dir, BASE_JOBS, per_job, seed, 0.0), progress=io.StringIO())
    rows = [json.loads(line) for line in (jobs_dir / MANIFEST).read_bytes().splitlines()]
    (jobs_dir / MANIFEST).rename(root / MANIFEST)  # not an input
    all_trials = sorted(
        (_synth_trial(jobs_dir, row) for row in rows), key=lambda t: (t.folder, t.name)
    )
    job_of = {row["job"]: row["job"] for row in rows}
    markers = tuple(f"{MARKER_PREFIX}{rng.getrandbits(64):016x}" for _ in range(3))
    outside.mkdir()
    ctx = _Context(rng, outside, markers, job_of, all_trials, many_files, many_refs)
    _name_jobs(ctx, jobs_dir)

    plants: dict[str, Plant] = {}
    counts: Counter[str] = Counter()
    free = [t for t in all_trials if t.key not in ctx.taken]
    rng.shuffle(free)
    for kind, (fits, quota, attack) in ATTACKS.items():
        done = 0
        for trial in free:
            if done == quota:
                break
            if trial.key in ctx.taken or not fits(trial):
                continue
            planted = attack(trial, ctx, done)
            if not planted:
                continue
            for plant in planted:
                plants[plant.key] = plant
                counts[plant.kind] += 1
            done += 1
        if done < quota:
            raise ValueError(f"{len(all_trials)} trials are too few for {quota} x {kind}")

    entries: dict[str, list[str]] = {}
    job_dirs: dict[str, list[Path]] = {}
    for folder in sorted(p for p in jobs_dir.iterdir() if p.is_dir()):
        job = job_of[folder.name]
        names = [t.name for t in all_trials if t.folder == folder.name]
        names += ctx.aliases.get(folder.name, [])
        clash = set(names) & set(entries.get(job, []))
        if clash:
            raise ValueError(f"job {job!r}: trial folders {sorted(clash)} in two of its folders")
        entries.setdefault(job, []).extend(names)
        job_dirs.setdefault(job, []).append(folder)
    return HostileCorpus(
        root=root,
        jobs_dir=jobs_dir,
        outside_dir=outside,
        markers=markers,
        secrets=tuple(ctx.secrets),
        secret_parts=tuple(ctx.secret_parts),
        entries={job: tuple(sorted(names)) for job, names in entries.items()},
        job_dirs={job: tuple(folders) for job, folders in job_dirs.items()},
        plants=plants,
        kind_counts=counts,
    )


def _synth_trial(jobs_dir: Path, row: dict[str, Any]) -> _Trial:
    writable = (
        row["reward"] == 1.0 and row["exception"] is None and row["profile"] in WRITABLE_PROFILES
    )
    path = jobs_dir / row["job"] / row["trial"]
    return _Trial(row["job"], row["trial"], path, row["format"], writable)


def _name_jobs(ctx: _Context, jobs_dir: Path) -> None:
    """Move TRIALS_PER_NAME_JOB trials into each job of NAME_JOBS; the first writable one
    of each stays clean, so every name has something to write."""
    base_config = _load(sorted(jobs_dir.glob("*/config.json"))[0])
    picked = ctx.rng.sample(range(len(ctx.trials)), TRIALS_PER_NAME_JOB * len(NAME_JOBS))
    for index, (folder_name, job_name) in enumerate(NAME_JOBS):
        folder = jobs_dir / folder_name
        folder.mkdir()
        (folder / "config.json").write_bytes(_dump({**base_config, "job_name": job_name}))
        ctx.job_of[folder_name] = job_name
        chosen = sorted(picked[index * TRIALS_PER_NAME_JOB : (index + 1) * TRIALS_PER_NAME_JOB])
        moved = [ctx.trials[at] for at in chosen]
        for trial in moved:
            destination = folder / trial.name
            trial.path.rename(destination)
            trial.folder, trial.path = folder_name, destination
        keep = next((t for t in moved if t.writable), moved[0])
        ctx.taken.add(keep.key)
    ctx.trials.sort(key=lambda t: (t.folder, t.name))
