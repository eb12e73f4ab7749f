"""How long does one Claude Code trial with many files take to read?
(`python benchmarks/bench_trial_files.py --files 8000 100000`)

For each N it writes, under a temporary folder:
  trial    a Harbor trial whose session spawned N subagents (N `Task` calls with one
           prompt) and whose project folder holds their N transcripts
           (`<session>/subagents/agent-<i>.jsonl`): every listing, peek and link of the
           reader is exercised N times;
  folder   a folder of N/10 standalone Claude Code 2.0 sessions with their subagent files
           beside them (`agent-*.jsonl`), each session read as its own unit, as
           `trajcurate run` reads such a folder.
and times reading it (`harbor_trial.read_trial`, `claude_code.read` per session), best of
`--runs`, with `--max-trial-files` raised above N so that the trial is read, then once with
the default budget (10,000 files): the time to refuse it. Figures only; no pass or fail.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from transforms.readers import claude_code  # noqa: E402
from transforms.readers.confined import ReadLimits  # noqa: E402
from transforms.readers.harbor_trial import read_trial  # noqa: E402

SESSION = "5b0c8f3e-2f4d-4c1e-9a51-6d3f0e2b7a10"
STAMP = "2026-01-01T00:00:00Z"


def _line(**event: Any) -> bytes:
    return orjson.dumps({"sessionId": SESSION, "timestamp": STAMP, **event})


def _main_session(n: int) -> bytes:
    calls = [
        {"type": "tool_use", "id": f"call{i}", "name": "Task", "input": {"prompt": "look"}}
        for i in range(n)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": f"call{i}", "content": "found"} for i in range(n)
    ]
    lines = [
        _line(type="user", uuid="u0", message={"role": "user", "content": "fix it"}),
        _line(
            type="assistant",
            uuid="a0",
            parentUuid="u0",
            message={"id": "m0", "role": "assistant", "content": calls},
        ),
        _line(
            type="user", uuid="u1", parentUuid="a0", message={"role": "user", "content": results}
        ),
        _line(
            type="assistant",
            uuid="a1",
            parentUuid="u1",
            message={"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        ),
    ]
    return b"\n".join(lines) + b"\n"


def _subagent(i: int, session: str = SESSION) -> bytes:
    common = {"sessionId": session, "timestamp": STAMP, "isSidechain": True, "agentId": f"a{i}"}
    user = {
        **common,
        "type": "user",
        "uuid": f"s{i}",
        "message": {"role": "user", "content": "look"},
    }
    text = [{"type": "text", "text": "found"}]
    answer = {
        **common,
        "type": "assistant",
        "uuid": f"t{i}",
        "parentUuid": f"s{i}",
        "message": {"id": f"r{i}", "role": "assistant", "content": text},
    }
    return orjson.dumps(user) + b"\n" + orjson.dumps(answer) + b"\n"


def write_trial(root: Path, n: int) -> Path:
    trial = root / f"trial-{n}"
    project = trial / "agent" / "sessions" / "projects" / "-app"
    subagents = project / SESSION / "subagents"
    subagents.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_bytes(_main_session(n))
    for i in range(n):
        (subagents / f"agent-{i}.jsonl").write_bytes(_subagent(i))
    result = {"trial_name": trial.name, "task_name": "t", "verifier_result": {"rewards": {}}}
    (trial / "result.json").write_bytes(orjson.dumps(result))
    return trial


def write_folder(root: Path, sessions: int) -> Path:
    folder = root / f"folder-{sessions}"
    folder.mkdir()
    for i in range(sessions):
        session = f"session-{i}"
        user = {"type": "user", "sessionId": session, "uuid": f"u{i}", "timestamp": STAMP}
        user["message"] = {"role": "user", "content": "fix it"}
        reply = {**user, "type": "assistant", "uuid": f"a{i}", "parentUuid": f"u{i}"}
        reply["message"] = {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
        (folder / f"s{i:06d}.jsonl").write_bytes(orjson.dumps(user) + b"\n" + orjson.dumps(reply))
        (folder / f"agent-{i:06d}.jsonl").write_bytes(_subagent(i, session))
    return folder


def best(runs: int, work: Callable[[], Any]) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(runs):
        started = time.perf_counter()
        value = work()
        times.append(time.perf_counter() - started)
    return min(times), value


def _read_folder(folder: Path, limits: ReadLimits) -> int:
    getattr(claude_code, "_INDEXES", {}).clear()  # a cold index, as in a new worker
    return sum(
        len(list(claude_code.read(path, limits))) for path in sorted(folder.glob("s*.jsonl"))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[8000, 100000])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    try:
        raised = ReadLimits(max_trial_files=10**9, max_trial_seconds=10**6)  # type: ignore[call-arg]
    except TypeError:  # a version without trial budgets (to measure "before")
        raised = ReadLimits()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in args.files:
            trial = write_trial(root, n)
            seconds, bundle = best(args.runs, partial(read_trial, trial, "job", raised))
            records = len(bundle["records"])
            print(f"trial  {n:>7} files: read in {seconds:8.2f} s ({records} records)")
            seconds, bundle = best(1, partial(_refused, trial))
            print(f"trial  {n:>7} files: default budget: {seconds:8.2f} s ({bundle})")
            folder = write_folder(root, n // 10)
            seconds, _ = best(args.runs, partial(_read_folder, folder, raised))
            print(f"folder {n // 10:>7} sessions + as many subagent files: {seconds:8.2f} s")


def _refused(trial: Path) -> str:
    from transforms.intake import open_unit
    from transforms.readers.discover import ReadUnit

    (item,) = open_unit(ReadUnit(trial, "harbor", job="job"), ReadLimits())
    return item.record["reason"] if hasattr(item, "record") else "read"


if __name__ == "__main__":
    main()
