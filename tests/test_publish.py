"""`trajcurate publish`: the dry run's list, the checks before anything is sent, and a real
upload through `huggingface_hub` to a loopback fake of the Hub's HTTP API (no network)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from fake_hub import USER, FakeHub

from pipelines.cli import main
from pipelines.dataset_card import card_data_files

pytest.importorskip("huggingface_hub")

COMPOSED = "2026-06-16__12-00-00"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def out(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `--parquet --num-shards 2` run of the composed job and a synthetic one."""
    jobs = tmp_path_factory.mktemp("publish") / "jobs"
    assert main(["synth", "--out", str(jobs), "--jobs", "1", "--trials", "6", "--seed", "4"]) == 0
    (jobs / "synth-manifest.jsonl").unlink()
    shutil.copytree(shared_dir / "data" / "composed" / "jobs" / COMPOSED, jobs / COMPOSED)
    output = jobs.parent / "out"
    argv = ["run", "--no-progress", "--input", str(jobs), "--output", str(output)]
    assert main([*argv, "--parquet", "--num-shards", "2", "--instance-status", "all"]) == 0
    return output


def expected_files(out: Path) -> list[str]:
    """README.md, dataset_info.json and every job's IM and LF Parquet shards that hold a
    record (a shard's JSON twin says: `[]` or nothing is no record)."""
    folders = orjson.loads((out / "manifest.json").read_bytes())["job_folders"].values()
    shards = [
        f"{folder}/{kind}-{i:05d}-of-00002"
        for kind in ("im", "lf")
        for folder in sorted(folders)
        for i in range(2)
    ]
    suffix = {"im": ".jsonl", "lf": ".json"}
    full = [s for s in shards if (out / (s + suffix[s.split("/")[1][:2]])).stat().st_size > 3]
    assert len(full) > 4  # most shards hold records: the check is not vacuous
    return ["README.md", "dataset_info.json", *(s + ".parquet" for s in full)]


def copy_of(out: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    return copy


def test_a_dry_run_lists_every_file_with_its_size_and_sends_nothing(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["publish", str(out), "--repo", "me/agent-sft", "--dry-run"]) == 0
    printed = capsys.readouterr().out.splitlines()
    listed = {line.split()[0]: int(line.split()[1].replace(",", "")) for line in printed[:-1]}
    assert sorted(listed) == sorted(expected_files(out))
    assert listed == {path: (out / path).stat().st_size for path in listed}
    total = sum(listed.values())
    assert printed[-1] == (
        f"would upload {len(listed)} files ({total / 2**20:,.2f} MiB) to the dataset repo "
        "me/agent-sft"
    )
    card = (out / "README.md").read_text(encoding="utf-8")
    assert set(card_data_files(card)) <= set(listed)  # what the configs name is uploaded


def test_a_damaged_output_is_never_published(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = copy_of(out, tmp_path)
    shard = copy / COMPOSED / "im-00000-of-00002.parquet"
    shard.write_bytes(shard.read_bytes()[:-10] + b"0123456789")
    assert main(["publish", str(copy), "--repo", "me/x", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"trajcurate publish: error: {copy}/{COMPOSED}: im-00000-of-00002.parquet: content "
        "differs from the manifest (sha256); run `trajcurate run` again before publishing"
    )


def test_a_folder_without_a_card_or_a_run_is_refused_in_one_line(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = copy_of(out, tmp_path)
    (copy / "README.md").unlink()
    assert main(["publish", str(copy), "--repo", "me/x", "--dry-run"]) == 2
    assert "has no README.md: run `trajcurate run`" in capsys.readouterr().err
    assert main(["publish", str(tmp_path / "nothing"), "--repo", "me/x", "--dry-run"]) == 2
    assert "not a trajcurate run folder" in capsys.readouterr().err
    for bad in ("two words", "a/b/c", "x-", "a--b", "me/.x"):
        assert main(["publish", str(out), "--repo", bad, "--dry-run"]) == 2
        assert "is not a Hub repo id" in capsys.readouterr().err


def publish(
    out: Path, hub: FakeHub, tmp_path: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """`trajcurate publish` in its own process, with the Hub at the fake's address."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("HF_") and key != "HUGGING_FACE_HUB_TOKEN"
    }
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HOME=str(tmp_path / "hf-home"),  # no saved login of this machine
        HF_HUB_DISABLE_TELEMETRY="1",
        PUBLISH_TOKEN="hf_test_token",
        PYTHONPATH=str(ROOT),
    )
    argv = [sys.executable, "-m", "pipelines.cli", "publish", str(out), *extra]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def test_publish_creates_the_repo_and_commits_every_file_as_it_is(
    out: Path, tmp_path: Path
) -> None:
    with FakeHub() as hub:
        done = publish(
            out, hub, tmp_path, "--repo", "agent-sft", "--private", "--token-env", "PUBLISH_TOKEN"
        )
    assert done.returncode == 0, done.stderr
    files = expected_files(out)
    repo = f"{USER}/agent-sft"
    assert hub.repos == {
        repo: {
            "name": "agent-sft",
            "organization": None,
            "type": "dataset",
            "visibility": "private",
        }
    }
    assert hub.files[repo] == {path: (out / path).read_bytes() for path in files}
    assert len(hub.commits) == 1 and hub.commits[0]["summary"].startswith(
        f"trajcurate publish: {len(files)} files"
    )
    assert {r.headers.get("authorization") for r in hub.requests} == {"Bearer hf_test_token"}
    card = [r for r in hub.requests if r.path == "/api/validate-yaml"]
    assert card[0].body["content"] == (out / "README.md").read_text(encoding="utf-8")
    assert done.stdout.strip().startswith(f"trajcurate publish: {len(files)} files (")
    assert f"/datasets/{repo}/commit/" in done.stdout


def test_a_refused_upload_is_one_line_and_exit_2(out: Path, tmp_path: Path) -> None:
    with FakeHub(fail={"/commit/main": 403}) as hub:
        done = publish(out, hub, tmp_path, "--repo", "team/agent-sft", "--message", "v1")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "trajcurate publish: error: the upload to team/agent-sft failed: 403"
    ), done.stderr
    assert hub.commits == []


def test_a_token_variable_that_is_not_set_stops_before_any_request(
    out: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN_VAR", raising=False)
    assert main(["publish", str(out), "--repo", "me/x", "--token-env", "NO_SUCH_TOKEN_VAR"]) == 2
    assert capsys.readouterr().err.strip() == (
        "trajcurate publish: error: --token-env: $NO_SUCH_TOKEN_VAR is not set"
    )
