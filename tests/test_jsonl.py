"""JSONL helpers: streaming line numbers, per-line errors, newline-terminated output."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.jsonl import (
    JsonlWriter,
    LineError,
    dumps_line,
    is_blank,
    iter_lines,
    parse_line,
    write_jsonl,
)


def test_iter_lines_numbers_from_one_and_strips_terminators(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a":1}\r\n\n  \n{"b":2}')
    assert list(iter_lines(path)) == [(1, b'{"a":1}'), (2, b""), (3, b"  "), (4, b'{"b":2}')]


def test_is_blank() -> None:
    assert is_blank(b"") and is_blank(b" \t ")
    assert not is_blank(b"{}")


def test_parse_line_reports_invalid_json_and_utf8() -> None:
    assert parse_line(b'{"k": [1, null]}') == {"k": [1, None]}
    with pytest.raises(LineError, match=r"^invalid JSON: unexpected end of data"):
        parse_line(b'{"k": ')
    with pytest.raises(LineError, match=r"^invalid UTF-8 at byte 7$"):
        parse_line(b'{"k": "\xff"}')


def test_writer_writes_one_newline_terminated_object_per_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with JsonlWriter(path) as writer:
        writer.write({"z": 1, "a": "é"})
        writer.write({"b": None})
    assert writer.count == 2
    assert path.read_bytes() == '{"z":1,"a":"é"}\n{"b":null}\n'.encode()
    assert dumps_line({"x": []}) == b'{"x":[]}\n'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.dictionaries(st.text(), json_values, max_size=5), max_size=5))
def test_write_then_read_round_trips(
    tmp_path_factory: pytest.TempPathFactory, objs: list[dict[str, object]]
) -> None:
    path = tmp_path_factory.getbasetemp() / "round_trip.jsonl"  # overwritten per example
    assert write_jsonl(path, objs) == len(objs)
    read = [parse_line(raw) for _, raw in iter_lines(path)]
    assert read == objs
    assert [list(o) for o in read if isinstance(o, dict)] == [list(o) for o in objs]  # key order
    assert all(orjson.dumps(a) == orjson.dumps(b) for a, b in zip(read, objs, strict=True))
