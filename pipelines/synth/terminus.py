"""Terminus-2 ATIF: JSON answers `{analysis, plan, commands, task_complete}` (formats.md §3).

Answers are stored either as the raw JSON text or as "Analysis/Plan" text with
`bash_command` / `mark_task_complete` tool calls. Finishing takes two `task_complete: true`
answers (the second confirms). Long runs are compacted in one of two ways: a summarisation
subagent written to `trajectory.summarization-1-summary.json` and referenced from a system
step (`subagent_trajectory_ref`), or a continuation in `trajectory.cont-1.json` named by
`continued_trajectory_ref`.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from pipelines.synth.common import (
    AgentFiles,
    AgentRun,
    Clock,
    Meter,
    Model,
    final_metrics,
    new_uuid,
)
from pipelines.synth.scenario import Action, Episode, Turn

__all__ = ["terminus_atif"]

Step = dict[str, Any]
SUMMARY_FILE = "trajectory.summarization-1-summary.json"
CONT_FILE = "trajectory.cont-1.json"
_ANALYSES = (
    "The previous command finished.",
    "The output above shows the current state.",
    "Nothing unexpected so far.",
)


def _keystrokes(action: Action) -> list[tuple[str, float]]:
    if action.kind == "list":
        return [(action.command + "\n", 0.1)]
    if action.kind == "read":
        return [(f"cat {action.path}\n", 0.1)]
    if action.kind == "grep":
        return [(f"grep -rn '{action.pattern}' .\n", 0.1)]
    if action.kind == "edit" and action.error:
        return [(f"sed -i 's/{action.old.strip()}/{action.new.strip()}/' {action.path}\n", 0.1)]
    if action.kind in ("edit", "write"):
        return [(f"cat > {action.path} <<'EOF'\n{action.content}EOF\n", 0.1)]
    if action.kind == "run":
        return [(action.command + "\n", 0.5 if action.exit_code == 127 else 5.0)]
    return []


def _screen(action: Action, prompt: str) -> str:
    keys = _keystrokes(action)[0][0]
    echo = keys.rstrip("\n").replace("\n", "\n> ")
    if action.kind in ("edit", "write") and not action.error:
        return f"{prompt}{echo}\n"
    output = action.output
    if action.kind == "edit":
        output = "sed: -e expression #1, char 9: unterminated `s' command"
    return f"{prompt}{echo}\n{output}\n"


@dataclass
class _File:
    """One trajectory file being written: its steps and its own token meter."""

    meter: Meter
    steps: list[Step] = field(default_factory=list)

    def add(self, step: Step) -> None:
        self.steps.append({"step_id": len(self.steps) + 1, **step})


class _Writer:
    def __init__(self, ep: Episode, model: Model, clock: Clock, rng: random.Random) -> None:
        self.ep, self.model, self.clock, self.rng = ep, model, clock, rng
        self.prompt = f"root@{rng.getrandbits(48):012x}:/app# "
        self.tools = rng.random() < 0.5  # Analysis/Plan text + tool calls, else raw JSON
        self.calls = 0

    def meter(self) -> Meter:
        return Meter(self.model, self.rng, context=self.rng.randint(1_200, 2_500))

    def system_prompt(self) -> str:
        return (
            "You are solving a task in a Linux terminal. Reply with one JSON object with the "
            "keys `analysis` (what you see), `plan` (what you will do next), `commands` (a list "
            'of {"keystrokes": ..., "duration": seconds}) and `task_complete` (true once you '
            "are done). Keystrokes are sent verbatim, so end each command with a newline.\n\n"
            f"Task:\n{self.ep.instruction}\n\nTerminal:\n{self.prompt}"
        )

    def answer(
        self,
        out: _File,
        analysis: str,
        plan: str,
        keys: list[tuple[str, float]],
        complete: bool,
        screen: str,
    ) -> None:
        n = self.calls
        self.calls += 1
        step: Step = {
            "timestamp": self.clock.stamp(),
            "source": "agent",
            "model_name": self.model.name,
        }
        if self.tools:
            calls = [
                {
                    "tool_call_id": f"call_{n}_{k + 1}",
                    "function_name": "bash_command",
                    "arguments": {"keystrokes": text, "duration": d},
                }
                for k, (text, d) in enumerate(keys)
            ]
            if complete:
                calls.append(
                    {
                        "tool_call_id": f"call_{n}_task_complete",
                        "function_name": "mark_task_complete",
                        "arguments": {},
                    }
                )
            step["message"] = f"Analysis: {analysis}\nPlan: {plan}"
            step["tool_calls"] = calls
            result: dict[str, Any] = {"content": screen}
            if keys:
                result = {"source_call_id": calls[0]["tool_call_id"], **result}
            step["observation"] = {"results": [result]}
        else:
            body = {
                "analysis": analysis,
                "plan": plan,
                "commands": [{"keystrokes": t, "duration": d} for t, d in keys],
                "task_complete": complete,
            }
            step["message"] = json.dumps(body, indent=2)
            step["observation"] = {"results": [{"content": screen}]}
        step["metrics"] = self.usage(out, step["message"] + str(keys), screen)
        out.add(step)

    def usage(self, out: _File, written: str, read: str) -> dict[str, Any]:
        usage = out.meter.step(written, read)
        return {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "cost_usd")}

    def turn(self, out: _File, turn: Turn, first: bool) -> None:
        keys = [k for action in turn.actions for k in _keystrokes(action)]
        if not keys:
            return
        screen = "".join(_screen(a, self.prompt) for a in turn.actions if _keystrokes(a))
        analysis = turn.reasoning or (
            "The terminal is ready in /app." if first else self.rng.choice(_ANALYSES)
        )
        self.answer(
            out, analysis, turn.text, keys, False, f"New Terminal Output:\n\n{screen}{self.prompt}"
        )

    def finish(self, out: _File, final: str) -> None:
        confirm = (
            f"Current terminal state:\nNew Terminal Output:\n\n{self.prompt}\n\nYou set "
            "task_complete. Once confirmed the solution is graded and cannot change. Reply with "
            '"task_complete": true again to confirm, or keep working.'
        )
        self.answer(out, final, "The task is complete.", [], True, confirm)
        self.answer(out, "Confirming completion.", "", [], True, "New Terminal Output:\n\n")

    def summary(self, done: list[Turn]) -> str:
        t = self.ep.task
        seen = sorted({a.path for turn in done for a in turn.actions if a.path not in ("", ".")})
        return (
            f"Summary of the work so far.\nTask: {t.instruction}\nFiles looked at: "
            f"{', '.join(seen) or 'none'}.\nNext: make sure `{t.symbol}` is fixed in `{t.path}` "
            "and run the tests."
        )


@dataclass
class _Part:
    """A trajectory file of the run: where it goes and what its `agent` block says."""

    path: str
    out: _File
    session: str
    agent_name: str
    extra: dict[str, Any]

    def document(self, w: _Writer, schema: str) -> dict[str, Any]:
        agent = {
            "name": self.agent_name,
            "version": "2.0.0",
            "model_name": w.model.full_name,
            "extra": self.extra,
        }
        return {
            "schema_version": schema,
            "session_id": self.session,
            "agent": agent,
            "steps": self.out.steps,
            "final_metrics": final_metrics(self.out.meter, None),
        }


def terminus_atif(
    ep: Episode, model: Model, schema: str, clock: Clock, rng: random.Random, variant: str
) -> AgentRun:
    """`variant`: "plain", "summary" (summarisation subagent file) or "cont" (continuation)."""
    w = _Writer(ep, model, clock, rng)
    session = new_uuid(rng)
    turns = list(ep.turns)
    split = rng.randint(len(turns) // 3, 2 * len(turns) // 3) if len(turns) >= 4 else 0
    if not split:
        variant = "plain"
    main = _Part("trajectory.json", _File(w.meter()), session, "terminus-2", {"parser": "json"})
    main.out.add({"source": "user", "message": w.system_prompt()})
    parts = [main]
    current = main.out
    for i, turn in enumerate(turns):
        if i == split and variant != "plain":
            part = _compact(w, main.out, turns[:split], session, variant)
            parts.append(part)
            current = main.out if variant == "summary" else part.out
        w.turn(current, turn, first=i == 0)
    if ep.final is not None:
        w.finish(current, ep.final)
    files: AgentFiles = [(part.path, part.document(w, schema)) for part in parts]
    if variant == "cont":
        main_doc = files[0][1]
        assert isinstance(main_doc, dict)
        main_doc["continued_trajectory_ref"] = CONT_FILE
    total = Meter(model, rng, context=0)
    for part in parts:
        total.absorb(part.out.meter)
    fmt = {"plain": "atif", "summary": "atif+summary", "cont": "atif+cont"}[variant]
    return total.run(files, fmt, clock.now)


def _compact(w: _Writer, main: _File, done: list[Turn], session: str, variant: str) -> _Part:
    """Close the first part of the run: the summary subagent, or the continuation file."""
    summary = w.summary(done)
    step: Step = {
        "timestamp": w.clock.stamp(5, 20),
        "source": "system",
        "message": "Context summarised; handing off to continue the task.",
    }
    if variant == "summary":
        sub_session = f"{session}-summarization-1-summary"
        ref = {
            "session_id": sub_session,
            "trajectory_path": SUMMARY_FILE,
            "extra": {"summary": "Context summarisation 1: summary"},
        }
        step["observation"] = {"results": [{"subagent_trajectory_ref": [ref]}]}
    step["extra"] = {"context_management": {"type": "compaction", "boundary": "replace"}}
    main.add(step)
    handoff = (
        f"Another agent worked on this task before you. Its summary:\n\n{summary}\n\n"
        "Continue from here."
    )
    if variant == "summary":
        sub = _File(w.meter())
        sub.add({"source": "user", "message": "Summarise the work so far for a new agent."})
        for prior in main.steps[1:-1]:
            if prior["source"] == "agent":
                sub.add({**_copied(prior), "is_copied_context": True})
        sub.add(
            {
                "timestamp": w.clock.stamp(3, 12),
                "source": "agent",
                "model_name": w.model.name,
                "message": summary,
                "metrics": w.usage(sub, summary, ""),
            }
        )
        main.add({"timestamp": w.clock.stamp(0.2, 1), "source": "user", "message": handoff})
        extra = {"parent_session_id": session, "summarization_index": 1}
        return _Part(SUMMARY_FILE, sub, sub_session, "terminus-2-summarization-summary", extra)
    cont = _File(w.meter())
    cont.add({"source": "user", "message": w.system_prompt()})
    last = next((s for s in reversed(main.steps) if s["source"] == "agent"), None)
    if last is not None:
        cont.add({**_copied(last), "is_copied_context": True})
    cont.add({"timestamp": w.clock.stamp(0.2, 1), "source": "user", "message": handoff})
    extra = {"parser": "json", "continuation_index": 1}
    return _Part(CONT_FILE, cont, session, "terminus-2", extra)


def _copied(step: Step) -> Step:
    return {k: v for k, v in step.items() if k not in ("step_id", "metrics")}
