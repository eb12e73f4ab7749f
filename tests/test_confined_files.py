"""Trial folders are untrusted: readers open files only through `confined.TrialFiles`.

Real files, symlinks and FIFOs under tmp_path (no mocks). Whatever a trial links to outside
itself never reaches a bundle, a warning names each refused file, nothing blocks on a FIFO or
reads /dev/zero, and wrong-typed content is refused with where it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from reader_checks import (
    assert_valid_records,
    good_trial,
    no_hang,
    result_doc,
    trajectory_doc,
    write_trial,
)

from transforms.readers import claude_code, harbor, im_jsonl, opencode, swe_agent
from transforms.readers.atif import read as read_atif
from transforms.readers.bundle import Bundle, ReaderError
from transforms.readers.confined import FileMissing, ReadLimits, TrialFiles
from transforms.readers.detect import detect_format
from transforms.readers.harbor_trial import read_trial

MARKER = "OUTSIDE-MARKER-7f3a"
PASSWD_FIRST_LINE = (
    Path("/etc/passwd").read_text().splitlines()[0] if os.path.exists("/etc/passwd") else ""
)


@pytest.fixture(autouse=True)
def _guard() -> Iterator[None]:
    with no_hang(30):
        yield


def _dump(bundle: Bundle) -> str:
    return orjson.dumps(bundle).decode()


def _only(job: Path) -> Bundle:
    (bundle,) = harbor.read(job)
    return bundle


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Files beside the job (outside every trial), each carrying MARKER."""
    folder = tmp_path / "outside"
    (folder / "agent").mkdir(parents=True)
    trajectory = trajectory_doc(f"{MARKER} answer", f"{MARKER} task")
    (folder / "agent" / "trajectory.json").write_bytes(orjson.dumps(trajectory))
    (folder / "trajectory.json").write_bytes(orjson.dumps(trajectory))
    result = result_doc(f"{MARKER}-trial", {"reward": 1.0}, task_name=MARKER)
    (folder / "result.json").write_bytes(orjson.dumps(result))
    (folder / "reward.txt").write_text("1.0")
    session = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"content": MARKER}},
        {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s",
            "message": {"id": "m1", "content": [{"type": "text", "text": MARKER}]},
        },
    ]
    (folder / "session.jsonl").write_bytes(b"\n".join(orjson.dumps(e) for e in session))
    return folder


# --- TrialFiles ---------------------------------------------------------------------------------


def test_a_symlink_inside_the_root_is_read_one_leaving_it_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    root = tmp_path / "trial"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "real.txt").write_text("inside")
    (root / "in.txt").symlink_to(root / "sub" / "real.txt")
    (root / "out.txt").symlink_to(outside / "reward.txt")
    (root / "rel.txt").symlink_to("../outside/reward.txt")
    files = TrialFiles(root)
    assert files.read_bytes(root / "in.txt") == b"inside"
    for name in ("out.txt", "rel.txt"):
        with pytest.raises(ReaderError) as refused:
            files.read_bytes(root / name)
        assert str(refused.value) == f"refused {name}: a symlink to a target outside the trial"
        assert not files.is_file(root / name)
    assert files.take_warnings() == [
        "refused out.txt: a symlink to a target outside the trial",
        "refused rel.txt: a symlink to a target outside the trial",
    ]
    with pytest.raises(FileMissing, match=r"^nope\.txt: no such file$"):
        files.read_bytes(root / "nope.txt")
    assert not files.is_file(root / "nope.txt") and files.warnings == []  # absent: no warning


def test_special_files_are_never_opened(tmp_path: Path) -> None:
    root = tmp_path / "trial"
    root.mkdir()
    os.mkfifo(root / "fifo")
    (root / "zero").symlink_to("/dev/zero")
    (root / "dir").mkdir()
    files = TrialFiles(root)
    with pytest.raises(ReaderError, match=r"^refused fifo: a FIFO, not a regular file$"):
        files.read_bytes(root / "fifo")
    with pytest.raises(ReaderError, match=r"^refused fifo: a FIFO, not a regular file$"):
        files.head(root / "fifo", 10)
    with pytest.raises(ReaderError, match=r"^refused fifo: a FIFO"):
        list(files.iter_lines(root / "fifo"))
    with pytest.raises(ReaderError, match=r"^refused zero: a symlink to a target outside"):
        files.read_bytes(root / "zero")
    with pytest.raises(ReaderError, match=r"^refused dir: a directory, not a regular file$"):
        files.read_bytes(root / "dir")
    assert not files.is_file(root / "fifo") and not files.is_dir(root / "fifo")
    assert files.take_warnings() == ["refused fifo: a FIFO, not a regular file"]
    # the input a user names is trusted as given, but still must be a regular file
    trusted = TrialFiles.for_input(Path("/dev/zero"))
    with pytest.raises(ReaderError, match=r"^refused zero: a character device, not a regular"):
        trusted.read_bytes(Path("/dev/zero"))


def test_the_size_cap(tmp_path: Path) -> None:
    (tmp_path / "big.jsonl").write_bytes(b'{"a": 1}\n' * 200)  # 1800 bytes
    files = TrialFiles(tmp_path, ReadLimits(max_file_bytes=1000))
    reason = r"^refused big\.jsonl: 1800 bytes is over the --max-file-mb cap of 1000 bytes$"
    with pytest.raises(ReaderError, match=reason):
        files.read_bytes(tmp_path / "big.jsonl")
    with pytest.raises(ReaderError, match=reason):
        list(files.iter_lines(tmp_path / "big.jsonl"))
    assert files.head(tmp_path / "big.jsonl", 9) == b'{"a": 1}\n'  # a head reads only `size`
    # streamed (IM) files cap each line instead
    lines = list(files.iter_lines(tmp_path / "big.jsonl", per_line_cap=True))
    assert len(lines) == 200
    (tmp_path / "long.jsonl").write_bytes(b"x" * 1001 + b"\n")
    with pytest.raises(ReaderError, match=r"^refused long\.jsonl: line 1 is over the"):
        list(files.iter_lines(tmp_path / "long.jsonl", per_line_cap=True))
    assert "700.0 MiB is over the --max-file-mb cap of 512 MiB" in str(
        TrialFiles(tmp_path)._over_cap("x", 700 * 2**20)
    )


def test_listing_never_follows_a_symlinked_folder_out(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "trial"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "x.jsonl").write_text("{}")
    (root / "a" / "out").symlink_to(outside)  # holds session.jsonl
    (root / "a" / "linked.jsonl").symlink_to(outside / "session.jsonl")
    files = TrialFiles(root)
    assert files.rglob(root, "*.jsonl") == [root / "a" / "b" / "x.jsonl"]
    assert files.take_warnings() == [
        "refused a/linked.jsonl: a symlink to a target outside the trial"
    ]
    assert files.list_dir(root / "a" / "out") == []
    assert files.glob(root / "a" / "out", "*") == []
    assert files.take_warnings() == ["refused a/out: a symlink to a target outside the trial"]


def test_bom_and_utf16(tmp_path: Path) -> None:
    doc = trajectory_doc("h\u00e9llo \u30b8")
    plain = orjson.dumps(doc)
    text = plain.decode()
    variants = {
        "plain.json": plain,
        "bom.json": b"\xef\xbb\xbf" + plain,
        "le.json": b"\xff\xfe" + text.encode("utf-16-le"),
        "be.json": b"\xfe\xff" + text.encode("utf-16-be"),
    }
    for name, data in variants.items():
        (tmp_path / name).write_bytes(data)
    messages = {
        name: next(read_atif(tmp_path / name))["records"][0]["messages"] for name in variants
    }
    for name in variants:
        assert messages[name] == messages["plain.json"], name
    assert messages["le.json"][-1]["content"] == "h\u00e9llo \u30b8"
    assert {detect_format(tmp_path / name) for name in variants} == {"atif"}
    (tmp_path / "bad16.json").write_bytes(b"\xff\xfe" + b"\x00\xd8")  # a lone surrogate
    with pytest.raises(ReaderError, match=r"invalid UTF-16 text"):
        list(read_atif(tmp_path / "bad16.json"))
    # JSON Lines: a BOM on the first line, or the whole file in UTF-16
    lines = [orjson.dumps({"type": "text", "sessionID": "s", "part": {"text": "x"}})] * 2
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n")
    (tmp_path / "le.jsonl").write_bytes(
        b"\xff\xfe" + (b"\n".join(lines) + b"\n").decode().encode("utf-16-le")
    )
    files = TrialFiles(tmp_path)
    for name in ("bom.jsonl", "le.jsonl"):
        assert [raw for _, raw in files.iter_lines(tmp_path / name)] == lines


# --- Harbor trials: nothing from outside reaches a bundle -----------------------------------


def test_reward_txt_linked_to_etc_passwd(tmp_path: Path) -> None:
    trial = write_trial(
        tmp_path / "job",
        "t__1",
        {"result.json": result_doc("t__1"), "agent/trajectory.json": trajectory_doc()},
    )
    (trial / "verifier").mkdir()
    (trial / "verifier" / "reward.txt").symlink_to("/etc/passwd")
    bundle = _only(tmp_path / "job")
    assert bundle["rewards"] is None and len(bundle["records"]) == 1
    warning = "refused verifier/reward.txt: a symlink to a target outside the trial"
    assert bundle["warnings"] == [warning]
    assert bundle["records"][0]["meta_info"]["unique_info"]["_instance_metadata"]["warnings"] == [
        warning
    ]
    assert not PASSWD_FIRST_LINE or PASSWD_FIRST_LINE not in _dump(bundle)


def test_result_json_linked_outside(tmp_path: Path, outside: Path) -> None:
    trial = write_trial(tmp_path / "job", "t__1", {"agent/trajectory.json": trajectory_doc()})
    (trial / "result.json").symlink_to(outside / "result.json")
    bundle = _only(tmp_path / "job")
    assert bundle["records"] == [] and bundle["rewards"] is None
    assert bundle["warnings"] == ["refused result.json: a symlink to a target outside the trial"]
    assert MARKER not in _dump(bundle)


def test_agent_folder_linked_outside(tmp_path: Path, outside: Path) -> None:
    trial = write_trial(
        tmp_path / "job", "t__1", {"result.json": result_doc("t__1", {"reward": 1})}, agent=False
    )
    (trial / "agent").symlink_to(outside / "agent", target_is_directory=True)
    bundle = _only(tmp_path / "job")
    assert bundle["records"] == []
    assert bundle["warnings"] == [
        "refused agent: a symlink to a target outside the trial",
        f"no agent trajectory found in {trial}/agent",
    ]
    assert MARKER not in _dump(bundle)


def test_claude_code_session_linked_outside(tmp_path: Path, outside: Path) -> None:
    trial = write_trial(tmp_path / "job", "t__1", {"result.json": result_doc("t__1")})
    project = trial / "agent" / "sessions" / "projects" / "-app"
    project.mkdir(parents=True)
    (project / "s.jsonl").symlink_to(outside / "session.jsonl")
    bundle = _only(tmp_path / "job")
    assert bundle["records"] == []
    assert bundle["warnings"][0] == (
        "refused agent/sessions/projects/-app/s.jsonl: a symlink to a target outside the trial"
    )
    assert MARKER not in _dump(bundle)
    # the standalone reader: the session's subagent folder is confined to the file's folder
    folder = tmp_path / "standalone"
    (folder / "s" / "subagents").mkdir(parents=True)
    inside = (outside / "session.jsonl").read_bytes().replace(MARKER.encode(), b"inside")
    (folder / "s.jsonl").write_bytes(inside)
    (folder / "s" / "subagents" / "agent-x.jsonl").symlink_to(outside / "session.jsonl")
    (standalone,) = claude_code.read(folder / "s.jsonl")
    assert (
        "refused s/subagents/agent-x.jsonl: a symlink to a target outside the input's folder"
        in (standalone["warnings"])
    )
    assert MARKER not in _dump(standalone)


def test_fifos_in_a_trial_do_not_hang(tmp_path: Path) -> None:
    job = tmp_path / "job"
    trial = good_trial(job, "a__fifo_reward", {"result.json": result_doc("a__fifo_reward")})
    (trial / "verifier").mkdir()
    os.mkfifo(trial / "verifier" / "reward.txt")
    trial = write_trial(job, "b__fifo_trajectory", {"result.json": result_doc("b__1", {"r": 1})})
    os.mkfifo(trial / "agent" / "trajectory.json")
    trial = write_trial(job, "c__fifo_result", {"agent/trajectory.json": trajectory_doc()})
    os.mkfifo(trial / "result.json")
    first, second, third = harbor.read(job)
    assert len(first["records"]) == 1 and first["rewards"] is None
    assert first["warnings"] == ["refused verifier/reward.txt: a FIFO, not a regular file"]
    assert second["records"] == []
    assert second["warnings"][0] == "refused agent/trajectory.json: a FIFO, not a regular file"
    assert third["records"] == []
    assert third["warnings"] == ["refused result.json: a FIFO, not a regular file"]


def test_dev_zero_links_are_refused(tmp_path: Path) -> None:
    job = tmp_path / "job"
    trial = write_trial(job, "a__1", {"result.json": result_doc("a__1", {"reward": 1})})
    (trial / "agent" / "trajectory.json").symlink_to("/dev/zero")
    trial = write_trial(job, "b__2", {"agent/trajectory.json": trajectory_doc()})
    (trial / "result.json").symlink_to("/dev/zero")
    first, second = harbor.read(job)
    assert first["records"] == [] and second["records"] == []
    assert first["warnings"][0] == (
        "refused agent/trajectory.json: a symlink to a target outside the trial"
    )
    assert second["warnings"] == ["refused result.json: a symlink to a target outside the trial"]


def test_files_over_the_cap_are_refused(tmp_path: Path) -> None:
    trial = good_trial(tmp_path / "job", "t__1")
    size = (trial / "agent" / "trajectory.json").stat().st_size
    bundle = read_trial(trial, "job", ReadLimits(max_file_bytes=size - 1))
    assert bundle["records"] == []
    assert bundle["warnings"][0] == (
        f"refused agent/trajectory.json: {size} bytes is over the --max-file-mb cap of "
        f"{size - 1} bytes"
    )
    assert len(read_trial(trial, "job", ReadLimits(max_file_bytes=size))["records"]) == 1


def test_a_bom_is_accepted_and_utf16_decoded_in_a_trial(tmp_path: Path) -> None:
    job = tmp_path / "job"
    plain = good_trial(job, "a__plain")
    bom = good_trial(job, "b__bom")
    utf16 = good_trial(job, "c__utf16")
    for name in ("result.json", "agent/trajectory.json"):
        data = (plain / name).read_bytes().replace(b"a__plain", b"b__bom")
        (bom / name).write_bytes(b"\xef\xbb\xbf" + data)
        text = (plain / name).read_bytes().replace(b"a__plain", b"c__utf16").decode()
        (utf16 / name).write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    (bom / "verifier").mkdir()
    bundles = list(harbor.read(job))
    assert [b["instance_id"] for b in bundles] == ["a__plain", "b__bom", "c__utf16"]
    for bundle in bundles:
        assert bundle["warnings"] == [] and bundle["rewards"] == {"reward": 1.0}
        assert bundle["records"][0]["messages"] == bundles[0]["records"][0]["messages"]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (42, "step 1: message is a JSON number, expected text or content parts"),
        ([1, 2, 3], "step 1: message part 1 is a JSON number, expected an object or text"),
        (True, "step 1: message is a JSON boolean, expected text or content parts"),
        ({"text": 42}, "step 1: message text is a JSON number, expected text or content parts"),
    ],
    ids=["number", "numbers", "boolean", "part-text-number"],
)
def test_wrong_typed_messages_are_refused(tmp_path: Path, message: Any, reason: str) -> None:
    contents = {
        "result.json": result_doc("t__1", {"reward": 1}),
        "agent/trajectory.json": trajectory_doc(message=message),
    }
    write_trial(tmp_path / "job", "t__1", contents)
    bundle = _only(tmp_path / "job")
    assert bundle["records"] == []
    assert bundle["warnings"][0] == f"agent/trajectory.json {reason}"
    standalone = tmp_path / "job" / "t__1" / "agent" / "trajectory.json"
    with pytest.raises(ReaderError, match=reason):
        list(read_atif(standalone))


def test_wrong_typed_content_in_results_and_calls_is_refused(tmp_path: Path) -> None:
    doc = trajectory_doc()
    doc["steps"][1]["observation"]["results"][0]["content"] = [1, 2, 3]
    (tmp_path / "a.json").write_bytes(orjson.dumps(doc))
    with pytest.raises(ReaderError, match=r"step 2: observation result 1 content part 1 is a"):
        list(read_atif(tmp_path / "a.json"))
    doc = trajectory_doc()
    doc["steps"][1]["tool_calls"] = 7
    (tmp_path / "b.json").write_bytes(orjson.dumps(doc))
    with pytest.raises(ReaderError, match=r"step 2: tool_calls is a JSON number, expected an"):
        list(read_atif(tmp_path / "b.json"))


def test_wrong_typed_native_content_is_refused(tmp_path: Path) -> None:
    events = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"content": "task"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s",
            "message": {"id": "m1", "content": [1, 2, 3]},
        },
    ]
    (tmp_path / "s.jsonl").write_bytes(b"\n".join(orjson.dumps(e) for e in events))
    with pytest.raises(ReaderError, match=r"main assistant event a1: content block 1 is a JSON"):
        list(claude_code.read(tmp_path / "s.jsonl"))
    stream = [
        {"type": "user", "sessionID": "s", "part": {"type": "text", "text": "task"}},
        {"type": "step_start", "sessionID": "s", "part": {}},
        {"type": "text", "sessionID": "s", "part": {"text": 42}},
        {"type": "step_finish", "sessionID": "s", "part": {"reason": "stop"}},
    ]
    (tmp_path / "opencode.txt").write_bytes(b"\n".join(orjson.dumps(e) for e in stream))
    with pytest.raises(ReaderError, match=r"text part has a text that is a JSON number"):
        list(opencode.read(tmp_path / "opencode.txt"))


def test_standalone_companions_stay_in_the_input_folder(tmp_path: Path, outside: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    traj = {
        "history": [
            {"role": "user", "content": "fix it", "agent": "main"},
            {"role": "assistant", "content": "done", "agent": "main"},
        ],
        "info": {},
        "trajectory": [],
    }
    (folder / "x.traj").write_bytes(orjson.dumps(traj))
    (folder / "report.json").symlink_to(outside / "result.json")
    (bundle,) = swe_agent.read(folder / "x.traj")
    assert bundle["rewards"] is None
    assert bundle["warnings"] == [
        "refused report.json: a symlink to a target outside the input's folder"
    ]
    # a top-level input that is itself a symlink is trusted as given
    (tmp_path / "link.traj").symlink_to(folder / "x.traj")
    (linked,) = swe_agent.read(tmp_path / "link.traj")
    assert linked["records"][0]["messages"] == bundle["records"][0]["messages"]


def test_im_input_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "im.jsonl")
    with pytest.raises(ReaderError, match=r"^refused im\.jsonl: a FIFO, not a regular file$"):
        list(im_jsonl.read(tmp_path / "im.jsonl"))
    with pytest.raises(ReaderError, match=r"^refused im\.jsonl: a FIFO, not a regular file$"):
        detect_format(tmp_path / "im.jsonl")


def test_valid_trials_are_unchanged_by_confinement(tmp_path: Path) -> None:
    job = tmp_path / "job"
    trial = good_trial(job, "t__1")
    (trial / "agent" / "alias.json").symlink_to(trial / "agent" / "trajectory.json")
    (bundle,) = harbor.read(job)
    assert bundle["warnings"] == [] and bundle["format"] == "harbor-atif"
    assert_valid_records(bundle["records"])


@pytest.mark.parametrize(
    ("name", "source", "refused"),
    [
        ("agent/trajectory.json", "trajectory.json", "refused agent/trajectory.json"),
        ("result.json", "result.json", "refused result.json"),
        ("verifier/reward.txt", "reward.txt", "refused verifier/reward.txt"),
    ],
)
def test_a_hard_link_out_of_the_trial_is_refused(
    tmp_path: Path, outside: Path, name: str, source: str, refused: str
) -> None:
    """A hard link is the same file as its target: no real-path check can see it leave."""
    trial = good_trial(tmp_path / "job", "t__1", {"result.json": result_doc("t__1")})
    (trial / name).unlink(missing_ok=True)
    (trial / name).parent.mkdir(exist_ok=True)
    os.link(outside / source, trial / name)
    bundle = _only(tmp_path / "job")
    assert MARKER not in _dump(bundle)
    assert any(
        w.startswith(f"{refused}: a file with 2 hard links") and "--allow-hard-links" in w
        for w in bundle["warnings"]
    ), bundle["warnings"]
    (allowed,) = harbor.read(tmp_path / "job", ReadLimits(allow_hard_links=True))
    assert MARKER in _dump(allowed) or allowed["rewards"] == {"reward": 1.0}


def test_a_hard_linked_file_named_on_the_command_line_is_read(
    tmp_path: Path, outside: Path
) -> None:
    os.link(outside / "trajectory.json", tmp_path / "given.json")
    (bundle,) = read_atif(tmp_path / "given.json")
    assert len(bundle["records"]) == 1
