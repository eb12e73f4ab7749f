"""Pure per-bundle steps of the curation chain (no Beam): read check, gate, clean, validate,
redact, score, trainable, system prompt, score filter.

Each step takes a bundle and returns either the bundle (to go on) or a drop reason;
`transforms/chain.py` names them, orders them and routes their results. What a transform
removes or masks is tallied on the bundle (`tallies`, summed per job into the manifest).

Scoring also leaves the bundle's sidecar row (`score_row`, see `transforms.report`): it needs
the scorer's trajectory, which exists only while scoring, so the row is built there with the
decision still open, and `decided_row` settles it where the bundle is kept or rejected.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from scorers import tqs_v2
from scorers.im import agent_type
from scorers.im_validity import bundle_problem, schema_problem
from scorers.im_validity import trainable_problem as record_trainable_problem
from scorers.tqs_v2.score import is_subagent, scored_trajectory, tool_call_errors
from transforms.cleaning import clean_record, clean_value
from transforms.readers.bundle import LINE_BYTES, VALIDATED
from transforms.redact import redact_bundle, redact_object
from transforms.report.rows import Decision, diagnosis_summary, judge_scores, score_row
from transforms.reward_gate import RESOLVED, gate_reason, outcome

MIB = 2**20
TALLIES = "tallies"
REDACT_MODE = "redact_mode"  # the `redact` stage's mode, on the bundles it saw
SCORE_ROW = "score_row"  # the bundle's sidecar row, set by `score_bundle`
SCORER_VERSION_KEY = "_scorer_version"  # beside `_score`: the TQS V2 version that made it
METADATA_KEY = "_instance_metadata"
TRAINABLE_KEY = "_trainable"  # `unique_info` key `trajcurate score` sets (`mark_untrainable`)


@dataclass(frozen=True)
class GateSettings:
    instance_status: str = "resolved"
    reward_key: str = "reward"
    reward_threshold: float = 1.0


@dataclass(frozen=True)
class FilterSettings:
    min_score: float | None = None
    score_key: str = "composite_score"


def read_problem(bundle: dict[str, Any], max_record_bytes: int | None = None) -> str | None:
    """A bundle a reader produced without records carries its reason as first warning; one
    with a record over `max_record_bytes` of text is refused too (`size_problem`)."""
    line_bytes = bundle.pop(LINE_BYTES, None)
    if bundle["records"]:
        if max_record_bytes is None:
            return None
        return size_problem(bundle, max_record_bytes, line_bytes)
    first = next(iter(bundle["warnings"]), "no records")
    return first.removeprefix("rejected: ")


def size_problem(
    bundle: dict[str, Any], max_record_bytes: int, line_bytes: list[int] | None = None
) -> str | None:
    """A record holding more text than `--max-record-mb` (counted in characters, a lower
    bound of its UTF-8 size) is refused: the bundle is rejected, naming its size.
    `line_bytes`, the lengths of the records' lines (`LINE_BYTES`), bound their text."""
    records = bundle["records"]
    if line_bytes is None or len(line_bytes) != len(records):
        line_bytes = None
    for index, record in enumerate(records):
        bound = (
            _serialised_size(record)
            if line_bytes is None
            else _line_bound(record, line_bytes[index])
        )
        if bound <= max_record_bytes:
            continue  # no walk needed
        size = text_size(record)
        if size > max_record_bytes:
            return (
                f"record too large: the {agent_type(record)} record holds {size / MIB:.1f} MiB "
                f"of text, over the --max-record-mb cap of {max_record_bytes / MIB:g} MiB"
            )
    return None


def _line_bound(record: dict[str, Any], line_bytes: int) -> int:
    """An upper bound of the record's text read from a line of `line_bytes` bytes: each
    character came from at least one byte of the line, but for its `_instance_metadata`,
    which readers rewrite (UTC timestamps, warnings, provenance) and which is bounded by the
    length of its JSON (C speed, where walking its strings took longer)."""
    info = record["meta_info"]["unique_info"]
    metadata = info.get(METADATA_KEY)
    return line_bytes + len(METADATA_KEY) + (0 if metadata is None else _serialised_size(metadata))


def _serialised_size(record: Any) -> int:
    """The length of the record's JSON (C speed), which bounds its characters from above;
    one orjson cannot serialise (a lone surrogate) counts as unbounded, so the walk measures
    it."""
    try:
        return len(orjson.dumps(record))
    except orjson.JSONEncodeError:
        return sys.maxsize


def text_size(value: Any) -> int:
    """The number of characters in every string (keys included) of a JSON-like value; a
    loop, not recursion, so no nesting depth can stop it."""
    size, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            size += len(item)
        elif isinstance(item, dict):
            size += sum(map(len, item))
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return size


def gate_problem(bundle: dict[str, Any], settings: GateSettings) -> str | None:
    result = outcome(bundle["rewards"], settings.reward_key, settings.reward_threshold)
    return gate_reason(result, settings.instance_status)


def validation_problem(bundle: dict[str, Any]) -> str | None:
    """Records that are not structurally IM cannot be scored: the bundle is rejected. Those
    of a bundle its reader validated (`VALIDATED`, taken off here) are not checked again."""
    if bundle.pop(VALIDATED, False) and bundle["records"]:
        return None
    return bundle_problem(bundle["records"], schema_problem)


def trainable_problem(bundle: dict[str, Any]) -> str | None:
    """Why a scored bundle cannot become SFT data (a record's role order, nothing to learn)."""
    return bundle_problem(bundle["records"], record_trainable_problem)


def mark_untrainable(bundle: dict[str, Any]) -> dict[str, Any]:
    """`trajcurate score`: every record keeps its score; `_trainable` says why the bundle
    cannot become SFT data (null when it can)."""
    reason = trainable_problem(bundle)
    for record in bundle["records"]:
        record["meta_info"]["unique_info"][TRAINABLE_KEY] = reason
    if reason is not None:
        _tally(bundle, {"trainable.marked": 1})
    return bundle


def apply_system_prompt(bundle: dict[str, Any], policy: str) -> dict[str, Any]:
    """`--system-prompt`: "keep" leaves every record as it is; "drop" removes each record's
    leading system messages (counted `system_prompt.dropped`); any other text becomes the
    system prompt of each record whose own is empty or absent (`system_prompt.set`) — a
    record that has one keeps it: it is what the model saw, and its tools and answers
    follow from it."""
    if policy == "keep":
        return bundle
    changed = sum(_system_prompt(record, policy) for record in bundle["records"])
    kind = "dropped" if policy == "drop" else "set"
    _tally(bundle, {f"system_prompt.{kind}": changed})
    return bundle


def _system_prompt(record: dict[str, Any], policy: str) -> bool:
    """Apply `policy` ("drop" or a text) to one record; whether it changed."""
    messages = record["messages"]
    leading = 0
    while leading < len(messages) and messages[leading].get("role") == "system":
        leading += 1
    if policy == "drop":
        del messages[:leading]
        return leading > 0
    if any(str(m.get("content") or "").strip() for m in messages[:leading]):
        return False
    messages[:leading] = [{"role": "system", "content": policy}]
    return True


def _tally(bundle: dict[str, Any], counts: Mapping[str, int]) -> None:
    tallies = bundle.setdefault(TALLIES, {})
    for name, value in counts.items():
        if value:
            tallies[name] = tallies.get(name, 0) + value


def clean_bundle(bundle: dict[str, Any]) -> dict[str, Any]:
    """Remove control characters from every string of every record (counted), and from the
    sidecar row (its texts come from the records: not counted twice)."""
    removed = sum(clean_record(record) for record in bundle["records"])
    _tally(bundle, {"cleaned.control_chars": removed})
    if isinstance(bundle.get(SCORE_ROW), dict):
        bundle[SCORE_ROW] = clean_value(bundle[SCORE_ROW])[0]
    return bundle


def mask_secrets(bundle: dict[str, Any]) -> dict[str, Any]:
    """Replace every secret found with a typed placeholder (counted per kind)."""
    found = redact_bundle(bundle, "mask")
    bundle[REDACT_MODE] = "mask"
    _tally(bundle, {f"redacted.{kind}": n for kind, n in found.items()})
    return bundle


def secrets_problem(bundle: dict[str, Any]) -> str | None:
    """`--redact drop`: a bundle holding any secret is rejected, naming the kinds found."""
    found = redact_bundle(bundle, "drop")
    bundle[REDACT_MODE] = "drop"
    if not found:
        return None
    kinds = ", ".join(f"{kind} x{n}" for kind, n in sorted(found.items()))
    return f"secrets found ({kinds})"


def mask_judge_answers(bundle: dict[str, Any], key: str) -> dict[str, Any]:
    """The LLM judges' outputs (under `unique_info[key]`: scores, `llm_detailed_results`,
    `llm_raw_response`, ...) masked like the records were, when the bundle went through
    the `redact` stage: the judge's own answers are written out too (counted per kind)."""
    if bundle.get(REDACT_MODE) is None:
        return bundle
    found: Counter[str] = Counter()
    for record in bundle["records"]:
        outputs = record["meta_info"]["unique_info"].get(key)
        if isinstance(outputs, dict | list):
            found += redact_object(outputs)
    _tally(bundle, {f"redacted.{kind}": n for kind, n in found.items()})
    return bundle


def score_bundle(
    bundle: dict[str, Any],
    scaffold: str | None = None,
    gate: GateSettings | None = None,
    scaffold_hints: bool = False,
    tools: str = "parity",
) -> dict[str, Any]:
    """Set `_score` on every record (None on subagents), with `_scorer_version` beside it
    (the reference's `_score` keys stay as they are), and note tool-call error counts.
    With `gate` (a run that writes the sidecar), also build the sidecar row of the first
    main record from the same trajectory: one pass. `scaffold_hints` scores by the
    converter's `_instance_metadata.scaffold` (each `_score` then says where its scaffold
    came from); off, records score as the reference scores them. `tools` "extended" scores
    with the tools of newer agents known too (each `_score` then has `tqs_tools`)."""
    counts = []
    row: dict[str, Any] | None = None
    for record in bundle["records"]:
        info = record["meta_info"]["unique_info"]
        if gate is None or row is not None or is_subagent(record):
            score, calls, errors = tqs_v2.score_and_count(
                record, scaffold=scaffold, scaffold_hints=scaffold_hints, tools=tools
            )
            info["_score"] = score
        else:  # the row's language and tool errors come from the scorer's trajectory
            info["_score"], trajectory = scored_trajectory(record, scaffold, scaffold_hints, tools)
            calls, errors = tool_call_errors(trajectory)
            row = _open_row(bundle, record, trajectory, gate)
        info[SCORER_VERSION_KEY] = tqs_v2.SCORER_VERSION if info["_score"] is not None else None
        counts.append([calls, errors])
    scored = dict(bundle)
    scored["tool_call_counts"] = counts
    if row is not None:
        scored[SCORE_ROW] = row
    return scored


def _open_row(
    bundle: Mapping[str, Any], record: dict[str, Any], trajectory: Any, gate: GateSettings
) -> dict[str, Any]:
    """The sidecar row as scoring sees it: the reward gate's reading, decision still open."""
    rewards = bundle.get("rewards") or {}
    reward = rewards.get(gate.reward_key)
    number = None if isinstance(reward, bool) or not isinstance(reward, int | float) else reward
    resolved = outcome(rewards, gate.reward_key, gate.reward_threshold) == RESOLVED
    job = bundle.get("job")
    return score_row(
        record,
        job=job if isinstance(job, str) else "standalone",  # as chain.job_of
        reward=None if number is None else float(number),
        resolved=resolved,
        decision="kept",
        trajectory=trajectory,
    )


def decided_row(
    bundle: Mapping[str, Any], decision: Decision, reason: str | None = None
) -> dict[str, Any] | None:
    """The bundle's sidecar row with where it ended (None for a bundle never scored). The
    judges' scores and the diagnosis are read again: they came after scoring."""
    row = bundle.get(SCORE_ROW)
    if not isinstance(row, dict):
        return None
    main = next((r for r in bundle["records"] if agent_type(r) == "main"), None)
    info = main["meta_info"]["unique_info"] if main is not None else {}
    return {
        **row,
        "judges": judge_scores(info),
        "diagnosis": diagnosis_summary(info),
        "decision": decision,
        "reason": None if decision == "kept" else reason,
    }


def best_main_score(bundle: Mapping[str, Any], score_key: str) -> float | None:
    best: float | None = None
    for record in bundle["records"]:
        info = record["meta_info"]["unique_info"]
        if info.get("_agent_type", "main") != "main":
            continue
        scores = info.get("_score") or {}
        value = scores.get(score_key, (info.get("_llm_judge") or {}).get(score_key))
        if isinstance(value, int | float) and (best is None or value > best):
            best = float(value)
    return best


def score_filter_problem(bundle: Mapping[str, Any], settings: FilterSettings) -> str | None:
    """Keep or drop the whole bundle on its best main-agent score."""
    if settings.min_score is None:
        return None
    best = best_main_score(bundle, settings.score_key)
    if best is None:
        return f"no main-agent {settings.score_key}"
    if best < settings.min_score:
        return f"best main-agent {settings.score_key} {best:.4f} < {settings.min_score}"
    return None
