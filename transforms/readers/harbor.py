"""Harbor job directories (formats.md §1): a folder of jobs, one job, or one trial.

`read` finds the trial units (`harbor_layout.find_trials`: every non-hidden subfolder of a
job is one), walks them in sorted order and yields one bundle per unit as it goes, so a large
job is never held in memory and a job gives as many bundles as it has trial folders. An
empty, config-only or broken trial, or one linked out of its job, is a bundle with
`records: []` whose first warning says why. The per-trial work lives in `harbor_trial.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from transforms.readers.bundle import Bundle, ReaderError, new_bundle
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.harbor_layout import find_trials, is_trial, job_name
from transforms.readers.harbor_trial import read_trial

__all__ = ["is_trial", "job_name", "read", "read_trial", "read_trial_unit"]


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per trial unit under `path`, in sorted trial-path order."""
    path = Path(path)
    if not path.is_dir():
        raise ReaderError(f"{path}: a Harbor input is a folder (jobs folder, job or trial)")
    found = False
    for trial in find_trials(path, limits, in_job=True):
        found = True
        if trial.refusal is not None:
            name, source, reason = trial.path.name, str(trial.path), trial.refusal
            yield new_bundle(name, source, "harbor", [], job=trial.job, warnings=[reason])
        else:
            yield read_trial(trial.path, trial.job, limits)
    if not found:
        raise ReaderError(f"{path}: no Harbor trial found (no result.json, agent/ or verifier/)")


def read_trial_unit(
    path: Path, limits: ReadLimits = DEFAULT_LIMITS, *, job: str
) -> Iterator[Bundle]:
    """`read` for a trial unit that discovery found in job `job`: a folder that is a trial
    is read at once, its job's name as discovery read it (not re-read for every trial); any
    other folder is read by `read` (a broken trial folder, a folder of trials)."""
    path = Path(path)
    files = TrialFiles(path, limits)
    if is_trial(path, limits, files):
        files.take_warnings()  # the trial reader probes again, and warns in its own order
        yield read_trial(path, job, limits, files)
    else:
        yield from read(path, limits)
