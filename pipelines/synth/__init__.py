"""Synthetic Harbor jobs for demos and benchmarks (`trajcurate synth`).

Deterministic: the same options write a byte-identical tree. Tasks, commands and outputs
are the project's own inventions (`templates.py`, `languages.py`); the file layouts follow
formats.md §1-§3.
"""

from pipelines.synth.generate import MANIFEST, SynthError, SynthOptions, SynthSummary, generate
from pipelines.synth.trial import trial_name_for

__all__ = ["MANIFEST", "SynthError", "SynthOptions", "SynthSummary", "generate", "trial_name_for"]
