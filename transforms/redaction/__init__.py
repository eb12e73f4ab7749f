"""The parts of secret redaction; the API is `transforms.redact`.

- `patterns`: the prefilter (one compiled regex that every secret shape needs to match
  somewhere, so a text without one costs one scan) and the detector regexes;
- `rules`: when a name is a secret's name and a value a secret value (placeholders,
  references, code expressions and digests are not);
- `text`: `redact_text`, the detectors in order over one string;
- `survey`: one pass (in C) over a record's strings that tells redaction and cleaning whether
  they have anything to look at.
"""
