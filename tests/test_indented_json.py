"""`indented_json` writes exactly what `json.dumps(..., indent=2, ensure_ascii=False)` does."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.readers.atif_messages import indented_json

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_JSON)
def test_same_text_as_json_dumps(value: Any) -> None:
    assert indented_json(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_terminus_shapes_and_fallbacks() -> None:
    answer = {
        "analysis": 'é "quoted"\n\x00\u2028 \ud83d',
        "plan": "",
        "commands": [
            {"keystrokes": "ls -la\n", "duration": 0.1},
            {"keystrokes": {}, "duration": []},
        ],
        "task_complete": False,
    }
    cases: list[Any] = [answer, {1: "int key"}, {"k": math.nan}, [math.inf, -math.inf], (1, 2)]
    for value in cases:
        assert indented_json(value) == json.dumps(value, indent=2, ensure_ascii=False)
