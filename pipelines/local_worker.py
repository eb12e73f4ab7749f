"""The command of each local worker process (`--direct_num_workers N`): Beam's SDK harness,
run with the root logger given a handler first.

Beam starts a worker as `python -m apache_beam.runners.worker.sdk_worker_main`. Anything
that logs before the harness has set its level then lands on stderr: a module-level
`logging.warning` (Beam's own `apitools not found ...` when the package is installed
without the `gcp` extra) makes `logging` install a stderr handler, and the harness's start-up
line (`Logging handler created.`, at INFO) follows it there — twice per run with two
workers. With a handler on the root logger, `logging` installs none: what the harness logs
still goes to the runner through the handler the harness adds (the driver keeps Beam's
logging at its level), and a worker that crashes still prints its traceback.
"""

from __future__ import annotations

import logging
import sys

MODULE = "pipelines.local_worker"


def quiet_root_logger() -> None:
    """Give the root logger a handler that drops records, so that no first log call makes
    `logging` install one on stderr."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def main() -> None:
    quiet_root_logger()
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(sys.argv)  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
