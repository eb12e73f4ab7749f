"""Beam sinks: per-job, sorted, deterministic files.

Written bundles are keyed by (job, shard) — the shard from a stable hash of the instance id —
grouped once at the end, sorted by instance id, and written whole, so two runs over the same
input give byte-identical files whatever order the runner processed bundles in. Rejects and
dead letters are written the same way, one file per job.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
import orjson

from transforms.sinks import layout
from transforms.sinks.records import bundle_payload
from transforms.stages import job_of

_SORT = orjson.OPT_SORT_KEYS


def shard_of(instance_id: str, num_shards: int) -> int:
    if num_shards <= 1:
        return 0
    return zlib.crc32(instance_id.encode("utf-8")) % num_shards


class KeyForShard(beam.DoFn):
    """bundle -> ((job, shard), payload) with the bundle's IM lines and LF examples."""

    def __init__(self, num_shards: int, chat_template_tokenizer: str | None = None) -> None:
        self.num_shards = num_shards
        self.chat_template_tokenizer = chat_template_tokenizer

    def process(self, bundle: dict[str, Any]) -> Iterator[Any]:
        payload = bundle_payload(bundle, self.chat_template_tokenizer)
        yield (job_of(bundle), shard_of(bundle["instance_id"], self.num_shards)), payload


class WriteShard(beam.DoFn):
    """((job, shard), payloads) -> the shard's im and lf files; yields (job, LF reshapes)."""

    def __init__(self, output: str, num_shards: int) -> None:
        self.output = output
        self.num_shards = num_shards

    def process(self, element: tuple[tuple[str, int], Iterable[Any]]) -> Iterator[Any]:
        (job, shard), payloads = element
        ordered = sorted(payloads, key=lambda p: p["sort_key"])
        folder = layout.job_dir(self.output, job)
        im_lines = b"".join(line for p in ordered for line in p["im_lines"])
        lf_items = [item for p in ordered for item in p["lf_items"]]
        name = layout.shard_name(layout.IM, shard, self.num_shards)
        layout.write_bytes(f"{folder}/{name}", im_lines)
        name = layout.shard_name(layout.LF, shard, self.num_shards)
        layout.write_bytes(f"{folder}/{name}", layout.json_array(lf_items))
        reshapes: Counter[str] = Counter()
        for p in ordered:
            reshapes.update(p["lf_reshapes"])
        yield job, dict(reshapes)


class WriteJobLines(beam.DoFn):
    """(job, records) -> DIR/<job>/<name>, records sorted by their canonical JSON."""

    def __init__(self, output: str, name: str) -> None:
        self.output = output
        self.name = name

    def process(self, element: tuple[str, Iterable[dict[str, Any]]]) -> Iterator[str]:
        job, records = element
        lines = sorted(orjson.dumps(r, option=_SORT) for r in records)
        data = b"".join(line + b"\n" for line in lines)
        layout.write_bytes(f"{layout.job_dir(self.output, job)}/{self.name}", data)
        yield job


def sum_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for count in counts:
        total.update(count)
    return dict(total)


RUN_KEY = ""  # the key of values that belong to the whole run: written to DIR/<name>


class WriteJobJson(beam.DoFn):
    """(job, JSON-able value) -> DIR/<job>/<name>, or DIR/<name> for the run (sorted keys)."""

    def __init__(self, output: str, name: str) -> None:
        self.output = output
        self.name = name

    def process(self, element: tuple[str, Any]) -> Iterator[str]:
        job, value = element
        data = orjson.dumps(value, option=_SORT | orjson.OPT_INDENT_2) + b"\n"
        folder = self.output if job == RUN_KEY else layout.job_dir(self.output, job)
        layout.write_bytes(f"{folder.rstrip('/')}/{self.name}", data)
        yield job
