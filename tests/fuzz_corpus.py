"""A fuzz corpus of Harbor jobs: realistic synth jobs, most trials then damaged on purpose.

`build_fuzz_corpus(root, seed)` writes `root/jobs/` (the input), `root/outside/` (files the
damaged trials point at through symlinks and escaping references: every string in them
carries a marker that must never reach an output) and returns a `FuzzCorpus` with what was
done: the mutation kind per trial, the count per kind, the trial folders per job (keyed by
the `job_name` in the job's `config.json`, or the folder name when there is none).

Everything comes from `random.Random(seed)` and the synth generator (same seed, same
bytes); only absolute paths that point into `root` differ between two roots. Mutations that
need an ATIF trajectory or a native log go to trials that have one; each odd-name job keeps
one clean trial so something is written under that name.
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.synth import MANIFEST, SynthOptions, generate

__all__ = ["JOB_NAME_KINDS", "KINDS", "FuzzCorpus", "build_fuzz_corpus"]

CLEAN_SHARE = 0.15
BASE_JOBS = 4
TRIALS_PER_ODD_JOB = 5
MARKER_PREFIX = "OUTSIDE-MARKER-"
ESCAPING_REF = "../../x.json"

# Odd `job_name`s in a job's config.json (key -> the name); `None` = no job_name key at all.
JOB_NAME_KINDS: dict[str, str | None] = {
    "dotdot_escape": "../escape",
    "absolute": "/abs/path",
    "nested": "a/b/c",
    "dotdot": "..",
    "dot": ".",
    "nul": "x\x00y",
    "long_300": "j" * 300,
    "control_chars": "ctl\x01\x07\x1b[31m\r\n\tname\x7f",
    "unicode": "\u30b8\u30e7\u30d6-\u00e9t\u00e9-\U0001f680-\u00fc\u00ef",
    "empty": "",
    "trailing_slash": "trailing/",
    "spaces": "  spaced job name  ",
    "missing_job_name": None,
}


@dataclass
class FuzzCorpus:
    root: Path
    jobs_dir: Path
    outside_dir: Path
    markers: tuple[str, ...]  # must never appear in any output
    expected_trials: dict[str, int]  # job name -> trial folders in that job
    job_dirs: dict[str, Path]  # job name -> its folder
    job_name_kinds: dict[str, str]  # job name -> odd-name kind ("synth" for the base jobs)
    mutations: dict[str, str]  # "<job folder>/<trial folder>" -> kind, "clean" for none
    kind_counts: Counter[str] = field(default_factory=Counter)

    @property
    def total_trials(self) -> int:
        return sum(self.expected_trials.values())

    @property
    def corrupted_trials(self) -> int:
        return sum(self.kind_counts.values())


@dataclass
class _Trial:
    job: str  # folder name
    name: str
    path: Path
    fmt: str  # synth format: atif, atif+cont, atif+summary, claude-code-jsonl, opencode-jsonl
    agent: str

    @property
    def key(self) -> str:
        return f"{self.job}/{self.name}"

    @property
    def is_atif(self) -> bool:
        return self.fmt.startswith("atif")

    @property
    def native_log(self) -> Path:
        if self.fmt == "opencode-jsonl":
            return self.path / "agent" / "opencode.txt"
        sessions = sorted((self.path / "agent" / "sessions" / "projects").glob("*/*.jsonl"))
        return sessions[0]


@dataclass
class _Context:
    root: Path
    outside: Path
    rng: random.Random

    @property
    def outside_result(self) -> Path:
        return self.outside / "result.json"

    @property
    def outside_agent(self) -> Path:
        return self.outside / "agent-valid"

    @property
    def outside_trajectory(self) -> Path:
        return self.outside / "trajectory.json"

    @property
    def outside_sub(self) -> Path:
        return self.outside / "sub.json"

    @property
    def outside_cont(self) -> Path:
        return self.outside / "cont.json"


Mutation = Callable[[_Trial, _Context], None]


# ---------------------------------------------------------------------------- helpers


def _dump(doc: Any) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False).encode()


def _load(path: Path) -> Any:
    return json.loads(path.read_bytes())


def _traj_path(trial: _Trial) -> Path:
    return trial.path / "agent" / "trajectory.json"


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _nested(depth: int, rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return b"[" * depth + b"1" + b"]" * depth
    return b'{"n":' * depth + b'"leaf"' + b"}" * depth


def _with_placeholders(doc: Any, values: dict[str, bytes]) -> bytes:
    """`doc` dumped, with each `"__NAME__"` string replaced by raw bytes (not always JSON)."""
    data = _dump(doc)
    for name, raw in values.items():
        data = data.replace(f'"__{name}__"'.encode(), raw)
    return data


def _agent_steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    steps = doc.get("steps")
    if not isinstance(steps, list):
        return []
    return [s for s in steps if isinstance(s, dict) and s.get("source") == "agent"]


def _pick_agent_step(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    steps = _agent_steps(doc)
    if not steps:  # every synth trajectory has agent steps; keep the damage anyway
        step: dict[str, Any] = {"step_id": 99, "source": "agent", "message": ""}
        doc.setdefault("steps", []).append(step)
        return step
    return rng.choice(steps)


def _pick_tool_call(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    calls = [c for s in _agent_steps(doc) for c in s.get("tool_calls") or [] if isinstance(c, dict)]
    if calls:
        return rng.choice(calls)
    call: dict[str, Any] = {"tool_call_id": "call_fuzz", "function_name": "bash", "arguments": {}}
    step = _pick_agent_step(doc, rng)
    step["tool_calls"] = [*(step.get("tool_calls") or []), call]
    return call


def _truncate(data: bytes, rng: random.Random) -> bytes:
    """Cut in the middle of a line, so no JSON line (or document) survives whole."""
    cut = int(len(data) * rng.uniform(0.2, 0.8))
    start = data.rfind(b"\n", 0, cut) + 1
    end = data.find(b"\n", cut)
    end = len(data) if end < 0 else end
    return data[: start + max(1, (end - start) // 2)]


def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(out))
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def _insert_invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    starts: list[int] = []
    for marker in (b'"message": "', b'"text":"', b'"content": "', b'": "'):
        at = data.find(marker)
        while at >= 0 and len(starts) < 50:
            starts.append(at + len(marker))
            at = data.find(marker, at + 1)
        if starts:
            break
    at = rng.choice(starts) if starts else len(data) // 2
    junk = rng.choice((b"\xff\xfe\xc3\x28", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80\x80\x80", b"\xf8"))
    return data[:at] + junk + data[at:]


def _utf16(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8")
    if rng.random() < 0.5:
        return b"\xff\xfe" + text.encode("utf-16-le")
    return b"\xfe\xff" + text.encode("utf-16-be")


def _no_result_reward(trial: _Trial) -> None:
    """Make the reader fall back to the verifier folder: null verifier_result, no reward.json."""
    result = trial.path / "result.json"
    doc = _load(result)
    doc["verifier_result"] = None
    result.write_bytes(_dump(doc))
    _remove(trial.path / "verifier" / "reward.json")
    (trial.path / "verifier").mkdir(exist_ok=True)


def mark_strings(value: Any, marker: str, keep: frozenset[str], key: str = "") -> Any:
    """Every string value prefixed with `marker`, except under keys in `keep`."""
    if isinstance(value, dict):
        return {k: mark_strings(v, marker, keep, k) for k, v in value.items()}
    if isinstance(value, list):
        return [mark_strings(v, marker, keep, key) for v in value]
    if isinstance(value, str) and key not in keep and not key.endswith("_at"):
        return f"{marker} {value}"
    return value


# What a reader needs to recognise a trajectory as one: left unmarked so that following a
# link out would really produce a record (and the marker would show in it).
TRAJECTORY_KEEP = frozenset(
    {
        "schema_version",
        "source",
        "type",
        "timestamp",
        "tool_call_id",
        "source_call_id",
        "function_name",
        "model_name",
        "name",
        "version",
        "stop_reason",
        "trajectory_path",
        "continued_trajectory_ref",
    }
)


# ---------------------------------------------------------------------- result.json, verifier/


def _truncate_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    path.write_bytes(_truncate(path.read_bytes(), ctx.rng))


def _byte_flip_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    path.write_bytes(_flip_bytes(path.read_bytes(), ctx.rng))


def _wrong_type_rewards(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    doc = _load(path)
    variant = ctx.rng.randrange(5)
    if variant == 0:
        doc["verifier_result"] = {"rewards": {"reward": "1.0"}}
    elif variant == 1:
        doc["verifier_result"] = {"rewards": "1.0"}
    elif variant == 2:
        doc["verifier_result"] = {"rewards": [1.0]}
    elif variant == 3:
        doc["verifier_result"] = "passed"
    else:
        doc["verifier_result"] = {"rewards": {"reward": True, "tests_passed": "all"}}
    path.write_bytes(_dump(doc))


def _reward_txt_garbage(trial: _Trial, ctx: _Context) -> None:
    _no_result_reward(trial)
    text = ctx.rng.choice(
        (b"NaN", b"inf", b"-Infinity", b"1e999", b"one", b"1.0\n0.0\n", b"   \n", b"\x00\x01",
         b"99999999999999999999999999999", b"0x1p0", b"1,0")
    )  # fmt: skip
    (trial.path / "verifier" / "reward.txt").write_bytes(text)


def _reward_json_weird(trial: _Trial, ctx: _Context) -> None:
    _no_result_reward(trial)
    text = ctx.rng.choice(
        (b"[1.0]", b'{"reward": "1.0"}', b'{"reward": {"v": 1}}', b'"1.0"', b'{"reward": true}',
         b'{"reward": NaN}', b"null", b'{"reward": 1.0, "reward": "x"}')
    )  # fmt: skip
    (trial.path / "verifier" / "reward.json").write_bytes(text)


def _deep_result(depth: int) -> Mutation:
    def mutate(trial: _Trial, ctx: _Context) -> None:
        path = trial.path / "result.json"
        doc = _load(path)
        if isinstance(doc.get("agent_result"), dict):
            doc["agent_result"]["metadata"] = "__DEEP__"
        else:
            doc["metadata"] = "__DEEP__"
        path.write_bytes(_with_placeholders(doc, {"DEEP": _nested(depth, ctx.rng)}))

    return mutate


def _invalid_utf8_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    path.write_bytes(_insert_invalid_utf8(path.read_bytes(), ctx.rng))


def _utf16_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    path.write_bytes(_utf16(path.read_bytes(), ctx.rng))


def _utf8_bom_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())


def _empty_result(trial: _Trial, ctx: _Context) -> None:
    (trial.path / "result.json").write_bytes(b"")


def _missing_result(trial: _Trial, ctx: _Context) -> None:
    (trial.path / "result.json").unlink()


def _result_is_dir(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    data = path.read_bytes()
    path.unlink()
    path.mkdir()
    if ctx.rng.random() < 0.5:
        (path / "result.json").write_bytes(data)


def _reward_txt_is_dir(trial: _Trial, ctx: _Context) -> None:
    _no_result_reward(trial)
    path = trial.path / "verifier" / "reward.txt"
    _remove(path)
    path.mkdir()
    if ctx.rng.random() < 0.5:
        (path / "reward.txt").write_bytes(b"1.0\n")


def _symlink_reward_passwd(trial: _Trial, ctx: _Context) -> None:
    _no_result_reward(trial)
    path = trial.path / "verifier" / "reward.txt"
    _remove(path)
    path.symlink_to("/etc/passwd")


def _symlink_result_outside(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    path.unlink()
    target = ctx.outside_result
    if ctx.rng.random() < 0.5:
        path.symlink_to(target)
    else:
        path.symlink_to(os.path.relpath(target, path.parent))


def _symlink_result_dev_zero(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    path.unlink()
    path.symlink_to("/dev/zero")


def _symlink_loop_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    path.unlink()
    path.symlink_to(ctx.rng.choice(("result.json", "missing-result.json")))


def _fifo_reward_txt(trial: _Trial, ctx: _Context) -> None:
    _no_result_reward(trial)
    path = trial.path / "verifier" / "reward.txt"
    _remove(path)
    os.mkfifo(path)


def _nan_infinity_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    doc = _load(path)
    literals = {"NAN": b"NaN", "INF": b"Infinity", "NINF": b"-Infinity"}
    doc["verifier_result"] = {"rewards": {"reward": ctx.rng.choice(("__NAN__", "__INF__"))}}
    if isinstance(doc.get("agent_result"), dict):
        doc["agent_result"]["cost_usd"] = "__INF__"
        doc["agent_result"]["n_input_tokens"] = "__NINF__"
    path.write_bytes(_with_placeholders(doc, literals))


def _huge_number_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    doc = _load(path)
    doc["verifier_result"] = {"rewards": {"reward": "__BIG__"}}
    if isinstance(doc.get("agent_result"), dict):
        doc["agent_result"]["n_input_tokens"] = "__HUGEINT__"
    big = ctx.rng.choice((b"1e400", b"-1e400", b"1" + b"0" * 400 + b".5", b"4.9e-400"))
    path.write_bytes(_with_placeholders(doc, {"BIG": big, "HUGEINT": b"9" * 5000}))


def _duplicate_keys_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    data = path.read_bytes()
    head, rest = data[: data.index(b"{") + 1], data[data.index(b"{") + 1 :]
    variant = ctx.rng.randrange(3)
    if variant == 0:  # a first verifier_result that a last-wins parser ignores
        extra = b'\n  "verifier_result": {"rewards": {"reward": 1.0}},'
    elif variant == 1:
        extra = b'\n  "trial_name": "../../dup-trial-name",'
    else:
        extra = b'\n  "task_name": 42,'
    tail = b',\n  "verifier_result": {"rewards": {"reward": 0.0}}\n}\n'
    body = rest.rstrip()[:-1].rstrip()  # drop the closing brace
    path.write_bytes(head + extra + body + (tail if variant == 0 else b"\n}\n"))


def _lone_surrogate_result(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "result.json"
    doc = _load(path)
    doc["task_name"] = "__SURROGATE__"
    raw = ctx.rng.choice((b'"\\ud800task"', b'"task\\udfff"', b'"\\udc00\\ud800"'))
    path.write_bytes(_with_placeholders(doc, {"SURROGATE": raw}))


def _result_wrong_top_type(trial: _Trial, ctx: _Context) -> None:
    text = ctx.rng.choice((b"[]", b'"result"', b"null", b"42", b"[{}]", b"true"))
    (trial.path / "result.json").write_bytes(text)


def _empty_trial(trial: _Trial, ctx: _Context) -> None:
    for child in sorted(trial.path.iterdir()):
        _remove(child)


def _config_only_trial(trial: _Trial, ctx: _Context) -> None:
    for child in sorted(trial.path.iterdir()):
        if child.name != "config.json":
            _remove(child)


def _missing_agent(trial: _Trial, ctx: _Context) -> None:
    _remove(trial.path / "agent")


def _symlink_agent_outside(trial: _Trial, ctx: _Context) -> None:
    path = trial.path / "agent"
    _remove(path)
    if ctx.rng.random() < 0.5:
        path.symlink_to(ctx.outside_agent, target_is_directory=True)
    else:
        path.symlink_to(os.path.relpath(ctx.outside_agent, trial.path), target_is_directory=True)


# ---------------------------------------------------------------------------- ATIF trajectory


def _truncate_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    path.write_bytes(_truncate(path.read_bytes(), ctx.rng))


def _byte_flip_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    path.write_bytes(_flip_bytes(path.read_bytes(), ctx.rng))


def _edit_trajectory(edit: Callable[[dict[str, Any], random.Random], None]) -> Mutation:
    def mutate(trial: _Trial, ctx: _Context) -> None:
        path = _traj_path(trial)
        doc = _load(path)
        edit(doc, ctx.rng)
        path.write_bytes(_dump(doc))

    return mutate


def _message_42(doc: dict[str, Any], rng: random.Random) -> None:
    steps = [s for s in doc["steps"] if isinstance(s, dict)]
    rng.choice(steps)["message"] = rng.choice((42, 4.2, True, None, {"text": 42}))


def _content_numbers(doc: dict[str, Any], rng: random.Random) -> None:
    step = _pick_agent_step(doc, rng)
    results = (step.get("observation") or {}).get("results") or []
    if results and rng.random() < 0.5:
        rng.choice(results)["content"] = [1, 2, 3]
    else:
        step["message"] = [1, 2, 3]


def _steps_object(doc: dict[str, Any], rng: random.Random) -> None:
    doc["steps"] = rng.choice(({}, {"1": doc["steps"][0]}, "steps", 3))


def _tool_calls_not_list(doc: dict[str, Any], rng: random.Random) -> None:
    call = _pick_tool_call(doc, rng)
    for step in _agent_steps(doc):
        if call in (step.get("tool_calls") or []):
            step["tool_calls"] = rng.choice((call, "bash ls", 7, {"0": call}))
            return


def _arguments_number(doc: dict[str, Any], rng: random.Random) -> None:
    _pick_tool_call(doc, rng)["arguments"] = rng.choice((42, 3.5, -1))


def _deep_trajectory(depth: int) -> Mutation:
    def mutate(trial: _Trial, ctx: _Context) -> None:
        path = _traj_path(trial)
        doc = _load(path)
        if ctx.rng.random() < 0.5:
            _pick_tool_call(doc, ctx.rng)["arguments"] = "__DEEP__"
            deep = b'{"n":' * depth + b'"leaf"' + b"}" * depth
        else:
            doc["extra"] = "__DEEP__"
            deep = _nested(depth, ctx.rng)
        path.write_bytes(_with_placeholders(doc, {"DEEP": deep}))

    return mutate


def _huge_string(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    doc = _load(path)
    size = ctx.rng.randint(5, 20) * 1_000_000
    word = ctx.rng.choice(("the quick brown fox ", "lorem ipsum dolor ", "build ok; tests ok "))
    _pick_agent_step(doc, ctx.rng)["message"] = (word * (size // len(word) + 1))[:size]
    path.write_bytes(_dump(doc))


def _invalid_utf8_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    path.write_bytes(_insert_invalid_utf8(path.read_bytes(), ctx.rng))


def _utf16_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    path.write_bytes(_utf16(path.read_bytes(), ctx.rng))


def _utf8_bom_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())


def _empty_trajectory(trial: _Trial, ctx: _Context) -> None:
    _traj_path(trial).write_bytes(b"")


def _missing_trajectory(trial: _Trial, ctx: _Context) -> None:
    _traj_path(trial).unlink()


def _binary_trajectory(trial: _Trial, ctx: _Context) -> None:
    noise = bytes(ctx.rng.getrandbits(8) for _ in range(ctx.rng.randint(256, 4096)))
    _traj_path(trial).write_bytes(b"\x89FUZ\x00\x00\x01\x00" + noise)


def _trajectory_wrong_top_type(trial: _Trial, ctx: _Context) -> None:
    text = ctx.rng.choice((b"[]", b"null", b'"ATIF-v1.7"', b"42", b'[{"steps": []}]'))
    _traj_path(trial).write_bytes(text)


def _symlink_trajectory_outside(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    path.unlink()
    if ctx.rng.random() < 0.5:
        path.symlink_to(ctx.outside_trajectory)
    else:
        path.symlink_to(os.path.relpath(ctx.outside_trajectory, path.parent))


def _symlink_trajectory_dev_zero(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    path.unlink()
    path.symlink_to("/dev/zero")


def _symlink_loop_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    path.unlink()
    path.symlink_to(ctx.rng.choice(("trajectory.json", "gone.json", "../agent/trajectory.json")))


def _fifo_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    path.unlink()
    os.mkfifo(path)


def _add_subagent_ref(doc: dict[str, Any], rng: random.Random, target: str) -> None:
    step = _pick_agent_step(doc, rng)
    observation = step.get("observation")
    if not isinstance(observation, dict):
        observation = step["observation"] = {"results": []}
    if not isinstance(observation.get("results"), list):
        observation["results"] = []
    ref = {"session_id": "fuzz-subagent", "trajectory_path": target}
    observation["results"].append({"subagent_trajectory_ref": [ref]})


def _subagent_ref_escape(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    doc = _load(path)
    target = (
        ESCAPING_REF
        if ctx.rng.random() < 0.5
        else os.path.relpath(ctx.outside_sub, path.parent)  # ../../../../outside/sub.json
    )
    _add_subagent_ref(doc, ctx.rng, target)
    path.write_bytes(_dump(doc))


def _subagent_ref_etc_passwd(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    doc = _load(path)
    _add_subagent_ref(doc, ctx.rng, "/etc/passwd")
    path.write_bytes(_dump(doc))


def _subagent_ref_abs_outside(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    doc = _load(path)
    _add_subagent_ref(doc, ctx.rng, str(ctx.outside_sub))
    path.write_bytes(_dump(doc))


def _continuation_ref_escape(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    doc = _load(path)
    doc["continued_trajectory_ref"] = ctx.rng.choice(
        (
            ESCAPING_REF,
            "/etc/passwd",
            str(ctx.outside_cont),
            os.path.relpath(ctx.outside_cont, path.parent),
        )
    )
    path.write_bytes(_dump(doc))


def _nan_infinity_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    doc = _load(path)
    step = _pick_agent_step(doc, ctx.rng)
    step["metrics"] = {"prompt_tokens": "__INF__", "completion_tokens": 3, "cost_usd": "__NAN__"}
    if isinstance(doc.get("final_metrics"), dict):
        doc["final_metrics"]["total_cost_usd"] = "__NINF__"
    literals = {"NAN": b"NaN", "INF": b"Infinity", "NINF": b"-Infinity"}
    path.write_bytes(_with_placeholders(doc, literals))


def _duplicate_keys_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    data = path.read_bytes()
    at = data.index(b"{") + 1
    variant = ctx.rng.randrange(3)
    if variant == 0:  # empty steps first, the real ones after (last wins)
        path.write_bytes(data[:at] + b'\n  "steps": [],' + data[at:])
    elif variant == 1:  # real steps first, empty ones last
        body = data.rstrip()[:-1].rstrip()
        path.write_bytes(body + b',\n  "steps": []\n}\n')
    else:  # a step with two messages
        needle = b'"message": '
        hit = max(data.find(needle), at)
        path.write_bytes(data[:hit] + b'"message": "first of two", ' + data[hit:])


def _lone_surrogate_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    doc = _load(path)
    _pick_agent_step(doc, ctx.rng)["message"] = "__SURROGATE__"
    raw = ctx.rng.choice((b'"half \\ud83d of an emoji"', b'"\\udfff"', b'"a\\udc00b"'))
    path.write_bytes(_with_placeholders(doc, {"SURROGATE": raw}))


def _control_chars_trajectory(trial: _Trial, ctx: _Context) -> None:
    path = _traj_path(trial)
    doc = _load(path)
    step = _pick_agent_step(doc, ctx.rng)
    step["message"] = "nul\x00 bell\x07 esc\x1b[2J del\x7f sep\u2028\u2029 bom\ufeff end"
    path.write_bytes(_dump(doc))


# ---------------------------------------------------------------------------- native logs


def _truncate_native(trial: _Trial, ctx: _Context) -> None:
    path = trial.native_log
    path.write_bytes(_truncate(path.read_bytes(), ctx.rng))


def _byte_flip_native(trial: _Trial, ctx: _Context) -> None:
    path = trial.native_log
    path.write_bytes(_flip_bytes(path.read_bytes(), ctx.rng))


def _invalid_utf8_native(trial: _Trial, ctx: _Context) -> None:
    path = trial.native_log
    path.write_bytes(_insert_invalid_utf8(path.read_bytes(), ctx.rng))


def _wrong_type_native(trial: _Trial, ctx: _Context) -> None:
    path = trial.native_log
    lines = path.read_bytes().splitlines()
    events = [json.loads(line) for line in lines]
    at = ctx.rng.randrange(len(events))
    event = events[at]
    variant = ctx.rng.randrange(4)
    if variant == 0:
        events[at] = ctx.rng.choice(([], "event", 42, None))
    elif trial.fmt == "opencode-jsonl":
        if variant == 1:
            event["part"] = 42
        elif variant == 2 and isinstance(event.get("part"), dict):
            event["part"]["state"] = [1, 2, 3]
        else:
            event["timestamp"] = "yesterday"
    elif variant == 1:
        event["message"] = 42
    elif variant == 2 and isinstance(event.get("message"), dict):
        event["message"]["content"] = [1, 2, 3]
    else:
        event["type"] = ["assistant"]
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in events))


# ---------------------------------------------------------------------------- the kinds

ANY, ATIF, NATIVE = "any", "atif", "native"

# kind -> (which trials it fits, fixed count or None for an even share, the mutation)
KINDS: dict[str, tuple[str, int | None, Mutation]] = {
    # result.json / verifier / the trial folder
    "truncate_result": (ANY, None, _truncate_result),
    "byte_flip_result": (ANY, None, _byte_flip_result),
    "wrong_type_rewards": (ANY, None, _wrong_type_rewards),
    "reward_txt_garbage": (ANY, None, _reward_txt_garbage),
    "reward_json_weird": (ANY, None, _reward_json_weird),
    "deep_result_250": (ANY, None, _deep_result(250)),
    "deep_result_5000": (ANY, 4, _deep_result(5000)),
    "invalid_utf8_result": (ANY, None, _invalid_utf8_result),
    "utf16_result": (ANY, None, _utf16_result),
    "utf8_bom_result": (ANY, None, _utf8_bom_result),
    "empty_result": (ANY, None, _empty_result),
    "missing_result": (ANY, None, _missing_result),
    "result_is_dir": (ANY, None, _result_is_dir),
    "reward_txt_is_dir": (ANY, None, _reward_txt_is_dir),
    "symlink_reward_passwd": (ANY, None, _symlink_reward_passwd),
    "symlink_result_outside": (ANY, None, _symlink_result_outside),
    "symlink_result_dev_zero": (ANY, 3, _symlink_result_dev_zero),
    "symlink_loop_result": (ANY, None, _symlink_loop_result),
    "fifo_reward_txt": (ANY, 3, _fifo_reward_txt),
    "nan_infinity_result": (ANY, None, _nan_infinity_result),
    "huge_number_result": (ANY, None, _huge_number_result),
    "duplicate_keys_result": (ANY, None, _duplicate_keys_result),
    "lone_surrogate_result": (ANY, None, _lone_surrogate_result),
    "result_wrong_top_type": (ANY, None, _result_wrong_top_type),
    "empty_trial": (ANY, None, _empty_trial),
    "config_only_trial": (ANY, None, _config_only_trial),
    "missing_agent": (ANY, None, _missing_agent),
    "symlink_agent_outside": (ANY, None, _symlink_agent_outside),
    # ATIF trajectory.json
    "truncate_trajectory": (ATIF, None, _truncate_trajectory),
    "byte_flip_trajectory": (ATIF, None, _byte_flip_trajectory),
    "wrong_type_message": (ATIF, None, _edit_trajectory(_message_42)),
    "wrong_type_content": (ATIF, None, _edit_trajectory(_content_numbers)),
    "wrong_type_steps": (ATIF, None, _edit_trajectory(_steps_object)),
    "wrong_type_tool_calls": (ATIF, None, _edit_trajectory(_tool_calls_not_list)),
    "wrong_type_arguments": (ATIF, None, _edit_trajectory(_arguments_number)),
    "deep_trajectory_250": (ATIF, None, _deep_trajectory(250)),
    "deep_trajectory_5000": (ATIF, 4, _deep_trajectory(5000)),
    "huge_string": (ATIF, 3, _huge_string),
    "invalid_utf8_trajectory": (ATIF, None, _invalid_utf8_trajectory),
    "utf16_trajectory": (ATIF, None, _utf16_trajectory),
    "utf8_bom_trajectory": (ATIF, None, _utf8_bom_trajectory),
    "empty_trajectory": (ATIF, None, _empty_trajectory),
    "missing_trajectory": (ATIF, None, _missing_trajectory),
    "binary_trajectory": (ATIF, None, _binary_trajectory),
    "trajectory_wrong_top_type": (ATIF, None, _trajectory_wrong_top_type),
    "symlink_trajectory_outside": (ATIF, None, _symlink_trajectory_outside),
    "symlink_trajectory_dev_zero": (ATIF, 3, _symlink_trajectory_dev_zero),
    "symlink_loop_trajectory": (ATIF, None, _symlink_loop_trajectory),
    "fifo_trajectory": (ATIF, 3, _fifo_trajectory),
    "subagent_ref_escape": (ATIF, None, _subagent_ref_escape),
    "subagent_ref_etc_passwd": (ATIF, None, _subagent_ref_etc_passwd),
    "subagent_ref_abs_outside": (ATIF, None, _subagent_ref_abs_outside),
    "continuation_ref_escape": (ATIF, None, _continuation_ref_escape),
    "nan_infinity_trajectory": (ATIF, None, _nan_infinity_trajectory),
    "duplicate_keys_trajectory": (ATIF, None, _duplicate_keys_trajectory),
    "lone_surrogate_trajectory": (ATIF, None, _lone_surrogate_trajectory),
    "control_chars_trajectory": (ATIF, None, _control_chars_trajectory),
    # native agent logs (Claude Code session JSONL, OpenCode JSON lines)
    "truncate_native": (NATIVE, None, _truncate_native),
    "byte_flip_native": (NATIVE, None, _byte_flip_native),
    "invalid_utf8_native": (NATIVE, None, _invalid_utf8_native),
    "wrong_type_native": (NATIVE, None, _wrong_type_native),
}


# ---------------------------------------------------------------------------- building


def build_fuzz_corpus(root: Path, seed: int, trials: int = 1000) -> FuzzCorpus:
    """Write the corpus under `root` (jobs/, outside/); at least `trials` trial folders."""
    rng = random.Random(seed)
    jobs_dir, outside = root / "jobs", root / "outside"
    per_job = max(1, math.ceil(trials / BASE_JOBS))
    generate(SynthOptions(jobs_dir, BASE_JOBS, per_job, seed, 0.0), progress=io.StringIO())
    manifest = jobs_dir / MANIFEST
    rows = [json.loads(line) for line in manifest.read_bytes().splitlines()]
    manifest.rename(root / MANIFEST)  # not an input
    all_trials = [
        _Trial(r["job"], r["trial"], jobs_dir / r["job"] / r["trial"], r["format"], r["agent"])
        for r in rows
    ]
    all_trials.sort(key=lambda t: t.key)

    ctx = _Context(root, outside, rng)
    markers = _write_outside(ctx, all_trials)
    job_names, name_kinds, reserved = _odd_jobs(ctx, all_trials)
    mutations, counts = _assign(ctx, all_trials, reserved)
    by_key = {t.key: t for t in all_trials}
    for key, kind in sorted(mutations.items()):
        if kind != "clean":
            KINDS[kind][2](by_key[key], ctx)

    expected: dict[str, int] = {}
    job_dirs: dict[str, Path] = {}
    kinds_by_name: dict[str, str] = {}
    for folder in sorted(p for p in jobs_dir.iterdir() if p.is_dir()):
        name = job_names.get(folder.name, folder.name)
        assert name not in expected, f"two jobs named {name!r}"
        expected[name] = sum(1 for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
        job_dirs[name] = folder
        kinds_by_name[name] = name_kinds.get(folder.name, "synth")
    return FuzzCorpus(
        root=root,
        jobs_dir=jobs_dir,
        outside_dir=outside,
        markers=markers,
        expected_trials=expected,
        job_dirs=job_dirs,
        job_name_kinds=kinds_by_name,
        mutations=mutations,
        kind_counts=counts,
    )


def _write_outside(ctx: _Context, trials: list[_Trial]) -> tuple[str, ...]:
    """Marked copies of a real trial's files: valid enough that following a link reads them."""
    ctx.outside.mkdir()
    markers = [f"{MARKER_PREFIX}{ctx.rng.getrandbits(64):016x}" for _ in range(5)]
    source = next(t for t in trials if t.fmt == "atif" and t.agent == "claude-code")
    trajectory = _load(_traj_path(source))
    result = _load(source.path / "result.json")
    result["verifier_result"] = {"rewards": {"reward": 1.0}}
    ctx.outside_result.write_bytes(_dump(mark_strings(result, markers[0], frozenset())))
    ctx.outside_agent.mkdir()
    for path in sorted((source.path / "agent").rglob("*")):
        if path.is_file():
            target = ctx.outside_agent / path.relative_to(source.path / "agent")
            target.parent.mkdir(parents=True, exist_ok=True)
            marked = mark_strings(_load(path), markers[1], TRAJECTORY_KEEP)
            target.write_bytes(_dump(marked))
    ctx.outside_trajectory.write_bytes(_dump(mark_strings(trajectory, markers[2], TRAJECTORY_KEEP)))
    sub = dict(trajectory, session_id="fuzz-subagent")
    ctx.outside_sub.write_bytes(_dump(mark_strings(sub, markers[3], TRAJECTORY_KEEP)))
    ctx.outside_cont.write_bytes(_dump(mark_strings(trajectory, markers[4], TRAJECTORY_KEEP)))
    return tuple(markers)


def _odd_jobs(
    ctx: _Context, trials: list[_Trial]
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """Move a few trials into jobs with odd `job_name`s; one trial of each stays clean.

    Returns folder -> job name (when it is not the folder name), folder -> odd-name kind,
    and the keys of the trials kept clean.
    """
    jobs_dir = ctx.root / "jobs"
    base_config = _load(sorted(jobs_dir.glob("*/config.json"))[0])
    picked = ctx.rng.sample(range(len(trials)), TRIALS_PER_ODD_JOB * len(JOB_NAME_KINDS))
    names: dict[str, str] = {}
    kinds: dict[str, str] = {}
    reserved: set[str] = set()
    for index, (kind, job_name) in enumerate(JOB_NAME_KINDS.items()):
        folder_name = f"odd-{index:02d}-{kind.replace('_', '-')}"
        folder = jobs_dir / folder_name
        folder.mkdir()
        config = dict(base_config)
        if job_name is None:
            config.pop("job_name")
        else:
            config["job_name"] = job_name
            names[folder_name] = job_name
        (folder / "config.json").write_bytes(_dump(config))
        kinds[folder_name] = kind
        chosen = picked[index * TRIALS_PER_ODD_JOB : (index + 1) * TRIALS_PER_ODD_JOB]
        for n, at in enumerate(sorted(chosen)):
            trial = trials[at]
            destination = folder / trial.name
            trial.path.rename(destination)
            trial.job, trial.path = folder_name, destination
            if n == 0:
                reserved.add(trial.key)
    return names, kinds, reserved


def _assign(
    ctx: _Context, trials: list[_Trial], reserved: set[str]
) -> tuple[dict[str, str], Counter[str]]:
    """Kind per trial: fixed counts for the heavy kinds, an even share for the rest."""
    n_clean = max(len(reserved), round(len(trials) * CLEAN_SHARE))
    n_corrupt = len(trials) - n_clean
    fixed = sum(quota for _, quota, _ in KINDS.values() if quota is not None)
    flexible = [kind for kind, (_, quota, _) in KINDS.items() if quota is None]
    share, extra = divmod(n_corrupt - fixed, len(flexible))
    if share < 3:
        raise ValueError(f"{len(trials)} trials are too few for {len(KINDS)} mutation kinds")
    quotas = {
        kind: quota if quota is not None else share + (1 if kind in flexible[:extra] else 0)
        for kind, (_, quota, _) in KINDS.items()
    }
    free = [t for t in trials if t.key not in reserved]
    ctx.rng.shuffle(free)
    mutations = {t.key: "clean" for t in trials}
    counts: Counter[str] = Counter()
    for need in (NATIVE, ATIF, ANY):  # the narrowest pools first
        for kind, (fits, _, _) in KINDS.items():
            if fits != need:
                continue
            pool = [t for t in free if _fits(t, fits) and mutations[t.key] == "clean"]
            if len(pool) < quotas[kind]:
                raise ValueError(f"not enough trials for {kind}: {len(pool)} < {quotas[kind]}")
            for trial in pool[: quotas[kind]]:
                mutations[trial.key] = kind
            counts[kind] = quotas[kind]
    return mutations, counts


def _fits(trial: _Trial, fits: str) -> bool:
    if fits == ATIF:
        return trial.is_atif
    if fits == NATIVE:
        return not trial.is_atif
    return True
