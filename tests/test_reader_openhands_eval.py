"""OpenHands evaluation `output.jsonl` reader: the real 3-instance file, rewards, bad lines."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
from conformance.check import (
    count_problems,
    invented_text,
    measure,
    records_of,
    source_strings,
    structure_problems,
)
from conformance.counts import SourceCounts
from conformance.sources import openhands_eval as counter
from role_order import assert_valid_role_order

from scorers.im import validate_im_record
from scorers.im_validity import trainable_problem
from transforms.readers import openhands_eval
from transforms.readers.bundle import Bundle
from transforms.readers.openhands import ERROR_NOTE

REAL = "data/real/native/openhands-eval/output.jsonl"
IDS = ["ponylang__ponyc-4595", "ponylang__ponyc-4593", "ponylang__ponyc-4588"]


def conforms(bundles: list[Bundle], counted: SourceCounts, sources: list[Path]) -> list[str]:
    """The conformance problems, where tool results the counter vouches for (text OpenHands
    composed for the LLM from the event's fields) are not searched in the source, nor the
    note OpenHands appends to an error it shows as a user message."""
    vouched = set(counted.tool_results)
    records = copy.deepcopy(records_of(bundles))
    for record in records:
        for message in record["messages"]:
            if message["role"] == "tool" and message["content"] in vouched:
                message["content"] = ""
            elif message["role"] == "user":
                message["content"] = message["content"].replace(ERROR_NOTE, "")
    return [
        *structure_problems(list(bundles)),
        *count_problems(counted, measure(records_of(bundles))),
        *invented_text(records, source_strings(sources)),
    ]


def _read(path: Path) -> list[Bundle]:
    return list(openhands_eval.read(path))


def test_real_output_is_one_valid_bundle_per_instance(shared_dir: Path) -> None:
    bundles = _read(shared_dir / REAL)
    assert [b["instance_id"] for b in bundles] == IDS
    for bundle in bundles:
        (record,) = bundle["records"]
        validate_im_record(record)
        assert_valid_role_order(record)
        assert bundle["rewards"] is None and bundle["reward_source"] is None  # no report yet
        assert record["meta_info"]["teacher"] == "openai/openrouter-llama-4-maverick"
        info = record["meta_info"]["unique_info"]
        assert info["_instance_metadata"]["agent_class"] == "CodeActAgent"
        fidelity = info["_instance_metadata"]["fidelity"]
        assert fidelity.pop("recall_observations_skipped") == 1
        # the run that hit its iteration limit ended on a command's output, never answered
        cut_off = bundle is bundles[2]
        assert fidelity == ({"unanswered_tool_results_dropped": 1} if cut_off else {})
        assert record["messages"][1]["content"].startswith("<uploaded_files>\n/workspace/ponylang")
    last = bundles[2]["records"][0]["meta_info"]["unique_info"]["_instance_metadata"]
    assert last["error"].startswith("RuntimeError: Agent reached maximum iteration")
    assert trainable_problem(bundles[2]["records"][0]).startswith("truncated: the run stopped")
    usage = bundles[0]["records"][0]["meta_info"]["unique_info"]["_usage"]
    assert usage["total_prompt_tokens"] == 565158 and usage["total_completion_tokens"] == 2558


def test_real_output_matches_the_counter(shared_dir: Path) -> None:
    path = shared_dir / REAL
    counted = counter.count(path)
    assert (counted.user_prompts, counted.assistant_turns, len(counted.tool_calls)) == (5, 105, 105)
    assert len(counted.tool_results) == 102
    assert conforms(_read(path), counted, [path]) == []


def test_what_the_model_was_shown_for_commands_and_errors(shared_dir: Path) -> None:
    record = _read(shared_dir / REAL)[0]["records"][0]
    first_result = record["messages"][3]
    assert first_result["role"] == "tool"
    assert first_result["content"].startswith("total 300\n-rw-r--r--  1 root root   9336")
    assert first_result["content"].endswith(
        "\n[The command completed with exit code 0.]"
        "\n[Current working directory: /workspace/ponylang__ponyc__0.1]"
        "\n[Command finished with exit code 0]"
    )
    second = _read(shared_dir / REAL)[1]["records"][0]
    errors = [m for m in second["messages"] if "[Error occurred in processing" in m["content"]]
    assert [m["role"] for m in errors] == ["user"]
    assert errors[0]["content"] == (
        "Parameter 'command' is expected to be one of ['view', 'create', 'str_replace', "
        "'insert', 'undo_edit'].\n[Error occurred in processing last action]"
    )


def _lines(shared_dir: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (shared_dir / REAL).read_bytes().splitlines()]


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_resolved_reports_give_rewards(tmp_path: Path, shared_dir: Path) -> None:
    first, second, third = _lines(shared_dir)
    first["test_result"]["report"] = {"resolved": True, "failed_apply_patch": False}
    second["report"] = {"resolved": False}
    third["test_result"]["resolved"] = "yes"  # not a boolean verdict
    path = _write(tmp_path / "output.jsonl", [orjson.dumps(x) for x in (first, second, third)])
    bundles = _read(path)
    assert [b["rewards"] for b in bundles] == [{"reward": 1.0}, {"reward": 0.0}, None]
    assert [b["reward_source"] for b in bundles] == ["output.jsonl", "output.jsonl", None]
    metadata = bundles[0]["records"][0]["meta_info"]["unique_info"]["_instance_metadata"]
    assert metadata["rewards"] == {"reward": 1.0} and metadata["reward_source"] == "output.jsonl"
    assert metadata["report"] == {"failed_apply_patch": False}


def test_corrupt_lines_and_repeated_ids_do_not_stop_the_file(
    tmp_path: Path, shared_dir: Path
) -> None:
    first = _lines(shared_dir)[0]
    no_history = {"instance_id": "x", "history": [{"id": 1}], "instruction": "hi"}
    lines = [orjson.dumps(first), b'{"instance_id": "cut', orjson.dumps(first), b"[1]"]
    lines.append(orjson.dumps(no_history))
    bundles = _read(_write(tmp_path / "output.jsonl", lines))
    ids = [b["instance_id"] for b in bundles]
    assert ids == [IDS[0], "line 2", f"{IDS[0]}#2", "line 4", "x"]
    assert [len(b["records"]) for b in bundles] == [1, 0, 1, 0, 0]
    assert bundles[1]["warnings"][0].startswith("line 2: ")
    assert bundles[2]["warnings"][0] == (
        f"line 3: instance id {IDS[0]!r} repeats an earlier line; this one is '{IDS[0]}#2'"
    )
    assert bundles[2]["records"][0]["messages"] == bundles[0]["records"][0]["messages"]
    assert bundles[3]["warnings"] == ["line 4: a JSON array, expected an object"]
    assert bundles[4]["warnings"][-1].startswith("line 5 (x): no OpenHands events")


def test_old_pair_histories_are_flattened(tmp_path: Path, shared_dir: Path) -> None:
    line = _lines(shared_dir)[0]
    events = line["history"]
    line["history"] = [events[:1], *[events[i : i + 2] for i in range(1, len(events), 2)]]
    bundle = _read(_write(tmp_path / "output.jsonl", [orjson.dumps(line)]))[0]
    original = _read(shared_dir / REAL)[0]
    assert bundle["records"][0]["messages"] == original["records"][0]["messages"]


def test_the_first_line_shape() -> None:
    looks = openhands_eval.looks_like_openhands_eval
    assert looks({"instance_id": "a", "history": [], "test_result": {}})
    assert looks({"instance_id": 7, "history": [], "instruction": "x"})
    assert not looks({"instance_id": "a", "history": []})
    assert not looks({"history": [], "instruction": "x"})
    assert not looks({"instance_id": "a", "history": "no", "metadata": {}})
