"""One Harbor trial folder (formats.md §1) -> one bundle: rewards, metadata, usage, records.

A trial never raises for bad content: a corrupt `result.json` or trajectory, a missing agent
log or an unreadable reward becomes a reason in the bundle's `warnings` (with `records: []`
when nothing usable is left), so one broken trial cannot stop a job.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from transforms.readers.atif import records_from_atif
from transforms.readers.atif_files import load_object
from transforms.readers.bundle import Bundle, ReaderError, new_bundle
from transforms.readers.im_builder import date_of

__all__ = ["NATIVE_LOG_MODULES", "read_trial", "trial_rewards"]

# Tried in this order when a trial has no ATIF trajectory; each module provides
# `records_from_agent_dir(agent_dir, instance_id, agent, metadata, usage)`.
NATIVE_LOG_MODULES = ("claude_code", "opencode", "openhands", "terminus_episodes")
USAGE_KEYS = ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd")
PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")

Records = list[dict[str, Any]]


def read_trial(trial_dir: Path, job: str | None = None) -> Bundle:
    """The bundle of one trial; `job` is the Harbor job name (None when unknown)."""
    source = str(trial_dir)
    warnings: list[str] = []
    try:
        result = _load_object(trial_dir / "result.json", "result.json")
    except ReaderError as exc:
        return new_bundle(trial_dir.name, source, "harbor", [], job=job, warnings=[str(exc)])
    if result is None:
        warnings.append("result.json missing: no trial result (rewards from verifier/ only)")
        result = {}
    config = _config(trial_dir, result)
    instance_id = str(result.get("trial_name") or config.get("trial_name") or trial_dir.name)
    rewards, reward_source = trial_rewards(result, trial_dir / "verifier", warnings)
    agent = _agent(result, config)
    metadata = _metadata(result, config, job, agent, rewards, reward_source)
    usage = _usage(result)
    records, log_warnings, log_format = _agent_records(
        trial_dir, instance_id, agent, {**metadata, "warnings": list(warnings)}, usage
    )
    # with no records, the reason (no log, corrupt trajectory) leads: it is why the trial fails
    warnings = [*warnings, *log_warnings] if records else [*log_warnings, *warnings]
    if records:
        unique_info = records[0]["meta_info"]["unique_info"]
        metadata, usage = unique_info["_instance_metadata"], unique_info["_usage"]
    else:
        metadata["warnings"] = list(warnings)
    return new_bundle(
        instance_id,
        source,
        log_format,
        records,
        job=job,
        rewards=rewards,
        reward_source=reward_source,
        metadata=metadata,
        usage=usage,
        warnings=warnings,
    )


def trial_rewards(
    result: Mapping[str, Any], verifier_dir: Path, warnings: list[str]
) -> tuple[dict[str, float] | None, str | None]:
    """(rewards, source): result.json's verifier_result, else reward.json, else reward.txt."""
    verifier_result = result.get("verifier_result")
    if isinstance(verifier_result, Mapping) and isinstance(verifier_result.get("rewards"), Mapping):
        rewards = _numeric(verifier_result["rewards"], "result.json verifier_result", warnings)
        if rewards:
            return rewards, "result.json"
    reward_json = verifier_dir / "reward.json"
    if reward_json.is_file():
        try:
            data = _load_object(reward_json, "verifier/reward.json")
        except ReaderError as exc:
            warnings.append(str(exc))
            data = None
        rewards = _numeric(data or {}, "verifier/reward.json", warnings)
        if rewards:
            return rewards, "reward.json"
    reward_txt = verifier_dir / "reward.txt"
    if reward_txt.is_file():
        text = reward_txt.read_text(encoding="utf-8", errors="replace").strip()
        value = _float(text)
        if not text:
            warnings.append("verifier/reward.txt is empty: no reward")
        elif value is None:
            warnings.append(f"verifier/reward.txt is not a number: {text[:40]!r}")
        else:
            return {"reward": value}, "reward.txt"
    return None, None


def _numeric(raw: Mapping[str, Any], where: str, warnings: list[str]) -> dict[str, float]:
    rewards: dict[str, float] = {}
    for key, value in raw.items():
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if number is None or not math.isfinite(number):
            warnings.append(f"{where}: non-numeric reward key {key!r} dropped")
            continue
        rewards[str(key)] = float(number)
    return rewards


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _load_object(path: Path, shown: str) -> dict[str, Any] | None:
    """A JSON object from `path`; None when the file is absent; ReaderError when corrupt."""
    if not path.exists():
        return None
    return load_object(path, shown)


def _config(trial_dir: Path, result: Mapping[str, Any]) -> Mapping[str, Any]:
    """The trial config: a copy lives in result.json; config.json is the fallback."""
    config = result.get("config")
    if isinstance(config, Mapping):
        return config
    try:
        return _load_object(trial_dir / "config.json", "config.json") or {}
    except ReaderError:
        return {}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _agent(result: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    info = _mapping(result.get("agent_info"))
    configured = _mapping(config.get("agent"))
    return {
        "name": info.get("name") or configured.get("name"),
        "version": info.get("version"),
        "model": _mapping(info.get("model_info")).get("name") or configured.get("model_name"),
    }


def _metadata(
    result: Mapping[str, Any],
    config: Mapping[str, Any],
    job: str | None,
    agent: dict[str, Any],
    rewards: dict[str, float] | None,
    reward_source: str | None,
) -> dict[str, Any]:
    exception = _mapping(result.get("exception_info"))
    timings = {}
    for phase in PHASES:
        span = _mapping(result.get(phase))
        if span:
            timings[phase] = {
                "started_at": span.get("started_at"),
                "finished_at": span.get("finished_at"),
            }
    return {
        "task_name": result.get("task_name"),
        "trial_name": result.get("trial_name") or config.get("trial_name"),
        "job": job,
        "agent": agent,
        "exception_type": exception.get("exception_type"),
        "exception_message": exception.get("exception_message"),
        "started_at": result.get("started_at"),
        "finished_at": result.get("finished_at"),
        "timings": timings,
        "source": result.get("source"),
        "task_checksum": result.get("task_checksum"),
        "rewards": rewards,
        "reward_source": reward_source,
    }


def _usage(result: Mapping[str, Any]) -> dict[str, Any]:
    agent_result = _mapping(result.get("agent_result"))
    return {k: agent_result[k] for k in USAGE_KEYS if agent_result.get(k) is not None}


def _agent_records(
    trial_dir: Path,
    instance_id: str,
    agent: dict[str, Any],
    metadata: dict[str, Any],
    usage: dict[str, Any],
) -> tuple[Records, list[str], str]:
    """(records, warnings, bundle format): ATIF first, then the native log readers."""
    agent_dir = trial_dir / "agent"
    warnings: list[str] = []
    trajectory = agent_dir / "trajectory.json"
    if trajectory.is_file() or trajectory.is_symlink():
        try:
            records, atif_warnings = records_from_atif(
                trajectory,
                trial_dir,
                instance_id,
                metadata,
                usage,
                agent=agent,
                query_source=str(metadata.get("source") or "harbor"),
                date=date_of(started) if (started := metadata.get("started_at")) else None,
            )
        except ReaderError as exc:
            warnings.append(str(exc))
        else:
            return records, atif_warnings, "harbor-atif"
    if agent_dir.is_dir():
        for name in NATIVE_LOG_MODULES:
            found = _native_records(name, agent_dir, instance_id, agent, metadata, usage)
            if isinstance(found, str):
                warnings.append(found)
            elif found is not None:
                records, native_warnings = found
                return records, [*warnings, *native_warnings], f"harbor-{name.replace('_', '-')}"
    if not warnings:
        warnings.append(f"no agent trajectory found in {trial_dir}/agent")
    return [], warnings, "harbor"


def _native_records(
    module_name: str,
    agent_dir: Path,
    instance_id: str,
    agent: dict[str, Any],
    metadata: dict[str, Any],
    usage: dict[str, Any],
) -> tuple[Records, list[str]] | str | None:
    """The module's records, None when it finds no logs of its kind, or a reason."""
    module = importlib.import_module(f"transforms.readers.{module_name}")
    reader = module.records_from_agent_dir
    try:
        found: tuple[Records, list[str]] | None = reader(
            agent_dir, instance_id, agent, dict(metadata), dict(usage)
        )
    except ReaderError as exc:
        return f"agent logs ({module_name}) unusable: {exc}"
    return found
