"""The only code that restricts a process: rlimits, no_new_privs, Landlock, capabilities, seccomp.

It runs in a child, never in clawshell itself, in one of two ways:

- imported, in the child the runner forked, just before ``execve``
  (``apply_steps(plan.preexec)``; Landlock-only mode);
- as a script inside bubblewrap (``python -I -S .../helper.py ARGS -- CMD...``), because
  bwrap must finish its mounts before Landlock is applied (a Landlock domain may not
  change the mount topology).  The script imports nothing from the clawshell package:
  only its sibling ``_landlock_sys`` and the standard library.

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

from __future__ import annotations

import os
import stat
import sys

try:  # imported as part of the package
    from . import _landlock_sys as _sys
except ImportError:  # run as a script by path inside bwrap (python -I -S)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _landlock_sys as _sys  # type: ignore[no-redef]

RLIMITS = {"fsize": "RLIMIT_FSIZE", "as": "RLIMIT_AS", "nofile": "RLIMIT_NOFILE", "core": "RLIMIT_CORE",
           "nproc": "RLIMIT_NPROC", "cpu": "RLIMIT_CPU", "stack": "RLIMIT_STACK"}
"""Limit names accepted in steps."""

ORDER = ("rlimits", "no_new_privs", "landlock", "drop_caps", "seccomp")
"""The order restrictions are applied in, whatever order the steps came in."""


class SetupError(Exception):
    """A restriction could not be applied (the command must not run)."""


def apply_rlimits(limits: tuple[tuple[str, int, int], ...]) -> None:
    """Lower each named rlimit to ``(soft, hard)``, never raising an existing hard limit."""
    import resource

    for name, soft, hard in limits:
        res = getattr(resource, RLIMITS[name])
        cur_soft, cur_hard = resource.getrlimit(res)
        if cur_hard != resource.RLIM_INFINITY and (hard < 0 or hard > cur_hard):
            hard = cur_hard
        if hard < 0:
            hard = resource.RLIM_INFINITY
        if soft < 0 or (hard != resource.RLIM_INFINITY and soft > hard):
            soft = hard
        resource.setrlimit(res, (soft, hard))


def apply_landlock(data: tuple) -> None:
    """Create the ruleset, add every rule whose path still exists, restrict this thread."""
    abi, handled_fs, handled_net, scoped, flags, rules, ports = data
    kernel_abi = _sys.abi_version()
    if kernel_abi < abi:
        raise SetupError(f"Landlock ABI {abi} planned but the kernel offers {kernel_abi}")
    ruleset = _sys.Ruleset(abi, handled_fs, handled_net, scoped)
    try:
        for access, path in rules:
            try:
                fd = _sys.open_path_no_symlinks(path)
            except OSError:
                continue  # vanished or swapped for a symlink since planning: grant nothing
            try:
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    access &= _FILE_RIGHTS
                if access:
                    ruleset.add_path(fd, access & handled_fs)
            finally:
                os.close(fd)
        for access, port in ports:
            ruleset.add_port(port, access)
    except BaseException:
        os.close(ruleset.fd)
        raise
    ruleset.restrict_self(flags)


_FILE_RIGHTS = (_sys.ACCESS_FS_EXECUTE | _sys.ACCESS_FS_WRITE_FILE | _sys.ACCESS_FS_READ_FILE
                | _sys.ACCESS_FS_TRUNCATE | _sys.ACCESS_FS_IOCTL_DEV)


def read_program(path: str) -> bytes:
    """Read a cached BPF program (before Landlock makes the cache unreadable)."""
    with open(path, "rb") as fh:
        return fh.read()


def apply_steps(steps: tuple[tuple[str, object], ...] | list) -> None:
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
        os.write(2, f"clawshell: sandbox: {exc}\n".encode("utf-8", "replace"))
        os._exit(126)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(2, f"clawshell: {command[0]}: {exc.strerror}\n".encode("utf-8", "replace"))
        os._exit(127 if exc.errno == 2 else 126)


if __name__ == "__main__":
    main(sys.argv[1:])
