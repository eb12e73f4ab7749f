"""The prefilter and the detector regexes.

Speed: Python's `re` finds a pattern fast when it starts with a literal (a quick scan for
that character) and slowly when an alternation starts with several characters (each text
character is tested against the set, several ns apiece). So each prefilter branch is
anchored on a rare character of its trigger and checks the rest with a look-behind
(`J(?<=eyJ)` rather than `eyJ`, `V(?<=PRIV)ATE` rather than `PRIVATE`), and long texts run
the branches one by one (`search_any`). Every detector below needs one of these triggers,
also once the text is JSON-escaped (quotes and backslashes may stand between a name and its
`=` / `:`), so the prefilter also answers for `unique_info` serialised as JSON.
"""

from __future__ import annotations

import re

# after a secret's name: a closing quote (also JSON-escaped) and the `]` of `env["X"]`,
# blanks, then `=` or `:` (not `::`); or, after a `-` (`--api-key VALUE`), a blank
_OP = r"""(?:\\{0,3}["'])?(?:(?<=["'])\])?[ \t]{0,3}(?:=|:(?!:))"""


def _name(anchor: str, behind: str, ahead: str = "") -> str:
    """A branch for a name ending `behind + anchor + ahead`, anchored on `anchor`."""
    return rf"{anchor}(?<={behind}{anchor})(?:{ahead}{_OP}|(?<=-{behind}{anchor}){ahead}[ \t])"


# `scheme://user:password@`, a Telegram bot token (`<digits>:AA...`)
_COLON = r":(?=//[^\s/@:]{0,256}:[^\s/@]{0,256}@|AA[A-Za-z0-9_-]{33})"
# `"auth": "..."` (Docker's config.json, also JSON-escaped)
_AUTH_KEY = r"""h(?<=["']auth)\\{0,3}["'][ \t]{0,3}:"""
# `ghp_`, `github_pat_`, `hf_`, `_PASS=`
_UNDERSCORE = (
    r"_(?:(?<=[pousrtf]_)(?:(?<=gh[pousr]_)|(?<=_pat_)|(?<=hf_)(?<![A-Za-z0-9]hf_))"
    rf"|(?=[pP][aA][sS][sS]{_OP}))"
)
_SIGNATURE = r"=(?<=[ge]=)(?:(?<=[?&;]sig=)|(?<=-Signature=))"
# an escaped character in a JSON string: ASCII (decode and look), or one the cleaner removes
_ESCAPE = (
    r"\\(?=u00[2-7]|u00[0189]|u00[aA][dD]|u200[b-fB-F]|u20[26]|u[fF][eE][fF][fF]|u061[cC]"
    r"|u180[eE])"
)
# `mysql -pPASSWORD`, and where base64 is mentioned (`base64`, `b64decode`, `atob`): there
# every base64 run is decoded; not the `b64` inside a hex digest (a text may begin with it)
_B64_AFTER_B = r"(?=ase64)|(?=64)(?<![0-9A-Za-z]b)|(?<=atob)"
_LOWER_B = rf"b(?=ase64|64|(?<=[do]b))(?:{_B64_AFTER_B}|(?<=mariadb))"
_UPPER_B = r"B(?:(?=ase64|ASE64)|(?<![0-9A-Za-z]B)(?=64))"
B64_HINTS = (re.compile(rf"b(?:{_B64_AFTER_B})").search, re.compile(_UPPER_B).search)

# One branch per rare anchor character of a trigger.
PREFILTER_BRANCHES = (
    r"J(?<=eyJ)",  # jwt
    r"I(?:(?<=A[KS]I)A|(?<=AI)za)",  # AKIA / ASIA, AIza
    r"V(?<=PRIV)ATE",  # -----BEGIN ... PRIVATE KEY-----
    r"k(?:(?<=sk)(?<![A-Za-z0-9_-]sk)-|(?<=[sr]k)_live_|(?<=slack)\.com)",
    _name("k", "[tT]o", "en"),
    _name("K", "TO", "EN"),
    _name("y", "[kK]e"),
    _name("Y", "KE"),
    _name("c", "[sS]e", "ret"),
    _name("C", "SE", "RET"),
    _name("w", "[pP]ass", "(?:or)?d"),
    _name("W", "PASS", "(?:OR)?D"),
    _UNDERSCORE,
    r"-(?:(?<=glpat-)|(?<=xox[abposr]-))",
    rf"z(?<=[aA]uthoriz)ation{_OP}",
    _COLON,
    _ESCAPE,
    r"G(?<=SG)\.",  # SendGrid
    _SIGNATURE,  # a signed URL's signature: Azure SAS `&sig=`, `X-Amz-Signature=`
    _AUTH_KEY,
    r"q(?<=mysq)l",  # `mysql -pPASSWORD`
    _LOWER_B,
    _UPPER_B,
    r"C(?<=LS0tLS1C)",  # base64 of `-----BEGIN`
)
PREFILTER = re.compile("|".join(PREFILTER_BRANCHES))

# The same triggers for long texts, in fewer passes: one per common anchor character, and a
# `str.find` walk (memchr-fast) over the rare upper-case anchors.
_PASSES = tuple(
    re.compile(branch).search
    for branch in (
        r"I(?:(?<=A[KS]I)A|(?<=AI)za)",
        rf"k(?:(?<=sk)(?<![A-Za-z0-9_-]sk)-|(?<=[sr]k)_live_|(?<=slack)\.com"
        rf"|(?<=[tT]ok)en{_OP}|(?<=-[tT]ok)en[ \t]|ey{_OP}|(?<=-k)ey[ \t])",
        rf"c(?<=[sS]ec)(?:ret{_OP}|(?<=-[sS]ec)ret[ \t])",
        rf"w(?<=[pP]assw)(?:(?:or)?d{_OP}|(?<=-[pP]assw)(?:or)?d[ \t])",
        rf"z(?<=[aA]uthoriz)ation{_OP}",
        _UNDERSCORE,
        r"-(?:(?<=glpat-)|(?<=xox[abposr]-))",
        _COLON,
        _ESCAPE,
        _SIGNATURE,
        _AUTH_KEY,
        _LOWER_B,
    )
)
_RARE = tuple(
    (branch[0], re.compile(branch))
    for branch in (
        r"J(?<=eyJ)",
        r"V(?<=PRIV)ATE",
        rf"K(?:(?<=TOK)(?:EN{_OP}|(?<=-TOK)EN[ \t])|(?:EY|ey){_OP}|(?<=-K)(?:EY|ey)[ \t])",
        rf"C(?:(?<=SEC)(?:RET{_OP}|(?<=-SEC)RET[ \t])|(?<=LS0tLS1C))",
        rf"W(?<=PASSW)(?:(?:OR)?D{_OP}|(?<=-PASSW)(?:OR)?D[ \t])",
        r"G(?<=SG)\.",
        r"q(?<=mysq)l",
        _UPPER_B,
    )
)
_LONG = 1000
_RARE_STEPS = 32  # then the anchor is not rare in this text (base64 data): a regex scan


def search_any(text: str) -> bool:
    """Whether `text` has a trigger. Short texts: `PREFILTER` (one call); long ones: a few
    literal scans, faster than Python's `re` on an alternation, which tests every character
    against the set of first characters."""
    if len(text) < _LONG:
        return PREFILTER.search(text) is not None
    for anchor, pattern in _RARE:
        position = text.find(anchor)
        steps = 0
        while position >= 0:
            steps += 1
            if steps > _RARE_STEPS:
                if pattern.search(text, position):
                    return True
                break
            if pattern.match(text, position):
                return True
            position = text.find(anchor, position + 1)
    return any(search(text) for search in _PASSES)


PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
PEM_MAX = 65536  # chars from BEGIN to END; an 8192-bit RSA key has ~6,500
# what lies between BEGIN and END: base64, blanks, newlines (also JSON-escaped) and
# `Proc-Type: 4,ENCRYPTED` / `DEK-Info: AES-128-CBC,...` headers
PEM_INSIDE = re.compile(r"[A-Za-z0-9+/=\s\\:,-]*")
# a key cut short (no END): its lines of base64 or headers, each after a newline (also
# JSON-escaped) and ending where a character that is neither base64 nor a blank follows
PEM_BODY = re.compile(
    r"(?:(?:\r?\n|\\+[nr])[ \t]*(?:[A-Za-z][A-Za-z0-9-]*:[^\r\n\\]*|[A-Za-z0-9+/=]+)?[ \t]*"
    r"(?=[^A-Za-z0-9+/= \t]|\Z))*"
)

JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")

B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
B64 = B64URL + "+/"

# (kind, a substring every match contains, pattern, length of the fixed prefix, characters
# that may not come right before a match): checked in `text._prefixed`
TOKENS: tuple[tuple[str, str, re.Pattern[str], int, str], ...] = (
    ("anthropic_api_key", "sk-ant-", re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}"), 7, B64URL),
    (
        "openai_api_key",
        "sk-",
        re.compile(r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        3,
        B64URL,
    ),
    ("stripe_key", "k_live_", re.compile(r"[sr]k_live_[A-Za-z0-9]{20,}"), 8, B64URL),
    (
        "github_token",
        "_",
        re.compile(r"gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}"),
        4,
        B64URL,
    ),
    (
        "gitlab_token",
        "glpat-",
        re.compile(r"glpat-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*"),
        6,
        B64URL,
    ),
    ("slack_token", "xox", re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}"), 5, B64URL),
    (  # a key may follow a `/` (a URL path): only the other base64 characters are refused
        "google_api_key",
        "AIza",
        re.compile(r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_+=-])"),
        4,
        B64URL + "+",
    ),
    ("huggingface_token", "hf_", re.compile(r"hf_[A-Za-z0-9]{30,40}(?![A-Za-z0-9_])"), 3, B64URL),
    (
        "sendgrid_api_key",
        "SG.",
        re.compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
        3,
        B64URL,
    ),
)
# `<bot id>:<35 chars>`; the secret part of every bot token starts `AA`
TELEGRAM_BOT_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_:-])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"
)
# the signature of a signed URL (Azure SAS `sig=`, S3 / GCS presigned URLs), URL-encoded
URL_SIGNATURE = re.compile(
    r"(?P<keep>(?:(?<=[?&;])sig|X-(?:Amz|Goog)-Signature)=)(?P<value>[A-Za-z0-9%+/=_.-]{16,})"
)
# Docker's `config.json`: `"auth": "<base64 of user:password>"` (also JSON-escaped)
DOCKER_AUTH = re.compile(
    r"""(?<=["'])auth\\{0,3}["'][ \t]{0,3}:[ \t]{0,3}\\{0,3}["']"""
    r"(?P<value>[A-Za-z0-9+/]{8,}={0,2})\\{0,3}[\"']"
)
# `mysql -u root -pPASSWORD db`: the password glued to `-p` (a lone `-p` prompts for it)
MYSQL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9_.-])(?:mysql[a-z]*|mariadb(?:-[a-z]+)?)(?![A-Za-z0-9_.-])"
    r"[^\n;|&]{0,300}?(?<=[ \t])-p"
    r"(?P<value>'[^'\n]{1,256}'|\"[^\"\n]{1,256}\"|[^\s'\"`;|&()]{1,256})"
)
AWS_ACCESS_KEY_ID = re.compile(r"A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9+/])")

# a 40-char AWS secret access key right after an access key id (credentials CSV, `aws
# configure`, `key_id secret` pairs)
AWS_SECRET_WINDOW = 200
AWS_SECRET_BARE = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
AWS_SECRET_NAMED = re.compile(
    r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)(?:\\{0,3}[\"']\]?)?"
    r"[ \t]*(?::=|=>|[:=])[ \t]*(?:\\{0,3}[\"'])?(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)

SLACK_WEBHOOK = re.compile(
    r"(?P<keep>https?://hooks\.slack\.com/(?:services|workflows|triggers)/)"
    r"(?P<value>[A-Za-z0-9_/-]{8,})"
)
URL_PASSWORD = re.compile(
    r"(?P<keep>://[^\s:/@?#\"'<>\\\[\]]{0,256}:)(?P<value>[^\s@/?#\"'<>\\]{1,256})@"
)
AUTH_HEADER = re.compile(
    r"(?i:authorization)(?:\\{0,3}[\"'])?[ \t]*[:=][ \t]*(?:\\{0,3}[\"'])?"
    r"(?:Bearer|Basic|Token|bearer|basic|token)[ \t]+(?P<value>[A-Za-z0-9._~+/=-]{8,})"
)

# Where `ASSIGNMENT` may start: each secret word found by a rare letter of it (a fast scan),
# with the offset from that letter to the word's start.
KEYWORD_ANCHORS = tuple(
    (re.compile(anchor), offset)
    for anchor, offset in (
        (r"y(?<=[kK]ey)", -2),
        (r"Y(?<=KEY)", -2),
        (r"k(?<=[tT]ok)en", -2),
        (r"K(?<=TOK)EN", -2),
        (r"c(?<=[sS]ec)ret", -2),
        (r"C(?<=SEC)RET", -2),
        (r"w(?<=[pP]assw)", -4),
        (r"W(?<=PASSW)", -4),
        (r"_(?=[pP]ass|PASS)", 1),
    )
)
# `NAME = value` forms, found from the end of the name: the name itself is read backwards
# from the keyword (`NAME_CHARS`), the value is quoted (`"..."`, `\"...\"`, `'...'`) or bare.
ASSIGNMENT = re.compile(
    r"(?P<keyword>[Kk]ey|KEY|[Tt]oken|TOKEN|[Ss]ecret|SECRET|[Pp]ass(?:w(?:or)?d)?"
    r"|PASS(?:W(?:OR)?D)?)"
    r"(?P<quoted_name>\\{0,3}[\"']\]?)?"
    r"(?P<op>[ \t]{0,3}(?::=|=>|=(?!=)|:(?!:))[ \t]{0,3}|[ \t]+)"
    r"(?:\\{0,3}(?P<quote>[\"'`])(?P<quoted>[^\"'`\\\r\n]{0,512})\\{0,3}(?P=quote)"
    r"|(?P<bare>[^\s\"'`,;&|<>(){}\[\]\\]{1,512}))"
)
NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
