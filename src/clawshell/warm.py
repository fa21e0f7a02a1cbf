"""The warm server: one resident process per state home that forks a worker per call.

``clawshell -c CMD`` pays for a Python start-up and for importing the pipeline on every
agent command.  The first call of a session starts this server (detached, in its own
session, stdio on /dev/null, a minimal environment) and runs in-process; later calls
connect to it (see :mod:`clawshell._warmclient`) and the server forks a worker with
everything already imported.  The worker takes over the caller's stdin, stdout, stderr
and working directory, its argv, environment, umask and parent pid, and runs
``cli.main`` exactly as an in-process call would: the same policy, approvals, sandbox,
leak scan and audit entry.  Nothing is cached between calls except imported code.

Trust: the socket is an abstract unix socket, so a command confined by bwrap (own
network namespace) or Landlock ABI >= 6 (abstract-socket scope) cannot reach it; the
worker refuses a peer of another uid and a peer the kernel shows as confined
(no_new_privs, which every clawshell sandbox sets), and re-checks the caller's
identity string (home, interpreter, code version).  A refused caller simply runs
in-process.

If the caller dies mid-command (the agent killed it), the worker forwards SIGHUP to the
command and, if it is still running two seconds later, dies itself, which ends a bwrap
sandbox (``--die-with-parent``) with everything in it.

The server exits after ``CLAWSHELL_WARM_IDLE`` seconds without a call (default 600),
when its home disappears, or when the installed code changes.
"""

from __future__ import annotations

import os
import sys
import time

from ._warmclient import MAGIC, home_root, identity, peer_credentials, socket_name

IDLE_SECONDS = 600.0
"""Default idle lifetime of a server."""

PRELOAD = (
    # what an in-process `clawshell -c` imports, lazily or not (measured with sys.modules)
    "clawshell.cli", "clawshell.cli.shell", "clawshell.pipeline", "clawshell.realshell",
    "clawshell.policy.loader", "clawshell.policy.engine", "clawshell.policy.paths", "clawshell.policy.rules",
    "clawshell.policy.scores", "clawshell.shellparse", "clawshell.parsercache", "clawshell.store",
    "clawshell.audit", "clawshell.receipts", "clawshell.render", "clawshell.runner", "clawshell.sandbox",
    "clawshell.sandbox.probe", "clawshell.sandbox.landlock", "clawshell.sandbox.seccomp",
    "clawshell.sandbox.bwrap", "clawshell.sandbox.helper", "clawshell.leaks", "clawshell.approval.otp",
    "clawshell.approval.queue", "clawshell.approval.estop",
    "ast", "ctypes", "datetime", "fcntl", "fnmatch", "hashlib", "hmac", "json", "pickle", "platform",
    "select", "signal", "sqlite3", "struct", "encodings.ascii", "encodings.latin_1",
)
"""Modules imported once in the server so workers start with them loaded."""


def _idle_limit(environ: os._Environ[str]) -> float:
    try:
        return max(1.0, float(environ.get("CLAWSHELL_WARM_IDLE", IDLE_SECONDS)))
    except ValueError:
        return IDLE_SECONDS


def _preload() -> None:
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # a module that fails here fails the same way in the worker
            pass
    _prime()


def _prime() -> None:
    """Judge one harmless command under this home's policy (no side effects).

    In the server this fills the caches of pure functions (bashlex's tables, compiled
    rule patterns and regexes); in a spare worker it touches, ahead of the call, the
    memory a call uses.  Nothing that depends on the file system or the policy's
    current text is kept: each call loads the policy and resolves paths afresh.
    """
    from .home import Home
    from .pipeline import _bookkeeping_files, eval_context, judge, known_secrets
    from .policy.loader import load_policy_and_hash

    home = Home.from_env()
    try:
        policy, _hash = load_policy_and_hash(home, "/", os.environ.get("CLAWSHELL_POLICY"))
        judge("true", policy, eval_context("/", "/", home, "warm", os.environ), home)
        known_secrets(policy, os.environ)  # the environment allow-list's patterns
        _bookkeeping_files("true")
        _prime_leak_scanner()
    except Exception:  # a broken policy is reported by the worker, to the caller
        from .shellparse import parse

        parse("true")


def _prime_leak_scanner() -> None:
    """Build the scanner's tables (compiled patterns, the literal automaton: ~20 ms,
    otherwise paid by the first call with output) by scanning a harmless sample."""
    from .leaks import LeakSettings, StreamScanner

    scanner = StreamScanner("stdout", LeakSettings(), ())
    scanner.feed(b"warm-up: token=none password=placeholder https://example.invalid/path\n")
    scanner.finish()


def serve() -> int:
    """Run the server loop for the home named by the environment; returns the exit status.

    The server itself never accepts: it keeps one *spare* worker forked and primed,
    blocked in ``accept``.  The spare that takes a call tells the server (one byte on a
    pipe), which forks the next spare at once, so a call never waits for a fork and
    finds its memory already touched.
    """
    import select
    import socket

    environ = os.environ
    ident = identity(os.environb)
    root = home_root(os.environb)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.bind(socket_name(ident))
    except OSError:
        return 0  # another server holds the name already
    sock.listen(128)
    sys.dont_write_bytecode = False
    from . import _dccache

    _dccache.defer_import("inspect")
    _dccache.install(os.path.join(root, "cache"))
    _preload()
    import gc
    import signal

    gc.collect()
    gc.freeze()  # workers share the preloaded objects copy-on-write; the collector leaves them be
    os.chdir("/")
    idle = _idle_limit(environ)
    last_call = last_check = time.monotonic()
    note_r, note_w = os.pipe2(os.O_CLOEXEC)
    children: set[int] = set()
    spare = _fork_spare(sock, note_r, note_w, ident, children)
    keeper = _fork_keeper(root, children)
    keeper_tried = time.monotonic() if keeper else 0.0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            try:
                ready, _, _ = select.select([note_r], [], [], 1.0)
            except InterruptedError:
                ready = []
            _reap(children)
            now = time.monotonic()
            if ready:
                if os.read(note_r, 64):
                    last_call = now
                spare = _fork_spare(sock, note_r, note_w, ident, children)
                if keeper not in children and (not keeper_tried or now - keeper_tried > 10.0):
                    keeper = _fork_keeper(root, children)  # the first call has just made the database
                    keeper_tried = now if keeper else 0.0
                continue
            if spare not in children:  # the spare died without taking a call
                spare = _fork_spare(sock, note_r, note_w, ident, children)
            if now - last_call > idle:
                return 0
            if now - last_check > 10.0:
                last_check = now
                if not os.path.isdir(root) or identity(os.environb) != ident:
                    return 0
    finally:
        for pid in (spare, keeper):  # an idle spare and the keeper; workers serving calls are left alone
            try:
                if pid:
                    os.kill(pid, signal.SIGTERM)
            except OSError:
                pass


def _fork_keeper(root: str, children: set[int]) -> int:
    """Fork a process that keeps one read-only connection to the home's database open.

    SQLite treats the last connection to close as the one that checkpoints and resets
    the WAL, and the next one to open as the one that rebuilds its index: with a
    connection always open elsewhere, a call's open + transaction + close costs about
    0.2 ms instead of 1.7 ms (measured here).  The keeper holds no transaction, so
    writers' checkpoints still complete and the WAL stays bounded (~4 MB).  Forked from
    the server, which never opens the database itself.  Returns 0 when there is no
    database yet (the first call makes one; the server tries again after it).
    """
    from .home import Home

    if not os.path.exists(Home(root).database):
        return 0
    server = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        return 0
    if pid:
        children.add(pid)
        return pid
    try:
        import signal

        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _set_parent_death_signal(signal.SIGTERM)
        if os.getppid() == server:
            from .store import Store

            store = Store.open(Home(root), readonly=True)
            store.query("SELECT 1 FROM meta LIMIT 1")  # maps the WAL index; no transaction stays open
            while True:
                signal.pause()
    except BaseException:
        pass
    finally:
        os._exit(0)


def _fork_spare(sock: object, note_r: int, note_w: int, ident: str, children: set[int]) -> int:
    server = os.getpid()
    while True:
        try:
            pid = os.fork()
            break
        except OSError:
            time.sleep(0.1)
    if pid:
        children.add(pid)
        return pid
    try:
        os.close(note_r)
        _spare(sock, note_w, ident, server=server)
    finally:
        os._exit(0)


def _spare(sock: object, note_w: int, ident: str, server: int) -> None:
    """A primed worker waiting for one call (runs in a child of the server)."""
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _set_parent_death_signal(signal.SIGTERM)  # an idle spare ends with its server
    if os.getppid() != server:
        return  # the server died before the signal was armed
    try:
        _prime()  # touch the memory a call uses now, not while the caller waits
    except Exception:
        pass
    _prejoin_cgroup()
    while True:
        try:
            conn, _ = sock.accept()  # type: ignore[attr-defined]
            break
        except InterruptedError:
            continue
        except OSError:
            return
    _set_parent_death_signal(0)  # a call in progress outlives a stopping server
    sock.close()  # type: ignore[attr-defined]
    try:
        os.write(note_w, b"1")
    except OSError:
        pass
    os.close(note_w)
    _worker(conn, ident)


def _prejoin_cgroup() -> None:
    """On cgroup v1, move this spare into its call's pids cgroup now (see runner.prejoin_cgroup).

    Only where the planner's parent cannot depend on our own cgroup (v1's fixed
    ``/sys/fs/cgroup/pids``); a run whose plan names another parent ignores it.
    """
    from . import runner
    from .sandbox.probe import pids_cgroup_parent

    try:
        parent = pids_cgroup_parent()
    except Exception:
        return
    if parent == "/sys/fs/cgroup/pids":
        runner.prejoin_cgroup(parent)


def _set_parent_death_signal(sig: int) -> None:
    import ctypes

    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _reap(children: set[int]) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def _confined(pid: int) -> bool:
    """True when the kernel shows ``pid`` under no_new_privs (or we cannot tell).

    Every clawshell sandbox sets no_new_privs (Landlock and seccomp need it), and it is
    inherited and irreversible, so a nested caller always shows it.  A seccomp filter
    alone is not a sign of ours: container runtimes install one on every process, and
    refusing those would turn the warm server off in every container.
    """
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            status = fh.read()
    except OSError:
        return True
    return b"\nNoNewPrivs:\t0" not in status


def _receive(conn: object) -> tuple[list[int], bytes] | None:
    """The caller's fds and request body, or None for a malformed request."""
    import _socket

    fd_bytes = 16
    try:
        data, ancdata, _flags, _addr = conn.recvmsg(65536, _socket.CMSG_SPACE(fd_bytes))  # type: ignore[attr-defined]
    except OSError:
        return None
    fds: list[int] = []
    for level, kind, payload in ancdata:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds += [int.from_bytes(payload[i:i + 4], sys.byteorder) for i in range(0, usable, 4)]
    if len(fds) == 4:
        header = _read_to(conn, data, 8)  # a stream may deliver the header in pieces
        if header is not None:
            body = _read_to(conn, header[8:], int.from_bytes(header[:8], "little"))
            if body is not None:
                return fds, body
    for fd in fds:
        os.close(fd)
    return None


def _read_to(conn: object, data: bytes, size: int) -> bytes | None:
    """``data`` read on until it holds ``size`` bytes; None when the caller stops sending."""
    while len(data) < size:
        try:
            chunk = conn.recv(min(1 << 20, size - len(data)))  # type: ignore[attr-defined]
        except OSError:
            chunk = b""
        if not chunk:
            return None
        data += chunk
    return data


def _parse(body: bytes) -> tuple[bytes, int, int, list[str], dict[bytes, bytes]] | None:
    fields = body.split(b"\0")
    try:
        if fields[0] != MAGIC:
            return None
        ident, umask, ppid, argc = fields[1], int(fields[2]), int(fields[3]), int(fields[4])
        argv = [os.fsdecode(a) for a in fields[5:5 + argc]]
        if len(argv) != argc or argc < 1:
            return None
        env: dict[bytes, bytes] = {}
        for item in fields[5 + argc:]:
            key, eq, value = item.partition(b"=")
            if eq and key:
                env[key] = value
    except (IndexError, ValueError):
        return None
    return ident, umask, ppid, argv, env


def _worker(conn: object, ident: str) -> None:
    """Serve one call in this forked child, then exit (never returns).

    Until ``P`` is sent, any failure just ends the worker: the caller sees no ``P`` and
    runs in-process, so nothing is run twice and nothing half-served is reported.
    """
    status_sent = accepted = False
    try:
        import signal

        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _pid, uid, _gid = peer_credentials(conn)
        if uid != os.geteuid() or _confined(_pid):
            os._exit(0)
        got = _receive(conn)
        if got is None:
            os._exit(0)
        fds, body = got
        request = _parse(body)
        if request is None or request[0] != ident.encode("utf-8", "surrogateescape"):
            os._exit(0)
        _ident, umask, ppid, argv, env = request
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target, inheritable=True)
        os.fchdir(fds[3])
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.umask(umask)
        os.environb.clear()
        os.environb.update(env)
        sys.argv = list(argv)
        from . import pipeline

        pipeline.PARENT_PID = ppid
        conn.sendall(b"P%d\n" % os.getpid())  # type: ignore[attr-defined]
        accepted = True
        _watch_caller(conn)
        from .cli import finish
        from .cli import main as cli_main

        status = finish(cli_main(argv))
        try:
            conn.sendall(b"S%d\n" % status)  # type: ignore[attr-defined]
            status_sent = True
        except OSError:
            pass
    except BaseException as exc:  # an internal error: say so on the caller's stderr
        if accepted and not status_sent:
            try:
                os.write(2, f"clawshell: internal error: {exc.__class__.__name__}: {exc}\n".encode())
                conn.sendall(b"S70\n")  # type: ignore[attr-defined]
            except OSError:
                pass
    finally:
        os._exit(0)


def _watch_caller(conn: object) -> None:
    """Ask the kernel for SIGIO when the caller's end of the socket closes."""
    import fcntl
    import signal

    fd = conn.fileno()  # type: ignore[attr-defined]

    def on_io(_signum: int, _frame: object) -> None:
        import _socket

        try:
            data = conn.recv(1, _socket.MSG_PEEK | _socket.MSG_DONTWAIT)  # type: ignore[attr-defined]
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            return
        signal.signal(signal.SIGIO, signal.SIG_IGN)
        # The caller is gone: hang up on the command, and if it is still running in two
        # seconds, end this worker (a bwrap sandbox dies with it).
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(2)
        os.kill(os.getpid(), signal.SIGHUP)

    signal.signal(signal.SIGIO, on_io)
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
    on_io(signal.SIGIO, None)  # the caller may have gone before the signal was armed


def servers(root: str | None = None) -> list[tuple[int, str]]:
    """(pid, home) of this user's running warm servers, optionally only those of ``root``."""
    found: list[tuple[int, str]] = []
    uid = os.geteuid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().split(b"\0")
            if cmdline[-3:] != [b"clawshell.warm", b"serve", b""]:
                continue
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = dict(item.partition(b"=")[::2] for item in fh.read().split(b"\0") if b"=" in item)
        except OSError:
            continue
        home = home_root(env)
        if root is None or home == root:
            found.append((int(entry), home))
    pids = {pid for pid, _home in found}
    return sorted((pid, home) for pid, home in found if _parent(pid) not in pids)  # not spares, workers


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def stop(root: str | None = None) -> list[int]:
    """SIGTERM the warm servers of ``root`` (all of this user's when None); returns their pids.

    Calls already forked keep running to the end; the next call starts a new server.
    """
    import signal

    stopped = []
    for pid, _home in servers(root):
        try:
            os.kill(pid, signal.SIGTERM)
            stopped.append(pid)
        except OSError:
            pass
    return stopped


def main(argv: list[str]) -> int:
    """``python -m clawshell.warm serve``."""
    if argv[1:] == ["serve"]:
        return serve()
    sys.stderr.write("usage: python -m clawshell.warm serve\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
