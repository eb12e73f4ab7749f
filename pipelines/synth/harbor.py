"""Harbor's own files around a trial (formats.md §1): configs, results, rewards, errors.

`pick_outcome` decides what the verifier and the harness report for a run (rewards mostly
1 or 0, some fractional with a `reward.json`, some errored trials with `verifier_result:
null`, some empty `reward.txt`); the builders lay those facts out in Harbor's field order.
`JobTally` collects the job's `stats.evals` while trials stream past.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipelines.synth.common import AgentRun, iso_us
from pipelines.synth.scenario import Episode

__all__ = ["AgentSpec", "JobTally", "Outcome", "pick_outcome", "trial_config", "trial_result"]

DATASET = "synth-bugfix"
TRIALS_ROOT = "file:///harbor/jobs"


@dataclass(frozen=True, slots=True)
class AgentSpec:
    name: str
    version: str
    provider: str
    model: str

    @property
    def eval_key(self) -> str:
        return f"{self.name}__{self.model}__{DATASET}"


@dataclass(frozen=True, slots=True)
class Outcome:
    exception: str | None
    message: str
    reward: float | None  # what result.json reports; None = verifier_result null
    reward_txt: str | None  # None = no reward.txt
    reward_json: dict[str, Any] | None
    verifier_ran: bool


_NO_REWARD_ERRORS = (
    # (exception, cumulative probability, reward.txt, verifier ran)
    ("VerifierTimeoutError", 0.02, None, True),
    ("RewardFileEmptyError", 0.035, "", True),
    ("RewardFileNotFoundError", 0.045, None, True),
    ("CancelledError", 0.05, None, False),
    ("RuntimeError", 0.055, None, False),
)
_MESSAGES = {
    "VerifierTimeoutError": "Verifier timed out after 300.0 seconds",
    "RewardFileEmptyError": "Reward file is empty: /logs/verifier/reward.txt",
    "RewardFileNotFoundError": "No reward file at /logs/verifier/reward.txt or reward.json",
    "CancelledError": "",
    "RuntimeError": "docker compose up failed with exit status 1: network synth_default not found",
}


def pick_outcome(ep: Episode, agent: str, timeout: float, rng: random.Random) -> Outcome:
    cut = rng.random() if ep.final is None else 1.0
    if cut < 0.2:
        message = (
            f"Command failed (exit 1): {agent} run --task-file /task/instruction.md\n"
            "stderr: Error: the model API returned 529 (overloaded) three times"
        )
        return Outcome("NonZeroAgentExitCodeError", message, None, None, None, False)
    exception, message = None, ""
    if cut < 0.75:
        exception = "AgentTimeoutError"
        message = f"Agent execution timed out after {timeout:.1f} seconds"
    elif ep.final is not None:
        draw = rng.random()
        for name, limit, txt, ran in _NO_REWARD_ERRORS:
            if draw < limit:
                return Outcome(name, _MESSAGES[name], None, txt, None, ran)
    reward = 1.0 if rng.random() < ep.reward_probability else 0.0
    if rng.random() < 0.08:
        passed = rng.randint(1, ep.test_total - 1)
        reward = round(passed / ep.test_total, 4)
        detail: dict[str, Any] = {
            "reward": reward,
            "tests_passed": passed,
            "tests_total": ep.test_total,
            "summary": f"{passed}/{ep.test_total} checks passed",
        }
        return Outcome(exception, message, reward, str(reward), detail, True)
    text = f"{reward}\n" if rng.random() < 0.5 else str(reward)
    extra = {"reward": reward, "verifier": "tests"} if rng.random() < 0.05 else None
    return Outcome(exception, message, reward, text, extra, True)


def traceback_text(exception: str, message: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/opt/harbor/src/harbor/trial/trial.py", line 214, in run\n'
        "    await self._execute_agent()\n"
        '  File "/opt/harbor/src/harbor/trial/trial.py", line 388, in _execute_agent\n'
        "    raise " + exception + "(message)\n"
        f"harbor.trial.errors.{exception}: {message}\n"
    )


def _task_block(task_name: str) -> dict[str, Any]:
    return {
        "path": f"tasks/{task_name}",
        "git_url": None,
        "git_commit_id": None,
        "name": None,
        "ref": None,
        "overwrite": False,
        "download_dir": None,
        "source": DATASET,
    }


def agent_block(spec: AgentSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "import_path": None,
        "model_name": f"{spec.provider}/{spec.model}",
        "override_timeout_sec": None,
        "override_setup_timeout_sec": None,
        "max_timeout_sec": None,
        "kwargs": {},
        "env": {},
    }


ENVIRONMENT: dict[str, Any] = {
    "type": "docker",
    "import_path": None,
    "force_build": False,
    "delete": True,
    "override_cpus": None,
    "override_memory_mb": None,
    "override_storage_mb": None,
    "override_gpus": None,
    "env": {},
    "kwargs": {},
}
VERIFIER: dict[str, Any] = {
    "override_timeout_sec": None,
    "max_timeout_sec": None,
    "env": {},
    "disable": False,
}


def trial_config(
    task_name: str, trial_name: str, job_name: str, spec: AgentSpec, job_id: str
) -> dict[str, Any]:
    return {
        "task": _task_block(task_name),
        "trial_name": trial_name,
        "trials_dir": f"jobs/{job_name}",
        "timeout_multiplier": 1.0,
        "agent": agent_block(spec),
        "environment": ENVIRONMENT,
        "verifier": VERIFIER,
        "artifacts": [],
        "job_id": job_id,
    }


def job_config(
    job_name: str, specs: list[AgentSpec], task_names: list[str], concurrency: int
) -> dict[str, Any]:
    retry = {
        "max_retries": 0,
        "include_exceptions": None,
        "exclude_exceptions": ["AgentTimeoutError", "VerifierTimeoutError"],
        "wait_multiplier": 1.0,
        "min_wait_sec": 1.0,
        "max_wait_sec": 60.0,
    }
    return {
        "job_name": job_name,
        "jobs_dir": "jobs",
        "n_attempts": 1,
        "timeout_multiplier": 1.0,
        "debug": False,
        "n_concurrent_trials": concurrency,
        "quiet": False,
        "retry": retry,
        "environment": ENVIRONMENT,
        "verifier": VERIFIER,
        "metrics": [],
        "agents": [agent_block(s) for s in specs],
        "datasets": [],
        "tasks": [_task_block(n) for n in task_names],
        "artifacts": [],
    }


@dataclass(frozen=True, slots=True)
class Timeline:
    started: datetime
    env_done: datetime
    agent_setup_done: datetime
    agent_done: datetime
    verifier_done: datetime | None
    finished: datetime


def _span(start: datetime, end: datetime) -> dict[str, str]:
    return {"started_at": iso_us(start), "finished_at": iso_us(end)}


def trial_result(
    ids: tuple[str, str, str],
    config: dict[str, Any],
    spec: AgentSpec,
    run: AgentRun | None,
    outcome: Outcome,
    times: Timeline,
    checksum: str,
) -> dict[str, Any]:
    """`ids` = (trial id, task name, trial name)."""
    trial_id, task_name, trial_name = ids
    agent_result = None
    if run is not None:
        agent_result = {
            "n_input_tokens": run.input_tokens,
            "n_cache_tokens": run.cache_tokens,
            "n_output_tokens": run.output_tokens,
            "cost_usd": run.cost_usd,
            "rollout_details": None,
            "metadata": None,
        }
    exception_info = None
    if outcome.exception:
        exception_info = {
            "exception_type": outcome.exception,
            "exception_message": outcome.message,
            "exception_traceback": traceback_text(outcome.exception, outcome.message),
            "occurred_at": iso_us(times.verifier_done or times.agent_done),
        }
    verifier_result = None if outcome.reward is None else {"rewards": {"reward": outcome.reward}}
    return {
        "id": trial_id,
        "task_name": task_name,
        "trial_name": trial_name,
        "trial_uri": f"{TRIALS_ROOT}/{config['trials_dir'][5:]}/{trial_name}",
        "task_id": {"path": f"tasks/{task_name}"},
        "source": DATASET,
        "task_checksum": checksum,
        "config": config,
        "agent_info": {
            "name": spec.name,
            "version": spec.version,
            "model_info": {"name": spec.model, "provider": spec.provider},
        },
        "agent_result": agent_result,
        "verifier_result": verifier_result,
        "exception_info": exception_info,
        "started_at": iso_us(times.started),
        "finished_at": iso_us(times.finished),
        "environment_setup": _span(times.started, times.env_done),
        "agent_setup": _span(times.env_done, times.agent_setup_done),
        "agent_execution": _span(times.agent_setup_done, times.agent_done),
        "verifier": _span(times.agent_done, times.verifier_done) if times.verifier_done else None,
        "step_results": None,
    }


@dataclass
class _Eval:
    n_trials: int = 0
    n_errors: int = 0
    reward_sum: float = 0.0
    rewards: dict[str, list[str]] = field(default_factory=dict)
    exceptions: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class JobTally:
    """The job's `result.json` stats, filled one trial at a time."""

    evals: dict[str, _Eval] = field(default_factory=dict)
    errors: int = 0
    trials: int = 0

    def add(self, spec: AgentSpec, trial_name: str, outcome: Outcome) -> None:
        ev = self.evals.setdefault(spec.eval_key, _Eval())
        ev.n_trials += 1
        self.trials += 1
        if outcome.reward is not None:
            ev.reward_sum += outcome.reward
            ev.rewards.setdefault(str(outcome.reward), []).append(trial_name)
        if outcome.exception:
            ev.n_errors += 1
            self.errors += 1
            ev.exceptions.setdefault(outcome.exception, []).append(trial_name)

    def result(
        self, job_id: str, started: datetime, finished: datetime, legacy: bool
    ) -> dict[str, Any]:
        evals = {
            key: {
                "n_trials": ev.n_trials,
                "n_errors": ev.n_errors,
                "metrics": [{"reward": round(ev.reward_sum / ev.n_trials, 4)}],
                "pass_at_k": {},
                "reward_stats": {"reward": ev.rewards} if ev.rewards else {},
                "exception_stats": ev.exceptions,
            }
            for key, ev in self.evals.items()
        }
        stats: dict[str, Any]
        if legacy:
            stats = {"n_trials": self.trials, "n_errors": self.errors, "evals": evals}
        else:
            stats = {
                "n_completed_trials": self.trials,
                "n_errored_trials": self.errors,
                "n_running_trials": 0,
                "n_pending_trials": 0,
                "n_cancelled_trials": 0,
                "n_retries": 0,
                "evals": evals,
            }
        stamp = "%Y-%m-%dT%H:%M:%S.%f"
        return {
            "id": job_id,
            "started_at": started.strftime(stamp),
            "updated_at": finished.strftime(stamp),
            "finished_at": finished.strftime(stamp),
            "n_total_trials": self.trials,
            "stats": stats,
        }
