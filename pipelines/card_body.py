"""The body of a run's dataset card: where the data came from and what was done to it.

Plain Markdown tables from the run manifest, the job manifests, the run's `lf.stats.json`
and the rewards of the written trials. Names that come from the inputs (job, scaffold and
model names) are data: every cell is escaped, so a `|`, a newline or HTML in a name stays
text in its own cell.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipelines.dataset_card import (
    MERGED_CONFIG,
    MERGED_LF_CONFIG,
    CardInputs,
    JobData,
    config_names,
    has_records,
)

__all__ = ["CARD_SHOWN_OPTIONS", "card_body", "reward_bins"]

# The options that decide what is in the data (paths, credentials and runtime knobs stay out).
CARD_SHOWN_OPTIONS = (
    "instance_status",
    "reward_key",
    "reward_threshold",
    "min_score",
    "score_key",
    "dedup",
    "best_of_k",
    "curriculum",
    "redact",
    "tqs_tools",
    "diagnose",
    "llm_judge",
    "system_prompt",
    "max_record_mb",
    "lf_template",
    "lf_call_text",
    "lf_reasoning",
    "lf_parallel_calls",
    "chat_template_tokenizer",
    "tokenizer",
    "max_tokens",
    "val_fraction",
    "split_seed",
    "messages_format",
    "num_shards",
    "parquet",
)
_PATH_OPTIONS = frozenset({"chat_template_tokenizer", "tokenizer"})
_BINS = 10


def _cell(value: Any) -> str:
    """A value as one Markdown table cell: no line break, no column break, no HTML."""
    text = "—" if value is None else str(value)
    text = " ".join(text.split())
    for raw, escaped in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(raw, escaped)
    return text.replace("`", "\\`")


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value == value else "nan"
    return str(value)


def reward_bins(rewards: Iterable[float | None]) -> dict[str, int]:
    """Rewards in 10 bins of 0.1 over [0, 1] (the last closed), plus below 0, above 1, none."""
    counts = dict.fromkeys([*_bin_labels(), "below 0", "above 1", "none"], 0)
    labels = _bin_labels()
    for reward in rewards:
        if reward is None:
            counts["none"] += 1
        elif reward < 0:
            counts["below 0"] += 1
        elif reward > 1:
            counts["above 1"] += 1
        else:
            counts[labels[min(round(reward * 1_000_000) * _BINS // 1_000_000, 9)]] += 1
    return counts


def _bin_labels() -> list[str]:
    return [f"{i / _BINS:.1f}-{(i + 1) / _BINS:.1f}" for i in range(_BINS)]


def card_body(inputs: CardInputs, meta: Mapping[str, Any]) -> str:
    """The Markdown under the card's front matter."""
    jobs = sorted(inputs.jobs, key=lambda j: j.folder)
    sections = [
        f"# {_cell(meta['pretty_name'])}\n\n{_summary(inputs, jobs)}",
        _loading(inputs),
        "## Jobs\n\n" + _jobs_table(jobs),
        _rejections(inputs.run),
        _sources(inputs.stats),
        _scoring(inputs, jobs),
        "## Filters and options\n\n" + _options_table(inputs.run.get("options") or {}),
        _distributions(inputs, jobs),
    ]
    return "\n".join(s for s in sections if s)


def _counts(job: JobData) -> tuple[int, int]:
    counts = job.manifest.get("counts") or {}
    return int(counts.get("records.main", 0)), int(counts.get("records.subagent", 0))


def _summary(inputs: CardInputs, jobs: Sequence[JobData]) -> str:
    main = sum(_counts(j)[0] for j in jobs)
    sub = sum(_counts(j)[1] for j in jobs)
    accounting = inputs.run.get("accounting") or {}
    version = inputs.run.get("trajcurate_version", "unknown")
    return (
        f"Supervised fine-tuning data made from coding-agent trajectories by trajcurate "
        f"{_cell(version)}: {len(jobs)} job(s), {main + sub:,} records ({main:,} main-agent, "
        f"{sub:,} subagent) from {accounting.get('written', 0):,} of "
        f"{accounting.get('in', 0):,} trials read; every trial is accounted for "
        f"(in = written + rejected + dead-lettered: "
        f"{'yes' if accounting.get('balanced') else 'no'}).\n"
    )


def _loading(inputs: CardInputs) -> str:
    kind = "Parquet" if inputs.parquet else "JSON"
    text = (
        "## Loading\n\n"
        f"Configs (data files: {kind}): `{MERGED_CONFIG}` (default) holds the IM records of "
        f"every job (OpenAI-style `messages` and `tools`, scores and provenance), "
        f"`{MERGED_LF_CONFIG}` every job's LLaMA-Factory sharegpt examples, and one config "
        "per job that wrote a record its IM records.\n\n"
        "```python\nfrom datasets import load_dataset\n\n"
        f'records = load_dataset("PATH_OR_REPO", "{MERGED_CONFIG}", split="train")\n'
        f'lf = load_dataset("PATH_OR_REPO", "{MERGED_LF_CONFIG}", split="train")\n```\n\n'
        "LLaMA-Factory: `dataset_info.json` beside this card registers every job by name; "
        "train with `dataset_dir:` this folder and `dataset:` one or more of those names"
    )
    if inputs.parquet:
        text += f", or `{MERGED_CONFIG}` for every job at once"
    text += ".\n"
    if not inputs.parquet:
        text += (
            "\nThe JSON files declare no types: several jobs load together with "
            "`features=hf_features(kind)` (trajcurate's `transforms/sinks/schema.py`), or "
            "from the Parquet files of a `--parquet` run.\n"
        )
    if inputs.rendered:
        text += (
            "\nThe LF examples are rendered by a chat template: train them with "
            "`template: empty`.\n"
        )
    return text


def _jobs_table(jobs: Sequence[JobData]) -> str:
    names = config_names([j.folder for j in jobs])
    rows = []
    for job in jobs:
        accounting = job.manifest.get("accounting") or {}
        main, sub = _counts(job)
        shown = job.folder if job.job == job.folder else f"{job.folder} ({job.job})"
        rows.append(
            [
                names[job.folder] if has_records(job) else "—",
                shown,
                accounting.get("in", 0),
                accounting.get("written", 0),
                accounting.get("rejected", 0),
                accounting.get("dead_lettered", 0),
                main,
                sub,
            ]
        )
    header = ["config", "job", "trials in", "written", "rejected", "dead-lettered", "main"]
    return _table([*header, "subagent"], rows)


def _rejections(run: Mapping[str, Any]) -> str:
    counts = run.get("counts") or {}
    rows = [
        (key.removeprefix("rejected."), n)
        for key, n in sorted(counts.items())
        if key.startswith("rejected.") and n
    ]
    if not rows:
        return ""
    return "## Rejected trials, by stage\n\n" + _table(["stage", "trials"], rows)


def _sources(stats: Mapping[str, Any]) -> str:
    agents = stats.get("by_agent") or {}
    models = stats.get("by_model") or {}
    if not agents and not models:
        return ""
    agent_rows = [
        (name, g.get("count"), g.get("main"), g.get("subagent"), _mean(g))
        for name, g in sorted(agents.items())
    ]
    model_rows = [(name, g.get("count"), _mean(g)) for name, g in sorted(models.items())]
    return (
        "## Sources\n\nAgents (scaffolds) and models of the written records:\n\n"
        + _table(["scaffold", "records", "main", "subagent", "mean composite"], agent_rows)
        + "\n"
        + _table(["model", "records", "mean composite"], model_rows)
    )


def _mean(group: Mapping[str, Any]) -> str:
    mean = group.get("mean_composite")
    return "—" if mean is None else _number(float(mean))


def _scoring(inputs: CardInputs, jobs: Sequence[JobData]) -> str:
    found = [inputs.run.get("scorer") or {}, *(j.manifest.get("scorer") or {} for j in jobs)]
    scorers = sorted({f"{s.get('name')} {s.get('version')}" for s in found if s})
    options = inputs.run.get("options") or {}
    lines = [
        "## Scoring\n",
        f"- rule-based process score (`unique_info._score`): {', '.join(scorers) or 'unknown'}"
        f" (tools: {_cell(options.get('tqs_tools', 'parity'))})",
    ]
    if options.get("llm_judge"):
        lines.append(
            f"- LLM judge (`unique_info._llm_judge`): {_cell(options['llm_judge'])} checklist, "
            f"model {_cell(options.get('llm_model'))}"
        )
    else:
        lines.append("- LLM judge: not run")
    lines.append("- correctness: the verifier's reward, kept apart from both scores")
    return "\n".join(lines) + "\n"


def _options_table(options: Mapping[str, Any]) -> str:
    rows = []
    for name in CARD_SHOWN_OPTIONS:
        if name not in options:
            continue
        value = options[name]
        if name in _PATH_OPTIONS and isinstance(value, str):
            value = posixpath.basename(value.rstrip("/"))  # the model, not a local path
        rows.append(("--" + name.replace("_", "-"), _option_value(value)))
    return _table(["option", "value"], rows)


def _option_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "on" if value else "off"
    return _number(value) if isinstance(value, float) else str(value)


def _distributions(inputs: CardInputs, jobs: Sequence[JobData]) -> str:
    rewards = reward_bins(r for job in jobs for r in job.rewards)
    histogram = (inputs.stats.get("score_histogram") or {}).get("composite_score") or []
    scores = dict(zip(_bin_labels(), histogram, strict=False))
    scored = sum(histogram)
    scores["none"] = max(int(inputs.stats.get("count", 0)) - scored, 0)
    rows: list[tuple[str, Any, Any]] = [
        (label, rewards[label], scores.get(label, 0))
        for label in rewards
        if label in scores or rewards[label]
    ]
    composite = (inputs.stats.get("scores") or {}).get("mean")
    known = [r for job in jobs for r in job.rewards if r is not None]
    mean_reward = sum(known) / len(known) if known else None
    rows.append(
        (
            "mean",
            "—" if mean_reward is None else _number(mean_reward),
            "—" if composite is None else _number(float(composite)),
        )
    )
    return (
        "## Reward and score distributions\n\n"
        "Reward: the verifier's, per written trial. Composite: TQS V2's `composite_score`, "
        "per written record that has one (subagent records have none).\n\n"
        + _table(["bin", "reward (trials)", "composite (records)"], rows)
    )
