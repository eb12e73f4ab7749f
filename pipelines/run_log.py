"""`DIR/runs.jsonl`: one line per `trajcurate run` into DIR, appended when the run ends.

What a scheduled run leaves to look back on: when it started, how long it took, what it did
(`full`, `incremental`, `unchanged`, or `failed` with the one-line error), which jobs it
curated and which it kept as the last run left them, and the run's accounting
(in = written + rejected + dead-lettered over every job of the output). The log is not
listed in the manifests (it grows with every run) and no run removes it.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable
from typing import Any

import orjson

from pipelines.output_folder import append_line

RUN_LOG = "runs.jsonl"


class RunLog:
    """The line of one run, started when the run takes the output folder."""

    def __init__(self, output: str, run_id: str, version: str) -> None:
        self.path = output.rstrip("/") + "/" + RUN_LOG
        self.run_id = run_id
        self.version = version
        self._started = time.time()  # wall clock: a template's job logs on another machine
        started = datetime.datetime.fromtimestamp(self._started, datetime.UTC)
        self.started_at = started.strftime("%Y-%m-%dT%H:%M:%SZ")  # every time we write: UTC, Z

    def finished(self, run: dict[str, Any], incremental: bool) -> None:
        """The line of a run that published its outputs (`run`: its manifest)."""
        mode = "incremental" if incremental else "full"
        self.append(mode, run["curated_jobs"], run["kept_jobs"], run["accounting"])

    def append(
        self,
        mode: str,
        curated: Iterable[str] = (),
        kept: Iterable[str] = (),
        accounting: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        entry = {
            "run_id": self.run_id,
            "started_at": self.started_at,
            "wall_seconds": round(time.time() - self._started, 3),
            "mode": mode,
            "curated_jobs": sorted(curated),
            "kept_jobs": sorted(kept),
            "accounting": accounting,
            "error": error,
            "trajcurate_version": self.version,
        }
        append_line(self.path, orjson.dumps(entry, option=orjson.OPT_SORT_KEYS) + b"\n")
