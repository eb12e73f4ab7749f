"""Which edited paths are test files (TQS V2 §8, `has_test_write`; §14.5)."""

from __future__ import annotations

import re
from functools import lru_cache

_EXT = (
    r"(?:py|js|jsx|ts|tsx|mjs|cjs|go|rs|java|kt|kts|scala|rb|php|cc|cpp|cxx|cu|c|h|hpp|hxx|cs"
    r"|swift|mm|pl|pm|ex|exs|lua|cljc|cljs|clj|edn|dart|sol|jl|erl|groovy|r|sh)"
)
_BY_NAME = re.compile(
    "|".join(
        [
            r"^conftest\.py$",
            rf"^test_.*\.{_EXT}$",
            rf"._(?:test|tests|spec)\.{_EXT}$",
            r"\.(?:test|spec)\.(?:js|jsx|ts|tsx|mjs|cjs|mts|cts)$",
            r"IT\.java$",
        ]
    ),
    re.IGNORECASE,
)
_CAMEL_CASE = re.compile(rf"^[A-Z]\w*(?:Test|Tests|Spec)\.{_EXT}$")
_BY_DIRECTORY = re.compile(
    rf"(?:^|/)(?:test|tests|__tests__|spec|specs|testing)/(?:.*/)?[^/]+\.{_EXT}$"
    rf"|(?:^|/)t/(?:.*/)?[^/]+\.t$"
    rf"|(?:^|/)src/(?:test|integrationTest|androidTest)/(?:.*/)?[^/]+\.{_EXT}$",
    re.IGNORECASE,
)
_REPRO = re.compile(r"(?:reproduce|repro|verify|smoke)\S*\.\w+$", re.IGNORECASE)


@lru_cache(maxsize=8192)
def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return bool(
        _BY_NAME.search(name)
        or _CAMEL_CASE.search(name)
        or _BY_DIRECTORY.search(path)
        or _REPRO.search(path)
    )
