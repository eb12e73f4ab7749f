"""Readers: every trajectory source becomes instance bundles of IM records.

One module per source format; each exposes a reader `read(path, limits=ReadLimits()) ->
Iterator[Bundle]` registered in `registry.py`. Readers know nothing of Beam. Inputs are
untrusted: every file a reader opens goes through `confined.TrialFiles` (inside the trial
folder or the input file's own folder, regular files only, size-capped).
"""
