"""Inputs on object stores (`gs://`, `s3://`, anything Beam's FileSystems registers).

An object store has keys, not folders, links or FIFOs. Discovery lists an input prefix once
(`FileSystems.match(prefix/**)`: keys and sizes) and finds Harbor trials in the listing by
the local rules (`harbor_layout`): a trial has keys under `agent/` or `verifier/`, or a
`result.json`; a job is a prefix with at least one trial below it, and then every "folder"
of it is a trial unit; a jobs prefix holds jobs. Other keys are standalone files.

Reading a unit copies the objects under its prefix — listed once, each checked against the
size cap before it is fetched — into a private temporary folder laid out as the keys are,
and runs the local reader there: the same confinement (a reference such as `../../other/x`
resolves inside the copy and is refused), the same records, byte for byte. A key that would
leave the copy (`..`, an empty or absolute component) is never written; the bundle is warned.
Messages name the object URL, not the temporary folder.
"""

from __future__ import annotations

import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from transforms.readers.bundle import Bundle, ReaderError, note_warnings
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, utf8_json
from transforms.readers.harbor_layout import HEAD_BYTES

CHUNK = 1 << 20
JOB_CONFIG_CAP = 1 << 20


def is_remote(path: str) -> bool:
    return "://" in path


@dataclass(frozen=True, slots=True)
class Listing:
    """The objects under a prefix: relative key -> size."""

    prefix: str
    sizes: dict[str, int]

    def url(self, key: str) -> str:
        return f"{self.prefix}/{key}" if key else self.prefix

    def folders(self) -> set[str]:
        found = {""}
        for key in self.sizes:
            parts = key.split("/")[:-1]
            found.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        return found


def list_prefix(prefix: str) -> Listing:
    """One listing of every object under `prefix` (raises the store's error when it fails)."""
    from apache_beam.io.filesystems import FileSystems

    prefix = prefix.rstrip("/")
    result = FileSystems.match([prefix + "/**"])[0]
    sizes = {}
    for metadata in result.metadata_list:
        key = metadata.path[len(prefix) + 1 :] if metadata.path.startswith(prefix + "/") else ""
        if key and not key.endswith("/"):
            sizes[key] = int(metadata.size_in_bytes)
    return Listing(prefix, sizes)


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _children(folders: set[str], folder: str) -> list[str]:
    depth = folder.count("/") + 1 if folder else 0
    return sorted(
        f
        for f in folders
        if f
        and f.startswith(_join(folder, ""))
        and f.count("/") == depth
        and not posixpath.basename(f).startswith(".")
    )


def _is_trial(listing: Listing, folder: str) -> bool:
    """The local rule: keys under `agent/` or `verifier/`, or a `result.json` that names its
    trial or task (a job's own result.json does not; its first 64 KiB are read to tell)."""
    head = _join(folder, "")
    for key in listing.sizes:
        if key.startswith(head) and key[len(head) :].startswith(("agent/", "verifier/")):
            return True
    result = head + "result.json"
    if result not in listing.sizes:
        return False
    try:
        start = _fetch(listing.url(result), HEAD_BYTES)
    except OSError:
        return False
    return b'"trial_name"' in start or b'"task_name"' in start


@dataclass(frozen=True, slots=True)
class RemoteTrial:
    url: str
    job: str | None


def find_remote_trials(listing: Listing, limits: ReadLimits = DEFAULT_LIMITS) -> list[RemoteTrial]:
    """The trial units under the listed prefix (a trial, a job or a jobs prefix)."""
    folders = listing.folders()
    if _is_trial(listing, ""):
        return [RemoteTrial(listing.prefix, None)]
    jobs = (
        [""]
        if any(_is_trial(listing, c) for c in _children(folders, ""))
        else [
            child
            for child in _children(folders, "")
            if any(_is_trial(listing, c) for c in _children(folders, child))
        ]
    )
    units: list[RemoteTrial] = []
    for job in jobs:
        name = _job_name(listing, job, limits)
        units.extend(RemoteTrial(listing.url(c), name) for c in _children(folders, job))
    return units


def _job_name(listing: Listing, job: str, limits: ReadLimits) -> str:
    fallback = posixpath.basename(job or listing.prefix.rstrip("/"))
    key = _join(job, "config.json")
    if listing.sizes.get(key, JOB_CONFIG_CAP + 1) > min(JOB_CONFIG_CAP, limits.max_file_bytes):
        return fallback
    try:
        config = orjson.loads(utf8_json(_fetch(listing.url(key)), "config.json"))
    except (orjson.JSONDecodeError, ReaderError, OSError):
        return fallback
    name = config.get("job_name") if isinstance(config, dict) else None
    return name if isinstance(name, str) else fallback


def _fetch(url: str, limit: int = -1) -> bytes:
    from apache_beam.io.filesystems import FileSystems

    handle = FileSystems.open(url)
    try:
        data: bytes = handle.read(limit)
    finally:
        handle.close()
    return data


def _safe_key(key: str) -> bool:
    parts = key.split("/")
    return all(part not in ("", ".", "..") for part in parts) and "\\" not in key


class LocalCopy:
    """The objects under a trial prefix, copied into a private temporary folder."""

    def __init__(self, url: str, limits: ReadLimits = DEFAULT_LIMITS) -> None:
        self.url = url.rstrip("/")
        self.limits = limits
        self.warnings: list[str] = []
        self._temp = tempfile.mkdtemp(prefix="trajcurate-remote-")
        self.path = Path(self._temp) / posixpath.basename(self.url)

    def __enter__(self) -> LocalCopy:
        from apache_beam.io.filesystems import FileSystems

        self.path.mkdir()
        listing = list_prefix(self.url)
        for key, size in sorted(listing.sizes.items()):
            if not _safe_key(key):
                self.warnings.append(f"refused object key {key!r}: it would leave the trial")
                continue
            if size > self.limits.max_file_bytes:
                self.warnings.append(
                    f"refused {key}: {size / 2**20:.1f} MiB is over the --max-file-mb cap"
                )
                continue
            target = self.path.joinpath(*key.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            source = FileSystems.open(listing.url(key))
            try:
                with open(target, "wb") as out:
                    shutil.copyfileobj(source, out, CHUNK)
            finally:
                source.close()
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self._temp, ignore_errors=True)

    def shown(self, text: str) -> str:
        """`text` with the temporary folder written as the object URL."""
        return text.replace(str(self.path), self.url)


def iter_remote_units(prefix: str, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[RemoteTrial]:
    listing = list_prefix(prefix)
    if not listing.sizes:
        raise ReaderError(f"{prefix}: no object under this prefix")
    trials = find_remote_trials(listing, limits)
    if not trials:
        raise ReaderError(f"{prefix}: no Harbor trial found (no result.json, agent/ or verifier/)")
    yield from trials


def read_remote_trial(url: str, job: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Bundle:
    """The bundle of the trial under `url`, read from a local copy of its objects."""
    from transforms.readers.harbor_trial import read_trial

    with LocalCopy(url, limits) as copy:
        bundle = read_trial(copy.path, job, limits)
        bundle["source"] = copy.url
        bundle["read_files"] = {copy.shown(p): d for p, d in bundle["read_files"].items()}
        bundle["warnings"] = [copy.shown(w) for w in [*bundle["warnings"], *copy.warnings]]
        for record in bundle["records"][:1]:
            metadata = record["meta_info"]["unique_info"].get("_instance_metadata")
            if isinstance(metadata, dict) and isinstance(metadata.get("warnings"), list):
                metadata["warnings"] = [copy.shown(str(w)) for w in metadata["warnings"]]
        note_warnings(bundle["records"], bundle["warnings"])
    return bundle
