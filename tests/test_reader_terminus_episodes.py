"""Old Terminus-2 episode folders (no real sample exists: the fixture follows the layout)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from reader_checks import native_records
from role_order import assert_valid_role_order

from scorers.im import validate_im_record
from scorers.tqs_v2 import score_record
from transforms.readers import terminus_episodes
from transforms.readers.bundle import ReaderError

TASK_PROMPT = (
    "You are an AI assistant tasked with solving command-line tasks in a Linux environment.\n"
    "Task Description:\nCreate hello.txt containing 'Hello, world!'.\n\nCurrent terminal state:\n"
    "root@box:/app# "
)


def _answer(analysis: str, commands: list[str], complete: bool) -> str:
    return json.dumps(
        {
            "analysis": analysis,
            "plan": "Run the commands.",
            "commands": [{"keystrokes": c + "\n", "duration": 0.1} for c in commands],
            "task_complete": complete,
        },
        indent=2,
    )


def _episodes(agent_dir: Path, turns: list[tuple[str | None, str | None]]) -> Path:
    for index, (prompt, response) in enumerate(turns):
        folder = agent_dir / f"episode-{index}"
        folder.mkdir(parents=True)
        (folder / "debug.json").write_bytes(orjson.dumps({"model": "openai/gpt-5", "messages": []}))
        if prompt is not None:
            (folder / "prompt.txt").write_text(prompt)
        if response is not None:
            (folder / "response.txt").write_text(response)
    return agent_dir


def _read(agent_dir: Path, agent: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    found = native_records(
        terminus_episodes,
        agent_dir,
        "hello__T1",
        agent or {},
        {"started_at": "2025-11-02T10:00:00Z"},
        {"cost_usd": 0.1},
    )
    assert found is not None
    (record,), warnings = found
    validate_im_record(record)
    return record, warnings


def test_episodes_become_alternating_user_and_json_answers(tmp_path: Path) -> None:
    first = _answer("Empty directory.", ["echo 'Hello, world!' > hello.txt"], False)
    second = _answer("File written.", ["cat hello.txt"], False)
    third = _answer("Content is right.", [], True)
    agent_dir = _episodes(
        tmp_path,
        [
            (TASK_PROMPT, first),
            ("New Terminal Output:\nroot@box:/app# echo 'Hello, world!' > hello.txt\n", second),
            ("New Terminal Output:\nHello, world!\nroot@box:/app# ", third),
        ],
    )
    record, warnings = _read(agent_dir)
    assert warnings == []
    assert_valid_role_order(record)
    assert [m["role"] for m in record["messages"]] == ["system"] + ["user", "assistant"] * 3
    assert record["messages"][1]["content"] == TASK_PROMPT
    assert record["messages"][2]["content"] == first  # the JSON answer, kept verbatim
    assert record["messages"][3]["content"].startswith("New Terminal Output:")
    assert record["tools"] == []
    info = record["meta_info"]["unique_info"]
    assert info["_instance_metadata"]["scaffold"] == "terminus2"
    assert info["_usage"] == {"cost_usd": 0.1}
    assert record["meta_info"]["teacher"] == "openai/gpt-5"
    assert record["meta_info"]["response_generate_time"] == "2025-11-02"
    score = score_record(record)
    assert score is not None and score["scaffold"] == "terminus2" and score["sub_score"] > 0


def test_a_last_episode_without_response_is_dropped_with_a_warning(tmp_path: Path) -> None:
    answer = _answer("Start.", ["ls"], False)
    agent_dir = _episodes(tmp_path, [(TASK_PROMPT, answer), ("New Terminal Output:\n", None)])
    record, warnings = _read(agent_dir, {"name": "terminus-2", "model": "anthropic/claude"})
    assert [m["role"] for m in record["messages"]] == ["system", "user", "assistant"]
    assert warnings == ["episode-1/response.txt missing"]
    assert record["meta_info"]["teacher"] == "anthropic/claude"


def test_no_episode_folders_is_none_and_empty_ones_are_refused(tmp_path: Path) -> None:
    assert native_records(terminus_episodes, tmp_path) is None
    (tmp_path / "episode-0").mkdir()
    with pytest.raises(ReaderError, match=r"^no messages: the episode folders hold"):
        native_records(terminus_episodes, tmp_path)


def test_empty_files_are_refused_and_a_bad_debug_json_only_loses_the_model(tmp_path: Path) -> None:
    _episodes(tmp_path / "a", [("", " \n")])
    with pytest.raises(ReaderError, match=r"^no messages: the episode folders hold"):
        native_records(terminus_episodes, tmp_path / "a")
    agent_dir = _episodes(tmp_path / "b", [(TASK_PROMPT, _answer("Done.", [], True))])
    (agent_dir / "episode-0" / "debug.json").write_bytes(b'{"model": "openai/gp')
    record, warnings = _read(agent_dir)
    assert warnings == []
    assert record["meta_info"]["teacher"] == "unknown"
    (agent_dir / "episode-0" / "debug.json").write_bytes(b'[{"model": 3}]')
    assert _read(agent_dir)[0]["meta_info"]["teacher"] == "unknown"
