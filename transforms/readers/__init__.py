"""Readers: every trajectory source becomes instance bundles of IM records.

One module per source format; each exposes a reader `read(path) -> Iterator[Bundle]`
registered in `registry.py`. Readers know nothing of Beam.
"""
