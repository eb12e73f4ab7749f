"""The output folder of a run: checked before the work, locked during it, published at the end.

So that the outputs never lie:

- `check_writable` writes (and deletes) a 1 MiB probe before any work starts, so a read-only
  or full folder fails in one line, not after the run with a traceback and `.part` files;
- `OutputLock` keeps a second run out of the same folder (`DIR/.trajcurate.lock`, an
  `flock` the kernel drops when the holder dies, so a killed run never blocks the next);
- the pipeline writes under `staging_root(DIR, run_id)/<job>/`; `publish_job` then moves a
  job's files into `DIR/<job>/` "together, manifest last": the old manifest is deleted
  first, each file is renamed over its final name, outputs of an earlier run that this run
  did not write are removed, and the new manifest — with the size and SHA-256 of every file
  — is written last. A crash at any point leaves either no manifest or one that describes
  exactly the files beside it; `verify_outputs` checks that (for `--skip-unchanged`).

Local paths use os / shutil; paths with "://" go through Beam's FileSystems. Object stores
have no rename-over or advisory locks: there a rename is copy + delete, and the lock is a
best-effort marker object (checked, then written and read back) that two runs starting in
the same second can both pass, and that a SIGKILLed run leaves behind (the message says to
delete it). Only the local lock is exclusive.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import fnmatch
import hashlib
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterable, Iterator
from typing import IO, Any

import orjson

LOCK_NAME = ".trajcurate.lock"
STAGING_PREFIX = ".staging-"
MANIFEST = "manifest.json"
PARTIAL_SUFFIX = ".partial"
PROBE_BYTES = 1 << 20
CHUNK = 1 << 20

# Everything trajcurate may have written in a job folder: the only names publish_job removes
# (the files; `.parts/` is the only folder).
JOB_OUTPUT_PATTERNS = (
    "im.jsonl",
    "im-*-of-*.jsonl",
    "lf.json",
    "lf-*-of-*.json",
    "im.parquet",
    "im-*-of-*.parquet",
    "lf.parquet",
    "lf-*-of-*.parquet",
    "messages.jsonl",  # --messages-format trl / both
    "messages-*-of-*.jsonl",
    "openai.jsonl",  # --messages-format openai / both
    "openai-*-of-*.jsonl",
    "messages.val.jsonl",  # with --val-fraction
    "messages.val-*-of-*.jsonl",
    "openai.val.jsonl",
    "openai.val-*-of-*.jsonl",
    # `--val-fraction`: the validation files
    "im.val.jsonl",
    "im.val-*-of-*.jsonl",
    "lf.val.json",
    "lf.val-*-of-*.json",
    "im.val.parquet",
    "im.val-*-of-*.parquet",
    "lf.val.parquet",
    "lf.val-*-of-*.parquet",
    "dataset_info.json",
    "lf.stats.json",
    "rejects.jsonl",
    "dead_letter.jsonl",
    "scores.jsonl",
    MANIFEST,
    "*" + PARTIAL_SUFFIX,
)
JOB_OUTPUT_FOLDERS = (".parts",)
# ... and in DIR itself, beside the job folders.
RUN_OUTPUT_PATTERNS = (
    "lf.stats.json",
    "llm_dry_run.json",
    "README.md",  # the dataset card (pipelines/dataset_card.py)
    "dataset_info.json",  # every job registered for LLaMA-Factory
    MANIFEST,
    "*" + PARTIAL_SUFFIX,
)

_RUN_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_FULL = (errno.ENOSPC, errno.EDQUOT)


class OutputError(Exception):
    """A problem with the output folder, as one line for the user."""


# --------------------------------------------------------------------------------------------
# Files: local (os) or remote (Beam FileSystems)


def _remote(path: str) -> bool:
    return "://" in path


def _join(folder: str, name: str) -> str:
    if _remote(folder):
        return folder.rstrip("/") + "/" + name
    return os.path.join(folder, name)


def _filesystems() -> Any:
    from apache_beam.io.filesystems import FileSystems

    return FileSystems


def _uncompressed() -> Any:
    from apache_beam.io.filesystem import CompressionTypes

    return CompressionTypes.UNCOMPRESSED


def _exists(path: str) -> bool:
    return bool(_filesystems().exists(path)) if _remote(path) else os.path.lexists(path)


def _listing(folder: str) -> dict[str, bool]:
    """The entries directly in `folder`: name -> is a folder (remote: has objects under it)."""
    if not _remote(folder):
        try:
            with os.scandir(folder) as entries:
                return {e.name: e.is_dir(follow_symlinks=False) for e in entries}
        except FileNotFoundError:
            return {}
    prefix = folder.rstrip("/") + "/"
    found: dict[str, bool] = {}
    for meta in _match(prefix + "**"):
        rest = meta.path[len(prefix) :]
        name, slash, _ = rest.partition("/")
        if name:
            found[name] = found.get(name, False) or bool(slash)
    return found


def _match(pattern: str) -> list[Any]:
    try:
        return list(_filesystems().match([pattern])[0].metadata_list)
    except Exception:  # BeamIOError: nothing there is not an error here
        return []


def _delete(path: str, folder: bool = False) -> None:
    """Delete a file or a whole folder (remote: every object under it); missing is fine."""
    if _remote(path):
        paths = [m.path for m in _match(path.rstrip("/") + "/**")] if folder else []
        if not folder and _filesystems().exists(path):
            paths = [path]
        if paths:
            _filesystems().delete(paths)
    elif os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def _rename(source: str, target: str) -> None:
    if _remote(target):
        if _filesystems().exists(target):
            _filesystems().delete([target])
        _filesystems().rename([source], [target])
    else:
        os.replace(source, target)


def _makedirs(folder: str) -> None:
    if not _remote(folder):
        os.makedirs(folder, exist_ok=True)


def _fsync_dir(folder: str) -> None:
    if _remote(folder):
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _chunks(path: str, sync: bool) -> Iterator[bytes]:
    if _remote(path):
        handle: IO[bytes] = _filesystems().open(path, compression_type=_uncompressed())
    else:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    try:
        while chunk := handle.read(CHUNK):
            yield chunk
        if sync and not _remote(path):
            os.fsync(handle.fileno())  # on disk before a manifest vouches for it
    finally:
        handle.close()


def file_digest(path: str, sync: bool = False) -> dict[str, Any]:
    """`{"bytes": size, "sha256": hex}` of a file, read in 1 MiB chunks (`sync`: fsync it)."""
    digest = hashlib.sha256()
    size = 0
    for chunk in _chunks(path, sync):
        digest.update(chunk)
        size += len(chunk)
    return {"bytes": size, "sha256": digest.hexdigest()}


def _size(path: str) -> int | None:
    try:
        if _remote(path):
            return int(_filesystems().get_filesystem(path).size(path))
        return os.stat(path).st_size
    except Exception:  # missing (OSError locally, BeamIOError remotely)
        return None


def _read(path: str) -> bytes | None:
    try:
        if not _remote(path):
            with open(path, "rb") as handle:
                return handle.read()
        handle = _filesystems().open(path, compression_type=_uncompressed())
        try:
            data: bytes = handle.read()
        finally:
            handle.close()
        return data
    except Exception:  # missing or unreadable: the caller says so
        return None


def _write(path: str, data: bytes) -> None:
    """Write a whole file through `<path>.partial` and a rename (fsync'ed locally)."""
    temporary = path + PARTIAL_SUFFIX
    if _remote(path):
        handle = _filesystems().create(temporary, compression_type=_uncompressed())
        try:
            handle.write(data)
        finally:
            handle.close()
    else:
        with open(temporary, "wb") as local:
            local.write(data)
            local.flush()
            os.fsync(local.fileno())
    _rename(temporary, path)
    if not _remote(path):
        _fsync_dir(os.path.dirname(path))


def append_line(path: str, line: bytes) -> None:
    """Add one line at the end of a file (created if missing; removed again if that write
    fails). Locally an O_APPEND write, fsync'ed; on an object store, which cannot append,
    the object is rewritten whole."""
    if not _remote(path):
        existed = os.path.lexists(path)
        try:
            with open(path, "ab") as local:
                local.write(line)
                local.flush()
                os.fsync(local.fileno())
        except OSError:
            if not existed:  # a full disk leaves no empty file behind
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        return
    _write(path, (_read(path) or b"") + line)


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


# --------------------------------------------------------------------------------------------
# Before the work: can we write there?


def check_writable(output: str, probe_bytes: int = PROBE_BYTES) -> None:
    """Create `output` if needed and write, fsync and delete a probe file there.

    Raises OutputError for a read-only folder, a full one (with the space left) or any other
    reason the folder cannot be written.
    """
    if _remote(output):
        _check_remote(output)
        return
    if os.path.exists(output) and not os.path.isdir(output):
        raise OutputError(f"output {output} is not a folder")
    probe = os.path.join(output, f".trajcurate-probe-{os.getpid()}{PARTIAL_SUFFIX}")
    error: OSError | None = None
    fd = -1
    try:
        os.makedirs(output, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        block = b"\0" * min(CHUNK, probe_bytes)
        left = probe_bytes
        while left > 0:
            left -= os.write(fd, block[:left])
        os.fsync(fd)  # delayed allocation: a full disk may only say so here or at close
        os.close(fd)
        fd = -1
    except OSError as exc:
        error = exc
    finally:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.remove(probe)
    if error is not None:  # described after the probe is gone: the free space is what is left
        raise OutputError(_describe(output, error))


def _describe(output: str, exc: OSError, verb: str = "write") -> str:
    if exc.errno == errno.EROFS:
        return f"output {output} is read-only"
    if exc.errno in _READ_ONLY:
        return f"output {output} is read-only (permission denied)"
    if exc.errno in _FULL:
        free = _free_mib(output)
        what = "quota exceeded" if exc.errno == errno.EDQUOT else f"{free} MiB free"
        return f"no space left in {output} ({what})"
    if exc.errno == errno.ENOTDIR:
        return f"output {output} is not a folder"
    return f"cannot {verb} {output}: {exc.strerror or exc}"


def _free_mib(output: str) -> str:
    folder = output
    while folder and not os.path.isdir(folder):  # the part of the path that exists
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    try:
        return f"{shutil.disk_usage(folder or '.').free / (1 << 20):,.1f}"
    except OSError:
        return "?"


def _check_remote(output: str) -> None:
    probe = _join(output, f".trajcurate-probe-{uuid.uuid4().hex}{PARTIAL_SUFFIX}")
    try:
        handle = _filesystems().create(probe, compression_type=_uncompressed())
        try:
            handle.write(b"trajcurate probe\n")
        finally:
            handle.close()
        _filesystems().delete([probe])
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OutputError(f"cannot write {output}: {reason}") from None


# --------------------------------------------------------------------------------------------
# During the work: one run per output folder


class OutputLock:
    """`DIR/.trajcurate.lock`, held for the life of the run.

    Locally an exclusive `flock` on the file (released by the kernel when the process dies,
    however it dies); the file holds the holder's pid, host and start time for the message a
    second run gets, and is removed on a clean exit. Remote folders: see the module doc.
    """

    def __init__(self, output: str) -> None:
        self.output = output
        self.path = _join(output, LOCK_NAME)
        self._fd = -1
        self._token = ""

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.release()

    @property
    def held(self) -> bool:
        return self._fd >= 0 or bool(self._token)

    def _holder(self) -> dict[str, Any]:
        self._token = uuid.uuid4().hex
        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "token": self._token,
        }

    def _busy(self, data: bytes | None, hint: str = "") -> OutputError:
        try:
            holder = orjson.loads(data) if data else {}
        except orjson.JSONDecodeError:
            holder = {}
        if not isinstance(holder, dict):
            holder = {}
        who = (
            f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} "
            f"since {holder.get('started', '?')}"
        )
        return OutputError(
            f"output {self.output} is in use by another trajcurate run ({who}){hint}"
        )

    def acquire(self) -> None:
        if self.held:
            return
        if _remote(self.output):
            self._acquire_remote()
            return
        try:
            os.makedirs(self.output, exist_ok=True)
        except OSError as exc:
            raise OutputError(_describe(self.output, exc)) from None
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise OutputError(_describe(self.output, exc)) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise OutputError(_describe(self.output, exc)) from None
                raise self._busy(_read(self.path)) from None
            # The holder may have removed the file between our open and flock: then we hold
            # a lock on a file nobody else will open; try again on the current one.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self._fd = fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, _json(self._holder()), 0)

    def _acquire_remote(self) -> None:
        hint = f"; if that run is gone, delete {self.path}"
        existing = _read(self.path)
        if existing is not None:
            raise self._busy(existing, hint)
        holder = self._holder()
        try:
            _write(self.path, _json(holder))
        except Exception as exc:
            self._token = ""
            raise OutputError(f"cannot write {self.output}: {exc}") from None
        written = _read(self.path)
        try:
            token = orjson.loads(written or b"{}").get("token")
        except (orjson.JSONDecodeError, AttributeError):
            token = None
        if token != holder["token"]:  # another run wrote its marker at the same time
            self._token = ""
            raise self._busy(written, hint)

    def release(self) -> None:
        if _remote(self.output):
            if self._token:
                with contextlib.suppress(Exception):
                    _delete(self.path)
                self._token = ""
            return
        if self._fd < 0:
            return
        # Unlink while still holding the lock: a waiter then sees a different inode and retries.
        with contextlib.suppress(OSError):
            os.remove(self.path)
        os.close(self._fd)
        self._fd = -1
        self._token = ""


# --------------------------------------------------------------------------------------------
# After the work: publish from the staging folder


def new_run_id() -> str:
    """A run id for `staging_root`: UTC time, pid and 6 random hex characters."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{now}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def staging_root(output: str, run_id: str) -> str:
    """`DIR/.staging-<run_id>`: the pipeline writes every job's files under `<it>/<job>/`."""
    if not _RUN_ID.fullmatch(run_id) or run_id.strip(".") == "":
        raise ValueError(f"run id {run_id!r}: use letters, digits, '.', '_' and '-'")
    return _join(output, STAGING_PREFIX + run_id)


def _staged_files(folder: str) -> list[str]:
    """The files to publish from a staged folder: not hidden, not partial, not a manifest."""
    return sorted(
        name
        for name, is_dir in _listing(folder).items()
        if not is_dir
        and not name.startswith(".")
        and not name.endswith(PARTIAL_SUFFIX)
        and name != MANIFEST
    )


def _stale(name: str, is_dir: bool, files: Iterable[str], folders: Iterable[str]) -> bool:
    if is_dir:
        return name in folders
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in files)


def _publish(
    source: str,
    target: str,
    manifest: dict[str, Any],
    stale_files: Iterable[str],
    stale_folders: Iterable[str],
) -> dict[str, Any]:
    """Move the staged files of `source` into `target`, manifest last; return that manifest."""
    try:
        _makedirs(target)
        names = _staged_files(source)
        files = {name: file_digest(_join(source, name), sync=True) for name in names}
        # (a) No moment where the previous manifest vouches for new data.
        _delete(_join(target, MANIFEST))
        _fsync_dir(target)
        # (b) Each file over its final name.
        for name in names:
            _rename(_join(source, name), _join(target, name))
        # (c) What an earlier run wrote here and this one did not (trajcurate's names only).
        for name, is_dir in sorted(_listing(target).items()):
            if name not in files and _stale(name, is_dir, stale_files, stale_folders):
                _delete(_join(target, name), folder=is_dir)
        _fsync_dir(target)
        # (d) The manifest, last.
        written = {**manifest, "files": files}
        _write(_join(target, MANIFEST), _json(written))
    except OSError as exc:
        raise OutputError(_describe(target, exc, "publish to")) from None
    return written


def publish_job(output: str, staging: str, folder: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """Publish `<staging>/<folder>/` as `DIR/<folder>/`, manifest last; return the manifest.

    The manifest written is `manifest` plus `"files": {name: {"bytes", "sha256"}}` for every
    published file (`manifest` itself is not modified). Outputs of an earlier run that this
    one did not write (more shards, ...) are removed; other files are left alone. The staged
    job folder is removed. A local OSError becomes an OutputError (the folder is then left
    without a manifest, which `verify_outputs` reports).
    """
    if folder in ("", ".", "..") or "/" in folder or "\\" in folder:
        raise ValueError(f"job folder {folder!r} is not a single path component")
    source = _join(staging, folder)
    target = _join(output, folder)
    written = _publish(source, target, manifest, JOB_OUTPUT_PATTERNS, JOB_OUTPUT_FOLDERS)
    _delete(source, folder=True)
    return written


def publish_run_files(output: str, staging: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """Publish the run-level files staged directly in `staging` into DIR, manifest.json last.

    Publish the jobs first (`publish_job`); job folders in DIR are left alone. Stale
    run-level files of an earlier run (`lf.stats.json`, `llm_dry_run.json`, `README.md`,
    `dataset_info.json`, `*.partial`) are removed. Returns the manifest written (with `files`).
    """
    return _publish(staging, output, manifest, RUN_OUTPUT_PATTERNS, ())


def verify_outputs(job_dir: str) -> str | None:
    """None if `job_dir/manifest.json` lists its files and each matches; else one-line why.

    Works for a job folder and for DIR itself (the run manifest lists the run-level files).
    Sizes are checked for every file before any file is hashed.
    """
    data = _read(_join(job_dir, MANIFEST))
    if data is None:
        return "no manifest"
    try:
        manifest = orjson.loads(data)
    except orjson.JSONDecodeError:
        return "manifest.json is not valid JSON"
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict):
        return "the manifest lists no files (written before manifests had checksums)"
    expected: dict[str, tuple[int, str]] = {}
    for name, entry in sorted(files.items()):
        if (
            not isinstance(entry, dict)
            or name in ("", ".", "..")
            or "/" in name
            or "\\" in name
            or not isinstance(entry.get("bytes"), int)
            or not isinstance(entry.get("sha256"), str)
        ):
            return f"the manifest entry for {name!r} is malformed"
        expected[name] = (entry["bytes"], entry["sha256"])
    for name, (size, _sha) in expected.items():
        actual = _size(_join(job_dir, name))
        if actual is None:
            return f"{name} missing"
        if actual != size:
            return f"{name}: {actual:,} bytes, manifest says {size:,}"
    for name, (_size_expected, sha) in expected.items():
        try:
            got = file_digest(_join(job_dir, name))["sha256"]
        except Exception as exc:  # vanished or unreadable since the size check
            return f"{name}: cannot read ({getattr(exc, 'strerror', None) or exc})"
        if got != sha:
            return f"{name}: content differs from the manifest (sha256)"
    return None


def remove_staging(output: str) -> None:
    """Remove every `DIR/.staging-*` folder and stale `*.partial` files in DIR and its jobs.

    Call it on failure, and at the start of a run once the lock is held (what a killed run
    left). Only trajcurate's own names are touched.
    """
    for name, is_dir in _listing(output).items():
        path = _join(output, name)
        if name.startswith(STAGING_PREFIX):
            _delete(path, folder=True)
        elif not is_dir and name.endswith(PARTIAL_SUFFIX):
            _delete(path)
        elif is_dir and not name.startswith("."):
            for inner, inner_is_dir in _listing(path).items():
                if not inner_is_dir and inner.endswith(PARTIAL_SUFFIX):
                    _delete(_join(path, inner))


__all__ = [
    "JOB_OUTPUT_PATTERNS",
    "LOCK_NAME",
    "RUN_OUTPUT_PATTERNS",
    "OutputError",
    "OutputLock",
    "append_line",
    "check_writable",
    "file_digest",
    "new_run_id",
    "publish_job",
    "publish_run_files",
    "remove_staging",
    "staging_root",
    "verify_outputs",
]
