"""The audit log: one hash-chained, HMAC-receipted entry per tool call, in the store.

``AuditLog.append`` is on the hot path of every ``clawshell -c``: it reads the chain
head and writes one row in a single ``BEGIN IMMEDIATE`` transaction (index lookups
only, so its cost does not grow with the log), with stdlib ``hashlib``/``hmac``.
Every ``checkpoint_every`` entries, after the commit, the chain head is signed with an
Ed25519 key (``cryptography``, imported only then) so that an export can be checked
by someone who holds only the public key.

Keys live in ``security/`` (0700):

* ``receipt.key``: the current HMAC key (64 hex digits, mode 0600, created on first
  use when the log is empty, never logged or printed);
* ``receipt.<key id>.key``: keys retired by ``rotate_key``, kept so that older
  entries still verify (flat files: every file in ``security/`` is 0600);
* ``ed25519.key`` / ``ed25519.pub``: the checkpoint signing key (PKCS#8 PEM) and its
  public key (SubjectPublicKeyInfo PEM) for auditors, both 0600 like everything in
  ``security/`` (``clawshell audit public-key`` prints the public one).

A key file that others can read, that is not owned by this user, or that is a
symlink is refused with one line; a missing HMAC key is only created when the log has
no entries (otherwise every older receipt would be orphaned), and a key file that is
not the log's current key is refused until restored or rotated.

``meta`` rows kept in the same transaction as each append: ``audit_head``
(``"<seq>:<entry hash>"``, the high-water mark that exposes a truncated tail) and
``audit_key`` (id of the current HMAC key).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import time as _time
from typing import IO, Any, Callable, Iterable, Iterator, Mapping, NamedTuple

from . import receipts as rc
from .errors import StoreError
from .home import Home
from .store import Store, make_private_dir

CHECKPOINT_EVERY = 1000
"""Entries between two signed checkpoints."""

RECEIPT_KEY_FILE = "receipt.key"
SIGNING_KEY_FILE = "ed25519.key"
PUBLIC_KEY_FILE = "ed25519.pub"

EXPORT_FORMAT = "clawshell-audit-export"
EXPORT_VERSION = 1

MAX_PROBLEMS = 1000
"""Problems kept in a report (the count goes on)."""


def format_time(epoch: float) -> str:
    """UTC ISO-8601 time with milliseconds, ``2026-11-29T16:30:00.123Z``."""
    whole = int(epoch)
    ms = int((epoch - whole) * 1000)
    return _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(whole)) + f".{ms:03d}Z"


# --------------------------------------------------------------------------- values


class Appended(NamedTuple):
    """What one append produced; ``receipt`` is the full hex HMAC.

    This module's result types are ``NamedTuple``s rather than dataclasses: as
    immutable, and several times cheaper to define on the ``clawshell -c`` hot path,
    which imports this module for ``append``.
    """

    seq: int
    """Sequence number of the new entry (1-based, no gaps)."""
    entry_hash: str
    """Hex SHA-256 entry hash."""
    receipt: str
    """Hex HMAC-SHA256 over the entry hash."""
    key_id: str
    """Id of the HMAC key used."""
    time: str
    """The entry's time (the record's own, or the append time)."""


class Entry(NamedTuple):
    """One stored audit entry."""

    seq: int
    """Sequence number."""
    prev_hash: str
    """Entry hash of ``seq - 1`` (``GENESIS_HASH`` for the first)."""
    entry_hash: str
    """Hex entry hash."""
    key_id: str
    """HMAC key id."""
    hmac: str
    """Hex receipt HMAC."""
    body: str
    """Canonical JSON of the record."""
    session: str | None = None
    """Indexed copy of the record's session."""
    tool: str | None = None
    """Indexed copy of the record's tool."""
    decision: str | None = None
    """Indexed copy of the record's decision (allow/approve/deny)."""
    time: str | None = None
    """Indexed copy of the record's time."""

    @property
    def record(self) -> dict[str, Any]:
        """The record, parsed from ``body``."""
        value = json.loads(self.body)
        return value if isinstance(value, dict) else {"value": value}

    @property
    def index(self) -> rc.Index:
        """The indexed values, as hashed with the entry."""
        return (self.session, self.tool, self.decision, self.time)

    def receipt_line(self) -> str:
        """The receipt line for this entry."""
        return rc.format_line(self.seq, self.entry_hash, self.hmac, self.key_id)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the export entry fields plus the parsed body)."""
        return {"seq": self.seq, "prev_hash": self.prev_hash, "entry_hash": self.entry_hash,
                "key_id": self.key_id, "hmac": self.hmac, "time": self.time, "session": self.session,
                "tool": self.tool, "decision": self.decision, "body": self.record}


_ENTRY_COLUMNS = "seq, prev_hash, entry_hash, key_id, hmac, body, session, tool, decision, time"


class Problem(NamedTuple):
    """One located verification failure."""

    seq: int
    """Sequence number where it is (first affected entry)."""
    kind: str
    """``hash_mismatch`` | ``prev_hash_mismatch`` | ``gap`` | ``truncated`` | ``hmac_mismatch`` |
    ``key_missing`` | ``checkpoint_mismatch`` | ``signature_invalid`` | ``head_mismatch`` |
    ``malformed`` | ``order`` | ``unsigned``."""
    message: str
    """One human line."""

    def line(self) -> str:
        """``seq N: kind: message``."""
        return f"seq {self.seq}: {self.kind}: {self.message}"


class VerifyReport(NamedTuple):
    """Result of verifying the database or an export."""

    source: str
    """Database file or export file checked."""
    checked: int
    """Entries checked."""
    first_seq: int | None
    """First sequence number seen."""
    last_seq: int | None
    """Last sequence number seen."""
    problems: tuple[Problem, ...]
    """Located failures, by sequence number (at most ``MAX_PROBLEMS``)."""
    problem_count: int = 0
    """All failures found (may exceed ``len(problems)``)."""
    checkpoints: int = 0
    """Signed checkpoints whose signature and entry were checked."""
    high_water: int = 0
    """Highest sequence number the log claims to have written (meta or checkpoint)."""
    hmac_checked: bool = True
    """False for an export (HMACs need the secret key)."""
    warnings: tuple[str, ...] = ()
    """Things that are not failures but worth knowing."""
    seconds: float = 0.0
    """Wall time taken."""

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return self.problem_count == 0

    @property
    def first_problem(self) -> Problem | None:
        """The problem with the lowest sequence number."""
        return self.problems[0] if self.problems else None

    @property
    def rate(self) -> float:
        """Entries per second."""
        return self.checked / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        """One line: ``ok: ...`` or ``FAILED at seq N: ...``."""
        span = f"seq {self.first_seq}-{self.last_seq}" if self.checked else "empty log"
        what = "hashes, chain links, HMACs" if self.hmac_checked else "hashes, chain links"
        if self.ok:
            return (f"ok: {self.checked} entries ({span}) verified: {what}; "
                    f"{self.checkpoints} signed checkpoint(s)")
        first = self.problems[0]
        more = f" (+{self.problem_count - 1} more problem(s))" if self.problem_count > 1 else ""
        return f"FAILED: {first.line()}{more}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"ok": self.ok, "source": self.source, "checked": self.checked, "first_seq": self.first_seq,
                "last_seq": self.last_seq, "high_water": self.high_water, "checkpoints": self.checkpoints,
                "hmac_checked": self.hmac_checked, "problem_count": self.problem_count,
                "problems": [{"seq": p.seq, "kind": p.kind, "message": p.message} for p in self.problems],
                "warnings": list(self.warnings), "seconds": round(self.seconds, 6),
                "entries_per_second": round(self.rate, 1)}


class ReceiptCheck(NamedTuple):
    """Result of checking one receipt line against the log."""

    ok: bool
    """True when the receipt matches an intact, correctly keyed entry."""
    reason: str
    """Why not (or a short confirmation)."""
    seq: int
    """The receipt's sequence number."""
    entry: Entry | None = None
    """The logged entry, when there is one."""


class Checkpoint(NamedTuple):
    """One signed checkpoint."""

    seq: int
    """Sequence number signed."""
    entry_hash: str
    """Entry hash at ``seq``."""
    signature: str
    """Base64 Ed25519 signature over ``receipts.checkpoint_message``."""
    public_key_id: str
    """Id of the signing key (``receipts.key_id_for`` of the raw public key)."""
    time: str
    """When it was signed."""


class ExportSummary(NamedTuple):
    """What an export wrote."""

    entries: int
    """Entry lines written."""
    checkpoints: int
    """Checkpoint lines written."""
    first_seq: int | None
    """First entry exported."""
    last_seq: int | None
    """Last entry exported (covered by a checkpoint)."""
    public_key_id: str | None
    """Id of the public key in the header."""


class _Key(NamedTuple):
    id: str
    secret: bytes

    def __repr__(self) -> str:
        return f"_Key(id={self.id!r})"


class _Problems:
    def __init__(self) -> None:
        self.items: list[Problem] = []
        self.count = 0

    def add(self, seq: int, kind: str, message: str) -> None:
        self.count += 1
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(Problem(seq, kind, message))

    def sorted(self) -> tuple[Problem, ...]:
        return tuple(sorted(self.items, key=lambda p: p.seq))


# --------------------------------------------------------------------------- key files


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def _read_private_file(path: str, what: str) -> bytes | None:
    """Read a secret file, refusing symlinks, other owners and group/other access."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(f"{path}: {what} is a symlink; refusing to use it") from None
        raise StoreError(f"{path}: cannot read {what}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{path}: {what} is not a regular file")
        if st.st_mode & 0o077:
            raise StoreError(f"{path}: {what} has mode {_mode(st)} (readable by others); refusing to use it: "
                             f"chmod 600 it, and since it may have leaked, rotate it")
        if st.st_uid != os.geteuid():
            raise StoreError(f"{path}: {what} is owned by uid {st.st_uid}, not by uid {os.geteuid()}; "
                             "refusing to use it")
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            if sum(map(len, chunks)) > 1 << 20:
                raise StoreError(f"{path}: {what} is too large to be a key")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write_private_file(path: str, data: bytes, *, replace: bool, mode: int = 0o600) -> bool:
    """Write ``data`` to ``path`` atomically with ``mode``.

    With ``replace=False`` an existing file wins (returns False): concurrent creators
    all end up using the same key.  Returns True when this call's data is in place.
    """
    directory = os.path.dirname(path)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, path)
            created = True
        else:
            try:
                os.link(tmp, path)
                created = True
            except FileExistsError:
                created = False
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return created


def _parse_hmac_key(path: str, data: bytes) -> _Key:
    text = data.decode("ascii", "replace").strip()
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise StoreError(f"{path}: not a valid receipt key (expected 64 lower-case hex digits)")
    secret = bytes.fromhex(text)
    return _Key(rc.key_id_for(secret), secret)


def _secure_dir(path: str) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        make_private_dir(path)
        st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{path}: exists and is not a directory")
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


# --------------------------------------------------------------------------- the log


class AuditLog:
    """The hash-chained audit log of one clawshell home, on an open :class:`Store`."""

    def __init__(self, store: Store, home: Home, *, checkpoint_every: int = CHECKPOINT_EVERY,
                 clock: Callable[[], float] = _time.time):
        """Use ``store`` (opened on ``home``); keys are looked up in ``home.security``."""
        self.store = store
        """The open store."""
        self.home = home
        """The state home (for ``security/``)."""
        self.checkpoint_every = checkpoint_every
        """Sign a checkpoint after every this many entries (0: never automatically)."""
        self.clock = clock
        """Source of "now" (epoch seconds)."""
        self.checkpoint_error: str | None = None
        """Why the last automatic checkpoint failed, if it did (the append itself stood)."""
        self._key: _Key | None = None
        self._signer: Any = None

    # ------------------------------------------------------------------ paths

    @property
    def key_path(self) -> str:
        """Path of the current HMAC key file."""
        return os.path.join(self.home.security, RECEIPT_KEY_FILE)

    def retired_key_path(self, key_id: str) -> str:
        """Path of a retired HMAC key."""
        return os.path.join(self.home.security, f"receipt.{key_id}.key")

    @property
    def signing_key_path(self) -> str:
        """Path of the Ed25519 checkpoint signing key."""
        return os.path.join(self.home.security, SIGNING_KEY_FILE)

    @property
    def public_key_path(self) -> str:
        """Path of the Ed25519 public key (PEM)."""
        return os.path.join(self.home.security, PUBLIC_KEY_FILE)

    # ------------------------------------------------------------------ append

    def append(self, record: Mapping[str, Any]) -> Appended:
        """Append ``record`` as the next chain entry and return its receipt.

        One immediate transaction: read the head, hash, HMAC, insert, move the
        high-water mark.  Raises :class:`StoreError` (fail closed) when the entry
        cannot be recorded or the key is missing, replaced or too open.
        """
        rec = rc.normalize_record(record)
        when = rec.get("time")
        if not isinstance(when, str) or not when:
            when = format_time(self.clock())
            rec["time"] = when
        body = rc.canonical_json(rec)
        index = rc.index_of(rec)
        key = self._key
        if key is None:
            key = self._load_current_key()
        with self.store.transaction() as cur:
            meta = dict(cur.execute("SELECT key, value FROM meta WHERE key IN ('audit_head', 'audit_key')"))
            row = cur.execute("SELECT seq, entry_hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
            last_seq, prev = (int(row[0]), row[1]) if row else (0, rc.GENESIS_HASH)
            head = _parse_head(meta.get("audit_head"))
            if head is not None and head[0] > last_seq:
                # The tail was removed behind our back: keep numbering after the
                # high-water mark so the hole stays visible instead of being refilled.
                last_seq, prev = head
            log_key = meta.get("audit_key")
            if key is None or key.id != log_key:
                key = self._resolve_key(log_key, last_seq)
            seq = last_seq + 1
            digest = hashlib.sha256(rc.entry_material(seq, prev, key.id, index, body)).hexdigest()
            mac = rc.receipt_hmac(key.secret, digest)
            cur.execute("INSERT INTO audit(seq, prev_hash, entry_hash, key_id, hmac, body, session, tool, "
                        "decision, time) VALUES (?,?,?,?,?,?,?,?,?,?)",
                        (seq, prev, digest, key.id, mac, body, *index))
            cur.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('audit_head', ?)", (f"{seq}:{digest}",))
            if log_key != key.id:
                cur.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('audit_key', ?)", (key.id,))
        self._key = key
        if self.checkpoint_every and seq % self.checkpoint_every == 0:
            try:
                self.checkpoint(seq, digest)
                self.checkpoint_error = None
            except Exception as exc:  # noqa: BLE001 - the entry is committed whatever happens here
                # The entry and its receipt stand; the missing checkpoint is reported
                # by verify, and the next export signs the head anyway.
                self.checkpoint_error = f"{exc.__class__.__name__}: {exc}"
        return Appended(seq=seq, entry_hash=digest, receipt=mac, key_id=key.id, time=when)

    def receipt_line(self, appended: Appended) -> str:
        """The one tagged line shown to the agent for ``appended``."""
        return rc.format_line(appended.seq, appended.entry_hash, appended.receipt, appended.key_id)

    # ------------------------------------------------------------------ keys

    def _load_current_key(self) -> _Key | None:
        data = _read_private_file(self.key_path, "receipt key")
        if data is None:
            return None
        return _parse_hmac_key(self.key_path, data)

    def _resolve_key(self, log_key: str | None, last_seq: int) -> _Key:
        """Under the write lock: the key to sign with, creating it on first use only."""
        key = self._load_current_key()
        if key is None:
            if log_key is None and last_seq == 0:
                _secure_dir(self.home.security)
                secret = os.urandom(32)
                _write_private_file(self.key_path, secret.hex().encode("ascii") + b"\n", replace=False)
                key = self._load_current_key()
                if key is None:
                    raise StoreError(f"{self.key_path}: receipt key vanished right after it was created")
                return key
            raise StoreError(
                f"{self.key_path}: receipt key is missing, but the log has {last_seq} entries signed with key "
                f"{log_key or 'unknown'}; restore the key file (or start a new key with "
                "`clawshell receipts rotate-key --force`: entries signed with the lost key can then no "
                "longer be HMAC-checked)")
        if log_key is not None and key.id != log_key:
            raise StoreError(
                f"{self.key_path}: receipt key {key.id} is not the log's current key {log_key} (the key file "
                "was replaced); restore the right key, or adopt a new one with "
                "`clawshell receipts rotate-key --force`")
        return key

    def known_keys(self) -> dict[str, bytes]:
        """All HMAC keys available (current and retired), by key id."""
        keys: dict[str, bytes] = {}
        current = self._load_current_key()
        if current is not None:
            keys[current.id] = current.secret
        for key_id in sorted(self._retired_ids()):
            path = self.retired_key_path(key_id)
            data = _read_private_file(path, "retired receipt key")
            if data is None:
                continue
            key = _parse_hmac_key(path, data)
            keys.setdefault(key.id, key.secret)
        return keys

    def rotate_key(self, *, force: bool = False) -> tuple[str | None, str]:
        """Start a new HMAC key; the old one is kept as ``receipt.<id>.key`` so old entries verify.

        Refuses when the log's current key is not available (missing or replaced key
        file) unless ``force``.  Returns ``(old key id or None, new key id)``.
        """
        with self.store.transaction() as cur:
            meta = dict(cur.execute("SELECT key, value FROM meta WHERE key IN ('audit_key')"))
            log_key = meta.get("audit_key")
            current = self._load_current_key()
            retired = self._retired_ids()
            if log_key is not None and (current is None or current.id != log_key) and log_key not in retired \
                    and not force:
                found = "missing" if current is None else f"key {current.id}, not {log_key}"
                raise StoreError(
                    f"{self.key_path}: the log's current receipt key {log_key} is not available ({found}); "
                    "restore it first, or pass --force to start a new key anyway (entries signed with "
                    f"{log_key} can then no longer be HMAC-checked)")
            _secure_dir(self.home.security)
            if current is not None:
                _write_private_file(self.retired_key_path(current.id), current.secret.hex().encode("ascii") + b"\n",
                                    replace=True)
            secret = os.urandom(32)
            new = _Key(rc.key_id_for(secret), secret)
            _write_private_file(self.key_path, secret.hex().encode("ascii") + b"\n", replace=True)
            cur.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('audit_key', ?)", (new.id,))
        self._key = new
        return (log_key if log_key is not None else (current.id if current else None)), new.id

    def _retired_ids(self) -> set[str]:
        try:
            names = os.listdir(self.home.security)
        except FileNotFoundError:
            return set()
        except OSError as exc:
            raise StoreError(f"{self.home.security}: cannot list retired receipt keys: {exc.strerror}") from None
        # receipt.<16 hex>.key
        return {n[8:24] for n in names if n.startswith("receipt.") and n.endswith(".key") and len(n) == 28
                and rc.is_hex(n[8:24], 16)}

    # ------------------------------------------------------------------ checkpoints

    def _signing_key(self) -> Any:
        """The Ed25519 private key, created on first use (never when checkpoints exist)."""
        if self._signer is not None:
            return self._signer
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519

        data = _read_private_file(self.signing_key_path, "checkpoint signing key")
        if data is None:
            existing = self.store.query("SELECT count(*), max(public_key_id) FROM checkpoints")[0]
            if existing[0]:
                raise StoreError(
                    f"{self.signing_key_path}: checkpoint signing key is missing, but {existing[0]} checkpoints "
                    f"were signed with key {existing[1]}; restore the key file from a backup")
            _secure_dir(self.home.security)
            private = ed25519.Ed25519PrivateKey.generate()
            pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption())
            _write_private_file(self.signing_key_path, pem, replace=False)
            data = _read_private_file(self.signing_key_path, "checkpoint signing key")
            if data is None:
                raise StoreError(f"{self.signing_key_path}: signing key vanished right after it was created")
        try:
            private = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise StoreError(f"{self.signing_key_path}: not a valid Ed25519 private key ({exc})") from None
        if not isinstance(private, ed25519.Ed25519PrivateKey):
            raise StoreError(f"{self.signing_key_path}: not an Ed25519 private key")
        pub_pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo)
        try:
            with open(self.public_key_path, "rb") as fh:
                on_disk = fh.read()
        except FileNotFoundError:
            on_disk = None
        if on_disk != pub_pem:
            _write_private_file(self.public_key_path, pub_pem, replace=True)
        self._signer = private
        return private

    def public_key_pem(self) -> str:
        """The checkpoint public key (PEM), creating the key pair on first use."""
        from cryptography.hazmat.primitives import serialization

        private = self._signing_key()
        return private.public_key().public_bytes(serialization.Encoding.PEM,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")

    def public_key_id(self) -> str:
        """Id of the checkpoint public key."""
        return _public_key_id(self._signing_key().public_key())

    def checkpoint(self, seq: int | None = None, entry_hash: str | None = None) -> Checkpoint | None:
        """Sign a checkpoint at ``seq`` (default: the current head); None for an empty log.

        An existing checkpoint at that sequence number is kept and returned.
        """
        if seq is None or entry_hash is None:
            rows = self.store.query("SELECT seq, entry_hash FROM audit ORDER BY seq DESC LIMIT 1")
            if not rows:
                return None
            seq, entry_hash = int(rows[0][0]), rows[0][1]
        signer = self._signing_key()
        pub_id = _public_key_id(signer.public_key())
        import base64

        signature = base64.b64encode(signer.sign(rc.checkpoint_message(seq, entry_hash))).decode("ascii")
        when = format_time(self.clock())
        with self.store.transaction() as cur:
            cur.execute("INSERT OR IGNORE INTO checkpoints(seq, entry_hash, signature, public_key_id, time) "
                        "VALUES (?,?,?,?,?)", (seq, entry_hash, signature, pub_id, when))
            row = cur.execute("SELECT seq, entry_hash, signature, public_key_id, time FROM checkpoints "
                              "WHERE seq = ?", (seq,)).fetchone()
        return Checkpoint(int(row[0]), row[1], row[2], row[3], row[4])

    def checkpoints(self) -> list[Checkpoint]:
        """All stored checkpoints, by sequence number."""
        return [Checkpoint(int(r[0]), r[1], r[2], r[3], r[4]) for r in
                self.store.query("SELECT seq, entry_hash, signature, public_key_id, time FROM checkpoints "
                                 "ORDER BY seq")]

    # ------------------------------------------------------------------ reading

    def head(self) -> tuple[int, str]:
        """``(seq, entry_hash)`` of the last entry, ``(0, GENESIS_HASH)`` when empty."""
        rows = self.store.query("SELECT seq, entry_hash FROM audit ORDER BY seq DESC LIMIT 1")
        return (int(rows[0][0]), rows[0][1]) if rows else (0, rc.GENESIS_HASH)

    def high_water(self) -> int:
        """The high-water mark: the highest sequence number ever appended (from meta)."""
        rows = self.store.query("SELECT value FROM meta WHERE key = 'audit_head'")
        head = _parse_head(rows[0][0]) if rows else None
        return head[0] if head else 0

    def get(self, seq: int) -> Entry | None:
        """The entry with sequence number ``seq``, if present."""
        rows = self.store.query(f"SELECT {_ENTRY_COLUMNS} FROM audit WHERE seq = ?", (int(seq),))
        return Entry(*rows[0]) if rows else None

    def iterate(self, after: int = 0, upto: int | None = None) -> Iterator[Entry]:
        """Entries with ``after < seq <= upto``, oldest first, streamed."""
        if upto is None:
            rows = self.store.iterate(f"SELECT {_ENTRY_COLUMNS} FROM audit WHERE seq > ? ORDER BY seq", (after,))
        else:
            rows = self.store.iterate(f"SELECT {_ENTRY_COLUMNS} FROM audit WHERE seq > ? AND seq <= ? "
                                      "ORDER BY seq", (after, upto))
        for row in rows:
            yield Entry(*row)

    def query(self, *, last: int | None = None, session: str | None = None, tool: str | None = None,
              decision: str | None = None, outcome: str | None = None, since: str | None = None,
              until: str | None = None) -> list[Entry]:
        """Entries matching every given filter, oldest first; ``last`` keeps the newest N.

        ``tool`` may be a glob (``file.*``); ``since``/``until`` compare the ISO time.
        """
        where: list[str] = []
        params: list[Any] = []
        if session is not None:
            where.append("session = ?")
            params.append(session)
        if tool is not None:
            where.append("tool GLOB ?" if any(c in tool for c in "*?[") else "tool = ?")
            params.append(tool)
        if decision is not None:
            where.append("decision = ?")
            params.append(decision)
        if outcome is not None:
            where.append("json_extract(body, '$.outcome') = ?")
            params.append(outcome)
        if since is not None:
            where.append("time >= ?")
            params.append(since)
        if until is not None:
            where.append("time < ?")
            params.append(until)
        sql = f"SELECT {_ENTRY_COLUMNS} FROM audit"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq DESC"
        if last is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(last)))
        rows = self.store.query(sql, params)
        rows.reverse()
        return [Entry(*row) for row in rows]

    # ------------------------------------------------------------------ verification

    def verify(self, *, public_key_pem: bytes | None = None) -> VerifyReport:
        """Check the whole chain: hashes, links, sequence, HMACs, high-water mark, checkpoints.

        Every failure is located by sequence number.  ``public_key_pem`` pins the key
        checkpoints must verify with (default: this home's ``ed25519.pub``).
        """
        started = _time.perf_counter()
        keys = self.known_keys()
        with self.store.transaction(immediate=False):  # one snapshot for every read below
            return self._verify(started, keys, public_key_pem)

    def _verify(self, started: float, keys: dict[str, bytes], public_key_pem: bytes | None) -> VerifyReport:
        problems = _Problems()
        warnings: list[str] = []
        checkpoints = {cp.seq: cp for cp in self.checkpoints()}
        verifier, verifier_id = self._checkpoint_verifier(public_key_pem, bool(checkpoints), warnings)
        sha256 = hashlib.sha256
        material = rc.entry_material
        macs = {key_id: rc.receipt_hmac_function(secret) for key_id, secret in keys.items()}
        equal = rc.constant_time_equal
        missing_keys: set[str] = set()
        expected = 1
        prev = rc.GENESIS_HASH
        checked = 0
        first_seq: int | None = None
        last_seq = 0
        last_hash = rc.GENESIS_HASH
        # The body comes as its UTF-8 bytes: hashing needs no decode/encode round trip.
        for seq, prev_hash, stored, key_id, mac, body, session, tool, decision, when in self.store.iterate(
                "SELECT seq, prev_hash, entry_hash, key_id, hmac, CAST(body AS BLOB), session, tool, decision, time "
                "FROM audit ORDER BY seq"):
            checked += 1
            if first_seq is None:
                first_seq = seq
            linked = True
            if seq != expected:
                problems.add(expected, "gap", f"entries {expected}..{seq - 1} are missing (deleted)"
                             if seq - 1 > expected else f"entry {expected} is missing (deleted)")
                linked = False
            if sha256(material(seq, prev_hash, key_id, (session, tool, decision, when), body)).hexdigest() != stored:
                problems.add(seq, "hash_mismatch", "the entry does not match its hash: a field was edited")
            elif linked and prev_hash != prev:
                problems.add(seq, "prev_hash_mismatch",
                             f"prev_hash does not match entry {seq - 1}: entries were swapped, replaced or inserted"
                             if seq > 1 else "the first entry does not start from the genesis hash")
            hmac_of = macs.get(key_id)
            if hmac_of is None:
                if key_id not in missing_keys:
                    missing_keys.add(key_id)
                    problems.add(seq, "key_missing", f"signed with HMAC key {key_id}, which is not in "
                                 f"{self.home.security} (key file replaced or lost): HMAC cannot be checked")
                else:
                    problems.count += 1
            elif not equal(hmac_of(stored), mac):
                problems.add(seq, "hmac_mismatch", f"HMAC does not match key {key_id}: the entry was forged "
                             "or re-hashed")
            cp = checkpoints.get(seq)
            if cp is not None and cp.entry_hash != stored:
                problems.add(seq, "checkpoint_mismatch", "the entry differs from the one a signed checkpoint "
                             "covers: it was replaced")
            prev = stored
            expected = seq + 1
            last_seq = seq
            last_hash = stored
        rows = self.store.query("SELECT value FROM meta WHERE key = 'audit_head'")
        head = _parse_head(rows[0][0]) if rows else None
        high_water = max([head[0] if head else 0, *checkpoints.keys()])
        if head is not None and head[0] > last_seq:
            problems.add(last_seq + 1, "truncated",
                         f"the log ends at seq {last_seq} but the high-water mark says {head[0]} entries were "
                         f"written: entries {last_seq + 1}..{head[0]} are missing")
        elif checkpoints and max(checkpoints) > last_seq:
            top = max(checkpoints)
            problems.add(last_seq + 1, "truncated",
                         f"the log ends at seq {last_seq} but a signed checkpoint covers seq {top}: entries "
                         f"{last_seq + 1}..{top} are missing")
        elif head is not None and head[0] == last_seq and head[1] != last_hash:
            problems.add(last_seq, "head_mismatch", "the last entry is not the one the high-water mark recorded: "
                         "it was replaced")
        elif head is not None and head[0] < last_seq:
            problems.add(head[0] + 1, "head_mismatch", f"entries after the high-water mark (seq {head[0]}) were "
                         "not written by clawshell's append: they were inserted")
        elif head is None and last_seq:
            warnings.append("no high-water mark in meta: a truncated tail could only be caught by checkpoints")
        cp_ok = self._check_signatures(checkpoints.values(), verifier, verifier_id, problems)
        if self.checkpoint_every and last_seq >= self.checkpoint_every:
            missing = [s for s in range(self.checkpoint_every, last_seq + 1, self.checkpoint_every)
                       if s not in checkpoints]
            if missing:
                warnings.append(f"{len(missing)} periodic checkpoint(s) missing (first at seq {missing[0]}); "
                                "an interrupted append can leave one out; `clawshell audit export` signs the head")
        return VerifyReport(source=self.store.path, checked=checked, first_seq=first_seq,
                            last_seq=last_seq if checked else None, problems=problems.sorted(),
                            problem_count=problems.count, checkpoints=cp_ok, high_water=high_water,
                            hmac_checked=True, warnings=tuple(warnings),
                            seconds=_time.perf_counter() - started)

    def _checkpoint_verifier(self, public_key_pem: bytes | None, needed: bool,
                             warnings: list[str]) -> tuple[Any, str | None]:
        if public_key_pem is not None:
            key = load_public_key(public_key_pem, "--public-key")
            return key, _public_key_id(key)
        if not needed:
            return None, None
        try:
            with open(self.public_key_path, "rb") as fh:
                pem = fh.read()
        except FileNotFoundError:
            data = _read_private_file(self.signing_key_path, "checkpoint signing key")
            if data is None:
                warnings.append(f"no checkpoint public key in {self.home.security}: signatures not checked")
                return None, None
            from cryptography.hazmat.primitives import serialization

            private = serialization.load_pem_private_key(data, password=None)
            key = private.public_key()
            return key, _public_key_id(key)
        except OSError as exc:
            raise StoreError(f"{self.public_key_path}: cannot read the public key: {exc.strerror}") from None
        key = load_public_key(pem, self.public_key_path)
        return key, _public_key_id(key)

    @staticmethod
    def _check_signatures(checkpoints: Iterable[Checkpoint], verifier: Any, verifier_id: str | None,
                          problems: _Problems) -> int:
        if verifier is None:
            return 0
        import base64

        from cryptography.exceptions import InvalidSignature

        ok = 0
        for cp in checkpoints:
            if cp.public_key_id != verifier_id:
                problems.add(cp.seq, "signature_invalid", f"checkpoint signed by key {cp.public_key_id}, not by "
                             f"the expected public key {verifier_id}")
                continue
            try:
                verifier.verify(base64.b64decode(cp.signature, validate=True),
                                rc.checkpoint_message(cp.seq, cp.entry_hash))
                ok += 1
            except (InvalidSignature, ValueError):
                problems.add(cp.seq, "signature_invalid", "the checkpoint signature does not verify: the "
                             "checkpoint was forged or edited")
        return ok

    def verify_receipt(self, line: str | rc.ReceiptLine) -> ReceiptCheck:
        """Check one receipt line against the log (raises ``ReceiptParseError`` if it does not parse)."""
        parsed = rc.parse_line(line) if isinstance(line, str) else line
        entry = self.get(parsed.seq)
        if entry is None:
            head, _ = self.head()
            return ReceiptCheck(False, f"no entry seq {parsed.seq} in the log (it ends at seq {head})", parsed.seq)
        if not entry.entry_hash.startswith(parsed.entry):
            return ReceiptCheck(False, f"entry hash differs: the receipt is not for the entry logged at seq "
                                f"{parsed.seq}", parsed.seq, entry)
        if entry.key_id != parsed.key_id:
            return ReceiptCheck(False, f"the receipt names key {parsed.key_id} but entry {parsed.seq} was made with "
                                f"key {entry.key_id}", parsed.seq, entry)
        if rc.entry_hash(entry.seq, entry.prev_hash, entry.key_id, entry.index, entry.body) != entry.entry_hash:
            return ReceiptCheck(False, f"entry {parsed.seq} in the log was altered (it no longer matches its hash)",
                                parsed.seq, entry)
        secret = self.known_keys().get(parsed.key_id)
        if secret is None:
            return ReceiptCheck(False, f"HMAC key {parsed.key_id} is not in {self.home.security}: cannot check "
                                "the receipt", parsed.seq, entry)
        mac = rc.receipt_hmac(secret, entry.entry_hash)
        if not rc.constant_time_equal(mac[:rc.HMAC_PREFIX_LEN], parsed.hmac):
            return ReceiptCheck(False, "HMAC does not match: this receipt was not issued by this clawshell home "
                                "(forged, or for another log)", parsed.seq, entry)
        if not rc.constant_time_equal(mac, entry.hmac):
            return ReceiptCheck(False, f"the log's own HMAC for entry {parsed.seq} is wrong (the entry was "
                                "tampered with)", parsed.seq, entry)
        if entry.seq > 1:
            before = self.get(entry.seq - 1)
            if before is not None and before.entry_hash != entry.prev_hash:
                return ReceiptCheck(False, f"entry {entry.seq} is not linked to entry {entry.seq - 1}: the chain "
                                    "was altered", parsed.seq, entry)
        after = self.get(entry.seq + 1)
        if after is not None and after.prev_hash != entry.entry_hash:
            return ReceiptCheck(False, f"entry {entry.seq + 1} does not link back to entry {entry.seq}: the chain "
                                "was altered", parsed.seq, entry)
        return ReceiptCheck(True, f"valid: entry {entry.seq} ({entry.time}, {entry.tool}, {entry.decision}) "
                            f"matches its receipt and key {entry.key_id}", parsed.seq, entry)

    # ------------------------------------------------------------------ export

    def export(self, out: IO[str], *, after: int = 0) -> ExportSummary:
        """Write the JSONL export (``docs/audit.md``) of entries after ``after`` to ``out``.

        Signs a checkpoint at the current head first, so the export ends on a signed
        entry; entries appended meanwhile are left for the next export.
        """
        head_seq, _ = self.head()
        cp = self.checkpoint() if head_seq else None
        with self.store.transaction(immediate=False):  # one snapshot for every read below
            return self._export(out, after, cp.seq if cp is not None else 0)

    def _export(self, out: IO[str], after: int, upto: int) -> ExportSummary:
        cp = upto or None
        pub_pem = self.public_key_pem() if cp is not None or self.store.query(
            "SELECT 1 FROM checkpoints LIMIT 1") else None
        pub_id = _public_key_id(self._signing_key().public_key()) if pub_pem else None
        header = {"type": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                  "exported_at": format_time(self.clock()), "after": after, "upto": upto,
                  "genesis": rc.GENESIS_HASH, "hash": "sha256",
                  "entry_domain": rc.ENTRY_DOMAIN.decode("ascii"),
                  "checkpoint_domain": rc.CHECKPOINT_DOMAIN.decode("ascii"),
                  "receipt_domain": rc.RECEIPT_DOMAIN.decode("ascii"),
                  "public_key": ({"algorithm": "ed25519", "id": pub_id, "pem": pub_pem} if pub_pem else None)}
        out.write(_line(header))
        count = 0
        first: int | None = None
        last: int | None = None
        dump = rc.canonical_json
        for seq, prev_hash, entry_hash_, key_id, mac, body, *index in self.store.iterate(
                "SELECT seq, prev_hash, entry_hash, key_id, hmac, body, session, tool, decision, time FROM audit "
                "WHERE seq > ? AND seq <= ? ORDER BY seq", (after, upto)):
            out.write(f'{{"type":"entry","seq":{seq},"prev_hash":{dump(prev_hash)},"entry_hash":'
                      f'{dump(entry_hash_)},"key_id":{dump(key_id)},"hmac":{dump(mac)},"index":{dump(index)},'
                      f'"body":{body}}}\n')
            count += 1
            first = seq if first is None else first
            last = seq
        cps = 0
        for seq, entry_hash_, signature, public_key_id, when in self.store.query(
                "SELECT seq, entry_hash, signature, public_key_id, time FROM checkpoints WHERE seq > ? AND seq <= ? "
                "ORDER BY seq", (after, upto)):
            out.write(_line({"type": "checkpoint", "seq": seq, "entry_hash": entry_hash_, "signature": signature,
                             "public_key_id": public_key_id, "time": when}))
            cps += 1
        return ExportSummary(entries=count, checkpoints=cps, first_seq=first, last_seq=last, public_key_id=pub_id)


# --------------------------------------------------------------------------- export verification


def _line(obj: dict[str, Any]) -> str:
    """One export line: compact ASCII JSON with ``type`` first (easy to route by prefix)."""
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n"


def _parse_head(value: Any) -> tuple[int, str] | None:
    if not isinstance(value, str) or ":" not in value:
        return None
    seq, _, digest = value.partition(":")
    try:
        return int(seq), digest
    except ValueError:
        return None


def _public_key_id(public_key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return rc.key_id_for(raw)


def load_public_key(pem: bytes | str, where: str) -> Any:
    """Load an Ed25519 public key from PEM; :class:`StoreError` naming ``where`` if it is not one."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    data = pem.encode("ascii", "replace") if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_public_key(data)
    except Exception as exc:  # noqa: BLE001 - cryptography raises several types here
        raise StoreError(f"{where}: not a PEM public key ({exc.__class__.__name__})") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise StoreError(f"{where}: not an Ed25519 public key")
    return key


def verify_export(lines: Iterable[str], *, source: str = "<export>",
                  public_key_pem: bytes | None = None) -> VerifyReport:
    """Verify a JSONL export with only a public key: hashes, links, sequence, signatures.

    ``public_key_pem`` pins the expected key; without it the key embedded in the
    export's header is used (and a warning says so).  HMACs are not checked (they need
    the secret key); every entry up to the last one must be covered by a checkpoint.
    """
    started = _time.perf_counter()
    problems = _Problems()
    warnings: list[str] = []
    header: dict[str, Any] | None = None
    checkpoints: list[Checkpoint] = []
    hashes = bytearray()
    base: int | None = None
    expected: int | None = None
    prev: str | None = None
    checked = 0
    last_seq: int | None = None
    sha256 = hashlib.sha256
    material = rc.entry_material
    canon = rc.canonical_json
    loads = json.loads
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        obj: Any = None
        raw_body: str | None = None
        text = line.rstrip("\r\n")
        if text.startswith('{"type":"entry",') and text.endswith("}"):
            # Fast path for lines as clawshell writes them: the body is the last field,
            # byte for byte the canonical text that was hashed, so hash it as is.
            pos = text.find(',"body":')
            if pos > 0:
                try:
                    obj = loads(text[:pos] + "}")
                    raw_body = text[pos + 8:-1]
                except ValueError:
                    obj = None
        if obj is None:
            try:
                obj = loads(line)
            except ValueError as exc:
                problems.add(expected or 0, "malformed", f"line {number} is not JSON ({exc.msg})")
                continue
        kind = obj.get("type") if isinstance(obj, dict) else None
        if header is None:
            if kind != "header" or obj.get("format") != EXPORT_FORMAT:
                problems.add(0, "malformed", f"line {number}: expected the {EXPORT_FORMAT} header line first")
                break
            if obj.get("version") != EXPORT_VERSION:
                problems.add(0, "malformed", f"unsupported export version {obj.get('version')!r}")
                break
            header = obj
            continue
        if kind == "entry":
            try:
                seq = int(obj["seq"])
                prev_hash, stored, key_id = str(obj["prev_hash"]), str(obj["entry_hash"]), str(obj["key_id"])
                index = obj["index"]
                if type(index) is not list or len(index) != 4 or \
                        any(v is not None and type(v) is not str for v in index):
                    raise ValueError("index must be a list of 4 strings or nulls")
                body = raw_body if raw_body is not None else canon(obj["body"])
                digest = sha256(material(seq, prev_hash, key_id, index, body)).hexdigest()
                if digest != stored and raw_body is not None:
                    body = canon(loads(line)["body"])  # re-serialized by a shipper: canonicalize
                    digest = sha256(material(seq, prev_hash, key_id, index, body)).hexdigest()
            except (KeyError, TypeError, ValueError) as exc:
                problems.add(expected or 0, "malformed", f"line {number}: bad entry line ({exc})")
                continue
            checked += 1
            if base is None:
                base, expected, prev = seq, seq, prev_hash
                if seq != 1:
                    warnings.append(f"the export starts at seq {seq}: the chain is anchored at that entry's "
                                    f"prev_hash {prev_hash[:16]}...")
            assert expected is not None
            linked = True
            if seq < expected:
                problems.add(seq, "order", f"line {number}: seq {seq} repeats or goes backwards")
                continue
            if seq > expected:
                problems.add(expected, "gap", f"entries {expected}..{seq - 1} are missing (deleted)"
                             if seq - 1 > expected else f"entry {expected} is missing (deleted)")
                if seq - expected > 10_000_000:
                    problems.add(seq, "malformed", f"line {number}: seq jumps by {seq - expected}; stopped")
                    break
                hashes.extend(bytes(32 * (seq - expected)))
                linked = False
            if digest != stored:
                problems.add(seq, "hash_mismatch", "the entry does not match its hash: a field was edited")
            elif linked and prev_hash != prev:
                problems.add(seq, "prev_hash_mismatch", f"prev_hash does not match entry {seq - 1}: entries "
                             "were swapped, replaced or inserted")
            try:
                hashes.extend(bytes.fromhex(stored))
            except ValueError:
                hashes.extend(bytes(32))
            prev = stored
            expected = seq + 1
            last_seq = seq
        elif kind == "checkpoint":
            try:
                checkpoints.append(Checkpoint(int(obj["seq"]), str(obj["entry_hash"]), str(obj["signature"]),
                                              str(obj["public_key_id"]), str(obj.get("time", ""))))
            except (KeyError, TypeError, ValueError) as exc:
                problems.add(0, "malformed", f"line {number}: bad checkpoint line ({exc})")
        else:
            problems.add(expected or 0, "malformed", f"line {number}: unknown line type {kind!r}")
    if header is None and not problems.count:
        problems.add(0, "malformed", "empty export: no header line")
    embedded = (header or {}).get("public_key") or None
    verifier = verifier_id = None
    if public_key_pem is not None:
        verifier = load_public_key(public_key_pem, "--public-key")
        verifier_id = _public_key_id(verifier)
        if isinstance(embedded, dict) and embedded.get("id") not in (None, verifier_id):
            warnings.append(f"the export names public key {embedded.get('id')}, not the given key {verifier_id}")
    elif isinstance(embedded, dict) and embedded.get("pem"):
        verifier = load_public_key(str(embedded["pem"]), f"{source}: header public_key")
        verifier_id = _public_key_id(verifier)
        warnings.append("checked against the public key inside the export itself; pass --public-key FILE "
                        "(the ed25519.pub of the machine that wrote it) to pin the key")
    covered = 0
    for cp in checkpoints:
        if base is not None and base <= cp.seq <= (last_seq or 0):
            offset = (cp.seq - base) * 32
            if hashes[offset:offset + 32].hex() != cp.entry_hash:
                problems.add(cp.seq, "checkpoint_mismatch", "the entry differs from the one the signed checkpoint "
                             "covers: it was replaced")
        elif last_seq is not None and cp.seq > last_seq:
            problems.add(last_seq + 1, "truncated", f"the export ends at seq {last_seq} but a signed checkpoint "
                         f"covers seq {cp.seq}: entries {last_seq + 1}..{cp.seq} are missing")
        covered = max(covered, cp.seq)
    if verifier is None:
        if checked:
            problems.add(base or 0, "signature_invalid", "no public key to check the checkpoints with (none "
                         "given and none in the export)")
        ok_sigs = 0
    else:
        ok_sigs = AuditLog._check_signatures(checkpoints, verifier, verifier_id, problems)
    if checked and base is not None and last_seq is not None and covered < last_seq:
        if covered >= base:
            problems.add(covered + 1, "unsigned", f"entries after seq {covered} are not covered by a signed "
                         "checkpoint: anyone could have appended them")
        else:
            problems.add(base, "unsigned", "no entry is covered by a signed checkpoint: anyone could have "
                         "written them")
    upto = (header or {}).get("upto")
    if isinstance(upto, int) and last_seq is not None and upto > last_seq:
        problems.add(last_seq + 1, "truncated", f"the header says the export runs to seq {upto} but it ends at "
                     f"seq {last_seq}")
    return VerifyReport(source=source, checked=checked, first_seq=base, last_seq=last_seq,
                        problems=problems.sorted(), problem_count=problems.count, checkpoints=ok_sigs,
                        high_water=max([covered, last_seq or 0]), hmac_checked=False, warnings=tuple(warnings),
                        seconds=_time.perf_counter() - started)
