"""The run's dataset card and merged `dataset_info.json`: what the Hub, `datasets` and
LLaMA-Factory read in a run folder, on runs of synthetic jobs plus the composed real job."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from lf_rules import sharegpt_problem

from pipelines.card_body import card_body, reward_bins
from pipelines.cli import main
from pipelines.dataset_card import (
    MERGED_CONFIG,
    MERGED_LF_CONFIG,
    CardInputs,
    JobData,
    card_data_files,
    card_metadata,
    config_names,
    default_files,
    features_yaml,
    merged_dataset_info,
)
from transforms.sinks.lf import dataset_info_entry
from transforms.sinks.names import is_safe_job_name
from transforms.sinks.schema import arrow_schema

datasets = pytest.importorskip("datasets")
hub = pytest.importorskip("huggingface_hub")

COMPOSED = "2026-06-16__12-00-00"
# LLaMA-Factory's FILEEXT2TYPE (data/loader.py, 0.9.4 / 0.9.5).
FILE_TYPES = {"json": "json", "jsonl": "json", "parquet": "parquet", "csv": "csv"}


def run(inputs: Path, output: Path, *extra: str) -> int:
    argv = ["run", "--no-progress", "--instance-status", "all", "--input", str(inputs)]
    return main([*argv, "--output", str(output), *extra])


@pytest.fixture(scope="module")
def corpus(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic Harbor jobs and the composed job of real trajectories."""
    jobs = tmp_path_factory.mktemp("card") / "jobs"
    assert main(["synth", "--out", str(jobs), "--jobs", "2", "--trials", "8", "--seed", "7"]) == 0
    (jobs / "synth-manifest.jsonl").unlink()
    shutil.copytree(shared_dir / "data" / "composed" / "jobs" / COMPOSED, jobs / COMPOSED)
    return jobs


@pytest.fixture(scope="module")
def parquet_out(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("parquet") / "out"
    extra = ("--parquet", "--license", "cc-by-4.0", "--pretty-name", "Agent runs | test")
    assert run(corpus, out, *extra) == 0
    return out


@pytest.fixture(scope="module")
def json_out(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("json") / "out"
    assert run(corpus, out, "--num-shards", "2") == 0
    return out


def folders(out: Path) -> list[str]:
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    return sorted(manifest["job_folders"].values())


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def im_ids(out: Path, folder: str) -> list[str]:
    files = sorted((out / folder).glob("im*.jsonl"))
    return sorted(r["meta_info"]["unique_info"]["_instance_id"] for f in files for r in lines(f))


def loaded_ids(rows: Any) -> list[str]:
    return sorted(m["unique_info"]["_instance_id"] for m in rows["meta_info"])


def lf_count(out: Path, folder: str) -> int:
    files = [f for f in (out / folder).glob("lf*.json") if f.name != "lf.stats.json"]
    return sum(len(orjson.loads(f.read_bytes())) for f in files)


# --- the card as the Hub and `datasets` read it ---------------------------------------------


def test_the_card_parses_as_a_hub_dataset_card(parquet_out: Path) -> None:
    card = hub.DatasetCard.load(parquet_out / "README.md")
    data = card.data.to_dict()
    assert data["license"] == "cc-by-4.0"
    assert data["pretty_name"] == "Agent runs | test"
    assert data["task_categories"] == ["text-generation"]
    assert data["size_categories"] == ["n<1K"]
    names = [c["config_name"] for c in data["configs"]]
    assert names == [MERGED_CONFIG, MERGED_LF_CONFIG, *folders(parquet_out)]
    assert [c.get("default", False) for c in data["configs"]][:2] == [True, False]
    assert card.text.startswith("\n# Agent runs \\| test\n")  # the title escaped, not a table


def test_the_declared_features_are_the_parquet_files_schema(parquet_out: Path) -> None:
    card = hub.DatasetCard.load(parquet_out / "README.md")
    infos = datasets.info.DatasetInfosDict.from_dataset_card_data(card.data)
    assert sorted(infos) == [MERGED_CONFIG, MERGED_LF_CONFIG]
    for name, kind in ((MERGED_CONFIG, "im"), (MERGED_LF_CONFIG, "lf")):
        assert infos[name].features == datasets.Features.from_arrow_schema(arrow_schema(kind))


def test_load_dataset_on_the_run_folder_loads_every_config_with_every_row(
    parquet_out: Path,
) -> None:
    jobs = folders(parquet_out)
    names = datasets.get_dataset_config_names(str(parquet_out))
    assert names == [MERGED_CONFIG, MERGED_LF_CONFIG, *jobs]
    every = []
    for folder in jobs:
        ids = loaded_ids(datasets.load_dataset(str(parquet_out), folder, split="train"))
        assert ids == im_ids(parquet_out, folder) and ids
        every += ids
    merged = datasets.load_dataset(str(parquet_out), split="train")  # the default: `all`
    assert loaded_ids(merged) == sorted(every)
    lf = datasets.load_dataset(str(parquet_out), MERGED_LF_CONFIG, split="train")
    assert len(lf) == sum(lf_count(parquet_out, f) for f in jobs)
    assert lf.column_names[:3] == ["messages", "system", "tools"]


def test_a_json_run_points_its_configs_at_every_shard(json_out: Path) -> None:
    text = (json_out / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert "dataset_info" not in meta  # JSON objects have no dtype datasets 4.x reads
    jobs = folders(json_out)
    expected = [f"{f}/im-{i:05d}-of-00002.jsonl" for f in jobs for i in range(2)]
    expected += [f"{f}/lf-{i:05d}-of-00002.json" for f in jobs for i in range(2)]
    expected = [path for path in expected if (json_out / path).stat().st_size > 3]
    assert len(expected) > len(jobs)  # sharded: most jobs have two files of each kind
    assert sorted(card_data_files(text)) == sorted(expected)


# --- the merged dataset_info.json, as LLaMA-Factory reads it ---------------------------------


def lf_load(dataset_dir: Path, name: str) -> Any:
    """One `dataset:` name loaded the way LLaMA-Factory 0.9.x does (data/parser.py
    get_dataset_list, data/loader.py _load_single_dataset): file_name -> one file (or a
    folder of one type) by extension; script_url -> load_dataset(dir/script_url, subset)."""
    info = json.loads((dataset_dir / "dataset_info.json").read_text(encoding="utf-8"))
    entry = info[name]
    split = entry.get("split", "train")
    if "script_url" in entry:
        path = os.path.join(dataset_dir, entry["script_url"])
        return datasets.load_dataset(path=path, name=entry.get("subset"), split=split), entry
    local = os.path.join(dataset_dir, entry["file_name"])
    assert os.path.isfile(local), local
    kind = FILE_TYPES[os.path.splitext(local)[-1][1:]]
    return datasets.load_dataset(path=kind, data_files=[local], split=split), entry


def check_sharegpt(rows: Any, entry: dict[str, Any]) -> None:
    columns, tags = entry["columns"], entry["tags"]
    assert entry["formatting"] == "sharegpt"
    roles = {tags[f"{r}_tag"]: r for r in ("user", "assistant", "observation", "system")}
    roles[tags["function_tag"]] = "function_call"
    for row in rows:
        messages = [
            {"role": roles[m[tags["role_tag"]]], "content": m[tags["content_tag"]]}
            for m in row[columns["messages"]]
        ]
        assert sharegpt_problem({"messages": messages}) is None
        assert isinstance(row[columns["system"]], str)
        assert isinstance(row[columns["tools"]], str)


@pytest.mark.parametrize("which", ["parquet", "json"])
def test_the_merged_dataset_info_registers_every_job_and_llama_factory_loads_it(
    which: str, request: pytest.FixtureRequest
) -> None:
    out: Path = request.getfixturevalue(f"{which}_out")
    info = orjson.loads((out / "dataset_info.json").read_bytes())
    jobs = orjson.loads((out / "manifest.json").read_bytes())["job_folders"]
    total = 0
    for job, folder in sorted(jobs.items()):
        own = orjson.loads((out / folder / "dataset_info.json").read_bytes())
        for name, entry in own.items():  # each job entry: same name, same shape, path from DIR
            if (out / folder / entry["file_name"]).stat().st_size <= 3:  # `[]`: no record
                assert name not in info
                continue
            stem = entry["file_name"].rsplit(".", 1)[0]
            suffix = ".parquet" if which == "parquet" else ".json"
            file_name = f"{folder}/{stem}{suffix}"
            assert info[name] == dataset_info_entry(file_name), (job, name)
            rows, merged_entry = lf_load(out, name)
            check_sharegpt(rows, merged_entry)
            total += len(rows)
    assert total == sum(lf_count(out, f) for f in jobs.values()) > 0
    if which == "json":
        assert MERGED_CONFIG not in info  # merged JSON needs features datasets 4.x cannot read
        return
    rows, entry = lf_load(out, MERGED_CONFIG)
    assert entry["script_url"] == "." and entry["subset"] == MERGED_LF_CONFIG
    check_sharegpt(rows, entry)
    assert len(rows) == total


# --- the body ---------------------------------------------------------------------------------


def table(text: str, heading: str) -> list[list[str]]:
    """The rows of the first table under `## heading` (header and rule left out)."""
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = [line for line in section.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line[1:-1].split(" | ")] for line in found[2:]]


def test_the_body_counts_every_job_and_every_written_trial(parquet_out: Path) -> None:
    text = (parquet_out / "README.md").read_text(encoding="utf-8")
    rows = {row[0]: row for row in table(text, "Jobs")}
    assert sorted(rows) == folders(parquet_out)
    written = 0
    for folder, row in rows.items():
        manifest = orjson.loads((parquet_out / folder / "manifest.json").read_bytes())
        a, c = manifest["accounting"], manifest["counts"]
        expected = [a["in"], a["written"], a["rejected"], a["dead_lettered"]]
        assert [int(v) for v in row[2:6]] == expected
        assert [int(v) for v in row[6:8]] == [c["records.main"], c.get("records.subagent", 0)]
        written += a["written"]
    bins = table(text, "Reward and score distributions")
    rewards = sum(int(row[1]) for row in bins if row[0] != "mean")
    assert rewards == written  # one reward (or none) per written trial
    stats = orjson.loads((parquet_out / "lf.stats.json").read_bytes())
    composite = sum(int(row[2]) for row in bins if row[0] != "mean")
    assert composite == stats["count"]
    assert "## Scoring\n" in text and "tqs-v2" in text
    assert "| --instance-status | all |" in text and "| --parquet | on |" in text


def test_names_from_the_inputs_stay_inside_their_cells() -> None:
    manifest = {"accounting": {"in": 1, "written": 1}, "counts": {"records.main": 1}}
    job = JobData("evil|job\n| TOTAL | 999 |", "evil_job~12345678", manifest, {})
    stats = {"by_model": {"<script>x</script>|m": {"count": 1, "mean_composite": 0.5}}}
    inputs = CardInputs({"accounting": {"in": 1}}, [job], stats, parquet=False)
    body = card_body(inputs, card_metadata(inputs))
    assert "\n| TOTAL" not in body and "<script>" not in body
    assert "&lt;script&gt;x&lt;/script&gt;\\|m" in body
    assert len(table(body, "Jobs")) == 1


def test_reward_bins_close_the_last_bin_and_keep_the_rest_apart() -> None:
    bins = reward_bins([1.0, 0.95, 0.1, 0.09, None, -1.0, 2.0, 0.0])
    assert bins["0.9-1.0"] == 2 and bins["0.1-0.2"] == 1 and bins["0.0-0.1"] == 2
    assert (bins["none"], bins["below 0"], bins["above 1"]) == (1, 1, 1)


def test_config_names_never_take_a_merged_name() -> None:
    names = config_names(["a", "all", "job-all", "ALL-LF"])
    assert names == {"a": "a", "all": "job-job-all", "job-all": "job-all", "ALL-LF": "job-ALL-LF"}


def test_features_yaml_matches_datasets_own_yaml_form() -> None:
    for kind in ("im", "lf"):
        own = datasets.DatasetInfo(
            features=datasets.Features.from_arrow_schema(arrow_schema(kind))
        )._to_yaml_dict()["features"]
        assert features_yaml(arrow_schema(kind)) == own


def test_a_merged_dataset_info_name_never_replaces_a_job() -> None:
    manifest = {"counts": {}}
    files = {"lf": {"train": ["lf.parquet"]}, "im": {"train": ["im.parquet"]}}
    jobs = [JobData("all", "job-all", manifest, files), JobData("b", "b", manifest, files)]
    info = merged_dataset_info(CardInputs({}, jobs, {}, parquet=True))
    assert info["all"]["file_name"] == "job-all/lf.parquet"
    assert info["all-all"]["script_url"] == "."


def test_a_job_cannot_take_the_cards_names() -> None:
    for name in ("README.md", "readme.md", "dataset_info.json"):
        assert not is_safe_job_name(name)


def test_a_license_that_is_not_a_hub_identifier_is_refused(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(corpus, tmp_path / "out", "--license", "Apache 2.0") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--license" in err and "apache-2.0" in err
    assert not (tmp_path / "out" / "README.md").exists()


def test_an_incremental_run_keeps_every_job_on_the_card(corpus: Path, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    shutil.copytree(corpus / COMPOSED, jobs / COMPOSED)
    out = tmp_path / "out"
    assert run(jobs, out, "--skip-unchanged") == 0
    synth = sorted(p for p in corpus.iterdir() if p.name != COMPOSED)[0]
    shutil.copytree(synth, jobs / synth.name)
    assert run(jobs, out, "--skip-unchanged") == 0
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert manifest["kept_jobs"] == [COMPOSED]
    names = datasets.get_dataset_config_names(str(out))
    assert names == [MERGED_CONFIG, MERGED_LF_CONFIG, COMPOSED, synth.name]
    for folder in (COMPOSED, synth.name):  # a job's one JSON file loads as it is
        ids = loaded_ids(datasets.load_dataset(str(out), folder, split="train"))
        assert ids == im_ids(out, folder) and ids
    info = orjson.loads((out / "dataset_info.json").read_bytes())
    assert sorted(info) == [COMPOSED, synth.name]
    assert info[COMPOSED]["file_name"] == f"{COMPOSED}/lf.json"
    assert {"README.md", "dataset_info.json"} <= set(manifest["files"])
    full = tmp_path / "full"  # the same jobs curated at once: the same card, byte for byte
    assert run(jobs, full, "--skip-unchanged") == 0
    for name in ("README.md", "dataset_info.json"):
        assert (full / name).read_bytes() == (out / name).read_bytes()


def test_files_and_jobs_with_no_record_get_no_config_and_no_entry() -> None:
    files = {
        "im-00000-of-00002.jsonl": {"bytes": 900},
        "im-00001-of-00002.jsonl": {"bytes": 0},
        "lf-00000-of-00002.json": {"bytes": 700},
        "lf-00001-of-00002.json": {"bytes": 3},
        **{f"{k}-0000{i}-of-00002.parquet": {"bytes": 400} for k in ("im", "lf") for i in (0, 1)},
        "lf.stats.json": {"bytes": 50},
    }
    chosen = default_files(files, parquet=True)
    assert chosen == {
        "im": {"train": ["im-00000-of-00002.parquet"]},
        "lf": {"train": ["lf-00000-of-00002.parquet"]},
    }
    none = {"im": {"train": []}, "lf": {"train": []}}
    manifest = {"counts": {"records.main": 2}, "accounting": {"in": 3, "written": 2}}
    empty = {"counts": {}, "accounting": {"in": 1, "rejected": 1}}
    jobs = [JobData("a", "a", manifest, chosen), JobData("idle", "idle", empty, none)]
    inputs = CardInputs({}, jobs, {}, parquet=True)
    meta = card_metadata(inputs)
    assert [c["config_name"] for c in meta["configs"]] == ["all", "all-lf", "a"]
    assert sorted(merged_dataset_info(inputs)) == ["a_00000", "all"]
    assert [row[:2] for row in table(card_body(inputs, meta), "Jobs")] == [
        ["a", "a"],
        ["—", "idle"],
    ]
    assert "configs" not in card_metadata(CardInputs({}, jobs[1:], {}, parquet=True))


def test_a_validation_split_is_a_split_of_every_config_and_a_val_entry(
    corpus: Path, tmp_path: Path
) -> None:
    """`--val-fraction`: the card's configs get a `validation` split (the `*.val.*` files),
    the merged dataset_info.json a `<job>_val` entry, as each job's own file has."""
    out = tmp_path / "out"
    assert run(corpus, out, "--parquet", "--val-fraction", "0.5", "--split-seed", "3") == 0
    for folder in folders(out):
        loaded = datasets.load_dataset(str(out), folder)
        val = out / folder / "im.val.jsonl"
        assert len(loaded["train"]) == len(lines(out / folder / "im.jsonl"))
        if lines(val):
            assert len(loaded["validation"]) == len(lines(val))
    merged = datasets.load_dataset(str(out), MERGED_LF_CONFIG)
    assert set(merged) == {"train", "validation"}
    info = orjson.loads((out / "dataset_info.json").read_bytes())
    assert {name for name in info if name.endswith("_val")} >= {"all_val"}
