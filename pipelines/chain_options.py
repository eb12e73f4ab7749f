"""The options of the curation chain, declared once for `run`, `convert` and `score`.

Each option has one name, one type, one default, one range or set of choices and one help
text; the commands register the ones they take, and every value — from a flag or from
`run`'s YAML file — is converted and checked here, so a bad value gets the same one-line
error whichever command or file it came through.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scorers.tqs_v2 import SCAFFOLDS, TOOLS_MODES
from transforms.chain import ChainSettings
from transforms.read_ahead import READ_AHEAD_MODES
from transforms.readers.confined import ReadLimits
from transforms.readers.registry import FORMATS
from transforms.redact import REDACT_MODES
from transforms.reward_gate import STATUSES

MIB = 2**20


class ConfigError(ValueError):
    """An option value that cannot work; the message names the option."""


@dataclass(frozen=True)
class Option:
    name: str
    kind: type
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None
    metavar: str | None = None
    flag_name: str | None = None  # when the flag is not `--` + the name with dashes

    @property
    def flag(self) -> str:
        return self.flag_name or "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """`value` converted to the option's type, or ConfigError saying what fits."""
        if value is None:
            return None
        if self.kind is bool:
            if not isinstance(value, bool):  # bool("false") is True: take real booleans only
                raise ConfigError(f"{self.flag}: true or false, not {value!r}")
            return value
        if self.kind is int and (
            isinstance(value, bool) or (isinstance(value, float) and not value.is_integer())
        ):
            raise ConfigError(f"{self.flag}: not a whole number: {value!r}")
        try:
            value = self.kind(value)
        except (TypeError, ValueError):
            what = {int: "a whole number", float: "a number"}.get(self.kind, self.kind.__name__)
            raise ConfigError(f"{self.flag}: not {what}: {value!r}") from None
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{self.flag}: one of {', '.join(self.choices)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{self.flag}: a finite number")
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            raise ConfigError(f"{self.flag}: {self.range_text()}")
        return value

    def range_text(self) -> str:
        kind = "a whole number" if self.kind is int else "a number"
        if self.high is None:
            return f"{kind} of at least {self.low:g}"
        if self.low is None:
            return f"{kind} of at most {self.high:g}"
        return f"{kind} from {self.low:g} to {self.high:g}"

    def parse_flag(self, text: str) -> Any:
        """argparse's `type`: argparse itself says which choices fit."""
        if self.choices is not None:
            return text
        try:
            return self.check(text)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{self.flag}: ")) from None

    def add_to(self, parser: argparse._ActionsContainer, default: Any) -> None:
        if self.kind is bool:  # a switch: given means true (a YAML key can say false)
            parser.add_argument(
                self.flag, dest=self.name, action="store_true", default=default, help=self.help
            )
            return
        shown = "" if self.default is None else f" (default: {self.default})"
        parser.add_argument(
            self.flag,
            dest=self.name,
            type=self.parse_flag,
            choices=self.choices,
            default=default,
            metavar=self.metavar,
            help=self.help + shown,
        )


@dataclass(frozen=True)
class WordsOrTextOption(Option):
    """A text option whose `words` mean something of their own and whose any other
    non-empty text is a value (`--system-prompt keep|drop|TEXT`)."""

    words: tuple[str, ...] = ()

    def check(self, value: Any) -> Any:
        value = super().check(value)
        if value is not None and not value.strip():
            raise ConfigError(f"{self.flag}: {', '.join(self.words)} or a non-empty text")
        return value


def options_by_name(*options: Option) -> dict[str, Option]:
    """A table of options by name (each name once)."""
    table = {option.name: option for option in options}
    if len(table) != len(options):
        raise ValueError("an option is declared twice")
    return table


CHAIN_OPTIONS = options_by_name(
    Option(
        "instance_status",
        str,
        "resolved",
        "keep trials by verifier reward: resolved, unresolved or all",
        choices=STATUSES,
    ),
    Option("reward_key", str, "reward", "the reward key the gate reads"),
    Option("reward_threshold", float, 1.0, "resolved means reward >= this", low=-1e9, high=1e9),
    Option(
        "min_score",
        float,
        None,
        "keep a bundle only if its best main-agent score reaches this",
        low=0.0,
        high=1.0,
    ),
    Option("score_key", str, "composite_score", "the score key the filter reads"),
    Option(
        "redact",
        str,
        "mask",
        "secrets in messages, tool calls and results: mask them with a typed placeholder, "
        "drop (reject) the trial, or off",
        choices=REDACT_MODES,
    ),
    Option(
        "max_file_mb",
        float,
        ReadLimits().max_file_bytes / MIB,
        "refuse any input file larger than this many MiB",
        low=0.001,
        high=1e6,
        metavar="MB",
    ),
    Option(
        "max_trial_files",
        int,
        ReadLimits().max_trial_files,
        "refuse a trial (or a standalone input file) that looks at or opens more than this "
        "many files",
        low=1,
        high=1e9,
        metavar="N",
    ),
    Option(
        "max_trial_mb",
        float,
        ReadLimits().max_trial_bytes / MIB,
        "refuse a trial that reads more than this many MiB in all",
        low=0.001,
        high=1e7,
        metavar="MB",
    ),
    Option(
        "max_trial_seconds",
        float,
        ReadLimits().max_trial_seconds,
        "refuse a trial whose reading takes longer than this (the run goes on)",
        low=0.001,
        high=1e6,
        metavar="S",
    ),
    Option(
        "max_record_mb",
        float,
        64.0,
        "refuse a trial any of whose records holds more than this many MiB of text "
        "(no trainer takes it; written as one line it costs several times its size in memory)",
        low=0.001,
        high=1e6,
        metavar="MB",
    ),
    Option(
        "allow_hard_links",
        bool,
        False,
        "read input files that have more than one hard link (refused by default: a hard "
        "link can point at a file outside the trial, and no path check can see it)",
    ),
    Option(
        "input_format",
        str,
        None,
        "read every input as this format instead of detecting it",
        choices=FORMATS,
        flag_name="--format",
    ),
    Option(
        "scaffold",
        str,
        None,
        "score every record as this scaffold instead of detecting it",
        choices=SCAFFOLDS,
    ),
    Option(
        "scaffold_hints",
        bool,
        False,
        "score by the converter's scaffold hint (_instance_metadata.scaffold) instead of "
        "detecting the scaffold as the reference does; each _score gets scaffold_source",
    ),
    Option(
        "tqs_tools",
        str,
        "parity",
        "the tools TQS V2 knows: parity (the reference's) or extended (also Codex, Gemini CLI "
        "and Goose edits and runs, git apply, ed, awk -i inplace); extended adds "
        "tqs_tools to each _score",
        choices=TOOLS_MODES,
    ),
    WordsOrTextOption(
        "system_prompt",
        str,
        "keep",
        "each record's system prompt in the SFT files: keep it, drop it, or TEXT: the system "
        "prompt of every record whose own is empty (a template otherwise puts its default "
        "there, e.g. qwen's 'You are Qwen...'); scoring and judges see the records as read",
        metavar="keep|drop|TEXT",
        words=("keep", "drop"),
    ),
    Option(
        "read_ahead",
        str,
        "auto",
        "auto: open trials in a helper process while the ones before are curated, when 2+ "
        "CPUs are usable and trials are opened in this process (for run: the in-process "
        "runner, one worker); off: never",
        choices=READ_AHEAD_MODES,
    ),
    Option(
        "workers",
        int,
        0,
        "processes that score side by side: 0 = one per usable CPU, 1 = this process only; "
        "inputs are shared out in order (a large IM file by spans of whole instances) and "
        "the outputs are the same as with 1",
        low=0,
        high=256,
        metavar="N",
    ),
)


# The options every command that runs the chain takes (besides its own: --format, --scaffold).
CURATION_OPTIONS = (
    "instance_status",
    "reward_key",
    "reward_threshold",
    "min_score",
    "score_key",
    "redact",
    "max_file_mb",
    "max_trial_files",
    "max_trial_mb",
    "max_trial_seconds",
    "max_record_mb",
    "allow_hard_links",
    "scaffold_hints",
    "tqs_tools",
    "system_prompt",
)


def add_chain_arguments(
    parser: argparse.ArgumentParser,
    names: Iterable[str],
    defaults: Mapping[str, Any] | None = None,
) -> None:
    """Register the named options; `defaults` None leaves every default None (for callers
    that merge flags over a file), else each option's own default unless overridden."""
    for name in names:
        option = CHAIN_OPTIONS[name]
        default = None if defaults is None else defaults.get(name, option.default)
        option.add_to(parser, default)


def check_chain_values(values: Mapping[str, Any]) -> None:
    """ConfigError for the first chain option whose value does not fit."""
    for name, option in CHAIN_OPTIONS.items():
        if name in values:
            option.check(values[name])


def chain_settings(values: Mapping[str, Any]) -> ChainSettings:
    """The chain's settings from option values (missing ones take their defaults)."""

    def get(name: str) -> Any:
        value = values.get(name)
        return CHAIN_OPTIONS[name].default if value is None else value

    return ChainSettings(
        instance_status=get("instance_status"),
        reward_key=get("reward_key"),
        reward_threshold=get("reward_threshold"),
        redact=get("redact"),
        scaffold=values.get("scaffold"),
        scaffold_hints=bool(values.get("scaffold_hints")),
        tqs_tools=get("tqs_tools"),
        min_score=values.get("min_score"),
        score_key=get("score_key"),
        max_record_bytes=int(get("max_record_mb") * MIB),
        system_prompt=get("system_prompt"),
    )


def read_limits(values: Mapping[str, Any]) -> ReadLimits:
    def get(name: str) -> Any:
        value = values.get(name)
        return CHAIN_OPTIONS[name].default if value is None else value

    return ReadLimits(
        max_file_bytes=int(get("max_file_mb") * MIB),
        allow_hard_links=bool(values.get("allow_hard_links")),
        max_trial_files=int(get("max_trial_files")),
        max_trial_bytes=int(get("max_trial_mb") * MIB),
        max_trial_seconds=float(get("max_trial_seconds")),
    )
