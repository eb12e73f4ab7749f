"""Dataflow Flex Template entry point: `trajcurate run` with the template's parameters.

The flex-template launcher runs this file (FLEX_TEMPLATE_PYTHON_PY_FILE) as

    python launcher.py --input=gs://... --output=gs://... --instance_status=resolved \
        --runner=DataflowRunner --project=... --region=... --temp_location=... \
        --template_location=gs://.../job_object [--sdk_container_image=...]

Three adaptations, all local to this file:
- Template parameter names cannot hold '-', so `--min_score` etc. are mapped back to
  trajcurate's flags (`--min-score`); Beam's own options pass through untouched.
- `--config=gs://...` is copied to a local temp file first (`--config` reads a local file).
- With `--template_location` the Dataflow runner only writes the job graph for the launcher
  to submit: no job runs in this process, so `trajcurate run` ends the job with a stage that
  publishes the outputs and manifests itself (`pipelines/finalize_stage.py`).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence

# Template parameter name -> trajcurate flag (flags with no '-' need no mapping).
FLAGS = {
    "instance_status": "instance-status",
    "min_score": "min-score",
    "num_shards": "num-shards",
    "reward_key": "reward-key",
    "reward_threshold": "reward-threshold",
    "score_key": "score-key",
    "input_format": "format",
}


def translate(argv: Sequence[str]) -> list[str]:
    """`--min_score=0.6` / `--min_score 0.6` -> `--min-score=0.6`; other args unchanged."""
    out = []
    for arg in argv:
        name, sep, value = arg.partition("=")
        flag = FLAGS.get(name[2:]) if name.startswith("--") else None
        out.append(f"--{flag}{sep}{value}" if flag else arg)
    return out


def _value(argv: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def localize_config(argv: list[str]) -> list[str]:
    """A remote `--config` (gs://...) is copied to a local file that `trajcurate run` reads."""
    remote = _value(argv, "--config")
    if not remote or "://" not in remote:
        return argv
    from apache_beam.io.filesystems import FileSystems

    with (
        FileSystems.open(remote) as source,
        tempfile.NamedTemporaryFile("wb", suffix=".yaml", delete=False) as local,
    ):
        local.write(source.read())
    out = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--config":
            skip = True
            out.append(f"--config={local.name}")
        elif arg.startswith("--config="):
            out.append(f"--config={local.name}")
        else:
            out.append(arg)
    return out


def main(argv: Sequence[str]) -> int:
    args = localize_config(translate(argv))
    if _value(args, "--runner") is None:
        args.append("--runner=DataflowRunner")  # never fall back to a local run on the launcher
    # With --template_location, `trajcurate run` stages the job graph for the flex-template
    # launcher to submit; the job's last stage publishes the outputs and manifests.
    from pipelines.cli import main as cli_main

    return cli_main(["run", *args])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
