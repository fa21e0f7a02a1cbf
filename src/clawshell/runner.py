"""Spawn one command from a ``LaunchPlan`` and pump its output (the only module that spawns).

``run`` forks, applies the plan's in-child restrictions (``plan.preexec``, through
``sandbox.helper``) and execs ``plan.argv`` with ``plan.env`` in ``plan.cwd``.  The
child inherits ``stdin_fd`` directly; stdout and stderr come back through pipes,
are hashed raw (sha256), passed through the optional filters (objects with
``feed(bytes) -> bytes`` and ``finish() -> bytes``, e.g. ``leaks.StreamScanner``)
and written byte for byte to ``out_fd`` / ``err_fd``.

Behaviour that keeps the shell a drop-in:

- Exit status as bash reports it: the child's status, or 128+N for a death by signal
  N; 127 when the command is not found, 126 when it cannot be executed.
- SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to clawshell are forwarded to the child
  (to its process group when it has its own).  When the child shares our process
  group (stdin is our controlling terminal in the foreground), the terminal already
  delivered SIGINT/SIGQUIT to it, so those two are not sent a second time.
- A consumer that closes ``out_fd`` (``clawshell -c yes | head -1``): writing stops
  and the read end of the child's pipe is closed, so the child gets SIGPIPE/EPIPE
  exactly as it would have under bash.  The other stream keeps flowing.
- Output beyond ``plan.max_output`` bytes (stdout+stderr) is cut: one marker line on
  ``err_fd`` and the pipes are closed as above.
- ``plan.timeout``: the whole tree is killed (process group, every descendant found
  through ``/proc/PID/task/TID/children`` while we are the child subreaper, and the
  per-run cgroup when the plan asks for one); status 128+9 and ``timed_out``.
- ``plan.preexec`` carries the in-child restrictions (applied through
  ``sandbox.helper`` between fork and exec) and the host-side resources of the run
  (pids cgroup or watchdog, private temp dir, protected-path mount points), which
  are set up before the fork and released after the tree is dead.
- When the command exits, whatever it left running in the background is ended too
  (what bwrap's PID namespace does anyway), so a stray daemon cannot keep the pipes
  open or outlive the audit record.

Nothing here imports psutil, pyseccomp or click: this runs on every command.
"""

from __future__ import annotations

import errno
import hashlib
import os
import select
import signal
import time
from typing import Callable, Protocol

from .errors import SandboxUnavailableError
from .model import LaunchPlan, RunResult

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

PREJOINED_CGROUP: str | None = None
"""A per-run pids cgroup this process already moved itself into (see :func:`prejoin_cgroup`)."""
"""Signals relayed to the child."""

_CHUNK = 65536
_WATCH_EVERY = 0.1
_QUIET_FLUSH = 0.05
"""Seconds of silence after which a filter's held-back bytes are flushed."""
_PR_SET_CHILD_SUBREAPER = 36


class StreamFilter(Protocol):
    """What ``run`` needs from an output filter (``leaks.StreamScanner`` fits).

    A filter may also have ``flush() -> bytes``: it is called when its stream has been
    quiet for 50 ms, so a prompt without a newline reaches the reader while the command
    waits for input.
    """

    def feed(self, data: bytes) -> bytes:
        """Take raw bytes, return the bytes safe to emit now."""

    def finish(self) -> bytes:
        """Flush whatever was held back."""


def _resolve(argv0: str, env: dict[str, str]) -> str | None:
    """Find ``argv0`` on the plan's PATH like execvp would (None when not found)."""
    if "/" in argv0:
        return argv0
    for d in (env.get("PATH") or os.defpath).split(":"):
        cand = os.path.join(d or ".", argv0)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


_subreaper = False


def _ensure_subreaper() -> None:
    """Make this process the reaper of orphaned descendants (so a tree kill finds them)."""
    global _subreaper
    if not _subreaper:
        _subreaper = _set_subreaper()


def _set_subreaper() -> bool:
    """prctl(PR_SET_CHILD_SUBREAPER) via ctypes; False when refused."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """All live descendants of ``pid`` from ``/proc/*/task/*/children`` (no psutil)."""
    out: list[int] = []
    todo = [pid]
    seen = {pid}
    while todo:
        for c in _children(todo.pop()):
            if c not in seen:
                seen.add(c)
                out.append(c)
                todo.append(c)
    return out


def kill_tree(pid: int, pgid: int | None, cgroup: str | None = None,
              baseline: frozenset[int] = frozenset(), reaped: bool = False) -> set[int]:
    """SIGKILL ``pid``, its process group, every descendant, and the cgroup; return the pids hit.

    Stops the tree first (SIGSTOP) so nothing can fork its way out between the scan
    and the kill.  Orphans that were re-parented to this process (we are the child
    subreaper) are found among our own children: any child that is not ``pid`` and
    was not already ours before the fork (``baseline``).  ``reaped``: ``pid`` itself
    was already waited for (its number may be reused, leave it alone).
    """
    def scan() -> set[int]:
        found = set() if reaped else {pid, *descendants(pid)}
        for c in _children(os.getpid()):
            if c not in baseline:
                found.add(c)
                found.update(descendants(c))
        if cgroup:
            found.update(_cgroup_pids(cgroup))
        return found

    def signal_all(sig: int) -> None:
        if pgid is not None:
            try:
                os.killpg(pgid, sig)
            except OSError:
                pass
        for p in targets:
            try:
                os.kill(p, sig)
            except OSError:
                pass

    # Freeze first so nothing forks while we look, look again, then kill.
    targets = scan()
    signal_all(signal.SIGSTOP)
    targets |= scan()
    signal_all(signal.SIGKILL)
    if cgroup:
        _kill_cgroup(cgroup)
    return targets


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (all threads)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out.extend(int(k) for k in fh.read().split())
        except OSError:
            continue
    return out


def _cgroup_pids(cgroup: str) -> list[int]:
    """Members of ``cgroup`` other than this process (which may be one: see prejoin_cgroup)."""
    me = os.getpid()
    try:
        with open(os.path.join(cgroup, "cgroup.procs"), "rb") as fh:
            return [pid for pid in map(int, fh.read().split()) if pid != me]
    except OSError:
        return []


def _member(cgroup: str) -> bool:
    """True when this process is in ``cgroup`` (its cgroup.kill would kill us too)."""
    try:
        with open(os.path.join(cgroup, "cgroup.procs"), "rb") as fh:
            return str(os.getpid()).encode() in fh.read().split()
    except OSError:
        return False


def _kill_cgroup(cgroup: str) -> None:
    """Kill every process in ``cgroup`` but this one (cgroup v2 ``cgroup.kill`` or a kill loop)."""
    kill_file = os.path.join(cgroup, "cgroup.kill")
    if os.path.exists(kill_file) and not _member(cgroup):
        try:
            with open(kill_file, "w") as fh:
                fh.write("1")
            return
        except OSError:
            pass
    for _ in range(50):
        pids = _cgroup_pids(cgroup)
        if not pids:
            return
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.002)


def _write_all(fd: int, data: bytes) -> bool:
    """Write all of ``data``; False when the reader is gone (EPIPE/EBADF)."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            # A non-blocking out_fd whose reader is slow: wait until writable.
            waiter = select.poll()
            waiter.register(fd, select.POLLOUT)
            waiter.poll()
            continue
        except (BrokenPipeError, OSError) as exc:
            if isinstance(exc, BrokenPipeError) or exc.errno in (errno.EPIPE, errno.EBADF, errno.EIO):
                return False
            raise
        view = view[n:]
    return True


class _Stream:
    """One output stream of the child: pipe read end, hash, filter, destination."""

    __slots__ = ("name", "fd", "dest", "filt", "hash", "open_dest", "bytes", "held_since")

    def __init__(self, name: str, fd: int, dest: int, filt: StreamFilter | None):
        self.name = name
        self.fd = fd
        self.dest = dest
        self.filt = filt
        self.hash = hashlib.sha256()
        self.open_dest = True
        self.bytes = 0
        self.held_since: float | None = None
        """When the filter last got data it may be holding back (None: nothing held)."""


def _child(plan: LaunchPlan, exe: str, stdin_fd: int, w_out: int, w_err: int, err_w: int,
           own_pgrp: bool, preexec_fn: Callable[[], None] | None) -> None:
    """Runs in the forked child: wire fds, restrict, exec.  Never returns.

    Failures are reported on ``err_w`` as ``kind:errno:message`` (``setup`` for a
    restriction that could not be applied, ``exec`` for the exec itself) and the
    child exits without ever running the command.
    """
    kind = "setup"
    try:
        if own_pgrp:
            os.setpgid(0, 0)
        for sig in (*FORWARDED_SIGNALS, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        if stdin_fd != 0:
            os.dup2(stdin_fd, 0, inheritable=True)
        else:
            os.set_inheritable(0, True)
        os.dup2(w_out, 1, inheritable=True)
        os.dup2(w_err, 2, inheritable=True)
        keep = set(plan.pass_fds)
        for fd in plan.pass_fds:
            os.set_inheritable(fd, True)
        for fd in (w_out, w_err, stdin_fd):
            if fd > 2 and fd not in keep:
                os.close(fd)
        os.chdir(plan.cwd)
        if preexec_fn is not None:
            preexec_fn()
        kind = "exec"
        os.execve(exe, list(plan.argv), dict(plan.env))
    except BaseException as exc:  # report to the parent, never fall back into its code
        code = getattr(exc, "errno", None) or 0
        msg = f"{kind}:{code}:{exc}".encode("utf-8", "replace")
        try:
            os.write(err_w, msg[:4000])
        finally:
            os._exit(127)
    os._exit(127)


def _shares_terminal_pgrp(stdin_fd: int) -> bool:
    """True when stdin is a terminal whose foreground group is ours (keep the child in it)."""
    try:
        return os.isatty(stdin_fd) and os.tcgetpgrp(stdin_fd) == os.getpgrp()
    except OSError:
        return False


class _Resources:
    """Host-side resources a plan asks for around the run (``plan.preexec`` runner kinds).

    - ``("cgroup", (parent, pids_max))``: a per-run cgroup with ``pids.max`` the child
      is moved into before it may exec; it bounds a fork bomb and lets a timeout kill
      every member.  If it cannot be made, the process-count watchdog takes over.
    - ``("pids_watchdog", pids_max)``: count the tree while pumping, kill it when over.
    - ``("cleanup", dir)``: a private temp dir removed after the run.
    - ``("remove_if_empty", file)``: a bookkeeping file created for the run, removed
      when the command never wrote to it (as if it had never been bound).
    - ``("pid_namespace", None)``: the command runs in its own PID namespace (bwrap):
      no subreaper needed, signals go to the command inside.
    - ``("placeholders", (lockfile, paths, mode))``: empty mount points for protected
      paths that do not exist yet; made before the run under a shared lock on the
      workspace and removed after it by the last run still using them.
    """

    _counter = 0

    def __init__(self, steps: tuple[tuple[str, object], ...]):
        self.cgroup: str | None = None
        self.cgroup_inherited = False
        self.watchdog: int | None = None
        self.cleanup: list[str] = []
        self.remove_if_empty: list[str] = []
        self.placeholders: tuple[str, ...] = ()
        self.lock_fd = -1
        self.pid_namespace = False
        self.helper_steps = tuple(s for s in steps if s[0] not in
                                  ("cgroup", "pids_watchdog", "cleanup", "placeholders", "pid_namespace",
                                   "remove_if_empty"))
        for kind, data in steps:
            if kind == "pid_namespace":
                self.pid_namespace = True
            if kind == "cgroup":
                parent, limit = data  # type: ignore[misc]
                self.cgroup = self._adopt_prejoined(parent, limit)
                if self.cgroup is not None:
                    self.cgroup_inherited = True
                else:
                    self.cgroup = self._make_cgroup(parent, limit)
                if self.cgroup is None:
                    self.watchdog = limit
            elif kind == "pids_watchdog":
                self.watchdog = data  # type: ignore[assignment]
            elif kind == "cleanup":
                self.cleanup.append(data)  # type: ignore[arg-type]
            elif kind == "remove_if_empty":
                self.remove_if_empty.append(data)  # type: ignore[arg-type]
            elif kind == "placeholders":
                self._make_placeholders(*data)  # type: ignore[misc]

    @staticmethod
    def _adopt_prejoined(parent: str, limit: int) -> str | None:
        """The cgroup this process pre-joined, if it is under ``parent``: the child is
        born in it (no migration on the caller's clock).  Used once."""
        global PREJOINED_CGROUP
        path, PREJOINED_CGROUP = PREJOINED_CGROUP, None
        if path is None or os.path.dirname(path) != parent.rstrip("/"):
            if path is not None:
                _rmdir_quiet(path)  # fails while we are in it; pruned once we are gone
            return None
        try:
            with open(os.path.join(path, "pids.max"), "w") as fh:
                fh.write(str(limit + 1))  # this process is a member too
        except OSError:
            return None
        return path

    @classmethod
    def _make_cgroup(cls, parent: str, limit: int) -> str | None:
        _prune_cgroups(parent)
        cls._counter += 1
        path = os.path.join(parent, f"clawshell-{os.getpid()}-{cls._counter}")
        try:
            os.mkdir(path)
        except OSError:
            return None
        try:
            with open(os.path.join(path, "pids.max"), "w") as fh:
                fh.write(str(limit))
        except OSError:
            _rmdir_quiet(path)
            return None
        return path

    def _make_placeholders(self, lockfile: str, paths: tuple[str, ...], mode: int) -> None:
        import fcntl

        os.makedirs(os.path.dirname(lockfile), mode=0o700, exist_ok=True)
        self.lock_fd = os.open(lockfile, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.lock_fd, fcntl.LOCK_SH)
        made = []
        for p in paths:
            try:
                os.mkdir(p, mode)
                os.chmod(p, mode)
            except FileExistsError:
                pass
            except OSError as exc:
                raise SandboxUnavailableError(f"cannot create the mount point for protected path {p}: "
                                              f"{exc.strerror}") from exc
            made.append(p)
        self.placeholders = tuple(made)

    def release(self) -> None:
        """Undo everything (after the tree is dead)."""
        if self.cgroup:
            _kill_cgroup(self.cgroup)
        if self.cgroup and not self.cgroup_inherited:  # an adopted one holds us: a later prune removes it
            for _ in range(50):
                if _rmdir_quiet(self.cgroup):
                    break
                time.sleep(0.001)  # the last members are still being torn down
            else:
                pass  # left behind empty; the next run prunes it (_prune_cgroups)
        for d in self.cleanup:
            _remove_tree(d)
        for f in self.remove_if_empty:
            try:
                if os.lstat(f).st_size == 0:
                    os.unlink(f)
            except OSError:
                pass
        if self.lock_fd >= 0:
            import fcntl

            try:
                fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pass  # another run still uses the mount points: it removes them
            else:
                for p in reversed(self.placeholders):
                    _rmdir_quiet(p)
            os.close(self.lock_fd)
            self.lock_fd = -1


def _prune_cgroups(parent: str) -> None:
    """Remove per-run cgroups left behind by runs whose clawshell process is gone."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith("clawshell-")]
    except OSError:
        return
    for name in names:
        try:
            owner = int(name.split("-")[1])
        except (IndexError, ValueError):
            continue
        if owner != os.getpid() and not os.path.exists(f"/proc/{owner}"):
            _rmdir_quiet(os.path.join(parent, name))


def _remove_tree(path: str) -> None:
    """Remove a directory tree without following symlinks (no shutil import on the hot path)."""
    try:
        os.rmdir(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                _remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            pass
    _rmdir_quiet(path)


def _signal_namespace_command(sandbox_pid: int, signum: int) -> bool:
    """Deliver ``signum`` to the command inside bwrap's PID namespace; False if not started yet.

    bwrap does not relay signals: signalling it would kill the sandbox (and the command
    with SIGKILL through --die-with-parent) instead of letting the command's own
    handlers run.  The command is a child of the namespace's init (bwrap's monitor, our
    grandchild) and leads its own session (--new-session), so its process group is
    signalled, like bash's job control would.
    """
    hit = False
    for init in _children(sandbox_pid):
        for cmd in _children(init):
            try:
                os.killpg(os.getpgid(cmd), signum)
                hit = True
            except OSError:
                try:
                    os.kill(cmd, signum)
                    hit = True
                except OSError:
                    pass
    return hit


def prejoin_cgroup(parent: str) -> str | None:
    """Make a per-run cgroup under ``parent`` and move this process into it, now.

    A cgroup v1 migration waits for an RCU grace period (5-15 ms here).  A warm-server
    spare (clawshell.warm) calls this while idle; the run it then serves adopts the
    cgroup (``pids.max`` set to the plan's limit, plus one for this process), so its
    child is born inside and nothing is migrated while the caller waits.
    """
    global PREJOINED_CGROUP
    path = _Resources._make_cgroup(parent, 1 << 16)
    if path is None:
        return None
    try:
        _join_cgroup(path, os.getpid())
    except OSError:
        _rmdir_quiet(path)
        return None
    PREJOINED_CGROUP = path
    return path


def _join_cgroup(path: str, pid: int) -> None:
    """Move process ``pid`` into the run's cgroup."""
    fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, str(pid).encode())
    finally:
        os.close(fd)


def _rmdir_quiet(path: str) -> bool:
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def run(plan: LaunchPlan, *, stdout_filter: StreamFilter | None = None,
        stderr_filter: StreamFilter | None = None, stdin_fd: int = 0, out_fd: int = 1,
        err_fd: int = 2, on_spawn: Callable[[int], None] | None = None) -> RunResult:
    """Run ``plan`` to completion and return what happened.

    ``on_spawn(pid)`` is called once the child exists (for the e-stop's table of live
    runs).  Raises ``SandboxUnavailableError`` when an in-child restriction of
    ``plan.preexec`` could not be applied: then the command never ran.
    """
    start = time.monotonic()
    env = dict(plan.env)
    exe = _resolve(plan.argv[0], env) if plan.argv else None
    if exe is None:
        name = plan.argv[0] if plan.argv else ""
        _write_all(err_fd, f"clawshell: {name}: command not found\n".encode())
        empty = hashlib.sha256(b"").hexdigest()
        return RunResult(status=127, duration=time.monotonic() - start, stdout_sha256=empty,
                         stderr_sha256=empty, layers=plan.layers)
    res = _Resources(plan.preexec)
    try:
        return _run(plan, exe, res, stdout_filter, stderr_filter, stdin_fd, out_fd, err_fd, on_spawn, start)
    finally:
        res.release()


def _run(plan: LaunchPlan, exe: str, res: _Resources, stdout_filter: StreamFilter | None,
         stderr_filter: StreamFilter | None, stdin_fd: int, out_fd: int, err_fd: int,
         on_spawn: Callable[[int], None] | None, start: float) -> RunResult:
    """Fork, exec and pump (``run`` without the resource bookkeeping)."""
    cgroup = res.cgroup
    preexec_fn: Callable[[], None] | None = None
    steps = res.helper_steps
    apply_steps: Callable[[tuple], None] | None = None
    if steps:
        from .sandbox.helper import apply_steps
    # The parent moves the child into the cgroup (a cgroup v1 migration waits for an
    # RCU grace period, several ms) while the child applies its restrictions; the child
    # execs only once the parent says the move is done, so nothing it starts can be
    # outside the cgroup.
    go_r = go_w = -1
    if cgroup and not res.cgroup_inherited:
        go_r, go_w = os.pipe()
    if steps or go_r >= 0:
        def preexec_fn() -> None:
            if go_w >= 0:
                os.close(go_w)
            if apply_steps is not None:
                apply_steps(steps)
            if go_r >= 0:
                if os.read(go_r, 1) != b"1":
                    raise SandboxUnavailableError("the pids cgroup could not be joined")
                os.close(go_r)

    own_pgrp = not _shares_terminal_pgrp(stdin_fd)
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    err_r, err_w = os.pipe()  # O_CLOEXEC: closes on a successful exec
    if not res.pid_namespace:
        # Orphans must come back to us so a timeout or the end of the run finds them;
        # in a PID namespace they go to its init and die with it.
        _ensure_subreaper()
    baseline = frozenset(_children(os.getpid()))

    # Install forwarding before fork so a signal in the window is not lost; it is
    # delivered to the child once we know its pid.
    child_pid = 0
    pending: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if not child_pid:
            pending.append(signum)
            return
        if not own_pgrp and signum in (signal.SIGINT, signal.SIGQUIT):
            return
        if res.pid_namespace and _signal_namespace_command(child_pid, signum):
            return
        try:
            if own_pgrp:
                os.killpg(child_pid, signum)
            else:
                os.kill(child_pid, signum)
        except OSError:
            pass

    old_handlers = {}
    for sig in FORWARDED_SIGNALS:
        try:
            old_handlers[sig] = signal.signal(sig, forward)
        except (ValueError, OSError):  # not the main thread
            pass

    try:
        pid = os.fork()
        if pid == 0:
            os.close(r_out)
            os.close(r_err)
            os.close(err_r)
            _child(plan, exe, stdin_fd, w_out, w_err, err_w, own_pgrp, preexec_fn)
        child_pid = pid
        if own_pgrp:
            try:
                os.setpgid(pid, pid)  # also in the parent: no race with killpg
            except OSError:
                pass
        if go_r >= 0:
            os.close(go_r)
            try:
                _join_cgroup(cgroup, pid)
                os.write(go_w, b"1")
            except OSError:
                pass  # the child sees EOF and refuses to start the command
            os.close(go_w)
        os.close(w_out)
        os.close(w_err)
        os.close(err_w)
        for s in pending:
            forward(s, None)
        # Exec result: EOF means exec succeeded (CLOEXEC), data means it failed.
        failure = b""
        while True:
            chunk = os.read(err_r, 4096)
            if not chunk:
                break
            failure += chunk
        os.close(err_r)
        if failure:
            os.close(r_out)
            os.close(r_err)
            os.waitpid(pid, 0)
            kind, _, rest = failure.decode("utf-8", "replace").partition(":")
            code_s, _, msg = rest.partition(":")
            if kind == "setup":
                raise SandboxUnavailableError(f"sandbox setup failed in the child: {msg}")
            code = int(code_s or 0)
            status = 127 if code == errno.ENOENT else 126
            _write_all(err_fd, f"clawshell: {plan.argv[0]}: {os.strerror(code) if code else msg}\n".encode())
            empty = hashlib.sha256(b"").hexdigest()
            return RunResult(status=status, duration=time.monotonic() - start, stdout_sha256=empty,
                             stderr_sha256=empty, layers=plan.layers)
        if on_spawn is not None:
            on_spawn(pid)
        return _pump(plan, pid, own_pgrp, r_out, r_err, stdout_filter, stderr_filter,
                     out_fd, err_fd, start, cgroup, baseline, res.watchdog, res.pid_namespace)
    finally:
        for sig, old in old_handlers.items():
            try:
                signal.signal(sig, old)
            except (ValueError, OSError, TypeError):
                pass


def _pump(plan: LaunchPlan, pid: int, own_pgrp: bool, r_out: int, r_err: int,
          stdout_filter: StreamFilter | None, stderr_filter: StreamFilter | None,
          out_fd: int, err_fd: int, start: float, cgroup: str | None,
          baseline: frozenset[int], watchdog: int | None = None, pid_namespace: bool = False) -> RunResult:
    """Move output until both pipes close, then reap; enforce timeout and output cap."""
    out = _Stream("stdout", r_out, out_fd, stdout_filter)
    err = _Stream("stderr", r_err, err_fd, stderr_filter)
    streams = {r_out: out, r_err: err}
    sel = select.poll()
    for fd in streams:
        sel.register(fd, select.POLLIN)
    pidfd = -1
    try:
        pidfd = os.pidfd_open(pid)
        sel.register(pidfd, select.POLLIN)
    except (OSError, AttributeError):
        pidfd = -1
    deadline = start + plan.timeout if plan.timeout else None
    cap = plan.max_output
    total = 0
    truncated = False
    timed_out = False
    wstatus: int | None = None
    pgid = pid if own_pgrp else None
    hit: set[int] = set()
    over_limit = False

    def close_stream(st: _Stream) -> None:
        sel.unregister(st.fd)
        os.close(st.fd)
        del streams[st.fd]

    def emit(st: _Stream, data: bytes) -> None:
        if st.filt is not None:
            data = st.filt.feed(data)
            if hasattr(st.filt, "flush"):
                st.held_since = time.monotonic()
        if data and st.open_dest and not _write_all(st.dest, data):
            st.open_dest = False

    def flush_quiet(now: float) -> float | None:
        """Flush filters whose stream went quiet (a prompt without a newline must show);
        return seconds until the next one is due, or None."""
        due: float | None = None
        for st in streams.values():
            if st.held_since is None or st.filt is None:
                continue
            left = st.held_since + _QUIET_FLUSH - now
            if left <= 0:
                st.held_since = None
                data = st.filt.flush()  # type: ignore[attr-defined]
                if data and st.open_dest and not _write_all(st.dest, data):
                    st.open_dest = False
            elif due is None or left < due:
                due = left
        return due

    def reap(flags: int) -> None:
        nonlocal wstatus
        if wstatus is None:
            try:
                done, ws = os.waitpid(pid, flags)
            except ChildProcessError:
                return
            if done:
                wstatus = ws
                if not pid_namespace:
                    # The command is gone: end whatever it left behind so the pipes
                    # close (in a PID namespace the kernel already did).
                    hit.update(kill_tree(pid, pgid, cgroup, baseline, reaped=True))

    try:
        while streams or wstatus is None:
            timeout = None
            if deadline is not None:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    timed_out = True
                    hit.update(kill_tree(pid, pgid, cgroup, baseline))
                    deadline = None
                    continue
            if pidfd < 0 and wstatus is None:
                timeout = 0.05 if timeout is None else min(timeout, 0.05)
            if watchdog is not None and wstatus is None:
                timeout = _WATCH_EVERY if timeout is None else min(timeout, _WATCH_EVERY)
                if len(descendants(pid)) > watchdog:
                    over_limit = True
                    hit.update(kill_tree(pid, pgid, cgroup, baseline))
                    watchdog = None
            quiet = flush_quiet(time.monotonic())
            if quiet is not None:
                timeout = quiet if timeout is None else min(timeout, quiet)
            events = sel.poll(None if timeout is None else max(0, int(timeout * 1000) + 1))
            if pidfd < 0:
                reap(os.WNOHANG)
            for fd, _ in events:
                if fd == pidfd:
                    sel.unregister(pidfd)
                    os.close(pidfd)
                    pidfd = -2
                    reap(0)
                    continue
                st = streams.get(fd)
                if st is None:
                    continue
                try:
                    data = os.read(st.fd, _CHUNK)
                except OSError:
                    data = b""
                if not data:
                    close_stream(st)
                    continue
                st.hash.update(data)
                st.bytes += len(data)
                if cap is not None and not truncated:
                    room = cap - total
                    total += len(data)
                    if len(data) > room:
                        if room > 0:
                            emit(st, data[:room])
                        truncated = True
                        for s in (out, err):
                            _finish(s)
                        _write_all(err_fd, (f"\nclawshell: output truncated at {cap} bytes "
                                            f"[limit: max_output]\n").encode())
                        # Like a reader that went away: the command gets EPIPE/SIGPIPE.
                        for s in list(streams.values()):
                            close_stream(s)
                        break
                emit(st, data)
                if not st.open_dest:
                    # Reader of our output went away: give the child its EPIPE/SIGPIPE.
                    close_stream(st)
            if pidfd == -2 and wstatus is None:
                reap(0)
    finally:
        for st in list(streams.values()):
            close_stream(st)
        if pidfd >= 0:
            sel.unregister(pidfd)
            os.close(pidfd)
        if wstatus is None:
            hit.update(kill_tree(pid, pgid, cgroup, baseline))
            reap(0)
    if not truncated:
        for s in (out, err):
            _finish(s)
    _reap_orphans(hit - {pid})
    assert wstatus is not None
    if over_limit:
        _write_all(err_fd, "\nclawshell: process limit exceeded, process tree killed\n".encode())
    if timed_out:
        status = 128 + signal.SIGKILL
        _write_all(err_fd, f"\nclawshell: timed out after {plan.timeout:g}s, process tree killed\n".encode())
    elif os.WIFSIGNALED(wstatus):
        status = 128 + os.WTERMSIG(wstatus)
    else:
        status = os.WEXITSTATUS(wstatus)
    return RunResult(status=status, duration=time.monotonic() - start,
                     stdout_sha256=out.hash.hexdigest(), stderr_sha256=err.hash.hexdigest(),
                     layers=plan.layers, timed_out=timed_out, truncated=truncated)


def _finish(st: _Stream) -> None:
    """Flush a stream's filter tail to its destination."""
    if st.filt is None:
        return
    tail = st.filt.finish()
    st.filt = None
    if tail and st.open_dest and not _write_all(st.dest, tail):
        st.open_dest = False


def _reap_orphans(pids: set[int]) -> None:
    """Collect the zombies of killed orphans that were re-parented to us (never blocks long)."""
    left = set(pids)
    for _ in range(20):
        for p in list(left):
            try:
                done, _ = os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                left.discard(p)  # not ours (reaped by its own parent, or in another pid ns)
                continue
            if done:
                left.discard(p)
        if not left:
            return
        time.sleep(0.001)
