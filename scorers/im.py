"""IM (intermediate message) records: the typed edge of the pipeline (formats.md §4).

The schema is written as TypedDicts rather than pydantic BaseModel classes: records travel
between stages as plain dicts, the TypedDicts type those dicts for mypy, and pydantic validates
them as dicts (`scorers.im_schema.IM_RECORD_ADAPTER`) — about a third of the cost of building
model instances.

Validation checks structure and types only (role order is a separate, later check) and is
strict: a wrong JSON type is an error, never coerced. Unknown keys inside `meta_info`,
`unique_info`, tools and messages are allowed and kept; the top level holds exactly the four
keys of the format. `validate_im_record` returns the caller's dict itself, so key order and
every value survive untouched.

Validation sits on every record's path, so it has two tiers: the hand-written check
`scorers.im_check.is_im_record` (in C when built, `scorers/_im_fast.c`: the same answers)
accepts the common valid record without pydantic; anything it does not accept goes to the
pydantic adapter, which gives the verdict and the reason. This module does not import
pydantic: the TypedDicts carry their pydantic config as the plain `__pydantic_config__`
attribute (what `pydantic.with_config` sets) and `im_schema` — the adapter and the error
messages — is imported only when a record needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, TypeVar, cast

from typing_extensions import TypedDict

from scorers.im_check import is_im_record


def _im_fast() -> Any:
    """The IM checks in C (`scorers/_im_fast.c`), or None when built without a C compiler
    (TRAJCURATE_PURE_PYTHON=1)."""
    try:
        from scorers import _im_fast  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _im_fast


IM_FAST = _im_fast()
# `is_im_record`, in C when built (tests/test_im_fast.py: the same answers)
IM_RECORD_CHECK: Callable[[object], bool] = (
    is_im_record if IM_FAST is None else IM_FAST.im_record_ok
)

if TYPE_CHECKING:
    from pydantic import ConfigDict, GetCoreSchemaHandler
    from pydantic_core import CoreSchema

__all__ = [
    "IM_VERSION",
    "FunctionCall",
    "FunctionSpec",
    "IMRecord",
    "InvalidRecord",
    "Message",
    "MetaInfo",
    "Tool",
    "ToolCall",
    "UniqueInfo",
    "agent_type",
    "validate_im_record",
]

IM_VERSION = "2.0.0"

AgentType = Literal["main", "subagent"]
Role = Literal["system", "user", "assistant", "tool"]

_OPEN: ConfigDict = {"strict": True, "extra": "allow"}
_CLOSED: ConfigDict = {"strict": True, "extra": "forbid"}

_TypeT = TypeVar("_TypeT", bound=type)


def _with_config(config: ConfigDict) -> Callable[[_TypeT], _TypeT]:
    """`pydantic.with_config` without importing pydantic: it only sets this attribute."""

    def attach(cls: _TypeT) -> _TypeT:
        cls.__pydantic_config__ = config  # type: ignore[attr-defined]
        return cls

    return attach


class _NonNegative:
    """pydantic metadata for `int >= 0`: what `annotated_types.Ge(0)` says, without importing
    annotated_types (20 ms of start-up, every run) when pydantic itself is not needed."""

    def __get_pydantic_core_schema__(
        self, source: type[Any], handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        schema: dict[str, Any] = {**handler(source), "ge": 0}  # an int schema, now bounded
        return cast("CoreSchema", schema)


class InvalidRecord(ValueError):
    """A JSON value that is not a structurally valid IM record; the message is the reason."""


@_with_config(_OPEN)
class UniqueInfo(TypedDict):
    """Per-record identity and payload; `_agent_type` absent means a main-agent record."""

    _instance_id: str
    _agent_type: NotRequired[AgentType]
    _score: NotRequired[dict[str, Any] | None]
    _gen_params: NotRequired[dict[str, Any] | None]
    _usage: NotRequired[dict[str, Any] | None]
    _instance_metadata: NotRequired[dict[str, Any] | None]


@_with_config(_OPEN)
class MetaInfo(TypedDict):
    teacher: str
    query_source: str
    response_generate_time: str
    response_update_time: str
    owner: str
    language: str
    category: str
    rounds: Annotated[int, _NonNegative()]
    unique_info: UniqueInfo


@_with_config(_OPEN)
class FunctionSpec(TypedDict):
    name: str
    description: NotRequired[str | None]
    parameters: NotRequired[dict[str, Any] | None]


@_with_config(_OPEN)
class Tool(TypedDict):
    type: Literal["function"]
    function: FunctionSpec


@_with_config(_OPEN)
class FunctionCall(TypedDict):
    name: str
    arguments: str


@_with_config(_OPEN)
class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall


@_with_config(_OPEN)
class Message(TypedDict):
    role: Role
    content: str
    name: NotRequired[str | None]
    reasoning_content: NotRequired[str | None]
    tool_calls: NotRequired[list[ToolCall] | None]
    tool_call_id: NotRequired[str | None]


@_with_config(_CLOSED)
class IMRecord(TypedDict):
    version: Literal["2.0.0"]
    meta_info: MetaInfo
    tools: list[Tool] | None
    messages: list[Message]


def validate_im_record(obj: object) -> dict[str, Any]:
    """Check that `obj` is an IM record and return it unchanged (the same dict object).

    Raises `InvalidRecord` with a one-line reason naming the first offending location.
    """
    if not isinstance(obj, dict):
        raise InvalidRecord(f"record is a JSON {_json_type(obj)}, expected an object")
    if IM_RECORD_CHECK(obj):
        return obj
    from scorers.im_schema import schema_error  # pydantic: loaded only when it is needed

    reason = schema_error(obj)
    if reason is not None:
        raise InvalidRecord(reason)
    return obj  # the fast check is conservative; pydantic has the last word


def agent_type(record: Mapping[str, Any]) -> str:
    """`main` or `subagent`; a record without `_agent_type` is a main-agent record."""
    meta_info = record.get("meta_info")
    unique_info = meta_info.get("unique_info") if isinstance(meta_info, dict) else None
    value = unique_info.get("_agent_type") if isinstance(unique_info, dict) else None
    return "main" if value is None else str(value)


def _json_type(obj: object) -> str:
    names = {
        type(None): "null",
        bool: "boolean",
        int: "number",
        float: "number",
        str: "string",
        list: "array",
    }
    return names.get(type(obj), type(obj).__name__)
