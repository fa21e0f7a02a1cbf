"""The persistent approval queue, remembered decisions, and the OTP check around it.

A command the policy flags (or an OTP-gated one) is not run until a human decides.
The waiting ``clawshell`` process writes a request row into the ``approvals`` table,
prints one line to stderr naming a token (``CLAW-A8F2``), and polls the row; the human
runs ``clawshell approve CLAW-A8F2 allow`` in another terminal, which changes the row.
Everything lives in the database, so a request survives a restart: a waiting process
killed and started again for the same action (same digest, same session) gets the
same token back and finds the decision, if one was made meanwhile.

Rows of ``approvals`` and what ``expires`` means for each status:

- ``pending``: until when a decision may still be given (the waiter's deadline);
- ``allowed`` / ``denied``: until when a waiter may still collect the decision (a
  restarted waiter finds it); set to the collection time once a waiter saw it;
- ``expired``: no decision in time, which counts as a deny.

Scopes: ``allow`` (this one request), ``deny`` (this one request; nothing is
remembered), ``allow-30m`` (a grant on the action's digest for 30 minutes, any
session), ``allow-session`` (a grant on the digest for the rest of the request's
session).  The digest covers the exact command, the cwd and the policy hash, so a
different command, directory or policy asks again.

Also here: the OTP secret file (``security/otp.secret``) and :func:`verify_otp`, which
applies :func:`clawshell.approval.otp.check` to the ``otp_state`` row inside one
write transaction, and :func:`inside_reason`, which tells whether this process runs
inside a command clawshell started (the agent's side), where deciding is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import RefusedError, StoreError, UsageError
from ..home import Home
from . import otp as otp_mod

VERBS: tuple[str, ...] = ("allow", "deny", "allow-30m", "allow-session")
"""What a human can answer."""
ALLOW_30M_SECONDS = 1800.0
"""Lifetime of an ``allow-30m`` grant."""
COLLECT_SECONDS = 600.0
"""How long a decision waits to be collected by a (restarted) waiter."""
TOKEN_PREFIX = "CLAW-"
"""Every token starts with this."""
TOKEN_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""Upper-case letters and digits without the look-alikes 0/O and 1/I."""
TOKEN_LENGTH = 4
"""Random characters after the prefix."""
OTP_SECRET_FILE = "otp.secret"
"""File name of the base32 TOTP secret in ``security/``."""
INSIDE_ENV = "CLAWSHELL_INSIDE"
"""Set to ``1`` by the pipeline in the environment of every command it runs."""
DEPTH_ENV = "CLAWSHELL_DEPTH"
"""Nesting depth of clawshell runs, when the pipeline sets it."""

_COLUMNS = "token, digest, session, command, cwd, score, reason, gated, status, scope, created, decided, expires"


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Request:
    """One row of the ``approvals`` table."""

    token: str
    """``CLAW-XXXX``."""
    digest: str
    """Digest of the exact action (:meth:`ApprovalQueue.digest`)."""
    session: str | None
    """Session the request came from, or None."""
    command: str
    """The command text as the agent sent it."""
    cwd: str | None
    """Directory it would run in."""
    score: int | None
    """Irreversibility score 0-100."""
    reason: str | None
    """Why approval is needed (the verdict's reason)."""
    gated: bool
    """True when allowing needs an OTP code."""
    status: str
    """``pending`` | ``allowed`` | ``denied`` | ``expired``."""
    scope: str | None
    """The verb the human chose, once decided."""
    created: float
    """Unix time the request was made."""
    decided: float | None
    """Unix time of the decision (or of the expiry)."""
    expires: float | None
    """See the module docstring: meaning depends on ``status``."""

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> "Request":
        """Build from a row selected with the module's column list."""
        (token, digest, session, command, cwd, score, reason, gated, status, scope, created, decided,
         expires) = row
        return cls(token, digest, session, command, cwd, None if score is None else int(score), reason,
                   bool(gated), status, scope, float(created), decided, expires)

    def age(self, now: float) -> float:
        """Seconds since the request was made."""
        return max(0.0, now - self.created)

    def as_dict(self, now: float) -> dict[str, Any]:
        """JSON-ready form (``clawshell approvals --json``)."""
        return {"token": self.token, "command": self.command, "cwd": self.cwd, "session": self.session,
                "score": self.score, "reason": self.reason, "gated": self.gated, "status": self.status,
                "scope": self.scope, "created": self.created, "age": round(self.age(now), 1),
                "expires": self.expires, "digest": self.digest}


@dataclass(frozen=True)
class Grant:
    """A remembered decision (a row of ``grants``)."""

    digest: str
    """Digest of the action it covers."""
    session: str | None
    """Session it is limited to (``allow-session``), or None (``allow-30m``)."""
    scope: str
    """``allow-30m`` | ``allow-session``."""
    expires: float | None
    """Unix time it ends, or None (the end of the session)."""
    created: float
    """Unix time it was given."""


@dataclass(frozen=True)
class Outcome:
    """What :meth:`ApprovalQueue.wait` saw."""

    status: str
    """``allowed`` | ``denied`` | ``timeout``."""
    scope: str | None = None
    """The human's verb, when decided."""
    reason: str = ""
    """Why it ended without a human decision (aborted, vanished), else empty."""
    by: str = "human"
    """``human`` (decided), ``timeout`` (expired), ``abort`` (``abort`` said stop),
    ``vanished`` (the row disappeared: denied, fail closed)."""

    @property
    def allowed(self) -> bool:
        """True only for ``allowed``."""
        return self.status == "allowed"


@dataclass(frozen=True)
class Decided:
    """The effect of one ``approve`` decision."""

    token: str
    """The request decided."""
    status: str
    """``allowed`` | ``denied``."""
    scope: str
    """The verb."""
    command: str
    """The command it was about (for the confirmation line)."""


@dataclass(frozen=True)
class ApprovalResult:
    """Result of :func:`obtain_approval`, what the pipeline acts on and records."""

    allowed: bool
    """Run the action or not."""
    token: str | None
    """The request token, or None when a remembered grant answered."""
    scope: str | None
    """``allow`` | ``deny`` | ``allow-30m`` | ``allow-session`` | None (timeout, abort)."""
    by: str
    """``human`` | ``grant`` | ``timeout`` | ``estop``."""
    message: str
    """One short sentence for the agent (no ``clawshell:`` tag)."""


# --------------------------------------------------------------------------- tokens


def normalize_token(token: str) -> str:
    """``claw-a8f2`` / ``A8F2`` -> ``CLAW-A8F2``; :class:`UsageError` when malformed."""
    text = str(token).strip().upper()
    if text.startswith(TOKEN_PREFIX):
        text = text[len(TOKEN_PREFIX):]
    if len(text) != TOKEN_LENGTH or any(ch not in TOKEN_ALPHABET for ch in text):
        raise UsageError(f"malformed approval token {str(token)[:40]!r}: expected {TOKEN_PREFIX}XXXX "
                         f"(see `clawshell approvals`)")
    return TOKEN_PREFIX + text


def new_token() -> str:
    """A fresh random token (not checked for uniqueness; :meth:`ApprovalQueue.request` does)."""
    return TOKEN_PREFIX + "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(TOKEN_LENGTH))


def action_digest(command: str, cwd: str | None, policy_hash: str) -> str:
    """sha256 (hex) of the exact action: command text, cwd and policy hash."""
    body = json.dumps({"v": 1, "command": command, "cwd": cwd, "policy": policy_hash},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line (newlines shown as ``\\n``), cut to ``limit`` characters."""
    flat = text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# --------------------------------------------------------------------------- OTP I/O


def otp_secret_path(home: Home) -> str:
    """Where the TOTP secret lives."""
    return os.path.join(home.security, OTP_SECRET_FILE)


def read_otp_secret(home: Home) -> bytes | None:
    """The TOTP secret, or None when ``clawshell otp setup`` was never run.

    Raises :class:`StoreError` when the file exists but cannot be read or is not a
    valid secret (fail closed: a gated action cannot be approved then).
    """
    path = otp_secret_path(home)
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: cannot read the OTP secret: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return otp_mod.decode_secret(text)
    except ValueError as exc:
        raise StoreError(f"{path}: {exc}; run `clawshell otp setup --force`") from None


def write_otp_secret(home: Home, secret_b32: str, *, force: bool = False) -> str:
    """Write ``secret_b32`` to ``security/otp.secret`` (0600, atomic); return the path.

    Refuses (:class:`UsageError`) to replace an existing secret unless ``force``.
    """
    home.zone("security")
    path = otp_secret_path(home)
    if os.path.exists(path) and not force:
        raise UsageError(f"an OTP secret already exists ({path}); use --force to replace it "
                         "(the old authenticator entry stops working)")
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, (secret_b32 + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def _load_otp_state(cur: Any) -> otp_mod.OtpState:
    row = cur.execute("SELECT last_step, failures, locked_until FROM otp_state WHERE id = 1").fetchone()
    if row is None:
        return otp_mod.OtpState()
    last_step, failures, locked_until = row
    return otp_mod.OtpState(None if last_step is None else int(last_step), int(failures or 0),
                            None if locked_until is None else float(locked_until))


def _save_otp_state(cur: Any, state: otp_mod.OtpState) -> None:
    cur.execute("INSERT OR REPLACE INTO otp_state(id, last_step, failures, locked_until) VALUES (1, ?, ?, ?)",
                (state.last_step, state.failures, state.locked_until))


def reset_otp_state(store: Any) -> None:
    """Forget the last accepted step, failures and lockout (after a new secret)."""
    with store.transaction() as cur:
        cur.execute("DELETE FROM otp_state")


def _check_otp_in(cur: Any, secret: bytes, code: str, now: float) -> otp_mod.OtpCheck:
    """Verify a normalised code against the stored state and store the new state."""
    result = otp_mod.check(secret, code, now, _load_otp_state(cur))
    _save_otp_state(cur, result.state)
    return result


def _require_secret(home: Home | None, what: str) -> bytes:
    secret = read_otp_secret(home) if home is not None else None
    if secret is None:
        raise UsageError(f"{what} needs an OTP code but no OTP secret is set up: run `clawshell otp setup`")
    return secret


def _normalized_code(code: str | None, what: str) -> str:
    if code is None or not str(code).strip():
        raise UsageError(f"{what} needs an OTP code: add --otp CODE (from your authenticator app)")
    try:
        return otp_mod.normalize_code(code)
    except otp_mod.OtpCodeFormatError as exc:
        raise UsageError(f"malformed OTP code: {exc}") from None


def verify_otp(store: Any, home: Home, code: str | None, *, now: float, what: str = "this action") -> int:
    """Accept ``code`` once or raise; return the accepted time step.

    Malformed or missing code, or no secret set up: :class:`UsageError`, nothing
    stored.  Wrong, replayed or locked: the failure is stored (it counts toward the
    lockout) and :class:`RefusedError` is raised.  The code is never put in a message.
    """
    normalized = _normalized_code(code, what)
    secret = _require_secret(home, what)
    with store.transaction() as cur:
        result = _check_otp_in(cur, secret, normalized, now)
    if not result.ok:
        raise RefusedError(result.reason)
    assert result.step is not None
    return result.step


# --------------------------------------------------------------------------- who is asking


def _read_proc(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _status_field(status: bytes, name: str) -> str | None:
    for line in status.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(":")
        if key == name:
            return value.strip()
    return None


def _looks_like_clawshell(argv: Sequence[str]) -> bool:
    for i, arg in enumerate(argv[:4]):
        base = os.path.basename(arg)
        if base == "clawshell" or base.startswith("clawshell."):
            return True
        if arg == "-m" and i + 1 < len(argv) and argv[i + 1].split(".")[0] == "clawshell":
            return True
    return False


def inside_reason(environ: Mapping[str, str] | None = None, *, proc: str = "/proc",
                  pid: int | None = None, max_hops: int = 64) -> str | None:
    """Why this process counts as running inside a command clawshell started, or None.

    Deciding an approval, using an OTP code and resuming from an e-stop are refused
    there: the agent must not approve its own actions.  Checks, each sufficient:

    1. ``CLAWSHELL_INSIDE`` / ``CLAWSHELL_DEPTH`` in our environment;
    2. an ancestor process that is clawshell itself (``clawshell -c``, ``clawshell
       session``, the sandbox helper), or whose environment has ``CLAWSHELL_INSIDE=1``
       (a command can unset its own variable, not its parents');
    3. no_new_privs set **and** a same-user ancestor out of ptrace-read reach
       (``readlink /proc/PID/exe`` refused): a Landlock domain (or another LSM) cuts
       us off from our own parents, which is what the clawshell sandbox looks like
       from inside (and what a plain container or flatpak does not).

    These are for a clear message; the real guard is the sandbox, which keeps the
    database and ``security/`` out of reach of every command.  Never raises.
    """
    env = os.environ if environ is None else environ
    if env.get(INSIDE_ENV, "") not in ("", "0"):
        return f"{INSIDE_ENV} is set: this runs inside a command clawshell started"
    depth = env.get(DEPTH_ENV, "")
    if depth.strip().isdigit() and int(depth) > 0:
        return f"{DEPTH_ENV}={depth}: this runs inside a command clawshell started"
    me = os.getpid() if pid is None else pid
    status = _read_proc(f"{proc}/{me}/status") or b""
    no_new_privs = _status_field(status, "NoNewPrivs") == "1"
    uid = os.getuid()
    current = me
    for _ in range(max_hops):
        st = _read_proc(f"{proc}/{current}/stat")
        if not st:
            break
        try:
            ppid = int(st[st.rindex(b")") + 2:].split()[1])
        except (ValueError, IndexError):
            break
        if ppid <= 1:
            break
        current = ppid
        cmdline = _read_proc(f"{proc}/{current}/cmdline") or b""
        argv = [a.decode("utf-8", "replace") for a in cmdline.split(b"\0") if a]
        if _looks_like_clawshell(argv):
            return f"an ancestor process ({current}: {one_line(' '.join(argv), 60)}) is clawshell"
        try:
            owner = os.stat(f"{proc}/{current}").st_uid
        except OSError:
            continue
        if owner != uid:
            continue
        if no_new_privs:
            try:
                os.readlink(f"{proc}/{current}/exe")
            except PermissionError:
                return ("this process is sandboxed (no_new_privs, and its own parent processes are out of "
                        "reach): it runs inside a command clawshell started")
            except OSError:
                pass
        try:
            with open(f"{proc}/{current}/environ", "rb") as fh:
                environ_bytes = fh.read()
        except OSError:
            continue
        if f"{INSIDE_ENV}=1".encode() in environ_bytes.split(b"\0"):
            return f"an ancestor process ({current}) runs inside a command clawshell started"
    return None


# --------------------------------------------------------------------------- the queue


class ApprovalQueue:
    """Requests, decisions and remembered grants in the database of one home.

    ``clock`` is injected so tests can move time; ``home`` is needed only to read the
    OTP secret for gated requests.
    """

    def __init__(self, store: Any, *, clock: Callable[[], float] = time.time, home: Home | None = None):
        """Wrap an open ``Store``."""
        self.store = store
        self.clock = clock
        self.home = home

    @staticmethod
    def digest(command: str, cwd: str | None, policy_hash: str) -> str:
        """sha256 of the exact action (see :func:`action_digest`)."""
        return action_digest(command, cwd, policy_hash)

    # ------------------------------------------------------------------ grants

    def find_grant(self, digest: str, session: str | None, now: float | None = None) -> Grant | None:
        """The newest live grant covering ``digest`` in ``session``, or None.

        ``allow-30m`` grants hold in any session until they expire; ``allow-session``
        grants only in their own session.  Denials are never remembered.
        """
        now = self.clock() if now is None else now
        rows = self.store.query(
            "SELECT digest, session, scope, expires, created FROM grants WHERE digest = ?"
            " AND (expires IS NULL OR expires > ?)"
            " AND (session IS NULL OR (? IS NOT NULL AND session = ?))"
            " ORDER BY created DESC LIMIT 1",
            (digest, now, session, session))
        if not rows:
            return None
        d, s, scope, expires, created = rows[0]
        return Grant(d, s, scope, None if expires is None else float(expires), float(created))

    # ------------------------------------------------------------------ requests

    def get(self, token: str) -> Request | None:
        """The request ``token`` (normalised), or None."""
        rows = self.store.query(f"SELECT {_COLUMNS} FROM approvals WHERE token = ?", (normalize_token(token),))
        return Request.from_row(rows[0]) if rows else None

    def request(self, command: str, cwd: str | None, session: str | None, score: int | None,
                reason: str | None, digest: str, gated: bool = False, *,
                timeout: float | None = None) -> str:
        """Queue a request and return its token.

        If the same action (digest and session) already has a live pending request, or
        a decision nobody collected yet (its waiter was killed), that token is returned
        instead of a new one, and a pending one's deadline is extended to cover
        ``timeout`` from now.
        """
        now = self.clock()
        with self.store.transaction() as cur:
            row = cur.execute(
                f"SELECT {_COLUMNS} FROM approvals WHERE digest = ? AND session IS ?"
                " AND (status = 'pending' OR (status IN ('allowed', 'denied') AND expires > ?))"
                " ORDER BY created DESC LIMIT 1", (digest, session, now)).fetchone()
            if row is not None:
                old = Request.from_row(row)
                if old.status != "pending":
                    return old.token
                if old.expires is None or old.expires > now:
                    if timeout is not None and old.expires is not None and old.expires < now + timeout:
                        cur.execute("UPDATE approvals SET expires = ? WHERE token = ?", (now + timeout, old.token))
                    if gated and not old.gated:
                        cur.execute("UPDATE approvals SET gated = 1 WHERE token = ?", (old.token,))
                    return old.token
                cur.execute("UPDATE approvals SET status = 'expired', decided = ? WHERE token = ?", (now, old.token))
            for _ in range(200):
                token = new_token()
                if cur.execute("SELECT 1 FROM approvals WHERE token = ?", (token,)).fetchone() is None:
                    break
            else:
                raise StoreError("cannot find a free approval token (too many requests in the database)")
            cur.execute(
                "INSERT INTO approvals(token, digest, session, command, cwd, score, reason, gated, status,"
                " scope, created, decided, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', NULL, ?, NULL, ?)",
                (token, digest, session, command, cwd, score, reason, 1 if gated else 0, now,
                 None if timeout is None else now + timeout))
        return token

    def wait(self, token: str, timeout: float, poll: float = 0.2, sleep: Callable[[float], None] = time.sleep,
             *, abort: Callable[[], str | None] | None = None) -> Outcome:
        """Poll the request until it is decided, expires, or ``timeout`` passes.

        On timeout the request is marked ``expired`` (auto-deny), unless a decision
        landed at the same moment, which then wins.  ``abort`` is called on every poll;
        a non-empty string it returns (e.g. the e-stop reason) ends the wait as denied.
        A seen decision is marked collected.
        """
        token = normalize_token(token)
        deadline = self.clock() + max(0.0, timeout)
        while True:
            rows = self.store.query("SELECT status, scope FROM approvals WHERE token = ?", (token,))
            if not rows:
                return Outcome("denied", None, "the request vanished from the database", "vanished")
            status, scope = rows[0]
            if status in ("allowed", "denied"):
                self._collect(token)
                return Outcome(status, scope)
            if status == "expired":
                return Outcome("timeout", None, "", "timeout")
            why = abort() if abort is not None else None
            now = self.clock()
            if why or now >= deadline:
                with self.store.transaction() as cur:
                    cur.execute("UPDATE approvals SET status = 'expired', decided = ? WHERE token = ?"
                                " AND status = 'pending'", (now, token))
                    changed = cur.rowcount
                if changed:
                    return Outcome("denied", None, why, "abort") if why else Outcome("timeout", None, "", "timeout")
                continue  # decided at the last moment: read it
            sleep(max(0.0, min(poll, deadline - now)))

    def _collect(self, token: str) -> None:
        now = self.clock()
        with self.store.transaction() as cur:
            cur.execute("UPDATE approvals SET expires = ? WHERE token = ? AND status IN ('allowed', 'denied')"
                        " AND (expires IS NULL OR expires > ?)", (now, token, now))

    # ------------------------------------------------------------------ decisions

    def decide(self, token: str, verb: str, otp_code: str | None = None, now: float | None = None) -> Decided:
        """Decide one request; see :meth:`decide_many`."""
        return self.decide_many([token], verb, otp_code, now)[0]

    def decide_all_pending(self, verb: str, otp_code: str | None = None, now: float | None = None) -> list[Decided]:
        """Decide every live pending request at once (``approve --all-pending``)."""
        now = self.clock() if now is None else now
        tokens = [r.token for r in self.pending(now)]
        if not tokens:
            raise UsageError("no pending approval requests")
        return self.decide_many(tokens, verb, otp_code, now)

    def decide_many(self, tokens: Iterable[str], verb: str, otp_code: str | None = None,
                    now: float | None = None) -> list[Decided]:
        """Decide several requests with one verb, all or nothing.

        Every token must name a live pending request, else :class:`UsageError`
        (unknown, already decided, expired, malformed) and nothing changes.  Allowing
        a gated request needs a valid OTP code (one code covers the batch); denying
        never does.  ``allow-session`` needs requests that carry a session.
        ``allow-30m`` / ``allow-session`` also store a grant on each request's digest.
        """
        verb = str(verb).strip().lower()
        if verb not in VERBS:
            raise UsageError(f"unknown decision {verb!r}: use one of {', '.join(VERBS)}")
        wanted = list(dict.fromkeys(normalize_token(t) for t in tokens))
        if not wanted:
            raise UsageError("no approval token given")
        now = self.clock() if now is None else now
        refusal: str | None = None
        decided: list[Decided] = []
        with self.store.transaction() as cur:
            requests = []
            for token in wanted:
                row = cur.execute(f"SELECT {_COLUMNS} FROM approvals WHERE token = ?", (token,)).fetchone()
                if row is None:
                    raise UsageError(f"unknown approval token {token} (see `clawshell approvals`)")
                req = Request.from_row(row)
                if req.status in ("allowed", "denied"):
                    raise UsageError(f"{token} was already decided: {req.scope or req.status}")
                if req.status == "expired" or (req.expires is not None and req.expires <= now):
                    raise UsageError(f"{token} expired (auto-denied after its timeout); "
                                     "the agent has to retry the command to ask again")
                if req.status != "pending":
                    raise UsageError(f"{token} is in an unknown state {req.status!r}")
                if verb == "allow-session" and not req.session:
                    raise UsageError(f"{token} has no session, so allow-session cannot apply: "
                                     "use allow or allow-30m")
                requests.append(req)
            if verb != "deny" and any(r.gated for r in requests):
                what = "allowing " + ", ".join(r.token for r in requests if r.gated)
                code = _normalized_code(otp_code, what)
                secret = _require_secret(self.home, what)
                result = _check_otp_in(cur, secret, code, now)
                if not result.ok:
                    refusal = result.reason  # commit the counted failure, then refuse
            if refusal is None:
                status = "denied" if verb == "deny" else "allowed"
                for req in requests:
                    cur.execute("UPDATE approvals SET status = ?, scope = ?, decided = ?, expires = ?"
                                " WHERE token = ? AND status = 'pending'",
                                (status, verb, now, now + COLLECT_SECONDS, req.token))
                    if verb == "allow-30m":
                        cur.execute("INSERT INTO grants(digest, session, scope, expires, created)"
                                    " VALUES (?, NULL, ?, ?, ?)", (req.digest, verb, now + ALLOW_30M_SECONDS, now))
                    elif verb == "allow-session":
                        cur.execute("INSERT INTO grants(digest, session, scope, expires, created)"
                                    " VALUES (?, ?, ?, NULL, ?)", (req.digest, req.session, verb, now))
                    decided.append(Decided(req.token, status, verb, req.command))
        if refusal is not None:
            raise RefusedError(refusal)
        return decided

    # ------------------------------------------------------------------ listing and expiry

    def pending(self, now: float | None = None) -> list[Request]:
        """Live pending requests, oldest first."""
        now = self.clock() if now is None else now
        rows = self.store.query(f"SELECT {_COLUMNS} FROM approvals WHERE status = 'pending'"
                                " AND (expires IS NULL OR expires > ?) ORDER BY created, token", (now,))
        return [Request.from_row(r) for r in rows]

    def recent(self, limit: int = 20) -> list[Request]:
        """The newest requests in any state, newest first (``approvals --all``)."""
        rows = self.store.query(f"SELECT {_COLUMNS} FROM approvals ORDER BY created DESC, token LIMIT ?", (limit,))
        return [Request.from_row(r) for r in rows]

    def expire_stale(self, now: float | None = None, max_age: float | None = None) -> int:
        """Mark pending requests past their deadline (or older than ``max_age``)
        expired, drop ended grants; return how many requests expired."""
        now = self.clock() if now is None else now
        with self.store.transaction() as cur:
            cur.execute("UPDATE approvals SET status = 'expired', decided = ? WHERE status = 'pending'"
                        " AND ((expires IS NOT NULL AND expires <= ?) OR (? IS NOT NULL AND created <= ?))",
                        (now, now, max_age, now - (max_age or 0.0)))
            count = cur.rowcount
            cur.execute("DELETE FROM grants WHERE expires IS NOT NULL AND expires <= ?", (now,))
        return count


# --------------------------------------------------------------------------- the pipeline's entry


def approval_line(*, token: str, command: str, score: int | None, risk: str, gated: bool, timeout: float) -> str:
    """The one stderr line that tells the agent (and the human watching it) what to do."""
    verbs = "|".join(VERBS)
    otp_part = " --otp CODE" if gated else ""
    score_part = f"score {score}, {risk}" if score is not None else risk
    return (f"clawshell: approval required ({score_part}): {one_line(command)}; token {token}; "
            f"decide in another terminal: clawshell approve {token} {verbs}{otp_part}; "
            f"auto-deny in {timeout:g}s")


def obtain_approval(store: Any, *, command: str, cwd: str | None, session: str | None, score: int | None,
                    reason: str | None, policy_hash: str, gated: bool, timeout: float,
                    emit: Callable[[str], None], risk: str | None = None,
                    clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                    poll: float = 0.2, abort: Callable[[], str | None] | None = None) -> ApprovalResult:
    """Get a human decision for one action, or a remembered one.

    A live grant on the action's digest answers at once (``by="grant"``).  Otherwise a
    request is queued (or the same pending one found again), one line is emitted, and
    the request is polled until decided or ``timeout`` (auto-deny).  ``abort``
    defaults to the e-stop check: an e-stop engaged while waiting denies at once.
    """
    queue = ApprovalQueue(store, clock=clock)
    digest = action_digest(command, cwd, policy_hash)
    grant = queue.find_grant(digest, session)
    if grant is not None:
        return ApprovalResult(True, None, grant.scope, "grant", f"remembered approval ({grant.scope})")
    token = queue.request(command, cwd, session, score, reason, digest, gated, timeout=timeout)
    if risk is None:
        from ..model import Thresholds

        risk = Thresholds().level(score).value if score is not None else "approval"
    req = queue.get(token)
    if req is not None and req.status == "pending":
        emit(approval_line(token=token, command=command, score=score, risk=risk, gated=gated, timeout=timeout))
    outcome = queue.wait(token, timeout, poll, sleep, abort=abort if abort is not None else _estop_abort(store))
    if outcome.status == "allowed":
        return ApprovalResult(True, token, outcome.scope, "human",
                              f"approved by the human ({outcome.scope}) [token {token}]")
    if outcome.by == "abort":
        return ApprovalResult(False, token, None, "estop", f"{outcome.reason} [token {token}]")
    if outcome.by == "vanished":
        return ApprovalResult(False, token, None, "timeout", f"{outcome.reason}, denied [token {token}]")
    if outcome.status == "denied":
        return ApprovalResult(False, token, "deny", "human", f"approval denied by the human [token {token}]")
    return ApprovalResult(False, token, None, "timeout",
                          f"no decision within {timeout:g}s, auto-denied [token {token}]")


def _estop_abort(store: Any) -> Callable[[], str | None]:
    """An ``abort`` callback for :meth:`ApprovalQueue.wait` that ends the wait on e-stop."""
    from .estop import check

    def abort() -> str | None:
        engaged, why = check(store)
        return f"emergency stop engaged: {why or 'no reason given'}" if engaged else None

    return abort
