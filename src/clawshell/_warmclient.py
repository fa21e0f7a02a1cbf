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
runs in-process.  Only built-in modules are imported (``posix``, ``sys``, ``_socket``,
``_signal``: not even ``os``, which costs ~2 ms under ``python -S``), and this module
has no ``from __future__`` import, to keep start-up minimal.  The environment is read
as bytes (``posix.environ``); both ends compute the identity from those bytes.
"""

import posix
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
_FS_ENCODING = sys.getfilesystemencoding()
_FS_ERRORS = sys.getfilesystemencodeerrors()


def _decode(raw: bytes) -> str:
    return raw.decode(_FS_ENCODING, _FS_ERRORS)


def _encode(text: str) -> bytes:
    return text.encode(_FS_ENCODING, _FS_ERRORS)


def _setting(environb: "dict[bytes, bytes]", name: bytes, default: str = "") -> str:
    return _decode(environb.get(name, _encode(default))).strip().lower()


def normpath(path: str) -> str:
    """``posixpath.normpath``, without importing it."""
    if not path:
        return "."
    slashes = 0
    if path.startswith("/"):
        slashes = 2 if path.startswith("//") and not path.startswith("///") else 1
    parts: list = []
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        if comp != ".." or (not slashes and not parts) or (parts and parts[-1] == ".."):
            parts.append(comp)
        elif parts:
            parts.pop()
    return "/" * slashes + "/".join(parts) or "."


def abspath(path: str) -> str:
    """``posixpath.abspath``, without importing it."""
    if not path.startswith("/"):
        cwd = posix.getcwd()
        path = cwd + path if cwd.endswith("/") else cwd + "/" + path
    return normpath(path)


def home_root(environb: "dict[bytes, bytes]") -> str:
    """The state home path, as :meth:`clawshell.home.Home.from_env` computes it."""
    root = environb.get(b"CLAWSHELL_HOME")
    if root:
        return abspath(_decode(root))
    home = environb.get(b"HOME")
    if home:
        base = _decode(home)
    else:  # rare: no HOME at all; the password database, as os.path.expanduser does
        import os

        base = os.path.expanduser("~")
    return abspath(base + ".clawshell" if base.endswith("/") else base + "/.clawshell")  # os.path.join


def code_stamp(package_dir: str) -> int:
    """Newest modification time (ns) of the package's sources: a changed install gets a new server."""
    newest = 0
    stack = [package_dir]
    while stack:
        with posix.scandir(stack.pop()) as entries:
            for entry in entries:
                name = entry.name
                if entry.is_dir(follow_symlinks=False):
                    if name != "__pycache__":
                        stack.append(entry.path)
                elif name.endswith((".py", ".toml")):
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime_ns)
    return newest


def identity(environb: "dict[bytes, bytes]") -> str:
    """What a server must match: user, home, interpreter and code version."""
    package_dir = abspath(__file__).rpartition("/")[0]
    return "\n".join((str(posix.geteuid()), home_root(environb), sys.executable, package_dir,
                      str(code_stamp(package_dir))))


def socket_name(ident: str) -> bytes:
    """The abstract unix socket name of the server for ``ident``.

    Abstract names live in the network namespace and are out of reach of a confined
    command (bwrap's --unshare-net, Landlock's abstract-socket scope); both ends also
    check the other's uid, and the server re-checks the identity sent in the request.
    The hash (64-bit FNV-1a) only spreads names; it is not what is trusted.
    """
    h = 0xCBF29CE484222325
    for byte in ident.encode("utf-8", "surrogateescape"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return b"\0clawshell-warm-%d-%016x" % (posix.geteuid(), h)


def peer_credentials(sock: object) -> tuple:
    """(pid, uid, gid) of the process at the other end of a connected unix socket."""
    import _socket

    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # type: ignore[attr-defined]
    order = sys.byteorder
    return (int.from_bytes(raw[0:4], order), int.from_bytes(raw[4:8], order),
            int.from_bytes(raw[8:12], order))


def eligible(argv: list, environb: "dict[bytes, bytes]") -> bool:
    """True when this call is a drop-in shell call the warm server can take."""
    if _setting(environb, b"CLAWSHELL_WARM", "1") in OFF_VALUES:
        return False
    if environb.get(b"CLAWSHELL_INSIDE") == b"1":
        return False  # possibly nested inside a sandbox: the in-process path decides
    args = argv[1:]
    prog = argv[0].rpartition("/")[2] if argv else "clawshell"
    if not args or (prog not in SHELL_NAMES and args[0] in SUBCOMMANDS):
        return False
    try:
        if posix.isatty(0) or posix.isatty(1) or posix.isatty(2):
            return False  # a terminal belongs to the caller's session: run in-process
        posix.fstat(0), posix.fstat(1), posix.fstat(2)
    except OSError:
        return False
    return True


def run(argv: list) -> "int | None":
    """Run ``argv`` through a warm server; None when the caller must run in-process."""
    environb = posix.environ
    if not eligible(argv, environb):
        return None
    import _socket

    ident = identity(environb)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        sock.connect(socket_name(ident))
    except OSError:
        sock.close()
        if _setting(environb, b"CLAWSHELL_WARM", "1") != "no-spawn":
            spawn_server(environb)
        return None
    try:
        _pid, uid, _gid = peer_credentials(sock)
        if uid != posix.geteuid():
            return None  # someone else holds the name: never hand them our environment
        return _converse(sock, argv, ident, environb)
    finally:
        sock.close()


def _converse(sock: object, argv: list, ident: str, environb: "dict[bytes, bytes]") -> "int | None":
    import _socket

    try:
        cwd_fd = posix.open(".", posix.O_RDONLY | posix.O_DIRECTORY | posix.O_CLOEXEC)
    except OSError:
        return None
    mask = posix.umask(0o022)
    posix.umask(mask)
    fields = [MAGIC, ident.encode("utf-8", "surrogateescape"), b"%d" % mask, b"%d" % posix.getppid(),
              b"%d" % len(argv), *(_encode(a) for a in argv)]
    fields += [k + b"=" + v for k, v in environb.items()]
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
        posix.close(cwd_fd)
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
        posix.kill(posix.getpid(), forwarded[-1])
    posix.write(2, b"clawshell: internal error: the warm worker ended without reporting a status "
                   b"(see `clawshell audit --last 1`)\n")
    return _STATUS_FAILED


class _Lines:
    """Newline-terminated messages from the worker."""

    def __init__(self, sock: object):
        self.sock = sock
        self.buf = b""

    def next(self) -> "bytes | None":
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


def _forward_signals(worker: int) -> list:
    """Pass HUP/INT/QUIT/TERM on to the worker; returns the list of those passed so far."""
    import _signal

    passed: list = []

    def forward(signum: int, _frame: object) -> None:
        passed.append(signum)
        try:
            posix.kill(worker, signum)
        except OSError:
            pass

    for sig in _FORWARD:
        try:
            if _signal.getsignal(sig) != _signal.SIG_IGN:  # an ignored signal stays ignored, as in bash
                _signal.signal(sig, forward)
        except (OSError, ValueError):
            pass
    return passed


_SERVER_ENV = (b"PATH", b"HOME", b"LANG", b"TZ", b"CLAWSHELL_HOME", b"CLAWSHELL_POLICY", b"CLAWSHELL_WARM_IDLE",
               b"PYTHONPATH")


def spawn_server(environb: "dict[bytes, bytes]") -> None:
    """Start a detached server for this home (it outlives us; we do not wait for it)."""
    env = {k: v for k, v in environb.items() if k in _SERVER_ENV or k.startswith(b"LC_")}
    try:
        pid = posix.fork()
    except OSError:
        return
    if pid:
        try:
            posix.waitpid(pid, 0)
        except OSError:
            pass
        return
    try:  # the child: a new session, then a grandchild that init adopts
        posix.setsid()
        if posix.fork():
            posix._exit(0)
        null = posix.open("/dev/null", posix.O_RDWR)
        for fd in (0, 1, 2):
            posix.dup2(null, fd)
        posix.closerange(3, 1 << 16)
        posix.execve(sys.executable, [sys.executable, "-m", "clawshell.warm", "serve"], env)
    finally:
        posix._exit(127)
