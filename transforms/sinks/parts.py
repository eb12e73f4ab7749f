"""Parts: what one written bundle adds to a shard's im and lf files, spilled until the shard
is written in sort order (plain Python and the os module: no Beam).

A part is a 12-digit length of its IM lines, the IM lines, then its LF items (one a line);
with the conversation exports (`--messages-format`) each block but the last is preceded by
its 12-digit length: IM lines, LF items, then each export's lines. Locally, many parts are
appended to one spill file and read back by (path, offset, size).
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = [
    "PartReader",
    "SpillFile",
    "decode_blocks",
    "decode_part",
    "encode_blocks",
    "encode_part",
]

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)


def encode_part(im_block: bytes, lf_block: bytes) -> bytes:
    """One bundle's IM lines and LF items as one part."""
    return b"%012d" % len(im_block) + im_block + lf_block


def decode_part(data: bytes) -> tuple[bytes, bytes]:
    """(IM lines, LF items) of a part."""
    size = int(data[:12])
    return data[12 : 12 + size], data[12 + size :]


def encode_blocks(blocks: list[bytes]) -> bytes:
    """Several blocks as one part: every block but the last after its 12-digit length (two
    blocks give exactly `encode_part`)."""
    *sized, last = blocks
    return b"".join(b"%012d" % len(block) + block for block in sized) + last


def decode_blocks(data: bytes, count: int) -> list[bytes]:
    """The `count` blocks of a part made by `encode_blocks`."""
    blocks, start = [], 0
    for _ in range(count - 1):
        size = int(data[start : start + 12])
        blocks.append(data[start + 12 : start + 12 + size])
        start += 12 + size
    blocks.append(data[start:])
    return blocks


class SpillFile:
    """A local file of parts appended one after another, each at a known offset."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._handle = open(path, "wb")  # noqa: SIM115  (closed by `close`)
        self._offset = 0

    def append(self, data: bytes) -> int:
        """Append one part; its offset in the file."""
        offset = self._offset
        self._handle.write(data)
        self._offset += len(data)
        return offset

    def close(self) -> None:
        self._handle.close()


class PartReader:
    """Reads parts back by (path, offset, size), keeping the local files it reads open; a
    remote part (alone in its object) is read whole with `read_remote`."""

    def __init__(self, read_remote: Callable[[str], bytes] | None = None) -> None:
        self._fds: dict[str, int] = {}
        self._read_remote = read_remote

    def read(self, path: str, offset: int, size: int) -> bytes:
        if "://" in path and self._read_remote is not None:
            return self._read_remote(path)
        fd = self._fds.get(path)
        if fd is None:
            fd = self._fds[path] = os.open(path, _READ_FLAGS)
        data = os.pread(fd, size, offset)
        if len(data) != size:
            raise OSError(f"{path}: the part at {offset} is cut short ({len(data)} of {size})")
        return data

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)
