"""`trajcurate run` outputs that cannot lie: stale files, the lock, --skip-unchanged on
damaged outputs, a full disk mid-run, credentials in options."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_output_folder import _in_tmpfs, mount_way  # noqa: F401  (a fixture)

from pipelines.cli import main
from pipelines.output_folder import OutputLock, verify_outputs
from transforms.sinks import layout

JOB = "2026-06-16__12-00-00"


def run(inputs: Path, output: Path, *extra: str) -> int:
    return main(["run", "--no-progress", "--input", str(inputs), "--output", str(output), *extra])


def manifest(folder: Path) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads((folder / "manifest.json").read_bytes())
    return value


@pytest.fixture(scope="module")
def jobs(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("jobs")
    shutil.copytree(shared_dir / "data" / "composed" / "jobs" / JOB, root / JOB, symlinks=True)
    return root


def _leftovers(output: Path) -> list[str]:
    return sorted(
        str(p.relative_to(output))
        for p in output.rglob("*")
        if p.name.startswith(".staging-") or p.name.endswith((".partial", ".part"))
    )


def test_a_rerun_with_other_options_removes_the_earlier_runs_files(
    jobs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert run(jobs, out, "--num-shards", "4", "--instance-status", "all") == 0
    assert (out / JOB / "im-00003-of-00004.jsonl").exists()
    (out / JOB / "notes.txt").write_text("mine")
    assert run(jobs, out) == 0
    names = sorted(p.name for p in (out / JOB).iterdir())
    assert not [n for n in names if "-of-" in n]
    job_manifest = manifest(out / JOB)
    assert sorted(job_manifest["files"]) == sorted(set(names) - {"manifest.json", "notes.txt"})
    written = len((out / JOB / "im.jsonl").read_bytes().splitlines())
    assert written == job_manifest["counts"]["records.main"] + job_manifest["counts"].get(
        "records.subagent", 0
    )
    assert verify_outputs(str(out / JOB)) is None
    assert (out / JOB / "notes.txt").read_text() == "mine"


def test_skip_unchanged_rebuilds_damaged_outputs(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert run(jobs, out) == 0  # signs nothing: the signatures are computed when asked for
    assert orjson.loads((out / "manifest.json").read_bytes())["input_signature"] is None
    capsys.readouterr()
    assert run(jobs, out, "--skip-unchanged") == 0
    assert "1 job(s) new or changed, 0 unchanged" in capsys.readouterr().out
    good = (out / JOB / "im.jsonl").read_bytes()
    assert run(jobs, out, "--skip-unchanged") == 0
    assert "nothing to do" in capsys.readouterr().out
    (out / JOB / "im.jsonl").write_bytes(good[: len(good) // 2])
    assert run(jobs, out, "--skip-unchanged") == 0
    assert "nothing to do" not in capsys.readouterr().out
    assert (out / JOB / "im.jsonl").read_bytes() == good
    (out / JOB / "lf.json").unlink()
    assert run(jobs, out, "--skip-unchanged") == 0
    assert (out / JOB / "lf.json").exists()


def test_a_second_run_into_a_locked_folder_is_refused_in_one_line(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with OutputLock(str(out)):
        assert run(jobs, out) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"trajcurate run: error: output {out} is in use by another")
    assert not (out / JOB).exists()
    assert run(jobs, out) == 0  # free again


def test_a_full_disk_mid_run_fails_in_one_line_and_publishes_nothing(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    assert run(jobs, out) == 0
    before = {p.name: p.read_bytes() for p in (out / JOB).iterdir()}
    capsys.readouterr()

    def full(self: layout.FileWriter, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(layout.FileWriter, "write", full)
    assert run(jobs, out, "--instance-status", "all") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "trajcurate run: error: the run failed, nothing was published: "
        "OSError: [Errno 28] No space left on device"
    ]
    assert _leftovers(out) == []
    assert {p.name: p.read_bytes() for p in (out / JOB).iterdir()} == before
    assert verify_outputs(str(out / JOB)) is None


def test_an_output_that_is_a_file_is_refused_before_any_work(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "file"
    out.write_text("x")
    assert run(jobs, out) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"trajcurate run: error: output {out} is not a folder"


def test_credentials_in_option_urls_are_masked_in_manifests(jobs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    url = "https://alice:s3cr3t-pass@llm.example.test/v1"
    extra = ("--llm-judge", "fixed", "--llm-dry-run", "--llm-base-url", url)
    assert run(jobs, out, *extra) == 0
    for path in out.rglob("*.json"):
        assert b"s3cr3t-pass" not in path.read_bytes(), path
    assert manifest(out)["options"]["llm_base_url"] == "https://***@llm.example.test/v1"


def test_every_option_value_has_its_url_credentials_masked() -> None:
    from pipelines.config import RunConfig

    config = RunConfig(
        inputs=("gs://bucket/jobs",),
        output="s3://k:hunter2@bucket/out",
        llm_cache="https://u:pw-9x@cache.test/c",
        beam_args=("--temp_location=gs://u:tok3n@b/tmp",),
    )
    public = orjson.dumps(config.public()).decode()
    for secret in ("hunter2", "pw-9x", "tok3n"):
        assert secret not in public


def test_judge_error_texts_are_masked_before_they_reach_the_data() -> None:
    from transforms.judge_stage import _masked_errors

    outputs = _masked_errors(
        {
            "llm_composite_score": None,
            "llm_error": "HTTPStatusError: 404 for url 'https://alice:s3cr3t-pass@h.test/v1/x'",
            "llm_checklist_error": "answer quoted OPENAI_API_KEY=sk-proj-" + "Ab3dEf6hIj9kLm2nOp5q",
        }
    )
    assert "s3cr3t-pass" not in outputs["llm_error"]
    assert "https://***@h.test/v1/x" in outputs["llm_error"]
    assert "Ab3dEf6hIj9kLm2nOp5q" not in outputs["llm_checklist_error"]


def test_real_read_only_and_full_folders_fail_in_one_line_and_leave_nothing(
    tmp_path: Path,
    mount_way: list[str],  # noqa: F811
) -> None:
    """A real tmpfs: so small that the 1 MiB probe fits but the outputs (~3 MiB) do not (the
    disk fills mid-run), then read-only."""
    jobs = tmp_path / "jobs"
    assert main(["synth", "--out", str(jobs), "--jobs", "1", "--trials", "200", "--seed", "3"]) == 0
    run_into = (
        f'"$PY" -m pipelines.cli run --no-progress --instance-status all --input "{jobs}" --output'
    )
    lines = _in_tmpfs(
        mount_way,
        tmp_path / "mnt",
        "1500k",
        f'set +e; {run_into} "$P/full" 2>&1; echo "rc=$?"; find "$P/full" | sort; '
        f'grep -c \'"mode":"failed"\' "$P/full/runs.jsonl"; '
        f'mount -o remount,ro "$P"; {run_into} "$P/ro" 2>&1; echo "rc=$?"',
    )
    point = tmp_path / "mnt"
    assert lines == [
        "trajcurate run: error: the run failed, nothing was published: "
        "OSError: [Errno 28] No space left on device",
        "rc=2",
        f"{point}/full",
        f"{point}/full/runs.jsonl",  # the run log: this run failed, nothing else
        "1",
        f"trajcurate run: error: output {point}/ro is read-only",
        "rc=2",
    ]


def test_a_value_too_deep_to_write_dead_letters_its_trial_under_its_job(
    jobs: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "jobs"
    shutil.copytree(jobs, copy, symlinks=True)
    result = copy / JOB / "hello-world__69aUCrP" / "result.json"
    text = result.read_text()
    assert '"task_name": "hello-world"' in text
    deep = "[" * 300 + '"x"' + "]" * 300  # orjson parses it; no writer could write it
    result.write_text(text.replace('"task_name": "hello-world"', f'"task_name": {deep}', 1))
    out = tmp_path / "out"
    assert run(copy, out) == 0
    (dead,) = [orjson.loads(x) for x in (out / JOB / "dead_letter.jsonl").read_bytes().splitlines()]
    assert (dead["job"], dead["stage"], dead["instance_id"]) == (
        JOB,
        "clean",
        "hello-world__69aUCrP",
    )
    assert dead["error"].startswith(
        "TooDeep: a value nested deeper than 254 levels at /meta_info/unique_info/"
        "_instance_metadata/task_name/0/0/"
    )
    assert manifest(out / JOB)["accounting"]["balanced"]
