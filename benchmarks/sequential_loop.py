"""The baseline for `bench_pipeline.py`: the pipeline's work as a plain sequential loop.

The same steps as `trajcurate run` (default options, or `--instance-status all`, and the
selection options), one trial after another in one process: detect and open
(`transforms/intake.py`), the curation chain (`transforms/chain.py`: validate, redaction,
TQS V2 scoring, clean, gate, score filter), the same IM / LF rendering spilled to a file per
job, then per job the same selection (`transforms/selection.py`) and the parts concatenated
in output order, the same stats, rejects, dead letters and sidecar — so its files are
byte-identical to the pipeline's (`im.jsonl`, `lf.json`, `lf.stats.json`, `rejects.jsonl`,
`dead_letter.jsonl`, `scores.jsonl`). Not done: the run manifest, `dataset_info.json` and
the counts file (finalize).

Usage: `python sequential_loop.py INPUT OUTPUT [--instance-status all] [--dedup off]
[--best-of-k K] [--curriculum]`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson

from transforms.chain import (
    REJECTED,
    ChainSettings,
    Drop,
    dead_letter_record,
    job_of,
    run_stages,
    stages_after_judge,
    stages_before_judge,
)
from transforms.intake import detect_units, open_unit
from transforms.readers.confined import DEFAULT_LIMITS
from transforms.selection import DEDUP_MODES, SelectionSettings
from transforms.sinks import parts
from transforms.sinks.bundle_stats import add_bundle
from transforms.sinks.lf import DEFAULT_LF, LfSettings
from transforms.sinks.names import safe_job_name
from transforms.sinks.records import bundle_payload
from transforms.sinks.scores import (
    CANDIDATE,
    ROW,
    SIDECAR,
    candidate_item,
    decide_job,
    kept_in_order,
    kept_outcomes,
    prior_row,
    settle_job,
    sidecar_bytes,
    stats_of,
    with_curriculum,
)
from transforms.sinks.stats import Stats

_JSON = orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2
PARTS = ".parts"


class JobFiles:
    """One job's outputs: parts spilled as they come; selection, then files written sorted,
    at the end."""

    def __init__(
        self, output: str, job: str, selection: SelectionSettings, lf: LfSettings = DEFAULT_LF
    ) -> None:
        self.lf = lf
        self.selection = selection
        self.folder = os.path.join(output, safe_job_name(job))
        self.spill = parts.SpillFile(f"{self.folder}/{PARTS}/spill")
        self.refs: list[tuple[Any, int, int]] = []
        self.drops: dict[str, list[dict[str, Any]]] = {"rejected": [], "dead_letter": []}
        self.items: list[tuple[str, Any]] = []  # candidates and prior rows, as Beam groups them
        self.stats = Stats()

    def write(self, bundle: dict[str, Any]) -> None:
        try:
            payload = bundle_payload(bundle, self.lf)
        except Exception as exc:  # as the pipeline's spill: dead-lettered at stage `write`
            self.drop(Drop("dead_letter", dead_letter_record("write", bundle, exc)))
            return
        part = parts.encode_part(b"".join(payload["im_lines"]), b"\n".join(payload["lf_items"]))
        self.refs.append((payload["sort_key"], self.spill.append(part), len(part)))
        if self.selection.active:  # counted only if selection keeps it
            stats = add_bundle(Stats(), bundle, None)
            self.items.append((CANDIDATE, candidate_item(bundle, self.selection, stats)))
        else:
            add_bundle(self.stats, bundle, None)
            self.items.append((CANDIDATE, candidate_item(bundle, self.selection)))

    def drop(self, drop: Drop) -> None:
        self.drops[drop.kind].append(drop.record)
        if drop.row is not None:
            self.items.append((ROW, prior_row(drop.row)))

    def _select(self) -> dict[Any, Any] | None:
        """The job's selection: its sidecar written, drops rejected, stats of what stays."""
        verdicts, entries, written = decide_job(self.items, self.selection)
        Path(self.folder).mkdir(parents=True, exist_ok=True)
        Path(self.folder, SIDECAR).write_bytes(sidecar_bytes(entries))
        if not self.selection.active:
            return None
        kept, dropped = settle_job(verdicts, written)
        self.drops[REJECTED].extend(dropped)
        for outcome in kept_outcomes(written, kept):
            self.stats.merge(stats_of(outcome["stats"]))
        return kept

    def close(self) -> None:
        self.spill.close()
        kept = self._select()
        reader = parts.PartReader()
        with (
            open(f"{self.folder}/im.jsonl", "wb") as im,
            open(f"{self.folder}/lf.json", "wb") as lf,
        ):
            lf.write(b"[")
            separator = b"\n"
            for key, offset, size in kept_in_order(self.refs, _sort_key, kept):
                im_block, lf_block = parts.decode_part(reader.read(self.spill.path, offset, size))
                order = None if kept is None else kept[tuple(key)]
                if order is not None:
                    im_block, lf_block = with_curriculum(im_block, lf_block, order)
                im.write(im_block)
                if lf_block:
                    lf.write(separator + lf_block.replace(b"\n", b",\n"))
                    separator = b",\n"
            lf.write(b"]\n" if separator == b"\n" else b"\n]\n")
        reader.close()
        os.remove(self.spill.path)
        for kind, name in (("rejected", "rejects.jsonl"), ("dead_letter", "dead_letter.jsonl")):
            lines = sorted(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for r in self.drops[kind])
            Path(self.folder, name).write_bytes(b"".join(line + b"\n" for line in lines))
        Path(self.folder, "lf.stats.json").write_bytes(_json(self.stats.to_json()))


def _sort_key(ref: tuple[Any, int, int]) -> Any:
    return ref[0]


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=_JSON) + b"\n"


def main(
    source: Path,
    output: Path,
    instance_status: str,
    selection: SelectionSettings | None = None,
) -> int:
    settings = ChainSettings(instance_status=instance_status, sidecar=True)
    selection = selection or SelectionSettings()
    stages = [*stages_before_judge(settings), *stages_after_judge(settings)]
    jobs: dict[str, JobFiles] = {}

    def files_of(item: Any) -> JobFiles:
        job = item.record["job"] if isinstance(item, Drop) else job_of(item)
        if job not in jobs:
            jobs[job] = JobFiles(str(output), job, selection)
        return jobs[job]

    for unit in detect_units(str(source), None, DEFAULT_LIMITS):
        for opened in [unit] if isinstance(unit, Drop) else open_unit(unit, DEFAULT_LIMITS):
            item = opened if isinstance(opened, Drop) else run_stages(opened, stages, _no_count)
            if isinstance(item, Drop):
                files_of(item).drop(item)
            else:
                files_of(item).write(item)
    run_stats: Stats | None = None
    for files in jobs.values():
        files.close()
        run_stats = files.stats if run_stats is None else run_stats.merge(files.stats)
    for files in jobs.values():
        shutil.rmtree(f"{files.folder}/{PARTS}")
    (output / "lf.stats.json").write_bytes(_json((run_stats or Stats()).to_json()))
    return 0


def _no_count(_name: str) -> None:
    return None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--instance-status", default="resolved")
    parser.add_argument("--dedup", default="exact", choices=DEDUP_MODES)
    parser.add_argument("--best-of-k", type=int, default=None)
    parser.add_argument("--curriculum", action="store_true")
    args = parser.parse_args()
    chosen = SelectionSettings(args.dedup, args.best_of_k, args.curriculum)
    sys.exit(main(args.input, args.output, args.instance_status, chosen))
