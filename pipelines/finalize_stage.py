"""The driver's last step as the pipeline's last stage, for runs that have no driver at the end.

A Dataflow flex-template launch (`--template_location`) only stages the job graph: the
process that built it is gone when the job runs, so nobody would complete and publish the
staged job folders. For such a run the pipeline itself ends with `finalize`
(`pipelines/manifest.py`): one element, produced once every file of the run is written
(a global count over the outputs of every writer), runs it on a worker. The outputs are the
same files a local run writes — `dataset_info.json`, the empty files of a job that wrote
nothing, each job's manifest last — except that the manifests carry no wall time and no Beam
metrics (a worker cannot see them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import apache_beam as beam
from apache_beam.transforms import combiners

from pipelines.config import RunConfig


class FinalizeOutputs(beam.DoFn):
    """Complete and publish the staged outputs (`finalize`), add the run's line to the run
    log; yields the run's accounting."""

    def __init__(self, config: RunConfig, staging: str, increment: Any, log: Any) -> None:
        self.config = config
        self.staging = staging
        self.increment = increment
        self.log = log

    def process(self, _written: int) -> Iterator[dict[str, Any]]:
        from pipelines.manifest import finalize

        run = finalize(self.config, self.staging, None, None, self.increment)["run"]
        self.log.finished(run, incremental=bool(self.increment.job_signatures))
        yield run["accounting"]


def add_finalize(
    writes: Sequence[Any], config: RunConfig, staging: str, increment: Any, log: Any
) -> Any:
    """Run `finalize` once every PCollection in `writes` (the writers' outputs) is done."""
    return (
        list(writes)
        | "AllWrites" >> beam.Flatten()
        | "WritesDone" >> combiners.Count.Globally()
        | "Finalize" >> beam.ParDo(FinalizeOutputs(config, staging, increment, log))
    )
