"""IM JSON Lines (format "im"): records grouped into one bundle per `_instance_id`.

Bundles come out in the order each instance first appears, records main first. A line that
is not JSON or not an IM record (`scorers.im.validate_im_record`) is not lost: it comes out
as a bundle with `records: []` whose first warning is `rejected: <file>:<line>: <reason>`.
When the bad line still names its `_instance_id`, the whole instance is rejected with it
(formats.md §4: an instance with an invalid record is dropped whole), and the warnings say
how many valid records went with it.

Grouping needs every line of an instance. A first look at the file's bytes
(`im_index.py`) counts the lines naming each `_instance_id`, so an instance is handed on
as soon as its last line is read and only incomplete instances wait: a file of contiguous
instances (as trajcurate writes them) is read one instance at a time. Interleaved lines
are grouped as long as at most `max_buffered` records are waiting. Past that bound the
oldest instances are yielded early, and an instance seen again afterwards comes out as a
second bundle warned `split instance`. For corpora that scatter instances, the pipeline
groups by `_instance_id` instead. Where the first look cannot vouch for its counts (see
there), every instance waits until the file ends or the bound is reached.

The file is opened confined (`confined.py`: a regular file, not a FIFO or device). It is
streamed, so `--max-file-mb` caps each line rather than the whole file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scorers.im import InvalidRecord, agent_type, validate_im_record
from transforms.jsonl import LineError, is_blank, parse_line
from transforms.readers.bundle import LINE_BYTES, VALIDATED, Bundle, ReaderError, new_bundle
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.im_builder import with_utc_timestamps
from transforms.readers.im_index import CHUNK_BYTES, instance_line_counts
from transforms.readers.im_spans import Span
from transforms.readers.provenance import line_read
from transforms.readers.source_files import json_type

FORMAT = "im"
DEFAULT_MAX_BUFFERED = 10_000


class _Group:
    def __init__(self, instance_id: str, named: bool, warnings: list[str] | None = None) -> None:
        self.instance_id = instance_id
        self.named = named  # keyed by its `_instance_id` (else by file and line)
        self.records: list[dict[str, Any]] = []
        self.line_bytes: list[int] = []  # the length of each record's line
        self.rejected: list[str] = []
        self.warnings = warnings or []
        self.lines: dict[str, str] = {}  # the lines read, for provenance
        self.lines_read = 0

    def size(self) -> int:
        return len(self.records) + len(self.rejected)


class _Completion:
    """Whether a group has all its lines, by the first look's counts (`im_index.py`). With
    no counts, or once a named group proves them wrong (an id they miss, more lines than
    counted: the file changed since), no group is complete before the file ends."""

    def __init__(self, counts: dict[str, int] | None) -> None:
        self.counts = counts

    def complete(self, group: _Group) -> bool:
        if self.counts is None:
            return False
        if not group.named:  # a line without a readable id is an instance of its own
            return True
        expected = self.counts.get(group.instance_id)
        if expected is None or group.lines_read > expected:
            self.counts = None
            return False
        if group.lines_read < expected:
            return False
        del self.counts[group.instance_id]  # a later line naming it finds no count: split
        return True


def read(
    path: Path,
    limits: ReadLimits = DEFAULT_LIMITS,
    *,
    max_buffered: int = DEFAULT_MAX_BUFFERED,
    span: Span | None = None,
) -> Iterator[Bundle]:
    """Bundles of the IM records in `path`; see the module docstring for grouping and rejects.

    With `span`, only the lines of that span of the file (`im_spans.py`), read as if the
    file held a record before them (so a span of rejected lines is no empty file); what the
    span's reading needs checked to stand for the file's is put in `span`."""
    path = Path(path)
    files = TrialFiles.for_input(path, limits)
    if span is None:
        counts = first_look(files, path, limits)
    else:
        if not span.looked:
            look_at_span(path, span, limits)
        counts, span.counts = span.counts, None
    completion = _Completion(counts)
    source = str(path)
    groups: dict[str, _Group] = {}
    flushed: set[str] = set()
    buffered = yielded = valid = 0
    first_problem = ""
    in_span = span is not None
    lines = (
        files.iter_lines(path, per_line_cap=True)
        if span is None
        else files.iter_span_lines(path, (span.start, span.stop, span.first_line))
    )
    for number, raw in lines:
        if is_blank(raw):
            continue
        record, instance_id, problem = _parse(raw)
        if problem:
            first_problem = first_problem or f"line {number}: {problem}"
        key = instance_id if instance_id is not None else f"{source}:{number}"
        group = groups.get(key)
        if group is None:
            split = [f"split instance: more lines after line {number}"] if key in flushed else None
            group = groups[key] = _Group(key, instance_id is not None, split)
        group.lines_read += 1
        if problem:
            group.rejected.append(f"{source}:{number}: {problem}")
        else:
            group.records.append(record)
            group.line_bytes.append(len(raw))
            group.lines.update(line_read(path, number, raw))
            valid += 1
        buffered += 1
        while groups and (
            buffered > max_buffered
            # complete instances go on in order, once the file is known to hold a record
            or ((valid or in_span) and completion.complete(next(iter(groups.values()))))
        ):
            oldest = next(iter(groups))
            done = groups.pop(oldest)
            buffered -= done.size()
            flushed.add(oldest)
            yielded += 1
            yield _bundle(done, source)
    if span is not None:
        span.trusted, span.valid = completion.counts is not None, valid
    elif not valid and not yielded:
        if not groups:
            raise ReaderError("empty file")
        raise ReaderError(f"no IM record in the file ({first_problem})")
    for group in groups.values():
        yield _bundle(group, source)


def first_look(
    files: TrialFiles, path: Path, limits: ReadLimits, span: Span | None = None
) -> dict[str, int] | None:
    """The lines naming each `_instance_id` in the file (or its `span`): `im_index.py`."""
    bytes_span = None if span is None else (span.start, span.stop)
    chunks = files.iter_chunks(path, CHUNK_BYTES, bytes_span)
    return instance_line_counts(chunks, limits.max_file_bytes)


def look_at_span(path: Path, span: Span, limits: ReadLimits = DEFAULT_LIMITS) -> None:
    """The first look at a span of the file, ahead of `read(path, span=span)`: its ids (for
    `im_spans.cut_problem`) and its counts (for the read) kept on the span."""
    counts = first_look(TrialFiles.for_input(path, limits), Path(path), limits, span)
    span.ids = None if counts is None else frozenset(counts)
    span.counts, span.looked = counts, True


def _parse(raw: bytes) -> tuple[dict[str, Any], str | None, str]:
    """(record, its `_instance_id` if readable, problem or "")."""
    try:
        value = parse_line(raw)
    except LineError as exc:
        return {}, None, str(exc)
    if not isinstance(value, dict):
        return {}, None, f"a JSON {json_type(value)}, expected an IM record object"
    instance_id = _instance_id(value)
    try:
        validate_im_record(value)
    except InvalidRecord as exc:
        return {}, instance_id, f"not an IM record: {exc}"
    info = value["meta_info"]["unique_info"]
    if isinstance(info.get("_instance_metadata"), dict):  # timestamps in the one IM form
        info["_instance_metadata"] = with_utc_timestamps(info["_instance_metadata"])
    return value, instance_id, ""


def _instance_id(value: dict[str, Any]) -> str | None:
    meta = value.get("meta_info")
    info = meta.get("unique_info") if isinstance(meta, dict) else None
    instance_id = info.get("_instance_id") if isinstance(info, dict) else None
    return instance_id if isinstance(instance_id, str) else None


def _bundle(group: _Group, source: str) -> Bundle:
    if group.rejected:
        warnings = [f"rejected: {group.rejected[0]}", *group.rejected[1:], *group.warnings]
        if group.records:
            warnings.append(f"{len(group.records)} valid record(s) of this instance dropped")
        return new_bundle(group.instance_id, source, FORMAT, [], warnings=warnings)
    order = sorted(range(len(group.records)), key=lambda n: agent_type(group.records[n]) != "main")
    records = [group.records[n] for n in order]
    info = records[0]["meta_info"]["unique_info"]
    main = agent_type(records[0]) == "main"
    metadata = (info.get("_instance_metadata") or {}) if main else {}
    rewards = _rewards(metadata)
    bundle = new_bundle(
        group.instance_id,
        source,
        FORMAT,
        records,
        rewards=rewards,
        reward_source=str(metadata.get("reward_source") or "im") if rewards else None,
        metadata=metadata,
        usage=(info.get("_usage") or {}) if main else {},
        warnings=group.warnings,
        read_files=group.lines,
    )
    bundle[VALIDATED] = True  # every record passed `_parse`
    bundle[LINE_BYTES] = [group.line_bytes[n] for n in order]
    return bundle


def _rewards(metadata: Any) -> dict[str, float] | None:
    """The verifier rewards a converter kept in `_instance_metadata.rewards` (trajcurate's
    own output keeps them), so IM read back is gated as its trial was; None when absent."""
    raw = metadata.get("rewards") if isinstance(metadata, dict) else None
    if not isinstance(raw, dict):
        return None
    rewards = {
        str(key): float(value)
        for key, value in raw.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
    return rewards or None
