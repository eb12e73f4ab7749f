"""Pipeline options and the local runner.

Beam 2.77's DirectRunner first tries the Prism runner, which downloads a binary; offline
that fails, falls back, and leaves an empty temp folder behind on every run. When the user
asks for no runner or for the DirectRunner, trajcurate goes straight to the in-process
FnApiRunner that the DirectRunner falls back to anyway: fast, clean, no network. It still
honours `--direct_num_workers` and `--direct_running_mode` (in_memory, multi_threading,
multi_processing; worker processes run `pipelines/local_worker.py`, which starts quietly).
Any other `--runner` (DataflowRunner, FlinkRunner, PortableRunner, ...) is used as given:
`--runner PortableRunner --job_endpoint ... --environment_type EXTERNAL` is how a Flink
cluster runs the pipeline (tests/test_portable_runner.py runs it against Beam's job
service and an external SDK worker pool). `--runner dask` (or `DaskRunner`, or Beam's class
name `apache_beam.runners.dask.dask_runner.DaskRunner`) runs it on a Dask cluster through
`pipelines/dask_runner.py`, Beam's DaskRunner with its translation fixed (needs the `dask`
extra).
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Sequence
from typing import Any, TypeVar

import apache_beam as beam
from apache_beam.options.pipeline_options import (
    DirectOptions,
    PipelineOptions,
    StandardOptions,
    WorkerOptions,
)

from pipelines.dofn_specs import remember_dofn_specs
from transforms import workers

LOCAL_RUNNERS = (None, "DirectRunner", "direct", "FnApiRunner")
DASK_RUNNERS = ("dask", "DaskRunner", "apache_beam.runners.dask.dask_runner.DaskRunner")
DASK_EXTRA = "--runner dask needs Dask: pip install 'trajcurate[dask]'"
_View = TypeVar("_View", bound=PipelineOptions)


class RunOptions(PipelineOptions):
    """`PipelineOptions` that make each view once.

    Beam asks the options for a view (`view_as(TypeOptions)`, ...) about 300 times while it
    builds and translates this pipeline, and each new view builds an argument parser and
    parses the flags again (~0.6 ms). A view holds no state of its own: its values live in
    the options' shared `_all_options` (a value set through one view is seen by all), so the
    first view of a class is kept and returned again. It declares no option of its own.
    """

    def view_as(self, cls: type[_View]) -> _View:
        views: dict[type, Any] = self.__dict__.setdefault("_views", {})
        view = views.get(cls)
        if view is None:
            view = views[cls] = super().view_as(cls)
        return view

    def __getstate__(self) -> dict[str, Any]:
        state = dict(super().__getstate__())
        state.pop("_views", None)  # made again where the options are unpickled
        return state


class DaskClusterOptions(PipelineOptions):
    """The cluster `--runner dask` starts when it is given no scheduler, and an alias of
    Beam's `--dask_client_address` (Beam's `DaskOptions`, registered once Dask is imported:
    `register_dask_options`)."""

    @classmethod
    def _add_argparse_args(cls, parser: Any) -> None:
        parser.add_argument(
            "--dask_address",
            dest="address",
            default=None,
            help="the Dask scheduler, tcp://HOST:8786 (Beam's --dask_client_address)",
        )
        parser.add_argument(
            "--dask_workers",
            type=int,
            default=None,
            help="with no scheduler given: worker processes of the local cluster (default: "
            "one per CPU)",
        )
        parser.add_argument(
            "--dask_threads_per_worker",
            type=int,
            default=None,
            help="with no scheduler given: threads of each local worker (default 1)",
        )


def is_dask(runner: object) -> bool:
    return runner in DASK_RUNNERS


def recomputes_lost_tasks(options: PipelineOptions) -> bool:
    """Whether the runner repairs a lost worker by running finished tasks again from their
    inputs (Dask's lineage), rather than retrying a bundle from a durable shuffle."""
    return is_dask(options.view_as(StandardOptions).runner)


def register_dask_options(args: Sequence[str]) -> None:
    """Beam declares the Dask runner's options (`--dask_client_address`, ...) in the module
    of its runner, which imports Dask: imported only when a run asks for Dask, so that
    other runs do not pay for it (nor need it installed)."""
    wanted = any(str(a).startswith("--dask_") for a in args) or any(
        str(a).split("=", 1)[-1] in DASK_RUNNERS for a in args
    )
    if wanted:  # without Dask, `--runner dask` says which extra to install
        with contextlib.suppress(ImportError):
            import apache_beam.runners.dask.dask_runner  # noqa: F401  (declares DaskOptions)


def pipeline_options(beam_args: Sequence[str]) -> PipelineOptions:
    register_dask_options(beam_args)
    options = RunOptions(list(beam_args))
    _workers_as_processes(options, beam_args)
    return options


def _workers_as_processes(options: PipelineOptions, beam_args: Sequence[str]) -> None:
    """Local workers (`--direct_num_workers` other than 1) run as processes unless a
    `--direct_running_mode` is given: Beam's default mode (in_memory) keeps one thread, so
    the workers only add a reshuffle and split bundles (the 2,000-trial clone: 7.1 s with
    2 such workers against 5.4 s with one, 4.8 s with 2 processes). Threads share the GIL,
    so only processes run this pipeline's Python side by side."""
    direct = options.view_as(DirectOptions)
    if not is_local(options) or direct.direct_num_workers == 1:
        return
    if not _given("--direct_running_mode", beam_args):
        direct.direct_running_mode = "multi_processing"
    if not _given("--default_sdk_harness_log_level", beam_args):
        # each worker process would log its start, channels and end at INFO on stderr
        options.view_as(WorkerOptions).default_sdk_harness_log_level = "ERROR"


def _given(flag: str, beam_args: Sequence[str]) -> bool:
    return any(str(arg).split("=", 1)[0] == flag for arg in beam_args)


def local_runner(options: PipelineOptions) -> Any:
    """The in-process runner, provisioned with the options as the DirectRunner would; with
    worker processes, they run `pipelines.local_worker` (see `_process_runner`)."""
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    provision = fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)
    )
    if options.view_as(DirectOptions).direct_running_mode == "multi_processing":
        return _process_runner(provision)
    return fn_runner.FnApiRunner(provision_info=provision)


def _worker_command() -> str:
    """The shell command of a local worker process: Beam's SDK harness, quietly started."""
    from pipelines.local_worker import MODULE

    return f"{shlex.quote(sys.executable)} -m {MODULE}"


def _process_runner(provision: Any) -> Any:
    """An FnApiRunner whose worker processes run `_worker_command()`.

    In multi_processing mode the FnApiRunner replaces any default environment with its own
    command (`python -m apache_beam.runners.worker.sdk_worker_main`) when the run starts, so
    the run is started with the mode read as in_memory, which keeps the environment given
    here: the number of workers and their processes come from that environment and
    `--direct_num_workers`, not from the mode."""
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.transforms.environments import SubprocessSDKEnvironment

    class ProcessRunner(fn_runner.FnApiRunner):
        def run_pipeline(self, pipeline: Any, options: PipelineOptions) -> Any:
            direct = options.view_as(DirectOptions)
            mode, direct.direct_running_mode = direct.direct_running_mode, "in_memory"
            try:
                return super().run_pipeline(pipeline, options)
            finally:
                direct.direct_running_mode = mode

    environment = SubprocessSDKEnvironment.from_command_string(_worker_command())
    return ProcessRunner(default_environment=environment, provision_info=provision)


def is_local(options: PipelineOptions) -> bool:
    return options.view_as(StandardOptions).runner in LOCAL_RUNNERS


def local_processes(options: PipelineOptions) -> int:
    """The worker processes of a local run (1 on any other runner: not known here)."""
    if not is_local(options):
        return 1
    direct = options.view_as(DirectOptions)
    return workers.local_processes(direct.direct_running_mode, direct.direct_num_workers)


def one_local_worker(options: PipelineOptions) -> bool:
    """Whether the run is the in-process runner with one worker (the default): nothing to
    spread units over, so a Reshuffle would only cost (about 4% of a 10,000-trial run)."""
    return is_local(options) and options.view_as(DirectOptions).direct_num_workers == 1


def make_pipeline(beam_args: Sequence[str]) -> beam.Pipeline:
    remember_dofn_specs()
    options = pipeline_options(beam_args)
    if is_local(options):
        return beam.Pipeline(runner=local_runner(options), options=options)
    if is_dask(options.view_as(StandardOptions).runner):
        try:
            from pipelines.dask_runner import DaskRunner
        except ImportError:
            from pipelines.chain_options import ConfigError

            raise ConfigError(DASK_EXTRA) from None
        return beam.Pipeline(runner=DaskRunner(), options=options)
    return beam.Pipeline(options=options)
