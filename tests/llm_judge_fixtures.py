"""Shared builders for the LLM-judge tests: answers and records made by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pipelines.cli import main
from scorers.llm_judges.fixed_rubrics import CHECK_KEYS

TRUNCATED_TOOL_RESULT_CASE = 282  # cases.jsonl line whose longest tool result is 17,921 chars


def fixed_answer_json(scores: dict[str, int] | None = None, default: int = 3) -> str:
    """A fixed-checklist answer as JSON text, every check `default` unless given."""
    scores = scores or {}
    answer = {
        key: {"reason": f"turn 0 shows {key}", "score": scores.get(key, default)}
        for key in CHECK_KEYS
    }
    return orjson.dumps(answer).decode()


def checklist_json(categories: dict[str, int]) -> dict[str, Any]:
    """A generated checklist with `n` checks `<category>-<i>` in each given category."""
    return {
        "question_summary": "Fix the parser for empty input.",
        "categories": [
            {
                "category_id": category,
                "description": f"checks from {category}",
                "checks": [
                    {
                        "check_id": f"{category}-{i}",
                        "description": f"requirement {i}",
                        "check_type": "implementation",
                        "required_evidence": "a tool result",
                    }
                    for i in range(n)
                ],
            }
            for category, n in categories.items()
        ],
    }


def verdict(check_id: str, passed: bool) -> dict[str, Any]:
    return {
        "check_id": check_id,
        "status": "passed" if passed else "failed",
        "score": 1 if passed else 0,
        "reasoning": "assistant_turn_index=2 runs the tests",
        "evidence": ["3 passed"],
    }


def judgement_json(verdicts: dict[str, bool], category: str = "user_query") -> dict[str, Any]:
    """A judgement holding the given verdicts, all under one category."""
    return {
        "summary": "mostly done",
        "categories": [
            {"category_id": category, "checks": [verdict(i, p) for i, p in verdicts.items()]}
        ],
    }


def small_record(messages: list[dict[str, Any]], **unique_info: Any) -> dict[str, Any]:
    """A minimal IM record around `messages`."""
    return {
        "version": "2.0.0",
        "meta_info": {"unique_info": {"_instance_id": "t-1", **unique_info}},
        "tools": [],
        "messages": messages,
    }


def judged_run(inputs: Path, out: Path, base_url: str, *extra: str) -> int:
    """`trajcurate run` of every trial (`--instance-status all`) with the judges' requests
    going to `base_url` (a loopback server); `extra` picks the judge and the rest."""
    argv = ["run", "--no-progress", "--input", str(inputs), "--output", str(out)]
    argv += ["--instance-status", "all", "--llm-base-url", base_url, "--llm-model", "fake-judge"]
    return main([*argv, *extra])


def main_records(out: Path, job: str) -> list[dict[str, Any]]:
    """The main-agent records of a run's `<out>/<job>/im.jsonl`, in file order."""
    lines = (out / job / "im.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    return [r for r in records if r["meta_info"]["unique_info"]["_agent_type"] == "main"]
