"""`--lf-template NAME`: under each profile every LF record of the composed job, a synth corpus,
the real files and the reference records loads under that LLaMA-Factory template's rules
(tests/lf_rules.py `TEMPLATES`, read from its 0.9.4 / 0.9.5 sources); what the template cannot
take is moved or dropped, and counted; options given beside the profile override it where the
template still loads the result, and are refused in one line where it would not."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lf_rules import (
    TEMPLATES,
    THOUGHT_WORDS,
    Template,
    TrainingAbort,
    encode_example,
    template_function_call,
    thoughts,
)
from test_lf import _MESSAGES, TOOL_RECORD, call, im, msg
from test_lf_corpora import composed_out, run, synth_out  # noqa: F401 (fixtures)

from pipelines.cli import main
from pipelines.config import RunConfig
from transforms.sinks.lf import (
    RECORD_DROP_KINDS,
    RESHAPE_KINDS,
    RESULT_SEPARATOR,
    LfSettings,
    to_lf_example,
)
from transforms.sinks.lf_templates import LF_TEMPLATES, template_settings

PROFILES = sorted(LF_TEMPLATES)
MARKED = TEMPLATES["qwen"]  # how the default output is split: the default markers
# What a profile may add to the reshapes of the default output.
PROFILE_KINDS = {
    "call_text_dropped",
    "call_reasoning_dropped",
    "parallel_calls_split",
    "missing_result_filled",
}


def test_every_profile_has_rules_and_the_named_templates_are_there() -> None:
    assert set(LF_TEMPLATES) == set(TEMPLATES)
    named = ("default", "qwen", "qwen3", "llama3", "deepseek3", "glm4")
    mistral_family = ("mistral", "ministral", "pixtral", "llava_next_mistral")
    assert set(named + mistral_family) <= set(LF_TEMPLATES)
    assert all(LF_TEMPLATES[name].bare_calls for name in mistral_family)


# --- what each profile writes -------------------------------------------------------------


def test_mistral_writes_the_calls_alone_and_counts_the_text_and_reasoning_it_drops() -> None:
    example, kinds = to_lf_example(TOOL_RECORD, template_settings("mistral"))
    assert example is not None
    assert example["messages"][1] == {
        "role": "function_call",
        "content": '[{"name": "Read", "arguments": {"file_path": "a"}}, '
        '{"name": "Grep", "arguments": {"pattern": "x"}}]',
    }
    assert kinds == ["call_text_dropped", "call_reasoning_dropped"]
    rendered = encode_example(TEMPLATES["mistral"], example)
    assert rendered[1][1] == example["messages"][1]["content"]  # the mistral tool format
    # the default output stops a mistral training run on its first call with text
    default, _ = to_lf_example(TOOL_RECORD)
    assert default is not None
    with pytest.raises(TrainingAbort, match="not JSON"):
        encode_example(TEMPLATES["mistral"], default)


def test_reasoning_on_a_plain_answer_stays_with_a_bare_calls_template() -> None:
    record = im([msg("user", "q"), msg("assistant", "a", reasoning_content="why")])
    example, kinds = to_lf_example(record, template_settings("gemma3"))
    assert example is not None and kinds == []
    assert example["messages"][1]["content"] == "<think>\nwhy\n</think>\n\na"


def test_glm4_splits_parallel_calls_into_one_call_per_turn_each_with_its_result() -> None:
    example, kinds = to_lf_example(TOOL_RECORD, template_settings("glm4"))
    assert example is not None
    assert example["messages"] == [
        {"role": "user", "content": "do it"},
        {
            "role": "function_call",
            "content": "<think>\nhmm\n</think>\n\nLet me look.\n"
            '<tool_call>{"name": "Read", "arguments": {"file_path": "a"}}</tool_call>',
        },
        {"role": "observation", "content": "A"},
        {"role": "function_call", "content": '{"name": "Grep", "arguments": {"pattern": "x"}}'},
        {"role": "observation", "content": "B"},
        {"role": "function_call", "content": '{"name": "Bash", "arguments": {"command": "ls"}}'},
        {"role": "observation", "content": "out"},
        {"role": "assistant", "content": "done"},
    ]
    assert kinds == ["parallel_calls_split"]
    rendered = encode_example(TEMPLATES["glm4"], example)
    # glm4's tool format: the name, then the arguments, after the prose
    assert rendered[1][1] == '<think>\nhmm\n</think>\n\nLet me look.\nRead\n{"file_path": "a"}'


def test_a_split_without_results_gets_empty_ones_counted() -> None:
    calls = [call("c1", "Read", "{}"), call("c2", "Grep", "{}")]
    ending = im([msg("user", "q"), msg("assistant", "", tool_calls=calls)])
    example, kinds = to_lf_example(ending, template_settings("glm4"))
    assert example is not None
    assert [m["role"] for m in example["messages"]] == [
        "user",
        "function_call",
        "observation",
        "function_call",
    ]
    assert example["messages"][2]["content"] == ""
    assert kinds == ["parallel_calls_split", "missing_result_filled"]
    # calls answered by a user message instead: the user turn follows the last call
    interrupted = im([*ending["messages"], msg("user", "stop"), msg("assistant", "ok")])
    example, kinds = to_lf_example(interrupted, template_settings("glm4"))
    assert example is not None
    grep = '{"name": "Grep", "arguments": {}}'
    assert [m["content"] for m in example["messages"][2:5]] == ["", grep, "stop"]
    assert kinds.count("missing_result_filled") == 1


def test_extra_results_stay_with_the_last_call_of_a_split() -> None:
    calls = [call("c1", "Read", "{}"), call("c2", "Grep", "{}")]
    record = im(
        [
            msg("user", "q"),
            msg("assistant", "", tool_calls=calls),
            msg("tool", "A", tool_call_id="c1"),
            msg("tool", "B", tool_call_id="c2"),
            msg("tool", "C", tool_call_id="c9"),
            msg("assistant", "done"),
        ]
    )
    example, kinds = to_lf_example(record, template_settings("glm4"))
    assert example is not None
    observations = [m["content"] for m in example["messages"] if m["role"] == "observation"]
    assert observations == ["A", f"B{RESULT_SEPARATOR}C"]
    assert kinds == ["unmatched_result_kept", "parallel_calls_split"]


@pytest.mark.parametrize("mark", ["<image>", "<video>", "<audio>"])
def test_a_multimodal_template_leaves_out_a_record_holding_a_media_placeholder(mark: str) -> None:
    record = im([msg("user", f"embed it: {mark}"), msg("assistant", "done")])
    assert to_lf_example(record, template_settings("qwen2_vl")) == (
        None,
        ["media_placeholder_dropped"],
    )
    example, kinds = to_lf_example(record, template_settings("qwen"))  # text-only: written
    assert example is not None and kinds == []
    with pytest.raises(TrainingAbort, match="media placeholders"):
        encode_example(TEMPLATES["qwen2_vl"], example)


def test_settings_refuse_bare_calls_with_text_kept() -> None:
    with pytest.raises(ValueError, match="call_text"):
        LfSettings(bare_calls=True)


# --- every record of every corpus, under every profile ------------------------------------


@pytest.fixture(scope="module")
def real_out(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("real")
    run(shared_dir / "data" / "real", out)
    return out


def _im_records(out: Path) -> list[dict[str, Any]]:
    files = sorted(out.glob("*/im.jsonl"))
    assert files, f"no job written in {out}"
    return [orjson.loads(line) for f in files for line in f.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def corpora(
    composed_out: Path,  # noqa: F811
    synth_out: Path,  # noqa: F811
    real_out: Path,
    cases_lines: list[bytes],
) -> dict[str, list[dict[str, Any]]]:
    return {
        "composed": _im_records(composed_out),
        "synth": _im_records(synth_out),
        "real": _im_records(real_out),
        "reference": [orjson.loads(line) for line in cases_lines],
    }


def _function_turns(example: dict[str, Any], rules: Template) -> list[tuple[str, list[Any]]]:
    return [
        template_function_call(rules, m["content"])
        for m in example["messages"]
        if m["role"] == "function_call"
    ]


def _results(example: dict[str, Any]) -> list[str]:
    return [
        block
        for m in example["messages"]
        if m["role"] == "observation"
        for block in m["content"].split(RESULT_SEPARATOR)
        if block
    ]


def _answers(example: dict[str, Any]) -> list[str]:
    return [m["content"] for m in example["messages"] if m["role"] == "assistant"]


def _prose_parts(prose: str) -> tuple[bool, bool]:
    """(holds a thought, holds text) of the prose the default output puts beside calls."""
    spans = thoughts(prose)
    text = prose.replace(THOUGHT_WORDS[0] + spans[0] + THOUGHT_WORDS[1], "", 1) if spans else prose
    return bool(spans), bool(text)


def check_profile(name: str, record: dict[str, Any], seen: Counter[str]) -> None:
    """One record under one profile, against the default output of the same record: it
    loads under the template's rules, keeps every call, result and plain answer, and what it
    moved or dropped is exactly what the counts say."""
    rules, profile = TEMPLATES[name], LF_TEMPLATES[name]
    base, base_kinds = to_lf_example(record)
    example, kinds = to_lf_example(record, template_settings(name))
    info = record["meta_info"]["unique_info"].get("_instance_id")
    assert (example is None) == (base is None), (name, info, kinds)
    if example is None or base is None:
        return
    encode_example(rules, example)  # raises where LLaMA-Factory would skip or abort
    got, want = _function_turns(example, rules), _function_turns(base, MARKED)
    assert [c for _, calls in got for c in calls] == [c for _, calls in want for c in calls]
    assert _results(example) == _results(base), (name, info)
    assert _answers(example) == _answers(base), (name, info)
    added = Counter(kinds) - Counter(base_kinds)
    assert not Counter(base_kinds) - Counter(kinds) and set(added) <= PROFILE_KINDS, added
    parallel = sum(len(calls) > 1 for _, calls in want)
    assert added["parallel_calls_split"] == (parallel if profile.parallel_calls == "split" else 0)
    if profile.bare_calls:
        assert all(prose == "" for prose, _ in got), (name, info)
        parts = [_prose_parts(prose) for prose, _ in want]
        assert added["call_reasoning_dropped"] == sum(thought for thought, _ in parts)
        assert added["call_text_dropped"] == sum(text for _, text in parts)
    else:
        assert "".join(p for p, _ in got) == "".join(p for p, _ in want), (name, info)
        assert not added["call_text_dropped"] and not added["call_reasoning_dropped"]
    seen["records"] += 1
    seen.update({kind: count for kind, count in added.items() if count})


@pytest.mark.parametrize("corpus", ["composed", "synth", "real", "reference"])
@pytest.mark.parametrize("name", PROFILES)
def test_every_record_loads_under_every_profile(
    name: str, corpus: str, corpora: dict[str, list[dict[str, Any]]]
) -> None:
    seen: Counter[str] = Counter()
    for record in corpora[corpus]:
        check_profile(name, record, seen)
    assert seen["records"] > 0
    if corpus == "synth":  # it has parallel calls, text and reasoning beside calls
        profile = LF_TEMPLATES[name]
        assert (seen["parallel_calls_split"] > 0) == (profile.parallel_calls == "split")
        assert (seen["call_text_dropped"] > 0) == profile.bare_calls
        assert (seen["call_reasoning_dropped"] > 0) == profile.bare_calls


_WITH_MEDIA = st.one_of(_MESSAGES, st.just(msg("user", "<image> of it")))


@settings(max_examples=300, deadline=None)
@given(st.lists(_WITH_MEDIA, max_size=14), st.sampled_from(PROFILES))
def test_any_message_sequence_loads_under_its_profile_or_is_left_out_with_a_reason(
    messages: list[dict[str, Any]], name: str
) -> None:
    example, kinds = to_lf_example(im(messages), template_settings(name))
    assert set(kinds) <= set(RESHAPE_KINDS)
    if example is None:
        assert kinds[-1] in RECORD_DROP_KINDS
        return
    encode_example(TEMPLATES[name], example)


# --- through `trajcurate run` -------------------------------------------------------------


def test_a_profiled_run_records_the_profile_and_counts_its_drops(
    composed: Path,
    synth_jobs: Path,
    tmp_path: Path,
) -> None:
    for name, inputs in (("mistral", composed), ("glm4", synth_jobs)):
        out = tmp_path / name
        run(inputs, out, "--lf-template", name)
        total: Counter[str] = Counter()
        for folder in sorted(p.parent for p in out.glob("*/lf.json")):
            manifest = orjson.loads((folder / "manifest.json").read_bytes())
            options = manifest["options"]
            assert options["lf_template"] == name
            assert options["lf_call_text"] == ("drop" if name == "mistral" else "keep")
            assert options["lf_parallel_calls"] == ("split" if name == "glm4" else "keep")
            examples = orjson.loads((folder / "lf.json").read_bytes())
            assert len(examples) == len((folder / "im.jsonl").read_bytes().splitlines())
            for example in examples:
                encode_example(TEMPLATES[name], example)
            total.update(manifest["lf_reshapes"])
        if name == "mistral":
            assert total["call_text_dropped"] > 0 and total["call_reasoning_dropped"] > 0
        else:
            assert total["parallel_calls_split"] > 0 and not total["parallel_calls_dropped"]


# --- options beside --lf-template ---------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--lf-template", "mistral", "--lf-call-text", "keep"],
            "--lf-call-text: keep: the mistral template reads a function_call turn as the "
            "calls' JSON alone (Llama2Template), so text beside calls would stop the training "
            "run",
        ),
        (
            ["--lf-template", "glm4", "--lf-parallel-calls", "keep"],
            "--lf-parallel-calls: keep: the glm4 template's tool format renders one call per "
            "turn and aborts on more (split or drop them)",
        ),
        (
            ["--lf-template", "qwen", "--lf-tool-call-open", "<tc>"],
            "--lf-tool-call-open/--lf-tool-call-close: the qwen template's tool_call_words are "
            "'<tool_call>' and '</tool_call>'",
        ),
        (
            ["--lf-template", "qwen3", "--chat-template-tokenizer", "/tok"],
            "--lf-template: not with --chat-template-tokenizer, whose turns train with "
            "template empty",
        ),
    ],
)
def test_an_option_the_template_cannot_load_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = ["run", "--input", str(tmp_path), "--output", str(tmp_path / "out"), *extra]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"trajcurate run: error: {message}"]
    assert not (tmp_path / "out").exists()


def test_a_yaml_profile_is_checked_like_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("lf_template: pixtral\nlf_call_text: keep\n")
    argv = ["run", "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    assert main([*argv, "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "trajcurate run: error: --lf-call-text: keep: the pixtral template reads a "
        "function_call turn as the calls' JSON alone (Llama2Template), so text beside calls "
        "would stop the training run"
    ]


def test_options_the_template_can_load_override_the_profile() -> None:
    base = {"inputs": ("x",), "output": "y"}
    qwen = RunConfig(**base, lf_template="qwen", lf_call_text="drop")
    assert qwen.lf_settings() == LfSettings(call_text="drop")
    glm4 = RunConfig(**base, lf_template="glm4", lf_parallel_calls="drop")
    assert glm4.lf_settings().parallel_calls == "drop"
    mistral = RunConfig(**base, lf_template="mistral", lf_reasoning="drop")
    assert mistral.lf_settings() == LfSettings(call_text="drop", reasoning="drop", bare_calls=True)
    # the options written to the manifest are the filled ones, and stay valid when copied
    public = mistral.public()
    assert (public["lf_template"], public["lf_call_text"], public["lf_reasoning"]) == (
        "mistral",
        "drop",
        "drop",
    )
    assert replace(mistral, inputs=("z",)).lf_settings() == mistral.lf_settings()


def test_without_a_profile_the_options_are_the_defaults() -> None:
    config = RunConfig(inputs=("x",), output="y")
    assert config.lf_template is None and config.lf_settings() == LfSettings()
    assert config.public()["lf_parallel_calls"] == "keep"
