"""approval.estop: state (fail closed), kill of registered trees, stale pids spared."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Iterator

import psutil
import pytest

from clawshell.approval import estop
from clawshell.approval.estop import EstopState
from clawshell.errors import StoreError
from clawshell.home import Home
from clawshell.store import Store


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Popen objects to kill at the end whatever happens."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        try:
            os.killpg(p.pid, 9)
        except OSError:
            pass
        try:
            p.kill()
            p.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def sleepers(root: int, count: int, timeout: float = 10.0) -> list[int]:
    """Pids of the ``sleep 1000`` processes under ``root`` once ``count`` of them run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = []
        for p in psutil.Process(root).children(recursive=True):
            try:
                if p.cmdline()[:2] == ["sleep", "1000"]:
                    found.append(p.pid)
            except psutil.Error:
                pass
        if len(found) >= count:
            return found
        time.sleep(0.02)
    raise AssertionError(f"only {found} of {count} sleepers started")


def spawn(procs: list[subprocess.Popen[bytes]], script: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(["bash", "-c", script], start_new_session=True, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p)
    return p


# --------------------------------------------------------------------------- state


def test_a_fresh_database_is_not_stopped(store: Store) -> None:
    assert estop.check(store) == (False, None)


def test_engage_then_resume(store: Store) -> None:
    result = estop.engage(store, "agent went rogue", now=100.0)
    assert (result.already, result.killed, result.stale) == (False, (), 0)
    assert estop.check(store) == (True, "agent went rogue")
    assert estop.status(store) == EstopState(True, "agent went rogue", 100.0)
    assert estop.engage(store, now=101.0).already is True
    assert estop.check(store) == (True, "engaged by the human")
    assert estop.resume(store, now=102.0) is True
    assert estop.check(store) == (False, None)
    assert estop.resume(store, now=103.0) is False


class BrokenStore:
    """A store whose every read fails like a damaged database."""

    def query(self, sql: str, params: object = ()) -> list[tuple[object, ...]]:
        raise StoreError("/x/clawshell.db: database is corrupt (disk image is malformed)")


def test_an_unreadable_state_means_stopped(store: Store) -> None:
    assert estop.check(BrokenStore()) == (
        True, "e-stop state unreadable: /x/clawshell.db: database is corrupt (disk image is malformed)")


def test_a_dropped_estop_table_means_stopped(store: Store) -> None:
    with store.transaction() as cur:
        cur.execute("DROP TABLE estop")
    engaged, reason = estop.check(store)
    assert engaged and reason is not None and reason.startswith("e-stop state unreadable: ")


@pytest.mark.parametrize("value", [2, -1, "yes", None])
def test_a_nonsense_engaged_value_means_stopped(store: Store, value: object) -> None:
    with store.transaction() as cur:
        cur.execute("DROP TABLE estop")
        cur.execute("CREATE TABLE estop(id INTEGER PRIMARY KEY, engaged, reason TEXT, since REAL)")
        cur.execute("INSERT INTO estop VALUES (1, ?, NULL, NULL)", (value,))
    assert estop.check(store) == (True, f"e-stop state unreadable: engaged={value!r}")


def test_a_closed_store_means_stopped(clawhome: Path) -> None:
    s = Store.open(Home(str(clawhome)))
    s.close()
    assert estop.check(s)[0] is True


# --------------------------------------------------------------------------- killing


def test_engage_kills_a_registered_tree(store: Store, procs: list[subprocess.Popen[bytes]]) -> None:
    # a child sleep, a grandchild sleep in a subshell, and one that left the process group
    root = spawn(procs, "sleep 1000 & (sleep 1000; true) & setsid sleep 1000 & wait")
    targets = sleepers(root.pid, 3)
    assert estop.register_run(store, root.pid, root.pid, "sess-kill") is False
    started = time.monotonic()
    result = estop.engage(store, "test stop")
    assert root.wait(timeout=10) == -9
    deadline = started + 10.0  # generous on a loaded CI machine; speed is for benchmarks
    while any(alive(p) for p in targets) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [p for p in targets if alive(p)] == []
    assert set(targets) | {root.pid} <= set(result.killed)
    assert store.query("SELECT COUNT(*) FROM runs") == [(0,)]
    assert estop.check(store) == (True, "test stop")
    estop.resume(store)
    assert estop.check(store) == (False, None)


def test_a_reused_pid_is_not_killed(store: Store, procs: list[subprocess.Popen[bytes]]) -> None:
    victim = spawn(procs, "exec sleep 1000")
    sleepers_started = time.monotonic()
    while not alive(victim.pid) and time.monotonic() - sleepers_started < 5:
        time.sleep(0.01)
    estop.register_run(store, victim.pid, victim.pid, "sess-stale")
    # pretend the registered process was an earlier one with the same pid
    with store.transaction() as cur:
        cur.execute("UPDATE runs SET started = started - 5")
    result = estop.engage(store, "test")
    assert (result.killed, result.stale) == ((), 1)
    assert alive(victim.pid)
    assert store.query("SELECT COUNT(*) FROM runs") == [(0,)]


def test_a_run_from_another_boot_is_not_killed(store: Store, procs: list[subprocess.Popen[bytes]]) -> None:
    victim = spawn(procs, "exec sleep 1000")
    estop.register_run(store, victim.pid, victim.pid, "sess-boot")
    with store.transaction() as cur:
        cur.execute("UPDATE runs SET boot = 'another-boot'")
    assert estop.engage(store).stale == 1
    assert alive(victim.pid)


def test_registering_while_stopped_kills_the_new_tree(store: Store, procs: list[subprocess.Popen[bytes]]) -> None:
    estop.engage(store, "stopped")
    late = spawn(procs, "sleep 1000 & wait")
    child = sleepers(late.pid, 1)[0]
    assert estop.register_run(store, late.pid, late.pid, "sess-late") is True
    assert late.wait(timeout=1) == -9
    deadline = time.monotonic() + 1
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(child)


def test_unregister_forgets_the_run(store: Store, procs: list[subprocess.Popen[bytes]]) -> None:
    p = spawn(procs, "exec sleep 1000")
    estop.register_run(store, p.pid, p.pid, "sess-u")
    assert [r[0] for r in store.query("SELECT pid FROM runs")] == [p.pid]
    estop.unregister_run(store, p.pid)
    assert store.query("SELECT pid FROM runs") == []
    assert estop.engage(store).killed == ()
    assert alive(p.pid)


def test_a_daemon_that_left_the_tree_is_swept_by_its_marker(store: Store,
                                                            procs: list[subprocess.Popen[bytes]]) -> None:
    session = f"sess-sweep-{os.getpid()}"
    env = dict(os.environ, CLAWSHELL_INSIDE="1", CLAWSHELL_SESSION=session)
    # the subshell exits at once, so the setsid sleep is reparented away from the registered tree
    root = spawn(procs, "(setsid sleep 1000 &); sleep 1000; true", env=env)
    main_sleep = sleepers(root.pid, 1)[0]
    deadline = time.monotonic() + 5
    daemon = None
    while daemon is None and time.monotonic() < deadline:
        for p in psutil.process_iter(["pid", "cmdline", "environ"]):
            if p.info["cmdline"] == ["sleep", "1000"] and p.pid != main_sleep and \
                    (p.info["environ"] or {}).get("CLAWSHELL_SESSION") == session:
                daemon = p.pid
        time.sleep(0.02)
    assert daemon is not None and daemon not in [c.pid for c in psutil.Process(root.pid).children(recursive=True)]
    # an unrelated marked process of another session is left alone
    other = spawn(procs, "exec sleep 1000", env=dict(env, CLAWSHELL_SESSION="someone-else"))
    estop.register_run(store, root.pid, root.pid, session)
    result = estop.engage(store)
    deadline = time.monotonic() + 1
    while alive(daemon) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(daemon)
    assert daemon in result.killed
    assert alive(other.pid)


def test_process_start_matches_psutil() -> None:
    me = os.getpid()
    start = estop.process_start(me)
    assert start is not None
    assert abs(psutil.boot_time() + start - psutil.Process(me).create_time()) < 1.0
    assert estop.process_start(2**22 + 12345) is None
