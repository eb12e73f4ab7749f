"""The diagnosis options, declared once (see `chain_options.Option`), for `diagnose`, `gate`,
`compare` and `run --diagnose`.

`run` takes two of them: `--diagnose` (a yes/no flag: in `pipelines/config.py`'s
`RUN_OPTIONS` it is `FlagOption("diagnose", bool, False, DIAGNOSE_HELP)`) and
`--diagnose-profile FILE` (`DIAGNOSE_PROFILE` below). `diagnose_settings` turns the option
values into the chain step's settings, loading the profile file once, so a bad file fails at
the command line (ConfigError, exit 2) before any work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipelines.chain_options import ConfigError, Option
from scorers.diagnose import ProfileError, load_profiles
from transforms.diagnose_step import DiagnoseSettings

DIAGNOSE_HELP = (
    "diagnose every record (detectors, trajectory_score, task_completion_score) into "
    "unique_info._diagnosis"
)
DIAGNOSE_PROFILE = Option(
    "diagnose_profile",
    str,
    None,
    "severity profiles per source format (YAML or JSON) over the built-in ones",
    metavar="FILE",
)
MIN_TRAJECTORY_SCORE = Option(
    "min_trajectory_score",
    float,
    None,
    "fail a run whose trajectory_score is below this",
    low=0.0,
    high=1.0,
    metavar="X",
)
BOOTSTRAP = Option(
    "bootstrap",
    int,
    2000,
    "bootstrap resamples for the 95 percent intervals",
    low=100,
    high=100_000,
)
SEED = Option(
    "seed",
    int,
    0,
    "seed of the bootstrap (fixed: the same runs give the same intervals)",
    low=0,
    high=2**32 - 1,
)
TOP_DETECTORS = Option(
    "top_detectors", int, 5, "detectors listed whose rates changed most", low=1, high=100
)


def diagnose_settings(values: Mapping[str, Any]) -> DiagnoseSettings:
    """The chain step's settings from option values; ConfigError names a bad profile file."""
    path = values.get("diagnose_profile")
    try:
        profiles = load_profiles(path)
    except ProfileError as exc:
        raise ConfigError(f"{DIAGNOSE_PROFILE.flag}: {exc}") from None
    return DiagnoseSettings(profiles=profiles, scaffold=values.get("scaffold"))
