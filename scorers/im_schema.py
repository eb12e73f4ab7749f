"""The pydantic side of IM record validation: the strict adapter and its error messages.

Imported lazily by `scorers.im.validate_im_record`, only for records the fast check
(`scorers.im_check.is_im_record`) does not accept, so pydantic stays off the start-up path.
The schema itself is the TypedDicts in `scorers.im`.
"""

from __future__ import annotations

import orjson
from pydantic import TypeAdapter, ValidationError

from scorers.im import IMRecord

__all__ = ["IM_RECORD_ADAPTER", "schema_error"]

IM_RECORD_ADAPTER: TypeAdapter[IMRecord] = TypeAdapter(IMRecord)


def schema_error(obj: object) -> str | None:
    """None if pydantic accepts `obj` as an IM record, else the one-line reason."""
    try:
        IM_RECORD_ADAPTER.validate_python(obj)
    except ValidationError as exc:
        return _reason(exc)
    return None


def _reason(exc: ValidationError) -> str:
    """First error as `location: message (got ...)`, plus how many more there were."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = ".".join(str(part) for part in first["loc"]) or "<record>"
    reason = f"{loc}: {first['msg']}"
    if first["type"] not in ("missing", "extra_forbidden"):
        reason += f" (got {_short(first['input'])})"
    if len(errors) > 1:
        reason += f" [+{len(errors) - 1} more error(s)]"
    return reason


def _short(value: object, limit: int = 60) -> str:
    """The offending value as JSON text, cut to `limit` characters."""
    text = orjson.dumps(value, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()
    return text if len(text) <= limit else text[: limit - 3] + "..."
