#!/usr/bin/env python3
"""Deterministic generator of the leak-detection quality corpus.

Writes, next to this file:

* ``positives.jsonl``: one case per line, ``{"id", "carrier", "file", "text",
  "secrets": [{"kind", "also", "value"}]}``.  ``text`` is what a tool would print
  (an env dump, a config file, a log, a diff, ``curl -v`` output, a wrapped PEM
  block ...); every ``value`` occurs in ``text`` and must be masked entirely.
  ``kind`` is the expected finding kind, ``also`` other acceptable kinds.
* ``negatives.jsonl``: ``{"id", "carrier", "file", "text", "lookalike"}``: output
  holding a look-alike (git SHAs, digests, UUIDs, integrity hashes, base64 images,
  public keys, documented example keys, identifiers, minified JS, hex colors,
  non-secret assignments ...) that must pass through untouched.

Every secret is fake but format-valid (right prefix, alphabet, length, GitHub CRC32
checksum, JWT structure with a real HMAC signature).  Base64-encoded values under
a Kubernetes ``data:`` key are only included where the key name itself says
secret (``password``, ``api-key``) or where the value is a base64 PEM private key
(``client-key-data``, ``tls.key``: recognised by its decoded header); a base64
blob of any other secret under a neutral key is not detectable by pattern and is
left out on purpose.

Run ``python tests/data/leaks/generate.py`` to regenerate; the output is
byte-identical on every run (seeded ``random.Random``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import random
import string
import zlib

SEED = 20261129
HERE = os.path.dirname(os.path.abspath(__file__))

B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
B64URL = B62 + "-_"
HEX = "0123456789abcdef"
B32 = string.ascii_uppercase + "234567"

WORDS = (
    "alpha amber anchor apple arrow atlas autumn badge bamboo banner basil beacon birch blaze bloom "
    "bolt breeze bridge bronze cabin cactus candle canyon carbon castle cedar chalk cherry cinder "
    "cipher citrus cliff cloud clover cobalt comet copper coral cosmos crane crystal dawn delta desert "
    "dragon drift eagle echo ember falcon fern fjord flame flint forest fossil frost galaxy garnet "
    "glacier granite harbor hazel helium heron horizon indigo iris ivory jade jasper juniper kelp "
    "lagoon lantern lava lemon lilac linen lotus lunar maple marble meadow mercury mesa meteor mint "
    "mist monsoon moss nebula nectar nickel noble north oasis ocean olive onyx orbit orchid otter "
    "pebble pepper phoenix pine planet plasma polar poppy prairie prism pulse quartz quill radar "
    "raven reef ripple river robin ruby saffron sage sapphire shadow sierra silver slate solar spark "
    "spruce storm summit sunset tango thunder tidal timber topaz tundra twilight umber valley velvet "
    "violet vortex walnut willow winter zephyr zinc"
).split()

SERVICES = ["billing", "auth", "orders", "search", "gateway", "inventory", "payments", "notify",
            "analytics", "ledger", "catalog", "profile", "reports", "scheduler", "uploads"]
HOSTS = ["db.internal", "10.0.3.17", "postgres.prod.svc.cluster.local", "mysql-primary", "localhost",
         "redis.cache.internal", "mongo-0.mongo", "rabbitmq.mq.svc", "db.example.net", "172.18.0.4"]
USERS = ["admin", "app", "deploy", "svc_orders", "postgres", "root", "readonly", "etl_user", "grafana", "ci"]


class Gen:
    """Seeded random helpers."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def pick(self, seq):  # type: ignore[no-untyped-def]
        return self.r.choice(seq)

    def word(self) -> str:
        return self.r.choice(WORDS)

    def num(self, a: int, b: int) -> int:
        return self.r.randint(a, b)

    def ts(self) -> str:
        return (f"2026-{self.num(1, 12):02d}-{self.num(1, 28):02d}T{self.num(0, 23):02d}:"
                f"{self.num(0, 59):02d}:{self.num(0, 59):02d}.{self.num(0, 999):03d}Z")

    def sha1(self) -> str:
        return self.s(HEX, 40)

    def uuid(self) -> str:
        h = self.s(HEX, 32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{self.pick('89ab')}{h[17:20]}-{h[20:]}"

    def password(self) -> str:
        k = self.num(0, 5)
        if k == 0:
            return f"{self.word().capitalize()}{self.num(1990, 2029)}{self.pick('!@#$%&*?')}"
        if k == 1:
            return "-".join(self.word() for _ in range(4))
        if k == 2:
            return self.s(B62 + "!@#%^&*_-+", self.num(12, 24))
        if k == 3:
            return f"{self.word()}{self.word()}{self.num(10, 99)}"
        if k == 4:
            return self.s(B62, self.num(16, 32))
        return f"P@ss-{self.word()}-{self.num(100, 999)}"


def b62_checksum(data: str) -> str:
    """GitHub-style checksum: CRC32 of the random part in base62, 6 chars."""
    n = zlib.crc32(data.encode())
    out = ""
    while n:
        n, d = divmod(n, 62)
        out = (string.digits + string.ascii_uppercase + string.ascii_lowercase)[d] + out
    return out.rjust(6, "0")


def b64url_json(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).rstrip(b"=").decode()


# --------------------------------------------------------------------------- secrets


def mk_aws_id(g: Gen) -> str:
    return g.pick(["AKIA", "AKIA", "AKIA", "ASIA"]) + g.s(B32, 16)


def mk_aws_secret(g: Gen) -> str:
    while True:
        v = g.s(B64, 40)
        if "/" in v or "+" in v or g.num(0, 3) == 0:
            return v


def mk_github(g: Gen) -> str:
    kind = g.num(0, 6)
    if kind == 6:
        return "github_pat_" + g.s(B62, 22) + "_" + g.s(B62, 59)
    rand = g.s(B62, 30)
    return f"gh{'pousr'[kind % 5]}_" + rand + b62_checksum(rand)


def mk_gitlab(g: Gen) -> str:
    return "glpat-" + g.s(B62 + "_-", 20)


def mk_slack(g: Gen) -> str:
    k = g.num(0, 3)
    if k == 0:
        return f"xoxb-{g.s(string.digits, 12)}-{g.s(string.digits, 13)}-{g.s(B62, 24)}"
    if k == 1:
        return f"xoxp-{g.s(string.digits, 12)}-{g.s(string.digits, 12)}-{g.s(string.digits, 13)}-{g.s(HEX, 32)}"
    if k == 2:
        return f"xapp-1-A{g.s(string.ascii_uppercase + string.digits, 10)}-{g.s(string.digits, 13)}-{g.s(HEX, 64)}"
    return f"xoxe.xoxp-1-{g.s(B62, 40)}" if False else f"xoxa-2-{g.s(string.digits, 12)}-{g.s(B62, 30)}"


def mk_slack_webhook(g: Gen) -> str:
    return f"T{g.s(string.ascii_uppercase + string.digits, 10)}/B{g.s(string.ascii_uppercase + string.digits, 10)}/{g.s(B62, 24)}"


def mk_stripe(g: Gen) -> str:
    pre = g.pick(["sk_live_", "sk_live_", "rk_live_", "sk_test_"])
    return pre + g.s(B62, g.pick([24, 99]))


def mk_google_api(g: Gen) -> str:
    return "AIza" + g.s(B62 + "_-", 35)


def mk_google_oauth(g: Gen) -> str:
    return "GOCSPX-" + g.s(B62 + "_-", 28)


def mk_openai(g: Gen) -> str:
    k = g.num(0, 3)
    if k == 0:
        return "sk-proj-" + g.s(B64URL, 156)
    if k == 1:
        return "sk-" + g.s(B62, 20) + "T3BlbkFJ" + g.s(B62, 20)
    if k == 2:
        return "sk-svcacct-" + g.s(B64URL, 120)
    return "sk-" + g.s(B62, 48)


def mk_anthropic(g: Gen) -> str:
    if g.num(0, 4) == 0:
        return "sk-ant-admin01-" + g.s(B64URL, 93) + "AA"
    return "sk-ant-api03-" + g.s(B64URL, 93) + "AA"


def mk_hf(g: Gen) -> str:
    return "hf_" + g.s(string.ascii_letters, 34)


def mk_npm(g: Gen) -> str:
    return "npm_" + g.s(B62, 36)


def mk_pypi(g: Gen) -> str:
    return "pypi-AgEIcHlwaS5vcmc" + g.s(B64URL, g.num(150, 190))


def mk_twilio(g: Gen) -> str:
    return g.pick(["AC", "SK"]) + g.s(HEX, 32)


def mk_sendgrid(g: Gen) -> str:
    return "SG." + g.s(B64URL, 22) + "." + g.s(B64URL, 43)


def mk_azure(g: Gen) -> str:
    return g.s(B64, 86) + "=="


def mk_jwt(g: Gen) -> str:
    header = {"alg": g.pick(["HS256", "HS384", "HS512"]), "typ": "JWT"}
    payload = {"sub": g.uuid(), "iat": g.num(1700000000, 1800000000), "role": g.pick(["admin", "user", "service"])}
    if g.num(0, 1):
        payload["email"] = f"{g.word()}.{g.word()}@example.com"
    h = b64url_json(header)
    p = b64url_json(payload)
    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[header["alg"]]
    sig = hmac.new(g.s(B62, 32).encode(), f"{h}.{p}".encode(), digest).digest()
    return f"{h}.{p}.{base64.urlsafe_b64encode(sig).rstrip(b'=').decode()}"


def mk_bearer(g: Gen) -> str:
    return g.s(B62 + "-._~", g.num(32, 64))


def mk_generic(g: Gen) -> str:
    return g.s(g.pick([B62, B62, B64URL]), g.num(24, 64))


PEM_LABELS = [
    ("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 25),
    ("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 26),
    ("EC PRIVATE KEY", "MHcCAQEEI", 3),
    ("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", 7),
    ("ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", 28),
    ("DSA PRIVATE KEY", "MIIBuwIBAAKBgQ", 10),
]


def mk_pem_lines(g: Gen, width: int = 64) -> tuple[str, list[str]]:
    label, start, nlines = g.pick(PEM_LABELS)
    body = start + g.s(B64, nlines * width - len(start) - g.num(0, 40))
    lines = [body[i:i + width] for i in range(0, len(body), width)]
    if label == "EC PRIVATE KEY":
        lines[-1] = lines[-1][:-2] + "=="
    return label, lines


def pem(g: Gen, sep: str = "\n", indent: str = "", width: int = 64) -> str:
    label, lines = mk_pem_lines(g, width)
    parts = [f"-----BEGIN {label}-----"] + lines + [f"-----END {label}-----"]
    return sep.join(indent + p if i else p for i, p in enumerate(parts))


def pgp_private(g: Gen) -> str:
    body = "lQdGBF" + g.s(B64, 64 * 12 - 6)
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "\n".join(["-----BEGIN PGP PRIVATE KEY BLOCK-----", "", *lines, "=" + g.s(B64, 4),
                      "-----END PGP PRIVATE KEY BLOCK-----"])


def encrypted_rsa(g: Gen) -> str:
    body = g.s(B64, 64 * 25)
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "\n".join(["-----BEGIN RSA PRIVATE KEY-----", "Proc-Type: 4,ENCRYPTED",
                      f"DEK-Info: AES-128-CBC,{g.s(HEX.upper(), 32)}", "", *lines, "-----END RSA PRIVATE KEY-----"])


# --------------------------------------------------------------------------- carriers

ENV_NAMES = {
    "aws_access_key_id": ["AWS_ACCESS_KEY_ID"],
    "aws_secret_key": ["AWS_SECRET_ACCESS_KEY"],
    "github_token": ["GITHUB_TOKEN", "GH_TOKEN", "GITHUB_PAT"],
    "gitlab_token": ["GITLAB_TOKEN", "CI_JOB_TOKEN", "GL_TOKEN"],
    "slack_token": ["SLACK_BOT_TOKEN", "SLACK_TOKEN", "SLACK_APP_TOKEN"],
    "stripe_key": ["STRIPE_SECRET_KEY", "STRIPE_API_KEY", "STRIPE_KEY"],
    "google_api_key": ["GOOGLE_API_KEY", "MAPS_API_KEY", "FIREBASE_API_KEY"],
    "google_oauth_secret": ["GOOGLE_CLIENT_SECRET", "OAUTH_CLIENT_SECRET"],
    "openai_key": ["OPENAI_API_KEY", "OPENAI_KEY"],
    "anthropic_key": ["ANTHROPIC_API_KEY", "CLAUDE_API_KEY"],
    "huggingface_token": ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACEHUB_API_TOKEN"],
    "npm_token": ["NPM_TOKEN", "NODE_AUTH_TOKEN"],
    "pypi_token": ["PYPI_TOKEN", "TWINE_PASSWORD", "PYPI_API_TOKEN"],
    "twilio_key": ["TWILIO_ACCOUNT_SID", "TWILIO_API_KEY"],
    "sendgrid_key": ["SENDGRID_API_KEY", "SENDGRID_KEY"],
    "jwt": ["JWT", "ACCESS_TOKEN", "ID_TOKEN", "SESSION_TOKEN"],
    "secret_assignment": ["DB_PASSWORD", "POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD", "REDIS_PASSWORD",
                          "SMTP_PASSWORD", "ADMIN_PASSWORD", "SECRET_KEY", "JWT_SECRET", "APP_SECRET",
                          "SESSION_SECRET", "WEBHOOK_SECRET", "API_KEY", "API_TOKEN", "AUTH_TOKEN",
                          "ENCRYPTION_KEY", "PRIVATE_KEY", "CLIENT_SECRET", "RABBITMQ_PASSWORD",
                          "LDAP_BIND_PASSWORD", "KEYSTORE_PASSWORD", "DJANGO_SECRET_KEY", "MASTER_KEY"],
    "high_entropy": [],
}


def camel(name: str) -> str:
    parts = name.lower().split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def benign_env(g: Gen, n: int) -> list[str]:
    pool = [
        "APP_ENV=production", "PORT=8080", "LOG_LEVEL=info", "NODE_ENV=production", "TZ=UTC",
        f"DATABASE_HOST={g.pick(HOSTS)}", "DATABASE_PORT=5432", f"DATABASE_NAME={g.pick(SERVICES)}",
        f"DATABASE_USER={g.pick(USERS)}", "CACHE_TTL=300", "FEATURE_FLAGS=search,exports",
        f"SERVICE_NAME={g.pick(SERVICES)}-api", "WORKERS=4", "AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=us-east-1",
        f"SENTRY_ENVIRONMENT=prod-{g.word()}", "ENABLE_METRICS=true", "MAX_UPLOAD_MB=25",
        f"PUBLIC_URL=https://{g.word()}.example.com", "PASSWORD_MIN_LENGTH=12", "TOKEN_TTL_SECONDS=3600",
    ]
    g.r.shuffle(pool)
    return pool[:n]


def printenv_lines(g: Gen) -> list[str]:
    user = g.pick(["dev", "runner", "ubuntu", "node", "app"])
    return [
        f"HOSTNAME={g.s(HEX, 12)}", f"HOME=/home/{user}", f"USER={user}", "SHELL=/bin/bash", "TERM=xterm-256color",
        f"PATH=/home/{user}/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"PWD=/home/{user}/src/{g.pick(SERVICES)}", f"OLDPWD=/home/{user}", "LANG=C.UTF-8", "SHLVL=1",
        "LS_COLORS=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01",
        f"SSH_AUTH_SOCK=/tmp/ssh-{g.s(B62, 10)}/agent.{g.num(1000, 99999)}",
        f"XDG_RUNTIME_DIR=/run/user/{g.num(1000, 1010)}", "_=/usr/bin/printenv",
    ]


def carrier(g: Gen, kind: str, value: str, i: int) -> tuple[str, str, str]:
    """Embed ``value`` (a secret of ``kind``) in realistic output; returns (carrier, file, text)."""
    names = ENV_NAMES.get(kind) or ["SECRET_TOKEN"]
    name = g.pick(names)
    choice = i % 16
    if kind == "high_entropy":
        choice = 100 + i % 8
    if choice == 0:
        lines = benign_env(g, 4) + [f"{name}={value}"] + benign_env(g, 3)
        return "dotenv", ".env", "\n".join(lines) + "\n"
    if choice == 1:
        return "shell_export", "setup.sh", (
            "#!/usr/bin/env bash\nset -euo pipefail\n"
            f"export APP_ENV=staging\nexport {name}=\"{value}\"\nexport PATH=\"$HOME/.local/bin:$PATH\"\n"
            f"./bin/deploy --region eu-west-1\n")
    if choice == 2:
        lines = printenv_lines(g)
        lines.insert(g.num(2, len(lines) - 1), f"{name}={value}")
        return "printenv", "printenv.out", "\n".join(lines) + "\n"
    if choice == 3:
        key = name.lower()
        return "yaml_config", "config.yaml", (
            f"app:\n  name: {g.pick(SERVICES)}\n  replicas: {g.num(1, 6)}\n"
            f"integrations:\n  {g.word()}:\n    enabled: true\n    {key}: {value}\n"
            f"    timeout: 30s\nlogging:\n  level: info\n")
    if choice == 4:
        return "docker_compose", "docker-compose.yml", (
            f"services:\n  {g.pick(SERVICES)}:\n    image: ghcr.io/acme/{g.pick(SERVICES)}:1.{g.num(0, 30)}.{g.num(0, 9)}\n"
            f"    ports:\n      - \"8080:8080\"\n    environment:\n      - NODE_ENV=production\n"
            f"      - {name}={value}\n      - LOG_FORMAT=json\n    depends_on:\n      - db\n")
    if choice == 5:
        doc = {"service": g.pick(SERVICES), "region": "us-east-1", "retries": 3,
               "credentials": {camel(name): value, "user": g.pick(USERS)}}
        return "json_config", "settings.json", json.dumps(doc, indent=2) + "\n"
    if choice == 6:
        return "python_source", "settings.py", (
            f"import os\n\nDEBUG = False\nALLOWED_HOSTS = [\"{g.word()}.example.com\"]\n"
            f"{name} = \"{value}\"\nTIMEOUT = {g.num(5, 60)}\n")
    if choice == 7:
        return "js_source", "client.js", (
            f"import {{ Client }} from './client.js';\n\nconst {camel(name)} = '{value}';\n"
            f"export const client = new Client({{ baseUrl: 'https://api.example.com', key: {camel(name)} }});\n")
    if choice == 8:
        return "git_diff", "diff.patch", (
            f"diff --git a/.env.production b/.env.production\nindex {g.s(HEX, 7)}..{g.s(HEX, 7)} 100644\n"
            f"--- a/.env.production\n+++ b/.env.production\n@@ -3,6 +3,7 @@ APP_ENV=production\n"
            f" PORT=8080\n LOG_LEVEL=info\n+{name}={value}\n FEATURE_FLAGS=search\n")
    if choice == 9:
        return "toml", "config.toml", (
            f"[server]\nhost = \"0.0.0.0\"\nport = 8443\n\n[{g.word()}]\n{name.lower()} = \"{value}\"\nverify_tls = true\n")
    if choice == 10:
        dash = name.lower().replace("_", "-")
        return "k8s_stringdata", "secret.yaml", (
            f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {g.pick(SERVICES)}-secrets\n  namespace: prod\n"
            f"type: Opaque\nstringData:\n  {dash}: \"{value}\"\n")
    if choice == 11:
        return "terraform", "terraform.tfvars", (
            f"region        = \"eu-central-1\"\ninstance_type = \"t3.medium\"\n{name.lower()} = \"{value}\"\n")
    if choice == 12:
        return "properties", "application.properties", (
            f"spring.application.name={g.pick(SERVICES)}\nserver.port=8080\n"
            f"app.{camel(name)}={value}\nlogging.level.root=INFO\n")
    if choice == 13:
        return "log", "app.log", (
            f"{g.ts()} INFO  boot: starting {g.pick(SERVICES)} v2.{g.num(0, 9)}.{g.num(0, 9)}\n"
            f"{g.ts()} DEBUG config: loaded environment {name}={value} source=env\n"
            f"{g.ts()} INFO  http: listening on :8080\n")
    if choice == 14:
        return "github_actions_log", "job.log", (
            f"2026-11-29T10:{g.num(10, 59)}:{g.num(10, 59)}.{g.num(1000000, 9999999)}Z ##[group]Run ./scripts/release.sh\n"
            f"  env:\n    {name}: {value}\n    CI: true\n##[endgroup]\n")
    if choice == 15:
        return "ini", "credentials.ini", (
            f"[default]\nregion = us-west-2\noutput = json\n{name.lower()} = \"{value}\"\n")
    # High-entropy generic tokens: no name that says secret, no vendor prefix.
    if choice == 100:
        return "log", "worker.log", f"{g.ts()} INFO  session established, key {value} expires in 3600s\n"
    if choice == 101:
        return "shell_history", "history.txt", (
            f"  501  cd ~/src/{g.pick(SERVICES)}\n  502  ./cli login --key {value}\n  503  ./cli status\n")
    if choice == 102:
        return "curl_v", "curl.txt", (
            f"> GET /v2/items HTTP/1.1\n> Host: api.{g.word()}.io\n> User-Agent: curl/8.5.0\n"
            f"> X-Session: {value}\n> Accept: */*\n>\n< HTTP/1.1 200 OK\n< Content-Type: application/json\n")
    if choice == 103:
        return "yaml_config", "values.yaml", f"relay:\n  endpoint: wss://relay.example.com\n  signingKey: {value}\n"
    if choice == 104:
        return "log", "audit.log", f"{g.ts()} WARN  fallback credential in use: {value} (rotate soon)\n"
    if choice == 105:
        return "json_response", "response.json", json.dumps(
            {"status": "ok", "data": {"client": g.pick(SERVICES), "license": value, "seats": 25}}, indent=2) + "\n"
    if choice == 106:
        return "cli_output", "out.txt", f"Created deploy key for {g.pick(SERVICES)}:\n\n    {value}\n\nStore it now; it is shown once.\n"
    return "markdown", "NOTES.md", f"## staging\n\nThe staging relay accepts `{value}` until the migration lands.\n"


def vendor_extras(g: Gen, kind: str, value: str, i: int) -> tuple[str, str, str] | None:
    """Carriers where the secret appears without a telling name (pattern must catch it)."""
    k = i % 5
    if kind == "github_token" and k == 0:
        return "git_remote", "remote.txt", (
            f"origin\thttps://x-access-token:{value}@github.com/acme/{g.pick(SERVICES)}.git (fetch)\n"
            f"origin\thttps://x-access-token:{value}@github.com/acme/{g.pick(SERVICES)}.git (push)\n")
    if kind in ("github_token", "openai_key", "anthropic_key", "huggingface_token", "gitlab_token", "slack_token",
                "stripe_key", "sendgrid_key", "jwt") and k == 1:
        scheme = "token" if kind == "github_token" else "Bearer"
        return "curl_v", "curl.txt", (
            f"*   Trying 140.82.112.6:443...\n* Connected to api.example.com port 443\n"
            f"> POST /v1/messages HTTP/2\n> Host: api.example.com\n> authorization: {scheme} {value}\n"
            f"> content-type: application/json\n> content-length: 88\n>\n< HTTP/2 200\n< date: Sun, 29 Nov 2026 16:30:00 GMT\n")
    if k == 2:
        return "error_log", "error.log", (
            f"Traceback (most recent call last):\n  File \"/srv/app/client.py\", line {g.num(10, 300)}, in request\n"
            f"    raise AuthError(f\"rejected credential {{cred}}\")\nAuthError: rejected credential {value}\n")
    if k == 3:
        return "json_response", "response.json", json.dumps(
            {"id": g.uuid(), "object": "credential", "value": value, "created": g.num(1700000000, 1800000000)},
            indent=2) + "\n"
    return None


def positives(g: Gen) -> list[dict]:
    factories = [
        ("aws_access_key_id", mk_aws_id, 14, ()),
        ("aws_secret_key", mk_aws_secret, 16, ("secret_assignment", "high_entropy")),
        ("github_token", mk_github, 24, ()),
        ("gitlab_token", mk_gitlab, 14, ()),
        ("slack_token", mk_slack, 16, ()),
        ("stripe_key", mk_stripe, 16, ()),
        ("google_api_key", mk_google_api, 14, ()),
        ("google_oauth_secret", mk_google_oauth, 14, ()),
        ("openai_key", mk_openai, 18, ()),
        ("anthropic_key", mk_anthropic, 16, ()),
        ("huggingface_token", mk_hf, 14, ()),
        ("npm_token", mk_npm, 14, ()),
        ("pypi_token", mk_pypi, 14, ()),
        ("twilio_key", mk_twilio, 14, ()),
        ("sendgrid_key", mk_sendgrid, 14, ()),
        ("jwt", mk_jwt, 16, ()),
        ("secret_assignment", lambda g: g.password(), 40, ()),
        ("high_entropy", mk_generic, 24, ("secret_assignment",)),
    ]
    cases: list[dict] = []
    for kind, make, count, also in factories:
        for i in range(count):
            value = make(g)
            extra = vendor_extras(g, kind, value, i) if kind not in ("secret_assignment", "high_entropy") else None
            car, fname, text = extra if extra is not None and i % 2 == 0 else carrier(g, kind, value, i)
            acc = list(also)
            if kind not in ("secret_assignment", "high_entropy"):
                acc += ["secret_assignment", "auth_header", "url_password"]
            cases.append({"carrier": car, "file": fname, "text": text,
                          "secrets": [{"kind": kind, "also": sorted(set(acc)), "value": value}]})

    # AWS credential pairs in their native carriers.
    for i in range(12):
        kid, sec = mk_aws_id(g), mk_aws_secret(g)
        if i % 3 == 0:
            text = (f"[default]\naws_access_key_id = {kid}\naws_secret_access_key = {sec}\n"
                    f"\n[{g.word()}]\nregion = eu-west-1\n")
            car, fname = "aws_credentials", "credentials"
        elif i % 3 == 1:
            text = f"User name,Password,Access key ID,Secret access key,Console login link\n" \
                   f"{g.word()},,{kid},{sec},https://{g.num(100000000000, 999999999999)}.signin.aws.amazon.com/console\n"
            car, fname = "aws_csv", "credentials.csv"
        else:
            text = json.dumps({"AccessKey": {"UserName": g.word(), "AccessKeyId": kid, "Status": "Active",
                                             "SecretAccessKey": sec, "CreateDate": g.ts()}}, indent=4) + "\n"
            car, fname = "aws_cli_json", "create-access-key.json"
        cases.append({"carrier": car, "file": fname, "text": text, "secrets": [
            {"kind": "aws_access_key_id", "also": [], "value": kid},
            {"kind": "aws_secret_key", "also": ["secret_assignment", "high_entropy"], "value": sec}]})

    # Private keys: raw, wrapped in YAML, JSON-escaped, in a diff, PGP, encrypted.
    for i in range(30):
        k = i % 6
        if k == 0:
            key = pem(g)
            text = f"$ cat ~/.ssh/deploy_key\n{key}\n$ \n"
            car, fname = "pem_raw", "deploy_key"
        elif k == 1:
            key = pem(g, indent="    ")
            text = (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tls-{g.word()}\ndata:\n  tls.key: |\n"
                    f"    {key}\n")
            car, fname = "pem_yaml", "tls.yaml"
        elif k == 2:
            key = pem(g, sep="\\n")
            doc = ("{\n  \"type\": \"service_account\",\n  \"project_id\": \"" + g.word() + "-" + str(g.num(1000, 9999))
                   + "\",\n  \"private_key_id\": \"" + g.s(HEX, 40) + "\",\n  \"private_key\": \"" + key
                   + "\\n\",\n  \"client_email\": \"deployer@" + g.word() + ".iam.gserviceaccount.com\"\n}\n")
            text, car, fname = doc, "pem_json", "service-account.json"
        elif k == 3:
            label, lines = mk_pem_lines(g)
            body = "\n".join("+" + ln for ln in lines)
            key = f"-----BEGIN {label}-----\n{body}\n+-----END {label}-----"
            text = (f"diff --git a/certs/server.key b/certs/server.key\nnew file mode 100644\nindex 0000000..{g.s(HEX, 7)}\n"
                    f"--- /dev/null\n+++ b/certs/server.key\n@@ -0,0 +1,{len(lines) + 2} @@\n+{key}\n")
            car, fname = "pem_diff", "diff.patch"
        elif k == 4:
            key = pgp_private(g)
            text = f"$ gpg --armor --export-secret-keys {g.word()}@example.com\n{key}\n"
            car, fname = "pem_pgp", "secret.asc"
        else:
            key = encrypted_rsa(g)
            text = f"{key}\n"
            car, fname = "pem_encrypted", "server.key"
        cases.append({"carrier": car, "file": fname, "text": text,
                      "secrets": [{"kind": "private_key", "also": [], "value": key}]})

    # Base64-encoded private keys: kubeconfig client-key-data, Kubernetes TLS secrets.
    for i in range(10):
        key = base64.b64encode((pem(g) + "\n").encode()).decode()
        crt = base64.b64encode((cert(g) + "\n").encode()).decode()
        if i % 2 == 0:
            text = (f"users:\n- name: {g.word()}-admin\n  user:\n    client-certificate-data: {crt}\n"
                    f"    client-key-data: {key}\n")
            car, fname = "kubeconfig", "config"
        else:
            text = (f"apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata:\n  name: {g.word()}-tls\n"
                    f"data:\n  tls.crt: {crt}\n  tls.key: {key}\n")
            car, fname = "k8s_tls", "tls-secret.yaml"
        cases.append({"carrier": car, "file": fname, "text": text,
                      "secrets": [{"kind": "private_key", "also": [], "value": key}]})

    # Passwords in URLs and connection strings.
    for i in range(24):
        user, pw, host = g.pick(USERS), g.password().replace("@", "%40").replace("/", "%2F").replace(":", "%3A"), g.pick(HOSTS)
        pw = pw.replace("#", "%23").replace("?", "%3F")
        k = i % 6
        if k == 0:
            text = f"DATABASE_URL=postgres://{user}:{pw}@{host}:5432/{g.pick(SERVICES)}?sslmode=require\n"
        elif k == 1:
            text = f"{g.ts()} INFO  connecting to mysql://{user}:{pw}@{host}:3306/app\n"
        elif k == 2:
            text = f"  redis:\n    url: redis://:{pw}@{host}:6379/0\n"
        elif k == 3:
            text = f"MONGO_URI=\"mongodb+srv://{user}:{pw}@cluster0.{g.s('abcdefghijklmnopqrstuvwxyz0123456789', 5)}.mongodb.net/?retryWrites=true\"\n"
        elif k == 4:
            text = f"amqp://{user}:{pw}@{host}:5672/%2F\n"
        else:
            text = f"$ git clone https://{user}:{pw}@git.example.com/acme/infra.git\nCloning into 'infra'...\n"
        cases.append({"carrier": "url", "file": "urls.txt", "text": text,
                      "secrets": [{"kind": "url_password", "also": ["secret_assignment"], "value": pw}]})

    # ADO.NET / ODBC / Azure connection strings.
    for i in range(12):
        if i % 2 == 0:
            key = mk_azure(g)
            text = (f"AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName={g.word()}{g.num(10, 99)};"
                    f"AccountKey={key};EndpointSuffix=core.windows.net\"\n")
            cases.append({"carrier": "azure_conn", "file": ".env", "text": text, "secrets": [
                {"kind": "azure_storage_key", "also": ["secret_assignment", "high_entropy"], "value": key}]})
        else:
            pw = g.password().replace(";", "!")
            text = (f"  \"ConnectionStrings\": {{\n    \"Default\": \"Server={g.pick(HOSTS)};Database={g.pick(SERVICES)};"
                    f"User Id={g.pick(USERS)};Password={pw};TrustServerCertificate=True\"\n  }}\n")
            cases.append({"carrier": "adonet_conn", "file": "appsettings.json", "text": text, "secrets": [
                {"kind": "secret_assignment", "also": [], "value": pw}]})

    # Azure storage keys in CLI output and app settings.
    for i in range(10):
        key = mk_azure(g)
        acct = f"{g.word()}{g.num(100, 999)}"
        if i % 2 == 0:
            text = json.dumps({"connectionString": f"DefaultEndpointsProtocol=https;EndpointSuffix=core.windows.net;"
                                                   f"AccountName={acct};AccountKey={key}"}, indent=2) + "\n"
            car, fname = "az_cli", "az.json"
        else:
            text = json.dumps([{"creationTime": g.ts(), "keyName": "key1", "permissions": "FULL", "value": key}],
                              indent=2) + "\n"
            car, fname = "az_keys_list", "keys.json"
        cases.append({"carrier": car, "file": fname, "text": text, "secrets": [
            {"kind": "azure_storage_key", "also": ["secret_assignment", "high_entropy"], "value": key}]})

    # Authorization headers with opaque tokens and Basic credentials.
    for i in range(20):
        if i % 2 == 0:
            cred = base64.b64encode(f"{g.pick(USERS)}:{g.password()}".encode()).decode()
            hdr = f"Authorization: Basic {cred}"
        else:
            cred = mk_bearer(g)
            hdr = f"Authorization: Bearer {cred}"
        text = (f"* Connected to api.{g.word()}.io (203.0.113.{g.num(1, 254)}) port 443\n> GET /v1/me HTTP/1.1\n"
                f"> Host: api.example.io\n> {hdr}\n> User-Agent: curl/8.5.0\n>\n< HTTP/1.1 200 OK\n")
        cases.append({"carrier": "curl_v", "file": "curl.txt", "text": text, "secrets": [
            {"kind": "auth_header", "also": ["high_entropy"], "value": cred}]})

    # Slack webhooks.
    for i in range(12):
        path = mk_slack_webhook(g)
        url = f"https://hooks.slack.com/services/{path}"
        text = g.pick([f"SLACK_WEBHOOK_URL={url}\n", f"  webhook: \"{url}\"\n",
                       f"$ curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deployed\"}}' {url}\nok\n"])
        cases.append({"carrier": "webhook", "file": "notify.sh", "text": text, "secrets": [
            {"kind": "slack_webhook", "also": ["high_entropy", "secret_assignment"], "value": path}]})

    # npm / pypi config files.
    for i in range(8):
        tok = mk_npm(g)
        cases.append({"carrier": "npmrc", "file": ".npmrc", "text": (
            f"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={tok}\nalways-auth=true\n"),
            "secrets": [{"kind": "npm_token", "also": ["secret_assignment"], "value": tok}]})
        tok = mk_pypi(g)
        cases.append({"carrier": "pypirc", "file": ".pypirc", "text": (
            f"[distutils]\nindex-servers =\n    pypi\n\n[pypi]\nusername = __token__\npassword = {tok}\n"),
            "secrets": [{"kind": "pypi_token", "also": ["secret_assignment"], "value": tok}]})

    # Kubernetes Secret with base64 data under secret-named keys (masked by the key name).
    for i in range(10):
        pw = g.password()
        enc = base64.b64encode(pw.encode()).decode()
        key = g.pick(["password", "db-password", "api-key", "token", "client-secret"])
        text = (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {g.pick(SERVICES)}\ntype: Opaque\ndata:\n"
                f"  username: {base64.b64encode(g.pick(USERS).encode()).decode()}\n  {key}: {enc}\n")
        cases.append({"carrier": "k8s_data", "file": "secret.yaml", "text": text, "secrets": [
            {"kind": "secret_assignment", "also": ["high_entropy"], "value": enc}]})

    # An env dump with several secrets at once.
    for i in range(8):
        secs = [("GITHUB_TOKEN", mk_github(g), "github_token"), ("OPENAI_API_KEY", mk_openai(g), "openai_key"),
                ("DB_PASSWORD", g.password(), "secret_assignment"), ("STRIPE_SECRET_KEY", mk_stripe(g), "stripe_key")]
        lines = printenv_lines(g)
        for name, val, _ in secs:
            lines.insert(g.num(0, len(lines)), f"{name}={val}")
        cases.append({"carrier": "printenv_multi", "file": "env.txt", "text": "\n".join(lines) + "\n", "secrets": [
            {"kind": k, "also": ["secret_assignment"], "value": v} for _, v, k in secs]})

    for n, c in enumerate(cases):
        c["id"] = f"pos-{n + 1:04d}"
        for s in c["secrets"]:
            assert s["value"] in c["text"], (c, s)
    return cases


# --------------------------------------------------------------------------- look-alikes


def cert(g: Gen, label: str = "CERTIFICATE", n: int = 18) -> str:
    body = "MII" + g.s(B64, 64 * n - 3 - g.num(0, 50))
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


def ssh_pub(g: Gen) -> str:
    k = g.num(0, 2)
    if k == 0:
        return f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{g.s(B64, 43)} {g.word()}@{g.word()}"
    if k == 1:
        return f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{g.s(B64, 510)}= {g.word()}@{g.word()}-laptop"
    return f"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{g.s(B64, 87)}= {g.word()}@ci"


def ident(g: Gen) -> str:
    k = g.num(0, 3)
    ws = [g.word() for _ in range(g.num(3, 6))]
    if k == 0:
        return "_".join(ws)
    if k == 1:
        return "".join(w.capitalize() for w in ws)
    if k == 2:
        return "_".join(ws).upper()
    return ws[0] + "".join(w.capitalize() for w in ws[1:])


def minified_js(g: Gen) -> str:
    parts = []
    for _ in range(g.num(8, 16)):
        a, b = g.pick("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ$_"), g.pick("etnroaiu")
        parts.append(g.pick([
            f"var {a}={b}.{camel(ident(g))}||{{}};",
            f"function {a}({b},n){{return {b}&&n?{b}.{g.word()}(n):void 0}}",
            f"{a}.prototype.{g.word()}=function(){{this._{g.word()}=!0}};",
            f"if(\"{g.word()}\"===typeof {b})throw new TypeError(\"{g.word()} {g.word()}\");",
            f"{a}[{g.num(0, 999)}]={b}.{camel(ident(g))}({g.num(0, 99)},\"{g.s(HEX, 6)}\");",
            f"module.exports={{{g.word()}:{a},{g.word()}:{b}}};",
        ]))
    return "!function(e,t){\"use strict\";" + "".join(parts) + "}(window,document);"


def lookalikes(g: Gen) -> list[dict]:
    out: list[tuple[str, str, str, str]] = []  # (lookalike, carrier, file, text)

    for i in range(30):
        k = i % 5
        if k == 0:
            text = "".join(f"{g.s(HEX, 7)} {g.pick(['fix', 'feat', 'chore', 'refactor'])}: {g.word()} {g.word()}\n"
                           for _ in range(6))
        elif k == 1:
            text = (f"commit {g.sha1()}\nMerge: {g.s(HEX, 7)} {g.s(HEX, 7)}\nAuthor: {g.word().capitalize()} "
                    f"<{g.word()}@example.com>\nDate:   Sun Nov 29 16:{g.num(10, 59)}:00 2026 +0000\n\n    "
                    f"Merge branch '{g.word()}'\n")
        elif k == 2:
            text = f"{g.sha1()}\n"
        elif k == 3:
            text = (f"diff --git a/src/{g.word()}.py b/src/{g.word()}.py\nindex {g.s(HEX, 12)}..{g.s(HEX, 12)} 100644\n"
                    f"--- a/src/x.py\n+++ b/src/x.py\n")
        else:
            text = f"{g.sha1()}\trefs/heads/main\n{g.sha1()}\trefs/tags/v1.{g.num(0, 9)}.0\n"
        out.append(("git_sha", "git", "git.txt", text))

    for i in range(30):
        k = i % 5
        if k == 0:
            text = "".join(f"{g.s(HEX, 64)}  dist/{g.word()}-{g.num(1, 9)}.{g.num(0, 9)}.tar.gz\n" for _ in range(3))
        elif k == 1:
            text = (f"{g.pick(SERVICES)}: digest: sha256:{g.s(HEX, 64)} size: {g.num(500, 5000)}\n"
                    f"Status: Downloaded newer image for ghcr.io/acme/{g.word()}:latest\n")
        elif k == 2:
            text = f"{g.word()}==1.{g.num(0, 9)}.{g.num(0, 9)} \\\n    --hash=sha256:{g.s(HEX, 64)} \\\n    --hash=sha256:{g.s(HEX, 64)}\n"
        elif k == 3:
            text = f"[[package]]\nname = \"{g.word()}\"\nversion = \"0.{g.num(1, 40)}.{g.num(0, 9)}\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{g.s(HEX, 64)}\"\n"
        else:
            text = f"SHA256 ({g.word()}.zip) = {g.s(HEX, 64)}\nMD5 ({g.word()}.zip) = {g.s(HEX, 32)}\n"
        out.append(("sha256", "digest", "sums.txt", text))

    for i in range(30):
        k = i % 3
        if k == 0:
            text = json.dumps({"level": "info", "ts": g.ts(), "request_id": g.uuid(), "trace_id": g.s(HEX, 32),
                               "span_id": g.s(HEX, 16), "msg": "request completed", "status": 200}) + "\n"
        elif k == 1:
            text = f"metadata:\n  name: {g.word()}-{g.s('bcdfghjklmnpqrstvwxz2456789', 5)}\n  uid: {g.uuid()}\n  resourceVersion: \"{g.num(100000, 9999999)}\"\n"
        else:
            text = f"{g.uuid()}\n{g.uuid().upper()}\n"
        out.append(("uuid", "uuid", "log.json", text))

    for i in range(30):
        k = i % 3
        blob = base64.b64encode(bytes(g.r.getrandbits(8) for _ in range(g.pick([48, 64])))).decode()
        if k == 0:
            text = (f"    \"node_modules/{g.word()}\": {{\n      \"version\": \"{g.num(1, 9)}.{g.num(0, 20)}.{g.num(0, 9)}\",\n"
                    f"      \"resolved\": \"https://registry.npmjs.org/{g.word()}/-/{g.word()}-1.0.0.tgz\",\n"
                    f"      \"integrity\": \"sha512-{blob}\"\n    }},\n")
        elif k == 1:
            text = f"\"{g.word()}@^2.0.0\":\n  version \"2.{g.num(0, 9)}.0\"\n  resolved \"https://registry.yarnpkg.com/x/-/x-2.0.0.tgz#{g.sha1()}\"\n  integrity sha512-{blob}\n"
        else:
            sri = base64.b64encode(bytes(g.r.getrandbits(8) for _ in range(48))).decode()
            text = f"<script src=\"https://cdn.example.com/{g.word()}.min.js\" integrity=\"sha384-{sri}\" crossorigin=\"anonymous\"></script>\n"
        out.append(("integrity_hash", "lockfile", "package-lock.json", text))

    for i in range(20):
        h = base64.b64encode(bytes(g.r.getrandbits(8) for _ in range(32))).decode()
        text = (f"github.com/{g.word()}/{g.word()} v1.{g.num(0, 20)}.{g.num(0, 9)} h1:{h}\n"
                f"github.com/{g.word()}/{g.word()} v0.{g.num(0, 20)}.0/go.mod h1:{base64.b64encode(bytes(g.r.getrandbits(8) for _ in range(32))).decode()}\n")
        out.append(("go_sum", "go.sum", "go.sum", text))

    for i in range(30):
        n = g.pick([60, 120, 300, 900])
        img = "iVBORw0KGgoAAAANSUhEUgAA" + base64.b64encode(bytes(g.r.getrandbits(8) for _ in range(n))).decode()
        k = i % 3
        if k == 0:
            text = f"<img alt=\"{g.word()}\" src=\"data:image/png;base64,{img}\" />\n"
        elif k == 1:
            text = f".icon-{g.word()} {{\n  background-image: url(\"data:image/png;base64,{img}\");\n}}\n"
        else:
            text = f"![{g.word()}](data:image/png;base64,{img})\n"
        out.append(("base64_image", "html", "index.html", text))

    for i in range(30):
        k = i % 3
        if k == 0:
            text = "".join(ssh_pub(g) + "\n" for _ in range(2))
            car, f = "authorized_keys", "authorized_keys"
        elif k == 1:
            text = f"{g.word()}.example.com,{g.num(1, 254)}.0.2.{g.num(1, 254)} {ssh_pub(g).rsplit(' ', 1)[0]}\n"
            car, f = "known_hosts", "known_hosts"
        else:
            text = f"$ cat ~/.ssh/id_ed25519.pub\n{ssh_pub(g)}\n"
            car, f = "ssh_pub", "id.pub"
        out.append(("ssh_public_key", car, f, text))

    for i in range(24):
        k = i % 3
        if k == 0:
            text = f"$ openssl x509 -in server.crt\n{cert(g)}\n"
        elif k == 1:
            text = f"{cert(g, 'PUBLIC KEY', 6)}\n"
        else:
            text = "ca.crt: |\n  " + cert(g).replace("\n", "\n  ") + "\n"
        out.append(("pem_public", "pem", "cert.pem", text))

    examples = [
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "$ aws configure\nAWS Access Key ID [None]: AKIAIOSFODNN7EXAMPLE\nAWS Secret Access Key [None]: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "aws_access_key_id = AKIAI44QH8DHBEXAMPLE\naws_secret_access_key = je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY\n",
        "# Replace with your key, e.g. OPENAI_API_KEY=sk-...your-key-here\n",
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
        "export STRIPE_SECRET_KEY=sk_live_XXXXXXXXXXXXXXXXXXXXXXXX\n",
        "api_key: <YOUR_API_KEY>\n",
        "password: ${DB_PASSWORD}\n",
        "OPENAI_API_KEY=\"your-openai-api-key\"\n",
        "  token: \"{{ .Values.slack.token }}\"\n",
        "SLACK_BOT_TOKEN=xoxb-your-bot-token\n",
        "Authorization: Bearer $ACCESS_TOKEN\n",
        "Authorization: Bearer <token>\n",
        "- run: npm publish\n  env:\n    NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}\n",
        "DATABASE_URL=postgres://user:${DB_PASSWORD}@localhost:5432/app\n",
        "HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
        "password: \"********\"\n",
        "ANTHROPIC_API_KEY=sk-ant-...\n",
        "curl -H \"Authorization: token $GITHUB_TOKEN\" https://api.github.com/user\n",
    ]
    for i in range(40):
        out.append(("example_key", "docs", "README.md", examples[i % len(examples)]))

    for i in range(40):
        k = i % 4
        if k == 0:
            text = f"def {ident(g).lower()}(self, {ident(g).lower()}, {ident(g).lower()}=None):\n    return self.{ident(g).lower()}({ident(g).lower()})\n"
        elif k == 1:
            text = f"public class {ident(g)}{g.pick(['Factory', 'Impl', 'Adapter'])} extends Abstract{ident(g)} implements {ident(g)}Provider {{\n"
        elif k == 2:
            text = f"export const {ident(g).upper()} = '{ident(g).lower()}';\nimport {{ {ident(g)} }} from './{ident(g).lower()}';\n"
        else:
            text = f"tests/test_{ident(g).lower()}.py::test_{ident(g).lower()} PASSED [ {g.num(1, 99)}%]\n"
        out.append(("identifier", "code", "module.py", text))

    for i in range(30):
        k = i % 5
        if k == 0:
            text = f"  File \"/usr/lib/python3.11/site-packages/{g.word()}/{g.word()}_{g.word()}/{ident(g).lower()}.py\", line {g.num(1, 900)}, in {ident(g).lower()}\n"
        elif k == 1:
            text = f"https://github.com/{g.word()}/{g.word()}-{g.word()}/blob/main/src/{g.word()}/{ident(g).lower()}.rs#L{g.num(1, 500)}\n"
        elif k == 2:
            text = f"Successfully installed {g.word()}-{g.num(1, 9)}.{g.num(0, 30)}.{g.num(0, 9)} numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl\n"
        elif k == 3:
            text = f"C:\\Users\\{g.word()}\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\site-packages\\{ident(g).lower()}\\__init__.py\n"
        else:
            text = f"s3://{g.word()}-{g.word()}-artifacts/builds/{g.pick(SERVICES)}/{g.sha1()[:12]}/{ident(g).lower()}.tar.zst\n"
        out.append(("path_url", "path", "paths.txt", text))

    for i in range(24):
        out.append(("minified_js", "js", "app.min.js", minified_js(g) + "\n"))

    for i in range(24):
        k = i % 2
        if k == 0:
            text = "".join(f".{g.word()}-{g.word()} {{ color: #{g.s(HEX, 6)}; background: #{g.s(HEX, 3)}; border-color: #{g.s(HEX, 8)}; }}\n"
                           for _ in range(3))
        else:
            text = "colors: {\n" + "".join(f"  {g.word()}: {{ 50: '#{g.s(HEX, 6)}', 500: '#{g.s(HEX, 6)}', 900: '#{g.s(HEX, 6)}' }},\n" for _ in range(3)) + "}\n"
        out.append(("hex_color", "css", "styles.css", text))

    nonsecret = [
        "PASSWORD_FILE=/run/secrets/db_password\n",
        "token_type: Bearer\nexpires_in: 3600\n",
        "max_tokens: 4096\ntemperature: 0.2\n",
        "{\"usage\": {\"prompt_tokens\": 1532, \"completion_tokens\": 211, \"total_tokens\": 1743}}\n",
        "      secretName: db-credentials\n",
        "def check_password(password: str, hashed: bytes) -> bool:\n    return bcrypt.checkpw(password.encode(), hashed)\n",
        "password = getpass.getpass(\"Password: \")\n",
        "if password != confirm_password:\n    raise ValueError(\"passwords do not match\")\n",
        "token = tokenizer.next_token()\n",
        "export GITHUB_TOKEN=$(gh auth token)\n",
        "        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              name: db\n              key: password\n",
        "PGPASSWORD= psql -h localhost -U postgres\n",
        "GOOGLE_APPLICATION_CREDENTIALS=/home/dev/.config/gcloud/application_default_credentials.json\n",
        "    \"NextToken\": \"eyJNYXJrZXIiOiBudWxsLCAiYm90b190cnVuY2F0ZV9hbW91bnQiOiAxMDB9\"\n",
        "secret_scanning: enabled\nsecret_scanning_push_protection: disabled\n",
        "--password-stdin  Take the password from stdin\n",
        "    password_validators = [MinimumLengthValidator(12), CommonPasswordValidator()]\n",
        "TOKENIZERS_PARALLELISM=false\n",
        "  csrf_token_name: csrftoken\n",
        "Enter passphrase for key '/home/dev/.ssh/id_ed25519':\n",
        "auth: none\n",
        "def login(username, password):\n    session = authenticate(username=username, password=password)\n",
        "@param token the token returned by the previous call\n",
        "kubectl create secret generic db --from-literal=password=$DB_PASSWORD\n",
        "\"password\": null,\n\"token\": \"\",\n",
    ]
    for i in range(50):
        out.append(("nonsecret_assignment", "config", "config.txt", nonsecret[i % len(nonsecret)]))

    for i in range(20):
        text = "\n".join(printenv_lines(g) + benign_env(g, 6)) + "\n"
        out.append(("env_dump", "printenv", "env.txt", text))

    for i in range(20):
        k = i % 4
        if k == 0:
            text = f"arn:aws:iam::{g.num(100000000000, 999999999999)}:role/{ident(g)}\narn:aws:s3:::{g.word()}-{g.word()}/{g.word()}/*\n"
        elif k == 1:
            text = f"{g.word()}-deployment-{g.s('bcdfghjklmnpqrstvwxz2456789', 10)}-{g.s('bcdfghjklmnpqrstvwxz2456789', 5)}   1/1     Running   0          {g.num(1, 59)}m\n"
        elif k == 2:
            text = f"dist/assets/index-{g.s(B62 + '_-', 8)}.js      {g.num(10, 900)}.{g.num(10, 99)} kB │ gzip: {g.num(10, 90)}.{g.num(10, 99)} kB\ndist/main.{g.s(HEX, 20)}.chunk.js\n"
        else:
            text = f"Docker image: ghcr.io/acme/{g.pick(SERVICES)}@sha256:{g.s(HEX, 64)}\nImage ID: {g.s(HEX, 12)}\n"
        out.append(("cloud_ids", "ids", "ids.txt", text))

    cases = []
    for n, (look, car, fname, text) in enumerate(out):
        cases.append({"id": f"neg-{n + 1:04d}", "carrier": car, "file": fname, "text": text, "lookalike": look})
    return cases


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE, help="directory to write the .jsonl files to (default: here)")
    out = ap.parse_args(argv).out
    g = Gen(SEED)
    pos = positives(g)
    neg = lookalikes(g)
    with open(os.path.join(out, "positives.jsonl"), "w", encoding="utf-8") as f:
        for c in pos:
            f.write(json.dumps(c, sort_keys=True) + "\n")
    with open(os.path.join(out, "negatives.jsonl"), "w", encoding="utf-8") as f:
        for c in neg:
            f.write(json.dumps(c, sort_keys=True) + "\n")
    nsec = sum(len(c["secrets"]) for c in pos)
    kinds = sorted({s["kind"] for c in pos for s in c["secrets"]})
    print(f"positives: {len(pos)} cases, {nsec} secrets, {len(kinds)} kinds; negatives: {len(neg)} cases")


if __name__ == "__main__":
    main()
