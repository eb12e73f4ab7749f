"""Beam sinks: per-job, sorted, deterministic files.

Each written bundle is spilled as a part (to a spill file) and keyed by (job, shard) — the
shard from a stable hash of the instance id; the part references are grouped once at the
end, sorted by instance id, and the parts concatenated into the shard's files, so two runs
over the same input give byte-identical files whatever order the runner processed bundles
in, and memory does not grow with the number of records. Rejects and dead letters (small)
are grouped and written whole, one file per job.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any

import apache_beam as beam
import orjson
from apache_beam.pvalue import TaggedOutput

from transforms.chain import DEAD_LETTER, dead_letter_record, job_of
from transforms.sinks import layout, parts
from transforms.sinks.exports import shard_file
from transforms.sinks.lf import DEFAULT_LF, LfSettings
from transforms.sinks.records import bundle_payload
from transforms.sinks.scores import kept_in_order, with_curriculum
from transforms.sinks.split import NO_SPLIT, SplitSettings, bundle_split, slot_name, slot_of
from transforms.sinks.split import written_counts as split_written
from transforms.sinks.wire import Packer, Unpacker

WRITTEN = "written"
WRITE_STAGE = "write"

_SORT = orjson.OPT_SORT_KEYS


def _sort_key(ref: Any) -> Any:
    return ref[0]


def shard_of(instance_id: str, num_shards: int) -> int:
    if num_shards <= 1:
        return 0
    return zlib.crc32(instance_id.encode("utf-8")) % num_shards


class SpillBundle(beam.DoFn):
    """bundle -> its IM lines and LF items spilled as a part; ((job, shard), part ref).

    Only the small reference travels through the final grouping, so memory stays flat
    however many records a job has. Locally, the parts of one Beam bundle are appended to
    one spill file per (job, shard) — named uniquely, so a retried bundle writes its own —
    and a ref is (sort key, file, offset, size, LF item count, LF reshapes); on an object
    store each part is a file of its own (offset 0), named from the bundle's sort key. The
    bundle itself goes on to `WRITTEN` as (job, bundle), for the stats and counts; one that
    cannot be rendered is dead-lettered (stage `write`), while a failing filesystem (full,
    read-only) fails the run rather than every bundle. With `exports` (`--messages-format`)
    the part also holds each format's lines, and the ref's counts their `exports.*` kinds.
    """

    def __init__(
        self,
        output: str,
        num_shards: int,
        lf: LfSettings = DEFAULT_LF,
        exports: Sequence[str] = (),
        split: SplitSettings = NO_SPLIT,
    ) -> None:
        self.output = output
        self.num_shards = num_shards
        self.lf = lf
        self.exports = tuple(exports)
        self.split = split  # `--val-fraction`: a validation bundle goes to its own slot
        self._spills: dict[tuple[str, int], parts.SpillFile] = {}
        self._packer = Packer(output)

    def start_bundle(self) -> None:
        self._spills = {}

    def process(self, bundle: dict[str, Any]) -> Iterator[Any]:
        try:
            payload = bundle_payload(bundle, self.lf, self.exports)
        except Exception as exc:  # one unrenderable bundle must not stop the run
            yield TaggedOutput(DEAD_LETTER, dead_letter_record(WRITE_STAGE, bundle, exc))
            return
        job = job_of(bundle)
        shard = shard_of(bundle["instance_id"], self.num_shards)
        if self.split.active:
            shard = slot_of(shard, bundle_split(bundle, self.split), self.num_shards)
        blocks = [b"".join(payload["im_lines"]), b"\n".join(payload["lf_items"])]
        part = parts.encode_blocks([*blocks, *payload["export_lines"]])
        path, offset = self._spill(job, shard, payload["sort_key"], part)
        kinds = dict(Counter(payload["lf_reshapes"] + payload["export_counts"]))
        ref = (payload["sort_key"], path, offset, len(part), kinds)
        yield (job, shard), self._packer.part_ref(job, ref)  # held until the end: packed
        yield TaggedOutput(WRITTEN, (job, bundle))

    def _spill(self, job: str, shard: int, sort_key: Any, part: bytes) -> tuple[str, int]:
        """Where the part went: (file, offset)."""
        if layout.is_remote(self.output):
            path = layout.part_path(self.output, job, shard, repr(sort_key))
            layout.write_bytes_once(path, part)
            return path, 0
        spill = self._spills.get((job, shard))
        if spill is None:
            spill = parts.SpillFile(layout.spill_path(self.output, job, shard))
            self._spills[(job, shard)] = spill
        return spill.path, spill.append(part)

    def finish_bundle(self) -> None:
        self._close()

    def teardown(self) -> None:
        self._close()

    def _close(self) -> None:
        spills, self._spills = self._spills, {}
        for spill in spills.values():
            spill.close()


class WriteShard(beam.DoFn):
    """((job, shard), part refs) -> the shard's im and lf files (and, with `exports`, each
    format's file), parts concatenated in sort order, then their files deleted; yields
    (job, LF reshape and export counts).

    With `verdicts` (a side input, job -> {sort key: curriculum order or None}, when
    selection ran) only the parts of kept bundles are written, in curriculum order when the
    job has one, with their `_curriculum` key set.

    With `keep_parts` the spill files are left for the driver, which deletes each job's
    `.parts` when it publishes the job: on a runner that recomputes a lost task from its
    inputs (Dask, after a worker died) a shard may be written twice, and the second time
    must find its parts."""

    def __init__(
        self, output: str, num_shards: int, exports: Sequence[str] = (), keep_parts: bool = False
    ) -> None:
        self.output = output
        self.num_shards = num_shards
        self.exports = tuple(exports)
        self.keep_parts = keep_parts

    def process(
        self,
        element: tuple[tuple[str, int], Iterable[Any]],
        verdicts: dict[str, dict[Any, Any]] | None = None,
    ) -> Iterator[Any]:
        (job, shard), refs = element
        kept = None if verdicts is None else verdicts.get(job, {})
        unpack = Unpacker(self.output, job)
        every = [unpack.part_ref(packed) for packed in refs]
        ordered = kept_in_order(every, _sort_key, kept)
        records = self._write_files(layout.job_dir(self.output, job), shard, ordered, kept)
        if not self.keep_parts:
            layout.delete(list(dict.fromkeys(ref[1] for ref in every)))
        reshapes: Counter[str] = Counter()
        for ref in ordered:
            reshapes.update(ref[4])
        reshapes.update(split_written(shard, self.num_shards, len(ordered), records))
        yield job, dict(reshapes)

    def _write_files(
        self, folder: str, slot: int, ordered: list[Any], kept: dict[Any, Any] | None
    ) -> int:
        """The slot's files (a validation slot: `im.val...`), each part's blocks appended to
        theirs in `ordered` order; the IM records written."""
        names = [
            slot_name(layout.IM, slot, self.num_shards),
            slot_name(layout.LF, slot, self.num_shards),
            *(shard_file(fmt, slot, self.num_shards) for fmt in self.exports),
        ]
        records = 0
        reader = layout.read_parts()
        try:
            with ExitStack() as files:
                im, lf, *exported = [
                    files.enter_context(layout.FileWriter(f"{folder}/{name}")) for name in names
                ]
                # An LF shard with no example is an empty file, as an empty IM shard is: `[]`
                # would be a table without columns to `datasets`, which then refuses every
                # later job's lf.json (README, Output schema).
                opening = separator = b"[\n"
                for key, path, offset, size, _ in ordered:
                    data = reader.read(path, offset, size)
                    im_block, lf_block, *export_blocks = parts.decode_blocks(data, len(names))
                    order = None if kept is None else kept[tuple(key)]
                    if order is not None:
                        im_block, lf_block = with_curriculum(im_block, lf_block, order)
                    im.write(im_block)
                    records += im_block.count(b"\n")
                    if lf_block:
                        lf.write(separator + lf_block.replace(b"\n", b",\n"))
                        separator = b",\n"
                    for writer, block in zip(exported, export_blocks, strict=True):
                        writer.write(block)
                if separator != opening:
                    lf.write(b"\n]\n")
        finally:
            reader.close()
        return records


def keyed_line(record: dict[str, Any]) -> tuple[str, bytes]:
    """(job, the record's canonical JSON line): what waits for `WriteJobLines` is the line
    itself, a third of the record as Python objects."""
    return record["job"], orjson.dumps(record, option=_SORT)


class WriteJobLines(beam.DoFn):
    """(job, `keyed_line` lines) -> DIR/<job>/<name>, the lines sorted."""

    def __init__(self, output: str, name: str) -> None:
        self.output = output
        self.name = name

    def process(self, element: tuple[str, Iterable[bytes]]) -> Iterator[str]:
        job, lines = element
        data = b"".join(line + b"\n" for line in sorted(lines))
        layout.write_bytes(f"{layout.job_dir(self.output, job)}/{self.name}", data)
        yield job


def sum_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for count in counts:
        total.update(count)
    return dict(total)


# The key of values that belong to the whole run (written to DIR/<name>): not a string, so
# that no job name — they are data, even "" — can be taken for it.
RUN_KEY = None


class WriteJobJson(beam.DoFn):
    """(job, JSON-able value) -> DIR/<job>/<name>, or DIR/<name> for the run (sorted keys).

    `name` may be a function of the job (`counts_file_name`). `render(job, value)`, when
    given, is what is written instead of the value (one of the functions below: no transform
    of its own to call it)."""

    def __init__(
        self,
        output: str,
        name: str | Callable[[str | None], str],
        render: Callable[[str | None, Any], Any] | None = None,
    ) -> None:
        self.output = output
        self.name = name
        self.render = render

    def process(self, element: tuple[str | None, Any]) -> Iterator[str | None]:
        job, value = element
        if self.render is not None:
            value = self.render(job, value)
        data = orjson.dumps(value, option=_SORT | orjson.OPT_INDENT_2) + b"\n"
        folder = self.output if job is RUN_KEY else layout.job_dir(self.output, job)
        name = self.name if isinstance(self.name, str) else self.name(job)
        layout.write_bytes(f"{folder.rstrip('/')}/{name}", data)
        yield job


def stats_json(_job: str | None, stats: Any) -> Any:
    """A job's `lf.stats.json` object, from its `Stats`."""
    return stats.to_json()


def stats_state(_job: str | None, stats: Any) -> Any:
    """A job's mergeable stats (`Stats.to_state`), for incremental runs."""
    return stats.to_state()


def job_counts(job: str | None, counts: Any) -> Any:
    """A job's counts, with its name (the job name is data, its folder name may differ)."""
    return {"job": job, "counts": counts}
