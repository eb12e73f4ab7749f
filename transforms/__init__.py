"""The curation chain's parts: readers, redaction, cleaning, scoring stages, sinks.

Some modules here are compiled in place (setup.py). Python imports a compiled module in
preference to its source, so one older than its source would silently run old code:
importing `transforms` refuses that, as importing `scorers` does for the scorer's.
"""

import os

from scorers import refuse_stale_compiled_modules

_HERE = os.path.dirname(os.path.abspath(__file__))
refuse_stale_compiled_modules(
    tuple(os.path.join(_HERE, sub) for sub in ("", "readers", "redaction", "sinks"))
)
