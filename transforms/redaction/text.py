"""`redact_text`: the detectors in order over one string.

Order matters: whole PEM blocks first (their base64 would otherwise look like other
things), then the shapes with a known prefix, then URL passwords and signatures, Docker
credentials, `mysql -p...`, named AWS secrets and `Authorization` headers, then values
assigned to secret-looking names, and last secrets wrapped in base64. A redacted value
starts with `[REDACTED:`, which no detector takes again, so redacting twice changes nothing.

Two ways of hiding a secret are undone before the detectors look:

- invisible characters: the detectors read the text as the cleaner will leave it
  (`transforms/cleaning.py`: format characters such as U+200B, ANSI escapes, control
  characters), so `gh\u200bp_...` is found; a text holding a secret is returned cleaned
  (the cleaner would remove those characters anyway), any other is returned as it is, so
  TQS V2 still scores the text as the agent saw it;
- base64 (`echo <base64> | base64 -d`, a base64 `.env` or Docker config): in a text
  where base64 is mentioned (`has_b64_hint`: `base64`, `b64decode`, `atob`, ...) every run
  of base64 characters of plausible length (`B64_MIN`..`B64_MAX`) is decoded, and elsewhere
  the runs that start like base64 JSON (`eyJ`) or a base64 PEM block (`LS0tLS1C`); a run
  whose decoded text holds a secret (the same detectors, to `B64_DEPTH` levels of nesting)
  is replaced as a whole, by the placeholder of the first secret inside.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from collections.abc import Callable, Iterable

from transforms.cleaning import clean_text
from transforms.redaction import patterns as p
from transforms.redaction.rules import (
    ATTRIBUTE,
    NONE,
    REDACTED_PREFIX,
    STRONG,
    WEAK,
    high_entropy,
    is_placeholder,
    literal_secret,
    looks_random,
    name_tier,
)

Span = tuple[int, int, str]  # start, end, kind


def placeholder(kind: str) -> str:
    return f"{REDACTED_PREFIX}{kind}]"


def redact_text(text: str) -> tuple[str, Counter[str]]:
    """`text` with every secret replaced by `[REDACTED:<kind>]`, and the count per kind."""
    counts: Counter[str] = Counter()
    return scan(text, counts, b64=has_b64_hint(text)), counts


def scan(text: str, counts: Counter[str], b64: bool, depth: int = 0) -> str:
    """`text` with every secret replaced (counted in `counts`), or `text` itself when it
    holds none. `b64`: decode every base64 run (the text, or its record, mentions base64)."""
    view = visible(text)
    out = redact_matched(view, counts) if p.search_any(view) else view
    if len(out) >= B64_MIN and (b64 or any(anchor in out for anchor in B64_ANCHORS)):
        out = _redact_base64(out, counts, b64, depth)
    return text if out is view else out  # each step returns its text itself when it found none


def may_hide(text: str) -> bool:
    """Whether `text` may hold characters the cleaner removes (format characters, ANSI
    escapes, controls). Cheap: one C-level check. (Their JSON escapes, `\\u200b`, are a
    trigger of the prefilter: the JSON is decoded and its strings looked at.)"""
    if text.isascii():
        return _BINARY.search(text) is not None  # the ASCII controls the cleaner removes
    # besides format characters: no-break and ideographic spaces, private-use characters
    return not text.replace("\n", "").replace("\t", "").replace("\r", "").isprintable()


def visible(text: str) -> str:
    """`text` as the detectors read it: as the cleaner will leave it, when it may hide
    something (else `text` itself)."""
    return clean_text(text)[0] if may_hide(text) else text


# base64: runs of this many characters are decoded (a 16-byte secret takes 22)
B64_MIN = 20
B64_MAX = 16384
B64_DEPTH = 2
# base64 of `{"` (JSON) and of `-----BEGIN`: decoded wherever they start a run
B64_ANCHORS = ("eyJ", "LS0tLS1C")
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_B64_BODY = re.compile(rf"[A-Za-z0-9+/_-]{{{B64_MIN},}}={{0,2}}")
_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])" + _B64_BODY.pattern)
_BINARY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PLACED = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")


def has_b64_hint(text: str) -> bool:
    """Whether `text` mentions base64 (`base64`, `Base64`, `BASE64`, `_b64`, `.B64`, `atob`;
    not the `b64` inside a hex digest): then every base64 run of its record is decoded.
    Also a trigger of the prefilter."""
    return any(search(text) for search in p.B64_HINTS)


def b64_decoded(run: str) -> str | None:
    """The text a base64 (or base64url) run encodes; None when it is not text (binary data,
    an image) or not base64."""
    core = run.rstrip("=")
    if len(core) % 4 == 1 or len(core) > B64_MAX:
        return None
    url = "-" in core or "_" in core
    if url and ("+" in core or "/" in core):
        return None  # two alphabets: an identifier or a path, not base64
    try:
        data = base64.b64decode(
            core + "=" * (-len(core) % 4), altchars=b"-_" if url else None, validate=True
        )
        decoded = data.decode("utf-8")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    return None if _BINARY.search(decoded) else decoded


def _b64_runs(text: str, full: bool) -> Iterable[re.Match[str]]:
    if full:
        yield from _B64_RUN.finditer(text)
        return
    for anchor in B64_ANCHORS:
        position = text.find(anchor)
        while position >= 0:
            match = None
            if not position or text[position - 1] not in _B64_CHARS:
                match = _B64_BODY.match(text, position)
            if match is not None:
                yield match
            position = text.find(anchor, match.end() if match else position + 1)


def _redact_base64(text: str, counts: Counter[str], full: bool, depth: int) -> str:
    """Each base64 run (every one when `full`, else those at `B64_ANCHORS`) whose decoded
    text holds a secret, replaced as a whole by the placeholder of its first secret."""
    if depth >= B64_DEPTH:
        return text
    spans: list[Span] = []
    for match in _b64_runs(text, full):
        run = match.group(0)
        if run.islower() or run.isupper() or run.isdigit():
            continue  # an identifier, a word, a number: base64 of text mixes cases
        decoded = b64_decoded(run)
        if decoded is None or len(decoded) < 8:
            continue
        inner: Counter[str] = Counter()
        out = scan(decoded, inner, b64=True, depth=depth + 1)
        first = _PLACED.search(out) if inner else None
        if first is not None:
            spans.append((*match.span(), first.group(1)))
    return _apply(text, spans, counts)


def redact_matched(text: str, counts: Counter[str]) -> str:
    """The detectors over a text the prefilter matched; counts go to `counts`."""
    if "PRIVATE KEY" in text:
        text = _apply(text, _private_keys(text), counts)
    if "eyJ" in text:
        text = _apply(text, _prefixed(text, "jwt", p.JWT, 3, p.B64URL), counts)
    spans: list[Span] = []
    for kind, trigger, pattern, prefix, boundary in p.TOKENS:
        if trigger in text:
            spans += _prefixed(text, kind, pattern, prefix, boundary)
    if "IA" in text:
        spans += _aws_ids(text)
    if ":AA" in text:
        spans += _telegram(text)
    if spans:
        text = _apply(text, spans, counts)
    if "hooks.slack.com" in text:
        text = _apply(text, _values(text, p.SLACK_WEBHOOK, "slack_webhook", _long_enough), counts)
    if "://" in text:
        text = _apply(text, _values(text, p.URL_PASSWORD, "url_password", _url_password), counts)
    if "sig=" in text or "Signature=" in text:
        text = _apply(text, _values(text, p.URL_SIGNATURE, "url_signature", _signature), counts)
    if "auth" in text:
        text = _apply(text, _values(text, p.DOCKER_AUTH, "docker_auth", _docker_auth), counts)
    if "mysql" in text or "mariadb" in text:
        spans = _values(text, p.MYSQL_PASSWORD, "cli_password", _cli_password)
        text = _apply(text, spans, counts)
    lowered = text.lower()
    if "secret" in lowered:
        spans = _values(text, p.AWS_SECRET_NAMED, "aws_secret_access_key", _not_example)
        text = _apply(text, spans, counts)
    if "authoriz" in lowered:
        spans = _values(text, p.AUTH_HEADER, "high_entropy_secret", _credential)
        text = _apply(text, spans, counts)
    return _apply(text, _assignments(text), counts)


def prefixed_spans(text: str) -> list[Span]:
    """Where the shapes with a known prefix are (keys and tokens, AWS key ids, JWTs)."""
    spans = _prefixed(text, "jwt", p.JWT, 3, p.B64URL) if "eyJ" in text else []
    for kind, trigger, pattern, prefix, boundary in p.TOKENS:
        if trigger in text:
            spans += _prefixed(text, kind, pattern, prefix, boundary)
    if "IA" in text:
        spans += _aws_ids(text)
    return spans


def _apply(text: str, spans: Iterable[Span], counts: Counter[str]) -> str:
    """`text` with each span replaced by its placeholder (overlaps: the first one wins)."""
    out: list[str] = []
    position = 0
    for start, end, kind in sorted(spans):
        if start < position:
            continue
        out += (text[position:start], placeholder(kind))
        counts[kind] += 1
        position = end
    return "".join(out) + text[position:] if out else text


def _private_keys(text: str) -> list[Span]:
    """Whole PEM blocks, BEGIN to END; a block cut short (no END, or not only key material
    before the next END) to where its key lines stop."""
    spans: list[Span] = []
    position = 0
    while (begin := p.PEM_BEGIN.search(text, position)) is not None:
        start = begin.end()
        closing = p.PEM_END.search(text, start, start + p.PEM_MAX)
        if closing is not None and p.PEM_INSIDE.fullmatch(text, start, closing.start()):
            end = closing.end()
        else:
            body = p.PEM_BODY.match(text, start)
            end = body.end() if body else start
            while end > start and text[end - 1].isspace():
                end -= 1
        spans.append((begin.start(), end, "private_key"))
        position = end
    return spans


def _prefixed(
    text: str, kind: str, pattern: re.Pattern[str], prefix: int, boundary: str
) -> list[Span]:
    """Matches of a prefixed shape that start a token and whose random part looks random."""
    spans: list[Span] = []
    for match in pattern.finditer(text):
        start = match.start()
        if start and text[start - 1] in boundary:
            continue
        if _random_body(match.group(0)[prefix:], kind):
            spans.append((start, match.end(), kind))
    return spans


def _random_body(body: str, kind: str) -> bool:
    """Real keys are random: placeholders (`sk-xxxxxxxx...`, `ghp_XXXX...`) and CSS classes
    (`sk-loading-spinner-...`) are not."""
    if kind == "slack_token":
        return any(char.isdigit() for char in body)
    return len(set(body)) >= 6 and any(char.isdigit() or char.isupper() for char in body)


def _aws_ids(text: str) -> list[Span]:
    """Access key ids (not AWS's documented `...EXAMPLE` ones), and a mixed-case 40-char
    token within `AWS_SECRET_WINDOW` chars after one (credentials CSV, `key_id secret`)."""
    spans: list[Span] = []
    for match in p.AWS_ACCESS_KEY_ID.finditer(text):
        start, end = match.span()
        if (start and text[start - 1] in _BEFORE_KEY_ID) or match.group(0).endswith("EXAMPLE"):
            continue
        spans.append((start, end, "aws_access_key_id"))
        secret = p.AWS_SECRET_BARE.search(text, end, end + p.AWS_SECRET_WINDOW)
        if secret is not None and _aws_secret_shape(secret.group(0)):
            spans.append((secret.start(), secret.end(), "aws_secret_access_key"))
    return spans


_BEFORE_KEY_ID = p.B64URL + "+"  # a key id may follow a `/` (a URL path, an ARN)


def _telegram(text: str) -> list[Span]:
    """`<bot id>:AA...` tokens whose secret part looks random."""
    return [
        (*match.span(), "telegram_bot_token")
        for match in p.TELEGRAM_BOT_TOKEN.finditer(text)
        if _random_body(match.group(0).partition(":")[2], "telegram_bot_token")
    ]


def _signature(value: str) -> bool:
    return not is_placeholder(value) and looks_random(value)


def _docker_auth(value: str) -> bool:
    """base64 of `user:password`."""
    decoded = b64_decoded(value)
    if decoded is None:
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password.strip()) and not is_placeholder(password)


def _cli_password(value: str) -> bool:
    if value[:1] in "'\"":
        value = value[1:-1]
    return literal_secret(value, STRONG, wordy_ok=True)


def _aws_secret_shape(value: str) -> bool:
    return (
        any(char.islower() for char in value)
        and any(char.isupper() for char in value)
        and len(set(value)) >= 10
        and not value.endswith("EXAMPLEKEY")
    )


def _values(
    text: str, pattern: re.Pattern[str], kind: str, accept: Callable[[str], bool]
) -> list[Span]:
    """The `value` group of each match that `accept(value)` takes."""
    spans: list[Span] = []
    for match in pattern.finditer(text):
        value = match.group("value")
        if not value.startswith(REDACTED_PREFIX) and accept(value):
            spans.append((*match.span("value"), kind))
    return spans


def _not_example(value: str) -> bool:
    return not value.endswith("EXAMPLEKEY")  # AWS's documented example secret


def _long_enough(value: str) -> bool:
    return len(value.strip("/")) >= 8


def _url_password(value: str) -> bool:
    return not is_placeholder(value) and value.lower() not in ("pass", "pwd", "pw")


def _credential(value: str) -> bool:
    return high_entropy(value) or (
        len(value) >= 12 and looks_random(value) and not is_placeholder(value)
    )


def _assignments(text: str) -> list[Span]:
    """`ASSIGNMENT` tried where a secret word starts (not scanned for over the whole text:
    its alternation would test every character)."""
    starts = {
        match.start() + offset
        for anchor, offset in p.KEYWORD_ANCHORS
        for match in anchor.finditer(text)
    }
    spans: list[Span] = []
    end = 0
    for start in sorted(starts):
        match = p.ASSIGNMENT.match(text, start) if start >= end else None
        if match is None:
            continue
        end = match.end()
        kind = _assignment_kind(text, match)
        if kind is not None:
            group = "quoted" if match.group("quoted") is not None else "bare"
            spans.append((*match.span(group), kind))
    return spans


_CODE_AFTER = frozenset("([.")
_ARG_END = " \t\r\n&"  # a str: "" (the end of the text) is in it too
_LINE_LEADS = frozenset(("", "export", "set", "ENV"))


def _whole_line(text: str, name_start: int, match: re.Match[str]) -> bool:
    """`name=value` is the whole line (after `export`): a `.env` / shell line, not code."""
    line_start = text.rfind("\n", 0, name_start) + 1
    if text[line_start:name_start].strip() not in _LINE_LEADS:
        return False
    line_end = text.find("\n", match.end())
    return not text[match.end() : None if line_end < 0 else line_end].strip()


def _assignment_kind(text: str, match: re.Match[str]) -> str | None:
    """env_assignment, high_entropy_secret or None for one `ASSIGNMENT` match.

    - a quoted value (`"api_key": "..."`, `password = '...'`, `export X_TOKEN="..."`) is a
      literal: the name's rules decide;
    - a bare value is a literal in `.env` / shell form (`UPPER_NAME=value`, or a whole
      `name=value` line), in `name=value` followed by a blank or `&` (a command line, a
      query string), in YAML / header form (`name: value`) and for `--flag value`, unless
      it is an attribute (`password: user.password`); elsewhere (`api_key=api_key)`,
      `token = get_token()`) it is code, and only a high-entropy value is taken (as
      `high_entropy_secret`).
    """
    name_end = match.start()
    name_start = name_end
    while name_start > 0 and name_end - name_start < 128 and text[name_start - 1] in p.NAME_CHARS:
        name_start -= 1
    if name_start > 0 and text[name_start - 1] in "$%{":
        return None  # `$API_KEY`, `${TOKEN}`, `%PASSWORD%`: a use, not an assignment
    name = text[name_start:name_end] + match.group("keyword")
    tier = name_tier(name)
    if tier == NONE:
        return None
    quoted = match.group("quoted")
    op = match.group("op")
    operator = op.strip()
    flag = name.startswith("-")
    if operator == "" and not flag:
        return None  # `token bucket`, `API key and ...`: prose
    if quoted is not None:
        value = quoted
        literal = literal_secret(value, tier, wordy_ok=True)
    else:
        value = match.group("bare")
        if text[match.end() : match.end() + 1] in _CODE_AFTER and match.end() < len(text):
            return None  # `os.environ[...]`, `input()`, `getpass.getpass(...)`
        named = match.group("quoted_name") is not None
        if op == "=" and not named and (name.isupper() or _whole_line(text, name_start, match)):
            literal = literal_secret(value, STRONG if tier == WEAK else tier, wordy_ok=True)
        elif (
            (operator == ":" and not named)
            or operator == ""
            or (op == "=" and not named and text[match.end() : match.end() + 1] in _ARG_END)
        ):
            literal = ATTRIBUTE.fullmatch(value) is None and literal_secret(
                value, tier, wordy_ok=False
            )
        else:
            literal = False
    if literal:
        return "env_assignment"
    return "high_entropy_secret" if tier >= WEAK and high_entropy(value) else None
