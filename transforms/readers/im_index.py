"""A first look at an IM JSONL file: on how many lines each `_instance_id` is named.

The IM reader groups an instance's lines, which need not be contiguous, so without this it
holds every parsed record until the file ends (up to its `max_buffered` bound). With these
counts it hands an instance on as soon as the last line naming it is read, in the same
order and with the same grouping, and holds only what is still incomplete.

The look reads the raw bytes, in C-speed searches, without parsing them. It must never count
too few lines for an instance (the reader would hand it on early, split), so it counts every
line on which `"_instance_id": "<id>"` appears (a line naming two ids counts for both; one
naming an id in a nested object too): a count can only be too high, which keeps an instance
waiting, as without the look. A key can hide from the byte search only behind a `\\u`
escape of one of its letters, which no JSON encoder writes; a file holding any such escape
gets no counts (None), and so does one the line reader would refuse (a line over the cap,
where the reader reports the file as it does today) or one in UTF-16/32.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import orjson

from transforms.readers.confined import wide_codec

CHUNK_BYTES = 4 * 2**20
_KEY = b'"_instance_id"'
# The key, JSON whitespace, a colon, and the raw text of a string value.
_KEYED_VALUE = re.compile(rb'"_instance_id"[ \t\r\n]*:[ \t\r\n]*"((?:[^"\\]|\\.)*)"')
# `\u0050`..`\u007F` (`_` and the lowercase letters among them): the only way to spell the key
# other than as it reads.
_ESCAPED_LETTER = re.compile(rb"\\u00[5-7][0-9a-fA-F]")


def instance_line_counts(chunks: Iterable[bytes], max_line_bytes: int) -> dict[str, int] | None:
    """For each `_instance_id` named in the file read as `chunks`, how many lines name it;
    None when those counts could miss a line (see the module docstring)."""
    counts: dict[str, int] = {}
    pending: list[bytes] = []  # the start of a line that goes on in the next chunk(s)
    for number, chunk in enumerate(chunks):
        if number == 0 and wide_codec(chunk[:4]) is not None:
            return None
        cut = chunk.find(b"\n") + 1  # the end of the line `pending` began
        if not cut:  # a line longer than the chunk: joined once it ends, not chunk by chunk
            pending.append(chunk)
            if sum(map(len, pending)) > max_line_bytes:
                return None
            continue
        if pending:
            head = b"".join([*pending, chunk[:cut]])
            if not _count_lines(head, 0, len(head), counts, max_line_bytes):
                return None
        end = chunk.rfind(b"\n") + 1  # whole lines up to here; the rest waits
        if not _count_lines(chunk, cut if pending else 0, end, counts, max_line_bytes):
            return None
        pending = [chunk[end:]] if end < len(chunk) else []
    tail = b"".join(pending)
    if tail and not _count_lines(tail, 0, len(tail), counts, max_line_bytes):
        return None
    return counts


def _count_lines(
    data: bytes, start: int, end: int, counts: dict[str, int], max_line_bytes: int
) -> bool:
    """Add the ids named in `data[start:end]` (whole lines) to `counts`; False when the
    counts cannot be trusted (an escaped letter, a line over `max_line_bytes`)."""
    if _ESCAPED_LETTER.search(data, start, end) or _has_long_line(data, start, end, max_line_bytes):
        return False
    position = data.find(_KEY, start, end)
    while position >= 0:
        line_end = data.find(b"\n", position, end)
        line_end = end if line_end < 0 else line_end
        if data.find(_KEY, position + len(_KEY), line_end) < 0:  # one id, as a record names
            value = _value_at(data, position, line_end)
            if value is not None:
                counts[value] = counts.get(value, 0) + 1
        else:  # each id the line names counts once
            for value in named_ids(data, position, line_end):
                counts[value] = counts.get(value, 0) + 1
        position = data.find(_KEY, line_end, end)
    return True


def named_ids(data: bytes, start: int = 0, end: int | None = None) -> set[str]:
    """The ids named in `data[start:end]` (one line, or the part of one), as the first look
    reads them."""
    end = len(data) if end is None else end
    named = set()
    position = data.find(_KEY, start, end)
    while position >= 0:
        value = _value_at(data, position, end)
        if value is not None:
            named.add(value)
        position = data.find(_KEY, position + len(_KEY), end)
    return named


def _value_at(data: bytes, position: int, line_end: int) -> str | None:
    """The id a key found at `position` names, if its value is a string. The compact form
    (`"_instance_id":"…"` or with one space, no escape) is read directly; any other goes
    through the pattern and a JSON decode."""
    start = position + len(_KEY)
    if data[start : start + 2] == b':"':
        start += 2
    elif data[start : start + 3] == b': "':
        start += 3
    else:
        start = -1
    if start >= 0:
        stop = data.find(b'"', start, line_end)
        if stop >= 0 and data.find(b"\\", start, stop) < 0:
            try:
                return data[start:stop].decode()
            except UnicodeDecodeError:
                return None
    match = _KEYED_VALUE.match(data, position, line_end)
    return None if match is None else _string(match.group(1))


def _string(raw: bytes) -> str | None:
    """The value of a JSON string's raw text, decoded as the reader's parse decodes it; None
    when it is not a valid string (then it is no id the reader's parse can give)."""
    try:
        value = orjson.loads(b'"' + raw + b'"')
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


def _has_long_line(data: bytes, start: int, end: int, max_line_bytes: int) -> bool:
    """Whether a line of `data[start:end]` may be over `max_line_bytes` (a carriage return
    before its newline counted: never too few); a span no longer than the cap holds none, so
    only long spans are walked line by line."""
    if end - start <= max_line_bytes:
        return False
    while start < end:
        stop = data.find(b"\n", start, end)
        stop = end if stop < 0 else stop
        if stop - start > max_line_bytes:
            return True
        start = stop + 1
    return False
