"""The one validated options object `trajcurate run` builds its pipeline from.

Values come from a YAML file (`--config`) and from flags; a flag given on the command line
wins over the file. Anything the parser does not know is passed to Beam untouched
(`--runner`, `--direct_num_workers`, `--project`, ...).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from scorers.tqs_v2 import SCORE_KEYS
from transforms.readers.registry import FORMATS
from transforms.reward_gate import STATUSES


class ConfigError(ValueError):
    """An option value that cannot work; the message names the option."""


@dataclass(frozen=True)
class RunConfig:
    inputs: tuple[str, ...]
    output: str
    instance_status: str = "resolved"
    reward_key: str = "reward"
    reward_threshold: float = 1.0
    min_score: float | None = None
    score_key: str = "composite_score"
    num_shards: int = 0
    skip_unchanged: bool = False
    input_format: str | None = None
    tokenizer: str | None = None
    chat_template_tokenizer: str | None = None
    progress: bool = True
    beam_args: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.inputs:
            raise ConfigError("--input: give at least one path or glob")
        if not self.output:
            raise ConfigError("--output: give the output folder")
        if self.instance_status not in STATUSES:
            raise ConfigError(f"--instance-status: one of {', '.join(STATUSES)}")
        if self.num_shards < 0:
            raise ConfigError("--num-shards: 0 (one file per output) or more")
        if self.score_key not in SCORE_KEYS or self.score_key in ("scaffold",):
            raise ConfigError("--score-key: a numeric key of _score, e.g. composite_score")
        if self.min_score is not None and not 0.0 <= self.min_score <= 1.0:
            raise ConfigError("--min-score: a number from 0 to 1")
        if self.input_format is not None and self.input_format not in FORMATS:
            raise ConfigError(f"--format: one of {', '.join(FORMATS)}")

    def public(self) -> dict[str, Any]:
        """The options as written to the manifest."""
        values = asdict(self)
        values["inputs"] = list(self.inputs)
        values["beam_args"] = list(self.beam_args)
        return values


_FLAG_TYPES: dict[str, Any] = {
    "instance_status": str,
    "reward_key": str,
    "reward_threshold": float,
    "min_score": float,
    "score_key": str,
    "num_shards": int,
    "input_format": str,
    "tokenizer": str,
    "chat_template_tokenizer": str,
}


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags default to None so that a YAML value is only overridden by a flag given."""
    parser.add_argument(
        "--input",
        dest="inputs",
        action="append",
        metavar="PATH_OR_GLOB",
        help="a Harbor jobs folder, job, trial, file or glob (repeatable)",
    )
    parser.add_argument("--output", metavar="DIR", help="output folder (DIR/<job>/...)")
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE.yaml",
        help="options as YAML keys (e.g. min_score: 0.6); flags win",
    )
    parser.add_argument(
        "--instance-status",
        choices=STATUSES,
        help="which trials to keep by verifier reward (default: resolved)",
    )
    parser.add_argument("--reward-key", help="reward key the gate reads (default: reward)")
    parser.add_argument(
        "--reward-threshold", type=float, help="resolved means reward >= this (default: 1.0)"
    )
    parser.add_argument(
        "--min-score",
        type=float,
        help="keep a bundle only if its best main-agent score reaches this",
    )
    parser.add_argument(
        "--score-key", help="_score key the filter reads (default: composite_score)"
    )
    parser.add_argument(
        "--num-shards",
        type=int,
        help="im/lf files per job: 0 = one im.jsonl and one lf.json (default)",
    )
    parser.add_argument(
        "--format",
        dest="input_format",
        choices=FORMATS,
        help="read every input as this format instead of detecting it",
    )
    parser.add_argument("--tokenizer", metavar="PATH", help="local tokenizer for token stats")
    parser.add_argument(
        "--chat-template-tokenizer",
        metavar="PATH",
        help="render LF records through this local tokenizer's chat template",
    )
    parser.add_argument(
        "--skip-unchanged",
        action="store_true",
        default=None,
        help="do nothing when inputs, options and scorer are unchanged",
    )
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        default=None,
        help="no progress line on stderr",
    )


def load_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"--config: cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config: {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"--config: {path} must hold a mapping of option: value")
    known = {f.name for f in fields(RunConfig)}
    normalised = {str(k).replace("-", "_"): v for k, v in data.items()}
    normalised = {("inputs" if k == "input" else k): v for k, v in normalised.items()}
    unknown = sorted(set(normalised) - known)
    if unknown:
        raise ConfigError(f"--config: unknown option(s) {', '.join(unknown)} in {path}")
    return normalised


def config_from_args(args: argparse.Namespace, beam_args: list[str]) -> RunConfig:
    values: dict[str, Any] = load_yaml(args.config) if args.config else {}
    if isinstance(values.get("inputs"), str):
        values["inputs"] = [values["inputs"]]
    for name in ("inputs", "output", "skip_unchanged", "progress", *_FLAG_TYPES):
        given = getattr(args, name, None)
        if given is not None:
            values[name] = given
    for name, kind in _FLAG_TYPES.items():
        if values.get(name) is not None:
            try:
                values[name] = kind(values[name])
            except (TypeError, ValueError):
                raise ConfigError(f"--{name.replace('_', '-')}: not a {kind.__name__}") from None
    values["inputs"] = tuple(str(i) for i in values.get("inputs") or ())
    values["output"] = str(values.get("output") or "")
    values["beam_args"] = tuple(beam_args) + tuple(values.get("beam_args") or ())
    return RunConfig(**values)
