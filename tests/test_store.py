"""store.py: the SQLite database (WAL, migrations, modes) and its fail-closed errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clawshell.audit import AuditLog
from clawshell.errors import EXIT_DENIED, StoreError
from clawshell.home import Home
from clawshell.store import MIGRATIONS, SCHEMA_VERSION, Store

ROOT = Path(__file__).resolve().parents[1]
RECORD = {"v": 1, "tool": "shell", "session": "s", "command": "true", "decision": {"decision": "allow"}}


def documented_schema() -> dict[str, list[tuple]]:
    """Tables and columns of docs/architecture.md "Database schema", as SQLite sees them."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Database schema", 1)[1]
    sql = re.search(r"```sql\n(.*?)```", section, re.S).group(1)
    conn = sqlite3.connect(":memory:")
    conn.executescript(sql)
    return table_shapes(conn)


def table_shapes(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                        "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    return {name: conn.execute(f"PRAGMA table_info({name})").fetchall() for name in names}


def test_migration_1_creates_exactly_the_documented_schema(home: Home) -> None:
    Store.open(home).close()
    conn = sqlite3.connect(home.database)
    assert table_shapes(conn) == documented_schema()
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    assert MIGRATIONS[0][0] == 1


def test_open_makes_private_wal_database(home: Home) -> None:
    store = Store.open(home)
    AuditLog(store, home).append(RECORD)
    assert store.query("PRAGMA journal_mode") == [("wal",)]
    assert store.query("PRAGMA busy_timeout")[0][0] >= 30000
    modes = {p: stat.S_IMODE(os.stat(p).st_mode) for p in (home.root, home.storage)}
    assert modes == {home.root: 0o700, home.storage: 0o700}
    for suffix in ("", "-wal", "-shm"):
        assert stat.S_IMODE(os.stat(home.database + suffix).st_mode) == 0o600, suffix
    store.close()


def test_open_tightens_a_too_open_database_file(home: Home) -> None:
    Store.open(home).close()
    os.chmod(home.database, 0o644)
    os.chmod(home.storage, 0o755)
    Store.open(home).close()
    assert stat.S_IMODE(os.stat(home.database).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home.storage).st_mode) == 0o700


def test_reopen_keeps_data_and_version(home: Home) -> None:
    with Store.open(home) as store:
        with store.transaction() as cur:
            cur.execute("INSERT INTO sessions(id, task, cwd, created) VALUES ('a', 't', '/w', 1.0)")
    with Store.open(home) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.query("SELECT id, task FROM sessions") == [("a", "t")]


def test_migrates_an_empty_existing_file(home: Home) -> None:
    os.makedirs(home.storage, mode=0o700)
    Path(home.database).touch(mode=0o600)
    with Store.open(home) as store:
        assert store.schema_version == SCHEMA_VERSION


def test_newer_schema_is_refused(home: Home) -> None:
    Store.open(home).close()
    conn = sqlite3.connect(home.database)
    conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"schema version 99 is newer than this clawshell supports \(1\)"):
        Store.open(home)


def test_transaction_commits_and_rolls_back(home: Home) -> None:
    store = Store.open(home)
    with store.transaction() as cur:
        cur.execute("INSERT INTO sessions(id, created) VALUES ('kept', 1)")
    with pytest.raises(RuntimeError):
        with store.transaction() as cur:
            cur.execute("INSERT INTO sessions(id, created) VALUES ('dropped', 1)")
            raise RuntimeError("boom")
    with pytest.raises(StoreError, match=re.escape(home.database)):
        with store.transaction() as cur:
            cur.execute("INSERT INTO sessions(id, created) VALUES ('dup', 1)")
            cur.execute("INSERT INTO sessions(id, created) VALUES ('dup', 1)")
    assert store.query("SELECT id FROM sessions") == [("kept",)]
    with store.transaction(immediate=False) as cur:
        assert cur.execute("SELECT count(*) FROM sessions").fetchone() == (1,)
    store.close()


def test_readonly_open(home: Home) -> None:
    with pytest.raises(StoreError, match="no database yet"):
        Store.open(home, readonly=True)
    Store.open(home).close()
    store = Store.open(home, readonly=True)
    assert store.query("SELECT count(*) FROM audit") == [(0,)]
    with pytest.raises(StoreError, match="opened read-only"):
        with store.transaction():
            pass
    store.close()


def _garbage(home: Home) -> None:
    os.makedirs(home.storage, mode=0o700)
    Path(home.database).write_bytes(b"this is not an sqlite file\n" * 200)


def _corrupt_pages(home: Home) -> None:
    with Store.open(home) as store:
        log = AuditLog(store, home, checkpoint_every=0)
        for i in range(50):
            log.append({**RECORD, "n": i, "pad": "x" * 500})
        store.query("PRAGMA wal_checkpoint(TRUNCATE)")
    size = os.path.getsize(home.database)
    with open(home.database, "r+b") as fh:  # keep the header, wreck every b-tree page
        for offset in range(100, size, 512):
            fh.seek(offset)
            fh.write(b"\xa5" * 300)


def _readonly_file(home: Home) -> None:
    Store.open(home).close()
    os.chmod(home.database, 0o444)


def _readonly_dir(home: Home) -> None:
    Store.open(home).close()
    os.chmod(home.storage, 0o555)


def _storage_is_a_file(home: Home) -> None:
    os.makedirs(home.root, mode=0o700)
    Path(home.storage).write_text("oops")


def _database_is_a_dir(home: Home) -> None:
    os.makedirs(home.database, mode=0o700)


@pytest.mark.parametrize(("breakage", "where", "message"), [
    (_garbage, "database", "file is not a database"),
    (_corrupt_pages, "database", r"(database is corrupt|file is not a database)"),
    (_readonly_file, "database", r"database file is read-only \(mode 0444\); cannot record"),
    (_readonly_dir, "storage", r"storage directory is read-only \(mode 0555\); cannot record"),
    (_storage_is_a_file, "storage", "exists and is not a directory"),
    (_database_is_a_dir, "database", "exists and is not a regular file"),
])
def test_broken_store_fails_closed_with_one_clear_line(home: Home, breakage, where: str, message: str) -> None:
    breakage(home)
    with pytest.raises(StoreError) as info:
        store = Store.open(home)
        AuditLog(store, home).append(RECORD)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(getattr(home, where) + ": ")
    assert re.search(message, text), text
    assert info.value.exit_code == EXIT_DENIED


def test_full_database_fails_closed_and_keeps_what_was_written(home: Home) -> None:
    store = Store.open(home)
    log = AuditLog(store, home, checkpoint_every=0)
    for i in range(5):
        log.append(RECORD)
    pages = store.query("PRAGMA page_count")[0][0]
    store.query(f"PRAGMA max_page_count={pages}")  # the next page needed is "disk full"
    with pytest.raises(StoreError, match=re.escape(home.database) + ": disk is full: cannot record"):
        for i in range(500):
            log.append({**RECORD, "pad": "y" * 2000})
    store.close()
    with Store.open(home) as again:
        report = AuditLog(again, home).verify()
        assert report.ok and report.checked >= 5
        assert AuditLog(again, home).append(RECORD).seq == report.checked + 1


def _mount_namespace_prefix(probe_dir: Path) -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare(1) not installed: cannot make a private tmpfs")
    for prefix in ([unshare, "-m", "--propagation", "private"], [unshare, "-r", "-m", "--propagation", "private"]):
        probe = subprocess.run([*prefix, "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe_dir)],
                               capture_output=True)
        if probe.returncode == 0:
            return prefix
    pytest.skip("cannot mount a tmpfs in a private mount namespace here (no CAP_SYS_ADMIN, no user namespaces)")


FILL_SCRIPT = textwrap.dedent("""
    import json, os, sys
    from clawshell.audit import AuditLog
    from clawshell.errors import StoreError
    from clawshell.home import Home
    from clawshell.store import Store
    home = Home(os.environ["CLAWSHELL_HOME"])
    store = Store.open(home)
    log = AuditLog(store, home, checkpoint_every=0)
    count, error = 0, None
    try:
        for i in range(100000):
            log.append({"v": 1, "tool": "shell", "command": "x" * 3000, "n": i})
            count += 1
    except StoreError as exc:
        error = str(exc)
    store.close()
    again = Store.open(home)
    report = AuditLog(again, home).verify()
    print(json.dumps({"count": count, "error": error, "ok": report.ok, "checked": report.checked}))
""")


def test_full_disk_fails_closed_with_one_clear_line(tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    prefix = _mount_namespace_prefix(mnt)
    home = mnt / "home"
    script = f'mount -t tmpfs -o size=256k tmpfs "{mnt}" && exec "{sys.executable}" -c "$FILL"'
    done = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CLAWSHELL_HOME": str(home), "FILL": FILL_SCRIPT})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["count"] > 0
    assert result["error"] == f"{home}/storage/clawshell.db: disk is full: cannot record"
    # Everything appended before the disk filled up is intact.
    assert (result["ok"], result["checked"]) == (True, result["count"])


@pytest.fixture
def open_home():
    """A home under a world-traversable temp dir (pytest's own are 0700), removed after."""
    import tempfile

    base = tempfile.mkdtemp(prefix="clawshell-store-test-")
    os.chmod(base, 0o755)
    yield Home(os.path.join(base, "clawhome"))
    shutil.rmtree(base, ignore_errors=True)


def _as_nobody(home: Home, prepare) -> str:
    """Run Store.open + append as uid 65534 in a forked child; return its StoreError text."""
    prepare()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        os.close(read)
        message = "no error"
        try:
            os.setgid(65534)
            os.setuid(65534)
            store = Store.open(home)
            AuditLog(store, home).append(RECORD)
        except StoreError as exc:
            message = str(exc)
        except BaseException as exc:  # noqa: BLE001 - report anything to the parent
            message = f"unexpected {exc.__class__.__name__}: {exc}"
        os.write(write, message.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read().decode()
    os.waitpid(pid, 0)
    return data


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to another uid for a real permission denial")
def test_database_owned_by_someone_else_is_refused_for_real(open_home: Home) -> None:
    home = open_home

    def prepare() -> None:
        Store.open(home).close()
        for path in (home.root, home.storage):
            os.chown(path, 65534, 65534)
        os.chmod(home.database, 0o644)  # owner (root) may write; uid 65534 may not

    message = _as_nobody(home, prepare)
    assert message.startswith(f"{home.database}: database file is not writable by uid 65534 (mode 0644, owner uid 0)")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to another uid for a real permission denial")
def test_storage_dir_not_writable_for_real(open_home: Home) -> None:
    home = open_home

    def prepare() -> None:
        os.makedirs(home.storage, mode=0o700)
        os.chmod(home.root, 0o755)
        os.chmod(home.storage, 0o755)  # root's; uid 65534 may enter but not create files

    message = _as_nobody(home, prepare)
    assert message.startswith(f"{home.storage}: storage directory is not writable by uid 65534")
