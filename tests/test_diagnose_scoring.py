"""`trajectory_score`, `task_completion_score`, the breakdown, orchestration, profiles, and the
`_diagnosis` object as written (schema) and as a chain step."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from tqs_builders import (
    CLAUDE_CODE_TOOLS,
    assistant,
    bash_step,
    call,
    claude_code_record,
    step,
    terminus_answer,
    terminus_record,
    tool,
    tool_schema,
)

from scorers.diagnose import (
    DETECTORS,
    ProfileError,
    build_profiles,
    confidence_tier,
    diagnose_record,
    diagnose_records,
    load_profiles,
    top_contributor,
)
from scorers.diagnose.orchestration import gini
from transforms.diagnose_step import DiagnoseSettings, diagnose_bundle
from transforms.sinks.schema import conform_im_record

Record = dict[str, Any]
DONE = assistant("The fix is complete and all tests pass.")


def edit_step(output: str = "The file src/app.py has been updated.") -> list[dict[str, Any]]:
    return step([call("Edit", file_path="src/app.py", old_string="a", new_string="b")], [output])


def clean_run(**kwargs: Any) -> Record:
    return claude_code_record(
        [edit_step(), bash_step("python -m pytest -q", "3 passed in 0.1s"), DONE], **kwargs
    )


def with_meta(record: Record, **metadata: Any) -> Record:
    record["meta_info"]["unique_info"]["_instance_metadata"] = metadata
    return record


def fired(diagnosis: dict[str, Any]) -> list[str]:
    return [d["detector"] for d in diagnosis["detections"]]


# --- the score --------------------------------------------------------------------------------


def test_clean_run_scores_one_on_both_axes() -> None:
    diagnosis = diagnose_record(clean_run())
    assert diagnosis["trajectory_score"] == 1.0
    assert diagnosis["task_completion_score"] == 1.0
    assert diagnosis["orchestration_quality_overall"] == 1.0
    assert diagnosis["max_severity_penalty"] == 0.0
    assert diagnosis["score_breakdown"]["top_contributors"] == []
    assert top_contributor(diagnosis) == "nothing"


def test_one_critical_detector_at_full_confidence_leaves_at_most_0_2() -> None:
    record = with_meta(
        clean_run(),
        exception_type="BadRequestError",
        exception_message="prompt is too long: 201000 tokens > 200000 maximum",
    )
    diagnosis = diagnose_record(record)
    assert fired(diagnosis) == ["context_overflow"]
    (detection,) = diagnosis["detections"]
    assert (detection["severity"], detection["confidence"]) == ("critical", 1.0)
    assert diagnosis["trajectory_score"] <= 0.2
    assert diagnosis["trajectory_score"] == pytest.approx(1.0 - 0.85)


def test_the_largest_process_penalty_decides_not_the_sum() -> None:
    loop = [bash_step("ls", "a") for _ in range(3)]
    record = claude_code_record([*loop, edit_step(), DONE])  # loop (high) + unverified (medium)
    diagnosis = diagnose_record(record)
    assert set(fired(diagnosis)) == {"loop", "unverified_finish"}
    penalties = {d["detector"]: d["penalty"] for d in diagnosis["detections"]}
    assert penalties["loop"] == pytest.approx(0.6 * 0.6)
    assert penalties["unverified_finish"] == pytest.approx(0.35 * 0.9)
    assert diagnosis["max_severity_penalty"] == pytest.approx(0.36)
    assert diagnosis["trajectory_score"] == pytest.approx(0.64)


def test_outcome_detectors_move_only_task_completion() -> None:
    record = claude_code_record(
        [edit_step(), bash_step("python -m pytest", "2 failed, 1 passed"), DONE]
    )
    diagnosis = diagnose_record(record)
    assert fired(diagnosis) == ["task_failure"]
    assert diagnosis["trajectory_score"] == 1.0
    assert diagnosis["task_completion_score"] == pytest.approx(1.0 - 0.6)


def test_breakdown_lists_top_five_by_penalty_with_weights_and_profile() -> None:
    errors = "Permission denied"
    turns = [bash_step("ls", errors) for _ in range(5)]  # loop, repeated error, storm
    broken = call("Bash", command="x")
    broken["function"]["arguments"] = "{not json"
    record = claude_code_record([*turns, step([broken], ["ok"]), step([call("Nope")], ["?"])])
    diagnosis = diagnose_record(record)
    contributors = diagnosis["score_breakdown"]["top_contributors"]
    assert len(contributors) == 5 < len(diagnosis["detections"])
    penalties = [c["penalty"] for c in contributors]
    assert penalties == sorted(penalties, reverse=True)
    assert set(contributors[0]) == {"detector", "axis", "severity", "confidence", "penalty"}
    breakdown = diagnosis["score_breakdown"]
    assert breakdown["severity_weights"] == {
        "critical": 0.85,
        "high": 0.6,
        "medium": 0.35,
        "low": 0.15,
        "info": 0.0,
    }
    assert breakdown["profile"] == diagnosis["profile"] == "claudecode"
    assert breakdown["profile_source"] == "built-in"
    assert top_contributor(diagnosis).startswith(contributors[0]["detector"])


def test_every_detection_carries_its_documented_fields() -> None:
    record = claude_code_record([bash_step("ls", "x") for _ in range(4)])
    for detection in diagnose_record(record)["detections"]:
        assert detection["detector"] in DETECTORS
        assert detection["tier"] == confidence_tier(detection["confidence"])
        assert detection["title"] == DETECTORS[detection["detector"]].title
        assert detection["description"]
        assert set(detection["evidence"]) == {"messages", "snippets"}


@pytest.mark.parametrize(
    ("confidence", "tier"),
    [
        (1.0, "high"),
        (0.8, "high"),
        (0.79, "likely"),
        (0.6, "likely"),
        (0.5, "possible"),
        (0.4, "possible"),
        (0.39, "low"),
        (0.0, "low"),
    ],
)
def test_confidence_tiers(confidence: float, tier: str) -> None:
    assert confidence_tier(confidence) == tier


def test_the_diagnosis_is_deterministic() -> None:
    record = claude_code_record([bash_step("ls", "Permission denied") for _ in range(6)])
    assert diagnose_record(copy.deepcopy(record)) == diagnose_record(record)


# --- orchestration ------------------------------------------------------------------------------

TASK_TOOLS = [*CLAUDE_CODE_TOOLS, tool_schema("Task", "description", "prompt", "subagent_type")]


def multi_agent(linked: bool = True) -> list[Record]:
    """Main delegates two explorations in one turn; both subagents report back."""
    first = call("Task", description="a", prompt="look at a", subagent_type="Explore")
    second = call("Task", description="b", prompt="look at b", subagent_type="Explore")
    main = claude_code_record(
        [
            [assistant("", first, second), tool("a is fine", first), tool("b is broken", second)],
            edit_step(),
            bash_step("python -m pytest", "3 passed"),
            DONE,
        ]
    )
    main["tools"] = TASK_TOOLS
    subs = []
    for name in ("a", "b"):
        sub = claude_code_record(
            [step([call("Read", file_path=f"{name}.py")], ["code"]), assistant(f"{name}: ok")],
            agent_type="subagent",
        )
        link = {"agent_id": name} if linked else None
        subs.append(with_meta(sub, agent={"name": f"explore-{name}"}, subagent=link))
    return [main, *subs]


def test_single_agent_runs_have_no_orchestration_dimensions() -> None:
    breakdown = diagnose_record(clean_run())["score_breakdown"]
    assert set(breakdown["dimensions"].values()) == {None}
    assert set(breakdown["dimension_weights"].values()) == {None}


def test_a_well_run_multi_agent_trace_scores_its_dimensions() -> None:
    diagnosis = diagnose_records(multi_agent())[0]
    dimensions = diagnosis["score_breakdown"]["dimensions"]
    assert dimensions["parallelization"] == dimensions["delegation"] == 1.0
    assert dimensions["communication"] == dimensions["topology"] == 1.0
    assert dimensions["robustness"] == dimensions["efficiency"] == 1.0
    assert dimensions["utilization"] == pytest.approx(1.0 - gini([4.0, 2.0, 2.0]), abs=1e-4)
    weights = diagnosis["score_breakdown"]["dimension_weights"]
    assert sum(w for w in weights.values() if w is not None) == pytest.approx(1.0, abs=1e-3)
    assert fired(diagnosis) == []
    assert diagnosis["trajectory_score"] == diagnosis["orchestration_quality_overall"] < 1.0


def test_orphan_subagents_lower_topology_and_the_score() -> None:
    linked = diagnose_records(multi_agent(linked=True))[0]
    orphans = diagnose_records(multi_agent(linked=False))[0]
    assert orphans["score_breakdown"]["dimensions"]["topology"] == 0.0
    assert orphans["trajectory_score"] < linked["trajectory_score"]


def test_gini() -> None:
    assert gini([3.0, 3.0, 3.0]) == 0.0
    assert gini([0.0, 0.0, 9.0]) == pytest.approx(2 / 3)
    assert gini([]) == 0.0


# --- profiles -----------------------------------------------------------------------------------


def invalid_terminus_run() -> Record:
    answers = ["not json at all", terminus_answer("ls"), terminus_answer(task_complete=True)]
    return terminus_record(answers, ["parse error", "a.txt"])


def test_profiles_are_chosen_by_source_format() -> None:
    terminus = diagnose_record(invalid_terminus_run())
    assert terminus["source_format"] == terminus["profile"] == "terminus2"
    (invalid,) = [d for d in terminus["detections"] if d["detector"] == "invalid_tool_arguments"]
    assert invalid["severity"] == "high"
    broken = call("Bash", command="x")
    broken["function"]["arguments"] = "{oops"
    claude = diagnose_record(claude_code_record([step([broken], ["ok"]), DONE]))
    (same,) = [d for d in claude["detections"] if d["detector"] == "invalid_tool_arguments"]
    assert same["severity"] == "medium"


def test_the_recorded_scaffold_hint_is_the_source_format() -> None:
    record = with_meta(clean_run(), scaffold="opencode")
    diagnosis = diagnose_record(record)
    assert diagnosis["source_format"] == "opencode"
    assert diagnosis["profile"] == "default"  # no opencode profile: the default applies


def test_a_profile_file_overrides_weights_and_severities(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "default:\n  severity_weights: {high: 0.7}\n"
        "claudecode:\n  severities: {loop: critical}\n"
        "opencode:\n  severities: {loop: low}\n",
        encoding="utf-8",
    )
    profiles = load_profiles(path)
    loop = claude_code_record([*(bash_step("ls", "a") for _ in range(5)), edit_step(), DONE])
    claude = diagnose_record(loop, profiles=profiles)
    (detection,) = [d for d in claude["detections"] if d["detector"] == "loop"]
    assert (detection["severity"], detection["penalty"]) == ("critical", 0.85)
    assert claude["score_breakdown"]["severity_weights"]["high"] == 0.7
    assert claude["score_breakdown"]["profile_source"] == str(path)
    opencode = diagnose_record(
        with_meta(copy.deepcopy(loop), scaffold="opencode"), profiles=profiles
    )
    (detection,) = [d for d in opencode["detections"] if d["detector"] == "loop"]
    assert (detection["severity"], detection["penalty"]) == ("low", 0.15)
    # the built-in per-format changes stay under a file that does not touch them
    assert profiles.for_format("terminus2").severity("invalid_tool_arguments") == "high"


def test_a_json_profile_file(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"terminus2": {"severities": {"truncation": "medium"}}}))
    assert load_profiles(path).for_format("terminus2").severity("truncation") == "medium"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("default:\n  severities: {nope: high}\n", "unknown detector 'nope'"),
        ("default:\n  severities: {loop: fatal}\n", "severity one of"),
        ("default:\n  severity_weights: {critical: 0.5, high: 0.4}\n", "at least 0.8"),
        ("default:\n  severity_weights: {low: 0.9}\n", "must not increase"),
        ("default:\n  severity_weights: {high: 2}\n", "from 0 to 1"),
        ("default:\n  weights: {}\n", "unknown key(s) weights"),
        ("- a list\n", "must hold a mapping"),
        ("default: [1\n", "not valid YAML"),
    ],
)
def test_bad_profile_files_are_refused_with_the_reason(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ProfileError) as raised:
        load_profiles(path)
    assert message in str(raised.value)


def test_built_in_profiles_meet_the_critical_bound() -> None:
    profiles = build_profiles()
    for profile in (profiles.default, *profiles.by_format.values()):
        assert profile.weight("critical") * 1.0 >= 0.8
        assert set(profile.severities) == set(DETECTORS)


# --- as written, and as a chain step ---------------------------------------------------------


def test_the_written_record_keeps_the_diagnosis_in_its_schema_place() -> None:
    records = multi_agent()
    bundle = {"records": records}
    diagnose_bundle(bundle, DiagnoseSettings())
    for record in records:
        written = conform_im_record(record)
        info = written["meta_info"]["unique_info"]
        assert info["_extra"] is None, info["_extra"]
        assert info["_diagnosis"] == record["meta_info"]["unique_info"]["_diagnosis"]
        assert conform_im_record(written) == written


def test_diagnose_bundle_sets_every_record_and_honours_the_scaffold() -> None:
    records = multi_agent()
    diagnose_bundle({"records": records}, DiagnoseSettings(scaffold="opencode"))
    diagnoses = [r["meta_info"]["unique_info"]["_diagnosis"] for r in records]
    assert [d["task_completion_score"] is None for d in diagnoses] == [False, True, True]
    assert {d["source_format"] for d in diagnoses} == {"opencode"}


def test_every_reference_record_is_diagnosed_within_range(cases: list[Record]) -> None:
    for record in cases:
        record = copy.deepcopy(record)
        diagnose_bundle({"records": [record]}, DiagnoseSettings())
        diagnosis = record["meta_info"]["unique_info"]["_diagnosis"]
        assert 0.0 <= diagnosis["trajectory_score"] <= 1.0
        assert 0.0 <= (diagnosis["task_completion_score"] or 0.0) <= 1.0
        written = conform_im_record(record)["meta_info"]["unique_info"]
        assert "_diagnosis" not in (written["_extra"] or "")  # it fits its schema place
        assert written["_diagnosis"] == diagnosis
        for detection in diagnosis["detections"]:
            last = len(record["messages"]) - 1
            assert all(0 <= i <= last for i in detection["evidence"]["messages"])
