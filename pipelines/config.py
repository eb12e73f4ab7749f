"""The one validated options object `trajcurate run` builds its pipeline from.

Values come from a YAML file (`--config`) and from flags; a flag given on the command line
wins over the file. Anything the parser does not know is passed to Beam untouched
(`--runner`, `--direct_num_workers`, `--project`, ...).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.chain_options import (
    CHAIN_OPTIONS,
    CURATION_OPTIONS,
    ConfigError,
    add_chain_arguments,
    chain_settings,
    check_chain_values,
    read_limits,
)
from scorers.tqs_v2 import SCORE_KEYS
from transforms.chain import ChainSettings
from transforms.readers.confined import ReadLimits
from transforms.redact import mask_url_credentials

if TYPE_CHECKING:
    from transforms.llm.judging import JudgeSettings

__all__ = ["ConfigError", "RunConfig", "add_run_arguments", "config_from_args", "load_yaml"]

JUDGE_KINDS = ("fixed", "dynamic", "both")
RUN_CHAIN_OPTIONS = (*CURATION_OPTIONS, "input_format")


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
    redact: str = "mask"
    max_file_mb: float = CHAIN_OPTIONS["max_file_mb"].default
    tokenizer: str | None = None
    chat_template_tokenizer: str | None = None
    progress: bool = True
    llm_judge: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_base_url: str | None = None
    llm_concurrency: int = 4
    llm_rpm: float | None = None
    llm_tpm: float | None = None
    llm_workers: int = 1
    llm_max_retries: int = 5
    llm_timeout: float = 120.0
    llm_cache: str | None = None
    llm_batch_size: int = 16
    llm_question_field: str | None = None
    llm_envoy: str | None = None
    llm_envoy_domain: str = "trajcurate"
    llm_dry_run: bool = False
    llm_price_in: float = 0.0
    llm_price_out: float = 0.0
    beam_args: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.inputs:
            raise ConfigError("--input: give at least one path or glob")
        if not self.output:
            raise ConfigError("--output: give the output folder")
        check_chain_values({name: getattr(self, name) for name in RUN_CHAIN_OPTIONS})
        if self.num_shards < 0:
            raise ConfigError("--num-shards: 0 (one file per output) or more")
        numeric = self.score_key in SCORE_KEYS and self.score_key != "scaffold"
        if not numeric and not self.score_key.startswith("llm_"):
            raise ConfigError(
                "--score-key: a numeric key of _score (e.g. composite_score) or of the LLM "
                "judge's output (e.g. llm_composite_score, llm_checklist_csr)"
            )
        if self.llm_judge is not None and self.llm_judge not in JUDGE_KINDS:
            raise ConfigError(f"--llm-judge: one of {', '.join(JUDGE_KINDS)}")
        if self.llm_concurrency < 1 or self.llm_workers < 1 or self.llm_batch_size < 1:
            raise ConfigError("--llm-concurrency, --llm-workers, --llm-batch-size: at least 1")

    def judge_settings(self) -> JudgeSettings:
        """The LLM judge's settings (imported lazily: judging is optional)."""
        from transforms.llm.judging import JudgeSettings

        return JudgeSettings(
            kind=self.llm_judge or "fixed",
            model=self.llm_model,
            base_url=self.llm_base_url,
            concurrency=self.llm_concurrency,
            rpm=self.llm_rpm,
            tpm=self.llm_tpm,
            workers=self.llm_workers,
            max_retries=self.llm_max_retries,
            timeout_s=self.llm_timeout,
            cache_dir=self.llm_cache,
            question_field=self.llm_question_field,
            envoy_address=self.llm_envoy,
            envoy_domain=self.llm_envoy_domain,
            price_in=self.llm_price_in,
            price_out=self.llm_price_out,
        )

    def chain_settings(self) -> ChainSettings:
        return chain_settings(asdict(self))

    def read_limits(self) -> ReadLimits:
        return read_limits(asdict(self))

    def public(self) -> dict[str, Any]:
        """The options as written to the manifest: any URL's credentials masked, whichever
        option it came in (`--llm-base-url`, `--input`, `--llm-cache`, a Beam argument)."""
        values: dict[str, Any] = {}
        for name, value in asdict(self).items():
            if isinstance(value, str):
                value = mask_url_credentials(value)
            elif isinstance(value, tuple):
                value = [mask_url_credentials(v) if isinstance(v, str) else v for v in value]
            values[name] = value
        return values


_FLAG_TYPES: dict[str, Any] = {
    "llm_judge": str,
    "llm_model": str,
    "llm_base_url": str,
    "llm_concurrency": int,
    "llm_rpm": float,
    "llm_tpm": float,
    "llm_workers": int,
    "llm_max_retries": int,
    "llm_timeout": float,
    "llm_cache": str,
    "llm_batch_size": int,
    "llm_question_field": str,
    "llm_envoy": str,
    "llm_envoy_domain": str,
    "llm_price_in": float,
    "llm_price_out": float,
    "num_shards": int,
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
    add_chain_arguments(parser, RUN_CHAIN_OPTIONS)
    parser.add_argument(
        "--num-shards",
        type=int,
        help="im/lf files per job: 0 = one im.jsonl and one lf.json (default)",
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
    _add_llm_arguments(parser)
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        default=None,
        help="no progress line on stderr",
    )


def _add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    llm = parser.add_argument_group("LLM judges (optional; main-agent records only)")
    llm.add_argument(
        "--llm-judge",
        choices=JUDGE_KINDS,
        help="judge with the fixed checklist, the dynamic one, or both",
    )
    llm.add_argument("--llm-model", help="model name at the endpoint (default: gpt-4o-mini)")
    llm.add_argument(
        "--llm-base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else OpenAI)"
    )
    llm.add_argument("--llm-concurrency", type=int, help="requests in flight per worker (4)")
    llm.add_argument("--llm-rpm", type=float, help="requests per minute for the whole job")
    llm.add_argument("--llm-tpm", type=float, help="tokens per minute for the whole job")
    llm.add_argument(
        "--llm-workers",
        type=int,
        help="workers sharing the budget (each gets rpm/tpm divided by this; 1)",
    )
    llm.add_argument("--llm-max-retries", type=int, help="retries per request (5)")
    llm.add_argument("--llm-timeout", type=float, help="seconds per request (120)")
    llm.add_argument(
        "--llm-cache",
        metavar="DIR",
        help="answer cache (local or Beam filesystem path): never pay twice",
    )
    llm.add_argument("--llm-batch-size", type=int, help="bundles per judging batch (16)")
    llm.add_argument(
        "--llm-envoy",
        metavar="HOST:PORT",
        help="Envoy rate-limit service holding one budget for all workers "
        "(instead of --llm-rpm/--llm-tpm divided by --llm-workers)",
    )
    llm.add_argument("--llm-envoy-domain", help="its rate-limit domain (trajcurate)")
    llm.add_argument(
        "--llm-question-field",
        help="_instance_metadata / unique_info field holding the task statement",
    )
    llm.add_argument(
        "--llm-dry-run",
        action="store_true",
        default=None,
        help="count the calls and tokens a run would make, and the cost; no call",
    )
    llm.add_argument("--llm-price-in", type=float, help="USD per million input tokens")
    llm.add_argument("--llm-price-out", type=float, help="USD per million output tokens")


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
    flags = ("inputs", "output", "skip_unchanged", "progress", "llm_dry_run", *_FLAG_TYPES)
    for name in (*flags, *RUN_CHAIN_OPTIONS):
        given = getattr(args, name, None)
        if given is not None:
            values[name] = given
    for name, kind in _FLAG_TYPES.items():
        if values.get(name) is not None:
            try:
                values[name] = kind(values[name])
            except (TypeError, ValueError):
                raise ConfigError(f"--{name.replace('_', '-')}: not a {kind.__name__}") from None
    for name in RUN_CHAIN_OPTIONS:
        values[name] = CHAIN_OPTIONS[name].check(values.get(name))
        if values[name] is None:
            del values[name]
    values["inputs"] = tuple(str(i) for i in values.get("inputs") or ())
    values["output"] = str(values.get("output") or "")
    values["beam_args"] = tuple(beam_args) + tuple(values.get("beam_args") or ())
    return RunConfig(**values)
