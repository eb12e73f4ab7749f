"""IM JSONL reader: grouping by instance, rejected lines kept with file and line, bounds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from scorers.im import validate_im_record
from transforms.readers import im_jsonl
from transforms.readers.bundle import Bundle, ReaderError
from transforms.readers.im_builder import build_im_record


def _record(instance: str, agent_type: str = "main", text: str = "hi") -> dict[str, Any]:
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
    return build_im_record(
        messages,
        instance_id=instance,
        agent_type=agent_type,
        metadata={"task": instance},
        usage={"cost_usd": 1.0} if agent_type == "main" else {},
    )


def _write(path: Path, lines: list[Any]) -> Path:
    raw = [line if isinstance(line, bytes) else orjson.dumps(line) for line in lines]
    path.write_bytes(b"\n".join(raw) + b"\n")
    return path


def _summary(bundles: list[Bundle]) -> list[tuple[str, list[str]]]:
    return [
        (b["instance_id"], [r["meta_info"]["unique_info"]["_agent_type"] for r in b["records"]])
        for b in bundles
    ]


def test_reference_cases_are_335_single_record_bundles(cases_path: Path) -> None:
    bundles = list(im_jsonl.read(cases_path))
    assert len(bundles) == 335
    assert all(len(b["records"]) == 1 and b["warnings"] == [] for b in bundles)
    assert bundles[0]["format"] == "im"
    for bundle in bundles:
        validate_im_record(bundle["records"][0])


def test_interleaved_instances_group_in_first_appearance_order_main_first(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "im.jsonl",
        [
            _record("b", "subagent"),
            _record("a"),
            _record("b"),
            _record("a", "subagent"),
            _record("c"),
        ],
    )
    bundles = list(im_jsonl.read(path))
    assert _summary(bundles) == [
        ("b", ["main", "subagent"]),
        ("a", ["main", "subagent"]),
        ("c", ["main"]),
    ]
    assert bundles[0]["metadata"] == {"task": "b"}
    assert bundles[0]["usage"] == {"cost_usd": 1.0}
    assert bundles[0]["source"] == str(path)


def test_bad_lines_come_out_as_rejected_bundles_with_file_and_line(tmp_path: Path) -> None:
    broken = _record("b")
    broken["meta_info"]["rounds"] = "two"
    path = _write(
        tmp_path / "im.jsonl",
        [
            _record("a"),
            b'{"version": "2.0.0", "meta_',
            b"",
            _record("b", "subagent"),
            broken,
            b"[1]",
            _record("c"),
        ],
    )
    bundles = list(im_jsonl.read(path))
    assert _summary(bundles) == [
        ("a", ["main"]),
        (f"{path}:2", []),
        ("b", []),
        (f"{path}:6", []),
        ("c", ["main"]),
    ]
    assert bundles[1]["warnings"][0].startswith(f"rejected: {path}:2: invalid JSON: ")
    # A bad line that still names its instance rejects the whole instance (formats.md §4).
    assert bundles[2]["warnings"] == [
        f"rejected: {path}:5: not an IM record: "
        'meta_info.rounds: Input should be a valid integer (got "two")',
        "1 valid record(s) of this instance dropped",
    ]
    assert bundles[3]["warnings"] == [
        f"rejected: {path}:6: a JSON array, expected an IM record object"
    ]


def test_past_the_buffer_bound_an_instance_is_split_and_says_so(tmp_path: Path) -> None:
    lines = [_record("a"), _record("b"), _record("c"), _record("a", "subagent")]
    bundles = list(im_jsonl.read(_write(tmp_path / "im.jsonl", lines), max_buffered=2))
    assert _summary(bundles) == [
        ("a", ["main"]),
        ("b", ["main"]),
        ("c", ["main"]),
        ("a", ["subagent"]),
    ]
    assert bundles[-1]["warnings"] == ["split instance: more lines after line 4"]
    assert all(b["warnings"] == [] for b in bundles[:-1])


def _raw(content: bytes) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / "im.jsonl"
        path.write_bytes(content)
        return path

    return make


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (_raw(b""), "^empty file$"),
        (_raw(b" \n\n"), "^empty file$"),
        (
            _raw(b'{"version": "2.0.0", "meta_info": {"teacher": "m'),
            r"^no IM record in the file \(line 1: invalid JSON: ",
        ),
        (
            _raw(b'{"version": "2.0.0", "meta_info": 7, "tools": [], "messages": []}\n'),
            r"^no IM record in the file \(line 1: not an IM record: meta_info: Input should be",
        ),
    ],
    ids=["empty", "blank", "truncated", "wrong-types"],
)
def test_files_with_no_record_at_all_are_refused(
    tmp_path: Path, make: Callable[[Path], Path], reason: str
) -> None:
    with pytest.raises(ReaderError, match=reason):
        list(im_jsonl.read(make(tmp_path)))
