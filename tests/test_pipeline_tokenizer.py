"""`--tokenizer` and `--chat-template-tokenizer` with a small local tokenizer (no download)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipelines.cli import main

JOB = "2026-06-16__12-00-00"
TEMPLATE = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"


@pytest.fixture
def tokenizer_dir(tmp_path: Path) -> Path:
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    tokenizer.chat_template = TEMPLATE
    folder = tmp_path / "tokenizer"
    tokenizer.save_pretrained(folder)
    return folder


def test_token_stats_come_from_the_tokenizer(
    shared_dir: Path, tmp_path: Path, tokenizer_dir: Path
) -> None:
    jobs = shared_dir / "data" / "composed" / "jobs"
    out = tmp_path / "out"
    assert (
        main(
            [
                "run",
                "--no-progress",
                "--input",
                str(jobs),
                "--output",
                str(out),
                "--tokenizer",
                str(tokenizer_dir),
            ]
        )
        == 0
    )
    stats = orjson.loads((out / JOB / "lf.stats.json").read_bytes())
    assert stats["tokens"] == {"estimated": False, "method": f"tokenizer:{tokenizer_dir}"}
    assert stats["token_lens"]["max"] > 0


def test_lf_rendered_through_the_chat_template(
    shared_dir: Path, tmp_path: Path, tokenizer_dir: Path
) -> None:
    jobs = shared_dir / "data" / "composed" / "jobs"
    out = tmp_path / "out"
    assert (
        main(
            [
                "run",
                "--no-progress",
                "--input",
                str(jobs),
                "--output",
                str(out),
                "--chat-template-tokenizer",
                str(tokenizer_dir),
            ]
        )
        == 0
    )
    examples = orjson.loads((out / JOB / "lf.json").read_bytes())
    assert examples
    for example in examples:  # prompt / response turns for stage sft with `template: empty`
        roles = [turn["role"] for turn in example["messages"]]
        assert roles == ["user", "assistant"] * (len(roles) // 2) and roles
        assert example["messages"][0]["content"].startswith("<system>")
        assert example["messages"][1]["content"].startswith("<assistant>")
    info = orjson.loads((out / JOB / "dataset_info.json").read_bytes())
    assert info[JOB]["formatting"] == "sharegpt"
    assert "template: empty" in info[JOB]["_trajcurate_note"]


def test_a_missing_tokenizer_folder_is_a_usage_error(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("transformers")
    jobs = shared_dir / "data" / "composed" / "jobs"
    assert (
        main(
            [
                "run",
                "--input",
                str(jobs),
                "--output",
                str(tmp_path / "o"),
                "--tokenizer",
                str(tmp_path / "nope"),
            ]
        )
        == 2
    )
    assert "not a local tokenizer folder" in capsys.readouterr().err
