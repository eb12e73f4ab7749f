"""No false positive on the clean corpora: the real agent files, the composed job, a synth
corpus and the reference records hold no secret, so redaction must change none of them.

The real files do hold code that names credentials (`apiKey: 'proxy-handled'`,
`env.OPENAI_API_KEY = 'proxy-handled'`, `apiKey: params.litellmApiKey || ...`,
`--api-key sk-...`, `const apiKey = 'sk-ant-'`): each was once masked, and a trainer lost the
code the agent read.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from pipelines.cli import main
from transforms.redact import redact_record

COMPOSED = Path("data") / "composed" / "jobs"
REFERENCE_SETS = ("cases.jsonl", "randomized.jsonl", "randomized-v2.jsonl")


def redactions(out: Path) -> dict[str, dict[str, int]]:
    """Per job folder of a run: its `redacted.*` counts, and `[REDACTED:` in its IM lines."""
    found: dict[str, dict[str, int]] = {}
    for manifest in sorted(out.glob("*/manifest.json")):
        counts = orjson.loads(manifest.read_bytes())["counts"]
        redacted = {k: v for k, v in counts.items() if k.startswith("redacted.") and v}
        im_hits = sum(p.read_bytes().count(b"[REDACTED:") for p in manifest.parent.glob("im*"))
        if redacted or im_hits:
            found[manifest.parent.name] = {**redacted, "im.[REDACTED:": im_hits}
    assert list(out.glob("*/manifest.json")), f"no job written in {out}"
    return found


@pytest.mark.parametrize("corpus", ["real", "composed", "synth"])
def test_a_run_over_a_clean_corpus_redacts_nothing(
    corpus: str, shared_dir: Path, synth_jobs: Path, tmp_path: Path
) -> None:
    inputs = {
        "real": shared_dir / "data" / "real",
        "composed": shared_dir / COMPOSED,
        "synth": synth_jobs,
    }[corpus]
    argv = ["run", "--no-progress", "--instance-status", "all", "--input", str(inputs)]
    assert main([*argv, "--output", str(tmp_path / "out")]) == 0
    assert redactions(tmp_path / "out") == {}


@pytest.mark.parametrize("name", REFERENCE_SETS)
def test_the_reference_records_are_not_redacted(name: str, shared_dir: Path) -> None:
    path = shared_dir / "data" / "reference-scored" / name
    total: Counter[str] = Counter()
    for line in path.read_bytes().splitlines():
        total += redact_record(orjson.loads(line))
    assert total == Counter()
