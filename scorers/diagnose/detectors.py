"""The detectors: each looks at one agent's trajectory (or at the main agent and its subagents
together) and returns a `Finding` — confidence, description, evidence — or None.

Severity is not decided here: it comes from the profile in force (`profiles.py`), so a
Claude Code run and a Terminus-2 run can weigh the same finding differently. What each
detector means, when it fires and how sure it is, is in its docstring; `DETECTORS` lists them
with their axis (process: `trajectory_score`; outcome: `task_completion_score`) and title.
Evidence message indexes point into the record the detection is written on (delegation
detectors: the main record; subagents are named in the snippets).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from scorers.diagnose.model import OUTCOME, PROCESS, Finding, snippet
from scorers.diagnose.view import AgentView
from scorers.tqs_v2.components import ends_cleanly, verification_runs
from scorers.tqs_v2.errors import Outcome, test_outcome
from scorers.tqs_v2.text import strip_ansi
from scorers.tqs_v2.trajectory import Action, Observation, Turn, parse_terminus_answer

LOOP_MIN_TURNS = 3
REPEATED_ERROR_MIN = 3
STORM_MIN_RESULTS = 5
STORM_MIN_RATE = 0.5
CHURN_MIN_EVENTS = 2
SCAN_CHARS = 2000  # head and tail of a text the marker scans read
DELEGATION_TOOLS = frozenset({"task", "agent", "dispatch_agent"})

_DIGITS = re.compile(r"0x[0-9a-fA-F]+|\d+")
_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context ?window (?:exceeded|is full)"
    r"|exceed(?:s|ed)? (?:the )?(?:model'?s? )?(?:maximum )?context (?:window|length|limit)"
    r"|prompt is too long|input is too long for|ContextWindowExceeded|context overflow"
    r"|too many tokens in (?:the )?(?:prompt|input|request)",
    re.IGNORECASE,
)
_OVERFLOW_HINTS = ("ontext", "too long", "okens")  # cheap guard before the regex
_BAD_ARGUMENTS = re.compile(
    r"The arguments provided to the tool are invalid|Error validating args|InputValidationError"
    r"|parameter is required for|Invalid `[^`]*` parameter|missing required (?:argument|parameter)"
    r"|is a required property|Invalid (?:tool )?arguments?\b",
)
_COMPLETION_CLAIM = re.compile(
    r"\b(?:all\s+)?tests?\s+(?:now\s+)?(?:pass|passed|passing)\b"
    r"|\b(?:fix|task|issue|bug|change|patch|implementation)\s+(?:is\s+)?"
    r"(?:complete|completed|fixed|resolved|done|ready|working)\b"
    r"|\bsuccessfully\s+(?:fixed|resolved|implemented|completed)\b|\"task_complete\":\s*true",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Detector:
    name: str
    axis: str
    title: str
    main_only: bool  # outcome detectors judge the run, not a subagent's part of it


AgentCheck = Callable[[AgentView], Finding | None]
BundleCheck = Callable[[AgentView, Sequence[AgentView]], Finding | None]


# --- helpers ---------------------------------------------------------------------------------


def _ramp(count: int, steps: Sequence[float]) -> float:
    """steps[0] at the threshold count, then one step per extra occurrence, capped."""
    return steps[min(count, len(steps) - 1)]


def _args_key(action: Action) -> bytes:
    try:
        return orjson.dumps(action.args, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return repr(action.args).encode()


def _call_summary(action: Action) -> str:
    detail = action.command or next(iter(action.targets), "") or _args_key(action).decode()
    return snippet(f"{action.name}: {detail}", 120)


def _observation_indexes(view: AgentView, observations: Sequence[Observation]) -> tuple[int, ...]:
    found = (view.observation_message(o) for o in observations)
    return tuple(sorted({i for i in found if i is not None}))


def _window(text: str) -> str:
    return text if len(text) <= 2 * SCAN_CHARS else text[:SCAN_CHARS] + "\n" + text[-SCAN_CHARS:]


def _content(message: dict[str, Any]) -> str:
    value = message.get("content")
    return value if isinstance(value, str) else ""


def _error_key(text: str) -> str:
    """First and last non-empty line, numbers and addresses masked: the same error raised at
    another line or with another id is still the same error."""
    lines = [line.strip() for line in strip_ansi(_window(text)).splitlines() if line.strip()]
    if not lines:
        return ""
    head, tail = lines[0][:120], lines[-1][:120]
    return _DIGITS.sub("#", head if head == tail else f"{head} … {tail}")


def _is_plain_ending(view: AgentView) -> bool:
    final = view.trajectory.final_message
    return (
        final is not None
        and final.get("role") == "assistant"
        and not final.get("tool_calls")
        and bool(_content(final).strip())
    )


def finished(view: AgentView) -> bool:
    """The scaffold's own rule for a finished main trajectory (TQS V2's SUB ending); a
    subagent has finished when it ends on a non-empty answer (what it reports back)."""
    if view.agent_type == "subagent":
        return _is_plain_ending(view)
    return ends_cleanly(view.trajectory)


def delegations(view: AgentView) -> list[Action]:
    """Calls that hand work to a subagent (Claude Code's Task / Agent, OpenCode's task)."""
    return [a for a in view.trajectory.actions if a.name in DELEGATION_TOOLS]


# --- per-agent process detectors ---------------------------------------------------------------


def _same_calls(turn: Turn, previous: Turn) -> bool:
    """Both turns call the same tools with equal arguments, in the same order."""
    actions, before = turn.actions, previous.actions
    if not actions or len(actions) != len(before):
        return False
    for a, b in zip(actions, before, strict=True):
        if a.name != b.name or a.args != b.args:
            return False
    return True


def detect_loop(view: AgentView) -> Finding | None:
    """Repeated identical actions: at least 3 consecutive turns making exactly the same calls
    (tool and arguments). Confidence 0.6 at 3 turns, 0.8 at 4, 1.0 from 5; evidence: the
    turns of the longest run."""
    turns = view.trajectory.turns
    runs: list[tuple[int, int]] = []  # (first turn, length)
    start = 0
    for index in range(1, len(turns) + 1):
        if index == len(turns) or not _same_calls(turns[index], turns[index - 1]):
            if index - start >= LOOP_MIN_TURNS:
                runs.append((start, index - start))
            start = index
    if not runs:
        return None
    first, length = max(runs, key=lambda run: run[1])
    summary = _call_summary(turns[first].actions[0])
    more = f"; {len(runs)} such runs in all" if len(runs) > 1 else ""
    return Finding(
        "loop",
        _ramp(length - LOOP_MIN_TURNS, (0.6, 0.8, 1.0)),
        f"{length} consecutive turns repeat the same call ({summary}){more}",
        tuple(view.turn_messages[t] for t in range(first, first + length)),
        (summary,),
    )


def detect_repeated_error(view: AgentView) -> Finding | None:
    """The same error (first and last line, numbers masked) returned at least 3 times.
    Confidence 0.7 at 3, 0.85 at 4, 1.0 from 5; evidence: the tool results carrying it."""
    groups: dict[str, list[Observation]] = {}
    for observation in view.trajectory.observations:
        if observation.is_error:
            groups.setdefault(_error_key(observation.text), []).append(observation)
    if not groups:
        return None
    key, same = max(groups.items(), key=lambda item: len(item[1]))
    if len(same) < REPEATED_ERROR_MIN:
        return None
    return Finding(
        "repeated_error",
        _ramp(len(same) - REPEATED_ERROR_MIN, (0.7, 0.85, 1.0)),
        f"the same error came back {len(same)} times",
        _observation_indexes(view, same),
        (snippet(key),),
    )


def detect_error_storm(view: AgentView) -> Finding | None:
    """At least half of the tool results (of at least 5) are errors. Confidence 0.6 at 50%,
    rising to 1.0 when every result failed; evidence: the failing results."""
    observations = view.trajectory.observations
    if len(observations) < STORM_MIN_RESULTS:
        return None
    errors = [o for o in observations if o.is_error]
    rate = len(errors) / len(observations)
    if rate < STORM_MIN_RATE:
        return None
    return Finding(
        "error_storm",
        round(min(1.0, 0.6 + 0.8 * (rate - STORM_MIN_RATE)), 4),
        f"{len(errors)} of {len(observations)} tool results are errors ({rate:.0%})",
        _observation_indexes(view, errors),
    )


def detect_truncation(view: AgentView) -> Finding | None:
    """The run stops without finishing by its scaffold's rule: inside a tool call (the last
    message is a tool result, a terminal screen, or a call never answered) with confidence
    1.0; on a message the scaffold does not count as a finish (a Terminus-2 answer without
    task_complete, an empty answer) with 0.7. Evidence: the last message."""
    trajectory = view.trajectory
    if not trajectory.turns:
        return Finding("truncation", 1.0, "the agent never answered", (max(view.last_index, 0),))
    if finished(view):
        return None
    final = trajectory.final_message or {}
    role = final.get("role")
    mid_action = role in ("tool", "user") or bool(final.get("tool_calls"))
    where = "inside a tool call" if mid_action else "without a finish the scaffold recognises"
    return Finding(
        "truncation",
        1.0 if mid_action else 0.7,
        f"the trajectory ends {where} (last message: {role})",
        (view.last_index,),
    )


def detect_unverified_finish(view: AgentView) -> Finding | None:
    """The agent changed files, then finished without running any verification (a test, a
    build, running the program) after its last successful write. Confidence 0.9 when it
    never verified anything, 0.7 when it verified only before that write. Evidence: the last
    write and the final message."""
    actions = view.trajectory.actions
    writes = [i for i, a in enumerate(actions) if a.is_write and a.succeeded]
    if not writes or not finished(view):
        return None
    last_write = writes[-1]
    runs = {id(a) for a in verification_runs(view.trajectory)}
    if any(id(a) in runs for a in actions[last_write + 1 :]):
        return None
    verified_before = any(id(a) in runs for a in actions[:last_write])
    return Finding(
        "unverified_finish",
        0.7 if verified_before else 0.9,
        "finished without a verification run after the last edit"
        if verified_before
        else "finished without ever running a test, a build or the program",
        (view.action_message(actions[last_write]), view.last_index),
        (_call_summary(actions[last_write]),),
    )


def detect_context_overflow(view: AgentView) -> Finding | None:
    """The context window overflowed: a provider's "maximum context length" / "prompt is too
    long" error. In the trial's exception or the reader's warnings: 1.0; in one of the last
    two messages (the run died of it): 0.9; only in earlier failing tool results (a
    subagent or a tool that ran out of context): 0.5. Evidence: the messages carrying it."""
    meta = view.metadata
    recorded = " ".join(
        str(v)
        for v in (meta.get("exception_type"), meta.get("exception_message"), *_warnings(meta))
        if v
    )
    if recorded and _OVERFLOW.search(recorded):
        return Finding(
            "context_overflow", 1.0, "the run hit the context window", (), (snippet(recorded),)
        )
    messages = view.trajectory.messages
    failed = [o for o in view.trajectory.observations if o.is_error]
    candidates = {
        *_observation_indexes(view, failed),
        *range(max(0, len(messages) - 2), len(messages)),
    }
    hits = [i for i in sorted(candidates) if _mentions_overflow(_content(messages[i]))]
    if not hits:
        return None
    late = hits[-1] >= len(messages) - 2
    text = _content(messages[hits[-1]])
    return Finding(
        "context_overflow",
        0.9 if late else 0.5,
        "the context window overflowed" + ("" if late else " (in a failing tool result)"),
        tuple(hits),
        (snippet(_overflow_line(text)),),
    )


def _overflow_line(text: str) -> str:
    match = _OVERFLOW.search(_window(text))
    if match is None:
        return ""
    start = text.rfind("\n", 0, match.start()) + 1
    return text[start : match.end() + 80]


def _mentions_overflow(text: str) -> bool:
    if not text:
        return False
    window = _window(text)
    return any(hint in window for hint in _OVERFLOW_HINTS) and bool(_OVERFLOW.search(window))


def _warnings(meta: Any) -> list[str]:
    warnings = meta.get("warnings") if hasattr(meta, "get") else None
    return [w for w in warnings if isinstance(w, str)] if isinstance(warnings, list) else []


def detect_hallucinated_tool(view: AgentView) -> Finding | None:
    """A call to a tool that is not in the record's tool list (only when the record declares
    its tools: Claude Code's ATIF rebuilds the list from the calls, Terminus-2 has none).
    Confidence 1.0; evidence: the calling messages; snippets: the unknown names."""
    calls = view.undeclared_calls
    if not calls:
        return None
    unknown = tuple(dict.fromkeys(name for _, name in calls))
    return Finding(
        "hallucinated_tool",
        1.0,
        f"{len(calls)} call(s) to tools not in the tool list: {', '.join(unknown)}",
        tuple(dict.fromkeys(index for index, _ in calls)),
        unknown,
    )


def _answers_json(view: AgentView) -> bool:
    """A Terminus-2 run by its recorded identity, or by answering in JSON at least once: a
    tool-less record of another text-action agent (mini-SWE-agent's THOUGHT and bash
    block) never parses, and is not made of invalid answers."""
    if view.metadata.get("scaffold") == "terminus2":
        return True
    return any(turn.answer is not None for turn in view.trajectory.turns)


def _json_after_think(text: str) -> bool:
    """An answer behind a leading <think>...</think> (left in the content by a writer that did
    not split it out) is still the JSON the scaffold reads."""
    stripped = text.lstrip()
    if not stripped.startswith("<think>"):
        return False
    end = stripped.find("</think>")
    return end >= 0 and parse_terminus_answer(stripped[end + len("</think>") :]) is not None


def detect_invalid_tool_arguments(view: AgentView) -> Finding | None:
    """Calls the tool could not take: arguments that are not a JSON object, a tool answering
    with an argument-validation error, or (Terminus-2) an answer that is not the JSON the
    scaffold parses (in a run that is Terminus-2 by its recorded identity or that answers in
    JSON at least once). Confidence 0.7 for one, 0.85 for two, 1.0 from three; evidence: the
    calls, answers or tool results."""
    indexes = list(view.bad_argument_calls)
    trajectory = view.trajectory
    for observation in trajectory.observations:
        if observation.is_error and _BAD_ARGUMENTS.search(observation.text[:SCAN_CHARS]):
            index = view.observation_message(observation)
            if index is not None:
                indexes.append(index)
    if trajectory.scaffold == "terminus2" and view.agent_type == "main" and _answers_json(view):
        indexes += [
            view.turn_messages[t.index]
            for t in trajectory.turns
            if t.answer is None and t.text and not _json_after_think(t.text)
        ]
    if not indexes:
        return None
    found = sorted(set(indexes))
    return Finding(
        "invalid_tool_arguments",
        _ramp(len(found) - 1, (0.7, 0.85, 1.0)),
        f"{len(found)} call(s) or answer(s) with arguments the tool could not take",
        tuple(found),
    )


# --- per-agent outcome detectors ---------------------------------------------------------------


def detect_no_successful_write(view: AgentView) -> Finding | None:
    """No edit or file write succeeded in the whole run (a coding task usually needs one).
    Confidence 0.9 when writes were tried and all failed (evidence: those calls), 0.8 when
    none was tried."""
    actions = view.trajectory.actions
    writes = [a for a in actions if a.is_write]
    if any(a.succeeded for a in writes):
        return None
    if writes:
        return Finding(
            "no_successful_write",
            0.9,
            f"all {len(writes)} write(s) failed",
            tuple(dict.fromkeys(view.action_message(a) for a in writes)),
        )
    return Finding("no_successful_write", 0.8, "the agent never wrote a file")


def detect_task_failure(view: AgentView) -> Finding | None:
    """The last verification run failed and the agent finished anyway, with no change after
    it: it claims completion right after a failing test. Confidence 1.0 when the final answer
    claims success in words, 0.8 otherwise; evidence: the run, its result, the final message."""
    if not finished(view):
        return None
    runs = verification_runs(view.trajectory)
    if not runs:
        return None
    last = runs[-1]
    observation = last.observation
    if observation is None or test_outcome(observation.text) is not Outcome.FAIL:
        return None
    actions = view.trajectory.actions
    position = next(i for i, a in enumerate(actions) if a is last)
    if any(a.is_write and a.succeeded for a in actions[position + 1 :]):
        return None
    final = view.trajectory.final_message or {}
    claims = bool(_COMPLETION_CLAIM.search(_content(final)[-SCAN_CHARS:]))
    result = view.observation_message(observation)
    evidence = [view.action_message(last), *([result] if result is not None else [])]
    return Finding(
        "task_failure",
        1.0 if claims else 0.8,
        "finished right after a failing verification run"
        + (" and claims success" if claims else ""),
        tuple(dict.fromkeys([*evidence, view.last_index])),
        (snippet(last.command, 120),),
    )


def detect_run_exception(view: AgentView) -> Finding | None:
    """The harness recorded an exception for the trial (`_instance_metadata.exception_type`:
    AgentTimeoutError, NonZeroAgentExitCodeError, ...). Confidence 1.0; a context-window
    error is reported by `context_overflow` instead."""
    kind = view.metadata.get("exception_type")
    if not isinstance(kind, str) or not kind:
        return None
    message = view.metadata.get("exception_message")
    text = f"{kind}: {message}" if isinstance(message, str) and message else kind
    if _OVERFLOW.search(text):
        return None
    return Finding("run_exception", 1.0, f"the run raised {kind}", (), (snippet(text),))


# --- main agent with its subagents ------------------------------------------------------------


def compaction_events(main: AgentView, subagents: Sequence[AgentView]) -> list[str | int]:
    """Summarisation subagents (by name) and compaction notes in the main conversation."""
    events: list[str | int] = [s.name for s in subagents if "summar" in s.name.lower()]
    return [*main.compaction_notes, *events]


def detect_compaction_churn(main: AgentView, subagents: Sequence[AgentView]) -> Finding | None:
    """The context was compacted or summarised again and again (at least twice): work is
    lost at each compaction. Confidence 0.6 at 2, 0.8 at 3, 1.0 from 4; evidence: the
    compaction notes in the main record; snippets: the summarisation subagents."""
    events = compaction_events(main, subagents)
    if len(events) < CHURN_MIN_EVENTS:
        return None
    return Finding(
        "compaction_churn",
        _ramp(len(events) - CHURN_MIN_EVENTS, (0.6, 0.8, 1.0)),
        f"the context was compacted {len(events)} times",
        tuple(e for e in events if isinstance(e, int)),
        tuple(e for e in events if isinstance(e, str)),
    )


def detect_unused_delegation(main: AgentView, subagents: Sequence[AgentView]) -> Finding | None:
    """A subagent delegation that returned nothing usable: its result is empty or an error.
    Confidence 0.9; evidence: the delegating calls and their results."""
    del subagents  # judged from what came back to the main agent
    bad = [
        a
        for a in delegations(main)
        if a.observation is not None and (a.observation.is_error or not a.observation.text.strip())
    ]
    if not bad:
        return None
    evidence: list[int] = []
    for action in bad:
        evidence.append(main.action_message(action))
        result = main.observation_message(action.observation) if action.observation else None
        if result is not None:
            evidence.append(result)
    return Finding(
        "unused_delegation",
        0.9,
        f"{len(bad)} delegation(s) returned nothing usable (empty or an error)",
        tuple(evidence),
        tuple(_call_summary(a) for a in bad[:3]),
    )


def detect_abandoned_subagent(main: AgentView, subagents: Sequence[AgentView]) -> Finding | None:
    """A subagent left unfinished: a delegation whose result never came back (confidence
    1.0), or a subagent record that stops without a final answer (0.8). Evidence: the
    delegating calls; snippets: the unfinished subagents and where they stop."""
    lost = [a for a in delegations(main) if a.observation is None]
    unfinished = [s for s in subagents if not finished(s)]
    if not lost and not unfinished:
        return None
    notes = [
        f"{s.name}: stops at message {s.last_index} "
        f"({(s.trajectory.final_message or {}).get('role')})"
        for s in unfinished
    ]
    parts = [f"{len(lost)} delegation(s) never answered"] if lost else []
    parts += [f"{len(unfinished)} subagent(s) stop without an answer"] if unfinished else []
    return Finding(
        "abandoned_subagent",
        1.0 if lost else 0.8,
        "; ".join(parts),
        tuple(main.action_message(a) for a in lost),
        tuple(notes[:5]),
    )


# --- the table ---------------------------------------------------------------------------------

DETECTORS: dict[str, Detector] = {
    d.name: d
    for d in (
        Detector("loop", PROCESS, "Loop: repeated identical actions", False),
        Detector("repeated_error", PROCESS, "Repeated identical error", False),
        Detector("error_storm", PROCESS, "Error storm: most tool calls fail", False),
        Detector("truncation", PROCESS, "Truncated: ends without finishing", False),
        Detector("unverified_finish", PROCESS, "Unverified finish: edits never verified", False),
        Detector("context_overflow", PROCESS, "Context window overflow", False),
        Detector("hallucinated_tool", PROCESS, "Call to a tool that does not exist", False),
        Detector("invalid_tool_arguments", PROCESS, "Invalid tool arguments", False),
        Detector("compaction_churn", PROCESS, "Compaction churn", True),
        Detector("unused_delegation", PROCESS, "Delegation returned nothing usable", True),
        Detector("abandoned_subagent", PROCESS, "Abandoned subagent", True),
        Detector("no_successful_write", OUTCOME, "No successful write", True),
        Detector("task_failure", OUTCOME, "Finished after a failing test", True),
        Detector("run_exception", OUTCOME, "The harness recorded an exception", True),
    )
}

AGENT_CHECKS: tuple[tuple[str, AgentCheck], ...] = (
    ("loop", detect_loop),
    ("repeated_error", detect_repeated_error),
    ("error_storm", detect_error_storm),
    ("truncation", detect_truncation),
    ("unverified_finish", detect_unverified_finish),
    ("context_overflow", detect_context_overflow),
    ("hallucinated_tool", detect_hallucinated_tool),
    ("invalid_tool_arguments", detect_invalid_tool_arguments),
    ("no_successful_write", detect_no_successful_write),
    ("task_failure", detect_task_failure),
    ("run_exception", detect_run_exception),
)
BUNDLE_CHECKS: tuple[tuple[str, BundleCheck], ...] = (
    ("compaction_churn", detect_compaction_churn),
    ("unused_delegation", detect_unused_delegation),
    ("abandoned_subagent", detect_abandoned_subagent),
)


def run_detectors(view: AgentView, subagents: Sequence[AgentView] = ()) -> list[Finding]:
    """Every detector that applies to `view` (a main record gets the bundle-level ones, with
    its subagents), in `DETECTORS` order; only those that fired."""
    main = view.agent_type == "main"
    findings = [
        finding
        for name, check in AGENT_CHECKS
        if main or not DETECTORS[name].main_only
        if (finding := check(view)) is not None
    ]
    if main:
        findings += [f for _, check in BUNDLE_CHECKS if (f := check(view, subagents)) is not None]
    order = list(DETECTORS)
    return sorted(findings, key=lambda f: order.index(f.detector))
