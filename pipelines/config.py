"""The one validated options object `trajcurate run` builds its pipeline from.

Values come from a YAML file (`--config`) and from flags; a flag given on the command line
wins over the file. Anything the parser does not know is passed to Beam untouched
(`--runner`, `--direct_num_workers`, `--project`, ...).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.chain_options import (
    CHAIN_OPTIONS,
    CURATION_OPTIONS,
    ConfigError,
    Option,
    add_chain_arguments,
    chain_settings,
    options_by_name,
    read_limits,
)
from pipelines.dataset_card import CARD_OPTIONS
from pipelines.diagnose_options import DIAGNOSE_HELP, DIAGNOSE_PROFILE, diagnose_settings
from scorers.tqs_v2 import SCORE_KEYS
from transforms.chain import ChainSettings
from transforms.readers.confined import ReadLimits
from transforms.redact import mask_url_credentials
from transforms.selection import DEDUP_MODES, SelectionSettings
from transforms.sinks.exports import FORMAT_CHOICES, formats_of
from transforms.sinks.lf import KEEP_DROP, PARALLEL_CALLS, LfSettings
from transforms.sinks.lf_templates import LF_TEMPLATES, LfTemplateError, template_settings
from transforms.sinks.split import SplitSettings

LF_DEFAULTS = LfSettings()

if TYPE_CHECKING:
    from transforms.llm.judging import JudgeSettings

__all__ = ["ConfigError", "RunConfig", "add_run_arguments", "config_from_args", "load_yaml"]

JUDGE_KINDS = ("fixed", "dynamic", "both")
RUN_CHAIN_OPTIONS = (*CURATION_OPTIONS, "input_format", "read_ahead")


@dataclass(frozen=True)
class FlagOption(Option):
    """A yes/no option: a bare flag on the command line (`--parquet`), true/false in YAML."""

    def check(self, value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        raise ConfigError(f"{self.flag}: true or false, not {value!r}")

    def add_to(self, parser: argparse._ActionsContainer, default: Any) -> None:
        parser.add_argument(
            self.flag, dest=self.name, action="store_true", default=default, help=self.help
        )


# `run`'s own options (the chain's are in chain_options.CHAIN_OPTIONS): one declaration each,
# with type and range, for flags and YAML keys alike.
RUN_OPTIONS = options_by_name(
    FlagOption(
        "parquet",
        bool,
        False,
        "also write im.parquet / lf.parquet per job (per shard) with one explicit Arrow schema",
    ),
    Option(
        "num_shards",
        int,
        0,
        "im/lf files per job: 0 = one im.jsonl and one lf.json",
        low=0,
        high=100_000,
    ),
    Option("tokenizer", str, None, "local tokenizer for token stats", metavar="PATH"),
    Option(
        "chat_template_tokenizer",
        str,
        None,
        "render LF records through this local tokenizer's chat template",
        metavar="PATH",
    ),
    # The LF options. RunConfig leaves them unset (None) until built: one not given takes the
    # --lf-template's value (else the default here); one given must be one the template loads.
    Option(
        "lf_template",
        str,
        None,
        "the LLaMA-Factory template trained with (qwen, qwen3, llama3, deepseek3, mistral, "
        "glm4, gemma3, ...; README): sets the LF options below to what it loads",
        choices=tuple(LF_TEMPLATES),
        metavar="NAME",
    ),
    Option(
        "lf_call_text",
        str,
        LF_DEFAULTS.call_text,
        "text beside tool calls in LF: keep it (inside the tool-call markers; LLaMA-Factory "
        ">= 0.9.4) or drop it (older releases; set by bare-JSON templates such as mistral)",
        choices=KEEP_DROP,
    ),
    Option(
        "lf_tool_call_open",
        str,
        LF_DEFAULTS.tool_call_words[0],
        "the template's opening tool-call marker (LLaMA-Factory tool_call_words)",
        metavar="TEXT",
    ),
    Option(
        "lf_tool_call_close",
        str,
        LF_DEFAULTS.tool_call_words[1],
        "the template's closing tool-call marker",
        metavar="TEXT",
    ),
    Option(
        "lf_reasoning",
        str,
        LF_DEFAULTS.reasoning,
        "IM reasoning_content in LF: keep it inside the thought markers, or drop it",
        choices=KEEP_DROP,
    ),
    Option(
        "lf_thought_open",
        str,
        LF_DEFAULTS.thought_words[0],
        "the template's opening thought marker (LLaMA-Factory thought_words)",
        metavar="TEXT",
    ),
    Option(
        "lf_thought_close",
        str,
        LF_DEFAULTS.thought_words[1],
        "the template's closing thought marker",
        metavar="TEXT",
    ),
    Option(
        "lf_parallel_calls",
        str,
        LF_DEFAULTS.parallel_calls,
        "LF turns with several calls: keep them, split them into one call per turn (each "
        "with its result), or drop their records, for templates that render one call per "
        "turn (glm4's profile splits)",
        choices=PARALLEL_CALLS,
    ),
    Option(
        "messages_format",
        str,
        "none",
        "also write each job's conversations for other trainers: trl (messages.jsonl, "
        "call arguments as objects, parallel calls split into single-call turns), openai "
        "(openai.jsonl, OpenAI chat fine-tuning lines), both, or none",
        choices=FORMAT_CHOICES,
    ),
    Option(
        "dedup",
        str,
        "exact",
        "per job, drop identical trajectories (exact: same normalised messages), also "
        "near-duplicates (near: MinHash, Jaccard >= 0.9), or none (off)",
        choices=DEDUP_MODES,
    ),
    Option(
        "best_of_k",
        int,
        None,
        "per job, keep at most K instances per task, best --score-key first",
        low=1,
        high=1_000_000,
        metavar="K",
    ),
    FlagOption(
        "curriculum",
        bool,
        False,
        "order each job's im/lf easier to harder (task pass rate, then turns) and write the "
        "order key (unique_info._curriculum)",
    ),
    FlagOption(
        "report",
        bool,
        False,
        "after a successful local run, build the static report into OUTPUT/report",
    ),
    FlagOption("diagnose", bool, False, DIAGNOSE_HELP),
    DIAGNOSE_PROFILE,
    *CARD_OPTIONS,  # the run's dataset card: --license, --pretty-name
    # A dataset to publish: a task-grouped validation split, a token cap (README, Split and
    # tokens).
    Option(
        "val_fraction",
        float,
        0.0,
        "share of tasks whose trials go to the validation files (im.val.jsonl, lf.val.json); "
        "0 = no split",
        low=0.0,
        high=0.9,
        metavar="F",
    ),
    Option("split_seed", int, 0, "seed of the task-grouped split", low=0, high=2**31 - 1),
    Option(
        "max_tokens",
        int,
        None,
        "reject a trial any of whose records has more tokens (messages and tool list, by "
        "--tokenizer) than this, instead of letting the trainer truncate it",
        low=1,
        high=10**9,
        metavar="N",
    ),
)
LLM_OPTIONS = options_by_name(
    Option(
        "llm_judge",
        str,
        None,
        "judge with the fixed checklist, the dynamic one, or both",
        choices=JUDGE_KINDS,
    ),
    Option("llm_model", str, "gpt-4o-mini", "model name at the endpoint"),
    Option(
        "llm_base_url",
        str,
        None,
        "OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else OpenAI)",
        metavar="URL",
    ),
    Option("llm_concurrency", int, 4, "requests in flight per worker", low=1, high=1024),
    Option("llm_rpm", float, None, "requests per minute for the whole job", low=0.001),
    Option("llm_tpm", float, None, "tokens per minute for the whole job", low=1),
    Option(
        "llm_workers",
        int,
        1,
        "on a distributed runner, the worker processes sharing the budget (each gets rpm/tpm "
        "divided by this); a local run counts its own (--direct_num_workers)",
        low=1,
        high=100_000,
    ),
    Option(
        "llm_rate_window",
        float,
        60.0,
        "seconds over which --llm-rpm/--llm-tpm are enforced: every window this long gets its "
        "share of the minute's budget (shorter is stricter and smoother)",
        low=1,
        high=60,
    ),
    Option("llm_max_retries", int, 5, "retries per request", low=0, high=100),
    Option("llm_timeout", float, 120.0, "seconds per request", low=0.1, high=86_400),
    Option(
        "llm_cache",
        str,
        None,
        "answer cache (local or Beam filesystem path): never pay twice",
        metavar="DIR",
    ),
    Option("llm_batch_size", int, 16, "bundles per judging batch", low=1, high=100_000),
    Option(
        "llm_envoy",
        str,
        None,
        "Envoy rate-limit service holding one budget for all workers "
        "(instead of --llm-rpm/--llm-tpm divided by --llm-workers)",
        metavar="HOST:PORT",
    ),
    Option("llm_envoy_domain", str, "trajcurate", "its rate-limit domain"),
    Option(
        "llm_question_field",
        str,
        None,
        "_instance_metadata / unique_info field holding the task statement",
    ),
    Option("llm_price_in", float, 0.0, "USD per million input tokens", low=0, high=1e6),
    Option("llm_price_out", float, 0.0, "USD per million output tokens", low=0, high=1e6),
)
_VALUED = {**{n: CHAIN_OPTIONS[n] for n in RUN_CHAIN_OPTIONS}, **RUN_OPTIONS, **LLM_OPTIONS}


_LF_MARKERS = ("lf_tool_call_open", "lf_tool_call_close", "lf_thought_open", "lf_thought_close")
# The flag to name when --lf-template refuses an LfSettings field.
_LF_FLAGS = {
    "template": "--lf-template",
    "call_text": "--lf-call-text",
    "reasoning": "--lf-reasoning",
    "parallel_calls": "--lf-parallel-calls",
    "tool_call_words": "--lf-tool-call-open/--lf-tool-call-close",
    "thought_words": "--lf-thought-open/--lf-thought-close",
}


def _default(name: str) -> Any:
    return _VALUED[name].default


# An LF option's RunConfig default: not given, filled in __post_init__ (_fill_lf_options).
_LF_UNSET: Any = None


@dataclass(frozen=True)
class RunConfig:
    inputs: tuple[str, ...]
    output: str
    instance_status: str = _default("instance_status")
    reward_key: str = _default("reward_key")
    reward_threshold: float = _default("reward_threshold")
    min_score: float | None = _default("min_score")
    score_key: str = _default("score_key")
    num_shards: int = _default("num_shards")
    skip_unchanged: bool = False
    input_format: str | None = _default("input_format")
    redact: str = _default("redact")
    max_file_mb: float = _default("max_file_mb")
    max_trial_files: int = _default("max_trial_files")
    max_trial_mb: float = _default("max_trial_mb")
    max_trial_seconds: float = _default("max_trial_seconds")
    max_record_mb: float = _default("max_record_mb")
    allow_hard_links: bool = _default("allow_hard_links")
    scaffold_hints: bool = _default("scaffold_hints")
    tqs_tools: str = _default("tqs_tools")
    system_prompt: str = _default("system_prompt")
    tokenizer: str | None = _default("tokenizer")
    chat_template_tokenizer: str | None = _default("chat_template_tokenizer")
    lf_template: str | None = _default("lf_template")
    lf_call_text: str = _LF_UNSET
    lf_tool_call_open: str = _LF_UNSET
    lf_tool_call_close: str = _LF_UNSET
    lf_reasoning: str = _LF_UNSET
    lf_thought_open: str = _LF_UNSET
    lf_thought_close: str = _LF_UNSET
    lf_parallel_calls: str = _LF_UNSET
    parquet: bool = _default("parquet")
    messages_format: str = _default("messages_format")
    dedup: str = _default("dedup")
    best_of_k: int | None = _default("best_of_k")
    curriculum: bool = _default("curriculum")
    report: bool = _default("report")
    diagnose: bool = _default("diagnose")
    diagnose_profile: str | None = _default("diagnose_profile")
    read_ahead: str = _default("read_ahead")
    license: str = _default("license")
    pretty_name: str | None = _default("pretty_name")
    val_fraction: float = _default("val_fraction")
    split_seed: int = _default("split_seed")
    max_tokens: int | None = _default("max_tokens")
    progress: bool = True
    llm_judge: str | None = _default("llm_judge")
    llm_model: str = _default("llm_model")
    llm_base_url: str | None = _default("llm_base_url")
    llm_concurrency: int = _default("llm_concurrency")
    llm_rpm: float | None = _default("llm_rpm")
    llm_tpm: float | None = _default("llm_tpm")
    llm_workers: int = _default("llm_workers")
    llm_rate_window: float = _default("llm_rate_window")
    llm_max_retries: int = _default("llm_max_retries")
    llm_timeout: float = _default("llm_timeout")
    llm_cache: str | None = _default("llm_cache")
    llm_batch_size: int = _default("llm_batch_size")
    llm_question_field: str | None = _default("llm_question_field")
    llm_envoy: str | None = _default("llm_envoy")
    llm_envoy_domain: str = _default("llm_envoy_domain")
    llm_dry_run: bool = False
    llm_price_in: float = _default("llm_price_in")
    llm_price_out: float = _default("llm_price_out")
    beam_args: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.inputs:
            raise ConfigError("--input: give at least one path or glob")
        if not self.output:
            raise ConfigError("--output: give the output folder")
        for name, option in _VALUED.items():
            option.check(getattr(self, name))
        numeric = self.score_key in SCORE_KEYS and self.score_key != "scaffold"
        if not numeric and not self.score_key.startswith("llm_"):
            raise ConfigError(
                "--score-key: a numeric key of _score (e.g. composite_score) or of the LLM "
                "judge's output (e.g. llm_composite_score, llm_checklist_csr)"
            )
        for name in _LF_MARKERS:
            if getattr(self, name) == "":
                raise ConfigError(f"{_VALUED[name].flag}: a non-empty marker")
        if self.max_tokens is not None and not self.tokenizer:
            raise ConfigError("--max-tokens: give --tokenizer, the tokenizer that counts them")
        self._fill_lf_options()

    def _fill_lf_options(self) -> None:
        """Every LF option not given takes the --lf-template's value (or the default), so the
        manifest's options say what was written; a given one the template cannot load is
        refused in one line."""
        try:
            settings = self.lf_settings()
        except LfTemplateError as exc:
            raise ConfigError(f"{_LF_FLAGS[exc.setting]}: {exc}") from None
        filled = {
            "lf_call_text": settings.call_text,
            "lf_tool_call_open": settings.tool_call_words[0],
            "lf_tool_call_close": settings.tool_call_words[1],
            "lf_reasoning": settings.reasoning,
            "lf_thought_open": settings.thought_words[0],
            "lf_thought_close": settings.thought_words[1],
            "lf_parallel_calls": settings.parallel_calls,
        }
        for name, value in filled.items():
            object.__setattr__(self, name, value)  # frozen: filled once, while building

    def lf_settings(self) -> LfSettings:
        """How the LF writer renders records (one object for the sink)."""
        return template_settings(
            self.lf_template,
            call_text=self.lf_call_text,
            reasoning=self.lf_reasoning,
            parallel_calls=self.lf_parallel_calls,
            tool_call_words=(self.lf_tool_call_open, self.lf_tool_call_close),
            thought_words=(self.lf_thought_open, self.lf_thought_close),
            chat_template_tokenizer=self.chat_template_tokenizer,
        )

    def export_formats(self) -> tuple[str, ...]:
        """The conversation exports written beside IM (`--messages-format`)."""
        return formats_of(self.messages_format)

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
            window_s=self.llm_rate_window,
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
        """The chain of a run: it also builds each scored bundle's sidecar row."""
        values = asdict(self)
        diagnosis = diagnose_settings(values) if self.diagnose else None
        return replace(
            chain_settings(values),
            sidecar=True,
            diagnose=diagnosis,
            tokenizer=self.tokenizer,
            max_tokens=self.max_tokens,
        )

    def split_settings(self) -> SplitSettings:
        """`--val-fraction` / `--split-seed` (`transforms/sinks/split.py`)."""
        return SplitSettings(self.val_fraction, self.split_seed)

    def selection_settings(self) -> SelectionSettings:
        """Per-job selection (`transforms/selection.py`)."""
        return SelectionSettings(self.dedup, self.best_of_k, self.curriculum, self.score_key)

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
    for option in RUN_OPTIONS.values():
        option.add_to(parser, None)
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
    for option in LLM_OPTIONS.values():
        option.add_to(llm, None)
    llm.add_argument(
        "--llm-dry-run",
        action="store_true",
        default=None,
        help="count the calls and tokens a run would make, and the cost; no call",
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
    for name in ("inputs", "output", "skip_unchanged", "progress", "llm_dry_run", *_VALUED):
        given = getattr(args, name, None)
        if given is not None:
            values[name] = given
    for name, option in _VALUED.items():
        values[name] = option.check(values.get(name))
        if values[name] is None:
            del values[name]
    values["inputs"] = tuple(str(i) for i in values.get("inputs") or ())
    values["output"] = str(values.get("output") or "")
    values["beam_args"] = tuple(beam_args) + tuple(values.get("beam_args") or ())
    config = RunConfig(**values)
    config.chain_settings()  # a bad --diagnose-profile fails here, in one line
    return config
