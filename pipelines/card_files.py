"""Write the run's dataset card and merged `dataset_info.json` into its staging folder.

Called by `finalize` once every job is published (so kept jobs of an incremental run are
read where they are): the job manifests come from the driver, the rewards of the written
trials from each job's `scores.jsonl`, the run's stats from the staged `lf.stats.json`.
The files are then published with the other run-level files, manifest last.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from pipelines.config import RunConfig
from pipelines.dataset_card import (
    CARD,
    DATASET_INFO,
    KINDS,
    CardInputs,
    JobData,
    card_text,
    default_files,
    features_yaml,
    merged_dataset_info,
)
from transforms.report import SIDECAR
from transforms.sinks import layout
from transforms.sinks.schema import arrow_schema

__all__ = ["card_inputs", "write_card_files"]


def write_card_files(
    config: RunConfig,
    staging: str,
    run: Mapping[str, Any],
    manifests: Mapping[str, Mapping[str, Any]],
) -> list[str]:
    """Stage `README.md` and `dataset_info.json` for the run (`run`: its manifest so far;
    `manifests`: raw job name -> its published manifest); return their names."""
    inputs = card_inputs(config, staging, run, manifests)
    layout.write_bytes(f"{staging}/{CARD}", card_text(inputs).encode("utf-8"))
    info = merged_dataset_info(inputs)
    layout.write_bytes(
        f"{staging}/{DATASET_INFO}",
        orjson.dumps(info, option=orjson.OPT_INDENT_2) + b"\n",
    )
    return [CARD, DATASET_INFO]


def card_inputs(
    config: RunConfig,
    staging: str,
    run: Mapping[str, Any],
    manifests: Mapping[str, Mapping[str, Any]],
) -> CardInputs:
    """What the card is built from, read from the published job folders."""
    jobs = [_job_data(config, job, manifest) for job, manifest in sorted(manifests.items())]
    return CardInputs(
        run=run,
        jobs=jobs,
        stats=_read_json(f"{staging}/lf.stats.json"),
        parquet=config.parquet,
        license=config.license,
        pretty_name=config.pretty_name,
        rendered=bool(config.chat_template_tokenizer),
        arrow_features={kind: features_yaml(arrow_schema(kind)) for kind in KINDS},
    )


def _job_data(config: RunConfig, job: str, manifest: Mapping[str, Any]) -> JobData:
    folder = str(manifest["job_folder"])
    where = f"{config.output.rstrip('/')}/{folder}"
    files = default_files(manifest.get("files") or {}, config.parquet)
    return JobData(
        job=job,
        folder=folder,
        manifest=manifest,
        files=files,
        rewards=list(_written_rewards(f"{where}/{SIDECAR}")),
    )


def _written_rewards(path: str) -> Iterator[float | None]:
    """The reward of every trial a job wrote (`decision: kept` in its sidecar)."""
    if not layout.exists(path):
        return
    with layout.open_read(path) as handle:
        for line in handle:
            if not line.strip():
                continue
            row = orjson.loads(line)
            if row.get("decision") != "kept":
                continue
            reward = row.get("reward")
            number = isinstance(reward, int | float) and not isinstance(reward, bool)
            yield float(reward) if number else None


def _read_json(path: str) -> dict[str, Any]:
    if not layout.exists(path):
        return {}
    value = orjson.loads(layout.read_bytes(path))
    return value if isinstance(value, dict) else {}
