"""Many processes appending to one chain, and processes killed mid-append (real processes)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import time
from pathlib import Path


from clawshell.audit import AuditLog
from clawshell.home import Home
from clawshell.store import Store

CTX = multiprocessing.get_context("fork")


def _append_many(root: str, proc: int, count: int, barrier, results) -> None:
    """Worker: open the store itself (after the fork) and append ``count`` records."""
    barrier.wait(timeout=60)
    home = Home(root)
    store = Store.open(home)
    log = AuditLog(store, home)
    seqs = [log.append({"v": 1, "tool": "shell", "session": f"p{proc}", "command": f"c{proc}-{i}",
                        "proc": proc, "n": i}).seq for i in range(count)]
    store.close()
    results.put((proc, seqs))


def _open_once(root: str, barrier, results) -> None:
    barrier.wait(timeout=60)
    try:
        Store.open(Home(root)).close()
        results.put("ok")
    except Exception as exc:  # reported, not raised: the parent asserts on it
        results.put(f"{type(exc).__name__}: {exc}")


def test_a_fresh_home_opened_by_32_processes_at_once(tmp_path: Path) -> None:
    """Every racer gets a migrated database; none sees an instant 'database is locked'.

    SQLite answers one of two processes upgrading to the lock needed to switch a new file
    to WAL with SQLITE_BUSY at once (no busy wait); this failed about one round in three
    before migrations were serialised.
    """
    for round_ in range(8):
        root = str(tmp_path / f"home{round_}")
        barrier = CTX.Barrier(32)
        results = CTX.Queue()
        workers = [CTX.Process(target=_open_once, args=(root, barrier, results)) for _ in range(32)]
        for w in workers:
            w.start()
        outcomes = [results.get(timeout=120) for _ in workers]
        for w in workers:
            w.join(timeout=60)
        assert [o for o in outcomes if o != "ok"] == []
        with Store.open(Home(root), readonly=True) as store:
            assert store.schema_version >= 1


def test_32_processes_x_100_appends_lose_nothing(clawhome: Path) -> None:
    procs, count = 32, 100
    root = str(clawhome)  # does not exist yet: creation and migration race too
    barrier = CTX.Barrier(procs)
    results = CTX.Queue()
    workers = [CTX.Process(target=_append_many, args=(root, p, count, barrier, results)) for p in range(procs)]
    started = time.monotonic()
    for w in workers:
        w.start()
    got = dict(results.get(timeout=240) for _ in workers)
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    elapsed = time.monotonic() - started
    all_seqs = sorted(s for seqs in got.values() for s in seqs)
    assert all_seqs == list(range(1, procs * count + 1))  # none lost, no duplicate
    for seqs in got.values():
        assert seqs == sorted(seqs)  # each process saw its own appends in order
    home = Home(root)
    with Store.open(home) as store:
        log = AuditLog(store, home)
        report = log.verify()
        assert report.ok, report.summary()
        assert (report.checked, report.high_water) == (procs * count, procs * count)
        assert report.checkpoints == 3  # signed at 1000, 2000, 3000 by whichever process got there
        pairs = sorted((e.record["proc"], e.record["n"]) for e in log.iterate())
    assert pairs == [(p, i) for p in range(procs) for i in range(count)]
    print(f"32 x 100 concurrent appends in {elapsed:.1f} s")


def _append_forever(root: str, tag: str) -> None:
    home = Home(root)
    store = Store.open(home)
    log = AuditLog(store, home, checkpoint_every=50)
    i = 0
    while True:
        log.append({"v": 1, "tool": "shell", "session": tag, "command": "x" * (i % 700), "n": i})
        i += 1


def _count(root: str) -> int:
    conn = sqlite3.connect(Home(root).database, timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM audit").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def test_sigkill_during_appends_leaves_an_intact_prefix_that_continues(clawhome: Path) -> None:
    root = str(clawhome)
    home = Home(root)
    Store.open(home).close()
    total = 0
    for round_ in range(6):
        writers = [CTX.Process(target=_append_forever, args=(root, f"r{round_}w{w}")) for w in range(3)]
        for w in writers:
            w.start()
        deadline = time.monotonic() + 60
        while _count(root) < total + 40 + 25 * round_ and time.monotonic() < deadline:
            time.sleep(0.005)
        for w in writers:
            os.kill(w.pid, signal.SIGKILL)
        for w in writers:
            w.join(timeout=30)
            assert w.exitcode == -signal.SIGKILL
        with Store.open(home) as store:
            log = AuditLog(store, home, checkpoint_every=50)
            report = log.verify()
            assert report.ok, report.summary()
            assert report.checked == report.high_water > total  # the intact prefix, no half entry
            total = report.checked
            appended = log.append({"v": 1, "tool": "shell", "session": "after-kill", "n": round_})
            assert appended.seq == total + 1  # the chain continues
            total += 1
    with Store.open(home) as store:
        report = AuditLog(store, home, checkpoint_every=50).verify()
    assert report.ok and report.checked == total


def _die_holding_the_lock(root: str, ready) -> None:
    home = Home(root)
    store = Store.open(home)
    with store.transaction() as cur:
        cur.execute("INSERT INTO audit(seq, prev_hash, entry_hash, key_id, hmac, body) "
                    "VALUES (1000000, 'torn', 'torn', 'torn', 'torn', '{}')")
        cur.execute("UPDATE meta SET value = 'torn' WHERE key = 'audit_head'")
        ready.send("inside")
        time.sleep(600)


def test_killed_while_holding_the_write_lock(clawhome: Path) -> None:
    root = str(clawhome)
    home = Home(root)
    with Store.open(home) as store:
        log = AuditLog(store, home)
        for i in range(5):
            log.append({"tool": "shell", "n": i})
    ours, theirs = CTX.Pipe()
    child = CTX.Process(target=_die_holding_the_lock, args=(root, theirs))
    child.start()
    assert ours.recv() == "inside"
    os.kill(child.pid, signal.SIGKILL)
    child.join(timeout=30)
    started = time.monotonic()
    with Store.open(home) as store:
        log = AuditLog(store, home)
        assert log.append({"tool": "shell", "n": 5}).seq == 6
        report = log.verify()
    assert time.monotonic() - started < 10  # the dead process's lock did not stall us
    assert report.ok and report.checked == 6


def _append_some(root: str, tag: str, count: int) -> None:
    home = Home(root)
    store = Store.open(home)
    log = AuditLog(store, home)
    for i in range(count):
        log.append({"tool": "shell", "session": tag, "n": i})
        time.sleep(0.001)
    store.close()


def _rotate(root: str, times: int) -> None:
    home = Home(root)
    store = Store.open(home)
    log = AuditLog(store, home)
    for _ in range(times):
        time.sleep(0.03)
        log.rotate_key()
    store.close()


def test_rotating_the_key_while_others_append(clawhome: Path) -> None:
    root = str(clawhome)
    home = Home(root)
    with Store.open(home) as store:
        AuditLog(store, home).append({"tool": "shell", "n": -1})
    procs = [CTX.Process(target=_append_some, args=(root, f"a{i}", 100)) for i in range(4)]
    procs.append(CTX.Process(target=_rotate, args=(root, 5)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    with Store.open(home) as store:
        log = AuditLog(store, home)
        report = log.verify()
        key_ids = {e.key_id for e in log.iterate()}
    assert report.ok, report.summary()
    assert report.checked == 401
    assert 2 <= len(key_ids) <= 6
