"""Where every output of a run goes (formats.md §7), and byte-level writes through Beam's
FileSystems so the same code writes to a local folder or to gs:// / s3:// paths."""

from __future__ import annotations

import hashlib
import posixpath

from apache_beam.io.filesystems import FileSystems

IM = "im"
LF = "lf"


def job_dir(output: str, job: str) -> str:
    return FileSystems.join(output, job)


def shard_name(kind: str, shard: int, num_shards: int) -> str:
    """`im.jsonl` / `lf.json` unsharded; `im-00000-of-00008.jsonl` when sharded."""
    suffix = ".jsonl" if kind == IM else ".json"
    if num_shards <= 0:
        return kind + suffix
    return f"{kind}-{shard:05d}-of-{num_shards:05d}{suffix}"


def shard_names(kind: str, num_shards: int) -> list[str]:
    return [shard_name(kind, s, num_shards) for s in range(max(num_shards, 1))]


def write_bytes(path: str, data: bytes) -> None:
    """Write a whole file: to a temporary name first, then renamed over the final one."""
    temporary = path + ".partial"
    handle = FileSystems.create(temporary)
    try:
        handle.write(data)
    finally:
        handle.close()
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([temporary], [path])


class FileWriter:
    """A file written through a temporary name and renamed into place on a clean close."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._temporary = path + ".partial"
        self._handle = FileSystems.create(self._temporary)

    def write(self, data: bytes) -> None:
        self._handle.write(data)

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._handle.close()
        if exc_type is not None:
            FileSystems.delete([self._temporary])
            return
        if FileSystems.exists(self.path):
            FileSystems.delete([self.path])
        FileSystems.rename([self._temporary], [self.path])


PARTS = ".parts"


def part_path(output: str, job: str, shard: int, key: str) -> str:
    """Where one bundle's share of a shard waits for the final, sorted concatenation."""
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()
    return f"{job_dir(output, job)}/{PARTS}/{shard:05d}/{digest}"


def write_part(path: str, data: bytes) -> None:
    handle = FileSystems.create(path)
    try:
        handle.write(data)
    finally:
        handle.close()


def delete_parts(paths: list[str]) -> None:
    existing = [p for p in paths if FileSystems.exists(p)]
    if existing:
        FileSystems.delete(existing)


def remove_parts_folder(output: str, job: str) -> None:
    """Drop the (now empty) part folder of a job, where the filesystem has folders."""
    folder = f"{job_dir(output, job)}/{PARTS}"
    if FileSystems.exists(folder):
        FileSystems.delete([folder])


def read_bytes(path: str) -> bytes:
    handle = FileSystems.open(path)
    try:
        data: bytes = handle.read()
    finally:
        handle.close()
    return data


def json_array(items: list[bytes]) -> bytes:
    """A JSON array with one item a line (readable, diffable, loadable as one document)."""
    if not items:
        return b"[]\n"
    return b"[\n" + b",\n".join(items) + b"\n]\n"


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/"))
