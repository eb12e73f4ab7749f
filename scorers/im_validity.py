"""IM validity beyond the schema: role order (formats.md §4) and instance-aware checks.

A bundle (all records of one trial) is valid only if every record is: a trainer must never
see a subagent record whose main record was dropped, or the reverse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from scorers.im import InvalidRecord, validate_im_record

# The fidelity kind a reader counts when its log ends on tool results the model never
# answered (transforms/readers/conversation.py cuts them): the run was stopped after a call.
UNANSWERED_RESULTS = "unanswered_tool_results_dropped"

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
    messages = [m for m in record.get("messages") or [] if m.get("role") != "system"]
    roles = [m.get("role") for m in messages]
    if not roles:
        return "no messages besides the system prompt"
    if roles[0] != "user":
        return f"first non-system message is {roles[0]!r}, expected 'user'"
    if roles[-1] != "assistant":
        return f"last message is {roles[-1]!r}, expected 'assistant'"
    for index, (current, following) in enumerate(pairwise(roles)):
        if following not in _ALLOWED_NEXT.get(current or "", frozenset()):
            return f"message {index + 2} ({following!r}) may not follow {current!r}"
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            problem = _answers_problem(messages, index)
            if problem:
                return f"message {index + 1}: {problem}"
    return None


def _answers_problem(messages: Sequence[Mapping[str, Any]], index: int) -> str | None:
    """What is wrong with the messages after assistant message `index`, or None.

    With calls: `tool` messages follow, each answering a different call of this message, in
    call order. A call left unanswered (a killed run, a lost result) is tolerated; a `user`
    message right after the calls is not. The last assistant message may end on its calls.
    Without calls: a `user` message or the end follows (a `tool` message answers nothing).
    """
    calls = messages[index].get("tool_calls") or []
    answers = []
    for later in messages[index + 1 :]:
        if later.get("role") != "tool":
            break
        answers.append(str(later.get("tool_call_id") or ""))
    if not calls:
        return "a tool message follows an assistant message without tool_calls" if answers else None
    if not answers:
        if index + 1 == len(messages):
            return None
        return f"its {len(calls)} tool call(s) are not answered by tool messages"
    call_ids = [str(call.get("id") or "") if isinstance(call, Mapping) else "" for call in calls]
    if not _in_order(answers, call_ids):
        return f"tool messages answer {answers} but the tool calls are {call_ids} (in call order)"
    return None


def _in_order(answers: list[str], call_ids: list[str]) -> bool:
    """Each answer names a different call, in the calls' order (a subsequence of them)."""
    remaining = iter(call_ids)
    return all(any(answer == call_id for call_id in remaining) for answer in answers)


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


def trainable_problem(record: Mapping[str, Any]) -> str | None:
    """Why a valid IM record cannot be SFT data (role order, a run cut off after a tool
    result, nothing to learn), or None."""
    problem = role_order_problem(record)
    if problem:
        return f"invalid role order: {problem}"
    return stopped_after_result_problem(record) or nothing_to_train_problem(record)


def stopped_after_result_problem(record: Mapping[str, Any]) -> str | None:
    """Why a record whose log ended on tool results the model never answered is no SFT data.

    Its reader cut those results (the model never saw them), so the record ends on the calls
    that produced them: the run was stopped mid-task (a timeout, a kill, a step limit), and
    training on it would teach the model to stop after a call. Its score says so too (SUB's
    base, DPI's truncation penalty); a run that ends on a call nobody answered by design
    (OpenHands' `finish`) has no result to cut and is not affected.
    """
    info = (record.get("meta_info") or {}).get("unique_info") or {}
    metadata = info.get("_instance_metadata") if isinstance(info, Mapping) else None
    fidelity = metadata.get("fidelity") if isinstance(metadata, Mapping) else None
    count = fidelity.get(UNANSWERED_RESULTS) if isinstance(fidelity, Mapping) else None
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return (
            f"truncated: the run stopped after {count} tool result(s) the model never "
            "answered (its last call got no reply)"
        )
    return None


def nothing_to_train_problem(record: Mapping[str, Any]) -> str | None:
    """Why a record has nothing to learn from, or None: every user message is empty (a log
    that never recorded the request, with no task instruction known), or the model only made
    calls that were never answered (no text or reasoning of its own, no tool result)."""
    messages = record.get("messages") or []
    users = [m for m in messages if m.get("role") == "user"]
    if users and not any(str(m.get("content") or "").strip() for m in users):
        return "empty user prompt: the log holds no request to train on"
    assistants = [m for m in messages if m.get("role") == "assistant"]
    answered = any(m.get("role") == "tool" for m in messages)
    said = any(
        str(m.get("content") or "").strip() or str(m.get("reasoning_content") or "").strip()
        for m in assistants
    )
    if assistants and not answered and not said and any(m.get("tool_calls") for m in assistants):
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
            return f"record {index + 1} of {len(records)}: {problem}"
    return None
