"""The LF options of `trajcurate run`: declared once, checked at the CLI and in YAML (exit 2,
one line, before any work), and handed to the sink as one `LfSettings`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.config import RunConfig
from transforms.sinks.lf import LfSettings


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--lf-call-text", "maybe"],
            "argument --lf-call-text: invalid choice: 'maybe' (choose from 'keep', 'drop')",
        ),
        (
            ["--lf-reasoning", "some"],
            "argument --lf-reasoning: invalid choice: 'some' (choose from 'keep', 'drop')",
        ),
        (
            ["--lf-parallel-calls", "merge"],
            "argument --lf-parallel-calls: invalid choice: 'merge' (choose from 'keep', "
            "'split', 'drop')",
        ),
        (["--lf-tool-call-open="], "--lf-tool-call-open: a non-empty marker"),
        (["--lf-thought-close="], "--lf-thought-close: a non-empty marker"),
    ],
)
def test_bad_lf_values_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = ["run", "--input", str(tmp_path), "--output", str(tmp_path / "out"), *extra]
    assert main(argv) == 2
    assert _one_error_line(capsys) == f"trajcurate run: error: {message}"
    assert not (tmp_path / "out").exists()


def test_a_yaml_lf_value_is_checked_like_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("lf_reasoning: sometimes\n")
    argv = ["run", "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    assert main([*argv, "--config", str(config)]) == 2
    assert _one_error_line(capsys) == "trajcurate run: error: --lf-reasoning: one of keep, drop"


def test_the_options_become_one_settings_object() -> None:
    assert RunConfig(inputs=("x",), output="y").lf_settings() == LfSettings()
    config = RunConfig(
        inputs=("x",),
        output="y",
        lf_call_text="drop",
        lf_tool_call_open="<|tool_call_start|>",
        lf_tool_call_close="<|tool_call_end|>",
        lf_reasoning="drop",
        lf_thought_open="<think>",
        lf_thought_close="</think>",
        lf_parallel_calls="drop",
        chat_template_tokenizer="/tok",
    )
    assert config.lf_settings() == LfSettings(
        call_text="drop",
        tool_call_words=("<|tool_call_start|>", "<|tool_call_end|>"),
        reasoning="drop",
        thought_words=("<think>", "</think>"),
        parallel_calls="drop",
        chat_template_tokenizer="/tok",
    )
