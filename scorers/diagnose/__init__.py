"""Process diagnosis: "what went wrong in this run, and how badly" (shared/docs/diagnose.md).

Detectors over an IM record (and its instance's subagent records) with severity, confidence
and evidence (message indexes); `trajectory_score` (process), `task_completion_score`
(outcome) and `score_breakdown`; severity profiles per `source_format`. Pure: no Beam, no I/O
beyond reading a profile file when asked to.
"""

from scorers.diagnose.detectors import DETECTORS
from scorers.diagnose.model import SEVERITIES, confidence_tier
from scorers.diagnose.orchestration import DIMENSION_WEIGHTS, DIMENSIONS
from scorers.diagnose.profiles import ProfileError, ProfileSet, build_profiles, load_profiles
from scorers.diagnose.score import (
    DIAGNOSER_VERSION,
    diagnose_record,
    diagnose_records,
    top_contributor,
)

__all__ = [
    "DETECTORS",
    "DIAGNOSER_VERSION",
    "DIMENSIONS",
    "DIMENSION_WEIGHTS",
    "SEVERITIES",
    "ProfileError",
    "ProfileSet",
    "build_profiles",
    "confidence_tier",
    "diagnose_record",
    "diagnose_records",
    "load_profiles",
    "top_contributor",
]
