"""When a name is a secret's name and a value a secret value.

A name is judged by its last word (`AWS_SECRET_ACCESS_KEY` -> `key` after `access`,
`clientSecret` -> `secret`, `X-Api-Key` -> `key` after `api`): `STRONG` names hold
credentials whatever the value looks like, `WEAK` ones (`*_key`, `token`, `self.token`) only
when the value looks random, and `NONE` ones are ordinary code (`sort_key`, `pad_token`,
`primary_key`, `monkey`). Values that are empty, references (`$VAR`, `${VAR}`, `{{ x }}`,
`%(x)s`, `<token>`), placeholders (`your-api-key-here`, `xxx`, `changeme`, `***`) or contain
whitespace are never secrets.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

REDACTED_PREFIX = "[REDACTED:"

NONE, WEAK, STRONG = 0, 1, 2

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# Words before `key` / `token` that make the name a credential's whatever the value.
_SECRET_PREFIXES = frozenset(
    "api secret access private auth client app master signing sign encryption encrypt "
    "license service account subscription admin consumer developer dev webhook hmac jwt "
    "session refresh bearer bot github gh gitlab slack hf huggingface npm pypi oauth oauth2 "
    "personal deploy registry docker discord telegram sentry vault id security cookie "
    "openai anthropic aws gcp azure stripe twilio sendgrid mailgun".split()
)
# Words before `key` that make an ordinary code name (`sort_key`, `primary_key`).
_PLAIN_KEY_PREFIXES = frozenset(
    "primary foreign sort partition cache dict map lookup group unique row column col index "
    "storage object bucket public pub idempotency translation i18n route routing state query "
    "list composite natural surrogate range shard event message metadata config setting "
    "settings env field attr property prop name id type hash order dedup join lock parent "
    "child item entry record table file path redis kv hot hotkey shortcut keyboard press "
    "arrow enter escape esc tab shift ctrl alt meta cmd up down left right select sorting "
    "dataset data label target group_by react local global option options default".split()
)
# Words before `token` that name a vocabulary or parser token, or a page cursor.
_PLAIN_TOKEN_PREFIXES = frozenset(
    "pad eos bos unk sep cls mask special start end stop next page continuation sentinel "
    "cancellation cancel max num last first prev previous current cur sample input output "
    "prompt eot sot image audio video split default added vocab bpe word sub subword system "
    "new csrf xsrf sync lexer parser peek lookahead".split()
)
_COMPOUNDS = frozenset(
    "apikey accesskey secretkey privatekey authkey masterkey signingkey apitoken authtoken "
    "accesstoken refreshtoken bottoken idtoken".split()
)


@lru_cache(maxsize=4096)
def name_tier(name: str) -> int:
    """NONE, WEAK or STRONG for an assignment's name (`DB_PASSWORD`, `api_key`, `--token`)."""
    base = name.lstrip("-$@").rsplit(".", 1)[-1]
    words = [word.lower() for word in _WORD.findall(base)]
    if not words:
        return NONE
    last, previous = words[-1], (words[-2] if len(words) > 1 else "")
    if last.endswith(("password", "passwd", "secret")):
        return STRONG
    if last == "pass":
        return STRONG if previous else NONE
    if last == "token":
        if previous in _PLAIN_TOKEN_PREFIXES:
            return NONE
        return STRONG if previous in _SECRET_PREFIXES or base.isupper() else WEAK
    if last == "key":
        if not previous or previous in _PLAIN_KEY_PREFIXES:
            return NONE
        return STRONG if previous in _SECRET_PREFIXES else WEAK
    return STRONG if last in _COMPOUNDS else NONE


_REFERENCE = re.compile(
    r"[$%@!]|\{|<|\\|process\.env|os\.environ|getenv|ENV\[|env\(|secrets\.|vault:"
)
# `user.password`, `self.token`, `settings.API_KEY`: an attribute, in code
ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_PLACEHOLDER = re.compile(
    r"(?i)(?:x{3,}|\*+|\.{2,}|\u2026+|-+|_+|0+|#+|\u2022+|\?+|1234\d*|abc\w{0,4}|foo\w*|bar)$"
    r"|(?:your|my|the|an?|insert|enter|put|replace|add|some|fake|dummy|test|sample)(?:[-_ ]|$)"
    r"|.*(?:example|placeholder|change[-_]?me|redacted|dummy|here$|xxxx|\*\*\*|<[^>]*>|\{\{)"
    r"|.*(?:\.{3}|\u2026)$"  # elided: `sk-...`, `ghp_…`
)
_PLAIN_VALUES = frozenset(
    "true false none null nil undefined yes no on off password passwd pass pwd secret "
    "token key apikey api_key admin root guest user username default required optional "
    "string str int bytes bool boolean number float object any optional secretstr unknown "
    "empty test testing".split()
)
_WORDY = re.compile(r"[A-Za-z]{1,15}|[A-Z][a-z]{1,15}")
# lower-case words, joined or ending in `-` / `_` (`ollama`, `proxy-handled`, `sk-ant-`): a
# setting, a name or a bare key prefix in code and docs, not a credential
# (a word of 16 letters or more may be a generated password: Google's app passwords are 16)
_LOWER_WORDS = re.compile(r"[a-z]{1,15}(?:[-_.][a-z]{1,15})*[-_]?")
# `params.litellmApiKey`, `self.config.authToken`: names in code, letters only
_DOTTED_NAME = re.compile(r"[A-Za-z_]+(?:\.[A-Za-z_]+)+")
_HEX = re.compile(r"[0-9a-fA-F-]+")
_DIGEST = re.compile(r"(?i)(?:sha\d{1,3}|md5|blake2b?)[:-]")
_HIGH_ENTROPY_CHARS = re.compile(r"[A-Za-z0-9+/=_.~:-]+")


def is_placeholder(value: str) -> bool:
    """References, placeholders and plain words that no secret is."""
    return (
        value.lower() in _PLAIN_VALUES
        or _REFERENCE.match(value) is not None
        or _PLACEHOLDER.match(value) is not None
    )


def literal_secret(value: str, tier: int, *, wordy_ok: bool) -> bool:
    """Whether `value`, assigned to a name of `tier`, is a secret worth redacting.

    `wordy_ok` is false where a plain word is more likely prose or a type than a password
    (`Password: incorrect`, `password: str`): then a strong name's value needs a digit, a
    symbol or mixed case.
    """
    if (
        tier == NONE
        or not value
        or value.startswith(REDACTED_PREFIX)
        or any(char.isspace() for char in value)
        or is_placeholder(value)
    ):
        return False
    if tier == STRONG:
        return (
            len(value) >= 3
            and _LOWER_WORDS.fullmatch(value) is None
            and (wordy_ok or _WORDY.fullmatch(value) is None)
        )
    return len(value) >= 8 and looks_random(value)


def looks_random(value: str) -> bool:
    """Letters and digits mixed, or long and mixed-case: not a word or an identifier."""
    has_digit = any(char.isdigit() for char in value)
    has_alpha = any(char.isalpha() for char in value)
    if has_digit and has_alpha:
        return len(set(value)) >= 5
    return (
        len(value) >= 16 and not value.islower() and not value.isupper() and entropy(value) >= 3.0
    )


def high_entropy(value: str) -> bool:
    """A random-looking credential of >= 20 chars: never hex (git SHAs, UUIDs, digests),
    never an identifier made of words (`test_user_token_2024_v1`, `params.litellmApiKey`)."""
    if (
        len(value) < 20
        or value.startswith(REDACTED_PREFIX)
        or _HIGH_ENTROPY_CHARS.fullmatch(value) is None
        or _HEX.fullmatch(value) is not None
        or _DIGEST.match(value) is not None
        or _DOTTED_NAME.fullmatch(value) is not None
        or is_placeholder(value)
    ):
        return False
    classes = sum(
        (
            any(char.islower() for char in value),
            any(char.isupper() for char in value),
            any(char.isdigit() for char in value),
        )
    )
    separators = sum(value.count(char) for char in "_-.:")
    return classes >= 2 and separators * 8 <= len(value) and entropy(value) >= 3.5


def entropy(value: str) -> float:
    """Shannon entropy of the characters of `value`, in bits per character."""
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())
