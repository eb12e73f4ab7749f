"""`--parquet`: each job's IM and LF shards also as Parquet, with one explicit Arrow schema.

Why Parquet beside the JSON: a Parquet file carries its schema, so a column that is null in a
whole job is still typed, and every job's files load together with any reader — what JSON
cannot say on its own (see `transforms/sinks/schema.py`). The schema is `arrow_schema(kind)`,
derived from the same definition the JSON writers conform to, so the rows are the JSON rows.

The Parquet files are made from the JSON shards once those are written (the JSON is the
source of truth and is streamed line by line, a row group at a time, so memory stays flat):
`im.jsonl` -> `im.parquet`, `lf.json` -> `lf.parquet`, `im-00001-of-00004.jsonl` ->
`im-00001-of-00004.parquet`. A job whose shard got no record still gets the (empty) file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import orjson

from transforms.sinks import layout
from transforms.sinks.schema import arrow_schema, arrow_table
from transforms.sinks.split import NO_SPLIT, TRAIN, VALIDATION, SplitSettings, split_files

__all__ = [
    "PARQUET_SUFFIX",
    "ROWS_PER_GROUP",
    "WriteParquet",
    "json_to_parquet",
    "parquet_names",
    "write_empty",
]

PARQUET_SUFFIX = ".parquet"
ROWS_PER_GROUP = 1_000


def json_names(num_shards: int, split: SplitSettings = NO_SPLIT) -> list[str]:
    """The IM and LF files of a job: one per shard, and per split (`--val-fraction`)."""
    return [
        name
        for kind in (layout.IM, layout.LF)
        for part in (TRAIN, VALIDATION)
        for name in split_files(kind, num_shards, split, part)
    ]


def parquet_names(num_shards: int, split: SplitSettings = NO_SPLIT) -> list[str]:
    """The Parquet files of a job: `im.parquet`, `lf.parquet`, or one per shard (and
    `im.val.parquet` ... with a validation split)."""
    return [parquet_name(name) for name in json_names(num_shards, split)]


def parquet_name(json_name: str) -> str:
    """`im.jsonl` -> `im.parquet`, `lf-00000-of-00002.json` -> `lf-00000-of-00002.parquet`."""
    stem = json_name.rsplit(".", 1)[0]
    return stem + PARQUET_SUFFIX


def _kind(name: str) -> str:
    return "im" if name.startswith(layout.IM) else "lf"


def _rows(handle: Any) -> Iterator[Any]:
    """The records of an IM JSON-lines file or an LF array written one item a line."""
    for raw in iter(handle.readline, b""):
        line = raw.strip()
        if line in (b"", b"[", b"]"):
            continue
        yield orjson.loads(line.removesuffix(b","))


def json_to_parquet(folder: str, json_name: str) -> str | None:
    """Write the Parquet twin of `folder/json_name`; None when that JSON file is absent."""
    import pyarrow.parquet as pq

    source = f"{folder}/{json_name}"
    if not layout.exists(source):
        return None
    kind = _kind(json_name)
    target = parquet_name(json_name)
    with layout.FileWriter(f"{folder}/{target}") as sink, layout.open_read(source) as handle:
        writer = pq.ParquetWriter(_arrow_file(sink), arrow_schema(kind))
        batch: list[Any] = []
        for row in _rows(handle):
            batch.append(row)
            if len(batch) >= ROWS_PER_GROUP:
                writer.write_table(arrow_table(kind, batch))
                batch = []
        if batch:
            writer.write_table(arrow_table(kind, batch))
        writer.close()
    return target


def write_empty(folder: str, name: str) -> None:
    """An empty Parquet file with the schema of its kind (a shard no record went to)."""
    import pyarrow.parquet as pq

    with layout.FileWriter(f"{folder}/{name}") as sink:
        # No row group at all: readers (datasets) refuse a row group of 0 rows.
        pq.ParquetWriter(_arrow_file(sink), arrow_schema(_kind(name))).close()


def _arrow_file(sink: layout.FileWriter) -> Any:
    """The writer's open file as pyarrow writes to it (no copy of the file in memory)."""
    import pyarrow as pa

    return pa.PythonFile(sink.handle, mode="w")


class WriteParquet(beam.DoFn):
    """(job, anything) -> the Parquet twins of the job's written JSON shards; yields the job.

    Fed with the jobs once every shard of theirs is written (grouped after `WriteShard`)."""

    def __init__(self, output: str, num_shards: int, split: SplitSettings = NO_SPLIT) -> None:
        self.output = output
        self.num_shards = num_shards
        self.split = split

    def process(self, element: tuple[str, Any]) -> Iterator[str]:
        job, _ = element
        folder = layout.job_dir(self.output, job)
        for name in json_names(self.num_shards, self.split):
            json_to_parquet(folder, name)
        yield job
