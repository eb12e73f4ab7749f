"""JSON text exactly as Python's `json` module gives it, faster where that is safe.

Some outputs are defined by what `json.dumps(value, ensure_ascii=False)` writes (LLaMA-Factory
dumps tool calls that way; Harbor's converter dumped tool results that way) and some inputs
by what `json.loads` reads. These helpers give the same text and the same values:

- `python_json` is `json.dumps(value, ensure_ascii=False)` through the stdlib's C encoder
  built once (json.dumps builds an encoder per call); values read from JSON cannot be
  circular, so the circular-reference check is left out (a circular value recurses until
  `RecursionError` instead of raising `ValueError`).
- `json_value` is `json.loads(text)` by the stdlib's C scanner called directly (json.loads
  wraps it in Python: a BOM check, two whitespace matches); a text it does not read whole
  from its first character (leading or trailing whitespace, extra data, a BOM, not JSON)
  goes to `json.loads`, which then reads or refuses it as always. One difference: a text
  nested deeper than Python's recursion limit is refused with `json.JSONDecodeError` (a
  `ValueError`, as for any text it cannot read), where `json.loads` raises `RecursionError`.
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["JSON_OBJECT", "json_value", "python_json"]

# What `isinstance` tests a parsed JSON object against: `dict` first, so that the usual
# case is an exact type check (~15 ns), not the `Mapping` ABC's (~100 ns); any other
# mapping still passes. (For a value that is usually None, test `is not None` first.)
JSON_OBJECT = (dict, Mapping)

_ENCODER = json.JSONEncoder(ensure_ascii=False)
# The stdlib's C accelerators (None where Python runs without them: then `json` itself).
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_C_SCANNER = getattr(json.scanner, "c_make_scanner", None)
# (value, indent level) -> chunks; what JSONEncoder.iterencode builds for each call
_ENCODE: Callable[[Any, int], Any] | None = _C_ENCODER and _C_ENCODER(
    None,  # no circular-reference markers
    _ENCODER.default,
    json.encoder.encode_basestring,
    None,
    _ENCODER.key_separator,
    _ENCODER.item_separator,
    False,
    False,
    True,
)
# (text, index) -> (value, end), or StopIteration; what JSONDecoder.raw_decode calls
_SCAN: Callable[[str, int], tuple[Any, int]] | None = _C_SCANNER and _C_SCANNER(json.JSONDecoder())


def python_json(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)` (see the module docstring)."""
    if _ENCODE is None or isinstance(value, str):
        return _ENCODER.encode(value)
    return "".join(_ENCODE(value, 0))


def json_value(text: str) -> Any:
    """`json.loads(text)`: the same value, or the same `json.JSONDecodeError` (also for a
    text nested too deeply to read: see the module docstring)."""
    try:
        if _SCAN is not None:
            try:
                value, end = _SCAN(text, 0)
            except StopIteration:
                pass
            else:
                if end == len(text):
                    return value
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read", text, 0) from None
