"""IM validity beyond the schema: role order (formats.md §4), what SFT data needs, and
instance-aware checks.

A bundle (all records of one trial) is valid only if every record is: a trainer must never
see a subagent record whose main record was dropped, or the reverse. So the trainable rules
(an empty prompt, a call left unanswered before the last turn, nothing to learn from) hold
for subagent records too, and a subagent record failing one drops its whole trial, the
reason naming it ("record 2 of 3 (subagent): ...").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any, TypeGuard

from scorers.im import IM_FAST, InvalidRecord, agent_type, validate_im_record

# The fidelity kind a reader counts when its log ends on tool results the model never
# answered (transforms/readers/conversation.py cuts them): the run was stopped after a call.
UNANSWERED_RESULTS = "unanswered_tool_results_dropped"
# What Claude Code 2.0 sends to fill the prompt cache (transforms/readers: WARMUP_PROMPT): a
# record whose prompt is only this has no task in it.
WARMUP_PROMPTS = frozenset({"Warmup"})

_ALLOWED_NEXT = {
    "user": frozenset({"assistant"}),
    "assistant": frozenset({"tool", "user"}),
    "tool": frozenset({"tool", "assistant", "user"}),
}


def role_order_problem(record: Mapping[str, Any]) -> str | None:
    """Why the record's message roles are not in a trainable order, or None if they are.

    formats.md §4 (corrected): after an assistant message WITH `tool_calls` come the `tool`
    messages answering them (`tool_call_id` matching, in call order; see `_answers_problem`
    for the one tolerance, an unanswered call); an assistant message
    WITHOUT `tool_calls` is followed by a `user` message (a follow-up request, in any
    scaffold) or ends the record. A `user` message may also follow the tool messages (a
    request typed after an interrupted or rejected call: the model saw the result, then the
    request). So multi-turn sessions are valid, and a `tool` message that answers no call of
    the assistant message before it is not.
    """
    messages = _conversation(record)
    return _role_order_problem(messages, _tool_answers(messages))


def _conversation(record: Mapping[str, Any]) -> list[Any]:
    """The record's messages but its system messages."""
    return [m for m in record.get("messages") or [] if m.get("role") != "system"]


def _tool_answers(messages: list[Any]) -> dict[int, list[str]]:
    """For each message followed right away by `tool` messages, their `tool_call_id`s (in
    one pass: the role order and the unanswered-call rule both read them)."""
    answers: dict[int, list[str]] = {}
    run: list[str] | None = None
    for index, message in enumerate(messages):
        if message.get("role") != "tool":
            run = None
            continue
        if run is None:
            if not index:
                continue  # the first message: nothing before it to answer
            run = answers[index - 1] = []
        run.append(str(message.get("tool_call_id") or ""))
    return answers


def _role_order_problem(messages: list[Any], answers: dict[int, list[str]]) -> str | None:
    roles = [m.get("role") for m in messages]
    if not roles:
        return "no messages besides the system prompt"
    if roles[0] != "user":
        return f"first non-system message is {roles[0]!r}, expected 'user'"
    if roles[-1] != "assistant":
        return f"last message is {roles[-1]!r}, expected 'assistant'"
    for index, (current, following) in enumerate(pairwise(roles)):
        if following not in _ALLOWED_NEXT.get(current or "", _NOTHING):
            return f"message {index + 2} ({following!r}) may not follow {current!r}"
    last = len(messages) - 1
    for index, role in enumerate(roles):
        if role == "assistant":
            problem = _answers_problem(messages[index], answers.get(index, _NONE), index == last)
            if problem:
                return f"message {index + 1}: {problem}"
    return None


_NOTHING: frozenset[str] = frozenset()
_NONE: list[str] = []  # no answers (never changed)


def _answers_problem(message: Mapping[str, Any], answers: list[str], last: bool) -> str | None:
    """What is wrong with the `tool` messages (`answers`) right after an assistant message,
    or None.

    With calls: `tool` messages follow, each answering a different call of this message, in
    call order. A call left unanswered (a killed run, a lost result) is tolerated; a `user`
    message right after the calls is not. The last assistant message may end on its calls.
    Without calls: a `user` message or the end follows (a `tool` message answers nothing).
    """
    calls = message.get("tool_calls") or []
    if not calls:
        return "a tool message follows an assistant message without tool_calls" if answers else None
    if not answers:
        if last:
            return None
        return f"its {len(calls)} tool call(s) are not answered by tool messages"
    call_ids = [str(call.get("id") or "") if _is_mapping(call) else "" for call in calls]
    if not _in_order(answers, call_ids):
        return f"tool messages answer {answers} but the tool calls are {call_ids} (in call order)"
    return None


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """`isinstance(value, Mapping)`, without the ABC check for a dict (the usual case)."""
    return type(value) is dict or isinstance(value, Mapping)


def _in_order(answers: list[str], call_ids: list[str]) -> bool:
    """Each answer names a different call, in the calls' order (a subsequence of them)."""
    position = 0
    for answer in answers:
        while position < len(call_ids) and call_ids[position] != answer:
            position += 1
        if position == len(call_ids):
            return False
        position += 1
    return True


def record_problem(record: object) -> str | None:
    """Schema, role-order and nothing-to-train problems of one record, as a one-line reason."""
    problem = schema_problem(record)
    if problem is not None or not isinstance(record, Mapping):
        return problem
    return trainable_problem(record)


def schema_problem(record: object) -> str | None:
    """Why `record` is not a structurally valid IM record (what scoring needs), or None."""
    try:
        validate_im_record(record)
    except InvalidRecord as exc:
        return f"invalid IM record: {exc}"
    return None


# True only when `trainable_rules` finds nothing (`_im_fast.c`); None in pure Python.
NATIVE_TRAINABLE_OK: Callable[[object], bool] | None = (
    None if IM_FAST is None else IM_FAST.trainable_ok
)


def trainable_problem(record: Mapping[str, Any]) -> str | None:
    """Why a valid IM record cannot be SFT data, or None (`trainable_rules`); the common
    case, a trainable record, is told in C without running the rules."""
    if NATIVE_TRAINABLE_OK is not None and NATIVE_TRAINABLE_OK(record):
        return None
    return trainable_rules(record)


def trainable_rules(record: Mapping[str, Any]) -> str | None:
    """Why a valid IM record cannot be SFT data, or None: its role order, a run cut off
    after a tool result, an empty prompt, a call left unanswered before the last turn, or
    nothing to learn from (checked in that order; the first found is the reason)."""
    messages = _conversation(record)
    answers = _tool_answers(messages)
    problem = _role_order_problem(messages, answers)
    if problem:
        return f"invalid role order: {problem}"
    return (
        stopped_after_result_problem(record)
        or empty_prompt_problem(record)
        or _unanswered_call_problem(messages, answers)
        or nothing_to_learn_problem(record)
    )


def stopped_after_result_problem(record: Mapping[str, Any]) -> str | None:
    """Why a record whose log ended on tool results the model never answered is no SFT data.

    Its reader cut those results (the model never saw them), so the record ends on the calls
    that produced them: the run was stopped mid-task (a timeout, a kill, a step limit), and
    training on it would teach the model to stop after a call. Its score says so too (SUB's
    base, DPI's truncation penalty); a run that ends on a call nobody answered by design
    (OpenHands' `finish`) has no result to cut and is not affected.
    """
    info = (record.get("meta_info") or {}).get("unique_info") or {}
    metadata = info.get("_instance_metadata") if _is_mapping(info) else None
    fidelity = metadata.get("fidelity") if _is_mapping(metadata) else None
    count = fidelity.get(UNANSWERED_RESULTS) if _is_mapping(fidelity) else None
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return (
            f"truncated: the run stopped after {count} tool result(s) the model never "
            "answered (its last call got no reply)"
        )
    return None


def empty_prompt_problem(record: Mapping[str, Any]) -> str | None:
    """Why the record's prompt (its first user message, which every answer follows) gives
    the model nothing to answer, or None: no text once stripped (a log that never recorded
    the request), or only Claude Code's prompt-cache greeting ("Warmup"), which is no task."""
    first = next((m for m in record.get("messages") or [] if m.get("role") == "user"), None)
    if first is None:
        return None  # no user message at all: the role order says so
    text = str(first.get("content") or "").strip()
    if not text:
        return "empty prompt: the first user message has no text"
    if text in WARMUP_PROMPTS:
        return f"empty prompt: the first user message is Claude Code's warmup greeting {text!r}"
    return None


def unanswered_call_problem(record: Mapping[str, Any]) -> str | None:
    """Why a call of the record got no result although the model went on, or None.

    Every tool call of an assistant message before the last one must be answered by one of
    the `tool` messages right after it (the role order tolerates a lost result; a trainer
    would teach the model to go on without one). The last assistant message may end on its
    calls (OpenHands' `finish`, a run stopped after a call). Names the first such call.
    """
    messages = _conversation(record)
    return _unanswered_call_problem(messages, _tool_answers(messages))


def _unanswered_call_problem(messages: list[Any], answers: dict[int, list[str]]) -> str | None:
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=0)
    for index in range(last):
        message = messages[index]
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue  # no call to leave unanswered
        left = _unanswered(calls, answers.get(index, _NONE))
        if left:
            call_id = str(left[0].get("id") or "") if isinstance(left[0], Mapping) else ""
            return (
                f"unanswered call: message {index + 1} calls {_call_name(left[0]) or 'a tool'} "
                f"(id {call_id or 'missing'}) and no tool message answers it before the model "
                "goes on"
            )
    return None


def _unanswered(calls: Sequence[Any], answers: list[str]) -> list[Any]:
    """The calls of an assistant message that no `tool` message right after it answers
    (`answers`; matched to calls in call order, as `_in_order` does)."""
    left: list[Any] = []
    pending = iter(answers)
    wanted = next(pending, None)
    for call in calls:
        call_id = str(call.get("id") or "") if _is_mapping(call) else ""
        if wanted is not None and wanted == call_id:
            wanted = next(pending, None)
        else:
            left.append(call)
    return left


def _call_name(call: Any) -> str:
    function = call.get("function") if isinstance(call, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    return str(name) if name else ""


def nothing_to_learn_problem(record: Mapping[str, Any]) -> str | None:
    """Why the model's turns hold nothing to learn from, or None: no assistant message has
    text or a tool call (reasoning alone is no answer: a model trained on it learns to think
    and say nothing), or the model only made calls that were never answered, without a word
    of text or reasoning of its own."""
    messages = record.get("messages") or []
    assistants = [m for m in messages if m.get("role") == "assistant"]
    if not any(str(m.get("content") or "").strip() or m.get("tool_calls") for m in assistants):
        return "nothing to learn from: no assistant message has text or a tool call"
    answered = any(m.get("role") == "tool" for m in messages)
    said = any(
        str(m.get("content") or "").strip() or str(m.get("reasoning_content") or "").strip()
        for m in assistants
    )
    if not answered and not said:
        return "tool calls never answered and no text: nothing to train on"
    return None


def bundle_problem(
    records: Sequence[Any], check: Callable[[Any], str | None] = record_problem
) -> str | None:
    """The first problem `check` finds in any record of a bundle (then dropped whole)."""
    if not records:
        return "no records"
    for index, record in enumerate(records):
        problem = check(record)
        if problem:
            kind = agent_type(record) if isinstance(record, Mapping) else "main"
            which = "" if kind == "main" else f" ({kind})"
            return f"record {index + 1} of {len(records)}{which}: {problem}"
    return None
