"""Where every output of a run goes (formats.md §7), and the byte-level file operations.

Paths with a scheme (gs://, s3://, ...) go through Beam's FileSystems; plain local paths use
the os module directly, because Beam's local filesystem runs a glob match for every exists
and delete, which cost a millisecond a file on the spill parts.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import uuid
from typing import IO, Any

from apache_beam.io.filesystems import FileSystems

from transforms.sinks import s3_empty  # noqa: F401  (empty files on s3://)
from transforms.sinks.names import safe_job_name
from transforms.sinks.parts import PartReader

IM = "im"
LF = "lf"
PARTS = ".parts"


def _remote(path: str) -> bool:
    return "://" in path


def is_remote(path: str) -> bool:
    """A path with a scheme (gs://, s3://, ...), written through Beam's FileSystems."""
    return _remote(path)


def job_dir(output: str, job: str) -> str:
    """The folder of a job's files: always one safe name below `output` (job names are data)."""
    folder = safe_job_name(job)
    return FileSystems.join(output, folder) if _remote(output) else os.path.join(output, folder)


def shard_name(kind: str, shard: int, num_shards: int, suffix: str | None = None) -> str:
    """`im.jsonl` / `lf.json` unsharded; `im-00000-of-00008.jsonl` when sharded (`suffix`,
    e.g. `.parquet`, replaces the JSON one)."""
    if suffix is None:
        suffix = ".jsonl" if kind == IM else ".json"
    if num_shards <= 0:
        return kind + suffix
    return f"{kind}-{shard:05d}-of-{num_shards:05d}{suffix}"


def shard_names(kind: str, num_shards: int) -> list[str]:
    return [shard_name(kind, s, num_shards) for s in range(max(num_shards, 1))]


def _create(path: str) -> IO[bytes] | Any:
    if _remote(path):
        return FileSystems.create(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return open(path, "wb")


def exists(path: str) -> bool:
    return FileSystems.exists(path) if _remote(path) else os.path.exists(path)


def delete(paths: list[str]) -> None:
    """Delete files (or, locally, folders) that exist; missing ones are ignored."""
    for path in paths:
        if _remote(path):
            if FileSystems.exists(path):
                FileSystems.delete([path])
        elif os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)


def _replace(temporary: str, path: str) -> None:
    if _remote(path):
        if FileSystems.exists(path):
            FileSystems.delete([path])
        FileSystems.rename([temporary], [path])
    else:
        os.replace(temporary, path)


def read_bytes(path: str) -> bytes:
    if not _remote(path):
        with open(path, "rb") as local:
            return local.read()
    handle = FileSystems.open(path)
    try:
        data: bytes = handle.read()
    finally:
        handle.close()
    return data


def open_read(path: str) -> IO[bytes] | Any:
    """A file opened for reading, local or on any Beam filesystem (a context manager)."""
    return FileSystems.open(path) if _remote(path) else open(path, "rb")


class FileWriter:
    """A file written through a temporary name and renamed into place on a clean close."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._temporary = path + ".partial"
        self._handle = _create(self._temporary)

    def write(self, data: bytes) -> None:
        self._handle.write(data)

    @property
    def handle(self) -> IO[bytes] | Any:
        """The open file, for writers that stream into it themselves (Parquet)."""
        return self._handle

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._handle.close()
        if exc_type is not None:
            delete([self._temporary])
            return
        _replace(self._temporary, self.path)


def write_bytes(path: str, data: bytes) -> None:
    """Write a whole file: to a temporary name first, then renamed over the final one."""
    with FileWriter(path) as writer:
        writer.write(data)


def part_path(output: str, job: str, shard: int, key: str) -> str:
    """Where one bundle's share of a shard waits for the final, sorted concatenation."""
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()
    return f"{job_dir(output, job)}/{PARTS}/{shard:05d}/{digest}.part"


def spill_path(output: str, job: str, shard: int) -> str:
    """A new local spill file of a shard: the parts of many bundles, one after another. Its
    name is unique, so a retried Beam bundle never appends to the file of a failed one."""
    return f"{job_dir(output, job)}/{PARTS}/{shard:05d}/{uuid.uuid4().hex}.spill"


def read_parts() -> PartReader:
    """A reader of parts by (path, offset, size): local spill files, or whole remote parts."""
    return PartReader(read_bytes)


def write_bytes_once(path: str, data: bytes) -> None:
    """Write a whole file directly (no temporary name: for parts, read only by this run)."""
    handle = _create(path)
    try:
        handle.write(data)
    finally:
        handle.close()


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/"))
