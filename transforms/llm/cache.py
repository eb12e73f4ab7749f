"""A response cache so that a re-run (or a resumed run) never pays for an answer twice.

An entry is one exchange: the raw text the model answered to one conversation (the judge's
request, plus repair turns after a malformed answer), with its tokens, finish reason and
the response format it was asked in. Malformed answers are kept too: a re-run replays the
same repair turns for free, and parses every raw text again with the current parser.

The key is the sha256 of the model name and the canonical JSON (sorted keys, no spaces) of
the full request body, `response_format` (and so the answer schema) included: any change to
the prompt, the schema, the model or the sampling parameters is a miss. The body is the one
the judge asked for (structured output); a client that negotiated a weaker response format
with its server still reads and writes under that key.

One JSON file per key in a directory that may be local or any Beam filesystem path
(`gs://...`, `s3://...`): reads and writes go through `FileSystems`. Writes are atomic (a
temporary file, then a rename), so a reader never sees half an entry. An unreadable entry is
a miss, reported in `CacheLookup.corrupt` and logged (by key, never its content), and is
overwritten by the next answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

_LOG = logging.getLogger(__name__)
# Beam's FileSystems is partly annotated; its untyped calls go through this alias.
_FS: Any = FileSystems

ENTRY_VERSION = 2  # 1 also held the parsed answer; its raw text still reads


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(model: str, body: Mapping[str, Any]) -> str:
    """sha256 (hex) of the model and the canonical request body."""
    digest = hashlib.sha256()
    digest.update(model.encode())
    digest.update(b"\n")
    digest.update(canonical_json(body).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheLookup:
    """A found entry, or None; `corrupt` says why a present entry could not be used."""

    entry: dict[str, Any] | None
    corrupt: str | None = None


class ResponseCache:
    """One JSON file per request key under `directory` (local or a Beam filesystem path)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def path_for(self, key: str) -> str:
        return str(FileSystems.join(self.directory, f"{key}.json"))

    def lookup(self, key: str) -> CacheLookup:
        path = self.path_for(key)
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
                data = handle.read()
        except OSError:  # missing (BeamIOError is an OSError too)
            return CacheLookup(None)
        reason = None
        try:
            entry = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError):
            reason = "not valid JSON"
        else:
            reason = _check_entry(entry, key)
        if reason is not None:
            _LOG.warning("LLM cache entry %s is unusable (%s): treated as a miss", key, reason)
            return CacheLookup(None, reason)
        return CacheLookup(entry)

    def put(self, key: str, entry: Mapping[str, Any]) -> bool:
        """Store `entry` under `key` atomically; False (logged) when the write failed."""
        final = self.path_for(key)
        temporary = str(FileSystems.join(self.directory, f".{key}.{uuid.uuid4().hex}.tmp"))
        payload = canonical_json({**entry, "key": key, "version": ENTRY_VERSION}).encode()
        try:
            with FileSystems.create(
                temporary,
                mime_type="application/json",
                compression_type=CompressionTypes.UNCOMPRESSED,
            ) as handle:
                handle.write(payload)
            _FS.rename([temporary], [final])
        except OSError as exc:
            _LOG.warning("LLM cache write for %s failed: %s", key, type(exc).__name__)
            with contextlib.suppress(OSError):
                _FS.delete([temporary])
            return False
        return True

    def __repr__(self) -> str:
        return f"ResponseCache({self.directory!r})"


def _check_entry(entry: Any, key: str) -> str | None:
    if not isinstance(entry, dict):
        return "not a JSON object"
    if entry.get("key") != key:
        return "stored under another key"
    if not isinstance(entry.get("raw_text"), str):
        return "no raw text"
    return None
