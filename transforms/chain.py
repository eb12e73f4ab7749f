"""The curation chain, defined once: stages, routing and counting (no Beam).

A stage is a name plus one function over a bundle: a *check* returns a reason to reject the
bundle (or None to keep it), a *transform* returns the bundle to go on with. `run_stages`
routes every bundle the same way whoever drives it — the Beam DoFn in `transforms/stages.py`
or the plain loop of `convert` and `score`: kept, rejected (stage + reason) or dead-lettered
(stage + exception). Counters are named `<stage>.in`, `<stage>.kept`, `<stage>.rejected` and
`<stage>.dead_letter`; per job, drops count as `rejected.<stage>` / `dead_letter.<stage>`.

The order: read → validate → [redact] → score → [diagnose] → trainable → clean → gate →
[LLM judges] → filter → [system_prompt], and in `trajcurate run` then the per-job selection
(`transforms/selection.py`: dedup, best-of-k, curriculum order).
`validate` asks only what scoring needs (structurally valid IM records): every trajectory
with messages is scored as the reference scores it, whatever its role order. `trainable`
then decides whether it can be SFT data (formats.md §4's role order, a prompt, every call
answered before the last turn, something to learn from); a bundle rejected there still has
its score and sidecar row, so the report counts truncated and malformed runs too. Secrets
go before anything else sees the text; TQS V2 scores the text as the agent saw it
(terminal escapes included, as the reference scorer does), and only then is it cleaned for
the judges and for training; `--system-prompt drop|TEXT` changes the records last, for the
SFT files only. The reward gate comes after scoring so that every trial that
can be scored is (the report compares resolved and unresolved trials), and before the
judges, which cost money per call. A bundle rejected after scoring carries its sidecar row
(`Drop.row`, decision "rejected" with the reject's reason); one never scored has none.
Reading (discover + open) and the judges sit outside `run_stages`: they turn one element
into many (or batch them), but they route their drops through the same records.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import takewhile
from typing import TYPE_CHECKING, Any

from scorers.im import agent_type
from transforms import bundle_steps as steps
from transforms.cleaning import after_survey
from transforms.redact import mask_secrets_in_text

if TYPE_CHECKING:
    from transforms.diagnose_step import DiagnoseSettings

REJECTED = "rejected"
DEAD_LETTER = "dead_letter"
STANDALONE_JOB = "standalone"
DETECT = "detect"  # the stage of inputs refused before reading: no reader fits
OPEN = "open"  # the stage of read units a reader refused or crashed on
TRAINABLE = "trainable"  # after scoring: can the bundle become SFT data (role order, ...)
SYSTEM_PROMPT = "system_prompt"  # `--system-prompt drop|TEXT`: the chain's last stage
TRACEBACK_LINES = 6

Bundle = dict[str, Any]
Check = Callable[[Bundle], str | None]
Transform = Callable[[Bundle], Bundle]
Count = Callable[[str], None]


@dataclass(frozen=True)
class Stage:
    """One step of the chain: exactly one of `check` and `transform` is set."""

    name: str
    check: Check | None = None
    transform: Transform | None = None
    # its counters' names (`<stage>.in`, `.kept`, `.rejected`, `.dead_letter`), made once
    counters: tuple[str, str, str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.check is None) == (self.transform is None):
            raise ValueError(f"stage {self.name!r}: give a check or a transform")
        names = tuple(f"{self.name}.{kind}" for kind in ("in", "kept", REJECTED, DEAD_LETTER))
        object.__setattr__(self, "counters", names)


def job_of(item: Mapping[str, Any]) -> str:
    """The job a bundle (or a read unit, or a drop) belongs to; `standalone` for files
    outside Harbor (a Harbor job's name is kept as it is, even empty)."""
    job = item.get("job")
    return job if isinstance(job, str) else STANDALONE_JOB


# Reasons and errors may quote what they choke on (a reward file's text, a value): they are
# written out, so they are masked like the data.
def reject_record(stage: str, bundle: Mapping[str, Any], reason: str) -> dict[str, Any]:
    return {
        "job": job_of(bundle),
        "stage": stage,
        "instance_id": bundle.get("instance_id"),
        "source": bundle.get("source"),
        "format": bundle.get("format"),
        "records": len(bundle.get("records") or []),
        "reason": mask_secrets_in_text(reason),
    }


def dead_letter_record(stage: str, where: Mapping[str, Any], exc: BaseException) -> dict[str, Any]:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {
        "job": job_of(where),
        "stage": stage,
        "instance_id": where.get("instance_id"),
        "source": where.get("source"),
        "format": where.get("format"),
        "error": mask_secrets_in_text(f"{type(exc).__name__}: {_short(exc)}"),
        "traceback": mask_secrets_in_text("".join(lines[-TRACEBACK_LINES:])),
    }


def _short(exc: BaseException, limit: int = 500) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "…"


@dataclass(frozen=True)
class Drop:
    """A bundle that left the chain: `kind` is REJECTED or DEAD_LETTER; `row` is the
    sidecar row of a bundle rejected after scoring (None otherwise)."""

    kind: str
    record: dict[str, Any]
    row: dict[str, Any] | None = None


def rejected(stage: str, bundle: Mapping[str, Any], reason: str) -> Drop:
    """A bundle rejected at `stage`, with its sidecar row when it was scored."""
    record = reject_record(stage, bundle, reason)
    return Drop(REJECTED, record, steps.decided_row(bundle, "rejected", record["reason"]))


STAGES_DONE = "stages_done"  # how many of the chain's first stages a bundle has been through


def run_stages(bundle: Bundle, stages: Sequence[Stage], count: Count) -> Bundle | Drop:
    """Run `bundle` through `stages`; the bundle that comes out, or why it did not. A bundle
    that has been through the first of them already (`STAGES_DONE`, set by `run_first`)
    goes on from the next."""
    done = bundle.pop(STAGES_DONE, 0)
    for stage in stages[done:] if done else stages:
        counted_in, kept, rejects, dead = stage.counters
        count(counted_in)
        try:
            if stage.check is not None:
                reason = stage.check(bundle)
                if reason is not None:
                    count(rejects)
                    return rejected(stage.name, bundle, reason)
            else:
                assert stage.transform is not None
                bundle = stage.transform(bundle)
        except Exception as exc:  # one bad bundle must never stop a run
            count(dead)
            return Drop(DEAD_LETTER, dead_letter_record(stage.name, bundle, exc))
        count(kept)
    return bundle


def run_first(bundle: Bundle, stages: Sequence[Stage], count: Count) -> Bundle | Drop:
    """`run_stages` over the chain's first `stages` only, the bundle that comes out marked
    (`STAGES_DONE`) for the rest of the chain to go on from there."""
    item = run_stages(bundle, stages, count)
    if not isinstance(item, Drop):
        item[STAGES_DONE] = len(stages)
    return item


@dataclass(frozen=True)
class Begun:
    """An opened bundle that went through the chain's first stages where it was read (the
    read-ahead helper): its job, its `read_counts` taken before, those stages' counters, and
    what came out (marked to go on from there, or why it did not)."""

    job: str
    read: dict[str, int]
    counts: dict[str, int]
    item: Bundle | Drop


def begin(item: Bundle | Drop, stages: Sequence[Stage]) -> Bundle | Drop | Begun:
    """`item` as opened, through `stages` (the chain's first) if it is a bundle."""
    if isinstance(item, Drop) or not stages:
        return item
    counts: dict[str, int] = {}

    def count(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1

    job, read = job_of(item), read_counts(item)
    return Begun(job, read, counts, run_first(item, stages, count))


@dataclass(frozen=True)
class ChainSettings:
    """What the stages of one run need (picklable: plain values)."""

    instance_status: str = "resolved"
    reward_key: str = "reward"
    reward_threshold: float = 1.0
    redact: str = "mask"
    scaffold: str | None = None
    scaffold_hints: bool = False
    tqs_tools: str = "parity"  # "extended": TQS V2 also knows newer agents' tools
    min_score: float | None = None
    score_key: str = "composite_score"
    sidecar: bool = False  # build each scored bundle's sidecar row (`trajcurate run`)
    diagnose: DiagnoseSettings | None = None  # `--diagnose`: the stage after `score`
    # "drop": a bundle that cannot be SFT data is rejected at `trainable` (run, convert);
    # "mark": it is kept, each record's `_trainable` saying why (`trajcurate score`)
    trainable: str = "drop"
    system_prompt: str = "keep"  # `--system-prompt`: keep, drop, or the text to set
    max_record_bytes: int = 64 * 2**20  # `--max-record-mb`
    tokenizer: str | None = None  # `--tokenizer`: each record's token counts (stage `tokens`)
    max_tokens: int | None = None  # `--max-tokens`: a bundle over it is rejected (`max_tokens`)


def stages_before_judge(settings: ChainSettings) -> list[Stage]:
    """read → validate → [redact] → score → [diagnose] → trainable → clean → gate."""
    gate = steps.GateSettings(
        settings.instance_status, settings.reward_key, settings.reward_threshold
    )
    read = partial(steps.read_problem, max_record_bytes=settings.max_record_bytes)
    stages = [
        Stage("read", check=read),
        Stage("validate", check=steps.validation_problem),
    ]
    if settings.redact == "mask":
        stages.append(Stage("redact", transform=steps.mask_secrets))
    elif settings.redact == "drop":
        stages.append(Stage("redact", check=steps.secrets_problem))
    score = partial(
        steps.score_bundle,
        scaffold=settings.scaffold,
        gate=gate if settings.sidecar else None,
        scaffold_hints=settings.scaffold_hints,
        tools=settings.tqs_tools,
    )
    stages.append(Stage("score", transform=score))
    if settings.diagnose is not None:  # on the text the agent saw, as TQS V2 scores it
        from transforms.diagnose_step import DIAGNOSE_STAGE, diagnose_bundle

        diagnose = partial(diagnose_bundle, settings=settings.diagnose)
        stages.append(Stage(DIAGNOSE_STAGE, transform=diagnose))
    if settings.trainable == "mark":
        stages.append(Stage(TRAINABLE, transform=steps.mark_untrainable))
    else:
        stages.append(Stage(TRAINABLE, check=steps.trainable_problem))
    stages.append(Stage("clean", transform=clean_after_survey))
    if settings.tokenizer:  # on the text as written
        from transforms.tokens import MAX_TOKENS_STAGE, TOKENS_STAGE, count_tokens, over_max

        stages.append(Stage(TOKENS_STAGE, transform=partial(count_tokens, path=settings.tokenizer)))
        if settings.max_tokens is not None:
            over = partial(over_max, max_tokens=settings.max_tokens)
            stages.append(Stage(MAX_TOKENS_STAGE, check=over))
    stages.append(Stage("gate", check=partial(steps.gate_problem, settings=gate)))
    return stages


READ_SIDE_STAGES = ("read", "validate", "redact")


def stages_where_read(settings: ChainSettings) -> list[Stage]:
    """The chain's first stages that a read-ahead helper runs on the bundles it opens
    (`transforms/read_ahead.py`): read, validate and redact need nothing of the run's
    process, and redaction is what moves enough CPU time to the helper's core to even the
    two out (scoring there as well leaves the helper the slower one)."""
    return list(takewhile(lambda s: s.name in READ_SIDE_STAGES, stages_before_judge(settings)))


def clean_after_survey(bundle: Bundle) -> Bundle:
    """The `clean` stage: `clean_bundle`, with what the redact stage's pass over each record
    found (`cleaning.after_survey`): one pass over a record's strings for both."""
    with after_survey(bundle):
        return steps.clean_bundle(bundle)


def stages_after_judge(settings: ChainSettings) -> list[Stage]:
    """filter → [system_prompt] (the bundled score filter reads TQS V2 and LLM judge scores
    alike; the system prompt policy comes last, so scorers and judges see what the agent
    saw and only the SFT files get the prompt set or dropped)."""
    score_filter = steps.FilterSettings(settings.min_score, settings.score_key)
    stages = [Stage("filter", check=partial(steps.score_filter_problem, settings=score_filter))]
    if settings.system_prompt != "keep":
        policy = partial(steps.apply_system_prompt, policy=settings.system_prompt)
        stages.append(Stage(SYSTEM_PROMPT, transform=policy))
    return stages


def stage_names(settings: ChainSettings) -> list[str]:
    return [s.name for s in (*stages_before_judge(settings), *stages_after_judge(settings))]


FORMAT_COUNT = "format."
FIDELITY_COUNT = "fidelity."


def read_counts(bundle: Mapping[str, Any]) -> dict[str, int]:
    """What one opened bundle adds to its job's counts: `read`, `format.<format>` and, from
    its main record's `_instance_metadata.fidelity`, what its reader dropped or rewrote
    (`fidelity.<format>.<kind>`, e.g. `fidelity.harbor-atif.placeholders_removed`)."""
    kind = str(bundle.get("format") or "unknown")
    counts = {"read": 1, f"{FORMAT_COUNT}{kind}": 1}
    records = bundle.get("records") or []
    metadata = records[0]["meta_info"]["unique_info"].get("_instance_metadata") if records else None
    fidelity = metadata.get("fidelity") if isinstance(metadata, Mapping) else None
    for what, count in fidelity.items() if isinstance(fidelity, Mapping) else ():
        if isinstance(count, int) and not isinstance(count, bool) and count:
            counts[f"{FIDELITY_COUNT}{kind}.{what}"] = count
    return counts


def pipeline_inputs(metrics: Mapping[str, int]) -> int | None:
    """What came in, by the pipeline's own counters (bundles opened plus inputs refused or
    lost at `detect` or `open`): the number the jobs' `in` must add up to. None when the
    runner gave no counters."""
    if f"{OPEN}.in" not in metrics and f"{DETECT}.in" not in metrics:
        return None
    return metrics.get(f"{OPEN}.kept", 0) + sum(
        metrics.get(f"{stage}.{kind}", 0)
        for stage in (DETECT, OPEN)
        for kind in (REJECTED, DEAD_LETTER)
    )


def fidelity_summary(counts: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """Per input format: bundles read and what the readers dropped or rewrote, by kind, from
    a job's (or a run's) counts — the manifest's `fidelity`."""
    summary: dict[str, dict[str, int]] = {}
    for key, value in sorted(counts.items()):
        if key.startswith(FORMAT_COUNT):
            summary.setdefault(key[len(FORMAT_COUNT) :], {})["bundles"] = value
        elif key.startswith(FIDELITY_COUNT):
            kind, _, what = key[len(FIDELITY_COUNT) :].rpartition(".")
            summary.setdefault(kind, {})[what] = value
    return summary


def written_counts(bundle: Mapping[str, Any]) -> dict[str, int]:
    """What one written bundle adds to its job's counts (with what its stages tallied)."""
    records = bundle["records"]
    main = sum(1 for record in records if agent_type(record) == "main")
    counts = {"written": 1, "records.main": main, "records.subagent": len(records) - main}
    counts.update(bundle.get(steps.TALLIES) or {})
    return counts


def accounting(counts: Mapping[str, int]) -> dict[str, Any]:
    """in = written + rejected + dead-lettered, from a job's (or a run's) counts.

    What comes in is every bundle opened (`read`) plus every input refused or lost before it
    became a bundle (rejected or dead-lettered at `detect` or `open`).
    """
    before_bundles = sum(
        counts.get(f"{kind}.{stage}", 0)
        for kind in (REJECTED, DEAD_LETTER)
        for stage in (DETECT, OPEN)
    )
    rejected = sum(v for k, v in counts.items() if k.startswith(f"{REJECTED}."))
    dead = sum(v for k, v in counts.items() if k.startswith(f"{DEAD_LETTER}."))
    seen = counts.get("read", 0) + before_bundles
    written = counts.get("written", 0)
    return {
        "in": seen,
        "written": written,
        "rejected": rejected,
        "dead_lettered": dead,
        "balanced": seen == written + rejected + dead,
    }
