"""The IM reader's first look (`im_index.py`): instances handed on as soon as they are
complete, never split by a count that is too low, and the same bundles as without it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.readers import im_jsonl
from transforms.readers.bundle import ReaderError
from transforms.readers.confined import ReadLimits
from transforms.readers.im_builder import build_im_record
from transforms.readers.im_index import instance_line_counts


def _record(instance: str, agent_type: str = "main", text: str = "hi") -> dict[str, Any]:
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
    return build_im_record(messages, instance_id=instance, agent_type=agent_type)


def _line(instance: str, agent_type: str = "main", text: str = "hi") -> bytes:
    return orjson.dumps(_record(instance, agent_type, text))


def _counts(data: bytes, chunk: int = 7, cap: int = 2**20) -> Counter[str] | None:
    return instance_line_counts((data[i : i + chunk] for i in range(0, len(data), chunk)), cap)


def _bundles(path: Path, **kwargs: Any) -> list[tuple[str, list[str], list[str]]]:
    return [
        (b["instance_id"], [orjson.dumps(r).decode() for r in b["records"]], b["warnings"])
        for b in im_jsonl.read(path, **kwargs)
    ]


def test_a_contiguous_instance_goes_on_once_its_last_line_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [_line("a"), _line("a", "subagent"), _line("b"), _line("c"), _line("d")]
    path = tmp_path / "im.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    parsed: list[bytes] = []
    parse = im_jsonl._parse

    def counted_parse(raw: bytes) -> Any:
        parsed.append(raw)
        return parse(raw)

    monkeypatch.setattr(im_jsonl, "_parse", counted_parse)
    bundles = im_jsonl.read(path)
    first = next(bundles)
    assert (first["instance_id"], len(first["records"])) == ("a", 2)
    assert len(parsed) == 2  # b, c and d not parsed yet: nothing else held
    assert [b["instance_id"] for b in bundles] == ["b", "c", "d"]


def test_an_interleaved_instance_waits_for_its_last_line_and_keeps_the_order(
    tmp_path: Path,
) -> None:
    lines = [_line("a"), _line("b"), _line("a", "subagent"), _line("c")]
    path = tmp_path / "im.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert [(i, len(r), w) for i, r, w in _bundles(path)] == [
        ("a", 2, []),
        ("b", 1, []),
        ("c", 1, []),
    ]


def test_each_line_counts_once_for_every_id_it_names(tmp_path: Path) -> None:
    nested = _record("a")
    nested["messages"][0]["content"] = 'say "_instance_id": "b" inside a text'  # escaped quotes
    nested["meta_info"]["unique_info"]["_instance_metadata"] = {"_instance_id": "c"}
    spaced = b'{"_instance_id" :\t"a", "x": {"_instance_id": "a"}}'
    escaped_value = b'{"_instance_id": "caf\\u00e9 \\"quoted\\""}'
    data = b"\n".join([orjson.dumps(nested), spaced, escaped_value, b"", b"not json"]) + b"\n"
    assert _counts(data) == Counter({"a": 2, "c": 1, 'café "quoted"': 1})


@pytest.mark.parametrize(
    "data",
    [
        b'{"_instance\\u005fid": "a"}\n',  # a key spelled with an escape hides from the search
        b'{"_instance_id": "a", "text": "\\u0061"}\n',  # any escaped lowercase letter: to be safe
        b"\xff\xfe" + '{"_instance_id": "a"}\n'.encode("utf-16-le"),
        b'{"_instance_id": "a", "pad": "' + b"x" * 100 + b'"}\n',  # over the cap below
    ],
    ids=["escaped-key", "escaped-letter", "utf-16", "long-line"],
)
def test_no_counts_where_a_line_could_be_missed(data: bytes) -> None:
    assert _counts(data, cap=64) is None


def test_a_long_line_still_refuses_the_file_before_any_bundle(tmp_path: Path) -> None:
    path = tmp_path / "im.jsonl"
    path.write_bytes(_line("a") + b"\n" + _line("b", text="x" * 5000) + b"\n")
    bundles = im_jsonl.read(path, ReadLimits(max_file_bytes=4000))
    with pytest.raises(ReaderError, match="line 2 is over the --max-file-mb cap"):
        next(bundles)


def test_an_id_the_counts_miss_stops_early_hand_on_and_nothing_is_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [_line("b"), _line("b", "subagent"), _line("c")]
    path = tmp_path / "im.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(im_jsonl, "instance_line_counts", lambda *_: Counter({"c": 1}))
    assert [(i, len(r), w) for i, r, w in _bundles(path)] == [("b", 2, []), ("c", 1, [])]


_IDS = st.sampled_from(["a", "b", "c", 'd"q', "é"])
_LINES = st.one_of(
    st.tuples(_IDS, st.sampled_from(["main", "subagent"])).map(lambda t: _line(*t)),
    _IDS.map(lambda i: _line("z", text=f'"_instance_id": "{i}"')),  # named inside a text
    _IDS.map(lambda i: b'{"meta_info": {"unique_info": {"_instance_id": ' + orjson.dumps(i)),
    st.just(b"not json"),
    st.just(b""),
)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_LINES, max_size=12), bound=st.sampled_from([2, 10_000]))
def test_the_same_bundles_as_waiting_for_the_end(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], bound: int
) -> None:
    path = tmp_path_factory.mktemp("im") / "im.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(im_jsonl, "instance_line_counts", lambda *_: None)
        try:
            expected: Any = _bundles(path, max_buffered=bound)
        except ReaderError as exc:
            expected = str(exc)
    try:
        got: Any = _bundles(path, max_buffered=bound)
    except ReaderError as exc:
        got = str(exc)
    assert got == expected


@pytest.mark.parametrize("chunk", [1, 3, 64, 10**6])
def test_counts_do_not_depend_on_where_the_reads_cut_the_lines(chunk: int) -> None:
    lines = [_line(i, text="x" * n) for i, n in (("a", 0), ("b", 300), ("a", 5), ("c", 90))]
    data = b"\n".join(lines)  # the last line without its newline
    assert _counts(data, chunk=chunk) == {"a": 2, "b": 1, "c": 1}
    assert _counts(data, chunk=chunk, cap=200) is None  # b's line is over the cap
