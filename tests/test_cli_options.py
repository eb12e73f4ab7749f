"""A strict command line: unknown arguments and out-of-range values fail at once, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.chain_options import CHAIN_OPTIONS, ConfigError
from pipelines.cli import main
from pipelines.config import LLM_OPTIONS, RUN_OPTIONS, RunConfig


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--min_score", "0.9"], "unknown option --min_score (did you mean --min-score?)"),
        (
            ["--instance_status=all"],
            "unknown option --instance_status (did you mean --instance-status?)",
        ),
        (
            ["--direct-num-workers", "2"],
            "unknown option --direct-num-workers (did you mean --direct_num_workers?)",
        ),
        (["--runer", "DataflowRunner"], "unknown option --runer (did you mean --runner?)"),
        (["stray"], "unknown argument 'stray'"),
        (["--llm-rpm", "-5"], "argument --llm-rpm: a number of at least 0.001"),
        (["--llm-concurrency", "0"], "argument --llm-concurrency: a whole number from 1 to 1024"),
        (["--num-shards", "2.5"], "argument --num-shards: not a whole number: '2.5'"),
        (["--max-file-mb", "0"], "argument --max-file-mb: a number from 0.001 to 1e+06"),
        (
            ["--redact", "hide"],
            "argument --redact: invalid choice: 'hide' (choose from 'off', 'mask', 'drop')",
        ),
    ],
)
def test_bad_arguments_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = ["run", "--input", str(tmp_path), "--output", str(tmp_path / "out"), *extra]
    assert main(argv) == 2
    assert _error(capsys) == f"trajcurate run: error: {message}"
    assert not (tmp_path / "out").exists()


def test_a_yaml_value_is_checked_like_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("llm_rpm: -5\n")
    argv = [
        "run",
        "--input",
        str(tmp_path),
        "--output",
        str(tmp_path / "o"),
        "--config",
        str(config),
    ]
    assert main(argv) == 2
    assert _error(capsys) == "trajcurate run: error: --llm-rpm: a number of at least 0.001"


def test_beam_options_pass_through(tmp_path: Path, shared_dir: Path) -> None:
    jobs = shared_dir / "data" / "composed" / "jobs"
    argv = [
        "run",
        "--no-progress",
        "--input",
        str(jobs),
        "--output",
        str(tmp_path / "o"),
        "--direct_num_workers",
        "1",
        "--direct_running_mode=in_memory",
    ]
    assert main(argv) == 0


ALL_OPTIONS = {**CHAIN_OPTIONS, **RUN_OPTIONS, **LLM_OPTIONS}


@pytest.mark.parametrize("name", sorted(n for n, o in ALL_OPTIONS.items() if o.low is not None))
def test_every_ranged_option_refuses_a_value_below_its_range(name: str) -> None:
    option = ALL_OPTIONS[name]
    assert option.low is not None
    with pytest.raises(ConfigError, match=rf"^{option.flag}: "):
        option.check(option.low - 1)
    if option.default is not None:
        assert option.check(option.default) == option.default


def test_run_config_defaults_are_the_declared_ones() -> None:
    config = RunConfig(inputs=("x",), output="y")
    for name, option in ALL_OPTIONS.items():
        if name in {"scaffold", "workers"}:  # `score` only
            continue
        assert getattr(config, name) == option.default, name
