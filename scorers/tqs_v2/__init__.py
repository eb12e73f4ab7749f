"""TQS V2 placeholder: the real scorer is being written; API is fixed."""
from typing import Any, Mapping

SCORER_NAME = "tqs-v2"
SCAFFOLDS = ("claudecode", "opencode", "openhands", "openhands_sdk", "terminus2")


def score_record(record: Mapping[str, Any], scaffold: str | None = None) -> dict[str, Any] | None:
    raise NotImplementedError


def count_tool_call_errors(record: Mapping[str, Any], scaffold: str | None = None) -> tuple[int, int]:
    raise NotImplementedError
