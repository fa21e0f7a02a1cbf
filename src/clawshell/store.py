"""The one SQLite database of a clawshell home (``storage/clawshell.db``).

This is the only module that imports :mod:`sqlite3`.  The database runs in WAL mode
with a generous busy timeout so that many clawshell processes (one per agent
command) can append to it at once; every write goes through
:meth:`Store.transaction`, which takes the write lock up front (``BEGIN IMMEDIATE``)
so a writer never has to upgrade a read snapshot and fail with ``SQLITE_BUSY``.

The schema is versioned: ``meta.schema_version`` names the last migration applied
and :data:`MIGRATIONS` lists them in order.  Migration 1 is the schema written down in
``docs/architecture.md`` ("Database schema").

Every failure (missing or read-only file or directory, full disk, a file that is not
a database, a corrupt one) becomes :class:`~clawshell.errors.StoreError` with one line
naming the file and the problem: callers fail closed on it.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from .errors import StoreError
from .home import Home

BUSY_TIMEOUT_SECONDS = 60.0
"""How long a connection waits for the write lock before giving up.  Appends hold
the lock for well under a millisecond, so this only matters under pathological
contention (or a process stopped while holding the lock)."""

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (1, (
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)",
        "CREATE TABLE audit(seq INTEGER PRIMARY KEY, prev_hash TEXT NOT NULL, entry_hash TEXT NOT NULL,"
        " key_id TEXT NOT NULL, hmac TEXT NOT NULL, body TEXT NOT NULL,"
        " session TEXT, tool TEXT, decision TEXT, time TEXT)",
        "CREATE TABLE checkpoints(seq INTEGER PRIMARY KEY, entry_hash TEXT NOT NULL, signature TEXT NOT NULL,"
        " public_key_id TEXT NOT NULL, time TEXT NOT NULL)",
        "CREATE TABLE approvals(token TEXT PRIMARY KEY, digest TEXT NOT NULL, session TEXT, command TEXT NOT NULL,"
        " cwd TEXT, score INTEGER, reason TEXT, gated INTEGER NOT NULL DEFAULT 0,"
        " status TEXT NOT NULL,"
        " scope TEXT, created REAL NOT NULL, decided REAL, expires REAL)",
        "CREATE TABLE grants(digest TEXT NOT NULL, session TEXT, scope TEXT NOT NULL, expires REAL,"
        " created REAL NOT NULL)",
        "CREATE TABLE sessions(id TEXT PRIMARY KEY, task TEXT, cwd TEXT, created REAL NOT NULL)",
        "CREATE TABLE estop(id INTEGER PRIMARY KEY CHECK (id = 1), engaged INTEGER NOT NULL,"
        " reason TEXT, since REAL)",
        "CREATE TABLE runs(pid INTEGER NOT NULL, pgid INTEGER, session TEXT, started REAL NOT NULL,"
        " boot TEXT, PRIMARY KEY (pid, started))",
        "CREATE TABLE otp_state(id INTEGER PRIMARY KEY CHECK (id = 1), last_step INTEGER,"
        " failures INTEGER NOT NULL DEFAULT 0, locked_until REAL)",
        # Query indexes for `clawshell audit --session/--filter`.  Each also holds the
        # rowid (seq), so "newest N of a session" is an index range scan.
        "CREATE INDEX audit_session ON audit(session)",
        "CREATE INDEX audit_tool ON audit(tool)",
        "CREATE INDEX audit_decision ON audit(decision)",
        "CREATE INDEX audit_time ON audit(time)",
        "CREATE INDEX approvals_status ON approvals(status)",
        "CREATE INDEX grants_digest ON grants(digest)",
    )),
)
"""Versioned migrations ``(version, statements)``, applied in order in one
transaction each.  Never edit a released migration: add a new one."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The schema version this code writes."""

_PROBLEMS: tuple[tuple[str, str], ...] = (
    ("file is not a database", "file is not a database (corrupt or not a clawshell database; "
                               "move it aside to start a new one)"),
    ("file is encrypted or is not a database", "file is not a database (corrupt or not a clawshell "
                                               "database; move it aside to start a new one)"),
    ("malformed", "database is corrupt (disk image is malformed); move it aside to start a new one"),
    ("readonly database", "database is read-only (check the permissions of the file and its "
                          "directory, or a read-only mount)"),
    ("disk is full", "disk is full: cannot record"),
    ("database is locked", "database is locked by another process (gave up waiting; the limit is "
                           f"{BUSY_TIMEOUT_SECONDS:.0f} s)"),
    ("database is busy", "database is busy (another process holds it)"),
    ("unable to open database file", "cannot open the database file (missing, or no permission on "
                                     "the file or its directory)"),
    ("disk i/o error", "disk I/O error"),
)


def describe_error(path: str, exc: BaseException) -> str:
    """One line naming ``path`` and what is wrong, for an sqlite3 or OS error."""
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc)
        return f"{exc.filename or path}: {reason}"
    text = str(exc)
    low = text.lower()
    for needle, message in _PROBLEMS:
        if needle in low:
            return f"{path}: {message}"
    return f"{path}: {text or exc.__class__.__name__}"


@contextmanager
def _migration_lock(path: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``<database>.lock`` (waits up to the busy timeout).

    The kernel drops the lock when its holder dies, so a killed migrator never wedges
    the next process.
    """
    import fcntl

    lock_path = path + ".lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StoreError(describe_error(lock_path, exc)) from None
    try:
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(f"{lock_path}: another process has been setting up the database "
                                     f"for over {BUSY_TIMEOUT_SECONDS:.0f} s") from None
                time.sleep(0.005)
        yield
    finally:
        os.close(fd)  # releases the lock


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def make_private_dir(path: str) -> None:
    """Create ``path`` (and missing parents) with mode 0700 for every directory made.

    ``os.makedirs(mode=...)`` applies the mode to the leaf only; parents made on the
    way would get the umask's default (usually 0755).
    """
    parent = os.path.dirname(path)
    if parent and parent != path and not os.path.isdir(parent):
        make_private_dir(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return
    os.chmod(path, 0o700)  # whatever the umask


def _unwritable(path: str, st: os.stat_result, what: str, need: int) -> str | None:
    """Why ``path`` cannot be written, or None.

    Root passes every permission check, so the owner's write bit is looked at too: a
    file or directory someone made read-only is refused, not silently written.
    """
    tail = "cannot record, so nothing runs"
    if not st.st_mode & stat.S_IWUSR:
        return f"{path}: {what} is read-only (mode {_mode(st)}); {tail}"
    if os.access(path, need):
        return None
    try:
        read_only_fs = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        read_only_fs = False
    if read_only_fs:
        return f"{path}: {what} is on a read-only file system; {tail}"
    return (f"{path}: {what} is not writable by uid {os.geteuid()} (mode {_mode(st)}, owner uid {st.st_uid}); "
            f"{tail}")


class Store:
    """An open connection to the database of one clawshell home.

    Use :meth:`open`; the connection is not shared between processes (open one per
    process, after any fork).  Reads outside :meth:`transaction` see the latest
    committed state; writes must go through :meth:`transaction`.
    """

    def __init__(self, conn: sqlite3.Connection, path: str, readonly: bool):
        """Wrap an already-configured connection (use :meth:`open`)."""
        self._conn = conn
        self.path = path
        """Absolute path of the database file."""
        self.readonly = readonly
        """True when opened read-only: :meth:`transaction` refuses to write."""

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, home: Home, *, readonly: bool = False) -> "Store":
        """Open (creating and migrating if needed) the database of ``home``.

        Read-write: creates ``storage/`` (0700) and the file (0600), refuses a file or
        directory that is read-only, switches the file to WAL and applies pending
        migrations.  Read-only: the file must exist and be fully migrated.  Raises
        :class:`StoreError` with one line on any failure.
        """
        path = home.database
        try:
            if readonly:
                conn = cls._connect_readonly(path)
            else:
                conn = cls._connect_readwrite(home, path)
        except StoreError:
            raise
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(describe_error(path, exc)) from None
        store = cls(conn, path, readonly)
        try:
            store._migrate()
        except StoreError:
            conn.close()
            raise
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(describe_error(path, exc)) from None
        return store

    @staticmethod
    def _connect_readonly(path: str) -> sqlite3.Connection:
        if not os.path.exists(path):
            raise StoreError(f"{path}: no database yet (nothing has been recorded in this home)")
        from urllib.parse import quote

        conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS,
                               isolation_level=None, check_same_thread=False)
        return conn

    @staticmethod
    def _connect_readwrite(home: Home, path: str) -> sqlite3.Connection:
        storage = home.storage
        try:
            st = os.stat(storage)
        except FileNotFoundError:
            make_private_dir(home.root)
            make_private_dir(storage)
            st = os.stat(storage)
        if not stat.S_ISDIR(st.st_mode):
            raise StoreError(f"{storage}: exists and is not a directory")
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(storage, 0o700)
        problem = _unwritable(storage, st, "storage directory", os.W_OK | os.X_OK)
        if problem:
            raise StoreError(problem)
        try:
            fst = os.stat(path)
        except FileNotFoundError:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                os.close(fd)
            except FileExistsError:
                pass
            fst = os.stat(path)
        if not stat.S_ISREG(fst.st_mode):
            raise StoreError(f"{path}: exists and is not a regular file")
        problem = _unwritable(path, fst, "database file", os.R_OK | os.W_OK)
        if problem:
            raise StoreError(problem)
        if fst.st_uid == os.geteuid() and stat.S_IMODE(fst.st_mode) & 0o077:
            os.chmod(path, 0o600)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    # ------------------------------------------------------------------ schema

    def _read_version(self) -> int:
        try:
            row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return 0
            raise
        return int(row[0]) if row and row[0] is not None else 0

    def _migrate(self) -> None:
        version = self._read_version()
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: database schema version {version} is newer than this "
                             f"clawshell supports ({SCHEMA_VERSION}); upgrade clawshell")
        if self.readonly:
            raise StoreError(f"{self.path}: database schema version {version} needs migrating to "
                             f"{SCHEMA_VERSION}; run any clawshell command once read-write")
        # Creation races: processes that all find an unmigrated file would each try to
        # switch it to WAL, and SQLite answers one of two lock upgraders with an
        # immediate SQLITE_BUSY (deadlock avoidance, no busy wait).  One process at a
        # time migrates, under an advisory lock next to the database.
        with _migration_lock(self.path):
            self._migrate_locked()

    def _migrate_locked(self) -> None:
        version = self._read_version()  # another process may have migrated meanwhile
        if version == SCHEMA_VERSION:
            return
        # WAL is a property of the file; it cannot change inside a transaction.
        mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()
        if not mode or str(mode[0]).lower() != "wal":
            raise StoreError(f"{self.path}: cannot switch the database to WAL mode (got {mode and mode[0]})")
        with self.transaction() as cur:
            version = self._read_version()  # another process may have migrated meanwhile
            for number, statements in MIGRATIONS:
                if number <= version:
                    continue
                for sql in statements:
                    cur.execute(sql)
                cur.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)",
                            (str(number),))

    @property
    def schema_version(self) -> int:
        """The schema version recorded in ``meta``."""
        try:
            return self._read_version()
        except sqlite3.Error as exc:
            raise StoreError(describe_error(self.path, exc)) from None

    # ------------------------------------------------------------------ access

    @contextmanager
    def transaction(self, immediate: bool = True) -> Iterator[sqlite3.Cursor]:
        """A transaction yielding a cursor: commit on success, roll back on error.

        ``immediate`` takes the write lock at ``BEGIN`` (waiting up to the busy
        timeout), which every read-modify-write needs; ``immediate=False`` starts a
        deferred transaction, right for a consistent multi-statement read.  SQLite
        errors become :class:`StoreError`; other exceptions propagate after rollback.
        """
        if immediate and self.readonly:
            raise StoreError(f"{self.path}: opened read-only; cannot write")
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        except sqlite3.Error as exc:
            raise StoreError(describe_error(self.path, exc)) from None
        cur = conn.cursor()
        try:
            yield cur
        except BaseException as exc:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if isinstance(exc, sqlite3.Error):
                raise StoreError(describe_error(self.path, exc)) from None
            raise
        else:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                raise StoreError(describe_error(self.path, exc)) from None
        finally:
            cur.close()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read-only statement outside a transaction and return all rows."""
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(describe_error(self.path, exc)) from None

    def iterate(self, sql: str, params: Sequence[Any] = (), batch: int = 2000) -> Iterator[tuple[Any, ...]]:
        """Stream the rows of one read statement in batches (a consistent snapshot)."""
        try:
            cur = self._conn.execute(sql, params)
            try:
                while True:
                    rows = cur.fetchmany(batch)
                    if not rows:
                        return
                    yield from rows
            finally:
                cur.close()
        except sqlite3.Error as exc:
            raise StoreError(describe_error(self.path, exc)) from None

    def close(self) -> None:
        """Close the connection (idempotent)."""
        try:
            self._conn.close()
        except sqlite3.Error:
            pass

    def __enter__(self) -> "Store":
        """Use as a context manager that closes on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the connection."""
        self.close()
