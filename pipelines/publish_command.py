"""`trajcurate publish OUTPUT_DIR --repo NAME`: push a run's dataset to the Hugging Face Hub.

What is uploaded is what the run's card and `dataset_info.json` name, and nothing else:
`README.md`, `dataset_info.json`, and every data file of the card's configs and of the
LLaMA-Factory entries (the Parquet files after `--parquet`, else the JSON ones), at the same
paths as in the folder, so the repo loads exactly as the folder does. Before anything is
sent, the run folder and every job folder are checked against their manifests (sizes and
SHA-256): a damaged or half-written output is never published.

`--dry-run` lists the files and sizes and sends nothing (it needs no `huggingface_hub`). An
upload is one commit (`HfApi.create_repo(exist_ok=True)`, then `create_commit`), to
`$HF_ENDPOINT` when set. Exit 0 when published (or listed), 2 for usage errors, an output
that fails its check, or an upload the Hub refused (one line).
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pipelines.chain_options import Option, options_by_name

__all__ = ["PUBLISH_OPTIONS", "PublishError", "UploadPlan", "add_parser", "plan_upload", "run"]

PROG = "trajcurate publish"
# A Hub repo id: `name` or `namespace/name`, each of letters, digits, `-`, `_` and `.` that
# starts and ends with a letter, digit or `_` (huggingface_hub's validate_repo_id).
_PART = r"\w(?:[\w.-]*\w)?"
_REPO = re.compile(f"(?:{_PART}/)?{_PART}")
PUBLISH_OPTIONS = options_by_name(
    Option("repo", str, None, "the dataset repo: NAME or NAMESPACE/NAME", metavar="NAME"),
    Option("dry_run", bool, False, "list what would be uploaded (paths, sizes); send nothing"),
    Option(
        "token_env",
        str,
        None,
        "read the Hub token from this environment variable (default: huggingface_hub's own "
        "lookup: $HF_TOKEN, then a saved login)",
        metavar="VAR",
    ),
    Option("private", bool, False, "create the repo private (an existing repo keeps its own)"),
    Option("message", str, None, "the commit message", metavar="TEXT"),
)


class PublishError(Exception):
    """Why the folder cannot be published, as one line for the user."""


@dataclass(frozen=True)
class UploadPlan:
    """The files of one upload: paths relative to the run folder, and their sizes."""

    root: Path
    files: tuple[tuple[str, int], ...]

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.files)


def add_parser(subcommands: Any) -> None:
    """Register `publish` on the `trajcurate` subcommand parser."""
    parser: argparse.ArgumentParser = subcommands.add_parser(
        "publish",
        help="push a run's dataset card, dataset_info.json and data files to the Hub",
        description="Upload a run folder's dataset (card, dataset_info.json, data files) "
        "to a Hugging Face dataset repo in one commit.",
    )
    parser.add_argument("output", type=Path, metavar="OUTPUT_DIR", help="a run's --output")
    for option in PUBLISH_OPTIONS.values():
        option.add_to(parser, option.default)
    parser.set_defaults(handler=run)


def plan_upload(output: Path) -> UploadPlan:
    """What a publish of `output` uploads, after checking the run's files and every job's
    against their manifests; PublishError when something is missing or damaged."""
    from pipelines.dataset_card import CARD, DATASET_INFO, card_data_files
    from pipelines.output_folder import verify_outputs

    manifest = _read_json(output / "manifest.json", "the run manifest")
    for name in (CARD, DATASET_INFO):
        if not (output / name).is_file():
            raise PublishError(
                f"{output} has no {name}: run `trajcurate run` into it with this version first"
            )
    folders = manifest.get("job_folders")
    if not isinstance(folders, dict):
        raise PublishError(f"{output}/manifest.json lists no job folders")
    for where in ["", *sorted(str(f) for f in folders.values())]:
        problem = verify_outputs(str(output / where) if where else str(output))
        if problem is not None:
            shown = f"{output}/{where}" if where else str(output)
            raise PublishError(f"{shown}: {problem}; run `trajcurate run` again before publishing")
    card = (output / CARD).read_text(encoding="utf-8")
    info = _read_json(output / DATASET_INFO, DATASET_INFO)
    named = [CARD, DATASET_INFO, *card_data_files(card), *_lf_files(info)]
    paths = list(dict.fromkeys(named))
    return UploadPlan(output, tuple((path, _size(output, path)) for path in paths))


def _lf_files(info: dict[str, Any]) -> list[str]:
    return [
        entry["file_name"]
        for entry in info.values()
        if isinstance(entry, dict) and isinstance(entry.get("file_name"), str)
    ]


def _size(output: Path, path: str) -> int:
    """The size of a file the card names, which must lie inside the run folder."""
    normal = posixpath.normpath(path)
    if normal.startswith(("/", "../")) or normal in ("..", ".") or "\\" in path:
        raise PublishError(f"the card names {path!r}, which is not a file of {output}")
    try:
        return (output / normal).stat().st_size
    except OSError:
        raise PublishError(f"the card names {normal}, which {output} does not have") from None


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        value = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        where = f"{path.parent} has no {path.name}"
        raise PublishError(f"{where}: not a trajcurate run folder") from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise PublishError(f"cannot read {what} {path}: {exc}") from None
    if not isinstance(value, dict):
        raise PublishError(f"{what} {path} is not a JSON object")
    return value


def describe(plan: UploadPlan, repo: str) -> list[str]:
    """The dry run's lines: one per file, then the total."""
    width = max((len(path) for path, _ in plan.files), default=0)
    lines = [f"{path:<{width}}  {size:>14,} bytes" for path, size in plan.files]
    lines.append(
        f"would upload {len(plan.files)} files ({plan.total_bytes / 2**20:,.2f} MiB) to the "
        f"dataset repo {repo}"
    )
    return lines


def upload(plan: UploadPlan, repo: str, token: str | None, private: bool, message: str) -> str:
    """Create the dataset repo if needed and commit every planned file; the commit's URL."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None, token=token)
    url = api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
    operations = [
        CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(plan.root / path))
        for path, _ in plan.files
    ]
    commit = api.create_commit(
        repo_id=url.repo_id, repo_type="dataset", operations=operations, commit_message=message
    )
    return str(commit.commit_url)


def _token(variable: str | None) -> str | None:
    if variable is None:
        return None
    token = os.environ.get(variable, "")
    if not token:
        raise PublishError(f"--token-env: ${variable} is not set")
    return token


def _default_message(plan: UploadPlan) -> str:
    return f"trajcurate publish: {len(plan.files)} files ({plan.total_bytes / 2**20:,.2f} MiB)"


def run(args: argparse.Namespace) -> int:
    repo = str(args.repo or "")
    if not repo:
        return _fail("--repo NAME is required")
    bad = ".." in repo or "--" in repo or repo.endswith(".git")
    if len(repo) > 96 or not _REPO.fullmatch(repo) or bad:
        return _fail(f"--repo: {repo!r} is not a Hub repo id (NAME or NAMESPACE/NAME)")
    try:
        plan = plan_upload(args.output)
        if not any(path.endswith(".parquet") for path, _ in plan.files):
            print(
                f"{PROG}: note: no Parquet files: several JSON files load together only "
                "where `datasets` can type them; `trajcurate run --parquet` makes data every "
                "reader loads",
                file=sys.stderr,
            )
        if args.dry_run:
            print("\n".join(describe(plan, repo)))
            return 0
        token = _token(args.token_env)
    except PublishError as exc:
        return _fail(str(exc))
    try:
        import huggingface_hub  # noqa: F401  (checked here for a one-line error)
    except ModuleNotFoundError:
        return _fail("huggingface_hub is not installed: pip install 'trajcurate[hub]'")
    try:
        url = upload(plan, repo, token, args.private, args.message or _default_message(plan))
    except Exception as exc:  # the Hub's refusal (HTTP errors, validation): one line
        return _fail(f"the upload to {repo} failed: {_one_line(exc)}")
    print(f"{PROG}: {len(plan.files)} files ({plan.total_bytes / 2**20:,.2f} MiB) -> {url}")
    return 0


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2
