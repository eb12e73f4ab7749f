"""The per-job sidecar `scores.jsonl` and the curriculum key of written records (pure).

Rows (see `transforms.report`) come from bundles: `bundle_steps.decided_row`. The sidecar is
written sorted by instance id (then the line, for two trials sharing an id), one
`orjson.dumps(row)` a line, as `transforms.report.rows.write_rows` writes it, so the same
rows give the same bytes whoever writes them (Beam, the plain loop, a test).

A job's rows and its candidates' stats wait for the job's decision (they are grouped per
job), so they travel as their JSON bytes (a row is ~0.6 KB so, ~3.5 KB as Python objects),
and a row's line, locally, as where it was spilled (`transforms/sinks/row_spill.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import groupby
from typing import Any, TypeVar

import orjson

from transforms.bundle_steps import decided_row
from transforms.chain import reject_record, written_counts
from transforms.redact import mask_secrets_in_text
from transforms.report import SIDECAR
from transforms.selection import SelectionSettings, Verdict, candidate_of, select_job
from transforms.sinks.schema import lf_json_text
from transforms.sinks.stats import Stats

__all__ = [
    "CANDIDATE",
    "ROW",
    "SIDECAR",
    "candidate_item",
    "decide_job",
    "kept_in_order",
    "kept_outcomes",
    "prior_row",
    "settle_job",
    "sidecar_bytes",
    "sidecar_lines",
    "stats_bytes",
    "stats_of",
    "with_curriculum",
]

ROW = "row"  # a job's item: the sidecar row of a bundle rejected after scoring
CANDIDATE = "candidate"  # a job's item: a bundle that passed the chain (`candidate_item`)

Ref = TypeVar("Ref")


Entry = tuple[str, Any, "Verdict | None"]  # (instance id, row line or its spill ref, verdict)


def sidecar_lines(entries: list[Entry], line_of: Callable[[Any], bytes]) -> Iterator[bytes]:
    """The file's lines (each with its newline) in order: by instance id, then by line (two
    trials sharing an id); `line_of` gives an entry's row line (inline, or read back from a
    spill), settled by its selection verdict."""
    entries.sort(key=lambda entry: entry[0])
    for _, group in groupby(entries, key=lambda entry: entry[0]):
        lines = [_settled(line_of(row), verdict) for _, row, verdict in group]
        for line in sorted(lines) if len(lines) > 1 else lines:
            yield line + b"\n"


def _inline(line: bytes) -> bytes:
    return line


def sidecar_bytes(entries: list[Entry], line_of: Callable[[Any], bytes] = _inline) -> bytes:
    """The whole file's bytes (`sidecar_lines`), every line inline by default."""
    return b"".join(sidecar_lines(entries, line_of))


def prior_row(row: Mapping[str, Any]) -> tuple[str, str, bool, bytes]:
    """A row settled before selection (a reject after scoring), as its job's decision needs
    it: (instance id, task, resolved, line)."""
    return str(row["instance_id"]), str(row["task"]), bool(row["resolved"]), orjson.dumps(row)


def stats_bytes(stats: Stats) -> bytes:
    """A bundle's own stats as bytes: `Stats.to_state` without its copy (the bytes are one)."""
    return orjson.dumps(vars(stats))


def stats_of(data: bytes | dict[str, Any]) -> Stats:
    """`Stats.from_state` of `stats_bytes` (or of its decoded state), without its copy (the
    state is freshly decoded)."""
    stats = Stats()
    vars(stats).update(orjson.loads(data) if isinstance(data, bytes) else data)
    return stats


def with_curriculum(
    im_block: bytes, lf_block: bytes, order: Mapping[str, Any]
) -> tuple[bytes, bytes]:
    """A written part's IM lines and LF items with `_curriculum` set (`--curriculum`).

    The key's place is already in every conformed record (null until the job's order is
    known, after every bundle was rendered), so setting it keeps the schema's key order.
    """
    im_lines = []
    for line in im_block.splitlines():
        record = orjson.loads(line)
        record["meta_info"]["unique_info"]["_curriculum"] = dict(order)
        im_lines.append(orjson.dumps(record) + b"\n")
    lf_items = []
    for item in lf_block.split(b"\n") if lf_block else []:
        example = orjson.loads(item)
        if isinstance(example, dict) and "_curriculum" in example:
            example["_curriculum"] = lf_json_text(dict(order))  # LF metadata is JSON text
        lf_items.append(orjson.dumps(example))
    return b"".join(im_lines), b"\n".join(lf_items)


def kept_in_order(
    refs: Iterable[Ref], key: Callable[[Ref], Any], kept: Mapping[Any, Any] | None
) -> list[Ref]:
    """The written parts of a job (or shard) in output order: by sort key; with `kept`
    (selection's verdicts: sort key -> curriculum order or None) only the kept ones, in
    curriculum rank order when the job has one."""
    ordered = sorted(refs, key=key)
    if kept is None:
        return ordered
    ordered = [ref for ref in ordered if tuple(key(ref)) in kept]
    if any(order is not None for order in kept.values()):
        ordered.sort(key=lambda ref: kept[tuple(key(ref))]["rank"])
    return ordered


def candidate_item(
    bundle: dict[str, Any], settings: SelectionSettings, stats: Stats | None = None
) -> dict[str, Any]:
    """One written bundle as its job's decision sees it (plain values: it is pickled): its
    sort key, its sidecar row (line) and, with selection active, its `Candidate` and its
    `outcome` line: the counts and stats that count only if selection keeps it and the
    reject record it gets if not. Both lines may be spilled (`RowSpill`): a job's decision
    holds all its items at once, and the outcome is most of an item (about 1.3 of 1.6 kB)."""
    row = decided_row(bundle, "kept")
    item: dict[str, Any] = {
        "key": (str(bundle["instance_id"]), str(bundle.get("source") or "")),
        "row": None if row is None else orjson.dumps(row),
        "candidate": candidate_of(bundle, row, settings) if row and settings.active else None,
    }
    if settings.active:
        outcome = {
            "counts": written_counts(bundle),
            "stats": None if stats is None else orjson.Fragment(stats_bytes(stats)),
            "reject": reject_record("", bundle, ""),
        }
        item["outcome"] = orjson.dumps(outcome)
    return item


def decide_job(
    items: Iterable[tuple[str, Any]], settings: SelectionSettings
) -> tuple[dict[tuple[str, str], Verdict], list[Entry], list[dict[str, Any]]]:
    """The job's verdicts (by bundle key), its sidecar's entries (`sidecar_lines` orders and
    settles them), and the candidate items. `items` are (ROW, `prior_row`) and (CANDIDATE,
    `candidate_item`) pairs, their lines inline or spilled."""
    prior: list[tuple[str, str, bool, bytes]] = []
    written: list[dict[str, Any]] = []
    for kind, value in items:
        if kind == ROW:
            prior.append(value)
        else:
            written.append(value)
    verdicts: dict[tuple[str, str], Verdict] = {}
    if settings.active:
        candidates = [item["candidate"] for item in written if item["candidate"] is not None]
        others = [(task, resolved) for _, task, resolved, _ in prior]
        verdicts = select_job(candidates, others, settings)
    entries: list[Entry] = [(instance_id, line, None) for instance_id, _, _, line in prior]
    for item in written:
        if item["row"] is not None:
            entries.append((item["key"][0], item["row"], verdicts.get(item["key"])))
    return verdicts, entries, written


def _settled(line: bytes, verdict: Verdict | None) -> bytes:
    if verdict is None or verdict.kept:
        return line
    row = orjson.loads(line)
    return orjson.dumps({**row, "decision": "rejected", "reason": _reason(verdict)})


def _reason(verdict: Verdict) -> str:
    """A selection drop's reason as its reject writes it (masked like every reason)."""
    return mask_secrets_in_text(verdict.reason or "")


def settle_job(
    verdicts: Mapping[tuple[str, str], Verdict],
    written: Iterable[Mapping[str, Any]],
    line_of: Callable[[Any], bytes] = _inline,
) -> tuple[dict[tuple[str, str], Any], list[dict[str, Any]]]:
    """What selection kept (sort key -> curriculum order or None, for the shard writer) and
    the reject records of what it dropped (stage `dedup` / `best_of_k`); `line_of` reads an
    item's outcome line (spilled or, by default, inline)."""
    kept: dict[tuple[str, str], Any] = {}
    dropped: list[dict[str, Any]] = []
    for item in written:
        verdict = verdicts.get(item["key"], Verdict(True))
        if verdict.kept:
            kept[item["key"]] = verdict.curriculum
        else:
            reject = orjson.loads(line_of(item["outcome"]))["reject"]
            dropped.append({**reject, "stage": verdict.stage, "reason": _reason(verdict)})
    return kept, dropped


def kept_outcomes(
    written: Iterable[Mapping[str, Any]],
    kept: Mapping[tuple[str, str], Any],
    line_of: Callable[[Any], bytes] = _inline,
) -> Iterator[dict[str, Any]]:
    """The outcome (counts and stats) of each kept item, read one at a time."""
    for item in written:
        if item["key"] in kept:
            yield orjson.loads(line_of(item["outcome"]))
