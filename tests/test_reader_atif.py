"""ATIF reader: fidelity to the reference converter on the real files, and the ATIF rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from reader_checks import assert_valid_records

from scorers.tqs_v2 import score_record
from transforms.readers.atif import read, records_from_atif
from transforms.readers.bundle import Bundle, ReaderError
from transforms.readers.confined import TrialFiles

ATIF = Path("data/real/atif")
# reference-scored `_instance_id` (without `real-atif-`) -> the source file it was converted from
FIDELITY = {
    "claude-code-pass": "claude-code/trajectory_pass.json",
    "claude-code-fail": "claude-code/trajectory_fail.json",
    "claude-code-hello-load-task-level": "claude-code/hello-load-task-level.trajectory.json",
    "openhands-hello-world": "openhands/hello-world.trajectory.json",
    "terminus-2-context-summarization": "terminus-2/context-summarization/trajectory.json",
    "terminus-2-invalid-json": "terminus-2/invalid-json/trajectory.json",
    "terminus-2-linear-history": "terminus-2/linear-history/trajectory.json",
    "terminus-2-timeout": "terminus-2/timeout/trajectory.json",
}
# source -> (main records, subagent records)
RECORD_COUNTS = {
    "claude-code/trajectory_pass.json": (1, 0),
    "claude-code/trajectory_fail.json": (1, 0),
    "claude-code/hello-load-task-level.trajectory.json": (1, 0),
    "openhands/hello-world.trajectory.json": (1, 0),
    "terminus-2/context-summarization/trajectory.json": (1, 1),
    "terminus-2/invalid-json/trajectory.json": (1, 0),
    "terminus-2/linear-history/trajectory.json": (1, 0),
    "terminus-2/timeout/trajectory.json": (1, 0),
}


def _one(path: Path) -> Bundle:
    bundles = list(read(path))
    assert len(bundles) == 1
    return bundles[0]


def _unique(record: dict[str, Any]) -> dict[str, Any]:
    unique_info: dict[str, Any] = record["meta_info"]["unique_info"]
    return unique_info


def _calls(record: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (call["function"]["name"], orjson.loads(call["function"]["arguments"]))
        for message in record["messages"]
        for call in message.get("tool_calls") or []
    ]


def _observations(record: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [
        (m["role"], m["content"], m.get("tool_call_id"))
        for m in record["messages"]
        if m["role"] in ("tool", "user")
    ]


@pytest.fixture(scope="module")
def reference(shared_dir: Path) -> dict[str, dict[str, Any]]:
    records = {}
    for line in (shared_dir / "data/reference-scored/cases.jsonl").read_bytes().splitlines():
        record = orjson.loads(line)
        instance_id = record["meta_info"]["unique_info"]["_instance_id"]
        if instance_id.startswith("real-atif-"):
            records[instance_id.removeprefix("real-atif-")] = record
    assert len(records) == 11
    return records


@pytest.mark.parametrize("name", sorted(FIDELITY))
def test_conversion_matches_the_reference_converter(
    shared_dir: Path, reference: dict[str, dict[str, Any]], name: str
) -> None:
    mine = _one(shared_dir / ATIF / FIDELITY[name])["records"][0]
    theirs = reference[name]
    assert [m["role"] for m in mine["messages"]] == [m["role"] for m in theirs["messages"]]
    assert _calls(mine) == _calls(theirs)
    assert _observations(mine) == _observations(theirs)
    for ours, ref in zip(mine["messages"], theirs["messages"], strict=True):
        if ours["role"] == "assistant":
            assert ours["content"] == ref["content"]
            assert ours["reasoning_content"] == ref["reasoning_content"]
    scaffold = _unique(mine)["_instance_metadata"].get("scaffold")
    assert scaffold is not None
    # the claudecode hint on our record stands in for the system prompt the reference added
    assert score_record(mine, scaffold=scaffold) == _unique(theirs)["_score"]
    if name.startswith("claude-code"):
        assert mine["messages"][0] == {"role": "system", "content": ""}
        assert reference[f"{name}-emptysys"]["messages"][1:] == theirs["messages"][1:]


@pytest.mark.parametrize("source", sorted(RECORD_COUNTS))
def test_every_record_is_valid_im_in_a_valid_order(shared_dir: Path, source: str) -> None:
    bundle = _one(shared_dir / ATIF / source)
    assert_valid_records(bundle["records"])
    kinds = [_unique(r)["_agent_type"] for r in bundle["records"]]
    assert (kinds.count("main"), kinds.count("subagent")) == RECORD_COUNTS[source]
    assert bundle["format"] == "atif" and bundle["rewards"] is None
    orjson.dumps(bundle)


def test_claude_code_keeps_identity_and_rebuilds_tools(shared_dir: Path) -> None:
    bundle = _one(shared_dir / ATIF / "claude-code/trajectory_fail.json")
    record = bundle["records"][0]
    metadata = _unique(record)["_instance_metadata"]
    assert metadata["scaffold"] == "claudecode"
    assert metadata["agent"] == {
        "name": "claude-code",
        "version": "2.1.178",
        "model": "claude-opus-4-6",
    }
    assert bundle["instance_id"] == "trajectory_fail"  # standalone: named after the file
    assert metadata["session_id"] == "aab22f64-0a24-4409-adf3-1dda6e637e7d"
    names = [t["function"]["name"] for t in record["tools"]]
    assert names == [
        "Read",
        "Agent",
        "Bash",
        "TaskCreate",
        "TaskUpdate",
        "Write",
        "Edit",
        "TaskOutput",
    ]
    assert record["meta_info"]["rounds"] == 39
    assert _unique(record)["_usage"] == {
        "n_input_tokens": 4013056,
        "n_cache_tokens": 3896650,
        "n_output_tokens": 9685,
        "cost_usd": 3.1485111999999997,
    }
    assert record["meta_info"]["response_generate_time"] == "2026-06-16"


def test_terminus_steps_become_the_json_answer_without_tools(shared_dir: Path) -> None:
    record = _one(shared_dir / ATIF / "terminus-2/context-summarization/trajectory.json")[
        "records"
    ][0]
    assert record["tools"] == []
    answers = [json.loads(m["content"]) for m in record["messages"] if m["role"] == "assistant"]
    assert all(list(a) == ["analysis", "plan", "commands", "task_complete"] for a in answers)
    assert answers[0] == {
        "analysis": "Terminal is ready. Let me create a test directory first.",
        "plan": "Create test_dir to set up some context.",
        "commands": [{"keystrokes": "mkdir test_dir\n", "duration": 0.1}],
        "task_complete": False,
    }
    # task_complete is true exactly on the two mark_task_complete turns, which run nothing
    assert [a["task_complete"] for a in answers] == [False] * 5 + [True] * 2
    assert answers[-1]["commands"] == []
    assert not any(m.get("tool_calls") for m in record["messages"])
    assert {m["role"] for m in record["messages"]} == {"system", "user", "assistant"}


def test_terminus_answer_that_is_not_json_is_kept_verbatim(shared_dir: Path) -> None:
    record = _one(shared_dir / ATIF / "terminus-2/invalid-json/trajectory.json")["records"][0]
    first = record["messages"][2]
    assert first["content"].startswith("I need to create a file called hello.txt")
    assert first["content"].endswith("This should work!")
    assert record["messages"][3]["content"].startswith("Previous response had parsing errors")


def test_continuation_is_appended_without_its_copied_context(shared_dir: Path) -> None:
    bundle = _one(shared_dir / ATIF / "terminus-2/linear-history/trajectory.json")
    record = bundle["records"][0]
    assert record["meta_info"]["rounds"] == 7  # 3 from trajectory.json + 4 from cont-1
    assert [m["role"] for m in record["messages"]].count("user") == 7
    assert json.loads(record["messages"][8]["content"])["commands"][0]["keystrokes"] == (
        "printf 'Hello, world!\\n' > hello.txt\n"
    )
    # the summarisation files it references are not in the sample: warnings, not a crash;
    # and the copied context of cont-1 is dropped (an SFT rule), which is said too
    dropped, *missing = bundle["warnings"]
    assert (
        dropped
        == "trajectory.json: 4 step(s) dropped: copied context (is_copied_context, an SFT rule)"
    )
    assert len(missing) == 3
    assert all("not found" in w for w in missing)


def test_missing_subagent_files_are_warnings_on_bundle_and_main_record(shared_dir: Path) -> None:
    bundle = _one(shared_dir / ATIF / "terminus-2/context-summarization/trajectory.json")
    main, subagent = bundle["records"]
    expected = [
        "trajectory.summarization-1-summary.json: 3 step(s) dropped: copied context "
        "(is_copied_context, an SFT rule)",
        "subagent trajectory trajectory.summarization-1-questions.json not found "
        "(referenced from trajectory.json)",
        "subagent trajectory trajectory.summarization-1-answers.json not found "
        "(referenced from trajectory.json)",
    ]
    assert bundle["warnings"] == expected
    assert _unique(main)["_instance_metadata"]["warnings"] == expected
    sub_info = _unique(subagent)
    assert sub_info["_agent_type"] == "subagent"
    assert sub_info["_instance_id"] == _unique(main)["_instance_id"]
    assert sub_info["_instance_metadata"]["subagent"]["trajectory_path"] == (
        "trajectory.summarization-1-summary.json"
    )
    assert sub_info["_instance_metadata"]["scaffold"] == "terminus2"
    # its three copied-context steps are dropped: the summary prompt and the summary remain
    assert [m["role"] for m in subagent["messages"]] == ["system", "user", "assistant"]
    assert subagent["messages"][1]["content"].startswith("You are about to hand off your work")
    assert sub_info["_usage"]["n_input_tokens"] == 500


def test_reading_a_continuation_file_alone_is_refused(shared_dir: Path) -> None:
    with pytest.raises(ReaderError, match=r"a continuation of trajectory\.json"):
        list(read(shared_dir / ATIF / "terminus-2/linear-history/trajectory.cont-1.json"))


# --- crafted trajectories -------------------------------------------------------------------


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc))
    return path


def _agent_step(step_id: int, text: str, calls: list[Any], results: list[Any], **extra: Any) -> Any:
    step: dict[str, Any] = {"step_id": step_id, "source": "agent", "message": text, **extra}
    if calls:
        step["tool_calls"] = [
            {"tool_call_id": cid, "function_name": name, "arguments": args}
            for cid, name, args in calls
        ]
    if results:
        step["observation"] = {"results": results}
    return step


def _doc(steps: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.7",
        "session_id": "s1",
        "agent": {"name": "claude-code", "version": "2.0", "model_name": "m"},
        "steps": steps,
        **extra,
    }


def test_results_follow_call_order_and_unmatched_results_are_kept_as_text(tmp_path: Path) -> None:
    steps = [
        {
            "step_id": 1,
            "source": "user",
            "message": [
                {"type": "text", "text": "look: "},
                {"type": "image", "source": {"path": "a.png"}},
            ],
        },
        _agent_step(
            2,
            "two reads",
            [("a", "Read", {"file_path": "x"}), ("b", "Read", {"file_path": "y"})],
            [
                {"source_call_id": "b", "content": "Y"},
                {"source_call_id": "zz", "content": "stray"},
                {"source_call_id": "a", "content": [{"type": "text", "text": "X"}]},
            ],
        ),
        _agent_step(3, "done", [], []),
    ]
    bundle = _one(_write(tmp_path / "t.json", _doc(steps)))
    record = bundle["records"][0]
    assert record["messages"][1]["content"] == "look: [image]"
    tools = [(m["tool_call_id"], m["content"]) for m in record["messages"] if m["role"] == "tool"]
    # a result answering no call of its step cannot be a tool message (§4): its text is kept
    # after the step's tool results, and the bundle says so
    assert tools == [("a", "X"), ("b", "Y\n\nstray")]
    assert any("1 observation result(s) answer no tool call" in w for w in bundle["warnings"])
    assert_valid_records([record])


def test_copied_context_and_dispatch_steps_are_dropped(tmp_path: Path) -> None:
    steps = [
        {"step_id": 1, "source": "system", "message": "sys prompt"},
        {"step_id": 2, "source": "user", "message": "old task", "is_copied_context": True},
        {"step_id": 3, "source": "user", "message": "task"},
        _agent_step(
            4,
            "dispatch",
            [("d", "Bash", {"command": "ls"})],
            [{"source_call_id": "d", "content": "x"}],
            llm_call_count=0,
        ),
        _agent_step(5, "answer", [], [], llm_call_count=1),
    ]
    record = _one(_write(tmp_path / "t.json", _doc(steps)))["records"][0]
    assert [(m["role"], m["content"]) for m in record["messages"]] == [
        ("system", "sys prompt"),
        ("user", "task"),
        ("assistant", "answer"),
    ]


def test_sidechain_steps_and_embedded_trajectories_become_subagents(tmp_path: Path) -> None:
    embedded = _doc(
        [
            {"step_id": 1, "source": "user", "message": "sub task"},
            _agent_step(2, "sub done", [], []),
        ],
        trajectory_id="emb-1",
    )
    steps = [
        {"step_id": 1, "source": "user", "message": "task"},
        _agent_step(
            2,
            "",
            [("t1", "Task", {"prompt": "explore"})],
            [
                {
                    "source_call_id": "t1",
                    "content": "explored",
                    "subagent_trajectory_ref": [{"trajectory_id": "emb-1"}],
                }
            ],
        ),
        {
            "step_id": 3,
            "source": "user",
            "message": "explore",
            "extra": {"is_sidechain": True, "agent_id": "ag1"},
        },
        _agent_step(
            4,
            "",
            [("s1", "Grep", {"pattern": "x"})],
            [{"source_call_id": "s1", "content": "hit"}],
            extra={"is_sidechain": True, "agent_id": "ag1"},
        ),
        _agent_step(5, "found it", [], [], extra={"is_sidechain": True, "agent_id": "ag1"}),
        _agent_step(6, "all done", [], []),
    ]
    bundle = _one(_write(tmp_path / "t.json", _doc(steps, subagent_trajectories=[embedded])))
    main, from_embedded, sidechain = bundle["records"]
    assert [m["role"] for m in main["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert [m["content"] for m in from_embedded["messages"]] == ["", "sub task", "sub done"]
    assert _unique(from_embedded)["_instance_metadata"]["subagent"]["trajectory_id"] == "emb-1"
    assert [m["role"] for m in sidechain["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert _unique(sidechain)["_instance_metadata"]["subagent"] == {"sidechain_id": "ag1"}
    assert _unique(sidechain)["_instance_metadata"]["scaffold"] == "claudecode"
    assert [t["function"]["name"] for t in sidechain["tools"]] == ["Grep"]
    assert_valid_records(bundle["records"])


def test_sibling_continuation_without_a_ref_is_appended(tmp_path: Path) -> None:
    first = _doc(
        [
            {"step_id": 1, "source": "user", "message": "task"},
            _agent_step(
                2,
                "a",
                [("c1", "Bash", {"command": "ls"})],
                [{"source_call_id": "c1", "content": "out"}],
            ),
        ]
    )
    cont = _doc(
        [
            {"step_id": 1, "source": "user", "message": "task", "is_copied_context": True},
            _agent_step(2, "b", [], []),
        ]
    )
    _write(tmp_path / "trajectory.cont-1.json", cont)
    record = _one(_write(tmp_path / "trajectory.json", first))["records"][0]
    assert [m["content"] for m in record["messages"] if m["role"] == "assistant"] == ["a", "b"]


def test_corrupt_file_is_a_reader_error(tmp_path: Path) -> None:
    bad = tmp_path / "trajectory.json"
    bad.write_text('{"schema_version": "ATIF-v1.7", "steps": [')
    with pytest.raises(ReaderError, match="corrupt JSON"):
        list(read(bad))
    with pytest.raises(ReaderError, match="corrupt JSON"):
        records_from_atif(bad, TrialFiles(tmp_path), "i", {}, {})


def test_standalone_reference_paths_stay_in_the_file_folder(tmp_path: Path) -> None:
    secret = _write(
        tmp_path / "secret.json", _doc([{"step_id": 1, "source": "user", "message": "SECRET"}])
    )
    folder = tmp_path / "run"
    ref = {
        "subagent_trajectory_ref": [
            {"trajectory_path": "../secret.json"},
            {"trajectory_path": str(secret)},
        ]
    }
    steps = [{"step_id": 1, "source": "user", "message": "task"}, _agent_step(2, "ok", [], [ref])]
    bundle = _one(_write(folder / "trajectory.json", _doc(steps)))
    assert len(bundle["records"]) == 1
    assert any("'../secret.json'" in w and "refused" in w for w in bundle["warnings"])
    assert any(repr(str(secret)) in w and "absolute" in w for w in bundle["warnings"])
    assert "SECRET" not in orjson.dumps(bundle).decode()
