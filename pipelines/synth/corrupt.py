"""Bad agent files, so readers can be tested on what real job folders contain.

A bad trial gets one defect in its main agent file (or loses its agent folder): truncated
JSON, invalid UTF-8, an empty file, binary garbage, wrong field types, or a subagent
reference that escapes the trial folder. The trial's `result.json` stays normal.
"""

from __future__ import annotations

import random
from typing import Any

from pipelines.synth.common import AgentFiles, json_bytes

__all__ = ["ATIF_ONLY", "BAD_KINDS", "corrupt"]

BAD_KINDS = (
    "truncated",
    "invalid_utf8",
    "empty",
    "binary",
    "wrong_types",
    "escaping_ref",
    "missing_agent",
)
ATIF_ONLY = frozenset({"wrong_types", "escaping_ref"})
ESCAPING_PATH = "../../x.json"


def corrupt(kind: str, files: AgentFiles, rng: random.Random) -> AgentFiles | None:
    """`files` with its main (first) file damaged; None when the agent folder goes missing."""
    if kind == "missing_agent":
        return None
    path, main = files[0]
    if kind in ATIF_ONLY:
        if not isinstance(main, dict):
            raise ValueError(f"{kind} needs an ATIF main file, not {path}")
        damaged: dict[str, Any] | bytes = (
            _wrong_types(main, rng) if kind == "wrong_types" else _escaping_ref(main)
        )
    else:
        data = main if isinstance(main, bytes) else json_bytes(main)
        damaged = _damage_bytes(kind, data, rng)
    return [(path, damaged), *files[1:]]


def _damage_bytes(kind: str, data: bytes, rng: random.Random) -> bytes:
    if kind == "truncated":
        # Cut in the middle of a line, so no JSON line (or document) survives whole.
        cut = int(len(data) * rng.uniform(0.2, 0.8))
        start = data.rfind(b"\n", 0, cut) + 1
        end = data.find(b"\n", cut)
        end = len(data) if end < 0 else end
        return data[: start + max(1, (end - start) // 2)]
    if kind == "empty":
        return b""
    if kind == "binary":
        noise = bytes(rng.getrandbits(8) for _ in range(rng.randint(256, 2048)))
        return b"\x89SYN\x00\x00\x01\x00" + noise
    if kind == "invalid_utf8":
        marker = b'"message": "' if b'"message": "' in data else b'":"'
        starts: list[int] = []
        at = data.find(marker)
        while at >= 0 and len(starts) < 50:
            starts.append(at)
            at = data.find(marker, at + 1)
        at = rng.choice(starts) + len(marker) if starts else len(data) // 2
        return data[:at] + b"\xff\xfe\xc3\x28" + data[at:]
    raise ValueError(f"unknown bad-file kind {kind!r}")


def _wrong_types(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A copy of `doc` with fields of the wrong JSON type; `doc` itself is not changed."""
    out = dict(doc)
    steps = [dict(s) for s in doc.get("steps", [])]
    variant = rng.randrange(4)
    if variant == 0:
        out["steps"] = {str(s.get("step_id")): s for s in steps}
    elif variant == 1:
        for s in steps:
            s["step_id"] = str(s.get("step_id"))
            s["timestamp"] = 1_700_000_000
        out["steps"] = steps
    elif variant == 2:
        for s in steps:
            if s.get("source") == "agent":
                s["message"] = 12345
                if "tool_calls" in s:
                    s["tool_calls"] = {"0": s["tool_calls"]}
        out["steps"] = steps
    else:
        out["agent"] = str(doc.get("agent", {}).get("name", "agent"))
        out["final_metrics"] = "n/a"
        for s in steps:
            if "observation" in s:
                s["observation"] = {"results": "see log"}
        out["steps"] = steps
    return out


def _escaping_ref(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of `doc` whose first observed step references a file outside the trial."""
    steps = [dict(s) for s in doc.get("steps", [])]
    ref = {
        "session_id": "escape-1",
        "trajectory_path": ESCAPING_PATH,
        "extra": {"summary": "subagent"},
    }
    for step in steps:
        if isinstance(step.get("observation"), dict):
            results = list(step["observation"].get("results", []))
            step["observation"] = {"results": [*results, {"subagent_trajectory_ref": [ref]}]}
            break
    else:
        steps.append(
            {
                "step_id": len(steps) + 1,
                "source": "system",
                "message": "Delegated.",
                "observation": {"results": [{"subagent_trajectory_ref": [ref]}]},
            }
        )
    return {**doc, "steps": steps}
