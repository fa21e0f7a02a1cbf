"""TOTP (RFC 6238) codes for gated approvals and e-stop resume: pure functions.

Nothing here touches a file, the clock or the database: the secret, "now" and the
stored verification state come in as arguments and the new state goes out as a value.
``approval.queue`` does the I/O (secret file, ``otp_state`` row) around :func:`check`.

What ZeroClaw's OTP lacks and this module does:

- a code is accepted **once**: the accepted time step is remembered and any code of
  that step or an earlier one is refused (no 300 s replay cache);
- the comparison is constant time (:func:`hmac.compare_digest` over every candidate,
  no early exit);
- after :data:`MAX_FAILURES` wrong codes verification is locked for
  :data:`LOCKOUT_SECONDS`, whatever the code;
- ``gated_actions`` are matched for real (:func:`is_gated`), by tool kind or by
  command pattern.

Codes never appear in a message produced here.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Sequence

# base64, hmac and urllib.parse are imported inside the functions that use them:
# the pipeline imports this module for ``is_gated`` on every command.

DIGITS = 6
"""Length of a code."""
STEP_SECONDS = 30
"""TOTP time step."""
WINDOW = 1
"""Steps accepted on either side of the current one (clock drift)."""
MAX_FAILURES = 5
"""Wrong codes in a row before verification locks."""
LOCKOUT_SECONDS = 300.0
"""How long verification stays locked."""
SECRET_BYTES = 20
"""Size of a fresh secret (160 bits, the RFC 4226 recommendation for SHA-1)."""
ISSUER = "clawshell"
"""Issuer shown by authenticator apps."""

TOOL_KINDS: tuple[str, ...] = (
    "shell", "file_read", "file_write", "file_edit", "file_list", "file_delete", "estop_resume",
)
"""Tool kinds ``[security.otp] gated_actions`` may name; any other entry is a command pattern."""

_TOOL_ALIASES = {
    "shell": "shell", "mcp.shell": "shell", "hook": "shell", "bash": "shell",
    "file.read": "file_read", "read_file": "file_read",
    "file.write": "file_write", "write_file": "file_write",
    "file.edit": "file_edit", "edit_file": "file_edit",
    "file.ls": "file_list", "file.list": "file_list", "list_dir": "file_list", "file_ls": "file_list",
    "file.delete": "file_delete",
}


class OtpCodeFormatError(ValueError):
    """The code is not six digits (a usage error: nothing is counted or stored)."""


@dataclass(frozen=True)
class OtpState:
    """The verification state kept in the ``otp_state`` row."""

    last_step: int | None = None
    """Time step of the last accepted code; codes of this step or earlier are refused."""
    failures: int = 0
    """Wrong codes since the last success or lockout."""
    locked_until: float | None = None
    """Unix time until which every code is refused, or None."""


@dataclass(frozen=True)
class OtpCheck:
    """Outcome of :func:`check`: whether the code is accepted, and the state to store."""

    ok: bool
    """True when the code is accepted (and now spent)."""
    state: OtpState
    """State to write back (always, also on failure: it counts the failure)."""
    reason: str
    """Why it was refused (never contains the code), or ``"accepted"``."""
    step: int | None = None
    """Time step the code matched, when accepted."""


def normalize_code(code: str) -> str:
    """Strip spaces a human may type (``123 456``); raise :class:`OtpCodeFormatError`
    unless exactly six ASCII digits remain."""
    cleaned = "".join(str(code).split())
    if len(cleaned) != DIGITS or not (cleaned.isascii() and cleaned.isdigit()):
        raise OtpCodeFormatError(f"an OTP code is {DIGITS} digits (got {len(cleaned)} characters)")
    return cleaned


def encode_secret(raw: bytes) -> str:
    """Base32 text of ``raw`` without padding (what authenticator apps expect)."""
    import base64

    return base64.b32encode(raw).decode("ascii").rstrip("=")


def decode_secret(text: str) -> bytes:
    """Bytes of a base32 secret (spaces, case and missing padding tolerated).

    Raises ``ValueError`` when the text is not base32 or shorter than 80 bits.
    """
    import base64
    import binascii

    cleaned = "".join(text.split()).upper().rstrip("=")
    cleaned += "=" * (-len(cleaned) % 8)
    try:
        raw = base64.b32decode(cleaned, casefold=False)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"OTP secret is not valid base32: {exc}") from None
    if len(raw) < 10:
        raise ValueError("OTP secret is shorter than 80 bits")
    return raw


def provisioning_uri(secret_b32: str, account: str, issuer: str = ISSUER) -> str:
    """The ``otpauth://totp/...`` URI an authenticator app scans."""
    from urllib.parse import quote

    label = quote(f"{issuer}:{account}", safe="@:")
    params = f"secret={secret_b32}&issuer={quote(issuer, safe='')}&algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}"
    return f"otpauth://totp/{label}?{params}"


def time_step(now: float) -> int:
    """TOTP counter for unix time ``now``."""
    return int(now // STEP_SECONDS)


def code_at_step(secret: bytes, step: int) -> str:
    """The code for counter ``step`` (RFC 6238 over cryptography's TOTP, SHA-1, 6 digits)."""
    from cryptography.hazmat.primitives.hashes import SHA1
    from cryptography.hazmat.primitives.twofactor.totp import TOTP

    totp = TOTP(secret, DIGITS, SHA1(), STEP_SECONDS, enforce_key_length=False)
    return totp.generate(step * STEP_SECONDS).decode("ascii")


def code_at(secret: bytes, now: float) -> str:
    """The code for unix time ``now`` (what an authenticator app shows)."""
    return code_at_step(secret, time_step(now))


def check(secret: bytes, code: str, now: float, state: OtpState) -> OtpCheck:
    """Verify ``code`` at time ``now`` against ``state``; return the verdict and new state.

    ``code`` must already be normalised (:func:`normalize_code`).  Order: lockout first
    (nothing is compared while locked), then all candidate steps ``now-1 .. now+1`` are
    compared in constant time, then the matched step must be later than
    ``state.last_step`` (single use).  A wrong or replayed code counts as a failure; the
    :data:`MAX_FAILURES`-th failure locks verification for :data:`LOCKOUT_SECONDS`.
    """
    import hmac

    if state.locked_until is not None and now < state.locked_until:
        wait = int(state.locked_until - now + 0.999)
        return OtpCheck(False, state, f"OTP locked after {MAX_FAILURES} wrong codes; try again in {wait}s")
    if state.locked_until is not None:
        state = OtpState(state.last_step, 0, None)
    current = time_step(now)
    given = code.encode("ascii")
    matched: int | None = None
    for step in range(current - WINDOW, current + WINDOW + 1):
        # compare every candidate, so timing does not reveal which step matched
        if hmac.compare_digest(code_at_step(secret, step).encode("ascii"), given) and matched is None:
            matched = step
    if matched is not None and (state.last_step is None or matched > state.last_step):
        return OtpCheck(True, OtpState(matched, 0, None), "accepted", matched)
    reason = "OTP code already used" if matched is not None else "wrong OTP code"
    failures = state.failures + 1
    if failures >= MAX_FAILURES:
        locked = OtpState(state.last_step, 0, now + LOCKOUT_SECONDS)
        return OtpCheck(False, locked, f"{reason}; OTP locked for {int(LOCKOUT_SECONDS)}s after {MAX_FAILURES} failures")
    left = MAX_FAILURES - failures
    return OtpCheck(False, OtpState(state.last_step, failures, None), f"{reason} ({left} tries left before lockout)")


def tool_kind(tool: str) -> str:
    """Map a tool name as the pipeline records it (``file.write``, ``mcp.shell``) to a kind."""
    name = tool.strip().lower()
    return _TOOL_ALIASES.get(name, name.replace(".", "_"))


def _pattern_matches(pattern: str, command: str) -> bool:
    """A command pattern matches the whole command, or the command as a word prefix
    (``git push`` matches ``git push origin main``)."""
    text = " ".join(command.split())
    pat = " ".join(pattern.split())
    return fnmatch.fnmatchcase(text, pat) or fnmatch.fnmatchcase(text, pat + " *")


def is_gated(policy: object, tool: str, command: str = "", parts: Sequence[str] = ()) -> bool:
    """True when ``[security.otp] gated_actions`` covers this action.

    ``policy`` is a ``Policy`` (its ``otp_gated_actions`` is read).  An entry that is one
    of :data:`TOOL_KINDS` gates every action of that tool kind; any other entry is a
    command glob matched against ``command`` and against each of ``parts`` (the simple
    commands of a compound one, e.g. ``"git push origin main"`` inside
    ``cd x && git push origin main``), as a whole or as a word prefix.
    """
    entries: Sequence[str] = getattr(policy, "otp_gated_actions", ()) or ()
    kind = tool_kind(tool)
    texts = [t for t in (command, *parts) if t and t.strip()]
    for entry in entries:
        name = entry.strip()
        if not name:
            continue
        if name.lower() in TOOL_KINDS:
            if name.lower() == kind:
                return True
            continue
        if any(_pattern_matches(name, text) for text in texts):
            return True
    return False


def gated_actions_problems(entries: Sequence[str]) -> list[str]:
    """Problems of a ``gated_actions`` list, for the policy loader (empty when fine).

    Unknown names are not silently accepted (ZeroClaw #7368): an entry that looks like
    a misspelt tool kind (one word with ``_`` or ``.``, not a known kind) is reported.
    """
    problems = []
    for entry in entries:
        name = entry.strip()
        if not name:
            problems.append("empty entry")
        elif name.lower() not in TOOL_KINDS and " " not in name and ("_" in name or "." in name):
            problems.append(f"{name!r} is neither a tool kind ({', '.join(TOOL_KINDS)}) nor a command pattern")
    return problems
