"""Selection within one job (pure, no Beam): dedup, best-of-k and curriculum order.

A job is the unit of incremental runs (`--skip-unchanged` keeps or redoes whole jobs), so
selection never looks across jobs. What it sees of each bundle that passed the chain is a
small `Candidate` (its keys, task, verdict, score, turns and dedup keys), built once from
the bundle; the job's decision is a pure function of its candidates and of the outcomes of
the job's other scored trials (the pass rate of a task counts every scored trial of it).

Preference, wherever one candidate must win over another: resolved first, then the higher
`--score-key` (a missing score last), then the smaller instance id (then source): a fixed
order, so the same candidates always give the same decision whatever order they came in.

- **dedup** (`--dedup exact|near|off`, default exact): `exact` drops a candidate whose
  normalised main-agent messages (role, whitespace-collapsed text, reasoning, tool-call
  names and canonical arguments, tool results; no ids or metadata) hash to the same SHA-256
  as a preferred one; `near` also drops one whose MinHash (`datasketch` >= 2.0, affine32
  scheme, 128 permutations, seed 1, over the distinct word 5-shingles of that text) finds a
  preferred one through LSH with an estimated Jaccard similarity >= `NEAR_THRESHOLD` (0.9;
  LSH only proposes, the estimate decides). The reason names the kept one.
- **best-of-k** (`--best-of-k K`): per task, the K preferred candidates are kept (after
  dedup, so they are K distinct trajectories); the others are dropped naming those kept.
- **curriculum** (`--curriculum`): the kept candidates are ordered easier first: task pass
  rate descending (resolved / scored trials of the task in the job), then assistant turns
  ascending, then instance id; `rank` is the position in that order.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from scorers.im import agent_type

__all__ = [
    "BEST_OF_K",
    "DEDUP",
    "DEDUP_MODES",
    "NEAR_PERMUTATIONS",
    "NEAR_SEED",
    "NEAR_THRESHOLD",
    "Candidate",
    "SelectionSettings",
    "Verdict",
    "candidate_of",
    "exact_key",
    "minhash_key",
    "normalised_text",
    "select_job",
]

DEDUP = "dedup"  # the reject stages of selection drops
BEST_OF_K = "best_of_k"
DEDUP_MODES = ("exact", "near", "off")
NEAR_THRESHOLD = 0.9
NEAR_PERMUTATIONS = 128
NEAR_SEED = 1
NEAR_SCHEME = "affine32"  # datasketch >= 2.0's default, named: stored values carry no scheme
SHINGLE_WORDS = 5
_NAMED = 3  # kept instances named in a best-of-k reason


@dataclass(frozen=True)
class SelectionSettings:
    dedup: str = "exact"
    best_of_k: int | None = None
    curriculum: bool = False
    score_key: str = "composite_score"

    def __post_init__(self) -> None:
        if self.dedup not in DEDUP_MODES:
            raise ValueError(f"dedup must be one of {DEDUP_MODES}, not {self.dedup!r}")
        if self.best_of_k is not None and self.best_of_k < 1:
            raise ValueError("best_of_k must be at least 1")

    @property
    def active(self) -> bool:
        """Whether selection can drop or reorder anything (else the run skips it)."""
        return self.dedup != "off" or self.best_of_k is not None or self.curriculum


@dataclass(frozen=True)
class Candidate:
    """What selection knows of one bundle: `key` is its sort key (instance id, source)."""

    key: tuple[str, str]
    task: str
    resolved: bool
    score: float | None
    turns: int
    exact: str = ""
    near: bytes = b""  # the MinHash values (uint32, little-endian), `near` dedup only


@dataclass(frozen=True)
class Verdict:
    """Kept (with its curriculum key when ordered), or dropped at `stage` for `reason`."""

    kept: bool
    stage: str | None = None
    reason: str | None = None
    curriculum: dict[str, Any] | None = None


# --- keys of one bundle ------------------------------------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split())  # whitespace collapsed (faster than a regex)
    if value is None:
        return ""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _arguments(text: Any) -> str:
    """Arguments compared by meaning: parsed JSON re-dumped with sorted keys, else text."""
    if isinstance(text, str):
        try:
            return orjson.dumps(orjson.loads(text), option=orjson.OPT_SORT_KEYS).decode()
        except orjson.JSONDecodeError:
            return _text(text)
    return _text(text)


def _main_messages(records: Iterable[Mapping[str, Any]]) -> list[list[Any]]:
    normalised: list[list[Any]] = []
    for record in records:
        if agent_type(record) != "main":
            continue
        for message in record.get("messages") or []:
            calls = [
                [_text(function.get("name")), _arguments(function.get("arguments"))]
                for function in (c.get("function") or {} for c in message.get("tool_calls") or [])
            ]
            normalised.append(
                [
                    _text(message.get("role")),
                    _text(message.get("content")),
                    _text(message.get("reasoning_content")),
                    calls,
                ]
            )
    return normalised


def exact_key(records: Iterable[Mapping[str, Any]]) -> str:
    """SHA-256 of the normalised main-agent messages: equal for identical trajectories
    whatever their ids, scores or metadata."""
    return _exact_key(_main_messages(records))


def _exact_key(normalised: list[list[Any]]) -> str:
    return hashlib.sha256(orjson.dumps(normalised)).hexdigest()


def normalised_text(records: Iterable[Mapping[str, Any]]) -> str:
    """The main-agent messages as one text (the words near dedup shingles)."""
    return _joined(_main_messages(records))


def _joined(normalised: list[list[Any]]) -> str:
    parts: list[str] = []
    for role, content, reasoning, calls in normalised:
        parts.extend([role, content, reasoning])
        for name, arguments in calls:
            parts.extend([name, arguments])
    return " ".join(part for part in parts if part)


def minhash_key(records: Iterable[Mapping[str, Any]]) -> bytes:
    """The MinHash of the word 5-shingles of `normalised_text` (fixed seed): its values."""
    return _minhash_key(_main_messages(records))


def _minhash_key(normalised: list[list[Any]]) -> bytes:
    from datasketch import MinHash

    words = _joined(normalised).split(" ")
    shingles = {
        " ".join(words[i : i + SHINGLE_WORDS]).encode("utf-8")
        for i in range(max(1, len(words) - SHINGLE_WORDS + 1))
    }
    minhash = MinHash(num_perm=NEAR_PERMUTATIONS, seed=NEAR_SEED, scheme=NEAR_SCHEME)
    minhash.update_batch(sorted(shingles))
    return bytes(minhash.hashvalues.astype("<u4").tobytes())


def _best_score(records: Iterable[Mapping[str, Any]], score_key: str) -> float | None:
    """The best main-agent `_score[key]` (or `_llm_judge[key]`), as the score filter reads."""
    best: float | None = None
    for record in records:
        if agent_type(record) != "main":
            continue
        info = record["meta_info"]["unique_info"]
        value = (info.get("_score") or {}).get(
            score_key, (info.get("_llm_judge") or {}).get(score_key)
        )
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            best = float(value) if best is None else max(best, float(value))
    return best


def candidate_of(
    bundle: Mapping[str, Any], row: Mapping[str, Any], settings: SelectionSettings
) -> Candidate:
    """The candidate of a bundle that passed the chain, with its sidecar row (task, verdict
    and turns as the sidecar says them)."""
    records = bundle["records"]
    # the normalised messages both dedup keys are made of, computed once
    normalised = _main_messages(records) if settings.dedup != "off" else []
    return Candidate(
        key=(str(bundle["instance_id"]), str(bundle.get("source") or "")),
        task=str(row.get("task") or ""),
        resolved=bool(row.get("resolved")),
        score=_best_score(records, settings.score_key),
        turns=int(row.get("turns") or 0),
        exact=_exact_key(normalised) if settings.dedup != "off" else "",
        near=_minhash_key(normalised) if settings.dedup == "near" else b"",
    )


# --- the decision of one job -------------------------------------------------------------


def _preference(candidate: Candidate) -> tuple[Any, ...]:
    score = -candidate.score if candidate.score is not None else math.inf
    return (not candidate.resolved, score, candidate.key)


def _dedup_exact(ordered: list[Candidate], verdicts: dict[tuple[str, str], Verdict]) -> None:
    first: dict[str, Candidate] = {}
    for candidate in ordered:
        kept = first.setdefault(candidate.exact, candidate)
        if kept is not candidate:
            reason = f"exact duplicate of {kept.key[0]} (same normalised messages)"
            verdicts[candidate.key] = Verdict(False, DEDUP, reason)


def _dedup_near(ordered: list[Candidate], verdicts: dict[tuple[str, str], Verdict]) -> None:
    import numpy as np
    from datasketch import MinHash, MinHashLSH

    index = MinHashLSH(threshold=NEAR_THRESHOLD, num_perm=NEAR_PERMUTATIONS)
    kept: list[tuple[Candidate, MinHash]] = []
    for candidate in ordered:
        if candidate.key in verdicts:
            continue
        values = np.frombuffer(candidate.near, dtype="<u4").astype(np.uint32)
        minhash = MinHash(seed=NEAR_SEED, hashvalues=values, scheme=NEAR_SCHEME)
        similar = []
        for position in index.query(minhash):
            other, other_hash = kept[int(position)]
            similarity = minhash.jaccard(other_hash)
            if similarity >= NEAR_THRESHOLD:
                similar.append((_preference(other), similarity, other))
        if similar:
            _, similarity, other = min(similar, key=lambda item: item[0])
            reason = (
                f"near duplicate of {other.key[0]} (estimated Jaccard {similarity:.2f} "
                f">= {NEAR_THRESHOLD})"
            )
            verdicts[candidate.key] = Verdict(False, DEDUP, reason)
            continue
        index.insert(str(len(kept)), minhash)
        kept.append((candidate, minhash))


def _best_of_k(ordered: list[Candidate], k: int, verdicts: dict[tuple[str, str], Verdict]) -> None:
    by_task: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in ordered:
        if candidate.key not in verdicts:
            by_task[candidate.task].append(candidate)
    for task, candidates in by_task.items():
        best = candidates[:k]
        named = ", ".join(c.key[0] for c in best[:_NAMED])
        more = f" and {len(best) - _NAMED} more" if len(best) > _NAMED else ""
        for candidate in candidates[k:]:
            reason = f"best-of-{k} for task {task}: kept {named}{more}"
            verdicts[candidate.key] = Verdict(False, BEST_OF_K, reason)


def pass_rates(outcomes: Iterable[tuple[str, bool]]) -> dict[str, float]:
    """Resolved share per task, from (task, resolved) of every scored trial."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for task, resolved in outcomes:
        totals[task][0] += int(resolved)
        totals[task][1] += 1
    return {task: round(won / seen, 6) for task, (won, seen) in totals.items()}


def select_job(
    candidates: Sequence[Candidate],
    others: Iterable[tuple[str, bool]],
    settings: SelectionSettings,
) -> dict[tuple[str, str], Verdict]:
    """Each candidate's verdict. `others` are (task, resolved) of the job's scored trials
    that did not reach selection (rejected at the gate or by the score filter): they count
    in the tasks' pass rates."""
    ordered = sorted(candidates, key=_preference)
    verdicts: dict[tuple[str, str], Verdict] = {}
    if settings.dedup != "off":
        _dedup_exact(ordered, verdicts)
    if settings.dedup == "near":
        _dedup_near(ordered, verdicts)
    if settings.best_of_k is not None:
        _best_of_k(ordered, settings.best_of_k, verdicts)
    kept = [c for c in ordered if c.key not in verdicts]
    if not settings.curriculum:
        verdicts.update({c.key: Verdict(True) for c in kept})
        return verdicts
    rates = pass_rates([*((c.task, c.resolved) for c in candidates), *others])
    easier_first = sorted(kept, key=lambda c: (-rates[c.task], c.turns, c.key))
    for rank, candidate in enumerate(easier_first):
        order = {"rank": rank, "pass_rate": rates[candidate.task], "turns": candidate.turns}
        verdicts[candidate.key] = Verdict(True, curriculum=order)
    return verdicts
