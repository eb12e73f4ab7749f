"""Harbor reader: discovery, rewards, metadata, agent logs, and failures confined to a trial."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import orjson
import pytest
from reader_checks import assert_valid_records

from transforms.readers import harbor_trial
from transforms.readers.bundle import Bundle, ReaderError
from transforms.readers.confined import DEFAULT_LIMITS as LIMITS
from transforms.readers.confined import ReadLimits, TrialFiles
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.harbor import read
from transforms.readers.harbor_trial import read_trial, trial_rewards
from transforms.readers.im_builder import build_im_record

COMPOSED = Path("data/composed/jobs/2026-06-16__12-00-00")
REAL_JOBS = Path("data/real/harbor-jobs")
# the composed job, in sorted trial order:
# trial -> (reward, agent scaffold, main records, subagent records)
COMPOSED_TRIALS = {
    "hello-world__69aUCrP": (1.0, "openhands", 1, 0),
    "hello-world__R8do6e5": (1.0, "terminus2", 1, 0),  # linear history + cont-1
    "hello-world__RMHtDns": (0.0, "terminus2", 1, 0),  # AgentTimeoutError, empty reward.txt
    "hello-world__dxALUBc": (1.0, "terminus2", 1, 1),  # summarisation subagent by file
    "maas-controller-conflict-detecti__j56vc8R": (1.0, "claudecode", 1, 0),
    "maas-controller-provider-refacto__dV5ve9G": (0.0, "claudecode", 1, 0),
}


def _kinds(bundle: Bundle) -> tuple[int, int]:
    kinds = [r["meta_info"]["unique_info"]["_agent_type"] for r in bundle["records"]]
    return kinds.count("main"), kinds.count("subagent")


@pytest.fixture(scope="module")
def composed(shared_dir: Path) -> list[Bundle]:
    return list(read(shared_dir / COMPOSED))


def test_composed_job_gives_one_bundle_per_trial_in_sorted_order(
    shared_dir: Path, composed: list[Bundle]
) -> None:
    on_disk = sorted(p.name for p in (shared_dir / COMPOSED).iterdir() if p.is_dir())
    assert [b["instance_id"] for b in composed] == on_disk == list(COMPOSED_TRIALS)
    for bundle, (reward, scaffold, mains, subagents) in zip(
        composed, COMPOSED_TRIALS.values(), strict=True
    ):
        assert bundle["rewards"] == {"reward": reward}
        assert bundle["reward_source"] == "result.json"
        assert bundle["job"] == "2026-06-16__12-00-00"
        assert bundle["format"] == "harbor-atif"
        assert _kinds(bundle) == (mains, subagents)
        assert bundle["metadata"]["scaffold"] == scaffold
        assert_valid_records(bundle["records"])
        for record in bundle["records"]:
            assert record["meta_info"]["unique_info"]["_instance_id"] == bundle["instance_id"]
        orjson.dumps(bundle)


def test_timeout_trial_keeps_result_json_reward_and_the_exception(composed: list[Bundle]) -> None:
    # result.json is the source of truth (formats.md §1): its reward 0.0 wins over the
    # empty verifier/reward.txt, which is therefore never read
    timeout = composed[2]
    assert timeout["instance_id"] == "hello-world__RMHtDns"
    assert timeout["rewards"] == {"reward": 0.0}
    metadata = timeout["metadata"]
    assert metadata["exception_type"] == "AgentTimeoutError"
    assert metadata["exception_message"] == "Agent execution timed out after 60.0 seconds"
    assert "Traceback" not in orjson.dumps(metadata).decode()


def test_trial_metadata_and_usage(composed: list[Bundle]) -> None:
    bundle = composed[4]
    metadata = bundle["metadata"]
    assert metadata["task_name"] == "maas-controller-conflict-detection"
    assert metadata["trial_name"] == "maas-controller-conflict-detecti__j56vc8R"
    assert metadata["job"] == "2026-06-16__12-00-00"
    assert metadata["source"] == "composed-sample"
    assert metadata["task_checksum"].startswith("1738f7d9")
    assert metadata["rewards"] == {"reward": 1.0} and metadata["reward_source"] == "result.json"
    assert metadata["started_at"] == "2026-06-16T12:00:01.000000Z"  # UTC, one form (IM)
    assert metadata["agent"] == {
        "name": "claude-code",
        "version": "2.1.178",
        "model": "claude-opus-4-6",
    }
    # result.json has no token counts: they come from the trajectory's final_metrics
    assert bundle["usage"] == {
        "n_input_tokens": 485630,
        "n_cache_tokens": 461807,
        "n_output_tokens": 3304,
        "cost_usd": 0.46238100000000004,
    }
    record = bundle["records"][0]
    assert record["meta_info"]["unique_info"]["_instance_metadata"] == metadata
    assert record["meta_info"]["response_generate_time"] == "2026-06-16"
    assert record["meta_info"]["query_source"] == "composed-sample"


def test_summarisation_subagent_and_missing_reference_warnings(composed: list[Bundle]) -> None:
    bundle = composed[3]
    subagent = bundle["records"][1]["meta_info"]["unique_info"]
    assert subagent["_instance_metadata"]["subagent"]["trajectory_path"] == (
        "agent/trajectory.summarization-1-summary.json"
    )
    dropped, *missing = bundle["warnings"]
    assert "3 step(s) dropped: copied context" in dropped  # the summary's copied steps
    assert len(missing) == 2
    assert all("not found" in w for w in missing)
    assert bundle["metadata"]["warnings"] == bundle["warnings"]


def test_jobs_folder_job_and_single_trial_are_all_accepted(
    shared_dir: Path, composed: list[Bundle]
) -> None:
    from_root = list(read(shared_dir / COMPOSED.parent))
    assert [b["instance_id"] for b in from_root] == [b["instance_id"] for b in composed]
    single = list(read(shared_dir / COMPOSED / "hello-world__dxALUBc"))
    assert [b["instance_id"] for b in single] == ["hello-world__dxALUBc"]
    assert single[0]["job"] == "2026-06-16__12-00-00"


def test_read_streams_one_trial_at_a_time(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real = read_trial

    def counting(trial_dir: Path, job: str | None = None, limits: ReadLimits = LIMITS) -> Bundle:
        seen.append(trial_dir.name)
        return real(trial_dir, job, limits)

    monkeypatch.setattr("transforms.readers.harbor.read_trial", counting)
    bundles = read(shared_dir / COMPOSED)
    next(bundles)
    assert seen == ["hello-world__69aUCrP"]


def test_real_jobs(shared_dir: Path) -> None:
    bundles = {b["instance_id"]: b for b in read(shared_dir / REAL_JOBS)}
    assert list(bundles) == [
        "hermes-telegram-mirror-drop__L4594uE",
        "hermes-telegram-media-failure__UymHTkp",
        "long-running-refresh-token-cache__hJrAGxP",
    ]
    chat = bundles["hermes-telegram-media-failure__UymHTkp"]
    assert chat["rewards"] == {"reward": 0.0, "faithful_communication": 0.0}
    assert _kinds(chat) == (1, 0)
    assert chat["metadata"]["atif_schema_version"] == "ATIF-v1.2"
    assert [t["function"]["name"] for t in chat["records"][0]["tools"]] == ["search_files"]
    assert_valid_records(chat["records"])

    errored = bundles["hermes-telegram-mirror-drop__L4594uE"]
    assert errored["rewards"] is None and errored["reward_source"] is None
    assert errored["metadata"]["exception_type"] == "NonZeroAgentExitCodeError"
    assert "exception_traceback" not in errored["metadata"]
    assert errored["records"] == []
    trial = shared_dir / REAL_JOBS / "2026-05-15__02-29-02/hermes-telegram-mirror-drop__L4594uE"
    assert errored["warnings"] == [f"no agent trajectory found in {trial}/agent"]

    fractional = bundles["long-running-refresh-token-cache__hJrAGxP"]
    assert fractional["rewards"] == {"reward": 0.875}
    assert fractional["reward_source"] == "result.json"
    assert fractional["metadata"]["task_name"] == "harbor/long-running-refresh-token-cache"


def test_reward_json_fallback_drops_non_numeric_keys(shared_dir: Path) -> None:
    verifier = (
        shared_dir
        / REAL_JOBS
        / ("2026-05-26__14-35-08/long-running-refresh-token-cache__hJrAGxP/verifier")
    )
    warnings: list[str] = []
    rewards, source = trial_rewards(
        {"verifier_result": None}, TrialFiles(verifier.parent), warnings
    )
    assert source == "reward.json"
    assert rewards is not None and rewards["reward"] == 0.875 and len(rewards) == 10
    assert "headline" not in rewards
    assert warnings == ["verifier/reward.json: non-numeric reward key 'headline' dropped"]


# --- crafted trials -------------------------------------------------------------------------


def _trial(
    root: Path,
    name: str,
    result: Any = None,
    trajectory: Any = None,
    files: dict[str, str] | None = None,
) -> Path:
    trial = root / name
    (trial / "agent").mkdir(parents=True)
    if result is not None:
        (trial / "result.json").write_bytes(
            result if isinstance(result, bytes) else orjson.dumps(result)
        )
    if trajectory is not None:
        (trial / "agent/trajectory.json").write_bytes(
            trajectory if isinstance(trajectory, bytes) else orjson.dumps(trajectory)
        )
    for relative, text in (files or {}).items():
        path = trial / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return trial


def _result(name: str, rewards: Any = None) -> dict[str, Any]:
    return {
        "task_name": "task",
        "trial_name": name,
        "agent_info": {"name": "claude-code", "version": "1", "model_info": {"name": "m"}},
        "verifier_result": None if rewards is None else {"rewards": rewards},
    }


def _trajectory(*extra_results: dict[str, Any]) -> dict[str, Any]:
    results = [{"source_call_id": "c1", "content": "ok"}, *extra_results]
    return {
        "schema_version": "ATIF-v1.7",
        "agent": {"name": "claude-code"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "task"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "Bash", "arguments": {"command": "ls"}}
                ],
                "observation": {"results": results},
            },
            {"step_id": 3, "source": "agent", "message": "done"},
        ],
    }


def test_reward_txt_fallback_and_empty_reward_txt(tmp_path: Path) -> None:
    _trial(tmp_path, "a__1", _result("a__1"), _trajectory(), {"verifier/reward.txt": "0.5\n"})
    _trial(tmp_path, "b__2", _result("b__2"), _trajectory(), {"verifier/reward.txt": ""})
    first, second = read(tmp_path)
    assert (first["rewards"], first["reward_source"]) == ({"reward": 0.5}, "reward.txt")
    assert (second["rewards"], second["reward_source"]) == (None, None)
    assert second["warnings"] == ["verifier/reward.txt is empty: no reward"]
    assert second["records"][0]["meta_info"]["unique_info"]["_instance_metadata"]["warnings"] == [
        "verifier/reward.txt is empty: no reward"
    ]


def test_corrupt_files_are_reasons_on_their_trial_only(tmp_path: Path) -> None:
    _trial(tmp_path, "a__bad_result", b'{"trial_name": "a__bad', _trajectory())
    _trial(tmp_path, "b__bad_trajectory", _result("b__bad_trajectory", {"reward": 1}), b"{oops")
    _trial(tmp_path, "c__good", _result("c__good", {"reward": 1}), _trajectory())
    bad_result, bad_trajectory, good = read(tmp_path)
    assert bad_result["records"] == [] and bad_result["warnings"][0].startswith(
        "result.json: corrupt JSON"
    )
    assert bad_trajectory["records"] == []
    assert bad_trajectory["warnings"][0].startswith("agent/trajectory.json: corrupt JSON")
    assert bad_trajectory["rewards"] == {"reward": 1.0}
    assert good["warnings"] == [] and len(good["records"]) == 1


def test_a_result_nested_past_the_depth_limit_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    """orjson refuses nesting past its depth limit; the stdlib parser, tried for NaN and
    Infinity, runs out of recursion on it: the trial is refused with orjson's reason."""
    deep = orjson.dumps(_result("t__deep", {"reward": 1}))[:-1] + (
        b',"extra":' + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"}"
    )
    _trial(tmp_path, "t__deep", deep, _trajectory())
    (bundle,) = read(tmp_path)
    assert bundle["records"] == []
    assert bundle["warnings"][0].startswith("result.json: corrupt JSON (depth limit exceeded")


def test_no_agent_log_is_a_reason_not_an_exception(tmp_path: Path) -> None:
    trial = _trial(tmp_path, "t__1", _result("t__1", {"reward": 1}))
    (bundle,) = read(trial)  # every native reader looks and finds nothing of its kind
    assert bundle["records"] == []
    assert bundle["warnings"] == [f"no agent trajectory found in {trial}/agent"]
    assert bundle["metadata"]["warnings"] == bundle["warnings"]


def test_native_logs_are_read_when_there_is_no_atif(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[ReadContext, Path]] = []
    messages = [{"role": "user", "content": "task"}, {"role": "assistant", "content": "done"}]

    def records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None:
        calls.append((ctx, agent_dir))
        if len(calls) == 1:
            return None
        record = build_im_record(
            messages,
            instance_id=ctx.instance_id,
            agent=ctx.agent,
            metadata=ctx.metadata,
            usage=ctx.usage,
        )
        return [record], ["native warning"]

    for name in ("fake_absent", "fake_native"):
        module = types.ModuleType(f"transforms.readers.{name}")
        module.records_from_agent_dir = records_from_agent_dir  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(harbor_trial, "NATIVE_LOG_MODULES", ("fake_absent", "fake_native"))
    trial = _trial(tmp_path, "t__1", _result("t__1", {"reward": 1}))
    (bundle,) = read(trial)
    assert bundle["format"] == "harbor-fake-native"
    assert bundle["warnings"] == ["native warning"]
    assert_valid_records(bundle["records"])
    assert bundle["metadata"]["scaffold"] == "claudecode"
    ctx, agent_dir = calls[1]
    assert (agent_dir, ctx.instance_id) == (trial / "agent", "t__1")
    assert ctx.files.root == trial
    assert ctx.agent == {"name": "claude-code", "version": "1", "model": "m"}
    assert ctx.metadata["rewards"] == {"reward": 1.0} and ctx.usage == {}


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_subagent_paths_leaving_the_trial_are_refused(tmp_path: Path, kind: str) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes(orjson.dumps(_trajectory() | {"session_id": "OUTSIDE-SECRET"}))
    jobs = tmp_path / "job"
    raw = {"dotdot": "../../etc/passwd", "absolute": str(outside), "symlink": "link.json"}[kind]
    ref = {"subagent_trajectory_ref": [{"trajectory_path": raw}]}
    trial = _trial(jobs, "t__1", _result("t__1", {"reward": 1}), _trajectory(ref))
    if kind == "symlink":
        (trial / "agent/link.json").symlink_to(outside)
    (bundle,) = read(jobs)
    assert _kinds(bundle) == (1, 0)
    assert len(bundle["warnings"]) == 1
    warning = bundle["warnings"][0]
    assert "refused trajectory path" in warning and repr(raw) in warning
    assert "OUTSIDE-SECRET" not in orjson.dumps(bundle).decode()
    assert_valid_records(bundle["records"])


def test_main_trajectory_symlinked_out_of_the_trial_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes(orjson.dumps(_trajectory()))
    trial = _trial(tmp_path / "job", "t__1", _result("t__1", {"reward": 1}))
    (trial / "agent/trajectory.json").symlink_to(outside)
    bundle = read_trial(trial)
    assert bundle["records"] == []
    assert bundle["warnings"][0] == (
        "refused agent/trajectory.json: a symlink to a target outside the trial"
    )


def test_a_folder_without_trials_is_refused(tmp_path: Path) -> None:
    (tmp_path / "folder" / "empty").mkdir(parents=True)  # its parent holds no trial either
    with pytest.raises(ReaderError, match="no Harbor trial found"):
        list(read(tmp_path / "folder"))
    with pytest.raises(ReaderError, match="no Harbor trial found"):
        list(read(tmp_path / "folder" / "empty"))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("1_0", "not a decimal number: '1_0'"),
        ("nan", "not a decimal number: 'nan'"),
        ("inf", "not a decimal number: 'inf'"),
        ("0x1", "not a decimal number: '0x1'"),
        ("10", "10.0 is outside [0, 1]: no reward"),
        ("-0.5", "-0.5 is outside [0, 1]: no reward"),
    ],
)
def test_reward_txt_is_a_decimal_number_in_the_unit_interval(
    tmp_path: Path, text: str, problem: str
) -> None:
    _trial(tmp_path, "a__1", _result("a__1"), _trajectory(), {"verifier/reward.txt": text})
    (bundle,) = read(tmp_path)
    assert (bundle["rewards"], bundle["reward_source"]) == (None, None)
    assert any(problem in w for w in bundle["warnings"]), bundle["warnings"]


def test_rewards_outside_the_unit_interval_are_dropped_with_their_key(tmp_path: Path) -> None:
    result = _result("a__1", {"reward": 2.0, "partial": 0.5})
    _trial(tmp_path, "a__1", result, _trajectory())
    (bundle,) = read(tmp_path)
    assert bundle["rewards"] == {"partial": 0.5}
    assert (
        "result.json verifier_result: reward key 'reward' dropped: 2.0 is outside [0, 1]"
        in bundle["warnings"]
    )


def test_nan_in_result_json_is_null_with_a_warning_not_a_lost_trial(tmp_path: Path) -> None:
    """Python's json.dumps writes NaN for a float it cannot express (a timing, a reward)."""
    body = orjson.dumps(_result("a__1", {"reward": 1.0})).decode()
    body = body.replace('"reward":1.0', '"reward":NaN').replace("{", '{"t":Infinity,', 1)
    _trial(tmp_path, "a__1", body.encode(), _trajectory(), {"verifier/reward.txt": "1.0"})
    (bundle,) = read(tmp_path)
    assert len(bundle["records"]) == 1
    # the NaN reward is no reward (the next source, reward.txt, is used), warned
    assert (bundle["rewards"], bundle["reward_source"]) == ({"reward": 1.0}, "reward.txt")
    assert (
        "result.json: 2 Infinity, NaN value(s) read as null (not JSON numbers)"
        in bundle["warnings"]
    )
    assert any("non-numeric reward key 'reward' dropped" in w for w in bundle["warnings"])


@pytest.mark.parametrize("kind", ["subagent", "continuation"])
def test_a_symlink_loop_in_a_reference_refuses_that_reference_only(
    tmp_path: Path, kind: str
) -> None:
    if kind == "subagent":
        doc = _trajectory({"subagent_trajectory_ref": [{"trajectory_path": "loop.json"}]})
    else:
        doc = _trajectory() | {"continued_trajectory_ref": {"trajectory_path": "loop.json"}}
    trial = _trial(tmp_path / "job", "t__1", _result("t__1", {"reward": 1}), doc)
    (trial / "agent/loop.json").symlink_to("loop-b.json")
    (trial / "agent/loop-b.json").symlink_to("loop.json")
    (bundle,) = read(tmp_path / "job")
    assert _kinds(bundle) == (1, 0)  # the trial is read, its main record kept
    assert any(
        "refused trajectory path 'loop.json': it cannot be resolved (a symlink loop" in w
        for w in bundle["warnings"]
    ), bundle["warnings"]
    assert_valid_records(bundle["records"])
