"""The hand-written IM check (`scorers.im_check.is_im_record`) against the pydantic schema.

The fast check must be sound — True implies pydantic accepts — and, on plain JSON values (what
`orjson.loads` gives), agree with pydantic exactly. Off JSON (subclasses, tuples, non-str keys)
it may say False where pydantic accepts: `validate_im_record` then asks pydantic.
"""

from __future__ import annotations

import enum
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from scorers.im import IM_RECORD_CHECK, InvalidRecord, validate_im_record
from scorers.im_check import is_im_record
from scorers.im_schema import IM_RECORD_ADAPTER

REPO_ROOT = Path(__file__).resolve().parents[1]

FAST_CHECK_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class _Str(str):
    pass


class _Int(int):
    pass


class _Dict(dict[str, Any]):
    pass


class _List(list[Any]):
    pass


class _Level(enum.IntEnum):
    THREE = 3


def _accepted_by_pydantic(obj: object) -> bool:
    try:
        IM_RECORD_ADAPTER.validate_python(obj)
    except ValidationError:
        return False
    return True


def _is_plain_json(obj: object) -> bool:
    """Only the exact types `orjson.loads` produces, and str keys."""
    if type(obj) is dict:
        return all(type(k) is str and _is_plain_json(v) for k, v in obj.items())
    if type(obj) is list:
        return all(_is_plain_json(v) for v in obj)
    return obj is None or type(obj) in (bool, int, float, str)


def minimal_record() -> dict[str, Any]:
    """A small valid IM record with a tool and a tool call."""
    return {
        "version": "2.0.0",
        "meta_info": {
            "teacher": "t",
            "query_source": "q",
            "response_generate_time": "2025-01-01",
            "response_update_time": "2025-01-01",
            "owner": "o",
            "language": "en",
            "category": "c",
            "rounds": 1,
            "unique_info": {"_instance_id": "i-1", "_agent_type": "main", "_score": None},
        },
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": ""},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "bash"},
            {"role": "assistant", "content": "done"},
        ],
    }


# --- generated valid records ---------------------------------------------------------------

TEXT = st.text(max_size=6)
JSON_LEAF = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | TEXT
)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
STR_DICT = st.dictionaries(TEXT, JSON, max_size=3)
# Unknown keys (allowed everywhere below the top level); the prefix avoids the schema's keys.
EXTRAS = st.dictionaries(TEXT.map(lambda key: "x_" + key), JSON, max_size=2)


META_INFO_STR_KEYS = (
    "teacher",
    "query_source",
    "response_generate_time",
    "response_update_time",
    "owner",
    "language",
    "category",
)


def _maybe(
    draw: st.DrawFn, target: dict[str, Any], key: str, values: st.SearchStrategy[Any]
) -> None:
    """A NotRequired field: absent, or a drawn value."""
    if draw(st.booleans()):
        target[key] = draw(values)


@st.composite
def tool_calls(draw: st.DrawFn) -> dict[str, Any]:
    function = {"name": draw(TEXT), "arguments": draw(TEXT), **draw(EXTRAS)}
    return {"id": draw(TEXT), "type": "function", "function": function, **draw(EXTRAS)}


@st.composite
def tools(draw: st.DrawFn) -> dict[str, Any]:
    function: dict[str, Any] = {"name": draw(TEXT), **draw(EXTRAS)}
    _maybe(draw, function, "description", st.none() | TEXT)
    _maybe(draw, function, "parameters", st.none() | STR_DICT)
    return {"type": "function", "function": function, **draw(EXTRAS)}


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    message: dict[str, Any] = {"role": role, "content": draw(TEXT), **draw(EXTRAS)}
    for key in ("name", "reasoning_content", "tool_call_id"):
        _maybe(draw, message, key, st.none() | TEXT)
    _maybe(draw, message, "tool_calls", st.none() | st.lists(tool_calls(), max_size=2))
    return message


@st.composite
def meta_infos(draw: st.DrawFn) -> dict[str, Any]:
    unique_info: dict[str, Any] = {"_instance_id": draw(TEXT), **draw(EXTRAS)}
    _maybe(draw, unique_info, "_agent_type", st.sampled_from(["main", "subagent"]))
    for key in ("_score", "_gen_params", "_usage", "_instance_metadata"):
        _maybe(draw, unique_info, key, st.none() | STR_DICT)
    meta_info: dict[str, Any] = {key: draw(TEXT) for key in META_INFO_STR_KEYS}
    meta_info["rounds"] = draw(st.integers(0, 2**70))
    meta_info["unique_info"] = unique_info
    meta_info.update(draw(EXTRAS))
    return meta_info


@st.composite
def im_records(draw: st.DrawFn) -> dict[str, Any]:
    fields = {
        "version": "2.0.0",
        "meta_info": draw(meta_infos()),
        "tools": draw(st.none() | st.lists(tools(), max_size=2)),
        "messages": draw(st.lists(messages(), max_size=3)),
    }
    order = draw(st.permutations(list(fields)))
    return {key: fields[key] for key in order}


# --- mutations -----------------------------------------------------------------------------

Slot = tuple[Any, Any]  # (container, key or index) of one value in a record

# Replacement values: wrong JSON types, near-miss literals, and non-JSON look-alikes.
REPLACEMENTS: list[Callable[[], object]] = [
    lambda: None,
    lambda: True,
    lambda: False,
    lambda: 0,
    lambda: -1,
    lambda: 3.0,
    lambda: "",
    lambda: "x",
    lambda: "2.0.1",
    lambda: "Function",
    lambda: "bot",
    lambda: "helper",
    lambda: "user",
    lambda: "function",
    lambda: "main",
    lambda: [],
    lambda: [None],
    lambda: [{}],
    lambda: {},
    lambda: {"x": None},
    lambda: {1: "x"},
    lambda: (),
    lambda: _Str("user"),
    lambda: _Int(2),
    lambda: _Level.THREE,
    lambda: b"x",
]


def _slots(obj: object) -> Iterator[Slot]:
    """Every (container, key) pair in `obj`, depth first."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield obj, key
            yield from _slots(value)
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield obj, index
            yield from _slots(value)


def _containers(obj: object) -> Iterator[Any]:
    if isinstance(obj, dict | list):
        yield obj
        children = obj.values() if isinstance(obj, dict) else obj
        for child in children:
            yield from _containers(child)


def _mutate(draw: st.DrawFn, record: dict[str, Any]) -> None:
    """One random damage (or disguise) somewhere in `record`, in place."""
    kind = draw(st.sampled_from(["replace", "delete", "extra", "retype_value", "retype_key"]))
    if kind == "extra":
        target = draw(st.sampled_from([c for c in _containers(record) if isinstance(c, dict)]))
        key = draw(st.sampled_from(["x_extra", "", 1, (1, 2), None, _Str("x_sub")]))
        target[key] = draw(JSON)
        return
    container, key = draw(st.sampled_from(list(_slots(record))))
    value: object = container[key]
    if kind == "replace":
        container[key] = draw(st.sampled_from(REPLACEMENTS))()
    elif kind == "delete":
        del container[key]
    elif kind == "retype_key":
        if isinstance(container, dict) and type(key) is str:
            container[_Str(key)] = container.pop(key)
    elif isinstance(value, list):  # retype_value: same content, another (non-JSON) type
        container[key] = draw(st.sampled_from([tuple, _List]))(value)
    elif isinstance(value, dict):
        container[key] = draw(st.sampled_from([OrderedDict, _Dict]))(value)
    elif type(value) is str:
        container[key] = _Str(value)
    elif type(value) is int:
        container[key] = draw(st.sampled_from([_Int, float, bool]))(value)


@st.composite
def mutated_records(draw: st.DrawFn) -> dict[str, Any]:
    record = draw(im_records())
    for _ in range(draw(st.integers(1, 3))):
        _mutate(draw, record)
    return record


# --- tests ---------------------------------------------------------------------------------


@FAST_CHECK_SETTINGS
@given(im_records())
def test_generated_valid_records_are_accepted_by_both(record: dict[str, Any]) -> None:
    assert _accepted_by_pydantic(record)
    assert is_im_record(record)
    assert validate_im_record(record) is record


@FAST_CHECK_SETTINGS
@given(mutated_records())
def test_fast_check_is_sound_and_exact_on_json(record: dict[str, Any]) -> None:
    accepted = _accepted_by_pydantic(record)
    assert IM_RECORD_CHECK(record) is is_im_record(record)  # the C check when built
    if is_im_record(record):
        assert accepted
    if _is_plain_json(record):
        assert is_im_record(record) == accepted
        if accepted:
            assert validate_im_record(record) is record
        else:
            with pytest.raises(InvalidRecord):
                validate_im_record(record)


def _set(path: tuple[Any, ...], value: object) -> Callable[[dict[str, Any]], None]:
    def apply(record: dict[str, Any]) -> None:
        target: Any = record
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return apply


def _delete(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def apply(record: dict[str, Any]) -> None:
        target: Any = record
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return apply


# What pydantic's strict schema does with the doubtful inputs (found by experiment); the fast
# check says False for all of them, so `validate_im_record` must defer to pydantic.
PYDANTIC_VERDICTS = [
    ("rounds bool", _set(("meta_info", "rounds"), True), False),
    ("rounds float", _set(("meta_info", "rounds"), 1.0), False),
    ("rounds negative", _set(("meta_info", "rounds"), -1), False),
    ("rounds int subclass", _set(("meta_info", "rounds"), _Int(1)), True),
    ("rounds IntEnum", _set(("meta_info", "rounds"), _Level.THREE), True),
    ("version str subclass", _set(("version",), _Str("2.0.0")), True),
    ("role str subclass", _set(("messages", 1, "role"), _Str("user")), True),
    ("content bytes", _set(("messages", 1, "content"), b"hi"), False),
    ("messages tuple", lambda r: r.update(messages=tuple(r["messages"])), False),
    ("messages list subclass", lambda r: r.update(messages=_List(r["messages"])), True),
    ("meta_info OrderedDict", lambda r: r.update(meta_info=OrderedDict(r["meta_info"])), True),
    ("_score non-str key", _set(("meta_info", "unique_info", "_score"), {1: 2}), False),
    ("_score str-subclass key", _set(("meta_info", "unique_info", "_score"), {_Str("k"): 2}), True),
    ("extra non-str key", _set(("messages", 1, 7), "x"), False),
    ("_agent_type null", _set(("meta_info", "unique_info", "_agent_type"), None), False),
    ("tools missing", _delete(("tools",)), False),
    ("top-level extra key", _set(("weight",), 1), False),
]


@pytest.mark.parametrize(
    ("mutate", "pydantic_accepts"),
    [pytest.param(mutate, verdict, id=name) for name, mutate, verdict in PYDANTIC_VERDICTS],
)
def test_doubtful_inputs_fall_back_to_pydantic(
    mutate: Callable[[dict[str, Any]], None], pydantic_accepts: bool
) -> None:
    record = minimal_record()
    assert is_im_record(record)
    mutate(record)
    assert not is_im_record(record)
    assert not IM_RECORD_CHECK(record)
    assert _accepted_by_pydantic(record) is pydantic_accepts
    if pydantic_accepts:
        assert validate_im_record(record) is record


def test_non_objects_are_not_records() -> None:
    values: list[object] = [None, [], "x", 1, 1.5, True, (), OrderedDict(minimal_record())]
    for value in values:
        assert not is_im_record(value)
    assert is_im_record(dict(OrderedDict(minimal_record())))


def test_every_reference_record_passes_the_fast_check(cases: list[dict[str, Any]]) -> None:
    assert len(cases) == 335
    assert all(is_im_record(record) for record in cases)
    assert all(_accepted_by_pydantic(record) for record in cases)


IMPORT_CHECK = """
import sys
import scorers.im as im
assert "pydantic" not in sys.modules, "import"
record = {record!r}
assert im.validate_im_record(record) is record
assert "pydantic" not in sys.modules, "fast path"
record["version"] = "1.0"
try:
    im.validate_im_record(record)
    raise AssertionError("accepted")
except im.InvalidRecord as exc:
    assert str(exc) == "version: Input should be '2.0.0' (got \\"1.0\\")", str(exc)
assert "pydantic" in sys.modules, "fallback"
"""


def test_import_and_fast_path_do_not_load_pydantic() -> None:
    code = IMPORT_CHECK.format(record=minimal_record())
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
