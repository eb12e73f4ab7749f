"""Small IM result sets for the diagnose / gate / compare command tests (not a test module).

Runs are hand-made with `tqs_builders`: a clean one (edit, passing test, answer), a looping
one, a truncated one; each carries its task in `_instance_metadata.task_name` as trajcurate
writes it, so result sets can be paired by task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from tqs_builders import assistant, bash_step, call, claude_code_record, step

Record = dict[str, Any]
DONE = assistant("The fix is complete and all tests pass.")


def _edit() -> list[dict[str, Any]]:
    edit = call("Edit", file_path="src/app.py", old_string="a", new_string="b")
    return step([edit], ["The file src/app.py has been updated."])


def _tagged(record: Record, task: str, instance: str) -> Record:
    info = record["meta_info"]["unique_info"]
    info["_instance_id"] = instance
    info["_instance_metadata"] = {"task_name": task}
    return record


def clean(task: str, instance: str) -> Record:
    turns = [_edit(), bash_step("python -m pytest -q", "3 passed"), DONE]
    return _tagged(claude_code_record(turns), task, instance)


def looping(task: str, instance: str) -> Record:
    turns = [*(bash_step("ls /app", "a.txt") for _ in range(5)), _edit()]
    turns += [bash_step("python -m pytest -q", "3 passed"), DONE]
    return _tagged(claude_code_record(turns), task, instance)


def truncated(task: str, instance: str) -> Record:
    """Stops on a call whose result never came (IM validity tolerates a lost result)."""
    turns = [_edit(), assistant("", call("Bash", command="python -m pytest -q"))]
    return _tagged(claude_code_record(turns), task, instance)


def write_im(path: Path, records: list[Record]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def read_im(path: Path) -> list[Record]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
