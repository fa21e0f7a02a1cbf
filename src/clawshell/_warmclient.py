"""Client half of the warm server: what ``clawshell -c CMD`` runs when a server is up.

Starting Python and importing the pipeline (bashlex, sqlite3, the policy engine ...)
costs far more than judging and running a command.  A per-home warm server
(:mod:`clawshell.warm`) keeps those modules loaded and forks a worker per call; this
client hands the worker its stdin, stdout, stderr and working directory (SCM_RIGHTS),
its argv, environment, umask and parent pid, forwards signals to it, and exits with
the status the worker reports.  The worker runs exactly the code an in-process call
runs (``cli.main``), so decisions, sandbox, audit and output are the same.

Everything here is best effort: any doubt (a terminal on stdio, a confined caller, no
server, a server of another user or another code version) returns None and the caller
runs in-process.  Only builtin modules are imported, to keep start-up minimal.
"""

from __future__ import annotations

import os
import sys

MAGIC = b"clawshell-warm-1"
"""First field of a request; bumped when the wire format changes."""

OFF_VALUES = frozenset({"0", "off", "no", "false"})
"""``CLAWSHELL_WARM`` values that disable the warm server (run in-process)."""

SHELL_NAMES = frozenset({"bash", "sh", "zsh", "dash", "clawshell-bash"})
"""Names under which clawshell is the drop-in shell whatever its arguments."""
SUBCOMMANDS = frozenset({
    "check", "audit", "receipts", "approvals", "approve", "otp", "estop", "doctor",
    "file", "mcp", "session", "hook", "security", "help", "version", "warm",
})
"""First arguments that name a clawshell subcommand (never sent to the warm server)."""
_FORWARD = (1, 2, 3, 15)  # SIGHUP, SIGINT, SIGQUIT, SIGTERM: what the in-process runner forwards
_STATUS_FAILED = 70


def home_root(environ: os._Environ[str] | dict[str, str]) -> str:
    """The state home path, as :meth:`clawshell.home.Home.from_env` computes it."""
    root = environ.get("CLAWSHELL_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"),
                                                         ".clawshell")
    return os.path.abspath(root)


def code_stamp(package_dir: str) -> int:
    """Newest modification time (ns) of the package's sources: a changed install gets a new server."""
    newest = 0
    stack = [package_dir]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                name = entry.name
                if entry.is_dir(follow_symlinks=False):
                    if name != "__pycache__":
                        stack.append(entry.path)
                elif name.endswith((".py", ".toml")):
                    newest = max(newest, entry.stat().st_mtime_ns)
    return newest


def identity(environ: os._Environ[str] | dict[str, str]) -> str:
    """What a server must match: user, home, interpreter and code version."""
    package_dir = os.path.dirname(os.path.abspath(__file__))
    return "\n".join((str(os.geteuid()), home_root(environ), sys.executable, package_dir,
                      str(code_stamp(package_dir))))


def socket_name(ident: str) -> bytes:
    """The abstract unix socket name of the server for ``ident``.

    Abstract names live in the network namespace and are out of reach of a confined
    command (bwrap's --unshare-net, Landlock's abstract-socket scope); both ends also
    check the other's uid, and the server re-checks the identity sent in the request.
    """
    import zlib

    raw = ident.encode("utf-8", "surrogateescape")
    return b"\0clawshell-warm-%d-%08x%08x" % (os.geteuid(), zlib.crc32(raw), zlib.adler32(raw))


def peer_credentials(sock: object) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a connected unix socket."""
    import _socket

    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # type: ignore[attr-defined]
    order = sys.byteorder
    return (int.from_bytes(raw[0:4], order), int.from_bytes(raw[4:8], order),
            int.from_bytes(raw[8:12], order))


def eligible(argv: list[str], environ: os._Environ[str]) -> bool:
    """True when this call is a drop-in shell call the warm server can take."""
    if environ.get("CLAWSHELL_WARM", "1").strip().lower() in OFF_VALUES:
        return False
    if environ.get("CLAWSHELL_INSIDE") == "1":
        return False  # possibly nested inside a sandbox: the in-process path decides
    args = argv[1:]
    prog = os.path.basename(argv[0]) if argv else "clawshell"
    if not args or (prog not in SHELL_NAMES and args[0] in SUBCOMMANDS):
        return False
    try:
        if os.isatty(0) or os.isatty(1) or os.isatty(2):
            return False  # a terminal belongs to the caller's session: run in-process
        os.fstat(0), os.fstat(1), os.fstat(2)
    except OSError:
        return False
    return True


def run(argv: list[str]) -> int | None:
    """Run ``argv`` through a warm server; None when the caller must run in-process."""
    environ = os.environ
    if not eligible(argv, environ):
        return None
    import _socket

    ident = identity(environ)
    name = socket_name(ident)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        sock.connect(name)
    except OSError:
        sock.close()
        if environ.get("CLAWSHELL_WARM", "1").strip().lower() != "no-spawn":
            spawn_server(environ)
        return None
    try:
        _pid, uid, _gid = peer_credentials(sock)
        if uid != os.geteuid():
            return None  # someone else holds the name: never hand them our environment
        return _converse(sock, argv, ident)
    finally:
        sock.close()


def _converse(sock: object, argv: list[str], ident: str) -> int | None:
    import _socket

    try:
        cwd_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    mask = os.umask(0o022)
    os.umask(mask)
    fields = [MAGIC, ident.encode("utf-8", "surrogateescape"), b"%d" % mask, b"%d" % os.getppid(),
              b"%d" % len(argv), *(os.fsencode(a) for a in argv)]
    fields += [k + b"=" + v for k, v in os.environb.items()]
    body = b"\0".join(fields)
    data = len(body).to_bytes(8, "little") + body
    fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2, cwd_fd))
    try:
        sent = sock.sendmsg([data[:65536]], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])  # type: ignore[attr-defined]
        if sent < len(data):
            sock.sendall(data[sent:])  # type: ignore[attr-defined]
    except OSError:
        return None
    finally:
        os.close(cwd_fd)
    reader = _Lines(sock)
    line = reader.next()
    if not line or not line.startswith(b"P"):
        return None  # refused before anything ran: run in-process
    worker = int(line[1:])
    forwarded = _forward_signals(worker)
    line = reader.next()
    if line and line.startswith(b"S"):
        return int(line[1:])
    if forwarded:
        # The worker ended on a signal we passed on (outside a run, its default action):
        # end the same way, as an in-process clawshell would have.
        import _signal

        _signal.signal(forwarded[-1], _signal.SIG_DFL)
        os.kill(os.getpid(), forwarded[-1])
    os.write(2, b"clawshell: internal error: the warm worker ended without reporting a status "
                b"(see `clawshell audit --last 1`)\n")
    return _STATUS_FAILED


class _Lines:
    """Newline-terminated messages from the worker."""

    def __init__(self, sock: object):
        self.sock = sock
        self.buf = b""

    def next(self) -> bytes | None:
        while b"\n" not in self.buf:
            try:
                chunk = self.sock.recv(4096)  # type: ignore[attr-defined]
            except OSError:
                return None
            if not chunk:
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line


def _forward_signals(worker: int) -> list[int]:
    """Pass HUP/INT/QUIT/TERM on to the worker; returns the list of those passed so far."""
    import _signal

    passed: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        passed.append(signum)
        try:
            os.kill(worker, signum)
        except OSError:
            pass

    for sig in _FORWARD:
        try:
            if _signal.getsignal(sig) != _signal.SIG_IGN:  # an ignored signal stays ignored, as in bash
                _signal.signal(sig, forward)
        except (OSError, ValueError):
            pass
    return passed


def spawn_server(environ: os._Environ[str]) -> None:
    """Start a detached server for this home (it outlives us; we do not wait for it)."""
    env = {k: v for k, v in environ.items()
           if k in ("PATH", "HOME", "LANG", "TZ", "CLAWSHELL_HOME", "CLAWSHELL_POLICY", "CLAWSHELL_WARM_IDLE", "PYTHONPATH")
           or k.startswith("LC_")}
    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
        return
    try:  # the child: a new session, then a grandchild that init adopts
        os.setsid()
        if os.fork():
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 1 << 16)
        os.execve(sys.executable, [sys.executable, "-m", "clawshell.warm", "serve"], env)
    finally:
        os._exit(127)
