"""Emergency stop: refuse every new action and kill every running sandboxed tree.

The state is one row of the ``estop`` table; the pipeline calls :func:`check` before
every action and refuses while it is engaged.  A state that cannot be read counts as
engaged (fail closed), unlike ZeroClaw, whose e-stop file nothing reads.

The pipeline registers every process tree it spawns in ``runs`` (:func:`register_run`
right after the fork, :func:`unregister_run` when it is done).  :func:`engage` first
commits the engaged state, then kills every registered tree; :func:`register_run`
reads the state in the same transaction that registers the run and kills the new tree
itself when the stop is already engaged, so no run can slip between the two.

A row is only acted on when the process is still the one registered: the process start
time (``/proc/PID/stat`` field 22) and the boot id are stored and compared, so a pid
reused by an unrelated process is never killed.  Killing freezes the tree first
(SIGSTOP to the group and to every descendant found with psutil, twice, to catch
forks in between), then SIGKILLs all of it; descendants that left the group
(``setsid``) are found by the walk.  A last sweep kills this user's processes whose
environment carries ``CLAWSHELL_INSIDE=1`` and a session with runs in this home
(double-forked daemons that left the tree).

Hot path: :func:`check`, :func:`register_run` and :func:`unregister_run` import
nothing heavy; psutil is imported only when something must be killed.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from typing import Any, Iterable

INSIDE_ENV = "CLAWSHELL_INSIDE"
"""Environment marker the pipeline sets in every command it runs."""


@dataclass(frozen=True)
class EstopState:
    """What ``clawshell estop status`` shows."""

    engaged: bool
    """True when new actions are refused."""
    reason: str | None
    """Why it was engaged (or why the state counts as engaged)."""
    since: float | None
    """Unix time of the last change."""
    readable: bool = True
    """False when the state could not be read (then ``engaged`` is True)."""


@dataclass(frozen=True)
class EngageResult:
    """What :func:`engage` did."""

    killed: tuple[int, ...]
    """Pids sent SIGKILL (registered roots, their descendants, swept strays)."""
    stale: int
    """Registered rows dropped because their process is gone or its pid was reused."""
    already: bool
    """True when the stop was already engaged."""


# --------------------------------------------------------------------------- state


def status(store: Any) -> EstopState:
    """The e-stop state; an unreadable one is reported engaged (fail closed)."""
    try:
        rows = store.query("SELECT engaged, reason, since FROM estop WHERE id = 1")
    except Exception as exc:  # any failure to read means stopped
        return EstopState(True, f"e-stop state unreadable: {exc}", None, False)
    if not rows:
        return EstopState(False, None, None)
    engaged, reason, since = rows[0]
    since_f = since if isinstance(since, (int, float)) else None
    if engaged == 0:
        return EstopState(False, reason, since_f)
    if engaged == 1:
        return EstopState(True, reason, since_f)
    return EstopState(True, f"e-stop state unreadable: engaged={engaged!r}", since_f, False)


def check(store: Any) -> tuple[bool, str | None]:
    """``(engaged, reason)`` for the pipeline; unreadable state -> ``(True, "e-stop state unreadable: ...")``."""
    state = status(store)
    return state.engaged, state.reason


def engage(store: Any, reason: str | None = None, *, now: float | None = None, kill: bool = True,
           proc: str = "/proc") -> EngageResult:
    """Engage the stop (committed first), then kill every registered run."""
    now = time.time() if now is None else now
    with store.transaction() as cur:
        row = cur.execute("SELECT engaged FROM estop WHERE id = 1").fetchone()
        already = row is not None and row[0] == 1
        cur.execute("INSERT OR REPLACE INTO estop(id, engaged, reason, since) VALUES (1, 1, ?, ?)",
                    (reason or "engaged by the human", now))
    if not kill:
        return EngageResult((), 0, already)
    killed, stale = kill_runs(store, proc=proc)
    return EngageResult(killed, stale, already)


def resume(store: Any, *, now: float | None = None) -> bool:
    """Disengage the stop; return whether it was engaged."""
    now = time.time() if now is None else now
    with store.transaction() as cur:
        row = cur.execute("SELECT engaged FROM estop WHERE id = 1").fetchone()
        cur.execute("INSERT OR REPLACE INTO estop(id, engaged, reason, since) VALUES (1, 0, NULL, ?)", (now,))
    return row is not None and row[0] != 0


# --------------------------------------------------------------------------- process identity


def process_start(pid: int, proc: str = "/proc") -> float | None:
    """Start time of ``pid`` in seconds since boot (``/proc/PID/stat`` field 22), or None."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as fh:
            data = fh.read()
        fields = data[data.rindex(b")") + 2:].split()
        ticks = int(fields[19])
    except (OSError, ValueError, IndexError):
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


def boot_id(proc: str = "/proc") -> str:
    """The kernel's boot id (empty when unknown)."""
    try:
        with open(f"{proc}/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _same_process(pid: int, started: float, boot: str | None, proc: str) -> bool:
    if started < 0:
        return False
    current_boot = boot_id(proc)
    if boot and current_boot and boot != current_boot:
        return False
    now_started = process_start(pid, proc)
    return now_started is not None and abs(now_started - started) < 1e-6


# --------------------------------------------------------------------------- runs


def register_run(store: Any, pid: int, pgid: int | None, session: str | None, *, proc: str = "/proc") -> bool:
    """Record a spawned sandboxed tree; return True when the stop was already engaged
    (the tree has then been killed here, and the caller should report a refusal)."""
    started = process_start(pid, proc)
    with store.transaction() as cur:
        cur.execute("INSERT OR REPLACE INTO runs(pid, pgid, session, started, boot) VALUES (?, ?, ?, ?, ?)",
                    (pid, pgid, session, -1.0 if started is None else started, boot_id(proc)))
        row = cur.execute("SELECT engaged FROM estop WHERE id = 1").fetchone()
    if row is None or row[0] == 0:
        return False
    _kill_tree(pid, pgid)
    return True


def unregister_run(store: Any, pid: int) -> None:
    """Forget the run of ``pid`` (it has ended)."""
    with store.transaction() as cur:
        cur.execute("DELETE FROM runs WHERE pid = ?", (pid,))


def kill_runs(store: Any, *, proc: str = "/proc") -> tuple[tuple[int, ...], int]:
    """Kill every registered run still alive as registered; return ``(killed pids, stale rows)``.

    Rows whose process is gone or whose pid now belongs to another process are
    dropped without killing anything.
    """
    rows = store.query("SELECT pid, pgid, session, started, boot FROM runs")
    killed: list[int] = []
    done: list[tuple[int, float]] = []
    stale = 0
    sessions: set[str] = set()
    for pid, pgid, session, started, boot in rows:
        if session:
            sessions.add(session)
        done.append((pid, started))
        if not _same_process(int(pid), float(started), boot, proc):
            stale += 1
            continue
        killed.extend(_kill_tree(int(pid), None if pgid is None else int(pgid)))
    try:
        sessions.update(r[0] for r in store.query("SELECT id FROM sessions") if r[0])
    except Exception:  # the sweep is a bonus; the registered trees are already dead
        pass
    killed.extend(_sweep_marked(sessions, exclude=set(killed)))
    if done:
        with store.transaction() as cur:
            cur.executemany("DELETE FROM runs WHERE pid = ? AND started = ?", done)
    return tuple(dict.fromkeys(killed)), stale


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except OSError:
        return False


def _signal_group(pgid: int | None, leader: int, sig: int) -> None:
    if not pgid or pgid <= 1 or pgid == os.getpgrp():
        return
    try:
        if os.getpgid(leader) != pgid:
            return  # the leader left its group: do not signal a group we cannot vouch for
        os.killpg(pgid, sig)
    except OSError:
        pass


def _descendants(pid: int) -> list[Any]:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return []


def _kill_tree(pid: int, pgid: int | None) -> list[int]:
    """Freeze then SIGKILL ``pid``, its process group and all its descendants."""
    import psutil

    me = os.getpid()
    _signal_group(pgid, pid, signal.SIGSTOP)
    _signal(pid, signal.SIGSTOP)
    found: dict[int, Any] = {}
    for _ in range(2):  # walk twice: catch children forked while we froze the first ones
        for child in _descendants(pid):
            if child.pid == me or child.pid in found:
                continue
            found[child.pid] = child
            try:
                child.suspend()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    _signal_group(pgid, pid, signal.SIGKILL)
    killed = [pid] if _signal(pid, signal.SIGKILL) else []
    for child in found.values():
        try:
            child.kill()  # psutil checks the child is still the process it found
            killed.append(child.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return killed


def _ancestors() -> set[int]:
    out = {os.getpid()}
    pid = os.getpid()
    for _ in range(64):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                data = fh.read()
            pid = int(data[data.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if pid <= 1:
            break
        out.add(pid)
    return out


def _sweep_marked(sessions: Iterable[str], exclude: set[int]) -> list[int]:
    """Kill this user's processes marked ``CLAWSHELL_INSIDE=1`` with one of ``sessions``."""
    wanted = {s.encode("utf-8", "surrogateescape") for s in sessions}
    if not wanted:
        return []
    import psutil

    uid = os.getuid()
    spare = _ancestors() | exclude
    killed = []
    for p in psutil.process_iter(["pid", "uids"]):
        try:
            if p.pid in spare or p.info["uids"] is None or p.info["uids"].real != uid:
                continue
            with open(f"/proc/{p.pid}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except (OSError, psutil.Error):
            continue
        if f"{INSIDE_ENV}=1".encode() not in env:
            continue
        session = next((e[len(b"CLAWSHELL_SESSION="):] for e in env if e.startswith(b"CLAWSHELL_SESSION=")), None)
        if session is None or session not in wanted:
            continue
        try:
            p.kill()
            killed.append(p.pid)
        except psutil.Error:
            pass
    return killed
