"""The output folder: writable check, one run at a time, publish manifest-last, verify.

Real files under tmp_path throughout; the lock is contended by real second processes; the
read-only and full folders are real tmpfs mounts where the sandbox permits mounting (in a
private mount namespace), and are always also simulated by injecting the OSError the kernel
would return.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest

from pipelines.output_folder import (
    CHUNK,
    LOCK_NAME,
    OutputError,
    OutputLock,
    check_writable,
    file_digest,
    new_run_id,
    publish_job,
    publish_run_files,
    remove_staging,
    staging_root,
    verify_outputs,
)

REPO_ROOT = Path(__file__).resolve().parents[1]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stage(staging: str, folder: str, files: dict[str, bytes]) -> None:
    target = Path(staging) / folder if folder else Path(staging)
    target.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (target / name).write_bytes(data)


def read_manifest(folder: Path) -> dict[str, Any]:
    value = orjson.loads((folder / "manifest.json").read_bytes())
    assert isinstance(value, dict)
    return value


def one_line(exc: BaseException) -> str:
    message = str(exc)
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------------------------
# The lock


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pipelines.output_folder import OutputLock
    lock = OutputLock(sys.argv[1])
    lock.acquire()
    print("held", flush=True)
    if sys.argv[2] == "wait":
        sys.stdin.readline()   # until the test says so (or kills us)
    lock.release()
    print("released", flush=True)
    """
)

BUSY = re.compile(
    r"output (?P<dir>.+) is in use by another trajcurate run "
    r"\(pid (?P<pid>\d+) on (?P<host>\S+) since (?P<since>\S+)\)"
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Callable[[str], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(output: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, output, "wait"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        started.append(process)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "held"
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def test_lock_refuses_a_second_run_in_another_process(
    tmp_path: Path, holder: Callable[[str], subprocess.Popen[str]]
) -> None:
    output = str(tmp_path / "out")
    process = holder(output)
    with pytest.raises(OutputError) as caught:
        OutputLock(output).acquire()
    match = BUSY.fullmatch(one_line(caught.value))
    assert match, caught.value
    assert match["dir"] == output
    assert int(match["pid"]) == process.pid
    assert match["host"] == socket.gethostname()
    content = orjson.loads((tmp_path / "out" / LOCK_NAME).read_bytes())
    assert content["pid"] == process.pid
    assert content["started"] == match["since"]

    # A second process is refused the same way (exit with the one-line message).
    second = subprocess.run(
        [sys.executable, "-c", HOLDER, output, "go"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    assert second.returncode != 0
    assert BUSY.search(second.stderr)


def test_lock_is_free_after_the_holder_exits(
    tmp_path: Path, holder: Callable[[str], subprocess.Popen[str]]
) -> None:
    output = str(tmp_path / "out")
    process = holder(output)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("done\n")
    process.stdin.flush()
    assert process.stdout.readline().strip() == "released"
    assert process.wait(timeout=30) == 0
    assert not (tmp_path / "out" / LOCK_NAME).exists()  # removed on a clean exit
    with OutputLock(output) as lock:
        assert lock.held
    assert not (tmp_path / "out" / LOCK_NAME).exists()


def test_lock_is_free_after_the_holder_is_killed(
    tmp_path: Path, holder: Callable[[str], subprocess.Popen[str]]
) -> None:
    output = str(tmp_path / "out")
    process = holder(output)
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
    assert (tmp_path / "out" / LOCK_NAME).exists()  # left behind, but no longer locked
    with OutputLock(output):
        content = orjson.loads((tmp_path / "out" / LOCK_NAME).read_bytes())
        assert content["pid"] == os.getpid()
        assert content["host"] == socket.gethostname()
    assert not (tmp_path / "out" / LOCK_NAME).exists()


def test_lock_in_one_process_refuses_a_second_lock_object(tmp_path: Path) -> None:
    output = str(tmp_path / "out")
    with OutputLock(output), pytest.raises(OutputError, match="in use by another trajcurate run"):
        OutputLock(output).acquire()
    with OutputLock(output):  # and free again
        pass


def test_lock_survives_a_holder_that_removes_the_file_while_we_wait(tmp_path: Path) -> None:
    """A lock taken on an unlinked lock file must not count: the next taker opens a new one."""
    output = str(tmp_path / "out")
    first = OutputLock(output)
    first.acquire()
    first.release()  # removes the file
    with OutputLock(output) as second:
        assert second.held
        with pytest.raises(OutputError):
            OutputLock(output).acquire()


def test_lock_file_is_not_inherited_by_child_processes(tmp_path: Path) -> None:
    output = str(tmp_path / "out")
    with OutputLock(output):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with OutputLock(output):  # the child does not keep the lock alive
            pass
    finally:
        child.kill()
        child.wait()


# --------------------------------------------------------------------------------------------
# check_writable, simulated (everywhere)


def test_check_writable_creates_the_folder_and_leaves_nothing(tmp_path: Path) -> None:
    output = tmp_path / "a" / "b"
    check_writable(str(output))
    assert output.is_dir()
    assert list(output.iterdir()) == []


def test_check_writable_refuses_a_file(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"x")
    with pytest.raises(OutputError, match=r"is not a folder$"):
        check_writable(str(path))


def _fail_probe(monkeypatch: pytest.MonkeyPatch, where: str, code: int) -> list[str]:
    """Make os.open / os.write / os.fsync fail with `code` for the probe file only."""
    probes: list[str] = []
    fds: set[int] = set()
    real_open, real_write, real_fsync = os.open, os.write, os.fsync

    def fake_open(path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        if ".trajcurate-probe-" in str(path):
            probes.append(str(path))
            if where == "open":
                raise OSError(code, os.strerror(code), str(path))
            fd = real_open(path, flags, mode, **kwargs)
            fds.add(fd)
            return fd
        return real_open(path, flags, mode, **kwargs)

    def fake_write(fd: int, data: Any) -> int:
        if fd in fds and where == "write":
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    def fake_fsync(fd: Any) -> None:
        if fd in fds and where == "fsync":
            raise OSError(code, os.strerror(code))
        real_fsync(fd)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "write", fake_write)
    monkeypatch.setattr(os, "fsync", fake_fsync)
    return probes


@pytest.mark.parametrize(
    ("where", "code", "expected"),
    [
        ("open", errno.EROFS, r"output {dir} is read-only$"),
        ("open", errno.EACCES, r"output {dir} is read-only \(permission denied\)$"),
        ("open", errno.EPERM, r"output {dir} is read-only \(permission denied\)$"),
        ("write", errno.ENOSPC, r"no space left in {dir} \([\d,]+\.\d MiB free\)$"),
        ("fsync", errno.ENOSPC, r"no space left in {dir} \([\d,]+\.\d MiB free\)$"),
        ("write", errno.EDQUOT, r"no space left in {dir} \(quota exceeded\)$"),
        ("write", errno.EIO, r"cannot write {dir}: Input/output error$"),
    ],
)
def test_check_writable_simulated_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, code: int, expected: str
) -> None:
    output = tmp_path / "out"
    probes = _fail_probe(monkeypatch, where, code)
    with pytest.raises(OutputError) as caught:
        check_writable(str(output))
    monkeypatch.undo()
    assert re.fullmatch(expected.format(dir=re.escape(str(output))), one_line(caught.value))
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert probes, "the probe was never opened"
    assert not any(Path(p).exists() for p in probes)  # no probe left behind
    assert list(output.iterdir()) == []


def test_check_writable_read_only_parent_simulated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder cannot even be created (a read-only parent)."""
    real_mkdir = os.mkdir

    def fake_mkdir(path: Any, mode: int = 0o777, **kwargs: Any) -> None:
        if str(path).startswith(str(tmp_path / "ro")):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        real_mkdir(path, mode, **kwargs)

    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    with pytest.raises(OutputError, match=r"is read-only$"):
        check_writable(str(tmp_path / "ro" / "out"))


# --------------------------------------------------------------------------------------------
# check_writable, for real: tmpfs mounts in a private mount namespace


CHECK = textwrap.dedent(
    """
    import sys
    from pipelines.output_folder import OutputError, check_writable
    try:
        check_writable(sys.argv[1])
        print("OK")
    except OutputError as exc:
        print("ERROR", exc)
    """
)

# Each way to get a mount: a private mount namespace as root, a user + mount namespace
# (unprivileged), and last the plain mount (root, unmounted again by the script).
MOUNT_WAYS: list[list[str]] = [
    ["unshare", "--mount", "--propagation", "private"],
    ["unshare", "--map-root-user", "--mount"],
    [],
]
_mount_way: list[list[str] | None] = []


def _can_mount(tmp_path: Path) -> list[str] | None:
    """The first way to mount a tmpfs that works here, or None."""
    if _mount_way:
        return _mount_way[0]
    point = tmp_path / "mount-probe"
    point.mkdir()
    found = None
    script = (
        f'mount -t tmpfs -o size=64k tmpfs "{point}" && touch "{point}/x" && '
        f'mount -o remount,ro "{point}" && ! touch "{point}/y" 2>/dev/null; '
        f'status=$?; umount "{point}" 2>/dev/null; exit $status'
    )
    for way in MOUNT_WAYS:
        if not way and os.geteuid() != 0:
            continue
        if way and shutil.which(way[0]) is None:
            continue
        done = subprocess.run([*way, "sh", "-c", script], capture_output=True, timeout=60)
        if done.returncode == 0 and not os.path.exists(point / "x"):
            found = way
            break
    _mount_way.append(found)
    return found


@pytest.fixture
def mount_way(tmp_path: Path) -> list[str]:
    way = _can_mount(tmp_path)
    if way is None:
        pytest.skip(
            "cannot mount a tmpfs here (not root, no user namespaces); the read-only and "
            "full folders are still tested with injected EROFS / ENOSPC"
        )
    return way


def _in_tmpfs(way: list[str], point: Path, size: str, then: str) -> list[str]:
    """Mount a tmpfs of `size` on `point`, run the shell `then`, unmount; stdout lines."""
    point.mkdir(exist_ok=True)
    script = f'set -e; mount -t tmpfs -o size={size} tmpfs "$P"; trap \'umount "$P"\' EXIT; {then}'
    done = subprocess.run(
        [*way, "sh", "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "P": str(point), "PY": sys.executable, "CHECK": CHECK},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_check_writable_real_read_only_tmpfs(tmp_path: Path, mount_way: list[str]) -> None:
    point = tmp_path / "ro"
    lines = _in_tmpfs(
        mount_way,
        point,
        "4m",
        'mkdir "$P/out"; "$PY" -c "$CHECK" "$P/out"; '
        'mount -o remount,ro "$P"; '
        '"$PY" -c "$CHECK" "$P/out"; "$PY" -c "$CHECK" "$P/new"',
    )
    assert lines == [
        "OK",
        f"ERROR output {point}/out is read-only",
        f"ERROR output {point}/new is read-only",
    ]


def test_check_writable_real_full_tmpfs(tmp_path: Path, mount_way: list[str]) -> None:
    point = tmp_path / "full"
    lines = _in_tmpfs(
        mount_way,
        point,
        "2m",
        'mkdir "$P/out"; "$PY" -c "$CHECK" "$P/out"; '
        'head -c 1572864 /dev/zero > "$P/filler"; '
        '"$PY" -c "$CHECK" "$P/out"; ls -A "$P/out"; echo end',
    )
    assert lines[0] == "OK"
    assert re.fullmatch(
        rf"ERROR no space left in {re.escape(str(point))}/out \(0\.5 MiB free\)", lines[1]
    )
    assert lines[2:] == ["end"]  # no probe left behind


# --------------------------------------------------------------------------------------------
# Publishing


def manifest_for(job: str, written: int) -> dict[str, Any]:
    return {"job": job, "accounting": {"written": written}}


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def test_publish_job_moves_files_and_writes_the_manifest_last(out: Path) -> None:
    staging = staging_root(str(out), "run1")
    files = {"im.jsonl": b'{"a":1}\n', "lf.json": b"[]\n", "rejects.jsonl": b""}
    stage(staging, "job", {**files, ".counts.json": b"{}", "x.partial": b"half"})
    given = manifest_for("job", 1)
    written = publish_job(str(out), staging, "job", given)
    assert "files" not in given  # the caller's dict is not modified
    assert written == {
        **given,
        "files": {n: {"bytes": len(d), "sha256": sha(d)} for n, d in files.items()},
    }
    assert read_manifest(out / "job") == written
    assert sorted(p.name for p in (out / "job").iterdir()) == sorted([*files, "manifest.json"])
    assert not (Path(staging) / "job").exists()
    assert verify_outputs(str(out / "job")) is None


def test_publish_over_more_shards_removes_stale_outputs_keeps_user_files(out: Path) -> None:
    job = out / "job"
    old = {
        **{f"im-{i:05d}-of-00004.jsonl": b"old im\n" for i in range(4)},
        **{f"lf-{i:05d}-of-00004.json": b"[]\n" for i in range(4)},
        "dataset_info.json": b"{}",
        "lf.stats.json": b"{}",
        "rejects.jsonl": b"old\n",
        "dead_letter.jsonl": b"old\n",
        "scores.jsonl": b"old\n",
        "im.jsonl.partial": b"half",
    }
    stage(str(out), "job", old)
    (job / "manifest.json").write_bytes(orjson.dumps({"accounting": {"written": 1020}}))
    (job / ".parts" / "00001").mkdir(parents=True)
    (job / ".parts" / "00001" / "x.part").write_bytes(b"part")
    user = {"NOTES.md": b"mine", "im-final.jsonl": b"mine too", "im-0-of-4.txt": b"mine"}
    stage(str(out), "job", user)
    (job / "analysis").mkdir()
    (job / "analysis" / "plot.png").write_bytes(b"png")

    staging = staging_root(str(out), new_run_id())
    new = {
        "im.jsonl": b"new\n",
        "lf.json": b"[]\n",
        "dataset_info.json": b'{"job": {}}',
        "lf.stats.json": b"{}",
        "rejects.jsonl": b"",
        "dead_letter.jsonl": b"",
    }
    stage(staging, "job", new)
    written = publish_job(str(out), staging, "job", manifest_for("job", 192))

    expected = sorted([*new, "manifest.json", *user, "analysis"])
    assert sorted(p.name for p in job.iterdir()) == expected
    assert (job / "analysis" / "plot.png").read_bytes() == b"png"
    for name, data in user.items():
        assert (job / name).read_bytes() == data
    assert sorted(written["files"]) == sorted(new)
    assert read_manifest(job)["accounting"]["written"] == 192
    assert verify_outputs(str(job)) is None


def test_publish_run_files_keeps_job_folders_and_user_files(out: Path) -> None:
    stage(str(out), "", {"lf.stats.json": b"old", "llm_dry_run.json": b"old", "README": b"u"})
    stage(str(out), "other-job", {"im.jsonl": b"x"})
    (out / "manifest.json").write_bytes(b"{}")
    staging = staging_root(str(out), "r")
    stage(staging, "job", {"im.jsonl": b"j\n"})
    stage(staging, "", {"lf.stats.json": b'{"n": 1}'})
    publish_job(str(out), staging, "job", manifest_for("job", 1))
    run = publish_run_files(str(out), staging, {"jobs": ["job"]})
    assert run["files"] == {"lf.stats.json": {"bytes": 8, "sha256": sha(b'{"n": 1}')}}
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        ["README", "job", "other-job", "lf.stats.json", "manifest.json", ".staging-r"]
    )
    assert verify_outputs(str(out)) is None
    assert verify_outputs(str(out / "job")) is None
    remove_staging(str(out))
    assert not Path(staging).exists()


def test_publish_refuses_a_folder_that_is_not_one_component(out: Path) -> None:
    for folder in ("", ".", "..", "../x", "a/b", "a\\b"):
        with pytest.raises(ValueError):
            publish_job(str(out), str(out / ".staging-x"), folder, {})


class Crash(BaseException):
    """A kill in the middle of publishing (not an OSError: nothing may catch it)."""


def _old_job(out: Path) -> dict[str, Any]:
    staging = staging_root(str(out), "old")
    stage(
        staging, "job", {"im.jsonl": b"old\n" * 1020, "lf.json": b"[old]\n", "scores.jsonl": b"s"}
    )
    return publish_job(str(out), staging, "job", manifest_for("job", 1020))


def _stage_new(out: Path) -> str:
    staging = staging_root(str(out), "new")
    stage(
        staging, "job", {"im.jsonl": b"new\n" * 192, "lf.json": b"[new]\n", "rejects.jsonl": b"r\n"}
    )
    return staging


def _count_calls(monkeypatch: pytest.MonkeyPatch, name: str, crash_at: int) -> list[int]:
    """Wrap os.<name>: count the calls and raise Crash at call number `crash_at` (1-based)."""
    real = getattr(os, name)
    calls = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == crash_at:
            raise Crash(f"killed at {name} #{crash_at}")
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, wrapper)
    return calls


@pytest.mark.parametrize("operation", ["replace", "remove", "fsync"])
def test_a_crash_at_any_step_never_leaves_a_manifest_over_other_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    # How many calls of os.<operation> one publish makes.
    out = tmp_path / "count"
    out.mkdir()
    _old_job(out)
    staging = _stage_new(out)
    with monkeypatch.context() as patch:
        calls = _count_calls(patch, operation, crash_at=0)
        publish_job(str(out), staging, "job", manifest_for("job", 192))
    total = calls[0]
    assert total >= 2

    for crash_at in range(1, total + 1):
        out = tmp_path / f"{operation}-{crash_at}"
        out.mkdir()
        old = _old_job(out)
        staging = _stage_new(out)
        with monkeypatch.context() as patch, pytest.raises(Crash):
            _count_calls(patch, operation, crash_at)
            publish_job(str(out), staging, "job", manifest_for("job", 192))
        job = out / "job"
        reason = verify_outputs(str(job))
        if (job / "manifest.json").exists():
            # Either nothing moved yet (the old manifest over the old files) or everything
            # did (the new manifest is in place): in both the manifest matches the files.
            assert reason is None
            assert read_manifest(job)["accounting"]["written"] in (1020, 192)
            if read_manifest(job)["accounting"]["written"] == 1020:
                assert read_manifest(job) == old
        else:
            assert reason == "no manifest"
        # The next run cleans up and publishes normally.
        remove_staging(str(out))
        assert not [
            p
            for p in out.rglob("*")
            if p.name.startswith(".staging-") or p.name.endswith(".partial")
        ]
        staging = _stage_new(out)
        publish_job(str(out), staging, "job", manifest_for("job", 192))
        assert verify_outputs(str(job)) is None
        assert read_manifest(job)["accounting"]["written"] == 192
        assert not (job / "scores.jsonl").exists()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (errno.ENOSPC, r"no space left in {job} \([\d,.]+ MiB free\)"),
        (errno.EIO, r"cannot publish to {job}: Input/output error"),
        (errno.EROFS, r"output {job} is read-only"),
    ],
)
def test_publish_error_is_one_line_and_leaves_no_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, expected: str
) -> None:
    out = tmp_path / "write-out"
    out.mkdir()
    _old_job(out)
    staging = _stage_new(out)
    real_replace = os.replace

    def failing(source: Any, target: Any, **kwargs: Any) -> None:
        if str(target).endswith("lf.json"):
            raise OSError(code, os.strerror(code))
        real_replace(source, target, **kwargs)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OutputError) as caught:
        publish_job(str(out), staging, "job", manifest_for("job", 192))
    pattern = expected.format(job=re.escape(str(out / "job")))
    assert re.fullmatch(pattern, one_line(caught.value)), caught.value
    assert verify_outputs(str(out / "job")) == "no manifest"


# --------------------------------------------------------------------------------------------
# verify_outputs


@pytest.fixture
def published(out: Path) -> Path:
    staging = staging_root(str(out), "v")
    stage(
        staging,
        "job",
        {"im.jsonl": b"x" * 20480, "lf.json": b"[]\n", "rejects.jsonl": b""},
    )
    publish_job(str(out), staging, "job", manifest_for("job", 10))
    assert verify_outputs(str(out / "job")) is None
    return out / "job"


def test_verify_catches_a_truncated_file(published: Path) -> None:
    with open(published / "im.jsonl", "r+b") as handle:
        handle.truncate(5120)
    assert verify_outputs(str(published)) == "im.jsonl: 5,120 bytes, manifest says 20,480"


def test_verify_catches_a_deleted_file(published: Path) -> None:
    (published / "lf.json").unlink()
    assert verify_outputs(str(published)) == "lf.json missing"


def test_verify_catches_a_modified_file_of_the_same_size(published: Path) -> None:
    data = bytearray((published / "im.jsonl").read_bytes())
    data[10000] = ord("y")
    (published / "im.jsonl").write_bytes(bytes(data))
    assert verify_outputs(str(published)) == "im.jsonl: content differs from the manifest (sha256)"


def test_verify_catches_a_missing_or_broken_manifest(published: Path) -> None:
    manifest = published / "manifest.json"
    data = read_manifest(published)
    manifest.unlink()
    assert verify_outputs(str(published)) == "no manifest"
    assert verify_outputs(str(published.parent / "never-written")) == "no manifest"
    manifest.write_bytes(b"{not json")
    assert verify_outputs(str(published)) == "manifest.json is not valid JSON"
    manifest.write_bytes(orjson.dumps({k: v for k, v in data.items() if k != "files"}))
    assert verify_outputs(str(published)).startswith("the manifest lists no files")  # type: ignore[union-attr]
    for name in ("../../etc/passwd", "/etc/passwd"):
        hostile = {**data, "files": {name: {"bytes": 1, "sha256": "0" * 64}}}
        manifest.write_bytes(orjson.dumps(hostile))
        assert verify_outputs(str(published)) == f"the manifest entry for {name!r} is malformed"


def test_verify_accepts_a_job_with_no_files(out: Path) -> None:
    staging = staging_root(str(out), "e")
    (Path(staging) / "job").mkdir(parents=True)
    publish_job(str(out), staging, "job", {})
    assert read_manifest(out / "job")["files"] == {}
    assert verify_outputs(str(out / "job")) is None


def test_file_digest_streams_large_files(tmp_path: Path) -> None:
    data = os.urandom(3 * CHUNK + 17)
    path = tmp_path / "big"
    path.write_bytes(data)
    assert file_digest(str(path)) == {"bytes": len(data), "sha256": sha(data)}
    assert file_digest(str(path), sync=True) == {"bytes": len(data), "sha256": sha(data)}


# --------------------------------------------------------------------------------------------
# Staging


def test_staging_root_and_run_ids(out: Path) -> None:
    assert staging_root(str(out), "abc") == str(out / ".staging-abc")
    run_id = new_run_id()
    assert staging_root(str(out), run_id).endswith("/.staging-" + run_id)
    assert new_run_id() != run_id
    assert staging_root("gs://b/out/", "x") == "gs://b/out/.staging-x"
    for bad in ("", "..", "a/b", "../x", "a b", "x" * 65):
        with pytest.raises(ValueError):
            staging_root(str(out), bad)


def test_remove_staging_removes_only_leftovers(out: Path) -> None:
    stage(str(out / ".staging-a"), "job", {"im.jsonl": b"x"})
    (out / ".staging-b").mkdir()
    stage(str(out), "", {"lf.stats.json.partial": b"half", "README": b"mine", "staging-x": b"u"})
    stage(str(out), "job", {"im.jsonl.partial": b"h", "im.jsonl": b"keep", "notes": b"u"})
    (out / "job" / "sub").mkdir()
    (out / "job" / "sub" / "deep.partial").write_bytes(b"not ours to judge")
    (out / "userdir.partial").mkdir()
    (out / LOCK_NAME).write_bytes(b"{}")
    remove_staging(str(out))
    remaining = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert remaining == sorted(
        [
            LOCK_NAME,
            "README",
            "staging-x",
            "job",
            "job/im.jsonl",
            "job/notes",
            "job/sub",
            "job/sub/deep.partial",
            "userdir.partial",
        ]
    )
    remove_staging(str(out / "missing"))  # nothing there: nothing to do


# --------------------------------------------------------------------------------------------
# Remote paths: the same functions through Beam's FileSystems (an in-memory filesystem)


def _memory_filesystem() -> type:
    from apache_beam.io.filesystem import BeamIOError, CompressionTypes, FileMetadata, FileSystem

    class _Writer(io.BytesIO):
        def __init__(self, store: dict[str, bytes], path: str) -> None:
            super().__init__()
            self._store, self._path = store, path

        def close(self) -> None:
            if not self.closed:
                self._store[self._path] = self.getvalue()
            super().close()

    class MemoryFileSystem(FileSystem):
        files: ClassVar[dict[str, bytes]] = {}

        @classmethod
        def scheme(cls) -> str:
            return "tcmem"

        def join(self, basepath: str, *paths: str) -> str:
            return "/".join([basepath.rstrip("/"), *paths])

        def split(self, path: str) -> tuple[str, str]:
            head, _, tail = path.rpartition("/")
            return head, tail

        def mkdirs(self, path: str) -> None:
            pass

        def has_dirs(self) -> bool:
            return False

        def _list(self, prefix: str) -> Iterator[Any]:
            for path, data in sorted(self.files.items()):
                if path.startswith(prefix):
                    yield FileMetadata(path, len(data))

        def create(
            self, path: str, mime_type: str = "", compression_type: Any = CompressionTypes.AUTO
        ) -> Any:
            return _Writer(self.files, path)

        def open(
            self, path: str, mime_type: str = "", compression_type: Any = CompressionTypes.AUTO
        ) -> Any:
            if path not in self.files:
                raise BeamIOError(  # type: ignore[no-untyped-call]
                    "open failed", {path: FileNotFoundError(path)}
                )
            return io.BytesIO(self.files[path])

        def copy(self, sources: list[str], targets: list[str]) -> None:
            for source, target in zip(sources, targets, strict=True):
                self.files[target] = self.files[source]

        def rename(self, sources: list[str], targets: list[str]) -> None:
            for source, target in zip(sources, targets, strict=True):
                self.files[target] = self.files.pop(source)

        def exists(self, path: str) -> bool:
            return path in self.files

        def size(self, path: str) -> int:
            return len(self.files[path])

        def last_updated(self, path: str) -> float:
            return 0.0

        def checksum(self, path: str) -> str:
            return sha(self.files[path])

        def metadata(self, path: str) -> Any:
            if path not in self.files:
                raise BeamIOError(  # type: ignore[no-untyped-call]
                    "metadata failed", {path: FileNotFoundError(path)}
                )
            return FileMetadata(path, len(self.files[path]))

        def delete(self, paths: list[str]) -> None:
            for path in paths:
                self.files.pop(path, None)

    return MemoryFileSystem


_MEMORY: list[type] = []


@pytest.fixture
def memory() -> Iterator[dict[str, bytes]]:
    if not _MEMORY:
        _MEMORY.append(_memory_filesystem())
    files: dict[str, bytes] = _MEMORY[0].files  # type: ignore[attr-defined]
    files.clear()
    yield files
    files.clear()


def test_remote_publish_verify_and_cleanup(memory: dict[str, bytes]) -> None:
    out = "tcmem://bucket/out"
    check_writable(out)
    assert memory == {}
    memory[f"{out}/job/im-00000-of-00002.jsonl"] = b"old"
    memory[f"{out}/job/im-00001-of-00002.jsonl"] = b"old"
    memory[f"{out}/job/manifest.json"] = b"{}"
    memory[f"{out}/job/NOTES"] = b"mine"
    memory[f"{out}/job/.parts/00000/a.part"] = b"p"
    staging = staging_root(out, "r1")
    memory[f"{staging}/job/im.jsonl"] = b"new\n"
    memory[f"{staging}/job/lf.json"] = b"[]\n"
    memory[f"{staging}/job/.counts.json"] = b"{}"
    memory[f"{staging}/lf.stats.json"] = b"{}"
    with OutputLock(out) as lock:
        assert f"{out}/{LOCK_NAME}" in memory
        with pytest.raises(OutputError, match=r"in use by another trajcurate run .*delete"):
            OutputLock(out).acquire()
        written = publish_job(out, staging, "job", manifest_for("job", 1))
        publish_run_files(out, staging, {"jobs": ["job"]})
        remove_staging(out)
        assert lock.held
    assert sorted(written["files"]) == ["im.jsonl", "lf.json"]
    assert sorted(memory) == [
        f"{out}/job/NOTES",
        f"{out}/job/im.jsonl",
        f"{out}/job/lf.json",
        f"{out}/job/manifest.json",
        f"{out}/lf.stats.json",
        f"{out}/manifest.json",
    ]
    assert verify_outputs(f"{out}/job") is None
    assert verify_outputs(out) is None
    memory[f"{out}/job/im.jsonl"] = b"new"
    assert verify_outputs(f"{out}/job") == "im.jsonl: 3 bytes, manifest says 4"
    del memory[f"{out}/job/lf.json"]
    memory[f"{out}/job/im.jsonl"] = b"new\n"
    assert verify_outputs(f"{out}/job") == "lf.json missing"
    assert verify_outputs(f"{out}/nothing") == "no manifest"
