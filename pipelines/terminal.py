"""Text from the inputs, made safe to show on a terminal.

A job name, a path or an error message can come from a trial folder an agent wrote: a
newline in it would fake a summary line (a second `TOTAL`), a carriage return or an escape
sequence would overwrite or recolour what the terminal shows, a bidi override would reorder
it. `escaped` shows every character that is not printable (controls, ESC, CR, LF, format
characters such as U+202E, separators) as its Python escape, so one value is one line.
"""

from __future__ import annotations


def escaped(text: str) -> str:
    """`text` with each non-printable character written as `\\n`, `\\x1b`, `\\u202e`, ..."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )
