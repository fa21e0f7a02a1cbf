"""Leak detection on tool output: mask secrets, flag prompt injections.  Pure.

Everything a command prints (stdout, stderr) and every file a file tool reads
passes through :class:`StreamScanner` before the agent sees it.  Secrets are
replaced in place by ``[REDACTED:<kind>]``; every other byte passes through
unchanged, binary included.  Findings record the kind, the stream, the offset in
the original stream and the length, never the value.

How it stays fast (the goal is >= 100 MB/s on mixed text, see docs/leaks.md): the whole
buffer is never run through a regex, because CPython's ``re`` has no multi-literal
prefilter and an alternation costs several times the separate C passes.  A fixed set of
C-speed passes finds *anchors*:

* ``bytes.translate`` + ``bytes.find`` locate runs of >= 20 token characters
  (``[A-Za-z0-9+/_-]``): every vendor token, JWT segment, base64 key and
  high-entropy candidate is such a run;
* one leftmost-first Aho-Corasick pass (``ahocorasick-rs``, imported on the first text
  read; ``bytes.find`` loops without it) on a lower-cased copy locates every literal
  keyword at once: ``pass``, ``secret``, ``token``, ``key``, six prompt-injection anchors,
  ``-----begin`` and ``uthorization`` (see :class:`_Literals`); ``bytes.find`` locates
  ``@`` (URL credentials).

Only around an anchor does a specific, anchored regex run.  A plain token run (hex, a
one-case path or identifier) is dropped by a strip or two, at most one ``fullmatch``,
unless it starts with a vendor prefix; the Shannon-entropy heuristic only looks at runs no
specific pattern claimed.

Streaming: :meth:`StreamScanner.feed` holds back the incomplete last line (at
most :data:`HOLD` bytes, more while a PEM block or a token is still open) and a
little already-emitted left context, so a secret split across two reads is still
masked whole.

The compiled tables are built on first use (module-level cache), so importing
this module costs almost nothing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from .model import LeakFinding

if TYPE_CHECKING:  # pragma: no cover
    from .model import Policy

__all__ = [
    "HOLD",
    "INJECTION_KINDS",
    "KINDS",
    "LeakSettings",
    "StreamScanner",
    "injection_line",
    "is_secret_name",
    "pattern_names",
    "redaction_line",
    "scan_bytes",
]

KINDS: tuple[str, ...] = (
    "private_key",
    "aws_access_key_id",
    "aws_secret_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "slack_webhook",
    "stripe_key",
    "google_api_key",
    "google_oauth_secret",
    "openai_key",
    "anthropic_key",
    "huggingface_token",
    "npm_token",
    "pypi_token",
    "twilio_key",
    "sendgrid_key",
    "azure_storage_key",
    "jwt",
    "url_password",
    "auth_header",
    "secret_assignment",
    "high_entropy",
    "known_secret",
)
"""Every finding kind (also the names accepted in config)."""

INJECTION_KINDS: tuple[str, ...] = (
    "ignore_instructions",
    "new_instructions",
    "role_override",
    "reveal_secrets",
    "fake_tool_call",
)
"""Every prompt-injection kind :attr:`StreamScanner.injections` can hold."""

HOLD = 4096
"""Most bytes of an incomplete last line held back between reads."""

CONTEXT = 320
"""Bytes of already-emitted output kept as left context for the next read."""

MAX_RUN = 8192
"""Token runs longer than this are data blobs, never secrets."""

MAX_PEM = 65536
"""A private-key block longer than this is masked up to here without its end."""

MAX_KNOWN = 65536
"""Known secrets longer than this are ignored (they cannot be held back)."""

BINARY_SNIFF = 512
"""A stream whose first this-many bytes are over 5% control bytes is binary."""

MIN_KNOWN = 8
"""Known secrets shorter than this are ignored (too many false matches)."""

_MIN_RUN = 20


def pattern_names() -> frozenset[str]:
    """Names of every detector, for validating ``[security.leak_detection]`` config."""
    return frozenset(KINDS)


@dataclass(frozen=True)
class LeakSettings:
    """How aggressively output is scanned (``[security.leak_detection]``)."""

    enabled: bool = True
    """False: output passes through untouched (no masking, no injection flags)."""
    sensitivity: float = 0.7
    """0.0-1.0; higher flags more (lower entropy threshold, shorter values)."""
    high_entropy_tokens: bool = True
    """Run the high-entropy token heuristic (kind ``high_entropy``)."""
    disabled_patterns: frozenset[str] = frozenset()
    """Kinds (from :func:`pattern_names`) that are not reported nor masked."""

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.sensitivity) <= 1.0:
            raise ValueError(f"sensitivity must be between 0.0 and 1.0, got {self.sensitivity!r}")
        unknown = set(self.disabled_patterns) - pattern_names()
        if unknown:
            raise ValueError(f"unknown leak pattern name(s): {', '.join(sorted(unknown))}")

    @classmethod
    def from_policy(cls, policy: "Policy") -> "LeakSettings":
        """Settings from ``Policy.leak_detection / leak_sensitivity / leak_high_entropy``."""
        return cls(
            enabled=bool(policy.leak_detection),
            sensitivity=float(policy.leak_sensitivity),
            high_entropy_tokens=bool(policy.leak_high_entropy),
        )


# --------------------------------------------------------------------------- tables


def _table(chars: bytes) -> bytes:
    """A translate table mapping ``chars`` to 1 and every other byte to 0."""
    t = bytearray(256)
    for c in chars:
        t[c] = 1
    return bytes(t)


_ALNUM = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_RUN_CHARS = _ALNUM + b"+/_-"
_DIGITS = b"0123456789"
_HEX_DASH = b"0123456789abcdefABCDEF-"
"""A run of only these is plain (first alternative of ``plain_run``)."""
_LOWER_SEP = b"abcdefghijklmnopqrstuvwxyz_/-"
"""A run of only these is plain (second alternative of ``plain_run``, no digit groups)."""
_LOWER_SEP_DIGITS = _LOWER_SEP + _DIGITS
_DIGIT_MAP = _table(_DIGITS)
_UPPER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = b"abcdefghijklmnopqrstuvwxyz"


class _Engine:
    """Compiled regexes and tables (built once, on first use)."""

    def __init__(self) -> None:
        c = re.compile
        self.run_table = _table(_RUN_CHARS)
        self.run_needle = b"\x01" * _MIN_RUN
        tok = rb"[A-Za-z0-9_\-]"
        end = rb"(?![A-Za-z0-9_\-])"
        # Specific vendor tokens, dispatched on the first three bytes of a run.
        specific: list[tuple[tuple[bytes, ...], str, bytes]] = [
            ((b"AKI", b"ASI"), "aws_access_key_id", rb"A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])"),
            ((b"ghp", b"gho", b"ghu", b"ghs", b"ghr"), "github_token", rb"gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9_])"),
            ((b"git",), "github_token", rb"github_pat_[A-Za-z0-9_]{70,240}(?![A-Za-z0-9_])"),
            ((b"glp", b"gld", b"glr"), "gitlab_token", rb"gl(?:pat|dt|rt)-" + tok + rb"{20,80}" + end),
            ((b"xox",), "slack_token", rb"xox[abposer]-\d[A-Za-z0-9\-]{10,250}(?![A-Za-z0-9\-])"),
            ((b"xap",), "slack_token", rb"xapp-\d-[A-Za-z0-9\-]{20,250}(?![A-Za-z0-9\-])"),
            ((b"sk_", b"rk_"), "stripe_key", rb"[sr]k_(?:live|test)_[A-Za-z0-9]{20,247}(?![A-Za-z0-9])"),
            ((b"AIz",), "google_api_key", rb"AIza[A-Za-z0-9_\-]{35}" + end),
            ((b"GOC",), "google_oauth_secret", rb"GOCSPX-" + tok + rb"{28}" + end),
            ((b"sk-",), "anthropic_key", rb"sk-ant-(?:[a-z]{2,8}\d{2}-)?" + tok + rb"{20,250}" + end),
            ((b"sk-",), "openai_key",
             rb"sk-(?:(?:proj|svcacct|admin|None)-" + tok + rb"{20,250}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"
             rb"|[A-Za-z0-9]{32,100})" + end),
            ((b"hf_",), "huggingface_token", rb"hf_[A-Za-z0-9]{30,60}(?![A-Za-z0-9])"),
            ((b"npm",), "npm_token", rb"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
            ((b"pyp",), "pypi_token", rb"pypi-AgEIcHlwaS5vcmc" + tok + rb"{50,}" + end),
            (tuple(b"AC" + bytes([h]) for h in b"0123456789abcdef")
             + tuple(b"SK" + bytes([h]) for h in b"0123456789abcdef"),
             "twilio_key", rb"(?:AC|SK)[0-9a-f]{32}(?![A-Za-z0-9])"),
            ((b"eyJ",), "jwt", rb"eyJ[A-Za-z0-9_\-]{8,}\.ey[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}" + end),
            # A base64-encoded PEM block (kubeconfig client-key-data, k8s tls.key): checked
            # by decoding its header, see _specific.
            ((b"LS0",), "private_key", rb"LS0tLS1CRUdJTi[A-Za-z0-9+/]{60,}={0,2}(?![A-Za-z0-9+/=])"),
        ]
        self.prefix: dict[bytes, list[tuple[str, re.Pattern[bytes]]]] = {}
        for prefixes, kind, pattern in specific:
            rx = c(pattern)
            for p in prefixes:
                self.prefix.setdefault(p, []).append((kind, rx))
        self.sendgrid = c(rb"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + end)
        self.prefix[b"SG."] = [("sendgrid_key", self.sendgrid)]
        self.vendor_first = frozenset(p[0] for p in self.prefix)
        # Runs that are never secrets, recognised in one call: hex / UUIDs, and one-case
        # words, paths and identifiers with at most two digit groups (api/v1/users/8259).
        self.plain_run = c(
            rb"[0-9a-fA-F\-]+|[a-z_/\-]*(?:[0-9]+[a-z_/\-]+){0,2}[0-9]*|[A-Z_/\-]*(?:[0-9]+[A-Z_/\-]+){0,2}[0-9]*"
        )

        # Assignments to secret-looking names.  ``name_secret`` runs on the lower-cased
        # name; the name must END with the keyword (``password_file`` is not a secret).
        self.name_chars = c(rb"[A-Za-z0-9_.\-]{1,96}")
        self.name_secret = c(
            rb"(?:^|[_.\-]|(?<=[a-z0-9]))(?:"
            rb"pass(?:word|wd|phrase)?|pwd|secret|token|"
            rb"(?:api|private|access|secret|account|master|encryption|signing|auth|client|app|"
            rb"subscription|shared[_.\-]?access|session|service|storage|license|consumer|webhook)[_.\-]?key|"
            rb"apikey|credentials?|auth|client[_.\-]?secret)$"
        )
        self.name_id = c(
            rb"(?:^|[_.\-]|(?<=[a-z]))(?:ids?|uuid|guid|hash|digest|sha\d*|md5|checksum|etag|integrity|commit|"
            rb"revision|rev|version|cursor|marker|next_?token|page_?token|continuation_?token|fingerprint|"
            rb"thumbprint|nonce|salt|ref|oid|objectid|h1)$"
        )
        self.secret_names: dict[bytes, bool] = {}
        self.name_plain_pass = c(rb"(?:^|[_.\-])pass$|pass(?:word|wd|phrase)$")
        self.name_not_secret = c(
            rb"(?:next|page|continuation|sync|resume|cancellation|csrf_?|xsrf_?|lex|parse|"
            rb"max|min|num|total|count|prompt|completion|input|output|cached|public[_.\-]?key)[_.\-]?tokens?$"
            rb"|^(?:old)?pwd$|^(?:no|skip|use|has|is|need|require|requires)[_.\-]?"
        )
        # After the name: closing quote, operator, opening quote, value.
        self.assign_tail = c(
            rb"(?P<q1>[\"']?)(?P<sp1>[ \t]*)(?P<op>=>|:=|==|!=|=|:)(?P<sp2>[ \t]*)"
            rb"(?:\"(?P<dq>(?:[^\"\\\r\n]|\\[^\r\n]){0,512})\""
            rb"|'(?P<sq>[^'\r\n]{0,512})'"
            rb"|(?P<bare>[^\x00-\x20\x7f\"'`,;&<>(){}\[\]=|][^\x00-\x20\x7f\"'`,;<>(){}\[\]|]{0,511}))"
        )
        # Reversed: what precedes a value run, read backwards (quote, op, quote, name).
        self.assign_rev = c(rb"[\"']?[ \t]*(?:>=|=:|=|:)[ \t]*[\"']?([A-Za-z0-9_.\-]{1,96})")
        self.bare_reject = c(
            rb"(?i)(?:none|null|nil|true|false|yes|no|on|off|str|string|bytes|int|bool|float|any|optional|"
            rb"undefined|required|secret|password|token|redacted|hidden|masked|empty|env|"
            rb"\d{1,7})$"
        )
        self.query_next = c(rb"&[A-Za-z_][A-Za-z0-9_.\-]*=")
        self.type_name = c(rb"(?:[A-Z][a-z0-9]+){1,4}$|[a-z]+\[")
        self.plain_ident = c(rb"[A-Za-z_]+$")
        self.ident_value = c(
            rb"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|[a-z][a-z0-9]*(?:_[a-z0-9]+)+$|(?:[A-Z]{0,5}[A-Z][a-z]+){2,}$|"
            rb"[a-z]+(?:[A-Z]{0,5}[A-Z][a-z]+)+$|[a-z]+(?:-[a-z]+){1,2}$|[A-Z][a-z]+(?:-[A-Z][a-z]+)+$|"
            rb"[a-z][a-z0-9]*(?:[.:][a-z][A-Za-z0-9]*)+$"
        )
        self.code_value = c(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$|(?:self|this|os|env|process)\b")

        # URLs with a password, Slack webhooks.
        self.url_pw = c(
            rb"[A-Za-z][A-Za-z0-9+.\-]{0,20}://(?P<user>[^\s:/@\"'<>`]{0,128}):"
            rb"(?P<pw>[^\s/@\"'<>`]{1,256})@(?=[A-Za-z0-9\[\]._\-])"
        )
        self.scheme_rev = c(rb"[A-Za-z0-9+.\-]*[A-Za-z]")
        self.slack_hook = c(rb"://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/\-]{20,200})")
        # Authorization headers.
        self.auth = c(
            rb"uthorization(?P<q1>[\"']?)(?P<sp>[ \t]*)(?P<op>[:=])[ \t]*(?P<q2>[\"']?)"
            rb"(?:(?P<scheme>Bearer|Basic|Token|Bot|OAuth|Digest|Negotiate|NTLM|AWS4-HMAC-SHA256|ApiKey|"
            rb"bearer|basic|token)[ \t]+)?"
            rb"(?P<cred>[^\s\"',;][^\s\"']{3,2048})"
        )
        # PEM blocks.
        self.pem_begin = c(rb"-----BEGIN (?P<label>[A-Z0-9 ]{1,40})-----")
        sep = rb"(?:\r?\n|\\r\\n|\\n|[ \t\"',+])++"
        line = rb"(?:[A-Za-z][A-Za-z\-]{1,30}: [^\r\n\\]{0,200}|[A-Za-z0-9+/=]{1,128}+)"
        self.pem_body = c(rb"(?:" + sep + line + rb")*+(?:" + sep + rb")?+")
        self.pem_end = c(rb"-----END [A-Z0-9 ]{1,40}-----")

        # High-entropy heuristic helpers.
        self.seg_split = c(rb"[/_.\-+]+")
        self.cap_word = c(rb"[A-Z][a-z]{2,}")
        self.letter_pair = c(rb"(?=[a-z]{2})")
        self.common_pair = c(rb"(?=" + b"|".join(_BIGRAMS) + rb")")
        self.class_runs = c(rb"[A-Z]+|[a-z]+|[0-9]+|[^A-Za-z0-9]+")
        self.digest_prefix = c(rb"(?:sha(?:1|224|256|384|512)|md5|blake2b?|xxh\d*)[-_:]", re.I)
        self.aws_context = c(rb"(?i)aws|secret_?access|secretaccesskey|A[KS]IA[A-Z0-9]{16}")

        # Prompt injection (run on the lower-cased buffer around an anchor).
        ws = rb"[\s*_`\"'>#]+"
        self.inj: list[tuple[bytes, str, re.Pattern[bytes], int]] = [
            (b"instruction", "ignore_instructions", c(
                rb"(?:ignore|disregard|forget|override|skip|bypass|drop)" + ws
                + rb"(?:(?:all|any|of|the|your|my|these|those|every|previous|prior|above|earlier|preceding|"
                  rb"former|system|original|existing|initial|developer|safety)" + ws + rb"){0,5}"
                + rb"instructions?"), 120),
            (b"instruction", "new_instructions", c(
                rb"(?:new|updated|revised|real|actual|true|important|override|system)" + ws + rb"instructions?"
                + rb"[\s*_`\"']*[:\-]"), 60),
            (b"disregard", "ignore_instructions", c(
                rb"disregard" + ws + rb"(?:(?:all|any|of|the|everything|your|previous|prior|earlier)" + ws
                + rb"){0,3}(?:above|previous|prior|earlier|preceding|instructions|rules|context|guidelines)"), 0),
            (b"you are now", "role_override", c(
                rb"you are now" + ws + rb"(?:(?:a|an|the|in|my|no longer)" + ws + rb")?"
                + rb"(?:dan\b|jailbroken|unrestricted|unfiltered|uncensored|evil|free\b|developer mode|"
                  rb"god mode|root\b|admin|a different|an? (?:new|unrestricted|evil|rogue|malicious)|"
                  rb"(?:[a-z\-]+" + ws + rb")?(?:assistant|ai|agent|model|bot|chatbot|hacker|persona)\b)"), 0),
            (b"reveal", "reveal_secrets", c(
                rb"reveal" + ws + rb"(?:(?:me|us|your|the|all|any|its|their|full|complete|entire|hidden|original)"
                + ws + rb"){0,3}"
                + rb"(?:system" + ws + rb"prompt|secrets?|api" + ws + rb"?keys?|keys|passwords?|credentials|"
                  rb"tokens?|instructions|env(?:ironment)?" + ws + rb"variables|private" + ws + rb"keys?)"), 0),
            (b"tool_", "fake_tool_call", c(
                rb"\"tool_(?:use|calls?|result)\"|</?tool_(?:call|use|result)s?>|\"type\"\s*:\s*\"tool_use\""), 30),
            (b"function_call", "fake_tool_call", c(
                rb"\"function_calls?\"\s*:|</?(?:antml:)?function_calls>"), 20),
        ]
        anchors: dict[bytes, set[str]] = {}
        for a, kind, _, _ in self.inj:
            anchors.setdefault(a, set()).add(kind)
        self.inj_anchors = tuple((a, frozenset(k)) for a, k in anchors.items())


_ENGINE: _Engine | None = None


def _engine() -> _Engine:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = _Engine()
    return _ENGINE


# --------------------------------------------------------------------------- helpers


def _shannon(tok: bytes) -> float:
    n = len(tok)
    return -sum(k / n * math.log2(k / n) for k in Counter(tok).values())


_ENTROPY_TABLE = ((16, 3.75), (20, 4.022), (24, 4.252), (28, 4.423), (32, 4.539), (40, 4.772), (48, 4.929),
                  (64, 5.16), (80, 5.32), (100, 5.446), (128, 5.562), (192, 5.704), (256, 5.773), (512, 5.867))
"""Median Shannon entropy (bits/char) of a random base62 token, by length (simulated)."""


def _expected_entropy(length: int) -> float:
    """Median entropy of a random base62 token of ``length`` (linear interpolation)."""
    prev_l, prev_h = _ENTROPY_TABLE[0]
    if length <= prev_l:
        return prev_h
    for l, h in _ENTROPY_TABLE[1:]:
        if length <= l:
            return prev_h + (h - prev_h) * (length - prev_l) / (l - prev_l)
        prev_l, prev_h = l, h
    return prev_h


def is_secret_name(name: str | bytes) -> bool:
    """True when a variable/key name looks like it holds a secret (``DB_PASSWORD``,
    ``apiKey``, ``client_secret``); false for ``PASSWORD_FILE``, ``PWD``, ``max_tokens``.

    Useful to pick which scrubbed environment values to pass as known secrets.
    """
    raw = name.encode() if isinstance(name, str) else name
    return _secret_name(_engine(), raw.lower().strip(b".-"))


def _secret_name(e: "_Engine", lname: bytes) -> bool:
    """The lower-cased name ends like a secret's and is not a known non-secret.

    Remembered per name (a few regex searches each; the names at ``key``/``token``/``pass``
    anchors in code and logs repeat: ``key``, ``self.token``, ``password``)."""
    known = e.secret_names.get(lname)
    if known is None:
        known = bool(lname) and not e.name_not_secret.search(lname) and e.name_secret.search(lname) is not None \
            and not (lname.endswith(b"pass") and not e.name_plain_pass.search(lname))  # bypass, compass
        if len(e.secret_names) >= 4096:
            e.secret_names.clear()
        e.secret_names[lname] = known
    return known


def _placeholder(value: bytes) -> bool:
    """Values that are clearly not secrets: references, templates, masks, examples."""
    if not value:
        return True
    c0 = value[:1]
    if c0 == b"$" and len(value) > 1 and (value[1:2].isalpha() or value[1:2] in b"{(_"):
        return True  # $VAR, ${VAR}, $(cmd)
    if c0 == b"%" and (value[1:2] in b"({s" or value.endswith(b"%")):
        return True  # %(name)s, %{var}, %VAR%
    if c0 == b"#" or b"..." in value or b"***" in value or value.startswith((b"{{", b"***", b"/", b"./", b"../", b"~/")):
        return True
    if (c0 == b"<" and value.endswith(b">")) or (c0 == b"[" and value.endswith(b"]")) or \
            (c0 == b"{" and value.endswith(b"}")):
        return True  # <your-key>, [REDACTED], {password}
    if value.count(value[:1]) == len(value):  # "********", "xxxxxxxx"
        return True
    low = value.lower()
    if b"example" in low or b"xxxxxxxx" in low or b"your-" in low or b"your_" in low or low.startswith(b"redacted"):
        return True
    return False


class _Scan:
    """One scan of a buffer: anchors -> candidate spans, pending position, injections."""

    __slots__ = ("buf", "low", "n", "binary", "final", "settings", "e", "spans", "zones", "pending", "injections",
                 "hits", "min_value", "entropy_margin", "min_ratio", "min_generic", "max_wordy", "max_capwords")

    def __init__(self, buf: bytes, final: bool, settings: LeakSettings, binary: bool = False,
                 flagged: Iterable[str] = ()) -> None:
        self.buf = buf
        self.n = len(buf)
        self.binary = binary
        self.low = buf if self.binary else buf.lower()
        self.final = final
        self.settings = settings
        self.e = _engine()
        self.spans: list[tuple[int, int, str]] = []
        self.zones: list[tuple[int, int]] = []
        self.pending = self.n
        self.injections: set[str] = set(flagged)
        self.hits: list[list[int]] = []
        s = settings.sensitivity
        self.min_value = 4 if s >= 0.5 else (6 if s >= 0.25 else 8)
        # Entropy margin below the random-token median: larger margin flags more.
        self.entropy_margin = 0.15 + 0.6 * s
        self.max_wordy = 0.45 + 0.25 * s
        self.max_capwords = 0.65 + 0.15 * s
        self.min_ratio = 0.55 - 0.25 * s
        self.min_generic = _MIN_RUN if s >= 0.5 else (24 if s >= 0.25 else 32)

    # ------------------------------------------------------------ driver

    def run(self, known: Sequence[bytes]) -> None:
        if known:
            self._known(known)
        if not self.binary:
            # Every literal anchor of a text read, found in one pass over the lower-cased copy.
            self.hits = _literals().find_all(self.low)
        self._pem()
        if not self.binary:
            self._urls()
            self._auth()
            self._keywords()
        self._runs()
        if not self.binary:
            self._injections()

    def _add(self, start: int, end: int, kind: str) -> None:
        if end > start and kind not in self.settings.disabled_patterns:
            self.spans.append((start, end, kind))

    def _hold(self, pos: int) -> None:
        if pos < self.pending:
            self.pending = pos

    # ------------------------------------------------------------ known secrets

    def _known(self, known: Sequence[bytes]) -> None:
        buf, n = self.buf, self.n
        longest = 0
        for k in known:
            L = len(k)
            i = buf.find(k)
            while i >= 0:
                self._add(i, i + L, "known_secret")
                i = buf.find(k, i + L)
            if L > longest and (b"\n" in k or L > HOLD // 2):
                longest = L
        if longest and not self.final:
            # A secret that may span lines, or is longer than the held-back line, could
            # straddle the cut: keep enough bytes to see it whole next time.
            self._hold(max(0, n - longest + 1))

    # ------------------------------------------------------------ PEM private keys

    def _pem(self) -> None:
        buf, e, n = self.buf, self.e, self.n
        if self.binary:
            starts = _find_all(buf, _PEM_ANCHOR)
        else:
            starts = [i for i in self.hits[_PEM_INDEX] if buf.startswith(_PEM_ANCHOR, i)]
        nxt = 0
        for i in starts:
            if i < nxt:
                continue
            m = e.pem_begin.match(buf, i)
            if m is None:
                nxt = i + 10
                continue
            private = b"PRIVATE KEY" in m.group("label")
            body_end = e.pem_body.match(buf, m.end(), min(n, m.end() + MAX_PEM)).end()
            em = e.pem_end.match(buf, body_end)
            if em is not None:
                end = em.end()
            elif not self.final and buf.find(b"\n", body_end) < 0 and n - i < MAX_PEM:
                self._hold(i)  # the block (or its END line) is still arriving
                return
            else:
                end = body_end
            body = buf[m.end():end]
            if private and len(body) - len(body.translate(None, _B64_CHARS)) >= 40:
                self._add(i, end, "private_key")
            else:
                self.zones.append((i, end))
            nxt = max(end, i + 10)

    # ------------------------------------------------------------ URLs

    def _urls(self) -> None:
        """``scheme://user:password@host``: anchored on ``@`` (memchr-fast), then ``://``."""
        buf, e = self.buf, self.e
        clear = 0  # no "://" starts in buf[..clear - 2] within reach of later "@"s
        i = buf.find(b"@")
        while i >= 0:
            lo = max(0, i - 400, clear - 2)
            k = buf.rfind(b"://", lo, i)
            clear = i
            if k > 0 and buf.find(b"\n", k, i) < 0:
                sm = e.scheme_rev.match(buf[max(0, k - 20):k][::-1])
                j = k - (sm.end() if sm is not None else 0)
                m = e.url_pw.match(buf, j) if j < k else None
                if m is not None and m.end() == i + 1:
                    pw = m.group("pw")
                    if not _placeholder(pw) and len(pw) >= self.min_value and pw.lower() not in _PW_WORDS:
                        a, b = m.start("pw"), m.end("pw")
                        self._add(a, b, self._vendor_kind(a, b, "url_password"))
            i = buf.find(b"@", i + 1)

    # ------------------------------------------------------------ Authorization headers

    def _auth(self) -> None:
        buf, e, n = self.buf, self.e, self.n
        for i in self.hits[_AUTH_INDEX]:
            if not buf.startswith(_AUTH_ANCHOR, i):
                continue  # found on the lower-cased copy: the header name is matched as written
            m = e.auth.match(buf, i) if i > 0 and buf[i - 1] in b"Aa" and (
                i < 2 or buf[i - 2] not in _ALNUM_SET) else None
            if m is not None:
                cred = m.group("cred")
                scheme = m.group("scheme")
                quoted = bool(m.group("q2"))
                code = (m.group("q1") or (m.group("op") == b"=" and m.group("sp"))) and not quoted
                if m.end() >= n and not self.final:
                    self._hold(m.start("cred"))
                elif not code and not _placeholder(cred) and len(cred) >= self.min_value and (
                        scheme is not None or quoted or not self.e.plain_ident.match(cred)):
                    start, end = m.start("cred"), m.end("cred")
                    if scheme is None or scheme.lower() in (b"digest", b"aws4-hmac-sha256"):
                        stop = buf.find(m.group("q2"), start) if quoted else -1
                        end = stop if stop >= 0 else _line_end(buf, start)
                    self._add(start, end, self._vendor_kind(start, end, "auth_header"))

    # ------------------------------------------------------------ keyword assignments

    def _keywords(self) -> None:
        """Names ending in pass(word)/secret/token/key followed by an operator or a quote."""
        low, buf, n = self.low, self.buf, self.n
        after = _AFTER_NAME
        chars = self.e.name_chars
        for kw, starts in zip(_KEYWORDS, self.hits, strict=False):
            k = len(kw)
            j = 0
            for i in starts:
                if i < j:
                    continue
                j = i + k
                if k == 4 and kw == b"pass":
                    if low.startswith(b"word", j):
                        j += 4
                    elif low.startswith(b"wd", j):
                        j += 2
                    elif low.startswith(b"phrase", j):
                        j += 6
                if j < n and buf[j] in after:
                    back = buf[max(0, i - 96):i][::-1]
                    mb = chars.match(back)
                    self._assignment(i - (mb.end() if mb is not None else 0), j)

    def _assignment(self, name_start: int, name_end: int) -> bool:
        """``buf[name_start:name_end]`` is a name; if it is a secret-looking name assigned a
        literal value, record the value as a span.  True when a span (or a hold) was made.

        Config and env syntax is told apart from code: ``DB_PASSWORD=x`` (dotenv,
        shell, CLI), ``password: x`` as the first key of a line (YAML, headers),
        ``"password": "x"`` (JSON), ``password = "x"`` (TOML, code with a literal) and
        ``password = x1`` to the end of the line (INI) count; ``password = get()``,
        ``f(password=password)``, ``password: str`` and prose (``first pass: ...``) do not.
        """
        buf, e = self.buf, self.e
        lname = buf[name_start:name_end].lower().strip(b".-")
        if not _secret_name(e, lname):
            return False
        m = e.assign_tail.match(buf, name_end)
        if m is None:
            if not self.final and self.n - name_end < 64 and buf.find(b"\n", name_end) < 0:
                self._hold(name_start)
            return False
        op = m.group("op")
        if op in (b"==", b"!="):
            return False
        before = buf[name_start - 1:name_start] if name_start > 0 else b"\n"
        if op == b":" and before not in _BEFORE_COLON_NAME:
            return False  # AWS::Service::ApiKey, x.token: ...
        group = "dq" if m.group("dq") is not None else ("sq" if m.group("sq") is not None else "bare")
        vstart, vend = m.start(group), m.end(group)
        value = buf[vstart:vend]
        spaced = bool(m.group("sp1") or m.group("sp2"))
        if group == "bare":
            if not self.final and vend >= self.n:
                self._hold(vstart)
                return True
            if op in (b"=>", b":="):
                return False
            nxt = buf[vend:vend + 1]
            if nxt in (b"(", b"[", b")", b",", b"}", b"]", b"|"):
                return False
            if e.bare_reject.match(value) or e.code_value.match(value):
                return False
            if op == b":":
                # YAML / header: a space after the colon and the name first on its line.
                if not m.group("sp2") and not m.group("q1"):
                    return False
                if not self._first_on_line(name_start):
                    return False
                if e.type_name.match(value):
                    return False  # password: SecretStr
            elif spaced:
                # ``name = value`` unquoted: INI only when it runs to the end of the line and
                # is not an identifier (``password = default_password`` is code).
                if not _rest_blank(buf, vend) or e.plain_ident.match(value):
                    return False
            elif value.lower() == lname:
                return False  # f(password=password
            if _placeholder(value):
                return False
            q = e.query_next.search(value)
            if q is not None:
                value = value[:q.start()]  # ?user=u&password=p&next=1
            value = value.rstrip(b".")
            vend = vstart + len(value)
        else:
            if op == b":" and not m.group("q1") and not self._first_on_line(name_start):
                return False
            if value.count(b" ") >= 2 and not lname.endswith(b"phrase"):
                return False  # a sentence, not a secret
        if len(value) < self.min_value or _placeholder(value) or e.bare_reject.match(value):
            return False
        if e.ident_value.match(value) and not (lname.endswith(b"phrase") and value.count(b"-") >= 3):
            return False  # SECRET_KEY = 'AWS_SECRET_ACCESS_KEY', token: session-token
        if lname == b"pass" and value.isalpha():
            return False  # 'pass': 'bandpass'

        self._add(vstart, vend, self._value_kind(lname, vstart, vend))
        return True

    def _first_on_line(self, name_start: int) -> bool:
        """True when only indentation / list / diff / quote marks precede the name on its line."""
        buf = self.buf
        ls = buf.rfind(b"\n", max(0, name_start - 200), name_start) + 1
        if ls == 0 and name_start >= 200:
            return False
        return not buf[ls:name_start].strip(_LINE_LEAD)

    def _vendor_kind(self, start: int, end: int, default: str) -> str:
        """The vendor kind when a vendor token starts at ``start`` and ends by ``end``."""
        if self.buf[start:start + 3] in self.e.prefix:
            hit = self._specific(start, self.e.prefix)
            if hit is not None and hit[1] <= end:
                return hit[2]
        return default

    def _value_kind(self, lname: bytes, vstart: int, vend: int) -> str:
        """Kind of an assigned secret value: the vendor's when it is a vendor token."""
        if self.buf.startswith(b"-----BEGIN", vstart):
            return "private_key"
        kind = self._vendor_kind(vstart, vend, "")
        if kind:
            return kind
        if b"aws" in lname or b"secret_access" in lname or b"secretaccess" in lname:
            return "aws_secret_key"
        if lname.endswith((b"accountkey", b"account_key", b"sharedaccesskey", b"shared_access_key")):
            return "azure_storage_key"
        return "secret_assignment"

    # ------------------------------------------------------------ token runs

    def _runs(self) -> None:
        """Every run of >= 20 token characters: vendor token, named value, or generic."""
        buf, n, e = self.buf, self.n, self.e
        tr = buf.translate(e.run_table)
        find = tr.find
        needle = e.run_needle
        prefix = e.prefix
        final = self.final
        settings = self.settings
        # Binary streams are full of symbol names and packed data: only vendor patterns,
        # private keys and known secrets are looked for there.
        generic = (settings.high_entropy_tokens and "high_entropy" not in settings.disabled_patterns
                   and not self.binary)
        zones = self.zones
        claimed = sorted([(a, b, "") for a, b in zones] + self.spans)
        ci = 0
        nclaimed = len(claimed)
        last_end = 0
        digits = _DIGITS
        vendor_first = e.vendor_first
        plain = e.plain_run.fullmatch
        digit_map = _DIGIT_MAP
        is_plain = False
        low = self.low
        value_lead = _VALUE_LEAD
        pos = find(needle)
        while pos >= 0:
            s = pos
            end = find(b"\x00", s + _MIN_RUN)
            if end < 0:
                end = n
            pos = find(needle, end)
            if end < n:
                # Fast path: hex digests, UUIDs, one-case paths and identifiers, i.e. runs
                # ``plain_run`` matches.  Exact shortcuts for the commonest, cheaper than the
                # regex: only hex and dashes; only lower-case letters, digits and ``_/-``
                # with at most two digit groups (three when it ends in one), as ``plain_run``'s
                # lower-case branch, which is then the only one that can match.
                tok = buf[s:end]
                if not tok.strip(_HEX_DASH):
                    is_plain = True
                elif not tok.strip(_LOWER_SEP_DIGITS):
                    dm = tok.translate(digit_map)
                    groups = dm.count(b"\x00\x01") + dm[0]
                    is_plain = groups <= 2 or (groups == 3 and dm[-1] == 1)
                else:
                    is_plain = plain(tok) is not None
                if is_plain and (tok[0] not in vendor_first or tok[:3] not in prefix):
                    continue
                checked = True  # not plain, or a vendor prefix
            else:
                checked = False
            if s < last_end or end - s > MAX_RUN:
                continue
            if end >= n and not final:
                self._hold(s)
                break
            if nclaimed:
                while ci < nclaimed and claimed[ci][1] <= s:
                    ci += 1
                if ci < nclaimed and claimed[ci][0] <= s:
                    continue
            s0 = s
            if buf[s] == 47:  # leading "/" of a path or URL
                while buf[s] == 47 and end - s > _MIN_RUN:
                    s += 1
            # 1. vendor tokens by prefix (also right after "SG." and after a "/" in a URL path)
            hit = None
            if buf[s] in vendor_first and buf[s:s + 3] in prefix:
                hit = self._specific(s, prefix)
            if hit is None and (s != s0 or not checked or is_plain) and plain(buf, s, end) is not None:
                continue  # hex digests, UUIDs, lower/upper-case paths and identifiers
            if hit is None and s >= 3 and buf[s - 1] == 46 and buf[s - 3:s] == b"SG.":
                m = e.sendgrid.match(buf, s - 3)
                if m is not None:
                    hit = (s - 3, m.end(), "sendgrid_key")
            if hit is None:
                k = buf.find(b"/", s, end)
                if k >= 0 and s >= 12 and buf.startswith(b"hooks.slack.com/", s - 12):
                    m = e.slack_hook.match(buf, s - 15)
                    if m is not None:
                        hit = (m.start("s"), m.end("s"), "slack_webhook")
                while k >= 0 and hit is None:
                    if end - k > _MIN_RUN and buf[k + 1:k + 4] in prefix:
                        hit = self._specific(k + 1, prefix)
                    k = buf.find(b"/", k + 1, end)
            if hit is not None:
                a, b, kind = hit
                if b >= n and not final:
                    self._hold(a)
                    break
                if not _placeholder_token(buf[a:b]):
                    self._add(a, b, kind)
                last_end = b
                continue
            tok = buf[s:end]
            # 2. value of ``auth`` / ``credentials`` / ``pwd`` names (other secret names have
            #    keyword anchors of their own)
            if s > 2 and buf[s - 1] in value_lead:
                lw = low[s - 40 if s > 40 else 0:s]
                if (b"auth" in lw or b"cred" in lw or b"pwd" in lw) and self._run_assignment(s, end) > 0:
                    last_end = end
                    continue
            if not generic:
                continue
            L = end - s
            nd = L - len(tok.translate(None, digits))
            if nd == 0 and (L < 32 or tok.islower() or tok.isupper()):
                continue  # identifiers without digits
            # 3. generic high-entropy token
            kind = self._generic(s, end, tok, nd, s0)
            if kind is not None:
                if buf[end:end + 1] == b"=":  # base64 padding belongs to the token
                    end += 2 if buf[end + 1:end + 2] == b"=" else 1
                self._add(s, end, kind)
                last_end = end

    def _specific(self, s: int, prefix: dict[bytes, list[tuple[str, re.Pattern[bytes]]]]) -> tuple[int, int, str] | None:
        handlers = prefix.get(self.buf[s:s + 3])
        if handlers is None:
            return None
        if s > 0 and self.buf[s - 1] in _ALNUM_SET:
            return None
        for kind, rx in handlers:
            m = rx.match(self.buf, s)
            if m is not None:
                if kind == "private_key" and b"PRIVATE KEY" not in _b64decode(self.buf[s:s + 80]):
                    continue  # a base64 certificate or public key
                return (s, m.end(), kind)
        return None

    def _run_assignment(self, s: int, end: int) -> int:
        """1 when the run at ``s`` is the value of a secret-looking ``NAME op`` (masked), else 0."""
        back = self.buf[max(0, s - 128):s][::-1]
        m = self.e.assign_rev.match(back)
        if m is None:
            return 0
        return 1 if self._assignment(s - m.end(1), s - m.start(1)) else 0

    def _generic(self, s: int, end: int, tok: bytes, nd: int, s0: int) -> str | None:
        """Classify an unclaimed run: ``aws_secret_key``, ``high_entropy`` or None.

        Cheap tests first; Shannon entropy, English-bigram wordiness, a base64 decode
        and the look-behind context only for the few runs that survive them."""
        buf, e = self.buf, self.e
        L = end - s
        if L < self.min_generic or L > 512 or tok.startswith((b"AAAA", b"_Z", b"__Z", b"_GLOBAL_")):
            return None  # ssh public keys, C++ mangled names
        if tok[0] == 78 and 48 <= tok[1] <= 57:
            return None  # N4llvm2cl15OptionValue...: a mangled nested name
        slash = tok.find(b"/")
        if slash >= 0:
            first = tok[:slash]
            if buf[s - 1:s] in (b".", b":") or (slash >= 2 and first.isalpha() and first.islower()):
                return None  # a URL path or a relative path: example.org/2012/conf, role/AWS-...
        nu = L - len(tok.translate(None, _UPPER))
        nl = L - len(tok.translate(None, _LOWER))
        classes = (nd > 0) + (nu > 0) + (nl > 0)
        if classes < 2 or (nu + nl) * 3 < L:
            return None
        nsep = L - nd - nu - nl
        if nsep >= 2 and max(map(len, e.seg_split.split(tok))) <= 10:
            return None  # slugs and generated names: web-7d4b9c8f6-x2k9p, TLS_AES_128_GCM
        if len(e.class_runs.findall(tok)) < L * self.min_ratio:
            return None
        if _shannon(tok) < _expected_entropy(L) - self.entropy_margin:
            return None
        low = tok.lower()
        pairs = len(e.letter_pair.findall(low))
        if pairs >= 6 and len(e.common_pair.findall(low)) >= pairs * self.max_wordy:
            return None  # made of words: PyUnicode_DecodeFSDefaultAndSize, Amazon...Policy_v2
        if sum(map(len, e.cap_word.findall(tok))) >= L * self.max_capwords:
            return None  # CamelCase with digits: CrtS3SigV4AsymQueryAuth
        if b"example" in low or b"xxxxxx" in low or e.digest_prefix.match(tok):
            return None
        before = buf[max(0, s0 - 16):s0]
        if before.endswith((b"base64,", b"base64:")) or before.endswith(_DIGEST_LEADS):
            return None  # data URIs, integrity hashes, go.sum
        if L in (64, 76) and s > 0 and buf[s - 1] == 10 and end < self.n and buf[end] in (10, 13):
            if self._wrapped_block(s, end):
                return None  # a line of wrapped base64 (certificate, encoded file)
        if _base64_text(tok):
            return None  # base64 of readable text (test data, encoded config), not a key
        if buf[s - 1:s] in (b"=", b":", b'"', b"'", b" ") and self._named_id(s):
            return None  # NextToken=..., "etag": "...", checksum: ...
        if L == 40 and nsep == tok.count(b"/") + tok.count(b"+"):
            if e.aws_context.search(buf, max(0, s - 300), s):
                return "aws_secret_key"
        return "high_entropy"

    def _named_id(self, s: int) -> bool:
        """True when the value at ``s`` is assigned to a name saying id/digest/cursor."""
        back = self.buf[max(0, s - 128):s][::-1]
        m = self.e.assign_rev.match(back)
        return m is not None and self.e.name_id.search(m.group(1)[::-1].lower()) is not None

    def _wrapped_block(self, s: int, end: int) -> bool:
        """True when the line before or after is also a full base64 line of the same width."""
        buf = self.buf
        L = end - s
        prev_start = buf.rfind(b"\n", 0, s - 1) + 1
        if s - 1 - prev_start == L:
            return True
        nxt = end + (2 if buf[end] == 13 else 1)
        nxt_end = buf.find(b"\n", nxt)
        if nxt_end < 0:
            return False
        if buf[nxt_end - 1] == 13:
            nxt_end -= 1
        return nxt_end - nxt == L or (0 < nxt_end - nxt < L and buf[nxt_end + 1:nxt_end + 6] == b"-----")

    # ------------------------------------------------------------ prompt injection

    def _injections(self) -> None:
        low = self.low
        found = self.injections
        for (anchor, kinds), starts in zip(self.e.inj_anchors, self.hits[len(_KEYWORDS):], strict=False):
            if kinds <= found:
                continue  # everything this anchor can show is already flagged for the stream
            for i in starts:
                for a, kind, rx, back in self.e.inj:
                    if a != anchor or kind in self.injections:
                        continue
                    lo = max(0, i - back)
                    if rx.search(low, lo, min(self.n, i + 160)):
                        self.injections.add(kind)


_KEYWORDS = (b"pass", b"secret", b"token", b"key")
"""Name endings searched for (lower-cased) by :meth:`_Scan._keywords`."""

_PEM_ANCHOR = b"-----BEGIN"
_AUTH_ANCHOR = b"uthorization"
_PEM_INDEX = -2
_AUTH_INDEX = -1
"""Positions of the PEM and header anchors in :attr:`_Literals.patterns` (searched lower-cased,
then checked as written)."""


def _find_all(hay: bytes, lit: bytes) -> list[int]:
    """Starts of the non-overlapping occurrences of ``lit``, left to right (``bytes.find``)."""
    out = []
    k = len(lit)
    i = hay.find(lit)
    while i >= 0:
        out.append(i)
        i = hay.find(lit, i + k)
    return out


class _Literals:
    """Every literal anchor of a text read, found in one pass over the lower-cased copy.

    The patterns are the names' endings (``pass secret token key``), the prompt-injection
    anchors, ``-----begin`` and ``uthorization``.  :meth:`find_all` returns, per pattern, the
    starts a ``bytes.find`` loop over that pattern alone gives (non-overlapping, left to
    right), so callers behave exactly as with one ``find`` pass per literal.

    With ``ahocorasick-rs`` the search is one leftmost-first Aho-Corasick pass (its SIMD
    prefilter, ~0.3 ms/MB here against ~6.7 ms/MB for the twelve ``find`` passes).  A
    leftmost-first search does not report a match that starts inside an earlier one; no
    pattern contains another, so such a match overlaps the earlier one's end (``passecret``,
    ``secretoken``, ``disregardisregard``) and is recovered by checking, after each match,
    the patterns whose start is a suffix of it.  Without the package each pattern gets its
    ``find`` loop (same result, slower)."""

    def __init__(self, patterns: Sequence[bytes]) -> None:
        self.patterns = tuple(patterns)
        for a in self.patterns:
            for b in self.patterns:
                if a != b and a in b:  # pragma: no cover - a table error
                    raise ValueError(f"literal {a!r} is inside {b!r}")
        # borders[p]: (q, L) where the last L bytes of pattern p are the first L of pattern q.
        self.borders: list[tuple[tuple[int, int], ...]] = [
            tuple((q, L) for q, b in enumerate(self.patterns) for L in range(1, min(len(a), len(b)))
                  if a[len(a) - L:] == b[:L])
            for a in self.patterns
        ]
        try:
            import ahocorasick_rs
        except ImportError:  # pragma: no cover - the dependency is declared; stay correct without it
            self.ac = None
        else:
            self.ac = ahocorasick_rs.BytesAhoCorasick(self.patterns, matchkind=ahocorasick_rs.MatchKind.LeftmostFirst)

    def find_all(self, hay: bytes) -> list[list[int]]:
        """Per pattern, the starts of its non-overlapping occurrences in ``hay``, ascending."""
        if self.ac is None:
            return [_find_all(hay, p) for p in self.patterns]
        pats, borders = self.patterns, self.borders
        out: list[list[int]] = [[] for _ in pats]
        hits = self.ac.find_matches_as_indexes(hay)
        if not hits:
            return out
        missed = []
        for p, s, e in hits:
            out[p].append(s)
            if borders[p]:
                missed.append((p, e))
        extra = set()
        while missed:
            p, e = missed.pop()
            for q, L in borders[p]:
                s = e - L
                if hay.startswith(pats[q], s) and (q, s) not in extra:
                    extra.add((q, s))
                    missed.append((q, s + len(pats[q])))
        if extra:
            for q in {q for q, _ in extra}:
                k = len(pats[q])
                merged = []
                nxt = 0
                for s in sorted(set(out[q]) | {s for r, s in extra if r == q}):
                    if s >= nxt:  # what a find loop over pattern q alone sees
                        merged.append(s)
                        nxt = s + k
                out[q] = merged
        return out


_LITERALS: _Literals | None = None


def _literals() -> _Literals:
    """The literal searcher, built (and ``ahocorasick_rs`` imported) on the first text read."""
    global _LITERALS
    if _LITERALS is None:
        _LITERALS = _Literals(_KEYWORDS + tuple(a for a, _ in _engine().inj_anchors)
                              + (_PEM_ANCHOR.lower(), _AUTH_ANCHOR))
    return _LITERALS


def _literal_anchors() -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """The literals a text scan looks for: (on the lower-cased copy, in one pass; on the
    bytes as they are).  For the benchmark's cost floor."""
    return _literals().patterns, (b"@",)


_DIGEST_LEADS = (b"sha256:", b"sha512:", b"sha1:", b"md5:", b"sha256=", b" h1:", b"\th1:")

# The 150 most common English letter pairs: identifiers made of words are full of them,
# random tokens hit them ~22% of the time.
_BIGRAMS = tuple(
    b"th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de "
    b"hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr no ct us ac ot il tr "
    b"ly nc et ut ss so rs un lo wa ge ie wh ee wi em ad ol rt po we na ul ni ts mo ow pa im mi ai sh ir su "
    b"id os iv ia am fi ci vi pl ig tu ev ld ry mp fe bl ab gh ty op wo sa ay ex ke fr oo av ag ap gr od bo "
    b"sp rd do uc bu ei ov".split()
)


def _b64decode(tok: bytes) -> bytes:
    """Lenient base64 / base64url decode of a token prefix (b"" when it is not base64)."""
    import binascii

    t = tok.replace(b"-", b"+").replace(b"_", b"/")
    t = t[: len(t) - len(t) % 4]
    try:
        return binascii.a2b_base64(t)
    except (binascii.Error, ValueError):
        return b""


def _base64_text(tok: bytes) -> bool:
    """True when ``tok`` is base64 of mostly printable text (not key material)."""
    if len(tok) < 24:
        return False
    raw = _b64decode(tok)
    if not raw:
        return False
    printable = len(raw) - len(raw.translate(None, _PRINTABLE))
    if printable * 100 >= len(raw) * 90:
        return True
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return sum(ch.isprintable() or ch.isspace() for ch in text) * 10 >= len(text) * 9


_PRINTABLE = bytes(range(32, 127)) + b"\t\r\n"

_PW_WORDS = frozenset((b"password", b"passwd", b"pass", b"pwd", b"secret", b"pw", b"yourpassword",
                       b"your_password", b"mypassword", b"<password>", b"pass]", b"passwd]", b"password]"))
_B64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

_ALNUM_SET = frozenset(_ALNUM)
def _rest_blank(buf: bytes, pos: int) -> bool:
    """True when nothing but blanks or a comment follows ``pos`` on its line."""
    j = buf.find(b"\n", pos)
    rest = buf[pos:j if j >= 0 else len(buf)].strip()
    return not rest or rest.startswith((b"#", b";"))


_VALUE_LEAD = frozenset(b"=:\"' \t")
_BEFORE_COLON_NAME = frozenset((b"\n", b" ", b"\t", b'"', b"'", b"{", b",", b"-", b">", b"+", b"#", b"|", b"*", b"\r"))
_LINE_LEAD = b" \t-+>#*|\"'{[,"
_AFTER_NAME = frozenset(b"=:\"' \t")


def _placeholder_token(tok: bytes) -> bool:
    """Documented example / placeholder vendor tokens (``ghp_xxxx...``, ``...EXAMPLE``)."""
    low = tok.lower()
    return b"example" in low or b"xxxxxxxx" in low or b"00000000" in tok or b"12345678" in tok


_CONTROL = bytes(c for c in range(32) if c not in b"\t\n\r\x0b\x0c\x1b") + b"\x7f"


def _looks_binary(head: bytes) -> bool:
    """True when over 5% of ``head`` (a stream's first bytes) are control bytes.

    A binary stream skips the text-only detectors (assignments, URLs, headers, prompt
    injection) and so costs a few C passes per MB; vendor tokens, private keys,
    high-entropy tokens and known secrets are still masked in it."""
    if len(head) < 64:
        return False
    ctrl = len(head) - len(head.translate(None, _CONTROL))
    return ctrl * 20 > len(head)


def _line_end(buf: bytes, start: int) -> int:
    j = buf.find(b"\n", start)
    if j < 0:
        j = len(buf)
    if j > start and buf[j - 1] == 13:
        j -= 1
    return j


_GENERIC_KINDS = ("high_entropy", "secret_assignment", "auth_header", "url_password", "known_secret")


def _rank(kind: str) -> int:
    """Which kind names a merged span: a vendor's name beats a generic one."""
    return _GENERIC_KINDS.index(kind) if kind in _GENERIC_KINDS else len(_GENERIC_KINDS)


def _merge(spans: Iterable[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Sort spans and merge overlapping ones; the most specific kind names the result."""
    out: list[tuple[int, int, str]] = []
    for s, e, k in sorted(spans):
        if out and s < out[-1][1]:
            ps, pe, pk = out[-1]
            out[-1] = (ps, max(pe, e), k if _rank(k) > _rank(pk) else pk)
            continue
        out.append((s, e, k))
    return out


def _known_values(known: Sequence[bytes]) -> tuple[bytes, ...]:
    vals: dict[bytes, None] = {}
    for k in known:
        if isinstance(k, str):
            k = k.encode()
        for v in (k, k.strip()):
            if MIN_KNOWN <= len(v) <= MAX_KNOWN:
                vals[v] = None
    # Longest first, so a secret containing another is masked whole.
    return tuple(sorted(vals, key=len, reverse=True))


# --------------------------------------------------------------------------- public API


class StreamScanner:
    """Masks secrets in one output stream read in chunks of any size.

    ``feed`` returns the bytes that are safe to emit now; ``finish`` flushes the
    rest.  The concatenation of everything returned is the input with each secret
    replaced by ``[REDACTED:<kind>]``.  ``findings`` lists what was masked (offsets in
    the original stream); ``injections`` the prompt-injection kinds seen (the stream
    itself is not altered for those).
    """

    def __init__(self, stream: str, settings: LeakSettings, known_secrets: Sequence[bytes] = ()) -> None:
        self.stream = stream
        self.settings = settings
        self.known = _known_values(known_secrets) if "known_secret" not in settings.disabled_patterns else ()
        self.findings: list[LeakFinding] = []
        self.injections: list[str] = []
        self._ctx = b""      # already emitted, kept as left context
        self._buf = b""      # not yet emitted
        self._base = 0       # stream offset of _buf[0]
        self._done = False
        self._binary: bool | None = None  # decided on the first BINARY_SNIFF bytes
        self._head = b""

    def feed(self, data: bytes) -> bytes:
        """Scan ``data`` (the next bytes of the stream); return what may be emitted now."""
        if not self.settings.enabled:
            return bytes(data)
        if self._done:
            raise ValueError("feed() after finish()")
        if not data:
            return b""
        return self._step(bytes(data), final=False)

    def flush(self) -> bytes:
        """Emit what is held back now, scanned as if the stream ended here.

        For a runner whose command has gone quiet (a prompt without a newline waiting for
        input): the stream goes on afterwards, but a secret being printed across the
        flush point can escape whole-token matching.  Not needed otherwise."""
        if self._done or not self.settings.enabled:
            return b""
        return self._step(b"", final=True)

    def finish(self) -> bytes:
        """End of stream: return the held-back tail, masked."""
        if self._done or not self.settings.enabled:
            self._done = True
            return b""
        self._done = True
        return self._step(b"", final=True)

    def _step(self, data: bytes, final: bool) -> bytes:
        ctx = self._ctx
        lo = len(ctx)
        buf = b"".join((ctx, self._buf, data))  # one copy
        n = len(buf)
        if n == lo:
            return b""
        if self._binary is None:
            # Text or binary is decided once per stream, on its first BINARY_SNIFF bytes
            # (whatever the reads); until they have arrived the stream counts as text,
            # so nothing is held back for the decision ("ready\n" shows at once).
            self._head += data[:BINARY_SNIFF - len(self._head)]
            if len(self._head) >= BINARY_SNIFF or final:
                self._binary = _looks_binary(self._head)
        scan = _Scan(buf, final, self.settings, bool(self._binary), self.injections)
        scan.run(self.known)
        for kind in sorted(scan.injections, key=INJECTION_KINDS.index):
            if kind not in self.injections:
                self.injections.append(kind)
        spans = [t for t in _merge(scan.spans) if t[0] >= lo]
        if final:
            cut = n
        else:
            # Emit up to the last line break (a progress bar's "\r" counts): nothing
            # but PEM blocks and known secrets (both held on their own) spans one.
            a = max(lo, n - HOLD)
            nl = max(buf.rfind(b"\n", a), buf.rfind(b"\r", a))
            cut = nl + 1 if nl >= 0 else a
            if scan.pending < cut:
                cut = max(lo, scan.pending)
            for s, e, _ in spans:
                if s < cut < e:
                    cut = e if e <= scan.pending else s
                    break
        self._base += cut - lo
        self._buf = buf[cut:]
        self._ctx = buf[max(0, cut - CONTEXT):cut]
        if not spans or spans[0][1] > cut:
            return buf[lo:cut]  # nothing to mask in what goes out now
        out: list[bytes] = []
        pos = lo
        base = self._base - cut
        for s, e, kind in spans:
            if e > cut:
                break
            out.append(buf[pos:s])
            out.append(b"[REDACTED:" + kind.encode() + b"]")
            self.findings.append(LeakFinding(kind=kind, stream=self.stream, offset=base + s, length=e - s))
            pos = e
        out.append(buf[pos:cut])
        return b"".join(out)


def scan_bytes(data: bytes, settings: LeakSettings, known: Sequence[bytes] = ()) -> tuple[bytes, list[LeakFinding]]:
    """Mask a whole buffer at once (file-tool reads); findings have stream ``file``."""
    sc = StreamScanner("file", settings, known)
    out = sc.feed(data) + sc.finish()
    return out, sc.findings


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def redaction_line(findings: Sequence[LeakFinding]) -> str:
    """One tagged stderr line: ``clawshell: redacted 2 secrets from output: aws_secret_key, github_token``."""
    kinds = _unique(f.kind for f in findings)
    n = len(findings)
    return f"clawshell: redacted {n} secret{'s' if n != 1 else ''} from output: {', '.join(kinds)}"


def injection_line(kinds: Sequence[str]) -> str:
    """One tagged stderr line naming the prompt-injection kinds seen in the output."""
    return f"clawshell: warning: possible prompt injection in output: {', '.join(_unique(kinds))}"
