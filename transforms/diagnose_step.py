"""The diagnosis as a step of the curation chain: `diagnose_bundle(bundle, settings)`.

A transform in the sense of `transforms/chain.py` (a bundle in, the bundle out): it sets
`meta_info.unique_info._diagnosis` on every record of the bundle, the main record judged with
the bundle's subagent records (`scorers.diagnose`). It reads no file: the profiles are
loaded once, when the options are checked (`pipelines/diagnose_options.py`), and travel in
the settings, plain values that pickle to Beam workers. `trajcurate diagnose` runs it after
`score` in its plain loop; for `run --diagnose` the stage is

    Stage("diagnose", transform=partial(diagnose_bundle, settings=DiagnoseSettings(...)))

placed after `score` (the diagnosis reads the text as the agent saw it, as TQS V2 does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scorers.diagnose import ProfileSet, build_profiles, diagnose_records

DIAGNOSE_STAGE = "diagnose"
DIAGNOSIS_KEY = "_diagnosis"


@dataclass(frozen=True)
class DiagnoseSettings:
    """The profiles in force and the scaffold forced by `--scaffold`, if any."""

    profiles: ProfileSet = field(default_factory=build_profiles)
    scaffold: str | None = None


def diagnose_bundle(bundle: dict[str, Any], settings: DiagnoseSettings) -> dict[str, Any]:
    """Set `_diagnosis` on every record of `bundle` (in place) and return the bundle."""
    records = bundle["records"]
    diagnoses = diagnose_records(records, settings.profiles, settings.scaffold)
    for record, diagnosis in zip(records, diagnoses, strict=True):
        record["meta_info"]["unique_info"][DIAGNOSIS_KEY] = diagnosis
    return bundle


def has_diagnosis(record: dict[str, Any]) -> bool:
    info = record.get("meta_info", {}).get("unique_info", {})
    return isinstance(info, dict) and isinstance(info.get(DIAGNOSIS_KEY), dict)
