"""ATIF trajectories (formats.md §2) -> IM records: the main agent first, then its subagents.

`read` takes a standalone `trajectory.json`; Harbor's trial reader calls `records_from_atif`
for `agent/trajectory.json`. Both follow continuations (`continued_trajectory_ref`, sibling
`trajectory.cont-<n>.json`) and turn the three subagent forms into subagent records of the
same instance: referenced files (`subagent_trajectory_ref[].trajectory_path`), embedded
`subagent_trajectories[]` (matched by `trajectory_id`), and Claude Code's flattened
`extra.is_sidechain` steps: one subagent record per sidechain, its prompt first, warmups left
out (`atif_sidechains.py`). Claude Code trajectories lose what Harbor's converter wrote
that the model never saw (`atif_claude.py`): step placeholders, UI metadata and error
markers in tool results; each removal is counted in `_instance_metadata.fidelity` and
warned once, and errored calls are listed in `_instance_metadata.errored_tool_call_ids`.
Problems with referenced files are warnings, never crashes.
Every file is opened through a `TrialFiles` (the trial folder, or a standalone file's own
folder): confined, regular files only, size-capped. A message or content of the wrong JSON
type refuses the trajectory (see `atif_messages.py`).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transforms.json_text import JSON_OBJECT
from transforms.readers.atif_claude import HarborClaudeCleanup, is_claude_code
from transforms.readers.atif_files import (
    CONTINUATION_NAME,
    load_continuations,
    load_document,
    resolve_inside,
    shown_path,
    shown_real,
)
from transforms.readers.atif_messages import is_terminus, steps_to_messages
from transforms.readers.atif_schema import schema_problems
from transforms.readers.atif_sidechains import (
    Sidechain,
    is_warmup,
    spawn_prompts,
    split_sidechains,
)
from transforms.readers.bundle import (
    Bundle,
    ReaderError,
    new_bundle,
    note_fidelity,
    standalone_instance_id,
)
from transforms.readers.confined import DEFAULT_LIMITS, FileMissing, ReadLimits, TrialFiles
from transforms.readers.conversation import Message
from transforms.readers.im_builder import build_im_record, date_of, scaffold_for_agent

__all__ = ["read", "records_from_atif"]

MAX_SUBAGENT_DEPTH = 8
# ATIF final_metrics key -> Harbor agent_result key (the `_usage` vocabulary).
USAGE_KEYS = {
    "total_prompt_tokens": "n_input_tokens",
    "total_cached_tokens": "n_cache_tokens",
    "total_completion_tokens": "n_output_tokens",
    "total_cost_usd": "cost_usd",
}
_STEP_USAGE_KEYS = {
    "prompt_tokens": "n_input_tokens",
    "cached_tokens": "n_cache_tokens",
    "completion_tokens": "n_output_tokens",
    "cost_usd": "cost_usd",
}


@dataclass
class _Trajectory:
    """One converted trajectory: the messages of one record and what the record needs."""

    messages: list[Message]
    agent: dict[str, Any]
    usage: dict[str, Any]
    tools: list[dict[str, Any]] | None  # None: rebuild from the calls seen
    info: dict[str, Any] = field(default_factory=dict)  # how a subagent was found
    first_timestamp: Any = None
    errored_call_ids: list[str] = field(default_factory=list)


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle for a standalone ATIF file (rewards unknown: None); references and
    continuations resolve inside the file's own folder."""
    path = Path(path)
    if path.is_dir():
        if not TrialFiles(path, limits).is_file(path / "trajectory.json"):
            raise ReaderError(f"{path}: no trajectory.json in this folder")
        path = path / "trajectory.json"
    continued = CONTINUATION_NAME.search(path.name)
    if (
        continued
        and (main_file := path.with_name(path.name[: continued.start()] + ".json")).exists()
    ):
        raise ReaderError(f"{path}: a continuation of {main_file.name}; read that file instead")
    files = TrialFiles.for_input(path, limits)
    doc = load_document(files, path, str(path))
    instance_id = standalone_instance_id(path)
    metadata = {"source_file": str(path), "session_id": doc.get("session_id")}
    # the file as it sits in its (real) folder: references resolve beside it
    located = os.path.join(files.real_root, path.name)
    records, warnings = _records(doc, located, files, instance_id, metadata, {})
    main = records[0]["meta_info"]["unique_info"]
    yield new_bundle(
        instance_id,
        str(path),
        "atif",
        records,
        metadata=main["_instance_metadata"],
        usage=main["_usage"],
        warnings=warnings,
        read_files=files.read_files,
    )


def records_from_atif(
    path: str | Path,
    files: TrialFiles,
    instance_id: str,
    metadata: Mapping[str, Any],
    usage: Mapping[str, Any],
    *,
    agent: Mapping[str, Any] | None = None,
    query_source: str = "atif",
    date: str | None = None,
    prompt: str | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """(IM records main-first, warnings) for the ATIF file `path` inside `files`' root.

    `metadata` / `usage` come from the caller (Harbor's result.json); usage it lacks is filled
    from the trajectory's final metrics. `agent` = {name, version, model} fills what the
    trajectory's own `agent` block lacks. `prompt` (the trial's task instruction) is the user
    message of a main trajectory that has no user step. `ReaderError` if the main file cannot
    be used (outside the root, not a regular file, corrupt, wrong-typed content).
    """
    doc = load_document(files, path, files.shown(path))
    resolved = files.resolve(path)  # its real path (it was just read, so inside)
    return _records(
        doc,
        resolved,
        files,
        instance_id,
        metadata,
        usage,
        agent,
        query_source,
        date,
        real=True,
        prompt=prompt,
    )


def _records(
    doc: dict[str, Any],
    path: str,
    files: TrialFiles,
    instance_id: str,
    metadata: Mapping[str, Any],
    usage: Mapping[str, Any],
    agent: Mapping[str, Any] | None = None,
    query_source: str = "atif",
    date: str | None = None,
    *,
    real: bool = False,
    prompt: str | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """`real`: `path` is already resolved (its name shown without resolving it again)."""
    warnings: list[str] = []
    converter = _Converter(files, warnings)
    if real:
        converter.real_paths.add(path)
    main = converter.convert(doc, path, depth=0, fallback_agent=agent or {}, prompt=prompt)
    converter.warn_removals()
    instance_metadata = dict(metadata)
    instance_metadata["atif_schema_version"] = doc.get("schema_version")
    instance_metadata["warnings"] = [*instance_metadata.get("warnings", []), *warnings]
    main_usage = {k: v for k, v in usage.items() if v is not None}
    for key, value in main.usage.items():
        main_usage.setdefault(key, value)
    record_date = date or date_of(main.first_timestamp)
    scaffold = scaffold_for_agent(main.agent.get("name"))

    def build(trajectory: _Trajectory, agent_type: str, record_usage: Mapping[str, Any]) -> Any:
        record_metadata = dict(instance_metadata)
        if trajectory.errored_call_ids:
            record_metadata["errored_tool_call_ids"] = trajectory.errored_call_ids
        if agent_type == "subagent":
            if scaffold:
                record_metadata["scaffold"] = scaffold
            record_metadata["subagent"] = trajectory.info
        return build_im_record(
            trajectory.messages,
            instance_id=instance_id,
            agent_type=agent_type,
            tools=trajectory.tools,
            rebuild_tools=trajectory.tools is None,
            agent=trajectory.agent,
            metadata=record_metadata,
            usage=record_usage,
            query_source=query_source,
            date=record_date,
        )

    records = [build(main, "main", main_usage)]
    records.extend(build(sub, "subagent", sub.usage) for sub in converter.subagents)
    note_fidelity(records, converter.counts)
    return records, warnings


class _Converter:
    """Converts one instance's trajectories, collecting subagents and warnings on the way."""

    def __init__(self, files: TrialFiles, warnings: list[str]) -> None:
        self.files = files
        self.root = files.real_root
        self.warnings = warnings
        self.counts: Counter[str] = Counter()
        self.subagents: list[_Trajectory] = []
        self.seen_files: set[str] = set()  # real paths
        self.seen_embedded: set[str] = set()
        self.real_paths: set[str] = set()  # resolved already: shown without resolving

    def _shown(self, path: str) -> str:
        if path in self.real_paths:
            return shown_real(path, self.root)
        return shown_path(path, self.root)

    def convert(
        self,
        doc: Mapping[str, Any],
        path: str,
        *,
        depth: int,
        fallback_agent: Mapping[str, Any],
        terminus_parent: bool = False,
        info: dict[str, Any] | None = None,
        follow_continuations: bool = True,
        prompt: str | None = None,
    ) -> _Trajectory:
        label = str(info.get("trajectory_path") or info.get("trajectory_id")) if info else ""
        label = label or self._shown(path)
        self.seen_files.add(path)
        self.warnings.extend(f"{label}: not ATIF: {p}" for p in schema_problems(doc))
        segments = [doc]
        if follow_continuations:
            segments += load_continuations(doc, path, self.files, self.seen_files, self.warnings)
            self.warnings.extend(self.files.take_warnings())
        steps = [s for segment in segments for s in segment.get("steps") or []]
        agent = _agent_of(doc.get("agent"), fallback_agent)
        terminus = terminus_parent or is_terminus(agent["name"])
        claude = not terminus and is_claude_code(agent["name"])
        prompts = spawn_prompts(s for s in steps if isinstance(s, JSON_OBJECT))
        main_steps, sidechains = split_sidechains(steps, prompts)
        cleanup = HarborClaudeCleanup() if claude else None
        trajectory = _Trajectory(
            messages=steps_to_messages(
                main_steps,
                terminus=terminus,
                label=label,
                warnings=self.warnings,
                prompt=prompt,
                cleanup=cleanup,
                counts=self.counts,
                subagent=info is not None,
            ),
            agent=agent,
            usage=_usage_of(segments, main_steps),
            tools=[] if terminus else _tool_definitions(doc.get("agent")),
            info=info or {},
            first_timestamp=next(
                (s.get("timestamp") for s in steps if isinstance(s, JSON_OBJECT)), None
            ),
        )
        self._take(trajectory, cleanup)
        self._subagents(segments, main_steps, path, depth, agent, terminus)
        self._sidechains(sidechains, prompts, doc.get("agent"), trajectory, label, claude)
        return trajectory

    def _take(self, trajectory: _Trajectory, cleanup: HarborClaudeCleanup | None) -> None:
        if cleanup is not None:
            self.counts.update(cleanup.counts)
            trajectory.errored_call_ids = cleanup.errored_call_ids

    def _sidechains(
        self,
        sidechains: list[Sidechain],
        prompts: Mapping[str, str],
        raw_agent: Any,
        parent: _Trajectory,
        label: str,
        claude: bool,
    ) -> None:
        """One subagent record per flattened sidechain; warmups and unanswered ones left out."""
        kept = 0
        for sidechain in sidechains:
            if is_warmup(sidechain, prompts):
                self.counts["warmups_skipped"] += 1
                continue
            where = f"{label} sidechain {sidechain.key}"
            if not sidechain.answered():
                self.counts["unanswered_sidechains_skipped"] += 1
                self.warnings.append(
                    f"{where}: a prompt with no agent step after it, skipped (subagents started "
                    "together interleave their steps, and Harbor wrote no agent id per step)"
                )
                continue
            kept += 1
            cleanup = HarborClaudeCleanup() if claude else None
            info: dict[str, Any] = {"sidechain_id": sidechain.key}
            if sidechain.prompt is not None and prompts.get(sidechain.prompt):
                info["parent_tool_call_id"] = prompts[sidechain.prompt]
            sub = _Trajectory(
                messages=steps_to_messages(
                    sidechain.steps,
                    terminus=False,
                    label=where,
                    warnings=self.warnings,
                    cleanup=cleanup,
                    counts=self.counts,
                    subagent=True,
                ),
                agent=parent.agent,
                usage=_usage_of([], sidechain.steps),
                tools=parent.tools,
                info=info,
                first_timestamp=sidechain.steps[0].get("timestamp"),
            )
            self._take(sub, cleanup)
            self.subagents.append(sub)
        self._check_agent_ids(raw_agent, len(sidechains), kept)

    def _check_agent_ids(self, raw_agent: Any, found: int, kept: int) -> None:
        extra = raw_agent.get("extra") if isinstance(raw_agent, Mapping) else None
        ids = extra.get("agent_ids") if isinstance(extra, Mapping) else None
        if isinstance(ids, list) and ids and len(ids) != found:
            self.warnings.append(
                f"agent.extra.agent_ids names {len(ids)} sidechain(s), the steps hold {found} "
                f"({kept} kept as subagent records)"
            )

    def warn_removals(self) -> None:
        """One warning per kind of text removed from the conversation, with its count."""
        said = {
            "placeholders_removed": 'Harbor\'s "Executed <tool> <id>" step placeholder(s) removed',
            "duplicate_reasoning_removed": (
                "reasoning repeated on Harbor's one-call step(s) removed"
            ),
            "ui_metadata_removed": (
                "tool result(s): Claude Code UI metadata Harbor appended ([stdout], [metadata] "
                "...) removed"
            ),
            "error_markers_removed": (
                'tool result(s): Harbor\'s "[error] tool reported failure" marker removed '
                "(errored calls: _instance_metadata.errored_tool_call_ids)"
            ),
            "images_dropped": "image block(s) in tool results left out",
            "non_text_blocks_dropped": "non-text block(s) in tool results left out",
            "warmups_skipped": (
                "warmup sidechain(s) skipped (Claude Code's prompt-cache warmups, not "
                "subagent work)"
            ),
        }
        for kind, text in said.items():
            if self.counts.get(kind):
                self.warnings.append(f"{self.counts[kind]} {text}")

    def _subagents(
        self,
        segments: list[Mapping[str, Any]],
        steps: list[Mapping[str, Any]],
        path: str,
        depth: int,
        agent: Mapping[str, Any],
        terminus: bool,
    ) -> None:
        embedded: dict[str, Mapping[str, Any]] = {}
        for segment in segments:
            subs = segment.get("subagent_trajectories")
            for sub in subs if isinstance(subs, list) else []:
                if isinstance(sub, Mapping):
                    key = str(sub.get("trajectory_id") or sub.get("session_id") or len(embedded))
                    embedded.setdefault(key, sub)
        if depth >= MAX_SUBAGENT_DEPTH and (embedded or any(True for _ in _refs(steps))):
            shown = os.path.basename(path)
            self.warnings.append(f"{shown}: subagents nested deeper than {depth} ignored")
            return
        kwargs = {"depth": depth + 1, "fallback_agent": agent, "terminus_parent": terminus}
        for ref in _refs(steps):
            trajectory_id = str(ref.get("trajectory_id") or "")
            if trajectory_id and trajectory_id in embedded:
                self._embedded(trajectory_id, embedded[trajectory_id], path, kwargs)
            elif ref.get("trajectory_path"):
                self._referenced_file(ref, path, kwargs)
            elif trajectory_id not in self.seen_embedded:
                name = trajectory_id or ref.get("session_id")
                self.warnings.append(
                    f"subagent {name!r} has neither a trajectory_path nor an embedded trajectory"
                )
        for trajectory_id, sub in embedded.items():
            self._embedded(trajectory_id, sub, path, kwargs)

    def _embedded(
        self, trajectory_id: str, sub: Mapping[str, Any], path: str, kwargs: dict[str, Any]
    ) -> None:
        if trajectory_id in self.seen_embedded:
            return
        self.seen_embedded.add(trajectory_id)
        if not isinstance(sub.get("steps"), list):
            self.warnings.append(f"embedded subagent {trajectory_id!r} has no steps list")
            return
        info = {"trajectory_id": trajectory_id, "session_id": sub.get("session_id")}
        self.subagents.append(
            self.convert(sub, path, info=info, follow_continuations=False, **kwargs)
        )

    def _referenced_file(self, ref: Mapping[str, Any], path: str, kwargs: dict[str, Any]) -> None:
        raw = ref["trajectory_path"]
        target, refusal = resolve_inside(raw, os.path.dirname(path), self.files)
        if target is None:
            self.warnings.append(f"{self._shown(path)}: {refusal}")
            return
        if target in self.seen_files:
            return
        try:
            self.real_paths.add(target)
            doc = load_document(self.files, target, shown_real(target, self.root))
        except FileMissing:
            self.warnings.append(
                f"subagent trajectory {raw} not found (referenced from {os.path.basename(path)})"
            )
            return
        except ReaderError as exc:
            self.warnings.append(f"subagent trajectory skipped: {exc}")
            return
        info = {
            "trajectory_path": shown_real(target, self.root),
            "session_id": ref.get("session_id") or doc.get("session_id"),
        }
        self.subagents.append(self.convert(doc, target, info=info, **kwargs))


def _agent_of(raw: Any, fallback: Mapping[str, Any]) -> dict[str, Any]:
    block = raw if isinstance(raw, Mapping) else {}
    return {
        "name": block.get("name") or fallback.get("name"),
        "version": block.get("version") or fallback.get("version"),
        "model": block.get("model_name") or fallback.get("model"),
    }


def _tool_definitions(raw_agent: Any) -> list[dict[str, Any]] | None:
    """The agent's OpenAI tool schemas; None (= rebuild from calls) when it declares none."""
    definitions = raw_agent.get("tool_definitions") if isinstance(raw_agent, Mapping) else None
    tools = []
    for definition in definitions if isinstance(definitions, list) else []:
        if not isinstance(definition, Mapping):
            continue
        function = definition.get("function", definition)
        if isinstance(function, Mapping) and function.get("name"):
            tools.append({"type": "function", "function": dict(function)})
    return tools or None


def _refs(steps: list[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for step in steps:
        if not isinstance(step, JSON_OBJECT) or step.get("is_copied_context") is True:
            continue
        observation = step.get("observation")
        results = observation.get("results") if isinstance(observation, JSON_OBJECT) else None
        for result in results if isinstance(results, list) else []:
            if not isinstance(result, JSON_OBJECT):
                continue
            refs = result.get("subagent_trajectory_ref")
            if refs is not None and isinstance(refs, JSON_OBJECT):
                refs = [refs]
            for ref in refs or []:
                if isinstance(ref, JSON_OBJECT):
                    yield ref


def _usage_of(segments: list[Mapping[str, Any]], steps: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Usage from the last `final_metrics` (Harbor writes cumulative totals, so the last
    continuation holds the whole run); keys it lacks are summed from the step metrics."""
    usage: dict[str, Any] = {}
    for segment in reversed(segments):
        metrics = segment.get("final_metrics")
        if isinstance(metrics, Mapping) and any(metrics.get(k) is not None for k in USAGE_KEYS):
            usage = {
                ours: metrics[theirs]
                for theirs, ours in USAGE_KEYS.items()
                if _is_number(metrics.get(theirs))
            }
            break
    for theirs, ours in _STEP_USAGE_KEYS.items():
        if ours in usage:
            continue
        values = [
            metrics[theirs]
            for step in steps
            if isinstance(step, JSON_OBJECT)
            and step.get("is_copied_context") is not True
            and isinstance(metrics := step.get("metrics"), Mapping)
            and _is_number(metrics.get(theirs))
        ]
        if values:
            usage[ours] = sum(values)
    return usage


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
