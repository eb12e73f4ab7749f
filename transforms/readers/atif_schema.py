"""Where a trajectory document breaks the ATIF schema (formats.md §2), in words a user can act on.

Two callers: format detection, which names the field that keeps a near-ATIF file (a `steps`
array, but no ATIF `schema_version`, or steps with `role` instead of `source`) from being
read as ATIF; and the ATIF reader, which reads such a file tolerantly when it is forced
(`--format atif`) or carries an ATIF `schema_version`, and turns each problem into a bundle
warning. Only what changes the conversion is checked; unknown keys are not (the reader keeps
what it does not use, as §2 asks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transforms.json_text import JSON_OBJECT
from transforms.readers.source_files import json_type

__all__ = ["MAX_PROBLEMS", "SOURCES", "schema_problems"]

SOURCES = ("system", "user", "agent")
MAX_PROBLEMS = 5


def schema_problems(doc: Any, limit: int = MAX_PROBLEMS) -> list[str]:
    """Up to `limit` one-line problems, the document level first; [] for a conformant one."""
    if not isinstance(doc, Mapping):
        return [f"the document is a JSON {json_type(doc)}, expected an object"]
    problems = _document_problems(doc)
    steps = doc.get("steps")
    for number, step in enumerate(steps if isinstance(steps, list) else [], 1):
        if len(problems) >= limit:
            break
        problems.extend(_step_problems(step, number))
    return problems[:limit]


def _document_problems(doc: Mapping[str, Any]) -> list[str]:
    problems = []
    version = doc.get("schema_version")
    if version is None:
        problems.append('no `schema_version` (ATIF files say e.g. "ATIF-v1.7")')
    elif not (isinstance(version, str) and version.startswith("ATIF-v1.")):
        problems.append(f'`schema_version` is {version!r}, expected "ATIF-v1.0" … "ATIF-v1.7"')
    steps = doc.get("steps")
    if steps is None:
        problems.append("no `steps` array")
    elif not isinstance(steps, list):
        problems.append(f"`steps` is a JSON {json_type(steps)}, expected an array")
    agent = doc.get("agent")
    if agent is not None and not isinstance(agent, Mapping):
        problems.append(f"`agent` is a JSON {json_type(agent)}, expected an object")
    return problems


def _step_problems(step: Any, number: int) -> list[str]:
    where = f"step {number}"
    if not isinstance(step, JSON_OBJECT):
        return [f"{where} is a JSON {json_type(step)}, expected an object"]
    problems = []
    source = step.get("source")
    if source not in SOURCES:
        if source is None and "role" in step:
            problems.append(f"{where} has `role` ({step['role']!r}) instead of ATIF's `source`")
        else:
            problems.append(f"{where}: `source` is {source!r}, expected system, user or agent")
    calls = step.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        problems.append(f"{where}: `tool_calls` is a JSON {json_type(calls)}, expected an array")
    for index, call in enumerate(calls if isinstance(calls, list) else [], 1):
        problems.extend(_call_problems(call, f"{where} tool call {index}"))
    observation = step.get("observation")
    if observation is not None and not isinstance(observation, JSON_OBJECT):
        kind = json_type(observation)
        problems.append(f"{where}: `observation` is a JSON {kind}, expected an object")
    return problems


def _call_problems(call: Any, where: str) -> list[str]:
    if not isinstance(call, JSON_OBJECT):
        return [f"{where} is a JSON {json_type(call)}, expected an object"]
    name = call.get("function_name")
    if isinstance(name, str) and name:
        return []
    if "function" in call or "name" in call:
        return [f"{where} is OpenAI-shaped (`function`/`name`), ATIF names it `function_name`"]
    return [f"{where} has no `function_name`"]
