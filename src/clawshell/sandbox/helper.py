"""The only code that restricts a process: rlimits, no_new_privs, Landlock, capabilities, seccomp.

It runs in a child, never in clawshell itself, in one of two ways:

- imported, in the child the runner forked, just before ``execve``
  (``apply_steps(plan.preexec)``; Landlock-only mode);
- as a script inside bubblewrap (``script_command``: ``python -I -S -c STUB ARGS --
  CMD...``), because bwrap must finish its mounts before Landlock is applied (a
  Landlock domain may not change the mount topology).  The script imports nothing
  from the clawshell package: only its sibling ``_landlock_sys`` and built-in modules.

Script mode runs once per sandboxed command, so its start-up is kept small: the stub
imports this file as a module, whose bytecode Python caches (a script given by path
is compiled from source on every run, ~2-4 ms here); ``posix`` stands in for ``os``
(which ``python -S`` does not load and which costs ~2 ms: it imports
``_collections_abc``); ``_landlock_sys`` uses ``_ctypes``, not the ``ctypes`` package.

Order matters and is fixed: rlimits, no_new_privs, Landlock, drop every capability,
seccomp last (so the filter never has to allow what the setup itself needs), then
``execve``.  Any failure is fatal: the command is never started half-confined.

Steps are ``(kind, data)`` pairs:

- ``("rlimits", ((name, soft, hard), ...))``
- ``("no_new_privs", None)``
- ``("landlock", (abi, handled_fs, handled_net, scoped, flags, ((access, path), ...), ((access, port), ...)))``
- ``("drop_caps", None)``
- ``("seccomp", path_of_cached_bpf)``

Kinds the runner handles itself (``cgroup``, ``pids_watchdog``, ``cleanup``,
``placeholders``, ``pid_namespace``, ``remove_if_empty``) are ignored here.
"""

import posix
import sys

try:  # imported as part of the package
    from . import _landlock_sys as _sys
except ImportError:  # script mode: this directory is on sys.path (see script_command)
    if __name__ == "__main__":  # run by path
        sys.path.insert(0, __file__.rpartition("/")[0] or ".")
    import _landlock_sys as _sys  # type: ignore[no-redef]

ORDER = ("rlimits", "no_new_privs", "landlock", "drop_caps", "seccomp")
"""The order restrictions are applied in, whatever order the steps came in."""


class SetupError(Exception):
    """A restriction could not be applied (the command must not run)."""


def apply_rlimits(limits: tuple[tuple[str, int, int], ...]) -> None:
    """Lower each named rlimit to ``(soft, hard)`` (-1: unlimited), never raising an
    existing hard limit.  Names: ``_landlock_sys.RLIMIT_NUMBERS``."""
    inf = _sys.RLIM_INFINITY
    for name, soft, hard in limits:
        cur_hard = _sys.prlimit(name)[1]
        if cur_hard != inf and (hard < 0 or hard > cur_hard):
            hard = cur_hard
        if hard < 0:
            hard = inf
        if soft < 0 or (hard != inf and soft > hard):
            soft = hard
        _sys.prlimit(name, (soft, hard))


def apply_landlock(data: tuple) -> None:
    """Create the ruleset, add every rule whose path still exists, restrict this thread."""
    abi, handled_fs, handled_net, scoped, flags, rules, ports = data
    kernel_abi = _sys.abi_version()
    if kernel_abi < abi:
        raise SetupError(f"Landlock ABI {abi} planned but the kernel offers {kernel_abi}")
    ruleset = _sys.Ruleset(abi, handled_fs, handled_net, scoped)
    open_path, add_path, close, fstat = _sys.open_path_no_symlinks, ruleset.add_path, posix.close, posix.fstat
    try:
        for access, path in rules:
            access &= handled_fs
            try:
                fd = open_path(path)
            except OSError:
                continue  # vanished or swapped for a symlink since planning: grant nothing
            try:
                # Directory-only rights on something that is not a directory (any more)
                # are dropped; the kernel would refuse the rule.
                if access & ~_FILE_RIGHTS and fstat(fd).st_mode & 0o170000 != 0o040000:
                    access &= _FILE_RIGHTS
                if access:
                    add_path(fd, access)
            finally:
                close(fd)
        for access, port in ports:
            ruleset.add_port(port, access)
    except BaseException:
        close(ruleset.fd)
        raise
    ruleset.restrict_self(flags)


_FILE_RIGHTS = (_sys.ACCESS_FS_EXECUTE | _sys.ACCESS_FS_WRITE_FILE | _sys.ACCESS_FS_READ_FILE
                | _sys.ACCESS_FS_TRUNCATE | _sys.ACCESS_FS_IOCTL_DEV)


def read_program(path: str) -> bytes:
    """Read a cached BPF program (before Landlock makes the cache unreadable)."""
    with open(path, "rb") as fh:
        return fh.read()


def apply_steps(steps: tuple[tuple[str, object], ...] | list[tuple[str, object]]) -> None:
    """Apply every restriction in ``steps`` to the current process, in ``ORDER``.

    Raises ``SetupError`` naming the step that failed.
    """
    by_kind: dict[str, object] = {}
    for kind, data in steps:
        if kind in ORDER:
            by_kind[kind] = data
    program = b""
    if "seccomp" in by_kind:
        try:
            program = read_program(by_kind["seccomp"])  # type: ignore[arg-type]
        except OSError as exc:
            raise SetupError(f"seccomp: cannot read the filter program: {exc}") from exc
    for kind in ORDER:
        if kind not in by_kind:
            continue
        data = by_kind[kind]
        try:
            if kind == "rlimits":
                apply_rlimits(data)  # type: ignore[arg-type]
            elif kind == "no_new_privs":
                _sys.set_no_new_privs()
            elif kind == "landlock":
                apply_landlock(data)  # type: ignore[arg-type]
            elif kind == "drop_caps":
                _sys.drop_capabilities()
            elif kind == "seccomp":
                _sys.load_seccomp_bpf(program)
        except SetupError:
            raise
        except (OSError, ValueError, KeyError) as exc:
            raise SetupError(f"{kind}: {exc}") from exc


# --------------------------------------------------------------------------- argv encoding


def encode_steps(steps: tuple[tuple[str, object], ...]) -> list[str]:
    """Encode helper steps as argv words for the script mode (no json: it imports slowly)."""
    out: list[str] = []
    for kind, data in steps:
        if kind == "rlimits":
            for name, soft, hard in data:  # type: ignore[union-attr]
                out.append(f"--rlimit={name}:{soft}:{hard}")
        elif kind == "no_new_privs":
            out.append("--nnp")
        elif kind == "landlock":
            abi, hfs, hnet, scoped, flags, rules, ports = data  # type: ignore[misc]
            out.append(f"--landlock={abi}:{hfs:x}:{hnet:x}:{scoped:x}:{flags:x}")
            out.extend(f"--fs={acc:x}:{path}" for acc, path in rules)
            out.extend(f"--port={acc:x}:{port}" for acc, port in ports)
        elif kind == "drop_caps":
            out.append("--drop-caps")
        elif kind == "seccomp":
            out.append(f"--seccomp={data}")
    return out


def decode_args(args: list[str]) -> tuple[list[tuple[str, object]], list[str]]:
    """Inverse of ``encode_steps``; returns the steps and the command after ``--``."""
    steps: list[tuple[str, object]] = []
    limits: list[tuple[str, int, int]] = []
    landlock_head: list[int] | None = None
    rules: list[tuple[int, str]] = []
    ports: list[tuple[int, int]] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            break
        key, _, val = a.partition("=")
        if key == "--rlimit":
            name, soft, hard = val.split(":")
            limits.append((name, int(soft), int(hard)))
        elif key == "--nnp":
            steps.append(("no_new_privs", None))
        elif key == "--landlock":
            landlock_head = [int(x, 16) if n else int(x) for n, x in enumerate(val.split(":"))]
        elif key == "--fs":
            acc, _, path = val.partition(":")
            rules.append((int(acc, 16), path))
        elif key == "--port":
            acc, _, port = val.partition(":")
            ports.append((int(acc, 16), int(port)))
        elif key == "--drop-caps":
            steps.append(("drop_caps", None))
        elif key == "--seccomp":
            steps.append(("seccomp", val))
        else:
            raise SetupError(f"unknown helper argument {a!r}")
    else:
        raise SetupError("no command after --")
    if limits:
        steps.append(("rlimits", tuple(limits)))
    if landlock_head is not None:
        abi, hfs, hnet, scoped, flags = landlock_head
        steps.append(("landlock", (abi, hfs, hnet, scoped, flags, tuple(rules), tuple(ports))))
    return steps, args[i:]


def script_command(python: str, steps: tuple[tuple[str, object], ...]) -> list[str]:
    """The argv that applies ``steps`` in script mode; the command follows after ``--``.

    ``-I -S``: no environment variables, no user or site directories, no ``site``
    import.  The stub puts this directory first on ``sys.path`` (only this module and
    ``_landlock_sys`` are imported from it) and imports this file by name, so that
    Python uses its cached bytecode when there is one.
    """
    here = __file__.rpartition("/")[0] or "."
    if not here.startswith("/"):
        here = posix.getcwd() + "/" + here
    stub = f"import sys;sys.path.insert(0,{here!r});import helper;helper.main(sys.argv[1:])"
    return [python, "-I", "-S", "-c", stub, *encode_steps(steps)]


SCRIPT_MODULES = ("helper", "_landlock_sys")
"""What script mode imports from this directory."""


def refresh_bytecode() -> None:
    """Write the cached bytecode of ``SCRIPT_MODULES`` when it is missing or stale.

    Inside bwrap the directory is read-only, so a stale cache would mean compiling
    both modules on every run (~10 ms); this does once what an import outside the
    sandbox would have done.  Skipped when bytecode writing is off
    (``PYTHONDONTWRITEBYTECODE``); failures are ignored (a read-only install).
    """
    if sys.dont_write_bytecode:
        return
    here = __file__.rpartition("/")[0] or "."
    for name in SCRIPT_MODULES:
        source = f"{here}/{name}.py"
        cached = f"{here}/__pycache__/{name}.{sys.implementation.cache_tag}.pyc"
        try:
            st = posix.stat(source)
        except OSError:
            continue
        head = b""
        try:
            fd = posix.open(cached, posix.O_RDONLY | posix.O_CLOEXEC)
            try:
                head = posix.read(fd, 16)
            finally:
                posix.close(fd)
        except OSError:
            pass
        # .pyc header: magic, flags, then source mtime and size (flags 0) or a source
        # hash Python checks itself (flags != 0).
        if len(head) == 16 and (head[4:8] != bytes(4) or (
                int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)):
            continue
        if not posix.access(here, posix.W_OK):
            return  # a read-only install: do not compile in vain on every run
        import py_compile

        try:
            py_compile.compile(source, cfile=cached, doraise=True)
        except (OSError, py_compile.PyCompileError):
            pass


def exec_command(command: list[str]) -> None:
    """``execvp`` without ``os``: a name without ``/`` is looked up on this environment's
    PATH (``/bin:/usr/bin`` when unset).  Raises the first error other than "not
    found", else the last one."""
    name = command[0]
    if "/" in name:
        posix.execv(name, command)
    raw = name.encode(sys.getfilesystemencoding(), "surrogateescape")
    first: OSError | None = None
    last: OSError | None = None
    for d in posix.environ.get(b"PATH", b"/bin:/usr/bin").split(b":"):
        try:
            posix.execv(d + b"/" + raw if d else raw, command)
        except OSError as exc:
            last = exc
            if exc.errno not in (2, 20) and first is None:  # ENOENT, ENOTDIR
                first = exc
    raise first or last or OSError(2, "No such file or directory")


def main(argv: list[str]) -> None:
    """Script mode: restrict, then exec the command (exit 126 with one line on failure)."""
    # Python ignores SIGPIPE and SIGXFSZ at start-up and an ignored signal stays
    # ignored across execve: give the command the default dispositions back, as a
    # shell would have them (`yes | head` must end by SIGPIPE, not print EPIPE errors).
    # _signal is built in: nothing to read from disk (after Landlock nothing could be).
    import _signal

    for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(sig, _signal.SIG_DFL)
    try:
        steps, command = decode_args(argv)
        if not command:
            raise SetupError("empty command")
        apply_steps(steps)
    except (SetupError, OSError, ValueError) as exc:
        posix.write(2, f"clawshell: sandbox: {exc}\n".encode("utf-8", "replace"))
        posix._exit(126)
    try:
        exec_command(command)
    except OSError as exc:
        posix.write(2, f"clawshell: {command[0]}: {exc.strerror}\n".encode("utf-8", "replace"))
        posix._exit(127 if exc.errno == 2 else 126)


if __name__ == "__main__":
    main(sys.argv[1:])
