"""The baseline for `bench_pipeline.py`: the pipeline's work as a plain sequential loop.

Same readers, the same curation chain (`transforms/chain.py`: gate, clean, validation,
redaction, TQS V2 scoring, score filter), IM and LF writing, stats and rejects as
`trajcurate run` (default options), one trial after another, in one process, writing each
job's files as it goes. Usage: `python sequential_loop.py INPUT OUTPUT`.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import IO, Any

import orjson

from transforms.chain import (
    ChainSettings,
    Drop,
    Stage,
    job_of,
    run_stages,
    stages_after_judge,
    stages_before_judge,
)
from transforms.readers.bundle import ReaderError
from transforms.readers.discover import discover_trials
from transforms.readers.registry import reader_for
from transforms.sinks.records import bundle_payload
from transforms.sinks.stats import Stats, token_count


class JobFiles:
    """One job's open output files, written in arrival order."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.im: IO[bytes] = open(folder / "im.jsonl", "wb")  # noqa: SIM115
        self.lf: IO[bytes] = open(folder / "lf.json", "wb")  # noqa: SIM115
        self.rejects: IO[bytes] = open(folder / "rejects.jsonl", "wb")  # noqa: SIM115
        self.lf.write(b"[")
        self.separator = b"\n"
        self.stats = Stats()

    def write(self, bundle: dict[str, Any]) -> None:
        payload = bundle_payload(bundle)
        self.im.write(b"".join(payload["im_lines"]))
        for item in payload["lf_items"]:
            self.lf.write(self.separator + item)
            self.separator = b",\n"
        for record, (calls, errors) in zip(
            bundle["records"], bundle["tool_call_counts"], strict=True
        ):
            score = record["meta_info"]["unique_info"]["_score"]
            scaffold = (score or {}).get("scaffold")
            self.stats.add(record, score, calls, errors, scaffold, token_count(record))

    def reject(self, drop: Drop) -> None:
        self.rejects.write(orjson.dumps(drop.record) + b"\n")

    def close(self) -> None:
        self.lf.write(b"]\n" if self.separator == b"\n" else b"\n]\n")
        (self.folder / "lf.stats.json").write_bytes(orjson.dumps(self.stats.to_json()))
        for handle in (self.im, self.lf, self.rejects):
            handle.close()


def process(bundle: dict[str, Any], files: JobFiles, stages: list[Stage]) -> None:
    result = run_stages(bundle, stages, lambda _name: None)
    if isinstance(result, Drop):
        files.reject(result)
    else:
        files.write(result)


def main(source: Path, output: Path) -> int:
    settings = ChainSettings()
    stages = [*stages_before_judge(settings), *stages_after_judge(settings)]
    jobs: dict[str, JobFiles] = defaultdict(lambda: JobFiles(output / "standalone"))
    for unit in discover_trials([source]):
        if unit.format is None:
            continue
        try:
            for bundle in reader_for(unit.format)(unit.path):
                job = job_of(dict(bundle))
                if job not in jobs:
                    jobs[job] = JobFiles(output / job)
                process(dict(bundle), jobs[job], stages)
        except ReaderError:
            continue
    for files in jobs.values():
        files.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
