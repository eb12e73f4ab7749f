"""Every LF record `trajcurate run` writes for the composed Harbor job and for a synth corpus,
checked against LLaMA-Factory's sharegpt and FunctionFormatter rules (tests/lf_rules.py):
the agent's words beside its calls are there, each call has its own `<tool_response>` block
holding its raw result, roles alternate, every function_call parses, reasoning is carried,
and nothing beside the calls is reported dropped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from lf_rules import (
    render_glm4_function_call,
    render_qwen_function_call,
    render_qwen_observation,
    sharegpt_problem,
    split_function_call,
    thoughts,
    tool_response_blocks,
)

from pipelines.cli import main

COMPOSED_JOB = "2026-06-16__12-00-00"


def run(inputs: Path, output: Path, *extra: str) -> None:
    argv = ["run", "--no-progress", "--instance-status", "all", "--input", str(inputs)]
    assert main([*argv, "--output", str(output), *extra]) == 0


@pytest.fixture(scope="module")
def composed_out(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("composed")
    run(shared_dir / "data" / "composed" / "jobs" / COMPOSED_JOB, out)
    return out


@pytest.fixture(scope="module")
def synth_out(synth_jobs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth-out")
    run(synth_jobs, out)
    return out


def job_folders(out: Path) -> list[Path]:
    folders = sorted(p.parent for p in out.glob("*/lf.json"))
    assert folders, f"no job written in {out}"
    return folders


def pairs(folder: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(IM record, its LF example): with the default settings every record is written."""
    records = [orjson.loads(line) for line in (folder / "im.jsonl").read_bytes().splitlines()]
    examples = orjson.loads((folder / "lf.json").read_bytes())
    assert len(examples) == len(records)
    for record, example in zip(records, examples, strict=True):
        info = record["meta_info"]["unique_info"]
        assert example["_instance_id"] == info["_instance_id"]
        yield record, example


def tool_runs(messages: list[dict[str, Any]]) -> list[tuple[int, list[str]]]:
    """Per assistant message with calls: (number of calls, the results that answer them in
    call order)."""
    runs = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        ids = [call["id"] for call in message["tool_calls"]]
        results: dict[str, str] = {}
        for later in messages[index + 1 :]:
            if later["role"] != "tool":
                break
            results[later["tool_call_id"]] = later["content"]
        if results:
            runs.append((len(ids), [results.get(i, "") for i in ids]))
    return runs


def check_pair(record: dict[str, Any], example: dict[str, Any], seen: dict[str, int]) -> None:
    """One record's example against the rules; `seen` counts what the corpus exercised."""
    name = example["_instance_id"]
    assert sharegpt_problem(example) is None, name
    turns = example["messages"]
    prose, rendered_responses, observations = [], [], []
    for index, turn in enumerate(turns):
        if turn["role"] == "function_call":
            text, calls = split_function_call(turn["content"])
            prose.append(text)
            rendered_responses.append(render_qwen_function_call(turn["content"]))
            seen["parallel"] += len(calls) > 1
        elif turn["role"] == "assistant":
            rendered_responses.append(turn["content"])
        elif turn["role"] == "observation":
            previous = turns[index - 1]
            assert previous["role"] == "function_call", name
            blocks = tool_response_blocks(render_qwen_observation(turn["content"]))
            calls = split_function_call(previous["content"])[1]
            assert len(blocks) == len(calls), (name, index)
            observations.append((len(calls), blocks))
    # Each tool-result run of the IM record is one observation: one raw block per call.
    assert observations == tool_runs(record["messages"]), name
    # The words beside the calls, in order, in the text rendered before the calls.
    joined = "\n".join(prose)
    position = 0
    for message in record["messages"]:
        text = (message.get("content") or "").strip()
        if message["role"] == "assistant" and message.get("tool_calls") and text:
            found = joined.find(text, position)
            assert found >= 0, (name, text[:60])
            position = found + len(text)
            seen["call_text"] += 1
    # Reasoning: every non-empty IM reasoning inside a thought span of the rendered responses.
    spans = "\n\n".join(span for r in rendered_responses for span in thoughts(r))
    position = 0
    for message in record["messages"]:
        reasoning = message.get("reasoning_content") or ""
        if message["role"] == "assistant" and reasoning.strip():
            found = spans.find(reasoning, position)
            assert found >= 0, (name, reasoning[:60])
            position = found + len(reasoning)
            seen["reasoning"] += 1


@pytest.mark.parametrize("corpus", ["composed_out", "synth_out"])
def test_every_written_lf_record_renders_with_text_results_and_reasoning(
    corpus: str, request: pytest.FixtureRequest
) -> None:
    out: Path = request.getfixturevalue(corpus)
    seen = {"records": 0, "call_text": 0, "parallel": 0, "reasoning": 0}
    for folder in job_folders(out):
        for record, example in pairs(folder):
            check_pair(record, example, seen)
            seen["records"] += 1
        reshapes = orjson.loads((folder / "manifest.json").read_bytes())["lf_reshapes"]
        assert reshapes.get("call_text_dropped", 0) == 0, folder.name
        assert reshapes.get("call_text_marker_clash", 0) == 0, folder.name
        assert reshapes.get("reasoning_dropped", 0) == 0, folder.name
    # The corpus must exercise every rule checked above, or the test proves nothing.
    assert all(count > 0 for count in seen.values()), seen


def test_glm4_can_take_every_record_once_parallel_calls_are_dropped(
    synth_jobs: Path, synth_out: Path, tmp_path: Path
) -> None:
    parallel = 0
    for folder in job_folders(synth_out):
        for _, example in pairs(folder):
            for turn in example["messages"]:
                if turn["role"] == "function_call":
                    parallel += len(split_function_call(turn["content"])[1]) > 1
    assert parallel > 0  # the default output holds records glm4 would abort on
    out = tmp_path / "out"
    run(synth_jobs, out, "--lf-parallel-calls", "drop")
    dropped = 0
    for folder in job_folders(out):
        examples = orjson.loads((folder / "lf.json").read_bytes())
        records = (folder / "im.jsonl").read_bytes().splitlines()
        reshapes = orjson.loads((folder / "manifest.json").read_bytes())["lf_reshapes"]
        assert len(records) - len(examples) == reshapes.get("parallel_calls_dropped", 0)
        dropped += reshapes.get("parallel_calls_dropped", 0)
        for example in examples:
            for turn in example["messages"]:
                if turn["role"] == "function_call":
                    render_glm4_function_call(turn["content"])
    assert dropped > 0
