"""Pure per-bundle steps of the curation chain (no Beam): read check, gate, clean, validate,
redact, score, score filter.

Each step takes a bundle and returns either the bundle (to go on) or a drop reason;
`transforms/chain.py` names them, orders them and routes their results. What a transform
removes or masks is tallied on the bundle (`tallies`, summed per job into the manifest).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scorers import tqs_v2
from scorers.im_validity import bundle_problem
from transforms.cleaning import clean_record
from transforms.redact import redact_bundle
from transforms.reward_gate import gate_reason, outcome

TALLIES = "tallies"


@dataclass(frozen=True)
class GateSettings:
    instance_status: str = "resolved"
    reward_key: str = "reward"
    reward_threshold: float = 1.0


@dataclass(frozen=True)
class FilterSettings:
    min_score: float | None = None
    score_key: str = "composite_score"


def read_problem(bundle: dict[str, Any]) -> str | None:
    """A bundle a reader produced without records carries its reason as first warning."""
    if bundle["records"]:
        return None
    first = next(iter(bundle["warnings"]), "no records")
    return first.removeprefix("rejected: ")


def gate_problem(bundle: dict[str, Any], settings: GateSettings) -> str | None:
    result = outcome(bundle["rewards"], settings.reward_key, settings.reward_threshold)
    return gate_reason(result, settings.instance_status)


def validation_problem(bundle: dict[str, Any]) -> str | None:
    return bundle_problem(bundle["records"])


def _tally(bundle: dict[str, Any], counts: Mapping[str, int]) -> None:
    tallies = bundle.setdefault(TALLIES, {})
    for name, value in counts.items():
        if value:
            tallies[name] = tallies.get(name, 0) + value


def clean_bundle(bundle: dict[str, Any]) -> dict[str, Any]:
    """Remove control characters from every string of every record (counted)."""
    removed = sum(clean_record(record) for record in bundle["records"])
    _tally(bundle, {"cleaned.control_chars": removed})
    return bundle


def mask_secrets(bundle: dict[str, Any]) -> dict[str, Any]:
    """Replace every secret found with a typed placeholder (counted per kind)."""
    found = redact_bundle(bundle, "mask")
    _tally(bundle, {f"redacted.{kind}": n for kind, n in found.items()})
    return bundle


def secrets_problem(bundle: dict[str, Any]) -> str | None:
    """`--redact drop`: a bundle holding any secret is rejected, naming the kinds found."""
    found = redact_bundle(bundle, "drop")
    if not found:
        return None
    kinds = ", ".join(f"{kind} x{n}" for kind, n in sorted(found.items()))
    return f"secrets found ({kinds})"


def score_bundle(
    bundle: dict[str, Any], scaffold: str | None = None, scaffold_hints: bool = False
) -> dict[str, Any]:
    """Set `_score` on every record (None on subagents) and note tool-call error counts.

    `scaffold_hints` scores by the converter's `_instance_metadata.scaffold` (each `_score`
    then says where its scaffold came from); off, records score as the reference scores them.
    """
    counts = []
    for record in bundle["records"]:
        score, calls, errors = tqs_v2.score_and_count(
            record, scaffold=scaffold, scaffold_hints=scaffold_hints
        )
        record["meta_info"]["unique_info"]["_score"] = score
        counts.append([calls, errors])
    scored = dict(bundle)
    scored["tool_call_counts"] = counts
    return scored


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
