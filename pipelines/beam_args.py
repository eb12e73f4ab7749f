"""Arguments `trajcurate run` passes to Beam: each must be a Beam pipeline option.

Beam itself only warns about an option it does not know and drops it, so a typo such as
`--min_score 0.9` would silently run without the filter. Every argument trajcurate does not
take is checked here against the options Beam's own parser knows; an unknown one is an
error naming the closest known option, trajcurate's or Beam's.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable, Sequence
from typing import Any


def _beam_parser() -> Any:
    """The parser Beam builds in `PipelineOptions.get_all_options`: every options class once."""
    from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser

    import pipelines.runner  # noqa: F401  (declares trajcurate's own Beam options)

    parser = _BeamArgumentParser(allow_abbrev=False)
    for options_class in {str(c): c for c in PipelineOptions.__subclasses__()}.values():
        options_class._add_argparse_args(parser)
    return parser


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [name for action in parser._actions for name in action.option_strings]


def unknown_beam_args(args: Sequence[str]) -> list[str]:
    """The arguments that are neither an option of Beam nor the value of one (none given:
    none, without importing Beam, which the run then imports while its helper reads)."""
    if not args:
        return []
    from pipelines.runner import register_dask_options

    register_dask_options(args)  # `--dask_client_address` is known once Dask is asked for
    _, unknown = _beam_parser().parse_known_args(list(args))
    return [str(arg) for arg in unknown]


def _normalised(flag: str) -> str:
    return flag.split("=", 1)[0].lower().replace("_", "-")


def closest_option(given: str, known: Iterable[str]) -> str | None:
    """The known option `given` most likely meant (`--min_score` -> `--min-score`)."""
    options = [k for k in known if k.startswith("--")]
    wanted = _normalised(given)
    for option in options:
        if _normalised(option) == wanted:
            return option
    by_normalised = {_normalised(option): option for option in options}
    close = difflib.get_close_matches(wanted, list(by_normalised), n=1, cutoff=0.8)
    return by_normalised[close[0]] if close else None


def unknown_argument_error(unknown: Sequence[str], own_options: Iterable[str]) -> str:
    """One line naming the unknown options (or the stray argument), with the closest known
    option to the first."""
    flags = [arg.split("=", 1)[0] for arg in unknown if arg.startswith("-")]
    if not flags:
        return f"unknown argument {unknown[0]!r}"
    message = f"unknown option{'s' if len(flags) > 1 else ''} {', '.join(flags)}"
    suggestion = closest_option(flags[0], [*own_options, *option_strings(_beam_parser())])
    return message + (f" (did you mean {suggestion}?)" if suggestion else "")
