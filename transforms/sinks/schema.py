"""The one output schema of IM and LF records, as data (field, type, nullable, description).

Why: JSON has no typed null and readers with type inference (pyarrow, hence Hugging Face
`datasets`) guess each file's — even each read chunk's — types from the values they see. A
score that is a float in one job and null everywhere in another, a metadata key present in
one record and absent in the next, or an ISO timestamp that pyarrow turns into a
`timestamp[s]` in one file and leaves as text in another (fractional seconds) then make
files that cannot be loaded together. So every written record is made to conform to the
schema below: every key present, in schema order, with one type; numbers that are floats
written as floats; timestamps as canonical strings; open-ended content as JSON text.

Everything else is derived from these definitions, never written twice:

- `conform_im_record` — the IM record every writer writes (`records.bundle_payload`,
  `trajcurate convert`, `trajcurate score`); still a valid IM record (formats.md §4: the
  `unique_info` values stay objects), and conforming it again changes nothing, so an output
  read back as input (`trajcurate run --input im.jsonl`) gives the same records;
  `im_record_line` is its line as written, the messages put to JSON text in C;
- `lf_metadata` — the copied-through keys of an LF example (`lf.to_lf_example`, `lf_render`);
- `arrow_schema` — the explicit Arrow schema of `--parquet` and of the JSON outputs;
- `hf_features` — the `datasets.Features` to load the JSON outputs with;
- `markdown_table` — the README's "Output schema" table (a test compares the two).

Types: `string`, `int` (int64), `float` (float64), `bool`, `timestamp` (ISO 8601 text with
microseconds, `Z` when UTC: `2026-06-16T12:00:01.000000Z`; pyarrow leaves such text as text,
while it would read `2026-06-16T12:00:01Z` as a timestamp), `date` (`YYYY-MM-DD`, formats.md
§4; Arrow date32), `json` (JSON text in a string), `object` (any JSON value, kept as it is in
IM; JSON text in Arrow, `datasets.Json()` for the loader), `struct`, `list`.

Open-ended remainders: a struct may name one of its `json` members as its `rest`; keys of
that struct the schema does not know, and values of a known key with the wrong type, go
there as one JSON object (sorted keys) instead of being lost, and the typed key becomes
null. What no nearer struct can take goes to the record's remainder
(`unique_info._extra` in IM), keyed by its path (`messages[3].weight`).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

import orjson

from scorers.tqs_v2 import SCORE_KEYS

__all__ = [
    "IM_SCHEMA",
    "LF_SCHEMA",
    "SCHEMAS",
    "Field",
    "arrow_schema",
    "arrow_table",
    "arrow_type",
    "canonical_timestamp",
    "conform",
    "conform_im_record",
    "hf_features",
    "im_record_line",
    "jsonl_lines",
    "lf_metadata",
    "markdown_table",
    "schema_rows",
]

STRING, INT, FLOAT, BOOL = "string", "int", "float", "bool"
TIMESTAMP, DATE, JSON, OBJECT = "timestamp", "date", "json", "object"
STRUCT, LIST = "struct", "list"
UNKNOWN_DATE = "1970-01-01"
_PyType = type  # (`Field.type` is the schema's type name)


@dataclass(frozen=True)
class Field:
    """One key: its type, whether it may be null, and what it holds.

    `fields` are a struct's members; `item` is a list's element; `rest` names the `json`
    member of a struct that receives what the schema does not know (module docstring).
    A non-nullable field given null gets its type's empty value ("" / [] / {} / 0).
    """

    name: str
    type: str
    nullable: bool
    description: str
    fields: tuple[Field, ...] = ()
    item: Field | None = None
    rest: str | None = None
    default: Any = None  # what a non-nullable scalar gets for null (else its type's empty value)

    def __post_init__(self) -> None:
        # What conforming a struct looks up for every value, computed once.
        members = tuple(f for f in self.fields if f.name != self.rest)
        plan = tuple((f.name, _DIRECT.get(f.type), f.nullable, f) for f in members)
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "names", frozenset(f.name for f in self.fields))

    plan: tuple[tuple[str, _PyType | None, bool, Field], ...] = dataclass_field(
        default=(), init=False, repr=False, compare=False
    )
    names: frozenset[str] = dataclass_field(
        default=frozenset(), init=False, repr=False, compare=False
    )


# The Python type a value of a scalar field has when it is already what the field holds (then
# conforming returns it as it is, a float only when finite): `_conform_struct`'s fast cases.
_DIRECT: dict[str, type] = {STRING: str, INT: int, FLOAT: float}


def _s(name: str, description: str, nullable: bool = False) -> Field:
    return Field(name, STRING, nullable, description)


def _f(name: str, description: str) -> Field:
    return Field(name, FLOAT, True, description)


def _i(name: str, description: str, nullable: bool = True) -> Field:
    return Field(name, INT, nullable, description)


def _extra(name: str = "extra") -> Field:
    return Field(name, JSON, True, "what the schema does not name, as a JSON object")


# --- the definitions ----------------------------------------------------------------------

SCORE = Field(
    "_score",
    STRUCT,
    True,
    "TQS V2 scores (`scorers.tqs_v2.SCORE_KEYS`); null on subagent records",
    fields=(
        _s("scaffold", "the scaffold the record was scored as", nullable=True),
        _i("assistant_turns", "assistant messages"),
        _i("total_tool_calls", "tool calls"),
        *(
            _f(key, f"TQS V2 {key.removesuffix('_score').upper()}, null when not applicable")
            for key in SCORE_KEYS
            if key.endswith("_score") and key != "composite_score"
        ),
        _f("composite_score", "the TQS V2 composite"),
        _f("reproduce_first", "1.0 when the agent reproduced the problem before editing"),
        _s(
            "scaffold_source",
            "with --scaffold-hints: where the scaffold came from (given, hint, detected)",
            nullable=True,
        ),
        _s(
            "tqs_tools",
            "with --tqs-tools extended: extended (the tools TQS V2 knew); null for parity",
            nullable=True,
        ),
    ),
)

_JUDGE_CATEGORIES = (
    "llm_f_problem_understanding",
    "llm_g_solution_quality",
    "llm_h_reasoning_quality",
    "llm_i_verification_rigor",
    "llm_j_efficiency",
)
LLM_JUDGE = Field(
    "_llm_judge",
    STRUCT,
    True,
    "LLM judge outputs (`--llm-judge`); null when no judge ran",
    fields=(
        _f("llm_composite_score", "fixed checklist: mean of the five categories"),
        *(_f(key, "fixed checklist category score") for key in _JUDGE_CATEGORIES),
        _s("llm_model", "the judge model", nullable=True),
        _s("llm_checklist_version", "judge version(s), `+`-joined", nullable=True),
        Field("llm_detailed_results", OBJECT, True, "fixed checklist: every check"),
        _s("llm_raw_response", "fixed checklist: the raw answer", nullable=True),
        _s("llm_error", "fixed checklist: why judging failed", nullable=True),
        _f("llm_checklist_isr", "dynamic checklist: 1.0 when every check passed"),
        _f("llm_checklist_csr", "dynamic checklist: share of checks passed"),
        _i("llm_checklist_total_checks", "dynamic checklist: checks"),
        _i("llm_checklist_total_passed", "dynamic checklist: checks passed"),
        Field("llm_checklist_category_scores", OBJECT, True, "dynamic: CSR per category"),
        _s("llm_checklist_question_source", "where the task text came from", nullable=True),
        _s("llm_checklist_question", "the task text judged against", nullable=True),
        Field("llm_checklist_definition", OBJECT, True, "dynamic: the generated checklist"),
        Field("llm_checklist_judgement", OBJECT, True, "dynamic: the verdict per check"),
        _s("llm_checklist_generator_model", "dynamic: checklist model", nullable=True),
        _s("llm_checklist_judge_model", "dynamic: judge model", nullable=True),
        _s("llm_checklist_error", "dynamic checklist: why judging failed", nullable=True),
    ),
)

CURRICULUM = Field(
    "_curriculum",
    STRUCT,
    True,
    "`--curriculum`: the instance's place in its job's easier-to-harder order; null without it",
    fields=(
        _i("rank", "0-based position in the job's written order", nullable=False),
        _f("pass_rate", "resolved share of the task's scored trials in the job"),
        _i("turns", "assistant turns of the main record", nullable=False),
    ),
)

_SEVERITY_NAMES = ("critical", "high", "medium", "low", "info")
_DIMENSION_NAMES = (
    "efficiency",
    "utilization",
    "parallelization",
    "delegation",
    "communication",
    "robustness",
    "topology",
)
DIAGNOSIS = Field(
    "_diagnosis",
    STRUCT,
    True,
    "process diagnosis (`trajcurate diagnose`, `run --diagnose`); null when not diagnosed",
    fields=(
        _s("diagnoser_version", "the diagnoser's version"),
        _s("source_format", "the profile key: scaffold hint, else the detected scaffold"),
        _s("profile", "the severity profile applied"),
        _f("trajectory_score", "orchestration quality x (1 - the largest process penalty)"),
        _f("task_completion_score", "1 - the largest outcome penalty; null on subagents"),
        _f("orchestration_quality_overall", "weighted orchestration dimensions (one agent: 1.0)"),
        _f("max_severity_penalty", "the largest process penalty (severity weight x confidence)"),
        Field(
            "detections",
            LIST,
            False,
            "the detectors that fired",
            item=Field(
                "detection",
                STRUCT,
                False,
                "one detection",
                fields=(
                    _s("detector", "detector name"),
                    _s("axis", "process or outcome"),
                    _s("severity", "critical, high, medium, low or info"),
                    _f("confidence", "0 to 1"),
                    _s("tier", "high, likely, possible or low"),
                    _f("penalty", "severity weight x confidence"),
                    _s("title", "what the detector finds"),
                    _s("description", "what it found here"),
                    Field(
                        "evidence",
                        STRUCT,
                        False,
                        "where",
                        fields=(
                            Field("messages", LIST, False, "message indexes", item=_i("index", "")),
                            Field("snippets", LIST, False, "short quotes", item=_s("snippet", "")),
                        ),
                    ),
                ),
            ),
        ),
        Field(
            "score_breakdown",
            STRUCT,
            False,
            "what made the score",
            fields=(
                Field(
                    "top_contributors",
                    LIST,
                    False,
                    "the five largest penalties",
                    item=Field(
                        "contributor",
                        STRUCT,
                        False,
                        "one detection's penalty",
                        fields=(
                            _s("detector", "detector name"),
                            _s("axis", "process or outcome"),
                            _s("severity", "its severity"),
                            _f("confidence", "0 to 1"),
                            _f("penalty", "severity weight x confidence"),
                        ),
                    ),
                ),
                Field(
                    "dimensions",
                    STRUCT,
                    False,
                    "orchestration dimensions, null when not applicable",
                    fields=tuple(_f(name, f"orchestration: {name}") for name in _DIMENSION_NAMES),
                ),
                Field(
                    "dimension_weights",
                    STRUCT,
                    False,
                    "active weights of the dimensions, null when not applicable",
                    fields=tuple(_f(name, f"weight of {name}") for name in _DIMENSION_NAMES),
                ),
                Field(
                    "severity_weights",
                    STRUCT,
                    False,
                    "the severity weights in force",
                    fields=tuple(_f(name, f"weight of {name}") for name in _SEVERITY_NAMES),
                ),
                _s("profile", "the profile applied"),
                _s("profile_source", "built-in, or the profile file"),
            ),
        ),
    ),
)

GEN_PARAMS = Field(
    "_gen_params",
    STRUCT,
    False,
    "generation parameters the source recorded",
    fields=(
        _f("temperature", "sampling temperature"),
        _f("top_p", "nucleus sampling"),
        _i("max_tokens", "output token limit"),
        _extra(),
    ),
    rest="extra",
)

USAGE = Field(
    "_usage",
    STRUCT,
    False,
    "tokens and cost of the trial (main records)",
    fields=(
        _i("n_input_tokens", "prompt tokens"),
        _i("n_cache_tokens", "cached prompt tokens"),
        _i("n_output_tokens", "completion tokens"),
        _f("cost_usd", "cost in US dollars"),
        _extra(),
    ),
    rest="extra",
)

PROVENANCE = Field(
    "provenance",
    STRUCT,
    False,
    "where the record was read from, paths relative to the input root (README, Provenance)",
    fields=(
        _s("source", 'the read unit (a trial folder, a file); "" when not known'),
        Field(
            "files",
            LIST,
            False,
            "every file the record was read from (a streamed corpus: its lines, `file#L12`)",
            item=Field(
                "file",
                STRUCT,
                False,
                "one file",
                fields=(
                    _s("path", "the file"),
                    _s("sha256", "SHA-256 of the bytes read, hex"),
                ),
            ),
        ),
    ),
)

TOKENS = Field(
    "tokens",
    STRUCT,
    True,
    "`--tokenizer`: the record's token counts (`--max-tokens` compares their sum); null without",
    fields=(
        _i("messages", "tokens of the messages' text, as lf.stats.json counts", nullable=False),
        _i("tools", "tokens of the tool list as JSON text", nullable=False),
    ),
)

_SPAN = (
    Field("started_at", TIMESTAMP, True, "phase start"),
    Field("finished_at", TIMESTAMP, True, "phase end"),
)
INSTANCE_METADATA = Field(
    "_instance_metadata",
    STRUCT,
    False,
    "where the record came from",
    fields=(
        _s("task_name", "the task", nullable=True),
        _s("trial_name", "the Harbor trial", nullable=True),
        _s("job", "the Harbor job name", nullable=True),
        Field(
            "agent",
            STRUCT,
            True,
            "the agent",
            fields=(
                _s("name", "agent name", nullable=True),
                _s("version", "agent version", nullable=True),
                _s("model", "model name", nullable=True),
            ),
        ),
        _s("scaffold", "TQS V2 scaffold hint (claudecode, terminus2, ...)", nullable=True),
        _s("exception_type", "Harbor exception type of the trial", nullable=True),
        _s("exception_message", "Harbor exception message", nullable=True),
        Field("started_at", TIMESTAMP, True, "trial start"),
        Field("finished_at", TIMESTAMP, True, "trial end"),
        Field(
            "timings",
            STRUCT,
            True,
            "Harbor phase times",
            fields=tuple(
                Field(phase, STRUCT, True, f"the {phase} phase", fields=_SPAN)
                for phase in ("environment_setup", "agent_setup", "agent_execution", "verifier")
            ),
        ),
        _s("source", "Harbor dataset source", nullable=True),
        _s("task_checksum", "Harbor task checksum", nullable=True),
        Field("rewards", OBJECT, True, "verifier rewards, {key: number}"),
        _s("reward_source", "the file the rewards came from", nullable=True),
        _s("atif_schema_version", "ATIF version of the trajectory", nullable=True),
        Field("subagent", OBJECT, True, "how a subagent record was found"),
        Field("fidelity", OBJECT, True, "what the reader dropped or rewrote, {kind: count}"),
        Field(
            "errored_tool_call_ids",
            LIST,
            True,
            "the calls whose result the tool flagged as an error (kept as data, not text)",
            item=_s("call_id", "a tool call id"),
        ),
        Field(
            "warnings",
            LIST,
            False,
            "what the reader skipped",
            item=_s("warning", "one warning"),
        ),
        PROVENANCE,
        TOKENS,
        _extra(),
    ),
    rest="extra",
)

UNIQUE_INFO = Field(
    "unique_info",
    STRUCT,
    False,
    "per-record identity and payload",
    fields=(
        _s("_instance_id", "the trial: main and subagent records share it"),
        Field("_agent_type", STRING, False, "main or subagent (absent: main)", default="main"),
        SCORE,
        _s("_scorer_version", "the TQS V2 version that made `_score` (tqs-v2.x)", nullable=True),
        LLM_JUDGE,
        CURRICULUM,
        DIAGNOSIS,
        GEN_PARAMS,
        USAGE,
        INSTANCE_METADATA,
        _s(
            "_trainable",
            "trajcurate score: why the record cannot be SFT data (null: it can)",
            nullable=True,
        ),
        _extra("_extra"),
    ),
    rest="_extra",
)

TOOL_CALL = Field(
    "tool_call",
    STRUCT,
    False,
    "one call",
    fields=(
        _s("id", "call id"),
        _s("type", '"function"'),
        Field(
            "function",
            STRUCT,
            False,
            "the call",
            fields=(_s("name", "tool name"), _s("arguments", "arguments as JSON text")),
        ),
    ),
)

MESSAGE = Field(
    "message",
    STRUCT,
    False,
    "one message",
    fields=(
        _s("role", "system, user, assistant or tool"),
        _s("content", "the text"),
        _s("reasoning_content", 'assistant reasoning ("" when none); null on others', True),
        Field("tool_calls", LIST, True, "assistant tool calls; null when none", item=TOOL_CALL),
        _s("tool_call_id", "tool: the call answered", nullable=True),
        _s("name", "tool: the tool's name, when the source gave it", nullable=True),
    ),
)

TOOL = Field(
    "tool",
    STRUCT,
    False,
    "one tool",
    fields=(
        _s("type", '"function"'),
        Field(
            "function",
            STRUCT,
            False,
            "the tool",
            fields=(
                _s("name", "tool name"),
                _s("description", "tool description", nullable=True),
                Field("parameters", OBJECT, True, "JSON schema of the arguments"),
            ),
        ),
    ),
)

IM_SCHEMA = Field(
    "im",
    STRUCT,
    False,
    "an IM record (formats.md §4)",
    fields=(
        _s("version", '"2.0.0"'),
        Field(
            "meta_info",
            STRUCT,
            False,
            "record metadata",
            fields=(
                _s("teacher", "the model"),
                _s("query_source", "where the task came from"),
                Field("response_generate_time", DATE, False, "YYYY-MM-DD"),
                Field("response_update_time", DATE, False, "YYYY-MM-DD"),
                _s("owner", '"trajcurate"'),
                _s("language", "zh or en"),
                _s("category", '"code"'),
                _i("rounds", "assistant messages", nullable=False),
                UNIQUE_INFO,
            ),
        ),
        Field("tools", LIST, False, "tool definitions ([] when none)", item=TOOL),
        Field("messages", LIST, False, "the conversation", item=MESSAGE),
    ),
)


def _lf_json(name: str, description: str) -> Field:
    """An LF metadata column: JSON text, never null (`"null"` when the IM key is null), so
    that every column of every lf.json is a string whatever the job (README, Output schema)."""
    return Field(name, JSON, False, f"{description}, JSON text", default=LF_NULL)


LF_NULL = "null"
# The IM struct an LF JSON column is conformed to before it becomes text (stable keys).
_LF_STRUCTS = {"_score": SCORE, "_usage": USAGE, "_curriculum": CURRICULUM}
_LF_METADATA = (
    _lf_json("_score", 'IM `_score` (`"null"` on subagent records)'),
    _s("_instance_id", "the trial: main and subagent records share it"),
    _s("_agent_type", "main or subagent"),
    _lf_json("_gen_params", "generation parameters"),
    _lf_json("_usage", "IM `_usage`"),
    _lf_json("_instance_metadata", "IM `_instance_metadata`"),
    # after formats.md §5's columns: a trajcurate addition (--curriculum)
    _lf_json("_curriculum", 'IM `_curriculum` (`"null"` without --curriculum)'),
)

LF_SCHEMA = Field(
    "lf",
    STRUCT,
    False,
    "a LLaMA-Factory sharegpt example (formats.md §5)",
    fields=(
        Field(
            "messages",
            LIST,
            False,
            "alternating turns",
            item=Field(
                "turn",
                STRUCT,
                False,
                "one turn",
                fields=(
                    _s("role", "user, assistant, observation or function_call"),
                    _s("content", "the text (function_call: the call as JSON text)"),
                ),
            ),
        ),
        _s("system", "the system prompt"),
        _s("tools", 'the tool list as JSON text ("" when none)'),
        *_LF_METADATA,
    ),
)

SCHEMAS = {"im": IM_SCHEMA, "lf": LF_SCHEMA}

# --- conforming values ----------------------------------------------------------------------

_DUMPS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _json_text(value: Any) -> str:
    return orjson.dumps(value, option=_DUMPS).decode()


class _Rest:
    """Where unknown keys and mistyped values of one struct level go, by relative path."""

    def __init__(self) -> None:
        self.items: dict[str, Any] = {}

    def put(self, path: str, value: Any) -> None:
        self.items[path] = value

    def merge_text(self, existing: Any) -> None:
        """A remainder written earlier (idempotence): its keys come back; anything else in
        that slot is kept under the slot's own name."""
        if existing is None:
            return
        if isinstance(existing, str):
            try:
                parsed = orjson.loads(existing)
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                for key, value in parsed.items():
                    self.items.setdefault(key, value)
                return
        self.items.setdefault("", existing)

    def text(self) -> str | None:
        return _json_text(self.items) if self.items else None


def canonical_timestamp(value: Any) -> Any:
    """ISO text with microseconds (`Z` for UTC); epoch seconds/ms become UTC text.

    Returns `value` itself when it is not a timestamp (the caller moves it to the remainder
    if it is not a string).
    """
    moment: dt.datetime | None = None
    if isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return value
    elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        seconds = value / 1000 if abs(value) > 1e11 else value
        try:
            moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            return value
    if moment is None:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
        return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    return moment.isoformat(timespec="microseconds")


def _empty(field: Field) -> Any:
    if field.default is not None:
        return field.default
    if field.type == LIST:
        return []
    if field.type == STRUCT:
        return None  # built from {} by the caller
    if field.type == INT:
        return 0
    if field.type == FLOAT:
        return 0.0
    if field.type == BOOL:
        return False
    if field.type == DATE:
        return UNKNOWN_DATE
    return ""


_WRONG = object()


def _scalar(field: Field, value: Any) -> Any:
    """The value in the field's type, or `_WRONG`."""
    kind = field.type
    if kind == STRING:
        return value if isinstance(value, str) else _WRONG
    if kind == JSON:
        return _json_text(value)
    if kind == OBJECT:
        return value
    if isinstance(value, bool):
        return value if kind == BOOL else _WRONG
    if kind == INT:
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return _WRONG
    if kind == FLOAT:
        if isinstance(value, int | float):
            return float(value) if math.isfinite(value) else None
        return _WRONG
    if kind == TIMESTAMP:
        stamp = canonical_timestamp(value)
        return stamp if isinstance(stamp, str) else _WRONG
    if kind == DATE:
        return value if isinstance(value, str) and _DATE.fullmatch(value) else _WRONG
    return _WRONG


_Path = tuple[str | int, ...]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _path_text(path: _Path) -> str:
    """`("messages", 3, "weight")` -> `messages[3].weight` (built only for a misfit)."""
    text = ""
    for part in path:
        text = f"{text}[{part}]" if isinstance(part, int) else f"{text}.{part}" if text else part
    return text


def conform(field: Field, value: Any, rest: _Rest | None = None, path: _Path = ()) -> Any:
    """`value` conforming to `field`; what does not fit goes to `rest` under `path`.

    With `rest` None, what does not fit raises ValueError (a writer bug, not data).
    """
    if value is None:
        if field.nullable:
            return None
        if field.type != STRUCT:
            return _empty(field)
        value = {}
    if field.type == STRUCT:
        if type(value) is dict or isinstance(value, Mapping):
            return _conform_struct(field, value, rest, path)
        _misfit(rest, path, value)
        return None if field.nullable else _conform_struct(field, {}, rest, path)
    if field.type == LIST:
        if type(value) is list and field.item is not None:
            return _conform_items(field.item, value, rest, path)
        _misfit(rest, path, value)
        return None if field.nullable else []
    result = _scalar(field, value)
    if result is _WRONG:
        _misfit(rest, path, value)
        return None if field.nullable else _empty(field)
    return result


def _conform_items(item: Field, values: list[Any], rest: _Rest | None, path: _Path) -> list[Any]:
    """A list's items; objects (messages, calls: most of a record) straight to the struct,
    messages and tools of the usual shape by their fast paths (`_message`, `_tool`)."""
    if item.type != STRUCT:
        return [conform(item, v, rest, (*path, n)) for n, v in enumerate(values)]
    fast = _FAST_ITEMS.get(item.name)
    if fast is not None and fast[0] is item:
        whole = fast[2]
        if whole is not None:  # every item of the usual shape: one call for them all
            conformed_all = whole(values)
            if conformed_all is not None:
                return conformed_all
        shaped = fast[1]
        out = []
        for n, v in enumerate(values):
            conformed = shaped(v) if type(v) is dict else None
            out.append(conformed if conformed is not None else conform(item, v, rest, (*path, n)))
        return out
    return [
        _conform_struct(item, v, rest, (*path, n))
        if type(v) is dict
        else conform(item, v, rest, (*path, n))
        for n, v in enumerate(values)
    ]


def _misfit(rest: _Rest | None, path: _Path, value: Any) -> None:
    if rest is None:
        raise ValueError(f"{_path_text(path) or 'value'}: {value!r} does not fit the schema")
    rest.put(_path_text(path), value)


def _conform_struct(
    field: Field, value: Mapping[str, Any], rest: _Rest | None, path: _Path
) -> dict[str, Any]:
    """Members in schema order; strings, finite floats, ints and nulls (most values) without
    a call."""
    own = _Rest() if field.rest else None
    target, prefix = (own, ()) if own is not None else (rest, path)
    out: dict[str, Any] = {}
    for name, direct, nullable, member in field.plan:
        item: Any = value.get(name)
        kind = type(item)
        if (kind is direct and (kind is not float or math.isfinite(item))) or (
            item is None and nullable
        ):
            out[name] = item
        else:
            out[name] = conform(member, item, target, (*prefix, name))
    if not field.names.issuperset(value):
        for key, item in value.items():
            if key not in field.names:
                _misfit(target, (*prefix, str(key)), item)
    if own is not None and field.rest is not None:
        own.merge_text(value.get(field.rest))
        out[field.rest] = own.text()
    return out


# --- fast paths: the structs that make up most of a record ---------------------------------
#
# A message, tool call or tool whose every key is the schema's and every value of its type
# conforms to a copy of itself in schema order, with nothing for the remainder: these build
# that copy directly, and return None for anything else, which then goes the general way
# (`_conform_struct`), so the result is the same either way (tests/test_output_schema.py
# compares the two on odd shapes). The key orders are checked against the definitions here.

_NoneType = type(None)
_NULLABLE_STR = (str, _NoneType)
assert [f.name for f in MESSAGE.fields] == [
    "role",
    "content",
    "reasoning_content",
    "tool_calls",
    "tool_call_id",
    "name",
]
assert [(f.type, f.nullable) for f in MESSAGE.fields] == [
    (STRING, False),
    (STRING, False),
    (STRING, True),
    (LIST, True),
    (STRING, True),
    (STRING, True),
]
assert [(f.name, f.type, f.nullable) for f in TOOL_CALL.fields] == [
    ("id", STRING, False),
    ("type", STRING, False),
    ("function", STRUCT, False),
]
assert [(f.name, f.type, f.nullable) for f in TOOL_CALL.fields[2].fields] == [
    ("name", STRING, False),
    ("arguments", STRING, False),
]
assert [(f.name, f.type, f.nullable) for f in TOOL.fields] == [
    ("type", STRING, False),
    ("function", STRUCT, False),
]
assert [(f.name, f.type, f.nullable) for f in TOOL.fields[1].fields] == [
    ("name", STRING, False),
    ("description", STRING, True),
    ("parameters", OBJECT, True),
]
assert not (MESSAGE.rest or TOOL_CALL.rest or TOOL.rest)


def _tool_call(call: dict[str, Any]) -> dict[str, Any] | None:
    function = call.get("function")
    if (
        type(function) is not dict
        or not _CALL_NAMES.issuperset(call)
        or not _CALL_FUNCTION_NAMES.issuperset(function)
    ):
        return None
    call_id, kind = call.get("id"), call.get("type")
    name, arguments = function.get("name"), function.get("arguments")
    if type(call_id) is str and type(kind) is str and type(name) is str and type(arguments) is str:
        return {"id": call_id, "type": kind, "function": {"name": name, "arguments": arguments}}
    return None


def _message(message: dict[str, Any]) -> dict[str, Any] | None:
    if not _MESSAGE_NAMES.issuperset(message):
        return None
    get = message.get
    role, content, reasoning = get("role"), get("content"), get("reasoning_content")
    call_id, name, calls = get("tool_call_id"), get("name"), get("tool_calls")
    if not (
        type(role) is str
        and type(content) is str
        and type(reasoning) in _NULLABLE_STR
        and type(call_id) in _NULLABLE_STR
        and type(name) in _NULLABLE_STR
    ):
        return None
    if calls is not None:
        if type(calls) is not list:
            return None
        conformed = []
        for call in calls:
            done = _tool_call(call) if type(call) is dict else None
            if done is None:
                return None
            conformed.append(done)
        calls = conformed
    return {
        "role": role,
        "content": content,
        "reasoning_content": reasoning,
        "tool_calls": calls,
        "tool_call_id": call_id,
        "name": name,
    }


def _tool(tool: dict[str, Any]) -> dict[str, Any] | None:
    function = tool.get("function")
    if (
        type(function) is not dict
        or not _TOOL_NAMES.issuperset(tool)
        or not _TOOL_FUNCTION_NAMES.issuperset(function)
    ):
        return None
    kind, name, description = tool.get("type"), function.get("name"), function.get("description")
    if type(kind) is str and type(name) is str and type(description) in _NULLABLE_STR:
        parameters = function.get("parameters")
        return {
            "type": kind,
            "function": {"name": name, "description": description, "parameters": parameters},
        }
    return None


_MESSAGE_NAMES = MESSAGE.names
_CALL_NAMES = TOOL_CALL.names
_CALL_FUNCTION_NAMES = TOOL_CALL.fields[2].names
_TOOL_NAMES = TOOL.names
_TOOL_FUNCTION_NAMES = TOOL.fields[1].names

_Shaped = Callable[[dict[str, Any]], dict[str, Any] | None]
_ShapedList = Callable[[list[Any]], list[Any] | None]


def _native_conform() -> Any:
    """`_conform.c`: `_message` and `_tool` in C (the same results, in about 0.4 of the
    time), each also over a whole list, and `messages_json` (see `im_record_line`); None
    when built without a C compiler (TRAJCURATE_PURE_PYTHON=1)."""
    try:
        from transforms.sinks import _conform  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _conform


_NATIVE = _native_conform()
NATIVE_FAST_PATHS: tuple[_Shaped, _Shaped, _ShapedList, _ShapedList] | None = (
    None if _NATIVE is None else (_NATIVE.message, _NATIVE.tool, _NATIVE.messages, _NATIVE.tools)
)
NATIVE_MESSAGES_JSON: Callable[[list[Any]], bytes | None] | None = (
    None if _NATIVE is None else _NATIVE.messages_json
)
_MESSAGE_PATH, _TOOL_PATH = NATIVE_FAST_PATHS[:2] if NATIVE_FAST_PATHS else (_message, _tool)
_MESSAGES_PATH, _TOOLS_PATH = NATIVE_FAST_PATHS[2:] if NATIVE_FAST_PATHS else (None, None)
# by item name, with the item it is for (a struct of another schema may share the name), its
# fast path and that path over a whole list (None in pure Python)
_FAST_ITEMS: dict[str, tuple[Field, _Shaped, _ShapedList | None]] = {
    MESSAGE.name: (MESSAGE, _MESSAGE_PATH, _MESSAGES_PATH),
    TOOL.name: (TOOL, _TOOL_PATH, _TOOLS_PATH),
}


def conform_im_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The IM record as written: every key of `IM_SCHEMA` present, in order, one type each.

    Whatever has no place (an unknown message key, a mistyped score) ends up, by path, in
    `unique_info._extra`; conforming an already conformed record returns an equal record.
    """
    rest = _Rest()
    out: dict[str, Any] = conform(IM_SCHEMA, record, rest)
    if rest.items:
        info = out["meta_info"]["unique_info"]
        rest.merge_text(info.get("_extra"))
        info["_extra"] = rest.text()
    return out


# The messages end an IM record: a record conformed with none ends in these bytes.
assert IM_SCHEMA.fields[-1].name == "messages" and IM_SCHEMA.rest is None
_NO_MESSAGES_END = b'"messages":[]}'


def im_record_line(record: Mapping[str, Any]) -> bytes:
    """The IM record as written, as one JSON line: the bytes of `orjson.dumps` of
    `conform_im_record(record)` and a newline. Messages all of the usual shape (nearly
    every record's) go from the record to JSON text in C (`_conform.messages_json`) without
    the conformed copy of each being built; the rest of the record is conformed as always."""
    messages = record.get("messages")
    body = None
    if NATIVE_MESSAGES_JSON is not None and type(messages) is list:
        body = NATIVE_MESSAGES_JSON(messages)
    if body is not None:
        shell = dict(record)
        shell["messages"] = []
        head = orjson.dumps(conform_im_record(shell))
        if head.endswith(_NO_MESSAGES_END):
            return b"".join((head[:-3], body, b"}\n"))
    return orjson.dumps(conform_im_record(record), option=orjson.OPT_APPEND_NEWLINE)


def lf_metadata(info: Mapping[str, Any]) -> dict[str, Any]:
    """The copied-through keys of an LF example (from an IM record's `unique_info`),
    conforming to `LF_SCHEMA`.

    Every metadata column is JSON text, never null, so that no lf.json has a column a JSON
    reader types as null (Arrow's null type) where another job's has values: `datasets` 4.x
    loads every job's lf.json together without `features=`. The scores, usage and curriculum
    are first conformed to their IM structs (every key, in order; what IM keeps in its
    remainder LF does not carry), `_instance_metadata` and `_gen_params` kept as they are.
    """
    out: dict[str, Any] = {}
    for field in _LF_METADATA:
        value = info.get(field.name)
        if field.type != JSON:
            out[field.name] = conform(field, value, _Rest(), (field.name,))
            continue
        struct = _LF_STRUCTS.get(field.name)
        if struct is not None and (value is not None or not struct.nullable):
            value = conform(struct, value, _Rest(), (field.name,))
        out[field.name] = lf_json_text(value)
    return out


def lf_json_text(value: Any) -> str:
    """An LF JSON column's text: the value as JSON (sorted keys), `"null"` for None."""
    return LF_NULL if value is None else _json_text(value)


# --- derived: Arrow, datasets, README -------------------------------------------------------


def arrow_type(field: Field) -> Any:
    """The Arrow type of one field (object/json/timestamp as text, date as date32)."""
    import pyarrow as pa

    scalars = {
        STRING: pa.string(),
        INT: pa.int64(),
        FLOAT: pa.float64(),
        BOOL: pa.bool_(),
        TIMESTAMP: pa.string(),
        DATE: pa.date32(),
        JSON: pa.string(),
        OBJECT: pa.string(),
    }
    if field.type == STRUCT:
        return pa.struct([arrow_field(member) for member in field.fields])
    if field.type == LIST and field.item is not None:
        return pa.list_(arrow_type(field.item))
    return scalars[field.type]


def arrow_field(field: Field) -> Any:
    import pyarrow as pa

    return pa.field(field.name, arrow_type(field), nullable=field.nullable)


def arrow_schema(kind: str) -> Any:
    """The explicit Arrow schema of one output kind (`im` or `lf`)."""
    import pyarrow as pa

    return pa.schema([arrow_field(member) for member in SCHEMAS[kind].fields])


def _arrow_value(field: Field, value: Any) -> Any:
    """A conformed JSON value as Arrow takes it: objects as JSON text, dates as dates."""
    if value is None:
        return None
    if field.type == OBJECT:
        return _json_text(value)
    if field.type == DATE:
        return dt.date.fromisoformat(value)
    if field.type == STRUCT:
        return {m.name: _arrow_value(m, value.get(m.name)) for m in field.fields}
    if field.type == LIST and field.item is not None:
        return [_arrow_value(field.item, v) for v in value]
    return value


def arrow_table(kind: str, rows: Iterable[Mapping[str, Any]]) -> Any:
    """Conformed rows of one kind as an Arrow table with `arrow_schema(kind)`."""
    import pyarrow as pa

    root = SCHEMAS[kind]
    converted = [_arrow_value(root, row) for row in rows]
    return pa.Table.from_pylist(converted, schema=arrow_schema(kind))


_HF_VALUES = {
    STRING: "string",
    INT: "int64",
    FLOAT: "float64",
    BOOL: "bool",
    TIMESTAMP: "string",
    DATE: "date32",
    JSON: "string",
}


def hf_features(kind: str) -> Any:
    """`datasets.Features` to load the JSON outputs of one kind with (`load_dataset("json",
    data_files=..., features=hf_features("im"))`): JSON has no typed null, so a column that is
    null in a whole file or read chunk is only typed when the loader is told the type."""
    import datasets

    def feature(field: Field) -> Any:
        if field.type == STRUCT:
            return {member.name: feature(member) for member in field.fields}
        if field.type == LIST and field.item is not None:
            return datasets.List(feature(field.item))
        if field.type == OBJECT:
            return datasets.Json()
        return datasets.Value(_HF_VALUES[field.type])

    return datasets.Features({m.name: feature(m) for m in SCHEMAS[kind].fields})


def schema_rows(field: Field, prefix: str = "") -> Iterator[tuple[str, str, bool, str]]:
    """(dotted path, type, nullable, description) of every field below `field`."""
    for member in field.fields:
        path = _join(prefix, member.name)
        kind = member.type
        if kind == LIST and member.item is not None:
            item = member.item
            kind = f"list<{item.type}>"
            yield path, kind, member.nullable, member.description
            if item.type == STRUCT:
                yield from schema_rows(item, path + "[]")
            continue
        yield path, kind, member.nullable, member.description
        if kind == STRUCT:
            yield from schema_rows(member, path)


def markdown_table(kind: str) -> str:
    """The README table of one output kind: field, type, nullable, description."""
    lines = ["| field | type | nullable | description |", "|---|---|---|---|"]
    for path, kind_name, nullable, description in schema_rows(SCHEMAS[kind]):
        yes = "yes" if nullable else "no"
        lines.append(f"| `{path}` | {kind_name} | {yes} | {description} |")
    return "\n".join(lines) + "\n"


def jsonl_lines(records: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """Conformed IM records as JSON lines (the bytes every IM writer writes)."""
    for record in records:
        yield im_record_line(record)
