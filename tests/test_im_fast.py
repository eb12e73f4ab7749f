"""The IM checks in C (`scorers/_im_fast.c`) against the Python they stand in for.

`im_record_ok` must answer as `im_check.is_im_record` does, on every record; `trainable_ok`
may say True only where `im_validity.trainable_rules` finds nothing (it may say False more
often: the rules then decide), and on the reference records it must say True wherever the
rules do, or it saves nothing. `nameless_calls` counts what `readers.bundle`'s loop counts,
or says -1 (then the loop counts).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorers import im, im_check, im_validity
from transforms.readers import bundle

_im_fast = pytest.importorskip("scorers._im_fast", reason="C IM checks not built")

# Values a key may be given instead of its own: every JSON type, a subclass, odd numbers.
ODD_VALUES: tuple[Any, ...] = (None, True, 0, -1, 2**70, -(2**70), 1.5, "", "x", [], {}, [1])


class _Text(str):
    """A str subclass: pydantic's strict mode takes it, the fast checks do not trust it."""


def _record() -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return {
        "version": "2.0.0",
        "meta_info": {
            "teacher": "t",
            "query_source": "q",
            "response_generate_time": "g",
            "response_update_time": "u",
            "owner": "o",
            "language": "en",
            "category": "c",
            "rounds": 1,
            "unique_info": {
                "_instance_id": "i",
                "_agent_type": "main",
                "_score": None,
                "_instance_metadata": {"fidelity": {"kept": 1}},
            },
        },
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "", "reasoning_content": None, "tool_calls": [call]},
            {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "bash"},
            {"role": "assistant", "content": "done"},
        ],
    }


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key or index path inside `value`."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        yield (*path, key)
        if isinstance(item, dict | list):
            yield from _paths(item, (*path, key))


def _mutations(record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The record with one thing changed, for every place: each odd value put there, a str
    subclass, the key removed, an extra key or item beside it."""
    for path in list(_paths(record)):
        for change in (*ODD_VALUES, _Text("x"), "delete", "extra"):
            mutated = copy.deepcopy(record)
            parent = mutated
            for key in path[:-1]:
                parent = parent[key]
            last = path[-1]
            if change == "delete":
                del parent[last]
            elif change == "extra":
                if isinstance(parent, dict):
                    parent["zz_extra"] = 1
                else:
                    parent.append(copy.deepcopy(parent[last]))
            else:
                parent[last] = change
            yield mutated


def _nameless_agrees(record: dict[str, Any]) -> None:
    """The C count of nameless calls is the Python loop's, or -1 where that loop must count
    (or would crash: not of the usual types)."""
    messages = record.get("messages") or []
    counted = _im_fast.nameless_calls(messages)
    try:
        expected = bundle.nameless_calls_counted(messages)
    except (AttributeError, TypeError):
        assert counted == -1
        return
    assert counted in (expected, -1)


def _rules(record: Any) -> str | Exception | None:
    try:
        return im_validity.trainable_rules(record)
    except Exception as exc:  # the rules crash on some odd shapes: never trainable then
        return exc


def test_the_c_record_check_is_in_use_and_accepts_a_valid_record() -> None:
    assert im.IM_RECORD_CHECK is _im_fast.im_record_ok
    assert im_validity.NATIVE_TRAINABLE_OK is _im_fast.trainable_ok
    assert _im_fast.im_record_ok(_record()) and _im_fast.trainable_ok(_record())


def test_the_c_checks_on_every_single_change_of_a_record() -> None:
    count = 0
    for record in _mutations(_record()):
        count += 1
        assert _im_fast.im_record_ok(record) is im_check.is_im_record(record), record
        if _im_fast.trainable_ok(record):
            assert _rules(record) is None, record
        _nameless_agrees(record)
    assert count > 500


def test_the_c_checks_on_the_reference_records(cases: list[dict[str, Any]]) -> None:
    untrainable = 0
    for record in cases:
        assert _im_fast.im_record_ok(record) is im_check.is_im_record(record)
        expected = im_validity.trainable_rules(record)
        assert _im_fast.trainable_ok(record) is (expected is None), expected
        untrainable += expected is not None
        assert _im_fast.nameless_calls(record["messages"]) == bundle.nameless_calls_counted(
            record["messages"]
        )
    assert 0 < untrainable < len(cases)  # both answers met
    assert bundle.NATIVE_NAMELESS_CALLS is _im_fast.nameless_calls


ROLES = st.sampled_from(["user", "assistant", "tool", "system", "other", None, 1])
TEXTS = st.one_of(
    st.sampled_from(["", " \n", "\u3000", "hi", " Warmup\n", "Warmup", "warmup", "Warmup!"]),
    st.none(),
    st.integers(0, 1),
    st.text(max_size=3),
)
IDS = st.one_of(st.sampled_from(["a", "b", "c", ""]), st.none(), st.integers(0, 1))
FIDELITY = st.one_of(st.none(), st.integers(-1, 2), st.booleans(), st.just("x"), st.just(2.0))


def _call(call_id: Any) -> dict[str, Any]:
    name = "" if call_id == "c" else "bash"  # a call without a name now and then
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


@st.composite
def _assistant(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    """An assistant message and its call ids."""
    message: dict[str, Any] = {"role": "assistant", "content": draw(TEXTS)}
    if draw(st.booleans()):
        message["reasoning_content"] = draw(TEXTS)
    ids = draw(st.lists(IDS, max_size=3))
    if ids or draw(st.booleans()):
        message["tool_calls"] = [_call(i) for i in ids] or draw(st.sampled_from([None, []]))
    return message, ids


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Mostly well-formed turns (a prompt, calls answered in order, an assistant last), with
    answers left out, reordered or doubled, follow-up requests, and one value changed."""
    messages = [{"role": "system", "content": "s"}] if draw(st.booleans()) else []
    messages.append({"role": "user", "content": draw(TEXTS)})
    for _ in range(draw(st.integers(0, 3))):
        message, ids = draw(_assistant())
        messages.append(message)
        answers = draw(st.sampled_from(["all", "reordered", "fewer", "more"]))
        answered = list(ids)
        if answers == "reordered":
            answered = draw(st.permutations(ids))
        elif answers == "fewer":
            answered = answered[: draw(st.integers(0, len(answered)))]
        elif answers == "more":
            answered.append(draw(IDS))
        messages += [{"role": "tool", "content": "r", "tool_call_id": i} for i in answered]
        if draw(st.booleans()):
            messages.append({"role": "user", "content": draw(TEXTS)})
    messages.append(draw(_assistant())[0])
    if draw(st.booleans()):
        target = messages[draw(st.integers(0, len(messages) - 1))]
        key = draw(st.sampled_from(["role", "content", "tool_calls", "tool_call_id"]))
        target[key] = draw(st.one_of(ROLES, TEXTS, IDS))
    return messages


@settings(max_examples=2000)
@given(messages=conversations(), dropped=FIDELITY)
def test_the_c_trainable_check_never_passes_what_the_rules_refuse(
    messages: list[dict[str, Any]], dropped: Any
) -> None:
    record = _record()
    record["messages"] = messages
    fidelity = record["meta_info"]["unique_info"]["_instance_metadata"]["fidelity"]
    fidelity[im_validity.UNANSWERED_RESULTS] = dropped
    assert _im_fast.im_record_ok(record) is im_check.is_im_record(record)
    if _im_fast.trainable_ok(record):
        assert _rules(record) is None
    _nameless_agrees(record)
