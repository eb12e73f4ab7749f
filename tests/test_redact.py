"""Secret redaction (`transforms/redact.py`): every kind, in every place of an IM record, and
the ordinary code data that must stay untouched.

Secrets are built from pieces here, so that no literal secret sits in the repository.
"""

from __future__ import annotations

import base64
import copy
import json
import random
import re
from collections import Counter
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms import redact
from transforms.redact import (
    KINDS,
    REDACT_MODES,
    mask_secrets_in_text,
    mask_url_credentials,
    redact_bundle,
    redact_record,
    redact_text,
)
from transforms.redaction.patterns import PREFILTER, search_any

ALNUM = "aB3dE5fG7hI9jK1lM3nOpQ5rS7tU9vW1xY3zC8kL2mN6qR4sT0uV2wX8yZ1"


def rand(length: int, seed: int, alphabet: str = ALNUM) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(length))


UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def pem_block(lines: list[str]) -> str:
    return (
        "-----BEGIN RSA " + "PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA "
        "PRIVATE KEY-----"
    )


def jwt_token(signature: str, subject: str = "1234567890") -> str:
    claims = base64.urlsafe_b64encode(f'{{"sub":"{subject}","iat":1516239022}}'.encode())
    return (
        "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + claims.decode().rstrip("=") + "." + signature
    )


PEM_LINES = [rand(64, 40 + i, B64) for i in range(3)]
PEM = pem_block(PEM_LINES)
DOCKER_AUTH = base64.b64encode(b"deploy:" + rand(16, 66).encode()).decode()
JWT = jwt_token(rand(43, 7, URLSAFE))


def cases(salt: int = 0) -> dict[str, tuple[str, tuple[str, ...]]]:
    """kind -> (a text planting one secret of that kind, the secret substrings that must
    vanish). `salt` gives other secrets of the same shapes (0: `CASES`)."""

    def r(length: int, seed: int, alphabet: str = ALNUM) -> str:
        return rand(length, seed + salt, alphabet)

    url_password = "rT5xLm2wq" if not salt else r(9, 90)
    env_password = "rT5!xLm2" if not salt else r(8, 91)
    cli_password = "rT5xLm" if not salt else r(6, 92)
    pem_lines = [r(64, 40 + i, B64) for i in range(3)]
    pem = pem_block(pem_lines)
    jwt = jwt_token(r(43, 7, URLSAFE), r(10, 93, "0123456789") if salt else "1234567890")
    docker_auth = base64.b64encode(b"deploy:" + r(16, 66).encode()).decode()
    return {
        "openai_api_key": (
            "use " + "sk-" + "proj-" + r(48, 1) + " for the client",
            ("proj-" + r(48, 1),),
        ),
        "anthropic_api_key": (
            "Anthropic(api_key=" + "sk-" + "ant-api03-" + r(60, 2) + ")",
            ("api03-" + r(60, 2),),
        ),
        "aws_access_key_id": (
            "key id " + "AK" + "IA" + r(16, 3, UPPER_DIGITS) + " in us-east-1",
            ("IA" + r(16, 3, UPPER_DIGITS),),
        ),
        "aws_secret_access_key": (
            "aws_secret_access_key = " + r(38, 4, B64) + "/x",
            (r(38, 4, B64),),
        ),
        "github_token": (
            "git clone https://" + "gh" + "p_" + r(36, 5) + "@github.com/o/r.git",
            ("p_" + r(36, 5),),
        ),
        "gitlab_token": ("GITLAB=" + "gl" + "pat-" + r(20, 6) + " ok", ("pat-" + r(20, 6),)),
        "slack_token": (
            "bot " + "xo" + "xb-" + "2417" + "3090212-" + r(24, 8) + " posts",
            ("xb-" + "2417" + "3090212-" + r(24, 8),),
        ),
        "slack_webhook": (
            "curl -X POST https://hooks.slack.com/services/T0"
            + r(8, 9, UPPER_DIGITS)
            + "/B0"
            + r(8, 10, UPPER_DIGITS)
            + "/"
            + r(24, 11),
            ("T0" + r(8, 9, UPPER_DIGITS), r(24, 11)),
        ),
        "google_api_key": ("maps key " + "AI" + "za" + r(35, 12) + ".", ("za" + r(35, 12),)),
        "stripe_key": ("stripe " + "sk" + "_live_" + r(24, 13) + ".", ("_live_" + r(24, 13),)),
        "private_key": (pem, tuple(pem_lines)),
        "jwt": ("cookie " + jwt + "; path=/", (jwt.split(".")[2], jwt.split(".")[1])),
        "url_password": (
            "DATABASE_URL=postgres://app:" + "Zq8" + url_password + "@db:5432/app",
            ("Zq8" + url_password,),
        ),
        "env_assignment": ("DB_PASSWORD=" + "Zq8-" + env_password, ("Zq8-" + env_password,)),
        "high_entropy_secret": (
            "Authorization: Bearer " + r(32, 14),
            (r(32, 14),),
        ),
        "huggingface_token": (
            "log in with " + "hf" + "_" + r(34, 60) + " then push",
            (r(34, 60),),
        ),
        "sendgrid_api_key": (
            "mail via " + "SG" + "." + r(22, 61, URLSAFE) + "." + r(43, 62, URLSAFE) + " ok",
            (r(22, 61, URLSAFE), r(43, 62, URLSAFE)),
        ),
        "telegram_bot_token": (
            "bot " + "6123" + "45789" + ":" + "AA" + r(33, 63, URLSAFE) + " is up",
            (r(33, 63, URLSAFE),),
        ),
        "url_signature": (
            "curl 'https://acct.blob.core.windows.net/c/f.tgz?sv=2022-11-02&sp=r&"
            + "sig="
            + r(30, 64)
            + "%2B"
            + r(10, 65)
            + "%3D'",
            (r(30, 64), r(10, 65)),
        ),
        "docker_auth": (
            '{"auths": {"registry.acme.io": {"auth": "' + docker_auth + '"}}}',
            (docker_auth,),
        ),
        "cli_password": (
            "mysql -h db -u app -p" + "Zq8" + cli_password + " shop < dump.sql",
            ("Zq8" + cli_password,),
        ),
    }


CASES = cases()
PLACES = (
    "content",
    "tool_arguments",
    "tool_result",
    "reasoning",
    "instance_metadata",
    "tool_name",
    "tool_schema",
    "teacher",
    "query_source",
    "tool_call_id",
)


def base_record() -> dict[str, Any]:
    return {
        "version": "2.0.0",
        "meta_info": {
            "teacher": "t",
            "query_source": "q",
            "response_generate_time": "2026-01-01",
            "response_update_time": "2026-01-01",
            "owner": "o",
            "language": "en",
            "category": "code",
            "rounds": 2,
            "unique_info": {
                "_instance_id": "task__abc",
                "_agent_type": "main",
                "_score": None,
                "_gen_params": {"temperature": 0.0, "max_tokens": 4096},
                "_usage": {"prompt_tokens": 10, "completion_tokens": 5},
                "_instance_metadata": {"agent": "claude-code", "warnings": []},
            },
        },
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "Bash",
                    "description": "Run a shell command.",
                    "parameters": {"type": "object", "properties": {"command": {}}},
                },
            }
        ],
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix the failing test in app/config.py."},
            {
                "role": "assistant",
                "content": "Let me look.",
                "reasoning_content": "The config loader is involved.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "Bash", "arguments": '{"command":"cat app/x.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "print('hello')\n"},
            {"role": "assistant", "content": "Done.", "reasoning_content": ""},
        ],
    }


def planted(place: str, text: str) -> dict[str, Any]:
    record = base_record()
    messages = record["messages"]
    if place == "content":
        messages[1]["content"] += "\n" + text
    elif place == "tool_arguments":
        arguments = orjson.dumps({"command": text, "timeout": 30}).decode()
        messages[2]["tool_calls"][0]["function"]["arguments"] = arguments
    elif place == "tool_result":
        messages[3]["content"] = "$ cat .env\n" + text + "\nDEBUG=1\n"
    elif place == "reasoning":
        messages[2]["reasoning_content"] = "I see " + text + " in the logs."
    elif place == "instance_metadata":
        metadata = record["meta_info"]["unique_info"]["_instance_metadata"]
        metadata["exception_message"] = "ConnectionError: " + text
    elif place == "tool_name":
        record["tools"][0]["function"]["name"] = "run " + text
    elif place == "tool_schema":  # a parameter's default value in the tool's JSON schema
        record["tools"][0]["function"]["parameters"]["properties"]["command"] = {
            "type": "string",
            "default": text,
        }
    elif place == "teacher":  # the model name, which lf.stats.json and the manifest show
        record["meta_info"]["teacher"] = text
    elif place == "query_source":  # result.json's `source`
        record["meta_info"]["query_source"] = text
    else:
        messages[2]["tool_calls"][0]["id"] = messages[3]["tool_call_id"] = text
    return record


def dumped(record: dict[str, Any]) -> str:
    return orjson.dumps(record).decode()


def assert_arguments_json(record: dict[str, Any]) -> None:
    for message in record["messages"]:
        for call in message.get("tool_calls") or []:
            orjson.loads(call["function"]["arguments"])


def test_kinds_are_the_documented_ones() -> None:
    assert set(CASES) == set(KINDS)
    assert REDACT_MODES == ("off", "mask", "drop")


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("place", PLACES)
def test_each_kind_in_each_place(kind: str, place: str) -> None:
    text, secrets = CASES[kind]
    record = planted(place, text)
    counts = redact_record(record)
    out = dumped(record)
    for secret in secrets:
        assert secret not in out, (kind, place, secret)
    assert f"[REDACTED:{kind}]" in out
    expected = 2 if place == "tool_call_id" else 1  # the call's id and the result's
    assert counts == Counter({kind: expected}), (kind, place, counts)
    assert_arguments_json(record)


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("padding", [0, 3000], ids=["short", "long"])
def test_redact_text_short_and_long(kind: str, padding: int) -> None:
    """Texts of >= 1000 chars take the multi-pass prefilter; both find every kind."""
    text, secrets = CASES[kind]
    filler = ("lorem ipsum dolor sit amet; " * 200)[:padding]
    full = filler + "\n" + text + "\n" + filler
    assert search_any(full)
    out, counts = redact_text(full)
    assert counts == Counter({kind: 1})
    for secret in secrets:
        assert secret not in out
    assert out.startswith(filler) and out.endswith(filler)
    again, more = redact_text(out)  # idempotent: a placeholder triggers nothing
    assert again == out and not more


def test_arguments_are_reserialised_compactly_only_when_redacted() -> None:
    record = planted("tool_arguments", CASES["openai_api_key"][0])
    redact_record(record)
    arguments = record["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert arguments == orjson.dumps(orjson.loads(arguments)).decode()
    assert orjson.loads(arguments) == {
        "command": "use [REDACTED:openai_api_key] for the client",
        "timeout": 30,
    }
    # nothing found (a trigger but no secret): the string stays byte-identical
    spaced = '{ "command" : "export TOKEN=$TOKEN" ,  "n": 1.50 }'
    record = base_record()
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = spaced
    assert redact_record(record) == Counter()
    assert record["messages"][2]["tool_calls"][0]["function"]["arguments"] is spaced


def test_escaped_pem_in_tool_arguments() -> None:
    """A Write call whose content is a PEM key: in the JSON text its newlines are `\\n`."""
    arguments = orjson.dumps({"file_path": "/srv/key.pem", "content": PEM + "\n"}).decode()
    assert "\\n" in arguments and "\n" not in arguments
    record = base_record()
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = arguments
    assert redact_record(record) == Counter({"private_key": 1})
    parsed = orjson.loads(record["messages"][2]["tool_calls"][0]["function"]["arguments"])
    assert parsed == {"file_path": "/srv/key.pem", "content": "[REDACTED:private_key]\n"}
    assert not any(line in dumped(record) for line in PEM_LINES)


def test_escaped_pem_inside_json_text_in_a_tool_result() -> None:
    """`cat service-account.json`: the key's newlines are `\\n` in the text itself."""
    account = orjson.dumps(
        {
            "type": "service_account",
            "private_key": PEM + "\n",
            "client_email": "bot@proj.iam.example.com",
        }
    ).decode()
    record = base_record()
    record["messages"][3]["content"] = account
    assert redact_record(record) == Counter({"private_key": 1})
    content = record["messages"][3]["content"]
    assert orjson.loads(content) == {
        "type": "service_account",
        "private_key": "[REDACTED:private_key]\n",
        "client_email": "bot@proj.iam.example.com",
    }


def test_pem_truncated_at_the_end_of_the_text() -> None:
    text = "Here is the key:\n" + PEM.split("\n-----END")[0][:150]
    out, counts = redact_text(text)
    assert out == "Here is the key:\n[REDACTED:private_key]"
    assert counts == Counter({"private_key": 1})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # on one line, as some tools print keys held in environment variables
            'KEY="' + PEM.replace("\n", " ") + '"',
            'KEY="[REDACTED:private_key]"',
        ),
        (  # indented in YAML
            "tls:\n  key: |\n" + "\n".join("    " + line for line in PEM.split("\n")) + "\n  x: 1",
            "tls:\n  key: |\n    [REDACTED:private_key]\n  x: 1",
        ),
        (  # an encrypted key with its headers
            PEM.replace(
                "KEY-----\n",
                "KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n",
                1,
            ),
            "[REDACTED:private_key]",
        ),
        (  # cut short, then prose: the prose stays
            PEM.split("\n-----END")[0] + "\n... (output truncated)",
            "[REDACTED:private_key]\n... (output truncated)",
        ),
    ],
    ids=["one-line", "yaml", "encrypted", "truncated-then-prose"],
)
def test_private_key_shapes(text: str, expected: str) -> None:
    assert redact_text(text) == (expected, Counter({"private_key": 1}))


def test_unicode_escaped_secret_in_arguments() -> None:
    """`\\u0041KIA...` in the JSON text is `AKIA...` once decoded."""
    key_id = "IA" + rand(16, 3, UPPER_DIGITS)
    arguments = '{"command": "aws configure set key \\u0041K' + key_id + '"}'
    assert orjson.loads(arguments)["command"].endswith("AK" + key_id)
    record = base_record()
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = arguments
    assert redact_record(record) == Counter({"aws_access_key_id": 1})
    assert key_id not in dumped(record)
    assert_arguments_json(record)


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ({"password": "Zq8-rT5!xLm2"}, "env_assignment"),
        ({"env": {"GITHUB_TOKEN": "x9" + rand(30, 21)}}, "env_assignment"),
        ({"headers": {"X-Api-Key": rand(24, 22)}}, "env_assignment"),
        ({"config": [{"client_secret": "s3" + rand(10, 23)}]}, "env_assignment"),
    ],
)
def test_secret_named_json_keys(arguments: dict[str, Any], kind: str) -> None:
    record = base_record()
    text = orjson.dumps(arguments).decode()
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = text
    record["meta_info"]["unique_info"]["_instance_metadata"]["env"] = copy.deepcopy(arguments)
    assert redact_record(record) == Counter({kind: 2})
    out = dumped(record)
    for secret in ("Zq8-rT5!xLm2", rand(30, 21), rand(24, 22), rand(10, 23)):
        assert secret not in out


def test_nested_metadata_and_depth_cap() -> None:
    secret = "sk-" + "proj-" + rand(48, 1)
    record = base_record()
    metadata = record["meta_info"]["unique_info"]["_instance_metadata"]
    metadata["deep"] = {"a": [{"b": {"c": ["x", "err: " + secret]}}]}
    assert redact_record(record) == Counter({"openai_api_key": 1})
    assert secret not in dumped(record)
    # nesting far deeper than MAX_DEPTH (and than orjson's limit) neither recurses
    # unboundedly nor fails: what lies below the cap is left as it is
    deep: Any = secret
    for _ in range(3 * redact.MAX_DEPTH):
        deep = {"d": deep}
    record = base_record()
    record["meta_info"]["unique_info"]["_instance_metadata"]["deep"] = deep
    record["messages"][1]["content"] += " " + secret
    assert redact_record(record) == Counter({"openai_api_key": 1})


def test_tool_names_schemas_and_descriptions_redacted_ordinary_names_untouched() -> None:
    record = base_record()
    key = "sk-" + "proj-" + rand(48, 1)
    function = record["tools"][0]["function"]
    function["description"] = "Run a command. Example key: " + key
    function["parameters"]["properties"]["token"] = {"type": "string", "enum": [key, "x"]}
    record["tools"].append({"type": "function", "function": {"name": "use." + key}})
    function["name"] = "set_api_key"
    record["messages"][2]["tool_calls"][0]["function"]["name"] = "set_api_key"
    counts = redact_record(record)
    assert counts == Counter({"openai_api_key": 3})
    assert key not in dumped(record)
    assert function["name"] == "set_api_key"
    assert record["messages"][2]["tool_calls"][0]["function"]["name"] == "set_api_key"
    assert function["description"].endswith("[REDACTED:openai_api_key]")
    assert function["parameters"]["properties"]["token"]["enum"] == [
        "[REDACTED:openai_api_key]",
        "x",
    ]
    assert record["tools"][1]["function"]["name"] == "use.[REDACTED:openai_api_key]"


def test_every_string_field_of_a_record_is_looked_at() -> None:
    """Fields the IM format does not name (a reader's extra keys) are redacted too."""
    key = "gh" + "p_" + rand(36, 5)
    record = base_record()
    record["meta_info"]["extra"] = {"note": "token " + key}
    record["messages"][1]["name"] = "user " + key
    record["tools"][0]["extra"] = ["see " + key]
    assert redact_record(record) == Counter({"github_token": 3})
    assert key not in dumped(record)
    # keys too, at every level (an IM input's own keys)
    for owner in (
        record,
        record["meta_info"],
        record["messages"][1],
        record["messages"][2]["tool_calls"][0],
        record["messages"][2]["tool_calls"][0]["function"],
    ):
        owner["x " + key] = 1
    assert redact_record(record) == Counter({"github_token": 5})
    assert key not in dumped(record)


# Ordinary code data that looks a little like secrets: must stay exactly as it is.
IMAGE = base64.b64encode(random.Random(3).randbytes(3000)).decode()
FALSE_POSITIVES = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Dev <dev@example.com>",
    "request 550e8400-e29b-41d4-a716-446655440000 took 3ms",
    "digest: sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    '"integrity": "sha512-' + rand(86, 30, B64) + '=="',
    "token = 3f786850e387550fdab836ed7e6dc881de23001b",
    "password = input()",
    "password = getpass.getpass('Password: ')",
    "PASSWORD=",
    "PASSWORD=\nUSER=admin",
    "PASSWORD=$DB_PASSWORD",
    "PASSWORD=${DB_PASSWORD}",
    'PASSWORD="${DB_PASSWORD:-}"',
    'api_key=os.environ["OPENAI_API_KEY"]',
    "api_key = os.environ.get('OPENAI_API_KEY')",
    "client = OpenAI(api_key=api_key)",
    'api_key = "your-api-key-here"',
    "OPENAI_API_KEY=<your-key>",
    "TOKEN=xxx",
    "GITHUB_TOKEN=***",
    "token: <token>",
    'SECRET_KEY = "changeme"',
    "secret: {{ vault_secret }}",
    "password: str = ''",
    "    token: Optional[str] = None",
    "if password == 'secret': return",
    "max_tokens=1024, temperature=0.2",
    'tokenizer.pad_token = "<pad>"',
    'eos_token = "</s>"',
    'sort_key = "created_at"',
    "out[key] = [...(out[key] ?? []), ...value];",
    "routeKeys[key] = struct{}{}",
    'vec![Token::Str("say")]',
    "Password: incorrect",
    "The token bucket refills; the key point is the API key and token flow.",
    "mysql -u root --password",
    "pip install scikit-learn; see task-list-item and disk-usage",
    "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "ghp_" + "X" * 36,
    "AWS example: AK" + "IAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
    "postgres://user:password@localhost:5432/db",
    "postgres://app:${DB_PASS}@db/app",
    "https://user@github.com/org/repo.git and git@github.com:org/repo.git",
    "https://example.com:8080/path?q=1",
    'headers = {"Authorization": f"Bearer {token}"}',
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + rand(60, 31, B64) + " dev@laptop",
    "-----BEGIN CERTIFICATE-----\nMIIB" + rand(60, 32, B64) + "\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMIIB" + rand(60, 33, B64) + "\n-----END PUBLIC KEY-----",
    "data:image/png;base64," + IMAGE,
    "key := httpRoute.Name",
    "rbac.authorization.k8s.io/v1",
    "export PATH=$HOME/bin:$PATH",
    "self.api_key = api_key",
    "const token = req.headers.authorization;",
    "return { password: user.password, token: data.token };",
    "f(a, password=password)",
    'login(username="admin", password="admin")',
    'auth_token = "12345"',
    'cache_key = "user:42:profile"',
    'key = "a8f5f167f44f4964e6c998dee827110c"',
    'password_hash = "$2b$12$abcdefghijk"',
    'tokens = tokenizer("hello", return_tensors="pt")',
    "--secret-file /etc/secret",
    "GH_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "token=$(gh auth token)",
    "export API_TOKEN=`cat /run/token`",
    "secret: true",
    "ValueError: invalid token: abc",
    'if key == "password": pass',
    "KeyError: 'api_key'",
    # near misses of the second round's shapes
    "mysql -u root -p mydb < dump.sql",
    "mysql -h db -P 3306 -u app -p",
    'mysql -u root -p"$MYSQL_ROOT_PASSWORD" app',
    "mysql -uroot -proot",
    "apt-get install -y mysql-client && mkdir -p /var/lib/app",
    "docker run -p 3306:3306 mysql:8",
    "from huggingface_hub import hf_hub_download; hf_" + "x" * 34,
    "hf_transfer is enabled",
    "see SG.com or NSG.rules",
    "https://example.com/img.png?w=100&sig=abc",
    "https://example.com/f?sv=2020&sig=<signature>",
    "timestamps 12:00:00 and 2024-01-01T10:11:12 at 192.168.0.1:8080",
    "1234567890:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    '{"auths": {"ghcr.io": {"auth": ""}}}',
    '{"auth": "Bearer"}',
    "arch x86_64, int64, uint64 and float64 in sha256-b64 digests",
    "import base64\nbase64.b64encode(b'hello world, this is text')",
    "echo aGVsbG8gd29ybGQsIHRoaXMgaXMgbm90IGEgc2VjcmV0Cg== | base64 -d",
    "const data = atob('PGh0bWw+PGJvZHk+aGVsbG88L2JvZHk+PC9odG1sPg==');",
    "base64 -d <<< " + base64.b64encode(random.Random(5).randbytes(60)).decode(),
    "eyJ" + "uYW1lIjogImFwcCIsICJ2ZXJzaW9uIjogIjEuMi4zIn0=",
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUI=",
    "https://cdn.example.com/AIza-is-not-a-key/path",
    "the zero\u200bwidth space and the \u2192 arrow in docs",
    # code the real files hold: settings and names, not credentials
    "env.OPENAI_API_KEY = 'proxy-handled';",
    "options: { baseURL: url, apiKey: 'ollama', timeout }",
    "apiKey: params.litellmApiKey || 'not-required',",
    'codemie-claude --api-key sk-... "review code"',
    "const apiKey = 'sk-ant-' + 'a'.repeat(95);",
]

# Realistic secrets that no prefix gives away: found by the name they are assigned to.
NAMED = [
    ('"access_token": "ya29.' + rand(20, 50) + '"', "env_assignment"),
    ('password: "hunter' + '2"', "env_assignment"),
    ("client_secret='s3" + "cr3t'", "env_assignment"),
    ("  data:\n    password: cGFzc3dvcmQx" + "MjM=", "env_assignment"),
    ("kubectl create secret generic db --from-literal=password=S3" + "cr3t!x", "env_assignment"),
    ("curl 'https://x/api?user=bob&password=S3" + "cr3tx9&y=1'", "env_assignment"),
    ("mysql --password s3" + "cr3t!x -u root", "env_assignment"),
    ('export API_TOKEN="' + rand(12, 51) + '"', "env_assignment"),
    ('os.environ["API_KEY"] = "k3y-' + rand(10, 52) + '"', "env_assignment"),
    ("PGPASSWORD=" + "pg-" + rand(8, 53) + " psql -h db", "env_assignment"),
    ("npm config set //registry.npmjs.org/:_authToken=npm_" + rand(36, 54), "env_assignment"),
    ('smtp_password = "' + "qwertyuiopasdfgh" + '"', "env_assignment"),  # an app password
    (
        '"Authorization": "Basic ' + base64.b64encode(b"user:pw-" + b"9f8e7d").decode() + '"',
        "high_entropy_secret",
    ),
    ("client = Client(api_key=" + rand(32, 55) + ")", "high_entropy_secret"),
]


@pytest.mark.parametrize(("text", "kind"), NAMED)
def test_named_secrets(text: str, kind: str) -> None:
    out, counts = redact_text(text)
    assert counts == Counter({kind: 1}), out
    assert f"[REDACTED:{kind}]" in out


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_false_positives_stay_untouched(text: str) -> None:
    assert redact_text(text) == (text, Counter())
    padded = text + "\n" + "x = 1\n" * 300  # the long-text prefilter path too
    assert redact_text(padded) == (padded, Counter())


def test_false_positives_in_a_record_keep_it_byte_identical() -> None:
    record = base_record()
    record["messages"][3]["content"] = "\n".join(FALSE_POSITIVES)
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = orjson.dumps(
        {"command": "\n".join(FALSE_POSITIVES[:20])}
    ).decode()
    before = dumped(record)
    assert redact_record(record) == Counter()
    assert dumped(record) == before


def test_records_without_secrets_are_byte_identical(cases_lines: list[bytes]) -> None:
    """The 335 reference records (real text) have no secrets: nothing may change."""
    for line in cases_lines:
        record = orjson.loads(line)
        before = orjson.dumps(record)
        assert redact_record(record) == Counter()
        assert orjson.dumps(record) == before


def test_clean_cache_does_not_hide_secrets() -> None:
    """A long clean text is remembered; the same text with a secret is a different text."""
    redact.clear_cache()
    long_clean = "def f(x):\n    return x\n" * 100
    record = base_record()
    record["messages"][3]["content"] = long_clean
    assert redact_record(record) == Counter()
    record = base_record()
    record["messages"][3]["content"] = long_clean + CASES["github_token"][0]
    assert redact_record(record) == Counter({"github_token": 1})


def test_a_text_with_a_trigger_and_no_secret_is_scanned_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long text the prefilter flags (`token:`) but the detectors find nothing in is
    remembered like one the prefilter clears: the next record holding it skips the scan; the
    text with a secret added is another text, and is redacted."""
    redact.clear_cache()
    scanned: list[int] = []
    scan = redact.scan

    def counted(text: str, *rest: Any) -> str:
        scanned.append(len(text))
        return scan(text, *rest)

    monkeypatch.setattr(redact, "scan", counted)
    flagged = "Set token: <your token here> in the settings page, then log in again.\n" * 8
    for _ in range(2):
        record = base_record()
        record["messages"][3]["content"] = flagged
        assert redact_record(record) == Counter()
        assert record["messages"][3]["content"] == flagged
    assert scanned == [len(flagged)]
    record = base_record()
    record["messages"][3]["content"] = flagged + GITHUB
    assert redact_record(record) == Counter({"github_token": 1})


def test_arguments_nested_past_the_parsers_depth_are_redacted_as_text() -> None:
    """Tool-call arguments too deep for orjson and for the stdlib parser (an IM input's
    string, as the agent's log had it) are looked at as text, not a crash of the bundle."""
    deep = '{"note": "' + GITHUB + '", "a":' + '{"a":' * 3000 + '"x"' + "}" * 3001
    record = base_record()
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = deep
    assert redact_record(record) == Counter({"github_token": 1})
    arguments = record["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert GITHUB not in arguments and arguments.startswith('{"note": "[REDACTED:github_token]"')


def bundle_of(*records: dict[str, Any]) -> dict[str, Any]:
    return {
        "instance_id": "task__abc",
        "job": None,
        "source": "x",
        "format": "im",
        "rewards": None,
        "reward_source": None,
        "metadata": {},
        "usage": {},
        "warnings": [],
        "records": list(records),
    }


def test_redact_bundle_modes() -> None:
    text = CASES["github_token"][0]
    for mode in ("mask", "drop"):
        bundle = bundle_of(planted("content", text), planted("tool_result", text), base_record())
        assert redact_bundle(bundle, mode) == Counter({"github_token": 2})
        assert "p_" + rand(36, 5) not in orjson.dumps(bundle).decode()
    bundle = bundle_of(planted("content", text))
    before = orjson.dumps(bundle)
    assert redact_bundle(bundle, "off") == Counter()
    assert orjson.dumps(bundle) == before
    with pytest.raises(ValueError, match="redaction mode"):
        redact_bundle(bundle, "strict")


def test_redact_bundle_metadata_and_warnings() -> None:
    text = CASES["slack_token"][0]
    bundle = bundle_of(base_record())
    bundle["warnings"] = ["subagent log: " + text]
    assert redact_bundle(bundle, "mask") == Counter({"slack_token": 1})
    assert bundle["warnings"] == ["subagent log: bot [REDACTED:slack_token] posts"]


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("https://user:secret@host/v1", "https://***@host/v1"),
        ("https://host/v1", "https://host/v1"),
        ("http://localhost:8000/v1", "http://localhost:8000/v1"),
        ("https://token@api.example.com", "https://***@api.example.com"),
        ("redis://:pw@cache:6379/0", "redis://***@cache:6379/0"),
        ("https://host/v1?api_key=abc&model=m", "https://host/v1?api_key=***&model=m"),
        ("https://x.blob.core/c?sv=1&sig=abc%3D", "https://x.blob.core/c?sv=1&sig=***"),
        ("https://host/path/user@x", "https://host/path/user@x"),
    ],
)
def test_mask_url_credentials(url: str, masked: str) -> None:
    assert mask_url_credentials(url) == masked


def test_mask_secrets_in_text() -> None:
    text = "request to https://bot:pw@host/v1 failed; key " + CASES["openai_api_key"][0]
    out = mask_secrets_in_text(text)
    assert "pw@" not in out and "https://***@host/v1" in out
    assert "[REDACTED:openai_api_key]" in out


TRIGGER_FREE = "".join(
    sorted(
        set("abdefghijlmnopqrstuvx ABDEFGHLMNOPQRSTUXZ0123456789.,;!?()[]{}<>=+*/#$%&|\n\t\"'")
        - set("JIVkKyYcCwWz_-:\\Gb=")
    )
)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=TRIGGER_FREE, max_size=3000))
def test_text_without_trigger_characters_is_unchanged(text: str) -> None:
    assert PREFILTER.search(text) is None and not search_any(text)
    assert redact_text(text) == (text, Counter())


FRAGMENTS = [
    *(case[0] for case in CASES.values()),
    *FALSE_POSITIVES[:30],
    " ",
    "\n",
    "=",
    ": ",
    '"',
    "'",
    "\\",
    "\\n",
    "key",
    "TOKEN",
    "--password ",
    "export ",
    "PASSWORD",
    "_pass",
    "://",
    "@",
    "sk-",
    "eyJ",
    "AKIA",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join))
def test_redaction_is_idempotent_and_total(text: str) -> None:
    out, counts = redact_text(text)
    assert redact_text(out) == (out, Counter())
    assert sum(counts.values()) == out.count("[REDACTED:") - text.count("[REDACTED:")


# -- second round: invisible characters, base64, keys split over two messages ----------------

GITHUB = "gh" + "p_" + rand(36, 5)
ANTHROPIC = "sk-" + "ant-api03-" + rand(90, 2)


@pytest.mark.parametrize(
    "hidden",
    ["\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\x1b[1m", "\x1b[0m\x00"],
    ids=["zwsp", "zwj", "word-joiner", "bom", "soft-hyphen", "bidi", "ansi", "ansi-nul"],
)
def test_a_key_split_by_an_invisible_character_is_found(hidden: str) -> None:
    broken = GITHUB[:2] + hidden + GITHUB[2:9] + hidden + GITHUB[9:]
    record = planted("tool_result", "token " + broken + " \u2192 ok")
    assert redact_record(record) == Counter({"github_token": 1})
    content = record["messages"][3]["content"]
    assert content == "$ cat .env\ntoken [REDACTED:github_token] \u2192 ok\nDEBUG=1\n"
    # in JSON arguments, raw or escaped
    for arguments in (
        orjson.dumps({"command": "echo " + broken}).decode(),
        json.dumps({"command": "echo " + broken}),  # ASCII: `\\u200b`, `\\u001b`
    ):
        record = base_record()
        record["messages"][2]["tool_calls"][0]["function"]["arguments"] = arguments
        assert redact_record(record) == Counter({"github_token": 1}), arguments
        assert orjson.loads(record["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {
            "command": "echo [REDACTED:github_token]"
        }


@pytest.mark.parametrize("control", ["\x01", "\x08", "\x0b", "\x1f", "\x7f"])
def test_a_key_split_by_an_ascii_control_in_ascii_text_is_found(control: str) -> None:
    """The cleaner removes these on their own (no ANSI escape around them): a key they split
    would be whole again in im.jsonl had the detectors read the text with them in it."""
    broken = GITHUB[:5] + control + GITHUB[5:]
    record = planted("tool_result", "token " + broken + " ok")
    assert redact_record(record) == Counter({"github_token": 1})
    content = record["messages"][3]["content"]
    assert content == "$ cat .env\ntoken [REDACTED:github_token] ok\nDEBUG=1\n"


def test_invisible_characters_without_a_secret_stay_as_they_are() -> None:
    """TQS V2 scores the text as the agent saw it: only the cleaner removes them."""
    record = base_record()
    record["messages"][3]["content"] = "a\u200bb \x1b[31mred\x1b[0m \u2192 \u00a0done"
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = '{"command":"ls \\u200b"}'
    before = dumped(record)
    assert redact_record(record) == Counter()
    assert dumped(record) == before


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("echo " + b64(GITHUB + "\n") + " | base64 -d > ~/.token", "github_token"),
        ("echo " + b64(GITHUB).rstrip("=") + " | base64 --decode", "github_token"),
        (
            "base64.b64decode('" + b64("DB_PASSWORD=Zq8-rT5!xLm2\nDEBUG=1\n") + "')",
            "env_assignment",
        ),
        ("Buffer.from('" + b64(ANTHROPIC) + "', 'base64')", "anthropic_api_key"),
        ("atob('" + base64.urlsafe_b64encode(GITHUB.encode()).decode() + "')", "github_token"),
        (
            "CREDS_B64=" + b64("aws_access_key_id = AK" + "IA" + rand(16, 3, UPPER_DIGITS)),
            "aws_access_key_id",
        ),
        ("base64 of base64: " + b64(b64(GITHUB)), "github_token"),
        # without any mention of base64: JSON (`eyJ`) and PEM blocks (`LS0tLS1C`)
        ("export CONFIG=" + b64('{"token": "' + rand(32, 70) + '"}'), "env_assignment"),
        ("tls.key: " + b64(PEM + "\n"), "private_key"),
        ('{"auths": {"r.io": {"auth": "' + b64("bot:" + rand(20, 71)) + '"}}}', "docker_auth"),
    ],
    ids=[
        "echo-base64-d",
        "unpadded",
        "b64decode-env",
        "buffer-from",
        "atob-urlsafe",
        "b64-variable",
        "nested",
        "json-without-hint",
        "pem-without-hint",
        "docker-auth",
    ],
)
def test_secrets_wrapped_in_base64(text: str, kind: str) -> None:
    out, counts = redact_text(text)
    assert counts == Counter({kind: 1}), out
    assert f"[REDACTED:{kind}]" in out
    run = max(re.findall(r"[A-Za-z0-9+/_=-]{20,}", text), key=len)
    assert run not in out
    record = planted("tool_result", text)
    assert redact_record(record) == Counter({kind: 1})
    assert run not in dumped(record)


def test_a_base64_run_is_decoded_when_the_record_mentions_base64_elsewhere() -> None:
    """`cat token.b64` prints only the run; the command that made it says base64."""
    record = base_record()
    arguments = orjson.dumps({"command": "base64 ~/.token > token.b64; cat token.b64"})
    record["messages"][2]["tool_calls"][0]["function"]["arguments"] = arguments.decode()
    record["messages"][3]["content"] = b64(GITHUB) + "\n"
    assert redact_record(record) == Counter({"github_token": 1})
    assert record["messages"][3]["content"] == "[REDACTED:github_token]\n"
    # the same output in a record that never mentions base64 is left alone (not decoded)
    record = base_record()
    record["messages"][3]["content"] = b64(GITHUB) + "\n"
    assert redact_record(record) == Counter()


@pytest.mark.parametrize("system_prompt_cached", [False, True])
def test_a_text_that_begins_with_b64_mentions_base64(system_prompt_cached: bool) -> None:
    """`b64` at the very start of a text is a mention of base64 like one after a space: a
    record's texts are joined, and when its long system prompt is known clean and left out,
    the next text begins the join (its secret once leaked then, and only then)."""
    redact.clear_cache()
    record = base_record()
    record["messages"][0]["content"] = "You are a careful coding agent. " * 20
    if system_prompt_cached:  # as a flagged record with nothing found leaves it
        redact._remember_clean(record["messages"][0]["content"])
    record["messages"][1]["content"] = "b64 of the file: " + b64(GITHUB)
    assert redact_record(record) == Counter({"github_token": 1})
    assert record["messages"][1]["content"] == "b64 of the file: [REDACTED:github_token]"


def test_long_and_binary_base64_is_left_alone() -> None:
    blob = base64.b64encode(random.Random(8).randbytes(30000)).decode()
    text = "echo " + blob + " | base64 -d > image.png"
    assert redact_text(text) == (text, Counter())


def tool_turn(call_id: str, command: str, output: str) -> list[dict[str, Any]]:
    arguments = orjson.dumps({"command": command}).decode()
    call = {"id": call_id, "type": "function", "function": {"name": "Bash", "arguments": arguments}}
    return [
        {"role": "assistant", "content": "", "reasoning_content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


@pytest.mark.parametrize(
    ("key", "cut", "kind"),
    [
        (ANTHROPIC, 40, "anthropic_api_key"),
        (ANTHROPIC, 12, "anthropic_api_key"),
        (GITHUB, 6, "github_token"),
        ("AK" + "IA" + rand(16, 3, UPPER_DIGITS), 8, "aws_access_key_id"),
        ("AI" + "za" + rand(35, 12), 10, "google_api_key"),
    ],
    ids=["anthropic-40", "anthropic-12", "github", "aws", "google"],
)
def test_a_key_split_over_two_tool_results(key: str, cut: int, kind: str) -> None:
    record = base_record()
    record["messages"][3:4] = [
        {"role": "tool", "tool_call_id": "call_1", "content": key[:cut]},
        *tool_turn("call_2", "tail -c +41 key.txt", key[cut:] + "\n"),
    ]
    assert redact_record(record) == Counter({kind: 1})
    out = dumped(record)
    assert key[:cut] not in out and key[cut:] not in out
    contents = [m["content"] for m in record["messages"] if m["role"] == "tool"]
    assert contents == [f"[REDACTED:{kind}]", f"[REDACTED:{kind}]\n"]


def test_a_key_split_between_a_tool_result_and_the_next_message() -> None:
    record = base_record()
    record["messages"][3]["content"] = "the key is " + GITHUB[:10] + "\n"
    record["messages"][4]["content"] = GITHUB[10:] + " is the rest."
    assert redact_record(record) == Counter({"github_token": 1})
    assert record["messages"][3]["content"] == "the key is [REDACTED:github_token]\n"
    assert record["messages"][4]["content"] == "[REDACTED:github_token] is the rest."


def test_a_long_text_ending_in_half_a_key_is_looked_at_again_in_the_next_record() -> None:
    """A long tool output ending in a key's prefix holds no secret on its own, so the
    detectors find nothing in it; were it remembered as clean, a later record holding it
    would leave it out of its prefilter and the split key (the rest in the next message)
    would not be looked for."""
    redact.clear_cache()
    first_half = "Build log: " + "compiled module ok\n" * 20 + "the key is " + GITHUB[:10]
    record = base_record()
    record["messages"][3]["content"] = first_half
    record["messages"][4]["content"] = "That is all the file holds."
    assert redact_record(record) == Counter()
    record = base_record()
    record["messages"][3]["content"] = first_half
    record["messages"][4]["content"] = GITHUB[10:] + " is the rest."
    assert redact_record(record) == Counter({"github_token": 1})
    assert GITHUB[:10] not in dumped(record) and GITHUB[10:] not in dumped(record)


def test_what_redaction_remembers_changes_no_record(cases_lines: list[bytes]) -> None:
    """Each record redacted after all the others (texts remembered) comes out as it does
    alone (nothing remembered): reference records, with long texts repeated across them that
    end in half a key, some followed by the rest, some not."""
    rng = random.Random(23)
    log = "Build log: " + "compiled module ok\n" * 20 + "key "
    variants = []
    for line in cases_lines[:60]:
        record = orjson.loads(line)
        texts = [m for m in record["messages"] if isinstance(m.get("content"), str)]
        position, cut = rng.randrange(len(texts) - 1), rng.choice((6, 12))
        texts[position]["content"] = log + GITHUB[:cut]
        if rng.random() < 0.5:
            texts[position + 1]["content"] = GITHUB[cut:] + " " + texts[position + 1]["content"]
        variants.append(record)

    def redacted(record: dict[str, Any], cold: bool) -> tuple[str, Counter[str]]:
        if cold:
            redact.clear_cache()
        record = copy.deepcopy(record)
        counts = redact_record(record)
        return dumped(record), counts

    alone = [redacted(record, cold=True) for record in variants]
    redact.clear_cache()
    together = [redacted(record, cold=False) for record in variants * 2]
    assert together == alone * 2
    assert 10 < sum(1 for _, counts in alone if counts) < 50


def test_a_whole_key_before_a_message_leaves_the_message_alone() -> None:
    record = base_record()
    record["messages"][3]["content"] = "GITHUB_TOKEN is " + GITHUB
    record["messages"][4]["content"] = "Done, the token works now."
    assert redact_record(record) == Counter({"github_token": 1})
    assert record["messages"][4]["content"] == "Done, the token works now."


def test_google_key_in_a_url_path() -> None:
    key = "AI" + "za" + rand(35, 12)
    out, counts = redact_text("GET https://maps.example/v1/" + key + "/tiles?x=1")
    assert out == "GET https://maps.example/v1/[REDACTED:google_api_key]/tiles?x=1"
    assert counts == Counter({"google_api_key": 1})


def test_signed_url_signatures() -> None:
    amz = "X-Amz-" + "Signature=" + rand(64, 72, "0123456789abcdef")
    out, counts = redact_text("https://b.s3.amazonaws.com/k?X-Amz-Expires=60&" + amz)
    assert out.endswith("X-Amz-Signature=[REDACTED:url_signature]")
    assert counts == Counter({"url_signature": 1})


def test_judge_answers_are_masked_when_the_bundle_was_redacted() -> None:
    from transforms.bundle_steps import mask_judge_answers, mask_secrets

    answer = {
        "llm_composite_score": 0.5,
        "llm_detailed_results": {"by_category": {"A": {"checks": {"a1": {"reason": GITHUB}}}}},
        "llm_raw_response": '{"reason": "the agent printed ' + GITHUB + '"}',
    }
    bundle = mask_secrets(bundle_of(base_record()))
    bundle["records"][0]["meta_info"]["unique_info"]["_llm_judge"] = copy.deepcopy(answer)
    mask_judge_answers(bundle, "_llm_judge")
    judged = bundle["records"][0]["meta_info"]["unique_info"]["_llm_judge"]
    assert GITHUB not in orjson.dumps(judged).decode()
    assert judged["llm_composite_score"] == 0.5
    assert judged["llm_raw_response"] == '{"reason": "the agent printed [REDACTED:github_token]"}'
    assert bundle["tallies"] == {"redacted.github_token": 2}
    # `--redact off`: the bundle never went through the stage, nothing is touched
    bundle = bundle_of(base_record())
    bundle["records"][0]["meta_info"]["unique_info"]["_llm_judge"] = copy.deepcopy(answer)
    mask_judge_answers(bundle, "_llm_judge")
    assert bundle["records"][0]["meta_info"]["unique_info"]["_llm_judge"] == answer
