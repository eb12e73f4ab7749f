"""A run's dataset card (`README.md`) and merged `dataset_info.json`: pure builders, no Beam.

What a user publishes or trains on is the run folder as a whole, so both files sit beside
the job folders and name files relative to it:

- `README.md` opens with the Hugging Face dataset-card YAML: `configs` (`all`: the IM
  records of every job, the default; `all-lf`: every job's LF examples; one config per job
  folder that wrote a record, with its IM records), each with its `data_files` by split
  (the Parquet files after `--parquet`, else the JSON ones; never a file of no record),
  `license`, `pretty_name`, `task_categories`, `tags`, `size_categories`, and, for
  Parquet, `dataset_info`: the merged configs' features, from the one Arrow schema the
  files are written with (no split sizes: `datasets` would then require byte counts of its
  own Arrow form, which only it can compute). `datasets.load_dataset(DIR, name)` and the
  Hub read it as it is. The body (`pipelines/card_body.py`) says where the data came from
  and what was done to it.
- `dataset_info.json` registers every job for LLaMA-Factory (`dataset_dir: DIR`): one entry
  per job (per shard) that holds a record, the entry shape of the job's own file with
  `file_name` relative to DIR (the LF Parquet file when there is one: it loads with any
  `datasets` release), and, after `--parquet`, `all`: the merged set, loaded through this
  card's `all-lf` config (LLaMA-Factory's `script_url` is a folder handed to
  `datasets.load_dataset`).

JSON configs carry no features: the only way to type a JSON object column in a card is the
`json` dtype, which `datasets` 4.x cannot read, and that would break the whole card there.

Splits: `JobData.files` maps each kind to its splits' files, `{"im": {"train": [...]}}` by
default (`default_files`); a builder of more splits passes more keys and every config,
split count and LLaMA-Factory entry follows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from pipelines.chain_options import ConfigError, Option
from transforms.sinks.lf import dataset_info_entry, rendered_dataset_info_entry
from transforms.sinks.split import TRAIN, VAL_TAG, VALIDATION

__all__ = [
    "CARD",
    "CARD_OPTIONS",
    "DATASET_INFO",
    "MERGED_CONFIG",
    "MERGED_LF_CONFIG",
    "CardInputs",
    "JobData",
    "card_data_files",
    "card_metadata",
    "card_text",
    "config_names",
    "default_files",
    "features_yaml",
    "front_matter",
    "has_records",
    "merged_dataset_info",
]

CARD = "README.md"
DATASET_INFO = "dataset_info.json"
DEFAULT_LICENSE = "unknown"
MERGED_CONFIG = "all"
MERGED_LF_CONFIG = "all-lf"
KINDS = ("im", "lf")
# A Hub licence identifier (the Hub's list: `unknown`, `other`, `apache-2.0`, `cc-by-4.0`, ...).
_LICENSE = re.compile(r"[a-z0-9][a-z0-9.+-]*")
_SUFFIX = {
    ("im", False): "jsonl",
    ("lf", False): "json",
    ("im", True): "parquet",
    ("lf", True): "parquet",
}
# (kind, parquet) -> split -> the pattern of its files (`--val-fraction`: `lf.val.json` ...)
_DATA_FILE = {
    key: {
        split: re.compile(rf"{key[0]}{tag}(-\d{{5}}-of-\d{{5}})?\.{suffix}")
        for split, tag in ((TRAIN, ""), (VALIDATION, r"\.val"))
    }
    for key, suffix in _SUFFIX.items()
}
_SHARD = re.compile(r"-(\d{5})-of-\d{5}\.[a-z]+$")
_EMPTY_BYTES = {"im": 0, "lf": len(b"[]\n")}  # what a job's writer leaves in a file of no record
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"))


@dataclass(frozen=True)
class LicenseOption(Option):
    """`--license`: a Hub licence identifier, lower case (`other` needs a LICENSE file)."""

    def check(self, value: Any) -> Any:
        value = super().check(value)
        if value is not None and not _LICENSE.fullmatch(value):
            raise ConfigError(
                f"{self.flag}: a Hugging Face licence identifier such as apache-2.0, "
                f"cc-by-4.0, other or unknown, not {value!r}"
            )
        return value


CARD_OPTIONS = (
    LicenseOption(
        "license",
        str,
        DEFAULT_LICENSE,
        "the licence the dataset card declares (a Hub identifier: apache-2.0, cc-by-4.0, "
        "other, ...); the data's licence follows from its sources, so the default says unknown",
        metavar="ID",
    ),
    Option("pretty_name", str, None, "the dataset card's title", metavar="TEXT"),
)


@dataclass(frozen=True)
class JobData:
    """One job folder as the card sees it: its manifest, its data files by kind and split
    (names inside the folder), and the reward of every trial it wrote (None: no reward)."""

    job: str
    folder: str
    manifest: Mapping[str, Any]
    files: Mapping[str, Mapping[str, Sequence[str]]]
    rewards: Sequence[float | None] = ()


@dataclass(frozen=True)
class CardInputs:
    """Everything the card is made of: the run manifest, its jobs, the run's stats."""

    run: Mapping[str, Any]
    jobs: Sequence[JobData]
    stats: Mapping[str, Any]
    parquet: bool
    license: str = DEFAULT_LICENSE
    pretty_name: str | None = None
    rendered: bool = False  # LF rendered by a chat template (`--chat-template-tokenizer`)
    arrow_features: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)


def default_files(
    files: Mapping[str, Mapping[str, Any]], parquet: bool
) -> dict[str, dict[str, list[str]]]:
    """A job's data files by kind and split (`validation`: the `--val-fraction` files, when
    a record went there): its IM and LF files (shards too), the
    Parquet ones when `parquet`, else the JSON ones; `files` is the job manifest's (name ->
    `{"bytes", ...}`). A file with no record is left out (`datasets` and LLaMA-Factory refuse
    a split with no row): its JSON twin, from which any Parquet file is made, is empty."""
    names = sorted(files)
    chosen: dict[str, dict[str, list[str]]] = {}
    for kind in KINDS:
        chosen[kind] = {}
        for split, pattern in _DATA_FILE[(kind, parquet)].items():
            kept = [n for n in names if pattern.fullmatch(n) and not _empty(files, kind, n)]
            if kept or split == TRAIN:
                chosen[kind][split] = kept
    return chosen


def _empty(files: Mapping[str, Mapping[str, Any]], kind: str, name: str) -> bool:
    twin = name.rsplit(".", 1)[0] + (".jsonl" if kind == "im" else ".json")
    size = (files.get(twin) or {}).get("bytes")
    return isinstance(size, int) and size <= _EMPTY_BYTES[kind]


def config_names(folders: Sequence[str]) -> dict[str, str]:
    """Each job folder's config name: the folder itself, unless it is a merged config's name
    (in any case); then `job-` + it, as often as needed to be no other config's name."""
    merged = {MERGED_CONFIG, MERGED_LF_CONFIG}
    taken = merged | {folder.lower() for folder in folders}
    names: dict[str, str] = {}
    for folder in folders:
        name = folder
        if name.lower() in merged:
            while name.lower() in taken:
                name = "job-" + name
            taken.add(name.lower())
        names[folder] = name
    return names


def _paths(job: JobData, kind: str) -> dict[str, list[str]]:
    return {
        split: [f"{job.folder}/{name}" for name in names]
        for split, names in job.files.get(kind, {}).items()
    }


def _merged_paths(jobs: Sequence[JobData], kind: str) -> dict[str, list[str]]:
    merged: dict[str, list[str]] = {}
    for job in jobs:
        for split, paths in _paths(job, kind).items():
            merged.setdefault(split, []).extend(paths)
    return merged


def _config(name: str, paths: Mapping[str, list[str]], default: bool = False) -> dict[str, Any]:
    config: dict[str, Any] = {"config_name": name}
    if default:
        config["default"] = True
    splits = [{"split": split, "path": files} for split, files in paths.items() if files]
    config["data_files"] = splits
    return config


def _dataset_info(name: str, features: list[dict[str, Any]]) -> dict[str, Any]:
    return {"config_name": name, "features": features}


def card_metadata(inputs: CardInputs) -> dict[str, Any]:
    """The card's YAML front matter, as a mapping."""
    jobs = sorted(inputs.jobs, key=lambda j: j.folder)
    names = config_names([j.folder for j in jobs])
    merged = {kind: _merged_paths(jobs, kind) for kind in KINDS}
    configs = [
        _config(MERGED_CONFIG, merged["im"], default=True),
        _config(MERGED_LF_CONFIG, merged["lf"]),
        *(_config(names[job.folder], _paths(job, "im")) for job in jobs),
    ]
    # No config without a row: `datasets` refuses it (a job that wrote nothing has none).
    configs = [c for c in configs if c["data_files"]]
    records = _record_count(jobs)
    meta: dict[str, Any] = {
        "pretty_name": inputs.pretty_name or _default_title(len(jobs)),
        "license": inputs.license,
        "task_categories": ["text-generation"],
        "tags": ["trajcurate", "agent-trajectories", "tool-use", "sft", "code"],
        "size_categories": [_size_category(records)],
    }
    if configs:
        meta["configs"] = configs
    infos = []
    if inputs.parquet:  # the merged configs' features (a job's config has the same as `all`)
        declared = {c["config_name"] for c in configs}
        for name, kind in ((MERGED_CONFIG, "im"), (MERGED_LF_CONFIG, "lf")):
            if name in declared and kind in inputs.arrow_features:
                infos.append(_dataset_info(name, inputs.arrow_features[kind]))
    if infos:
        meta["dataset_info"] = infos
    return meta


def has_records(job: JobData) -> bool:
    """Whether the job has a data file with an IM record in it (and so a config)."""
    return any(job.files.get("im", {}).values())


def _record_count(jobs: Sequence[JobData]) -> int:
    counts = [job.manifest.get("counts") or {} for job in jobs]
    return sum(int(c.get("records.main", 0)) + int(c.get("records.subagent", 0)) for c in counts)


def _default_title(jobs: int) -> str:
    return f"Coding-agent trajectories for SFT ({jobs} job{'s' if jobs != 1 else ''})"


def _size_category(records: int) -> str:
    for bound, name in _SIZES:
        if records < bound:
            return name
    return "100K<n<1M" if records < 1_000_000 else "1M<n<10M"


def front_matter(meta: Mapping[str, Any]) -> str:
    """The `---` block of a card from its metadata, keys in the order given."""
    text = yaml.safe_dump(dict(meta), sort_keys=False, allow_unicode=True, width=100)
    return f"---\n{text}---\n"


def card_text(inputs: CardInputs) -> str:
    """The whole `README.md`: front matter, then the body."""
    from pipelines.card_body import card_body

    meta = card_metadata(inputs)
    return front_matter(meta) + "\n" + card_body(inputs, meta)


def _lf_entry(inputs: CardInputs, file_name: str) -> dict[str, Any]:
    if inputs.rendered:
        return rendered_dataset_info_entry(file_name)
    return dataset_info_entry(file_name)


def merged_dataset_info(inputs: CardInputs) -> dict[str, dict[str, Any]]:
    """LLaMA-Factory's `dataset_info.json` for the run folder: every job's LF files that hold
    a record (named as in the job's own file: `<job>`, or `<job>_00000`, ... after the shard;
    `<job>_val` for the validation split, as the job's own file names it), and `all` (after
    `--parquet`) for every job at once."""
    info: dict[str, dict[str, Any]] = {}
    for job in sorted(inputs.jobs, key=lambda j: j.folder):
        for split, paths in _paths(job, "lf").items():
            name = job.job if split == TRAIN else f"{job.job}_{_tag(split)}"
            for path in paths:
                shard = _SHARD.search(path)
                info[f"{name}_{shard[1]}" if shard else name] = _lf_entry(inputs, path)
    if inputs.parquet:
        merged = MERGED_CONFIG
        while merged in info:
            merged = "all-" + merged
        for split in _merged_paths(inputs.jobs, "lf"):
            entry = _lf_entry(inputs, "")
            entry.pop("file_name")
            name = merged if split == TRAIN else f"{merged}_{_tag(split)}"
            info[name] = {"script_url": ".", "subset": MERGED_LF_CONFIG, "split": split, **entry}
    return info


def features_yaml(schema: Any) -> list[dict[str, Any]]:
    """An Arrow schema's fields in the card's `features` form (`datasets`' YAML)."""
    return [{"name": f.name, **_feature(f.type)} for f in schema]


def _feature(arrow_type: Any) -> dict[str, Any]:
    import pyarrow as pa

    if pa.types.is_struct(arrow_type):
        return {"struct": features_yaml(arrow_type)}
    if pa.types.is_list(arrow_type):
        item = _feature(arrow_type.value_type)
        return {"list": item.get("dtype") or item.get("struct") or item}
    return {"dtype": _dtype(arrow_type)}


def _dtype(arrow_type: Any) -> str:
    import pyarrow as pa

    if pa.types.is_string(arrow_type):
        return "string"
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_date32(arrow_type):
        return "date32"
    if pa.types.is_float64(arrow_type):
        return "float64"  # Arrow calls it `double`
    return str(arrow_type)  # int64


def card_data_files(text: str) -> list[str]:
    """Every data file a card's configs name (paths relative to its folder), in order."""
    meta = _parse_front_matter(text)
    paths: list[str] = []
    for config in meta.get("configs") or []:
        for entry in config.get("data_files") or []:
            value = entry.get("path") if isinstance(entry, dict) else entry
            for path in [value] if isinstance(value, str) else value or []:
                if path not in paths:
                    paths.append(path)
    return paths


def _parse_front_matter(text: str) -> dict[str, Any]:
    if not text.startswith("---\n"):
        return {}
    block, _, _ = text[4:].partition("\n---\n")
    meta = yaml.safe_load(block)
    return meta if isinstance(meta, dict) else {}


def _tag(split: str) -> str:
    return VAL_TAG if split == VALIDATION else split
