"""IM record validation (formats.md §4) on the real reference records."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from scorers.im import InvalidRecord, agent_type, validate_im_record
from scorers.im_schema import IM_RECORD_ADAPTER


def _first_main(cases: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in cases if agent_type(r) == "main")


def test_every_reference_record_validates_and_is_returned_unchanged(
    cases: list[dict[str, Any]], cases_lines: list[bytes]
) -> None:
    assert len(cases) == 335
    for record, line in zip(cases, cases_lines, strict=True):
        assert validate_im_record(record) is record
        assert record == orjson.loads(line)


def test_tools_null_is_accepted_but_tools_missing_is_not(cases: list[dict[str, Any]]) -> None:
    record = _first_main(cases)
    record["tools"] = None
    validate_im_record(record)
    del record["tools"]
    with pytest.raises(InvalidRecord, match=r"^tools: Field required$"):
        validate_im_record(record)


def test_unknown_unique_info_keys_round_trip_unchanged(cases: list[dict[str, Any]]) -> None:
    record = _first_main(cases)
    unique_info = record["meta_info"]["unique_info"]
    unique_info["_source_shard"] = 7
    unique_info["judge"] = {"verdict": "ok", "notes": [None, 1.5, {"k": ["v"]}]}
    original = orjson.dumps(record)

    assert orjson.dumps(validate_im_record(record)) == original
    validated = IM_RECORD_ADAPTER.validate_python(record)
    assert validated == orjson.loads(original)
    validated_unique_info = dict(validated["meta_info"]["unique_info"])
    assert validated_unique_info["judge"] == unique_info["judge"]
    assert validated_unique_info["_source_shard"] == 7


def test_bad_role_gives_readable_reason(cases: list[dict[str, Any]]) -> None:
    record = _first_main(cases)
    record["messages"][1]["role"] = "bot"
    with pytest.raises(InvalidRecord) as info:
        validate_im_record(record)
    assert str(info.value) == (
        "messages.1.role: Input should be 'system', 'user', 'assistant' or 'tool' (got \"bot\")"
    )


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        (
            ("meta_info", "rounds"),
            "6",
            'meta_info.rounds: Input should be a valid integer (got "6")',
        ),
        (
            ("meta_info", "rounds"),
            True,
            "meta_info.rounds: Input should be a valid integer (got true)",
        ),
        (
            ("meta_info", "rounds"),
            -1,
            "meta_info.rounds: Input should be greater than or equal to 0 (got -1)",
        ),
        (
            ("messages", 1, "content"),
            None,
            "messages.1.content: Input should be a valid string (got null)",
        ),
        (("version",), "1.0", "version: Input should be '2.0.0' (got \"1.0\")"),
        (
            ("meta_info", "unique_info", "_agent_type"),
            "helper",
            "meta_info.unique_info._agent_type: Input should be 'main' or 'subagent' "
            '(got "helper")',
        ),
    ],
)
def test_wrong_type_gives_location_and_value(
    cases: list[dict[str, Any]], path: tuple[Any, ...], value: object, reason: str
) -> None:
    record = _first_main(cases)
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(InvalidRecord) as info:
        validate_im_record(record)
    assert str(info.value) == reason


def test_tool_call_arguments_must_be_a_json_string(cases: list[dict[str, Any]]) -> None:
    record = next(r for r in cases if any(m.get("tool_calls") for m in r["messages"]))
    index, message = next((i, m) for i, m in enumerate(record["messages"]) if m.get("tool_calls"))
    message["tool_calls"][0]["function"]["arguments"] = {"path": "a.py"}
    where = rf"^messages\.{index}\.tool_calls\.0\.function\.arguments: "
    with pytest.raises(InvalidRecord, match=where + "Input should be a valid string"):
        validate_im_record(record)


def test_extra_top_level_key_and_non_objects_are_rejected(cases: list[dict[str, Any]]) -> None:
    record = copy.deepcopy(_first_main(cases))
    record["weight"] = 1
    with pytest.raises(InvalidRecord, match=r"^weight: Extra inputs are not permitted$"):
        validate_im_record(record)
    for value, kind in ([], "array"), ("x", "string"), (None, "null"), (3, "number"):
        with pytest.raises(InvalidRecord, match=rf"^record is a JSON {kind}, expected an object$"):
            validate_im_record(value)


def test_several_errors_are_counted_in_the_reason() -> None:
    with pytest.raises(InvalidRecord, match=r"^version: Field required \[\+3 more error\(s\)\]$"):
        validate_im_record({})


def test_invalid_record_is_a_value_error() -> None:
    assert issubclass(InvalidRecord, ValueError)


def test_agent_type(cases: list[dict[str, Any]]) -> None:
    assert sum(agent_type(r) == "subagent" for r in cases) == 4
    record = _first_main(cases)
    assert agent_type(record) == "main"
    del record["meta_info"]["unique_info"]["_agent_type"]
    assert agent_type(record) == "main"
    validate_im_record(record)
    assert agent_type({}) == "main"
