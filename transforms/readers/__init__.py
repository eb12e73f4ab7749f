"""Readers: every trajectory source becomes instance bundles of IM records.

One module per source format; each exposes a reader `read(path, limits=ReadLimits()) ->
Iterator[Bundle]` registered in `registry.py`. Readers know nothing of Beam. Inputs are
untrusted: every file a reader opens goes through `confined.TrialFiles` (inside the trial
folder or the input file's own folder, regular files only, size-capped).
"""

import os

from scorers import refuse_stale_compiled_modules

# Some of these modules may be compiled in place (setup.py): never run one older than its source.
refuse_stale_compiled_modules((os.path.dirname(os.path.abspath(__file__)),))
