"""One stable output schema: several jobs' IM and LF outputs load together with Hugging Face
`datasets`, also in small read chunks, and IM read back as input gives the same records.

The jobs differ the way real corpora do: synthetic Harbor jobs, the composed job of real
trajectories (Claude Code, Terminus-2 without tools, OpenHands; an AgentTimeoutError), and IM
records from elsewhere with keys trajcurate never writes, judge outputs, no tools.
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.cli import main
from pipelines.config import RUN_OPTIONS
from scorers.im import validate_im_record
from transforms.sinks import schema
from transforms.sinks.schema import (
    DATE,
    IM_SCHEMA,
    LF_SCHEMA,
    LIST,
    OBJECT,
    STRUCT,
    Field,
    conform_im_record,
    hf_features,
    lf_metadata,
    markdown_table,
)

datasets = pytest.importorskip("datasets")
pa = pytest.importorskip("pyarrow")
paj = pytest.importorskip("pyarrow.json")

COMPOSED = "2026-06-16__12-00-00"
SMALL_CHUNK = 2 << 10  # bytes: every file is read in several chunks
README = Path(__file__).resolve().parent.parent / "README.md"


def _message(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def _im_record(instance_id: str, **unique_info: Any) -> dict[str, Any]:
    """An IM record as another tool might have written it (formats.md §4)."""
    return {
        "version": "2.0.0",
        "meta_info": {
            "teacher": "m",
            "query_source": "elsewhere",
            "response_generate_time": "2026-01-02",
            "response_update_time": "2026-01-02",
            "owner": "someone",
            "language": "en",
            "category": "code",
            "rounds": 1,
            "unique_info": {"_instance_id": instance_id, **unique_info},
        },
        "tools": None,
        "messages": [
            _message("system", ""),
            _message("user", "fix the bug", weight=1),
            _message("assistant", '{"analysis": "done", "commands": [], "task_complete": true}'),
        ],
    }


@pytest.fixture(scope="module")
def im_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """IM records with extra keys, judge outputs, integer floats, odd timestamps."""
    judged = {
        "llm_composite_score": 1,
        "llm_model": "judge",
        "llm_detailed_results": {"total_checks": 15, "by_category": {"F": {"score": 0.5}}},
        "llm_checklist_category_scores": {"tests": 1.0},
    }
    records = [
        _im_record(
            "im-a",
            _agent_type="main",
            _gen_params={"temperature": 1, "seed": 7},
            _usage={"n_input_tokens": 10, "cost_usd": 1},
            _instance_metadata={
                "started_at": "2026-01-02T03:04:05Z",
                "finished_at": 1767323045,
                "exception_type": "AgentTimeoutError",
                "rewards": {"reward": 1, "partial": 0.5},
                "labels": ["x"],
            },
            _llm_judge=judged,
            source_dataset="other-tool",
        ),
        _im_record("im-b", _instance_metadata=None, _score=None),
    ]
    path = tmp_path_factory.mktemp("im") / "records.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


@pytest.fixture(scope="module")
def inputs(shared_dir: Path, im_input: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Two synthetic jobs, the composed job and the IM file."""
    jobs = tmp_path_factory.mktemp("inputs") / "jobs"
    assert main(["synth", "--out", str(jobs), "--jobs", "2", "--trials", "6", "--seed", "11"]) == 0
    (jobs / "synth-manifest.jsonl").unlink()
    shutil.copytree(shared_dir / "data" / "composed" / "jobs" / COMPOSED, jobs / COMPOSED)
    return ["--input", str(jobs), "--input", str(im_input)]


def _run(inputs: list[str], out: Path, *extra: str) -> Path:
    argv = ["run", "--no-progress", "--instance-status", "all", "--output", str(out)]
    assert main([*argv, *inputs, *extra]) == 0
    return out


@pytest.fixture(scope="module")
def outputs(inputs: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run over all inputs, with the Parquet twins (no dedup: the two IM records share
    their messages, and both must be written)."""
    return _run(inputs, tmp_path_factory.mktemp("out"), "--parquet", "--dedup", "off")


def _files(out: Path, name: str) -> list[Path]:
    files = sorted(out.glob(f"*/{name}"))
    assert len(files) >= 4, files  # 2 synth jobs, the composed job, standalone
    return files


def _written(files: list[Path]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in files:
        data = path.read_bytes()
        if path.suffix == ".json":
            rows.extend(orjson.loads(data) if data else [])  # an empty LF file: no example
        else:
            rows.extend(orjson.loads(line) for line in data.splitlines())
    return rows


def _load(files: list[Path], kind: str, cache: Path, chunksize: int) -> Any:
    return datasets.load_dataset(
        "json",
        data_files=[str(f) for f in files],
        split="train",
        features=hf_features(kind),
        chunksize=chunksize,
        cache_dir=str(cache),
    )


def _same(loaded: Any, written: Any, path: str = "") -> list[str]:
    """Where a loaded row differs from the written one (dates as text, floats to 1e-12:
    pyarrow's JSON parser may round the last digit)."""
    if isinstance(loaded, dt.date):
        loaded = loaded.isoformat()
    if isinstance(written, Mapping) and isinstance(loaded, Mapping):
        keys = sorted(set(written) | set(loaded))
        return [d for k in keys for d in _same(loaded.get(k), written.get(k), f"{path}.{k}")]
    if isinstance(written, list) and isinstance(loaded, list) and len(written) == len(loaded):
        pairs = enumerate(zip(loaded, written, strict=True))
        return [d for i, (a, b) in pairs for d in _same(a, b, f"{path}[{i}]")]
    if isinstance(written, float) and isinstance(loaded, float):
        return [] if math.isclose(loaded, written, rel_tol=1e-12) else [path]
    if type(loaded) is not type(written) or loaded != written:
        return [f"{path}: loaded {loaded!r}, written {written!r}"]
    return []


@pytest.mark.parametrize("kind, name", [("im", "im.jsonl"), ("lf", "lf.json")])
@pytest.mark.parametrize("chunksize", [10 << 20, SMALL_CHUNK])
def test_several_jobs_load_together_with_datasets(
    outputs: Path, tmp_path: Path, kind: str, name: str, chunksize: int
) -> None:
    files = _files(outputs, name)
    written = _written(files)
    for order in (files, files[::-1]):
        loaded = _load(order, kind, tmp_path / f"cache-{order[0].parent.name}", chunksize)
        assert loaded.num_rows == len(_written(order)) == len(written)
        rows = _written(order)
        problems = [p for got, row in zip(loaded, rows, strict=True) for p in _same(got, row)]
        assert not problems, problems[:5]


def test_the_json_loader_needs_no_features_for_anything_but_untyped_nulls(outputs: Path) -> None:
    """pyarrow's own inference on every record alone (the smallest read chunk) never disagrees
    with the schema except where JSON cannot say the type (a key null throughout: Arrow's
    null type) and for `object` values; `date` text is read as a timestamp everywhere."""
    for kind, name in (("im", "im.jsonl"), ("lf", "lf.json")):
        for row in _written(_files(outputs, name)):
            table = paj.read_json(pa.py_buffer(orjson.dumps(row)))
            for member in schema.SCHEMAS[kind].fields:
                inferred = table.schema.field(member.name).type
                problems = _disagreements(inferred, member, member.name)
                assert not problems, problems[:5]


def _disagreements(inferred: Any, field: Field, path: str) -> list[str]:
    if pa.types.is_null(inferred) or field.type == OBJECT:
        return []
    if field.type == STRUCT:
        if not pa.types.is_struct(inferred):
            return [f"{path}: {inferred}"]
        names = [inferred.field(i).name for i in range(inferred.num_fields)]
        if sorted(names) != sorted(m.name for m in field.fields):
            return [f"{path}: keys {names}"]
        return [
            d
            for m in field.fields
            for d in _disagreements(inferred.field(m.name).type, m, f"{path}.{m.name}")
        ]
    if field.type == LIST and field.item is not None:
        if not pa.types.is_list(inferred):
            return [f"{path}: {inferred}"]
        return _disagreements(inferred.value_type, field.item, f"{path}[]")
    expected = pa.timestamp("s") if field.type == DATE else schema.arrow_type(field)
    return [] if inferred == expected else [f"{path}: {inferred}, schema {expected}"]


def _conforms(value: Any, field: Field, path: str) -> list[str]:
    """Every key of the schema present, no other, each value of its type."""
    if value is None:
        return [] if field.nullable else [f"{path}: null"]
    if field.type == STRUCT:
        if not isinstance(value, dict) or list(value) != [m.name for m in field.fields]:
            return [f"{path}: keys {list(value) if isinstance(value, dict) else value!r}"]
        return [d for m in field.fields for d in _conforms(value[m.name], m, f"{path}.{m.name}")]
    if field.type == LIST and field.item is not None:
        if not isinstance(value, list):
            return [f"{path}: {value!r}"]
        return [d for i, v in enumerate(value) for d in _conforms(v, field.item, f"{path}[{i}]")]
    expected: dict[str, type | tuple[type, ...]] = {
        "string": str,
        "timestamp": str,
        "date": str,
        "json": str,
        "int": int,
        "float": float,
        "bool": bool,
        "object": object,
    }
    ok = isinstance(value, expected[field.type]) and not (
        field.type == "int" and isinstance(value, bool)
    )
    return [] if ok else [f"{path}: {value!r} is not {field.type}"]


def test_every_written_record_has_every_key_with_its_type(outputs: Path) -> None:
    for record in _written(_files(outputs, "im.jsonl")):
        assert not _conforms(record, IM_SCHEMA, "")
        validate_im_record(record)  # still a valid IM record
        metadata = record["meta_info"]["unique_info"]["_instance_metadata"]
        for stamp in (metadata["started_at"], metadata["finished_at"]):
            assert stamp is None or (stamp.endswith("Z") and "." in stamp)
    for example in _written(_files(outputs, "lf.json")):
        assert not _conforms(example, LF_SCHEMA, "")


def test_what_the_schema_does_not_name_is_kept_in_the_remainders(outputs: Path) -> None:
    records = {
        r["meta_info"]["unique_info"]["_instance_id"]: r
        for r in _written([outputs / "standalone" / "im.jsonl"])
    }
    info = records["im-a"]["meta_info"]["unique_info"]
    assert orjson.loads(info["_extra"]) == {"messages[1].weight": 1, "source_dataset": "other-tool"}
    assert info["_gen_params"]["temperature"] == 1.0
    assert orjson.loads(info["_gen_params"]["extra"]) == {"seed": 7}
    metadata = info["_instance_metadata"]
    assert metadata["started_at"] == "2026-01-02T03:04:05.000000Z"
    assert metadata["finished_at"] == "2026-01-02T03:04:05.000000Z"  # epoch seconds
    assert metadata["rewards"] == {"reward": 1, "partial": 0.5}
    assert orjson.loads(metadata["extra"]) == {"labels": ["x"]}
    judge = info["_llm_judge"]
    assert judge["llm_composite_score"] == 1.0 and judge["llm_error"] is None
    assert records["im-a"]["tools"] == []
    assert records["im-b"]["meta_info"]["unique_info"]["_llm_judge"] is None
    lf = {e["_instance_id"]: e for e in _written([outputs / "standalone" / "lf.json"])}
    assert orjson.loads(lf["im-a"]["_instance_metadata"])["labels"] == ["x"]
    assert orjson.loads(lf["im-a"]["_gen_params"]) == {"seed": 7, "temperature": 1}


def test_conforming_twice_changes_nothing() -> None:
    record = _im_record(
        "x",
        _score={"composite_score": "high", "novel": 1},
        _usage={"n_input_tokens": 2.0, "note": "n"},
        _extra='{"earlier": true}',
    )
    once = conform_im_record(record)
    assert once["meta_info"]["unique_info"]["_score"]["composite_score"] is None
    assert once["meta_info"]["unique_info"]["_usage"]["n_input_tokens"] == 2
    assert orjson.loads(once["meta_info"]["unique_info"]["_extra"]) == {
        "_score.composite_score": "high",
        "_score.novel": 1,
        "earlier": True,
        "messages[1].weight": 1,
    }
    assert conform_im_record(once) == once
    usage = lf_metadata(once["meta_info"]["unique_info"])["_usage"]
    assert orjson.loads(usage)["extra"] == '{"note":"n"}'


ODD_MESSAGES: list[Any] = [
    {"role": "user", "content": "plain"},
    {"content": "no role"},
    {"role": "user", "content": None},
    {"role": "user", "content": 7},
    {"role": "user", "content": ["a", "list"]},
    {"role": None, "content": "x", "reasoning_content": None},
    {"role": "assistant", "content": "", "reasoning_content": 3},
    {"role": "assistant", "content": "x", "tool_calls": []},
    {"role": "assistant", "content": "x", "tool_calls": "not a list"},
    {"role": "assistant", "content": "x", "tool_calls": [None, 3, "call"]},
    {"role": "assistant", "content": "x", "tool_calls": [{"id": "c", "type": "function"}]},
    {
        "role": "assistant",
        "content": "x",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": None, "type": "function", "function": {"name": "f", "arguments": {"a": 1}}},
            {"id": "c3", "function": {"name": "g", "arguments": "{}", "extra": 1}, "index": 0},
        ],
    },
    {"role": "tool", "content": "r", "tool_call_id": 5, "name": "f"},
    {"role": "tool", "content": "r", "tool_call_id": "c1", "name": None, "weight": 1},
    "not a message",
    None,
]
ODD_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}},
    {"type": "function", "function": {"name": "f"}},
    {"type": "function", "function": {"name": "f", "description": None, "parameters": None}},
    {"type": "function", "function": {"name": "f", "description": 1, "parameters": "text"}},
    {"type": "function", "function": {"name": 2, "parameters": [1, 2]}},
    {"type": "function", "function": None},
    {"type": "function", "function": {"name": "f", "strict": True}},
    {"function": {"name": "f"}},
    {"type": "function", "function": {"name": "f"}, "cache_control": {}},
    7,
]


def test_the_fast_paths_conform_as_the_general_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages and tools of the usual shape have fast paths (`schema._message`,
    `schema._tool`); whatever the shape, a record conforms to the same bytes without them."""
    record = _im_record("x")
    record["messages"] = [*record["messages"], *ODD_MESSAGES]
    record["tools"] = ODD_TOOLS
    fast = orjson.dumps(conform_im_record(record))
    monkeypatch.setattr(schema, "_FAST_ITEMS", {})
    general = orjson.dumps(conform_im_record(record))
    assert fast == general
    weighted = len(record["messages"]) - 3  # the odd shapes went the general way
    assert f"messages[{weighted}].weight".encode() in fast


def _shapes(names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """Dicts with some of `names` (and now and then a key the schema does not know), of
    every value type a JSON record can hold there."""
    scalars = st.one_of(st.none(), st.text(max_size=3), st.integers(), st.booleans())
    values = st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.text(), scalars))
    keys = st.sampled_from((*names, "weight"))
    return st.one_of(st.dictionaries(keys, values, max_size=len(names) + 1), scalars)


CALLS = st.lists(
    st.fixed_dictionaries(
        {"id": st.text(max_size=2), "type": st.just("function")},
        optional={"function": _shapes(("name", "arguments")), "index": st.integers()},
    ),
    max_size=3,
)
MESSAGES = st.one_of(
    _shapes(("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": st.text(max_size=2), "tool_calls": CALLS}
    ),
)
TOOLS = st.one_of(
    _shapes(("type", "function")),
    st.fixed_dictionaries(
        {"type": st.text(max_size=2), "function": _shapes(("name", "description", "parameters"))}
    ),
)


@pytest.mark.skipif(schema.NATIVE_FAST_PATHS is None, reason="C conform extension not built")
@settings(max_examples=400)
@given(message=MESSAGES, tool=TOOLS)
def test_the_c_fast_paths_equal_the_python_ones(message: Any, tool: Any) -> None:
    """`_conform.c` gives what `schema._message` / `schema._tool` give, key order included:
    the conformed dict, or None for a shape the general way has to take."""
    assert schema.NATIVE_FAST_PATHS is not None
    native_message, native_tool, native_messages, native_tools = schema.NATIVE_FAST_PATHS
    for native, python, value in (
        (native_message, schema._message, message),
        (native_tool, schema._tool, tool),
    ):
        expected = python(value) if type(value) is dict else None
        got = native(value)
        assert got == expected
        assert orjson.dumps(got) == orjson.dumps(expected)
    for native_list, python, value in (
        (native_messages, schema._message, message),
        (native_tools, schema._tool, tool),
    ):  # a list holding the value twice: conformed whole, or None if the value is not
        expected = python(value) if type(value) is dict else None
        got_all = native_list([value, value])
        assert got_all == (None if expected is None else [expected, expected])


@pytest.mark.skipif(schema.NATIVE_FAST_PATHS is None, reason="C conform extension not built")
def test_the_c_fast_paths_on_the_odd_shapes() -> None:
    assert schema.NATIVE_FAST_PATHS is not None
    native_message, native_tool, native_messages, _ = schema.NATIVE_FAST_PATHS
    for native, python, values in (
        (native_message, schema._message, ODD_MESSAGES),
        (native_tool, schema._tool, ODD_TOOLS),
    ):
        for value in values:
            expected = python(value) if type(value) is dict else None
            assert orjson.dumps(native(value)) == orjson.dumps(expected), value
    fitting = native_message({"content": "c", "role": "user", "name": None})
    assert list(fitting) == [f.name for f in schema.MESSAGE.fields]
    assert native_messages([]) == []
    assert native_messages(({"role": "user", "content": "c"},)) is None  # a tuple: no list
    assert native_messages([{"role": "user", "content": "c"}, "text"]) is None


TEXTS_TO_ESCAPE = st.one_of(
    st.text(),  # any code point, lone surrogates included (orjson refuses those)
    st.text(alphabet='ab"\\/\x00\x01\x08\t\n\x0c\r\x1f\x7f\u2028\u00e9\U0001f600'),
)


@pytest.mark.skipif(schema.NATIVE_MESSAGES_JSON is None, reason="C conform extension not built")
@settings(max_examples=400)
@given(message=MESSAGES, text=TEXTS_TO_ESCAPE)
def test_the_c_messages_json_is_what_orjson_writes(message: Any, text: str) -> None:
    """`_conform.messages_json` gives the bytes of `orjson.dumps` of the messages conformed,
    or None where the list has to be conformed the general way (a message not of the usual
    shape) or orjson would refuse it (a lone surrogate)."""
    assert schema.NATIVE_MESSAGES_JSON is not None
    messages = [{"role": "user", "content": text, "name": text[:3] or None}, message]
    conformed = [schema._message(m) if type(m) is dict else None for m in messages]
    got = schema.NATIVE_MESSAGES_JSON(messages)
    if conformed[1] is None:
        assert got is None
        return
    try:
        expected = orjson.dumps(conformed)
    except orjson.JSONEncodeError:
        assert got is None
    else:
        assert got == expected


def test_an_im_record_line_is_the_conformed_record_as_orjson_writes_it(
    cases: list[dict[str, Any]],
) -> None:
    odd = orjson.loads(orjson.dumps(cases[0]))
    odd["messages"][0]["content"] = 'a "quote", a \\ and \x00\x1f\t\n\u2028 é 😀'
    odd["messages"][0]["weight"] = 1  # not of the usual shape: conformed the general way
    bad = orjson.loads(orjson.dumps(cases[1]))
    bad["messages"][0]["content"] = "\ud800"
    for record in [*cases, odd]:
        expected = orjson.dumps(conform_im_record(record), option=orjson.OPT_APPEND_NEWLINE)
        assert schema.im_record_line(record) == expected
    with pytest.raises(orjson.JSONEncodeError):
        schema.im_record_line(bad)


def test_im_output_read_back_as_input_gives_the_same_records(outputs: Path, tmp_path: Path) -> None:
    files = _files(outputs, "im.jsonl")
    written = _written(files)
    combined = tmp_path / "all.jsonl"
    combined.write_bytes(b"".join(f.read_bytes() for f in files))
    again = tmp_path / "again"
    argv = ["run", "--no-progress", "--instance-status", "all", "--dedup", "off"]
    argv += ["--output", str(again)]
    assert main([*argv, "--input", str(combined)]) == 0
    reread = _written([again / "standalone" / "im.jsonl"])

    def key(record: dict[str, Any]) -> tuple[str, bool, str]:
        info = record["meta_info"]["unique_info"]
        return info["_instance_id"], info["_agent_type"] != "main", orjson.dumps(record).decode()

    assert sorted(reread, key=key) == sorted(written, key=key)


def test_convert_and_score_write_the_same_schema(shared_dir: Path, tmp_path: Path) -> None:
    converted = tmp_path / "converted.jsonl"
    job = shared_dir / "data" / "composed" / "jobs" / COMPOSED
    assert main(["convert", str(job), "-o", str(converted)]) == 0
    scored = tmp_path / "scored.jsonl"
    assert main(["score", str(converted), "-o", str(scored)]) == 0
    for path in (converted, scored):
        records = _written([path])
        assert records
        for record in records:
            assert not _conforms(record, IM_SCHEMA, "")


def test_the_readme_table_is_the_schema() -> None:
    readme = README.read_text(encoding="utf-8")
    for kind in ("im", "lf"):
        assert markdown_table(kind) in readme, f"README's {kind} table differs from the schema"


def _from_parquet(value: Any, field: Field) -> Any:
    """A Parquet value in the JSON output's terms: objects decoded, dates as text."""
    if value is None:
        return None
    if field.type == OBJECT:
        return orjson.loads(value)
    if field.type == DATE:
        return value.isoformat()
    if field.type == STRUCT:
        return {m.name: _from_parquet(value[m.name], m) for m in field.fields}
    if field.type == LIST and field.item is not None:
        return [_from_parquet(v, field.item) for v in value]
    return value


def _parquet_rows(path: Path, field: Field) -> list[Any]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    assert table.schema == schema.arrow_schema(field.name)  # the explicit schema, as written
    return [_from_parquet(row, field) for row in table.to_pylist()]


@pytest.mark.parametrize("shards", [0, 2])
def test_parquet_twins_hold_the_json_rows_and_load_together(
    inputs: list[str], outputs: Path, tmp_path: Path, shards: int
) -> None:
    sharded = ("--parquet", "--num-shards", str(shards))
    out = outputs if shards == 0 else _run(inputs, tmp_path / "sharded", *sharded)
    for kind, field in (("im", IM_SCHEMA), ("lf", LF_SCHEMA)):
        parquet_files = sorted(out.glob(f"*/{kind}*.parquet"))
        assert len(parquet_files) == 4 * max(shards, 1)
        total = 0
        for path in parquet_files:
            twin = path.with_suffix(".jsonl" if kind == "im" else ".json")
            written = _written([twin])
            problems = _same(_parquet_rows(path, field), written)
            assert not problems, (path, problems[:5])
            total += len(written)
            manifest = orjson.loads((path.parent / "manifest.json").read_bytes())
            assert path.name in manifest["files"]
        loaded = datasets.load_dataset(
            "parquet",
            data_files=[str(p) for p in parquet_files],
            split="train",
            cache_dir=str(tmp_path / f"cache-{kind}"),
        )
        assert loaded.num_rows == total


def test_a_run_without_parquet_removes_the_earlier_parquet_files(
    inputs: list[str], tmp_path: Path
) -> None:
    out = _run(inputs, tmp_path / "out", "--parquet")
    assert list(out.glob("*/im.parquet"))
    _run(inputs, out)
    assert not list(out.glob("*/*.parquet"))


def test_parquet_is_a_flag_and_a_yaml_boolean(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text('parquet: "yes"\n', encoding="utf-8")
    argv = ["run", "--no-progress", "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    assert main([*argv, "--config", str(config)]) == 2  # refused before any work
    assert not (tmp_path / "o").exists()
    option = RUN_OPTIONS["parquet"]
    assert option.default is False and option.check(True) is True
