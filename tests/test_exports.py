"""`--messages-format`: the TRL export (`messages.jsonl`) renders under the Qwen2.5, Qwen3 and
Llama 3.1 chat templates with every call's arguments as an object, and the OpenAI export
(`openai.jsonl`) passes OpenAI's fine-tuning format rules line by line — on the composed
Harbor job, a synth corpus and the real files. The templates are written from their
published form (tests/fixtures/chat_templates) and rendered by `transformers`'
`apply_chat_template`; the OpenAI rules are re-implemented in tests/openai_rules.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from openai_rules import line_problems
from test_lf import call, im, msg, tool

from pipelines.cli import main
from transforms.sinks.exports import export_section, openai_line, trl_example

TEMPLATES = Path(__file__).resolve().parent / "fixtures" / "chat_templates"
TEMPLATE_NAMES = ("qwen2_5", "qwen3", "llama3_1")
CORPORA = ("composed_out", "synth_out", "real_out")


def run(inputs: Path, output: Path, *extra: str) -> None:
    argv = ["run", "--no-progress", "--instance-status", "all", "--input", str(inputs)]
    assert main([*argv, "--output", str(output), *extra]) == 0


def exported_run(inputs: Path, factory: pytest.TempPathFactory, name: str) -> Path:
    out = factory.mktemp(name)
    run(inputs, out, "--messages-format", "both")
    return out


@pytest.fixture(scope="module")
def composed_out(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return exported_run(shared_dir / "data" / "composed" / "jobs", tmp_path_factory, "composed")


@pytest.fixture(scope="module")
def synth_out(synth_jobs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return exported_run(synth_jobs, tmp_path_factory, "synth-out")


@pytest.fixture(scope="module")
def real_out(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return exported_run(shared_dir / "data" / "real", tmp_path_factory, "real-out")


@pytest.fixture(scope="module")
def tokenizers() -> dict[str, Any]:
    """A tiny local tokenizer per template (no download): only its chat template matters."""
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    out = {}
    for name in TEMPLATE_NAMES:
        backend = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
        tokenizer = transformers.PreTrainedTokenizerFast(
            tokenizer_object=backend, unk_token="[UNK]", bos_token="<|begin_of_text|>"
        )
        tokenizer.chat_template = (TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8")
        out[name] = tokenizer
    return out


def render(tokenizer: Any, example: dict[str, Any]) -> str:
    return str(
        tokenizer.apply_chat_template(example["messages"], tools=example["tools"], tokenize=False)
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def jobs(out: Path) -> Iterator[tuple[list[dict[str, Any]], Path]]:
    """Each job folder with its IM records."""
    folders = sorted(p.parent for p in out.glob("*/im.jsonl"))
    assert folders, f"no job written in {out}"
    for folder in folders:
        yield lines(folder / "im.jsonl"), folder


def im_calls(record: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        for m in record["messages"]
        for c in m.get("tool_calls") or []
    ]


def results_by_call(messages: list[dict[str, Any]]) -> dict[str, list[str]]:
    results: dict[str, list[str]] = {}
    for m in messages:
        if m["role"] == "tool":
            results.setdefault(m["tool_call_id"], []).append(m["content"])
    return results


def reasoning_turns(record: dict[str, Any]) -> int:
    return sum(
        1 for m in record["messages"] if m["role"] == "assistant" and m.get("reasoning_content")
    )


def trl_tool(definition: dict[str, Any]) -> dict[str, Any]:
    """An IM tool as the TRL export writes it: no null description or parameters."""
    function = dict(definition["function"])
    function["description"] = function.get("description") or ""
    function["parameters"] = function.get("parameters") or {"type": "object", "properties": {}}
    return {"type": "function", "function": function}


def call_segment(template: str, name: str, arguments: dict[str, Any]) -> str:
    """How the template writes a call whose arguments are an object (transformers' `tojson`
    is `json.dumps(..., ensure_ascii=False)`)."""
    key = "parameters" if template == "llama3_1" else "arguments"
    return f'{{"name": "{name}", "{key}": {json.dumps(arguments, ensure_ascii=False)}}}'


# --- TRL ------------------------------------------------------------------------------------


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_trl_record_renders_under_each_template_with_object_arguments(
    corpus: str, request: pytest.FixtureRequest, tokenizers: dict[str, Any]
) -> None:
    out: Path = request.getfixturevalue(corpus)
    seen = {"records": 0, "calls": 0, "split": 0}
    for records, folder in jobs(out):
        examples = lines(folder / "messages.jsonl")
        exports = orjson.loads((folder / "manifest.json").read_bytes())["exports"]["trl"]
        assert exports["written"] == len(examples) == len(records)  # none left out here
        seen["split"] += exports["parallel_calls_split"]
        for example in examples:
            calls = [c["function"] for m in example["messages"] for c in m.get("tool_calls") or []]
            assert all(isinstance(c["arguments"], dict) for c in calls)
            assert all(len(m.get("tool_calls") or [None]) == 1 for m in example["messages"])
            for name, tokenizer in tokenizers.items():
                text = render(tokenizer, example)
                position = 0  # every call, in order, with its arguments as an object
                for function in calls:
                    segment = call_segment(name, function["name"], function["arguments"])
                    found = text.find(segment, position)
                    assert found >= 0, (folder.name, name, segment[:80])
                    position = found + len(segment)
            seen["records"] += 1
            seen["calls"] += len(calls)
    assert all(count > 0 for count in seen.values()), seen  # the corpus exercised the rules


@pytest.mark.parametrize("corpus", CORPORA)
def test_trl_records_keep_every_call_result_text_and_reasoning_of_im(
    corpus: str, request: pytest.FixtureRequest
) -> None:
    """Splitting parallel calls and turning arguments into objects loses nothing: the same
    calls in the same order, the same results per call, the same texts and reasoning."""
    out: Path = request.getfixturevalue(corpus)
    for records, folder in jobs(out):
        split = 0
        for record, example in zip(records, lines(folder / "messages.jsonl"), strict=True):
            ours = example["messages"]
            ours_calls = [c["function"] for m in ours for c in m.get("tool_calls") or []]
            assert [(c["name"], c["arguments"]) for c in ours_calls] == im_calls(record)
            assert results_by_call(ours) == results_by_call(record["messages"])
            for field in ("content", "reasoning_content"):
                theirs = [m.get(field) for m in record["messages"] if m.get(field)]
                assert [m.get(field) for m in ours if m.get(field)] == theirs
            split += sum(len(m.get("tool_calls") or []) > 1 for m in record["messages"])
            assert example["tools"] == ([trl_tool(t) for t in record["tools"]] or None)
        manifest = orjson.loads((folder / "manifest.json").read_bytes())
        assert manifest["exports"]["trl"]["parallel_calls_split"] == split


def test_im_as_it_is_double_encodes_and_cannot_render_parallel_calls(
    synth_out: Path, real_out: Path, tokenizers: dict[str, Any]
) -> None:
    """What the export fixes, measured on IM itself (arguments as JSON text, parallel calls in
    one message): Qwen2.5 writes every call's arguments as a JSON string, and Llama 3.1 raises
    on every record with parallel calls; the TRL lines of the same records render."""
    jinja2 = pytest.importorskip("jinja2")
    double, calls, parallel, raised = 0, 0, 0, 0
    for out in (synth_out, real_out):
        for records, _ in jobs(out):
            for record in records:
                messages = [
                    {k: v for k, v in m.items() if v is not None} for m in record["messages"]
                ]
                as_is = {"messages": messages, "tools": record["tools"] or None}
                text = render(tokenizers["qwen2_5"], as_is)
                for name, _ in im_calls(record):
                    calls += 1
                    double += f'{{"name": "{name}", "arguments": "{{' in text
                if any(len(m.get("tool_calls") or []) > 1 for m in messages):
                    parallel += 1
                    with pytest.raises(jinja2.TemplateError, match="single tool-calls"):
                        render(tokenizers["llama3_1"], as_is)
                    raised += 1
    assert calls > 0 and double == calls
    assert parallel > 0 and raised == parallel


def test_trl_export_loads_with_datasets_row_for_row(
    composed_out: Path, synth_out: Path, real_out: Path
) -> None:
    """The TRL path: `load_dataset("json", ...)` on every job's messages.jsonl gives back the
    lines as written (no null keys added to messages, calls or arguments)."""
    datasets = pytest.importorskip("datasets")
    files = [f for out in (composed_out, synth_out, real_out) for f in out.glob("*/messages.jsonl")]
    files = sorted(f for f in files if f.stat().st_size)
    loaded = datasets.load_dataset("json", data_files=[str(f) for f in files], split="train")
    written = [line for f in files for line in lines(f)]
    assert len(loaded) == len(written) > 0
    assert all(row == line for row, line in zip(loaded, written, strict=True))


def test_a_parallel_turn_becomes_single_call_turns_each_with_its_result() -> None:
    record = im(
        [
            msg("system", ""),
            msg("user", "go"),
            msg(
                "assistant",
                "Two reads.",
                reasoning_content="both",
                tool_calls=[call("a", "Read", '{"f": "x"}'), call("b", "Read", '{"f": "y"}')],
            ),
            msg("tool", "Y", tool_call_id="b"),  # answered out of order
            msg("tool", "X", tool_call_id="a", name="Read"),
            msg("assistant", "Done."),
        ],
        [tool("Read")],
    )
    example, kinds = trl_example(record)
    assert kinds == ["written", "parallel_calls_split"]
    assert example is not None
    assert [
        (m["role"], m["content"], [c["id"] for c in m.get("tool_calls") or []])
        for m in example["messages"]
    ] == [
        ("system", "", []),
        ("user", "go", []),
        ("assistant", "Two reads.", ["a"]),
        ("tool", "X", []),
        ("assistant", "", ["b"]),
        ("tool", "Y", []),
        ("assistant", "Done.", []),
    ]
    first, second = example["messages"][2], example["messages"][4]
    assert first["reasoning_content"] == "both" and "reasoning_content" not in second
    assert first["tool_calls"][0]["function"]["arguments"] == {"f": "x"}
    assert example["messages"][5]["name"] == "Read"  # from its call, the result named none
    assert "tool_calls" not in example["messages"][6]  # Llama 3.1 keys on its presence


def test_trl_leaves_out_a_record_whose_arguments_are_not_an_object() -> None:
    record = im([msg("user", "go"), msg("assistant", "", tool_calls=[call("a", "Run", "[1, 2]")])])
    assert trl_example(record) == (None, ["left_out.arguments_not_an_object"])
    no_arguments = im([msg("user", "go"), msg("assistant", "", tool_calls=[call("a", "Run", "")])])
    example, _ = trl_example(no_arguments)
    assert example is not None
    assert example["messages"][1]["tool_calls"][0]["function"]["arguments"] == {}
    assert example["tools"] is None  # not [], for which Llama 3.1 writes a tool preamble


# --- OpenAI ---------------------------------------------------------------------------------


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_openai_line_passes_the_published_rules(
    corpus: str, request: pytest.FixtureRequest
) -> None:
    out: Path = request.getfixturevalue(corpus)
    checked = reasoning = 0
    for records, folder in jobs(out):
        raw = (folder / "openai.jsonl").read_bytes().splitlines()
        assert [p for line in raw if (p := line_problems(line))] == []
        exports = orjson.loads((folder / "manifest.json").read_bytes())["exports"]["openai"]
        assert exports["written"] + sum(exports["left_out"].values()) == len(records)
        assert exports["written"] == len(raw)
        # The validator has teeth: the IM lines themselves break it (extra keys, nulls).
        assert all(line_problems(line) for line in (folder / "im.jsonl").read_bytes().splitlines())
        dropped = sum(reasoning_turns(r) for r in records)
        assert exports["reasoning_dropped"] == dropped
        checked += len(raw)
        reasoning += dropped
    assert checked > 0 and reasoning > 0


@pytest.mark.parametrize("corpus", CORPORA)
def test_openai_lines_keep_calls_as_json_text_and_results(
    corpus: str, request: pytest.FixtureRequest
) -> None:
    out: Path = request.getfixturevalue(corpus)
    for records, folder in jobs(out):
        for record, line in zip(records, lines(folder / "openai.jsonl"), strict=True):
            calls = [c for m in line["messages"] for c in m.get("tool_calls") or []]
            theirs = [c for m in record["messages"] for c in m.get("tool_calls") or []]
            assert calls == theirs  # id, type, name and arguments text, in order
            assert results_by_call(line["messages"]) == results_by_call(record["messages"])
            assert ("tools" in line) == bool(record["tools"])


def test_openai_leaves_out_what_it_cannot_pass_with_a_reason() -> None:
    read = [call("a", "Read", '{"f": "x"}')]
    cases = {
        "empty_user_content": [msg("user", ""), msg("assistant", "hi")],
        "unanswered_tool_call": [
            msg("user", "go"),
            msg("assistant", "", tool_calls=read),
            msg("assistant", "and then"),
        ],
        "tool_result_without_call": [
            msg("user", "go"),
            msg("assistant", "", tool_calls=read),
            msg("tool", "X", tool_call_id="a"),
            msg("tool", "?", tool_call_id="zz"),
            msg("assistant", "done"),
        ],
        "empty_assistant_message": [msg("user", "go"), msg("assistant", "", reasoning_content="r")],
        "no_assistant_message": [msg("user", "go")],
    }
    for reason, messages in cases.items():
        assert openai_line(im(messages)) == (None, [f"left_out.{reason}"]), reason
    bad_name = im([msg("user", "go"), msg("assistant", "ok")], [tool("mcp.read")])
    assert openai_line(bad_name) == (None, ["left_out.tool_name_not_allowed"])


def test_openai_line_has_only_the_allowed_keys() -> None:
    """An empty system prompt is left out (content must be text), reasoning dropped and
    counted, a call that ends the conversation needs no result (OpenAI's own example)."""
    record = im(
        [
            msg("system", "", reasoning_content=None, tool_calls=None),
            msg("user", "go", name=None),
            msg("assistant", "Looking.", reasoning_content="r", tool_calls=[call("a", "R", "{}")]),
            msg("tool", "", tool_call_id="a", name="R"),
            msg("assistant", "", tool_calls=[call("b", "R", '{"x": 1}')]),
        ],
        [{"type": "function", "function": {"name": "R", "description": None, "parameters": None}}],
    )
    line, kinds = openai_line(record)
    assert kinds == ["written", "reasoning_dropped"]
    assert line == {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [call("a", "R", "{}")]},
            {"role": "tool", "tool_call_id": "a", "content": ""},
            {"role": "assistant", "tool_calls": [call("b", "R", '{"x": 1}')]},
        ],
        "tools": [{"type": "function", "function": {"name": "R"}}],
    }
    assert line_problems(orjson.dumps(line)) == []


# --- the run --------------------------------------------------------------------------------


def test_run_writes_the_exports_per_shard_and_counts_them(shared_dir: Path, tmp_path: Path) -> None:
    jobs_dir = shared_dir / "data" / "composed" / "jobs"
    out = tmp_path / "out"
    run(jobs_dir, out, "--messages-format", "both", "--num-shards", "2")
    folder = next(out.glob("*/manifest.json")).parent
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    names = [f"{kind}-0000{i}-of-00002.jsonl" for kind in ("messages", "openai") for i in (0, 1)]
    assert set(names) <= set(manifest["outputs"]) and set(names) <= set(manifest["files"])
    im_lines = sum(len(lines(folder / f"im-0000{i}-of-00002.jsonl")) for i in (0, 1))
    for kind, fmt in (("messages", "trl"), ("openai", "openai")):
        written = sum(len(lines(folder / f"{kind}-0000{i}-of-00002.jsonl")) for i in (0, 1))
        assert written == manifest["exports"][fmt]["written"] == im_lines
        assert manifest["exports"][fmt]["files"] == [n for n in names if n.startswith(kind)]
    # A run without the option writes neither file and removes the earlier run's.
    run(jobs_dir, out, "--num-shards", "2")
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert "exports" not in manifest
    assert not list(folder.glob("messages*")) and not list(folder.glob("openai*"))


def test_export_counts_leave_the_lf_reshapes_alone() -> None:
    counts = {"missing_result_filled": 2, "exports.openai.left_out.empty_user_content": 1}
    others, section = export_section(counts, ("openai",), 0)
    assert others == {"missing_result_filled": 2}
    assert section == {
        "openai": {
            "files": ["openai.jsonl"],
            "written": 0,
            "left_out": {"empty_user_content": 1},
            "reasoning_dropped": 0,
        }
    }


def test_messages_format_is_checked_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--input", str(tmp_path), "--output", str(tmp_path / "out")]
    assert main([*argv, "--messages-format", "sharegpt"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error[-1] == (
        "trajcurate run: error: argument --messages-format: invalid choice: 'sharegpt' "
        "(choose from 'none', 'trl', 'openai', 'both')"
    )
    config = tmp_path / "run.yaml"
    config.write_text("messages_format: sharegpt\n")
    assert main([*argv, "--config", str(config)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "trajcurate run: error: --messages-format: one of none, trl, openai, both"
    )
    assert not (tmp_path / "out").exists()
