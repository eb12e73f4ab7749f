"""Native parts of the build; everything else is declared in pyproject.toml.

The TQS V2 scorer's modules, the IM fast check and the trainable rules, the ATIF conversion
and message building the readers share, cleaning and schema conforming are compiled with
mypyc; the character-entropy counter, the survey that tells redaction and cleaning which
records they can skip (`transforms/redaction/_survey.c`), the conforming of messages and
tools of the usual shape (`transforms/sinks/_conform.c`) and the IM checks of the common case
(`scorers/_im_fast.c`: a valid, trainable record) are small C extensions: together they
make `trajcurate score` several times faster and reading a trial ~15% faster. The Python
sources stay the single source of truth and run unchanged when no compiled module is
present: set TRAJCURATE_PURE_PYTHON=1 to install without a C compiler (`scorers/__init__.py`
and `transforms/__init__.py` refuse compiled modules older than their source).
"""

from __future__ import annotations

import os

from setuptools import Extension, setup

COMPILED_MODULES = [
    "scorers/im_check.py",
    "scorers/im_validity.py",
    "scorers/tqs_v2/components.py",
    "scorers/tqs_v2/diagnostics.py",
    "scorers/tqs_v2/speedups.py",
    "scorers/tqs_v2/errors.py",
    "scorers/tqs_v2/extended_tools.py",
    "scorers/tqs_v2/patterns.py",
    "scorers/tqs_v2/score.py",
    "scorers/tqs_v2/shell.py",
    "scorers/tqs_v2/shell_writes.py",
    "scorers/tqs_v2/test_files.py",
    "scorers/tqs_v2/text.py",
    "scorers/tqs_v2/tools.py",
    "scorers/tqs_v2/trajectory.py",
    # ATIF conversion and the message building every reader shares (not the readers that
    # open files: confinement stays plain Python, where tests can watch its calls)
    "transforms/readers/atif_claude.py",
    "transforms/readers/atif_files.py",
    "transforms/readers/atif_messages.py",
    "transforms/readers/atif_schema.py",
    "transforms/readers/atif_sidechains.py",
    "transforms/readers/conversation.py",
    "transforms/readers/im_builder.py",
    # cleaning, and conforming each record to the output schema where it is written
    "transforms/cleaning.py",
    "transforms/json_text.py",
    "transforms/sinks/schema.py",
]


def native_extensions() -> list[Extension]:
    if os.environ.get("TRAJCURATE_PURE_PYTHON") == "1":
        return []
    from mypyc.build import mypycify

    entropy = Extension(
        "scorers.tqs_v2._speedups",
        ["scorers/tqs_v2/_speedups.c"],
        extra_compile_args=["-O2"],
    )
    survey = Extension(
        "transforms.redaction._survey",
        ["transforms/redaction/_survey.c"],
        extra_compile_args=["-O2"],
    )
    conform = Extension(
        "transforms.sinks._conform",
        ["transforms/sinks/_conform.c"],
        extra_compile_args=["-O2"],
    )
    im_checks = Extension(
        "scorers._im_fast",
        ["scorers/_im_fast.c"],
        extra_compile_args=["-O2"],
    )
    compiled: list[Extension] = mypycify(
        COMPILED_MODULES, opt_level="3", group_name="scorers._native"
    )
    return [entropy, survey, conform, im_checks, *compiled]


setup(ext_modules=native_extensions())
