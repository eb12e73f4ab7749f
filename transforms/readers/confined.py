"""The one way readers open files: confined to the trial, regular files only, size-capped.

Trial folders are untrusted: the agent that wrote them ran arbitrary code there. So every
file a reader touches goes through a `TrialFiles` opened on the trial folder (for a
standalone file: the file's own folder), and:

- a path is used only if its real path (symlinks resolved) is inside the real path of the
  root: a symlink whose target stays inside is fine, one that leaves is refused;
- only regular files are read: the path is `stat`ed before it is opened, so a FIFO, a
  device, a socket is never opened; the open itself is `O_RDONLY | O_NONBLOCK |
  O_NOFOLLOW` on the resolved path and is `fstat`ed again (`S_ISREG`), so nothing blocks;
- a file over `ReadLimits.max_file_bytes` is refused, and at most that many bytes + 1 are
  ever read (a file growing while it is read is refused too). JSON Lines read with
  `iter_lines(..., per_line_cap=True)` (IM corpora, which are streamed) cap each line
  instead of the file.

Refusals raise `ReaderError` with a one-line reason naming the file relative to the root
(`refused verifier/reward.txt: a FIFO, not a regular file`); a missing file raises its
subclass `FileMissing`. Where a reader only *looks* for optional files (`is_file`, `is_dir`,
`list_dir`, `glob`, `rglob`, `optional_bytes`), a refused entry is treated as absent and the
reason is kept in `warnings`, which the reader puts on its bundle.

The path a user gives on the command line is trusted as given (it may itself be a symlink):
`TrialFiles.for_input` roots a standalone file at its own folder and trusts the file itself.

Encodings: a leading UTF-8 byte order mark is dropped from JSON and JSON Lines. UTF-16 and
UTF-32 text with a byte order mark (`FF FE`, `FE FF`, ...) is **decoded** and re-encoded as
UTF-8 (not refused); invalid UTF-16 is refused with the byte offset.
"""

from __future__ import annotations

import codecs
import errno
import fnmatch
import hashlib
import os
import stat
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar, cast

from transforms.jsonl import ByteWindow, LineTooLong, iter_handle_lines
from transforms.readers.bundle import ReaderError

__all__ = [
    "DEFAULT_LIMITS",
    "MIB",
    "FileMissing",
    "OverBudget",
    "ReadLimits",
    "TrialFiles",
    "child_path",
    "decode_text",
    "utf8_head",
    "utf8_json",
]

MIB = 2**20
_T = TypeVar("_T")
_CHUNK = MIB
# The read buffer of a streamed corpus's lines: IM lines are often longer than the default
# 8 KiB, which `readline` then gathers from several reads.
STREAM_BUFFER = MIB
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_MISSING = (errno.ENOENT, errno.ENOTDIR)
# (BOM, codec) — UTF-32 first: its little-endian BOM starts with UTF-16's.
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """What a reader may read: `max_file_bytes` caps any one file (`--max-file-mb`);
    `allow_hard_links` reads files with more than one hard link (`--allow-hard-links`).
    One trial (or standalone input) may look at and open at most `max_trial_files` files
    and folders in all, read at most `max_trial_bytes` and take at most `max_trial_seconds`
    (`--max-trial-files`, `--max-trial-mb`, `--max-trial-seconds`; checked at every file
    access, so one trial never stalls a run)."""

    max_file_bytes: int = 512 * MIB
    allow_hard_links: bool = False
    max_trial_files: int = 10_000
    max_trial_bytes: int = 2048 * MIB
    max_trial_seconds: float = 300.0


class OverBudget(Exception):
    """A trial went over one of its budgets: the whole trial is refused with this reason.
    Not a `ReaderError`, so that no reader's look for an optional file can take it for a
    missing file and read on."""


class _Budget:
    """What one trial has used of its `ReadLimits` budgets (checked at every file access)."""

    __slots__ = ("bytes", "deadline", "files", "limits")
    files: set[str]

    def __init__(self, limits: ReadLimits) -> None:
        self.limits = limits
        self.files = set()  # every path looked at or opened, once
        self.bytes = 0
        self.deadline = time.monotonic() + limits.max_trial_seconds

    def spend(self, path: str | None = None, size: int = 0) -> None:
        if path is not None:
            self.files.add(path)
        self.bytes += size
        limits = self.limits
        if len(self.files) > limits.max_trial_files:
            raise OverBudget(
                f"trial over its budget: more than {limits.max_trial_files:,} files looked at "
                "or opened (--max-trial-files)"
            )
        if self.bytes > limits.max_trial_bytes:
            raise OverBudget(
                f"trial over its budget: more than {_cap_text(limits.max_trial_bytes)} read "
                "(--max-trial-mb)"
            )
        if time.monotonic() > self.deadline:
            raise OverBudget(
                f"trial over its budget: reading it took more than "
                f"{limits.max_trial_seconds:g} s (--max-trial-seconds)"
            )


DEFAULT_LIMITS = ReadLimits()


class FileMissing(ReaderError):
    """The file does not exist (for an optional file: simply absent)."""


def _size_text(size: int) -> str:
    return f"{size / MIB:.1f} MiB" if size >= MIB // 10 else f"{size} bytes"


def _cap_text(cap: int) -> str:
    return f"{cap // MIB} MiB" if cap % MIB == 0 else _size_text(cap)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def child_path(folder: str | os.PathLike[str], name: str) -> str:
    """`str(Path(folder) / name)` for a `Path`, or a string as `str(Path(...))` spells it,
    and a plain name, without pathlib (per-file paths of a trial are built this way)."""
    text = os.fspath(folder)
    return name if text == "." else os.path.join(text, name)


def _below(absolute: str, root: str) -> str | None:
    """`os.path.relpath(absolute, root)` in `/` form when the normalised absolute path
    `absolute` is `root` or inside it (a string cut: no path parsing), else None."""
    if absolute == root:
        return "."
    prefix = root.rstrip(os.sep) + os.sep
    if not absolute.startswith(prefix):
        return None
    inner = absolute[len(prefix) :]
    return inner if os.sep == "/" else inner.replace(os.sep, "/")


_REAL_FOLDERS: dict[str, str] = {}  # a trial's parent (its job) -> real path, per process
_REAL_FOLDERS_MAX = 1024
_LOCATED_MAX = 4096


def _real_folder(folder: str) -> str:
    """`os.path.realpath(folder)`; for a folder that is no symlink, its parent's real path
    (kept: trials of one job share it) joined with its name — one `lstat`."""
    absolute = os.path.abspath(folder)
    parent, name = os.path.split(absolute)
    if name in ("", ".", ".."):
        return os.path.realpath(absolute)
    try:
        linked = stat.S_ISLNK(os.lstat(absolute).st_mode)
    except OSError:
        linked = True
    if linked:
        return os.path.realpath(absolute)
    real_parent = _REAL_FOLDERS.get(parent)
    if real_parent is None:
        if len(_REAL_FOLDERS) >= _REAL_FOLDERS_MAX:
            _REAL_FOLDERS.clear()
        real_parent = _REAL_FOLDERS[parent] = os.path.realpath(parent)
    return os.path.join(real_parent, name)


def wide_codec(data: bytes) -> str | None:
    for bom, codec in _WIDE_BOMS:
        if data.startswith(bom):
            return codec
    return None


def utf8_json(data: bytes, shown: str) -> bytes:
    """JSON bytes as UTF-8: a UTF-8 BOM dropped, UTF-16/32 (with a BOM) decoded."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :]
    codec = wide_codec(data)
    if codec is None:
        return data
    try:
        return data.decode(codec).encode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise ReaderError(
            f"{shown}: invalid {codec.upper()} text ({exc.reason} at byte {exc.start})"
        ) from None


def utf8_head(head: bytes) -> bytes:
    """The first bytes of a file as UTF-8 for sniffing (a cut-off last character is dropped)."""
    if head.startswith(codecs.BOM_UTF8):
        return head[len(codecs.BOM_UTF8) :]
    codec = wide_codec(head)
    if codec is None:
        return head
    unit = 4 if codec == "utf-32" else 2
    text = head[: len(head) - len(head) % unit].decode(codec, errors="ignore")
    return text.encode("utf-8", "surrogatepass")


def decode_text(data: bytes) -> str:
    """A text file's content: a BOM picks UTF-16/32, else UTF-8; bad bytes become U+FFFD."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace")
    codec = wide_codec(data)
    return data.decode(codec or "utf-8", errors="replace")


_UNBUDGETED = frozenset(["the input", "the job"])


class TrialFiles:
    """Confined access to the files under `root` (see the module docstring).

    Paths are ordinary paths (absolute, or relative to the working directory, as the reader
    built them from the root); `shown(path)` names them relative to the root in messages.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        limits: ReadLimits = DEFAULT_LIMITS,
        *,
        scope: str = "the trial",
        trusted: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        self.root = Path(root)
        self.real_root = _real_folder(os.fspath(root))
        self.limits = limits
        self.scope = scope
        self._abs_root = os.path.abspath(self.root)
        self._trusted = frozenset(os.path.abspath(p) for p in trusted)
        self._real_dirs: dict[str, str] = {}
        # path as given -> (real path, own mode when known: 0 absent, None ask `stat`)
        self._located: dict[str, tuple[str, int | None]] = {}
        self.warnings: list[str] = []
        self._listings: dict[tuple[str, int], tuple[str, ...]] = {}  # (folder, mtime) -> names
        self._memo: dict[Hashable, object] = {}
        # Every file read whole (`read_bytes`, `iter_lines` to its end): its path below the
        # root as given (never the real path) -> SHA-256 of its bytes, hashed while read
        # (a bundle's `provenance`; `head` probes and streamed corpora are not in it).
        self.read_files: dict[str, str] = {}
        # An input folder or a job is listed, not read as one trial: no budget there.
        self._budget = None if scope in _UNBUDGETED else _Budget(limits)

    @classmethod
    def for_input(
        cls, path: str | os.PathLike[str], limits: ReadLimits = DEFAULT_LIMITS
    ) -> TrialFiles:
        """A standalone input file: rooted at its own folder, the file itself trusted."""
        return cls(Path(path).parent, limits, scope="the input's folder", trusted=(path,))

    # --- names and warnings -------------------------------------------------------------

    def shown(self, path: str | os.PathLike[str]) -> str:
        """`path` relative to the root (as the reader built it, else by its real path)."""
        absolute = os.path.abspath(path)
        inner = _below(absolute, self._abs_root)
        if inner is not None:
            return inner
        inner = _below(self._real(absolute), self.real_root)
        return os.fspath(path) if inner is None else inner

    def take_warnings(self) -> list[str]:
        """The warnings gathered so far (each once), and forget them."""
        taken = list(dict.fromkeys(self.warnings))
        self.warnings.clear()
        return taken

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # --- resolution -----------------------------------------------------------------------

    def real_path(self, path: str) -> str:
        """`os.path.realpath(path)`, with the folders below the root resolved once per trial."""
        return self._real(os.path.abspath(path))

    def _real(self, absolute: str) -> str:
        """`os.path.realpath(absolute)`, resolving only below the (already resolved) root: a
        folder's real path is kept, so each entry costs one `lstat` unless it is a symlink."""
        return self._leaf(absolute)[0]

    def _leaf(self, absolute: str) -> tuple[str, int | None]:
        """(`_real(absolute)`, the entry's own `lstat` mode when it is not a symlink: 0 when
        it is absent, None when unknown — a symlink, or a path not below the root)."""
        if absolute == self._abs_root:
            return self.real_root, None
        parent, name = os.path.split(absolute)
        if name in ("", ".", "..") or not _inside(parent, self._abs_root):
            return os.path.realpath(absolute), None
        real_parent = self._real_dirs.get(parent)
        if real_parent is None:
            real_parent = self._real_dirs[parent] = self._real(parent)
        candidate = os.path.join(real_parent, name)
        try:
            mode = os.lstat(candidate).st_mode
        except OSError as exc:
            if exc.errno in _MISSING:  # a missing entry is where it would be
                return candidate, 0
            return os.path.realpath(candidate), None
        if stat.S_ISLNK(mode):
            return os.path.realpath(candidate), None
        return candidate, mode

    def _locate(self, path: str | os.PathLike[str]) -> tuple[str, int | None]:
        """(real path, own mode or 0 / None as `_leaf`) of a path inside the root (or
        trusted); `ReaderError` when it leaves the root. Kept per path: a trial is read
        once, and every open is `O_NOFOLLOW` and `fstat`ed, so a later swap is refused."""
        key = os.fspath(path)
        located = self._located.get(key)
        if located is not None:
            return located
        absolute = os.path.abspath(key)
        located = self._leaf(absolute)
        if absolute in self._trusted or _inside(located[0], self.real_root):
            if len(self._located) >= _LOCATED_MAX:  # a long walk of an input folder
                self._located.clear()
            self._located[key] = located
            return located
        shown = self.shown(path)
        if _inside(absolute, self._abs_root):
            raise ReaderError(f"refused {shown}: a symlink to a target outside {self.scope}")
        raise ReaderError(f"refused {shown}: outside {self.scope}")

    def resolve(self, path: str | os.PathLike[str]) -> str:
        """The real path of `path`; `ReaderError` when it leaves the root."""
        return self._locate(path)[0]

    def _refused(self, path: str | os.PathLike[str], mode: int) -> ReaderError:
        return ReaderError(f"refused {self.shown(path)}: {_kind(mode)}, not a regular file")

    def _over_cap(self, path: str | os.PathLike[str], size: int, grew: bool = False) -> ReaderError:
        cap = self.limits.max_file_bytes
        what = "it grew while being read and is" if grew else f"{_size_text(size)} is"
        return ReaderError(
            f"refused {self.shown(path)}: {what} over the --max-file-mb cap of {_cap_text(cap)}"
        )

    def _may_be_linked(self, path: str | os.PathLike[str]) -> bool:
        """A file with several hard links is read only when allowed or given by the user (a
        standalone input named on the command line is taken as it is)."""
        return self.limits.allow_hard_links or os.path.abspath(path) in self._trusted

    def _open(
        self, path: str | os.PathLike[str], *, capped: bool, buffering: int = -1
    ) -> tuple[IO[bytes], int]:
        """(binary file, size) of a confined regular file, opened without blocking."""
        fd, size = self._open_fd(path, capped=capped)
        try:
            return os.fdopen(fd, "rb", buffering=buffering), size
        except BaseException:
            os.close(fd)
            raise

    def _open_fd(self, path: str | os.PathLike[str], *, capped: bool) -> tuple[int, int]:
        """(descriptor, size) of a confined regular file, opened without blocking; the
        caller closes it."""
        real = self.resolve(path)
        try:
            st = os.stat(real)
        except OSError as exc:
            raise _os_error(exc, self.shown(path)) from None
        if not stat.S_ISREG(st.st_mode):
            raise self._refused(path, st.st_mode)
        if capped and st.st_size > self.limits.max_file_bytes:
            raise self._over_cap(path, st.st_size)
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ReaderError(f"refused {self.shown(path)}: it became a symlink") from None
            raise _os_error(exc, self.shown(path)) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise self._refused(path, st.st_mode)
            if st.st_nlink > 1 and not self._may_be_linked(path):
                raise ReaderError(
                    f"refused {self.shown(path)}: a file with {st.st_nlink} hard links (it may "
                    "be a file outside the trial; --allow-hard-links reads it)"
                )
            if capped and st.st_size > self.limits.max_file_bytes:
                raise self._over_cap(path, st.st_size)
            self._spend(real)
        except BaseException:
            os.close(fd)
            raise
        return fd, st.st_size

    def memo(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """What `compute()` returns, computed once per key for this `TrialFiles` (a reader's
        index of a folder, say: a trial is read once, so it cannot go stale)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return cast(_T, self._memo[key])

    def _note_read(self, path: str | os.PathLike[str], digest: str) -> None:
        self.read_files[os.path.join(self.root, self.shown(path))] = digest

    def _spend(self, path: str | os.PathLike[str] | None = None, size: int = 0) -> None:
        if self._budget is not None:
            self._budget.spend(None if path is None else os.fspath(path), size)

    # --- reading --------------------------------------------------------------------------

    def read_bytes(self, path: str | os.PathLike[str]) -> bytes:
        """The whole file (at most the cap); `FileMissing` / `ReaderError` otherwise."""
        # Read with the descriptor itself: a buffered file object costs more than the read
        # of a small file (a trial's result, config and reward).
        fd, size = self._open_fd(path, capped=True)
        limit = self.limits.max_file_bytes + 1
        try:
            chunks = [os.read(fd, min(size + 1, limit))]
            total = len(chunks[0])
            while total < limit and (chunk := os.read(fd, min(_CHUNK, limit - total))):
                chunks.append(chunk)
                total += len(chunk)
        finally:
            os.close(fd)
        if total >= limit:
            raise self._over_cap(path, total, grew=True)
        self._spend(size=total)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self._note_read(path, hashlib.sha256(data).hexdigest())
        return data

    def read_text(self, path: str | os.PathLike[str]) -> str:
        """The file as text (see `decode_text`)."""
        return decode_text(self.read_bytes(path))

    def optional_bytes(self, path: str | os.PathLike[str]) -> bytes | None:
        """The file's bytes; None when it is absent or refused (the reason becomes a warning)."""
        try:
            return self.read_bytes(path)
        except FileMissing:
            return None
        except ReaderError as exc:
            self._warn(str(exc))
            return None

    def head(self, path: str | os.PathLike[str], size: int) -> bytes:
        """At most the first `size` bytes (no file-size cap: only `size` bytes are read)."""
        handle, _ = self._open(path, capped=False)
        with handle:
            data = handle.read(size)
        self._spend(size=len(data))
        return data

    def open_stream(self, path: str | os.PathLike[str]) -> IO[bytes]:
        """A confined file opened for reading as it stands (no cap: a streamed corpus)."""
        return self._open(path, capped=False)[0]

    def iter_chunks(
        self,
        path: str | os.PathLike[str],
        chunk_bytes: int,
        span: tuple[int, int] | None = None,
    ) -> Iterator[bytes]:
        """The raw bytes of a confined file (or of its bytes `span` = (start, stop)),
        `chunk_bytes` at a time (no cap, no hash: a first look at a streamed corpus, read
        again by `iter_lines`)."""
        handle, _ = self._open(path, capped=False)
        with handle:
            if span is None:
                while chunk := handle.read(chunk_bytes):
                    yield chunk
                return
            start, stop = span
            handle.seek(start)
            left = stop - start
            while left > 0 and (chunk := handle.read(min(chunk_bytes, left))):
                left -= len(chunk)
                yield chunk

    def iter_lines(
        self, path: str | os.PathLike[str], *, per_line_cap: bool = False
    ) -> Iterator[tuple[int, bytes]]:
        """`(line number, raw line)` like `transforms.jsonl.iter_lines`, confined and capped.

        The file is capped as a whole, or with `per_line_cap` each line is (for streamed
        corpora). UTF-16/32 files (with a BOM) are decoded whole (then the file cap applies).
        """
        buffering = STREAM_BUFFER if per_line_cap else -1
        handle, _ = self._open(path, capped=not per_line_cap, buffering=buffering)
        cap = self.limits.max_file_bytes
        with handle:
            head = handle.read(4)
            if wide_codec(head) is not None:
                handle.close()
                data = utf8_json(self.read_bytes(path), self.shown(path))
                yield from _split_lines(data)
                return
            handle.seek(0)
            total = 0
            hashed = None if per_line_cap else _Hashed(handle)
            source = handle if hashed is None else cast(IO[bytes], hashed)
            try:
                for number, line in iter_handle_lines(source, max_line_bytes=cap):
                    if not per_line_cap:  # a streamed corpus is no trial: no budget
                        self._spend(size=len(line) + 1)
                        total += len(line) + 1
                        if total > cap + 1:
                            raise self._over_cap(path, total, grew=True)
                    yield number, line
                if hashed is not None:  # read to its end: the whole file was hashed
                    self._note_read(path, hashed.digest.hexdigest())
            except LineTooLong as exc:
                raise self._line_over_cap(path, exc) from None

    def iter_span_lines(
        self, path: str | os.PathLike[str], span: tuple[int, int, int]
    ) -> Iterator[tuple[int, bytes]]:
        """`iter_lines(path, per_line_cap=True)` of the bytes `start` to `stop` of a file (a
        span of a streamed corpus, `im_spans.py`), `span` = (start, stop, the number of the
        line at `start`); `start` is a line start, and the file is in UTF-8."""
        start, stop, first_line = span
        handle, _ = self._open(path, capped=False, buffering=STREAM_BUFFER)
        with handle:
            handle.seek(start)
            window = ByteWindow(handle, stop - start)
            cap = self.limits.max_file_bytes
            try:
                yield from iter_handle_lines(window, max_line_bytes=cap, first_number=first_line)
            except LineTooLong as exc:
                raise self._line_over_cap(path, exc) from None

    def _line_over_cap(self, path: str | os.PathLike[str], exc: LineTooLong) -> ReaderError:
        return ReaderError(
            f"refused {self.shown(path)}: line {exc.number} is over the --max-file-mb cap of "
            f"{_cap_text(self.limits.max_file_bytes)}"
        )

    # --- looking for optional files ---------------------------------------------------------

    def _mode(self, path: str | os.PathLike[str]) -> int | None:
        """The mode of a confined file or folder; None when absent or refused (warned)."""
        self._spend(path)
        try:
            real, mode = self._locate(path)
        except ReaderError as exc:
            self._warn(str(exc))
            return None
        if mode == 0:
            return None
        if mode is None:
            try:
                mode = os.stat(real).st_mode
            except OSError as exc:
                if exc.errno not in _MISSING:
                    self._warn(str(_os_error(exc, self.shown(path))))
                return None
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            self._warn(str(self._refused(path, mode)))
            return None
        return mode

    def is_file(self, path: str | os.PathLike[str]) -> bool:
        mode = self._mode(path)
        return mode is not None and stat.S_ISREG(mode)

    def is_dir(self, path: str | os.PathLike[str]) -> bool:
        mode = self._mode(path)
        return mode is not None and stat.S_ISDIR(mode)

    def list_dir(self, path: str | os.PathLike[str]) -> list[Path]:
        """The entries of a confined folder, sorted by name (unclassified: probe them)."""
        return [Path(path) / name for name in self.list_names(path)]

    def list_names(self, path: str | os.PathLike[str]) -> list[str]:
        """The names in a confined folder, sorted (`list_dir` without building paths). Each
        folder of a trial is listed once per `TrialFiles` (a trial is read once): a reader
        that looks for siblings of every file in a folder of n files costs n, not n²."""
        if not self.is_dir(path):
            return []
        real = self.resolve(path)
        try:
            key = (real, os.stat(real).st_mtime_ns)  # a folder that changed is listed anew
            names = self._listings.get(key)
            if names is None:
                names = tuple(sorted(os.listdir(real)))
                if self._budget is not None:  # a trial's folders (an input's: walked once)
                    self._listings[key] = names
        except OSError as exc:
            self._warn(str(_os_error(exc, self.shown(path))))
            return []
        return list(names)

    def glob(self, path: str | os.PathLike[str], pattern: str, *, dirs: bool = False) -> list[Path]:
        """Confined regular files (or folders, with `dirs`) in `path` whose name matches."""
        probe = self.is_dir if dirs else self.is_file
        return [
            child
            for child in self.list_dir(path)
            if fnmatch.fnmatchcase(child.name, pattern) and probe(child)
        ]

    def rglob(self, path: str | os.PathLike[str], pattern: str) -> list[Path]:
        """Confined regular files at any depth below `path` whose name matches, sorted.

        Like `Path.rglob`, symlinked folders are not descended into (so a listing never
        leaves the root, nor loops).
        """
        found: list[Path] = []
        pending = [Path(path)]
        while pending:
            for child in self.list_dir(pending.pop()):
                try:
                    own = os.lstat(child).st_mode
                except OSError:
                    continue
                if stat.S_ISDIR(own):
                    pending.append(child)
                elif fnmatch.fnmatchcase(child.name, pattern) and self.is_file(child):
                    found.append(child)
        return sorted(found)


class _Hashed:
    """A binary file read by lines whose bytes are hashed (SHA-256) as they are read."""

    __slots__ = ("digest", "handle")

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def readline(self, size: int = -1) -> bytes:
        line = self.handle.readline(size)
        self.digest.update(line)
        return line

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


def _os_error(exc: OSError, shown: str) -> ReaderError:
    if exc.errno in _MISSING:
        return FileMissing(f"{shown}: no such file")
    return ReaderError(f"{shown}: cannot read ({exc.strerror or exc})")


def _split_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Lines as `iter_handle_lines` gives them, from bytes already in memory."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        yield number, line.rstrip(b"\r\n")
