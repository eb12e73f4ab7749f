"""`--tokenizer` gives every record its token counts; `--max-tokens` rejects, with a
reason, a trial any of whose records a trainer would have to truncate (a small local
tokenizer, no download: every word is one token)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipelines.cli import main
from transforms.sinks.stats import token_count


class _Words:
    """The tokenizer of the fixture, in plain Python: words and runs of punctuation."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        import re

        return [0] * len(re.findall(r"\w+|[^\w\s]+", text))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    folder = tmp_path_factory.mktemp("tokenizer")
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inputs") / "jobs"
    assert (
        main(["synth", "--out", str(folder), "--jobs", "1", "--trials", "20", "--seed", "9"]) == 0
    )
    (folder / "synth-manifest.jsonl").unlink()
    return folder


def _run(jobs: Path, out: Path, *extra: str) -> int:
    argv = ["run", "--no-progress", "--instance-status", "all", "--dedup", "off"]
    return main([*argv, "--input", str(jobs), "--output", str(out), *extra])


def _records(out: Path) -> list[dict[str, Any]]:
    return [
        orjson.loads(line)
        for path in sorted(out.glob("*/im.jsonl"))
        for line in path.read_bytes().splitlines()
    ]


def _tokens(record: dict[str, Any]) -> Any:
    return record["meta_info"]["unique_info"]["_instance_metadata"]["tokens"]


def test_every_record_gets_its_token_counts_counted_once(
    jobs: Path, tmp_path: Path, tokenizer_dir: Path
) -> None:
    out = tmp_path / "out"
    assert _run(jobs, out, "--tokenizer", str(tokenizer_dir)) == 0
    records = _records(out)
    assert records
    words = _Words()
    for record in records:
        counts = _tokens(record)
        assert counts["messages"] == token_count(record, words) > 0
        tools = orjson.dumps(record["tools"]).decode() if record["tools"] else ""
        assert counts["tools"] == len(words.encode(tools))
    (stats_file,) = out.glob("*/lf.stats.json")
    stats = orjson.loads(stats_file.read_bytes())
    assert stats["token_lens"]["max"] == max(_tokens(r)["messages"] for r in records)
    plain = tmp_path / "plain"
    assert _run(jobs, plain) == 0
    assert all(_tokens(r) is None for r in _records(plain))  # no tokenizer: not counted


def test_max_tokens_rejects_what_a_trainer_would_truncate(
    jobs: Path, tmp_path: Path, tokenizer_dir: Path
) -> None:
    counted = tmp_path / "counted"
    assert _run(jobs, counted, "--tokenizer", str(tokenizer_dir)) == 0
    totals = [_tokens(r)["messages"] + _tokens(r)["tools"] for r in _records(counted)]
    cap = int(statistics.median(totals))
    out = tmp_path / "capped"
    assert _run(jobs, out, "--tokenizer", str(tokenizer_dir), "--max-tokens", str(cap)) == 0
    kept = _records(out)
    assert kept and all(_tokens(r)["messages"] + _tokens(r)["tools"] <= cap for r in kept)
    rejects = [
        orjson.loads(line)
        for path in out.glob("*/rejects.jsonl")
        for line in path.read_bytes().splitlines()
    ]
    over = [r for r in rejects if r["stage"] == "max_tokens"]
    assert over and len(kept) + sum(r["records"] for r in over) == len(totals)
    assert all(f"over --max-tokens {cap:,}" in r["reason"] for r in over)
    assert "a trainer would truncate it" in over[0]["reason"]


def test_max_tokens_needs_the_tokenizer(jobs: Path, tmp_path: Path) -> None:
    assert _run(jobs, tmp_path / "out", "--max-tokens", "100") == 2
    assert not (tmp_path / "out").exists()
