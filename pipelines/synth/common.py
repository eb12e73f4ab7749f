"""Shared pieces of the renderers: a seeded clock, token accounting, ids and serialisation.

Nothing here reads the wall clock or global randomness: every value comes from the trial's
own `random.Random`, so the same seed writes the same bytes.
"""

from __future__ import annotations

import random
import re
import string
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import orjson

__all__ = [
    "AgentFiles",
    "AgentRun",
    "Clock",
    "Meter",
    "Model",
    "alnum",
    "final_metrics",
    "harbor_json",
    "json_bytes",
    "jsonl_bytes",
    "new_uuid",
    "numbered",
]

ALNUM = string.ascii_letters + string.digits
_LEADING_SPACES = re.compile(rb"(?m)^ +")
# A file under the trial's agent/ folder: (relative path, ATIF document or raw bytes).
AgentFiles = list[tuple[str, dict[str, Any] | bytes]]


@dataclass(frozen=True, slots=True)
class Model:
    """An agent's model: `provider/name` in configs, USD per million tokens for costs."""

    provider: str
    name: str
    input_price: float
    output_price: float
    cache_price: float

    @property
    def full_name(self) -> str:
        return f"{self.provider}/{self.name}"


@dataclass
class AgentRun:
    """What a renderer produced: the files (main file first) and the run's token totals."""

    files: AgentFiles
    format: str
    input_tokens: int
    cache_tokens: int
    output_tokens: int
    cost_usd: float
    end: datetime


class Clock:
    """Step timestamps: starts at `start` and moves forward by seeded amounts."""

    def __init__(self, start: datetime, rng: random.Random) -> None:
        self.now = start
        self._rng = rng

    def tick(self, low: float = 1.5, high: float = 25.0) -> datetime:
        self.now += timedelta(milliseconds=int(self._rng.uniform(low, high) * 1000))
        return self.now

    def stamp(self, low: float = 1.5, high: float = 25.0) -> str:
        return iso_ms(self.tick(low, high))


def iso_ms(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def iso_us(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Meter:
    """Token usage of one run: the context grows with every step's text."""

    model: Model
    rng: random.Random
    context: int
    cache_share: float = 0.0
    prompt: int = 0
    cached: int = 0
    completion: int = 0
    cost: float = 0.0
    steps: list[dict[str, Any]] = field(default_factory=list)

    def step(self, written: str, read: str) -> dict[str, int | float]:
        """Usage of one model call that wrote `written` and then saw `read` come back."""
        completion = len(written) // 4 + self.rng.randint(12, 180)
        prompt = self.context
        cached = int(prompt * self.cache_share * self.rng.uniform(0.9, 1.0))
        cost = (
            (prompt - cached) * self.model.input_price
            + cached * self.model.cache_price
            + completion * self.model.output_price
        ) / 1e6
        self.context += completion + len(read) // 4 + 8
        self.prompt += prompt
        self.cached += cached
        self.completion += completion
        self.cost += cost
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cached_tokens": cached,
            "cost_usd": round(cost, 8),
        }

    def absorb(self, other: Meter) -> None:
        """Add another run's usage (a subagent's, a continuation's) to this one's totals."""
        self.prompt += other.prompt
        self.cached += other.cached
        self.completion += other.completion
        self.cost += other.cost

    def run(self, files: AgentFiles, fmt: str, end: datetime) -> AgentRun:
        return AgentRun(
            files, fmt, self.prompt, self.cached, self.completion, round(self.cost, 6), end
        )


def final_metrics(meter: Meter, steps: int | None) -> dict[str, Any]:
    """ATIF `final_metrics` from a run's meter; `steps` is omitted when None."""
    metrics: dict[str, Any] = {
        "total_prompt_tokens": meter.prompt,
        "total_completion_tokens": meter.completion,
        "total_cached_tokens": meter.cached,
        "total_cost_usd": round(meter.cost, 6),
    }
    if steps is not None:
        metrics["total_steps"] = steps
    return metrics


def alnum(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(ALNUM, k=n))


def new_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def numbered(text: str) -> str:
    """File text as an editor tool shows it: right-aligned line numbers and a tab."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1))


def json_bytes(doc: Any) -> bytes:
    """Pretty JSON, two-space indent, as agents write their trajectories."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def harbor_json(doc: Any) -> bytes:
    """Pretty JSON with a four-space indent, as Harbor writes configs and results."""
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    return _LEADING_SPACES.sub(lambda m: m.group(0) * 2, data)


def jsonl_bytes(events: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(event) + b"\n" for event in events)
