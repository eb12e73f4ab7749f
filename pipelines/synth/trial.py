"""One synthetic Harbor trial: pick a task, an agent and a run profile, render every file.

`make_trial` is pure: it returns the trial's files as bytes (paths relative to the trial
folder) plus what the summary and the manifest need; `generate.py` writes them.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pipelines.synth.atif import claude_code_atif, openhands_atif
from pipelines.synth.common import (
    AgentFiles,
    AgentRun,
    Clock,
    Model,
    alnum,
    harbor_json,
    json_bytes,
    new_uuid,
)
from pipelines.synth.corrupt import ATIF_ONLY, BAD_KINDS, corrupt
from pipelines.synth.harbor import (
    AgentSpec,
    Outcome,
    Timeline,
    pick_outcome,
    trial_config,
    trial_result,
)
from pipelines.synth.languages import LANGUAGES, TestRun
from pipelines.synth.native import claude_code_native, opencode_native
from pipelines.synth.scenario import Episode, build_episode, pick_profile
from pipelines.synth.templates import TASKS
from pipelines.synth.terminus import terminus_atif

__all__ = ["AGENT_SPECS", "AGENT_WEIGHTS", "Trial", "make_trial", "trial_name_for"]

AGENT_SPECS = (
    AgentSpec("claude-code", "2.1.12", "anthropic", "claude-sonnet-4-5"),
    AgentSpec("claude-code", "2.0.76", "anthropic", "claude-opus-4-6"),
    AgentSpec("terminus-2", "2.0.0", "openai", "gpt-4.1"),
    AgentSpec("terminus-2", "2.0.0", "openai", "gpt-5-mini"),
    AgentSpec("openhands", "1.1.0", "openai", "gpt-5"),
    AgentSpec("openhands", "1.0.3", "anthropic", "claude-sonnet-4-5"),
    AgentSpec("opencode", "0.15.4", "anthropic", "claude-sonnet-4-5"),
    AgentSpec("opencode", "0.15.4", "openai", "gpt-5"),
)
AGENT_WEIGHTS = {"claude-code": 35, "terminus-2": 25, "openhands": 20, "opencode": 20}
# USD per million tokens: input, output, cached input.
_PRICES = {
    "claude-sonnet-4-5": (3.0, 15.0, 0.3),
    "claude-opus-4-6": (5.0, 25.0, 0.5),
    "gpt-4.1": (2.0, 8.0, 0.5),
    "gpt-5-mini": (0.25, 2.0, 0.025),
    "gpt-5": (1.25, 10.0, 0.125),
}
_TIMEOUTS = (600.0, 900.0, 1200.0, 1800.0, 3600.0)


@dataclass(frozen=True, slots=True)
class Trial:
    name: str
    files: list[tuple[str, bytes]]  # relative to the trial folder
    finished: datetime
    spec: AgentSpec
    format: str
    profile: str
    outcome: Outcome
    bad: str | None

    def manifest_row(self, job: str) -> dict[str, Any]:
        return {
            "job": job,
            "trial": self.name,
            "agent": self.spec.name,
            "model": self.spec.model,
            "format": self.format,
            "profile": self.profile,
            "reward": self.outcome.reward,
            "exception": self.outcome.exception,
            "bad": self.bad,
        }


def trial_name_for(task_name: str, suffix: str) -> str:
    """Harbor's rule: the task name's first 32 characters, trailing -/_ stripped, + __suffix."""
    return f"{task_name[:32].rstrip('-_')}__{suffix}"


def _render(ep: Episode, spec: AgentSpec, clock: Clock, rng: random.Random) -> AgentRun:
    model = Model(spec.provider, spec.model, *_PRICES[spec.model])
    if spec.name == "claude-code":
        if rng.random() < 0.25:
            return claude_code_native(ep, model, spec.version, clock, rng)
        schema = rng.choice(("ATIF-v1.6", "ATIF-v1.7", "ATIF-v1.7"))
        return claude_code_atif(ep, model, spec.version, schema, clock, rng)
    if spec.name == "terminus-2":
        variant = rng.choices(("plain", "summary", "cont"), weights=(65, 17, 18))[0]
        schema = rng.choice(("ATIF-v1.6", "ATIF-v1.7"))
        return terminus_atif(ep, model, schema, clock, rng, variant)
    if spec.name == "openhands":
        schema = rng.choice(("ATIF-v1.5", "ATIF-v1.6"))
        return openhands_atif(ep, model, spec.version, schema, clock, rng)
    return opencode_native(ep, model, spec.version, clock, rng)


def _seconds(rng: random.Random, low: float, high: float) -> timedelta:
    return timedelta(milliseconds=int(rng.uniform(low, high) * 1000))


def _agent_files(
    run: AgentRun, bad: str | None, rng: random.Random
) -> tuple[AgentFiles | None, str | None]:
    if bad is None:
        return run.files, None
    if bad in ATIF_ONLY and not isinstance(run.files[0][1], dict):
        bad = rng.choice([k for k in BAD_KINDS if k not in ATIF_ONLY])
    return corrupt(bad, run.files, rng), bad


def _verifier_files(ep: Episode, outcome: Outcome, rng: random.Random) -> list[tuple[str, bytes]]:
    if not outcome.verifier_ran:
        return []
    files: list[tuple[str, bytes]] = []
    if outcome.reward_txt is not None:
        files.append(("verifier/reward.txt", outcome.reward_txt.encode()))
    if outcome.reward_json is not None:
        files.append(("verifier/reward.json", json.dumps(outcome.reward_json, indent=2).encode()))
    if outcome.reward is not None:
        failed = 0 if outcome.reward == 1.0 else rng.randint(1, min(3, ep.test_total - 1))
        run = TestRun(ep.test_total, failed, round(rng.uniform(0.05, 3.0), 2))
        stdout = LANGUAGES[ep.task.lang].output(ep.task, run)
        files.append(("verifier/test-stdout.txt", stdout.encode()))
    return files


def make_trial(
    job: tuple[str, str, list[AgentSpec]],
    start: datetime,
    bad: str | None,
    taken: set[str],
    rng: random.Random,
) -> Trial:
    """`job` = (job name, job id, agent specs); `taken` holds the job's trial names so far."""
    job_name, job_id, specs = job
    task = rng.choice(TASKS)
    spec = rng.choices(specs, weights=[AGENT_WEIGHTS[s.name] for s in specs])[0]
    profile = pick_profile(rng)
    ep = build_episode(task, profile, rng, delegate_ok=spec.name == "claude-code")
    name = trial_name_for(task.name, alnum(rng, 7))
    while name in taken:
        name = trial_name_for(task.name, alnum(rng, 7))
    env_done = start + _seconds(rng, 4, 40)
    setup_done = env_done + _seconds(rng, 8, 120)
    run = _render(ep, spec, Clock(setup_done, rng), rng)
    elapsed = (run.end - setup_done).total_seconds()
    timeout = next((t for t in _TIMEOUTS if t > elapsed + 1), elapsed + 60)
    outcome = pick_outcome(ep, spec.name, timeout, rng)
    if outcome.exception == "AgentTimeoutError":
        agent_done = setup_done + timedelta(seconds=timeout)
    else:
        agent_done = run.end + _seconds(rng, 0.5, 3)
    verifier_done = None
    if outcome.verifier_ran:
        long = outcome.exception == "VerifierTimeoutError"
        verifier_done = agent_done + (timedelta(seconds=300) if long else _seconds(rng, 2, 60))
    finished = (verifier_done or agent_done) + _seconds(rng, 0.2, 3)
    times = Timeline(start, env_done, setup_done, agent_done, verifier_done, finished)
    config = trial_config(task.name, name, job_name, spec, job_id)
    checksum = hashlib.sha256((task.name + task.source).encode()).hexdigest()
    ids = (new_uuid(rng), task.name, name)
    result = trial_result(ids, config, spec, run, outcome, times, checksum)
    files: list[tuple[str, bytes]] = [
        ("config.json", harbor_json(config)),
        ("result.json", harbor_json(result)),
    ]
    agent_files, bad = _agent_files(run, bad, rng)
    for path, content in agent_files or []:
        data = content if isinstance(content, bytes) else json_bytes(content)
        files.append((f"agent/{path}", data))
    files.extend(_verifier_files(ep, outcome, rng))
    if outcome.exception:
        files.append(("exception.txt", result["exception_info"]["exception_traceback"].encode()))
    return Trial(name, files, finished, spec, run.format, profile, outcome, bad)
