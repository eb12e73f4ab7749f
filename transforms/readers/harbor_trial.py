"""One Harbor trial folder (formats.md §1) -> one bundle: rewards, metadata, usage, records.

A trial never raises for bad content: a corrupt `result.json` or trajectory, a missing agent
log or an unreadable reward becomes a reason in the bundle's `warnings` (with `records: []`
when nothing usable is left), so one broken trial cannot stop a job. An empty or
config-only trial folder is such a bundle too.

The folder is untrusted: every file is opened through one `TrialFiles` rooted at it
(`confined.py`). A `result.json` or trajectory that leaves the trial, or is not a regular
file, is refused like a corrupt one; an optional file (verifier rewards, native logs) that
does is treated as absent, with a warning naming it.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transforms.readers.atif import records_from_atif
from transforms.readers.atif_files import load_object
from transforms.readers.bundle import Bundle, ReaderError, layout_instance_id, new_bundle
from transforms.readers.confined import (
    DEFAULT_LIMITS,
    FileMissing,
    ReadLimits,
    TrialFiles,
    child_path,
)
from transforms.readers.context import NativeLogReader, NativeRecords, ReadContext
from transforms.readers.im_builder import date_of
from transforms.readers.known_formats import describe_agent_logs
from transforms.readers.task_instruction import task_instruction

if TYPE_CHECKING:  # each native module's reader satisfies the protocol
    from transforms.readers import (
        claude_code,
        codex,
        gemini_cli,
        opencode,
        openhands,
        swe_agent,
        terminus_episodes,
    )

    _NATIVE_READERS: tuple[NativeLogReader, ...] = (
        claude_code.records_from_agent_dir,
        codex.records_from_agent_dir,
        gemini_cli.records_from_agent_dir,
        opencode.records_from_agent_dir,
        openhands.records_from_agent_dir,
        swe_agent.records_from_agent_dir,
        terminus_episodes.records_from_agent_dir,
    )

__all__ = ["NATIVE_LOG_MODULES", "read_trial", "trial_rewards"]

# Tried in this order when a trial has no ATIF trajectory; each module provides a
# `NativeLogReader` named `records_from_agent_dir` (see `context.py`).
NATIVE_LOG_MODULES = (
    "claude_code",
    "codex",
    "gemini_cli",
    "opencode",
    "openhands",
    "swe_agent",
    "terminus_episodes",
)
# The bundle format of a trial read from each module's logs (`harbor-<agent>`).
_NATIVE_FORMATS = {"swe_agent": "mini-swe-agent"}
USAGE_KEYS = ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd")
PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")
EMPTY_TRIAL = "empty trial folder: no result.json, agent/ or verifier/"

Records = list[dict[str, Any]]


def read_trial(
    trial_dir: str | Path,
    job: str | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
    files: TrialFiles | None = None,
) -> Bundle:
    """The bundle of one trial; `job` is the Harbor job name (None when unknown). `files`, a
    `TrialFiles` rooted at `trial_dir` with no pending warnings, is used when given.
    Paths inside the trial are built as strings (`child_path`), not parsed by pathlib."""
    path = Path(trial_dir)
    source, name = str(path), path.name
    files = files or TrialFiles(path, limits)
    warnings: list[str] = []
    try:
        result = _load_object(files, child_path(source, "result.json"), "result.json", warnings)
    except ReaderError as exc:
        instance_id = layout_instance_id(name)
        return new_bundle(instance_id, source, "harbor", [], job=job, warnings=[str(exc)])
    if result is None:
        agent_or_verifier = files.is_dir(child_path(source, "agent")) or files.is_dir(
            child_path(source, "verifier")
        )
        if not agent_or_verifier:
            return _not_a_trial(files, path, job)
        warnings.append("result.json missing: no trial result (rewards from verifier/ only)")
        result = {}
    config = _config(files, source, result)
    instance_id = layout_instance_id(name)  # `trial_name` is metadata, not identity
    rewards, reward_source = trial_rewards(result, files, warnings)
    agent = _agent(result, config)
    metadata = _metadata(result, config, job, agent, rewards, reward_source)
    usage = _usage(result)
    records, log_warnings, log_format = _agent_records(
        files, source, instance_id, agent, {**metadata, "warnings": list(warnings)}, usage
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
        read_files=files.read_files,
    )


def _not_a_trial(files: TrialFiles, trial_dir: Path, job: str | None) -> Bundle:
    """The bundle of a trial folder with no result.json, agent/ or verifier/: the reason."""
    entries = [p.name for p in files.list_dir(trial_dir)]
    refused = files.take_warnings()  # e.g. agent/ linked out of the trial: that is the reason
    if not entries:
        reason = EMPTY_TRIAL
    else:
        shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
        reason = f"not a usable trial folder: no result.json, agent/ or verifier/ ({shown})"
    instance_id = layout_instance_id(trial_dir.name)
    warnings = [*refused, reason, *files.take_warnings()]
    return new_bundle(instance_id, str(trial_dir), "harbor", [], job=job, warnings=warnings)


def trial_rewards(
    result: Mapping[str, Any], files: TrialFiles, warnings: list[str]
) -> tuple[dict[str, float] | None, str | None]:
    """(rewards, source): result.json's verifier_result, else reward.json, else reward.txt.

    `files` is rooted at the trial; reward files it refuses are absent (with a warning).
    """
    try:
        return _rewards(result, child_path(str(files.root), "verifier"), files, warnings)
    finally:
        warnings.extend(files.take_warnings())


def _rewards(
    result: Mapping[str, Any], verifier_dir: str, files: TrialFiles, warnings: list[str]
) -> tuple[dict[str, float] | None, str | None]:
    verifier_result = result.get("verifier_result")
    if isinstance(verifier_result, Mapping) and isinstance(verifier_result.get("rewards"), Mapping):
        rewards = _numeric(verifier_result["rewards"], "result.json verifier_result", warnings)
        if rewards:
            return rewards, "result.json"
    reward_json = child_path(verifier_dir, "reward.json")
    if files.is_file(reward_json):
        try:
            data = _load_object(files, reward_json, "verifier/reward.json", warnings)
        except ReaderError as exc:
            warnings.append(str(exc))
            data = None
        rewards = _numeric(data or {}, "verifier/reward.json", warnings)
        if rewards:
            return rewards, "reward.json"
    reward_txt = child_path(verifier_dir, "reward.txt")
    if files.is_file(reward_txt):
        try:
            text = files.read_text(reward_txt).strip()
        except ReaderError as exc:
            warnings.append(str(exc))
            return None, None
        value = _float(text)
        if not text:
            warnings.append("verifier/reward.txt is empty: no reward")
        elif value is None:
            warnings.append(f"verifier/reward.txt is not a decimal number: {text[:40]!r}")
        elif (problem := _range_problem(value)) is not None:
            warnings.append(f"verifier/reward.txt: {problem}: no reward")
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
        problem = _range_problem(float(number))
        if problem is not None:
            warnings.append(f"{where}: reward key {key!r} dropped: {problem}")
            continue
        rewards[str(key)] = float(number)
    return rewards


# A plain decimal number, as a verifier writes one: no `_` separators, `nan`, `inf` or hex
# (Python's float() would take `1_0` as 10.0).
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _float(text: str) -> float | None:
    if not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _range_problem(value: float) -> str | None:
    """Why a reward is not one (Harbor's verifiers give a value in [0, 1]), or None."""
    if 0.0 <= value <= 1.0:
        return None
    return f"{value!r} is outside [0, 1]"


def _load_object(
    files: TrialFiles, path: str, shown: str, warnings: list[str] | None = None
) -> dict[str, Any] | None:
    """A JSON object from `path`; None when the file is absent; ReaderError when corrupt,
    refused (outside the trial, not a regular file, over the size cap) or not an object.
    With `warnings`, NaN / Infinity values are read as null, warned (`load_object`)."""
    try:
        return load_object(files, path, shown, warnings)
    except FileMissing:
        return None


def _config(files: TrialFiles, trial_dir: str, result: Mapping[str, Any]) -> Mapping[str, Any]:
    """The trial config: a copy lives in result.json; config.json is the fallback."""
    config = result.get("config")
    if isinstance(config, Mapping):
        return config
    try:
        return _load_object(files, child_path(trial_dir, "config.json"), "config.json") or {}
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
    files: TrialFiles,
    trial_dir: str,
    instance_id: str,
    agent: dict[str, Any],
    metadata: dict[str, Any],
    usage: dict[str, Any],
) -> tuple[Records, list[str], str]:
    """(records, warnings, bundle format): ATIF first, then the native log readers."""
    agent_dir = child_path(trial_dir, "agent")
    warnings: list[str] = []
    if not files.is_dir(agent_dir):
        warnings.extend(files.take_warnings())
        warnings.append(f"no agent trajectory found in {trial_dir}/agent")
        return [], warnings, "harbor"
    found_instruction = task_instruction(files, agent_dir)
    instruction = found_instruction[0] if found_instruction else None
    trajectory = child_path(agent_dir, "trajectory.json")
    if files.is_file(trajectory):
        try:
            started = metadata.get("started_at")
            records, atif_warnings = records_from_atif(
                trajectory,
                files,
                instance_id,
                metadata,
                usage,
                agent=agent,
                query_source=str(metadata.get("source") or "harbor"),
                date=date_of(started) if started else None,
                prompt=instruction,
            )
        except ReaderError as exc:
            warnings.append(str(exc))
        else:
            return records, atif_warnings, "harbor-atif"
    warnings.extend(files.take_warnings())
    native_dir = Path(agent_dir)  # the native readers take a Path
    for name in NATIVE_LOG_MODULES:
        ctx = ReadContext(files, instance_id, dict(agent), dict(metadata), dict(usage), instruction)
        found = _native_records(name, ctx, native_dir)
        warnings.extend(files.take_warnings())
        if isinstance(found, str):
            warnings.append(found)
        elif found is not None:
            records, native_warnings = found
            agent_format = _NATIVE_FORMATS.get(name, name.replace("_", "-"))
            return records, [*warnings, *native_warnings], f"harbor-{agent_format}"
    described = describe_agent_logs(files, native_dir)
    warnings.extend(files.take_warnings())
    if described is not None:
        warnings.append(f"no agent log trajcurate reads in {trial_dir}/agent: it holds {described}")
    elif not warnings:
        warnings.append(f"no agent trajectory found in {trial_dir}/agent")
    return [], warnings, "harbor"


def _native_records(
    module_name: str, ctx: ReadContext, agent_dir: Path
) -> NativeRecords | str | None:
    """The module's records, None when it finds no logs of its kind, or a reason."""
    module = importlib.import_module(f"transforms.readers.{module_name}")
    reader: NativeLogReader = module.records_from_agent_dir
    try:
        return reader(ctx, agent_dir)
    except ReaderError as exc:
        return f"agent logs ({module_name}) unusable: {exc}"
