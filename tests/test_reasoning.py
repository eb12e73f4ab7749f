"""Reasoning recorded in an input is carried into the written IM (`reasoning_content`).

The source reasoning is read straight from the input files here, the way each format
documents it (formats.md §2-§3), independently of the readers: ATIF agent steps'
`reasoning_content`, Claude Code `thinking` blocks, OpenCode `reasoning` parts. Steps the
ATIF SFT rules drop (copied context, `llm_call_count == 0`) are not expected.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipelines.cli import main
from pipelines.synth import SynthOptions, generate
from transforms.readers import swe_agent
from transforms.readers.openhands import read as read_openhands

COMPOSED_JOB = Path("data/composed/jobs/2026-06-16__12-00-00")


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_bytes().splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value


def _atif_reasoning(doc: Any) -> Iterator[str]:
    steps = doc.get("steps") if isinstance(doc, dict) else None
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, dict) or step.get("source") != "agent":
            continue
        if step.get("is_copied_context") is True or step.get("llm_call_count") == 0:
            continue
        if isinstance(step.get("reasoning_content"), str):
            yield step["reasoning_content"]


def _event_reasoning(event: dict[str, Any]) -> Iterator[str]:
    message = event.get("message")
    if event.get("type") == "assistant" and isinstance(message, dict):
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "thinking":
                yield str(block.get("thinking") or "")
    part = event.get("part")
    if event.get("type") == "reasoning" and isinstance(part, dict):
        yield str(part.get("text") or "")


def source_reasoning(trial: Path) -> list[str]:
    """Every non-empty reasoning text in a trial's agent files."""
    found: list[str] = []
    for path in sorted((trial / "agent").rglob("*")):
        if path.suffix == ".json" and path.is_file():
            try:
                found.extend(_atif_reasoning(orjson.loads(path.read_bytes())))
            except orjson.JSONDecodeError:
                continue
        elif path.suffix in (".jsonl", ".txt") and path.is_file():
            for event in _json_lines(path):
                found.extend(_event_reasoning(event))
    return [text.strip() for text in found if text.strip()]


def written_reasoning(im: Path) -> dict[str, str]:
    """Instance id -> every assistant `reasoning_content` of its written records, joined."""
    out: dict[str, list[str]] = {}
    for record in _json_lines(im):
        instance = record["meta_info"]["unique_info"]["_instance_id"]
        texts = out.setdefault(instance, [])
        texts += [m.get("reasoning_content") or "" for m in record["messages"]]
    return {k: "\n".join(v) for k, v in out.items()}


def _convert_all(inputs: Path, out: Path) -> dict[str, str]:
    assert main(["convert", str(inputs), "-o", str(out), "--instance-status", "all"]) == 0
    return written_reasoning(out)


def _lost(jobs: Path, written: dict[str, str]) -> tuple[int, list[str]]:
    total, lost = 0, []
    for trial in sorted(p for p in jobs.rglob("*") if (p / "agent").is_dir()):
        if trial.name not in written:
            continue
        for text in source_reasoning(trial):
            total += 1
            if text not in written[trial.name]:
                lost.append(f"{trial.name}: {text[:60]!r}")
    return total, lost


def test_composed_job_reasoning_is_carried(shared_dir: Path, tmp_path: Path) -> None:
    jobs = shared_dir / COMPOSED_JOB
    written = _convert_all(jobs, tmp_path / "composed.jsonl")
    assert len(written) == 6
    total, lost = _lost(jobs, written)
    assert total >= 7  # the Claude Code runs' reasoning steps
    assert lost == []


def test_synth_corpus_reasoning_is_carried(tmp_path: Path) -> None:
    generate(SynthOptions(tmp_path / "synth", 1, 60, 11, 0.0), progress=io.StringIO())
    written = _convert_all(tmp_path / "synth", tmp_path / "synth.jsonl")
    rejects = (tmp_path / "synth.rejects.jsonl").read_bytes().splitlines()
    untrainable = [orjson.loads(line) for line in rejects]
    # only runs that are no SFT data are left out, none for their reasoning: a run stopped
    # after a tool result (the generator's timeouts and crashes), or one that made one call
    # and said nothing
    assert all(r["stage"] == "trainable" for r in untrainable)
    assert all(
        "truncated: the run stopped after" in r["reason"] or "nothing to train on" in r["reason"]
        for r in untrainable
    ), [r["reason"] for r in untrainable]
    assert len(written) + len(untrainable) == 60 and len(untrainable) <= 12
    total, lost = _lost(tmp_path / "synth", written)
    assert total >= 10  # the corpus does hold reasoning (Claude, OpenCode, OpenHands)
    assert lost == []


def _mini_swe_agent(tmp_path: Path, messages: list[dict[str, Any]]) -> dict[str, Any]:
    path = tmp_path / "run.traj.json"
    path.write_bytes(orjson.dumps({"messages": messages, "info": {"exit_status": "Submitted"}}))
    (bundle,) = swe_agent.read_mini(path)
    (record,) = bundle["records"]
    return record


@pytest.mark.parametrize(
    "assistant",
    [
        {
            "role": "assistant",
            "content": "ls\n```bash\nls\n```",
            "reasoning_content": "Look first.",
        },
        {
            "role": "assistant",
            "content": "ls\n```bash\nls\n```",
            "extra": {
                "response": {
                    "choices": [
                        {"message": {"role": "assistant", "reasoning_content": "Look first."}}
                    ]
                }
            },
        },
        {
            "role": "assistant",
            "content": "ls\n```bash\nls\n```",
            "thinking_blocks": [{"type": "thinking", "thinking": "Look first."}],
        },
        {"role": "assistant", "content": "<think>Look first.</think>ls\n```bash\nls\n```"},
    ],
)
def test_mini_swe_agent_reasoning_is_carried(tmp_path: Path, assistant: dict[str, Any]) -> None:
    record = _mini_swe_agent(
        tmp_path,
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "List the files."},
            assistant,
        ],
    )
    answer = record["messages"][-1]
    assert answer["reasoning_content"] == "Look first."
    assert not answer["content"].startswith("<think>")


def test_openhands_model_response_reasoning_is_carried(tmp_path: Path) -> None:
    response = {
        "id": "resp-1",
        "model": "gpt-5",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "Listing.",
                    "reasoning_content": "The user wants the files.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'},
                        }
                    ],
                }
            }
        ],
    }
    events = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "List the files."}},
        {
            "id": 2,
            "source": "agent",
            "action": "run",
            "args": {"command": "ls"},
            "tool_call_metadata": {
                "function_name": "execute_bash",
                "tool_call_id": "call_1",
                "model_response": response,
            },
        },
        {"id": 3, "source": "agent", "observation": "run", "cause": 2, "content": "a.py"},
        {"id": 4, "source": "agent", "action": "message", "args": {"content": "a.py"}},
    ]
    path = tmp_path / "events.json"
    path.write_bytes(orjson.dumps(events))
    (bundle,) = read_openhands(path)
    assistant = bundle["records"][0]["messages"][2]
    assert assistant["reasoning_content"] == "The user wants the files."
