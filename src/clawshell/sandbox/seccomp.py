"""The seccomp filter: its definition, compiled once to BPF with pyseccomp and cached.

Default action: allow.  Denied with ``EPERM`` (what tools expect when something is
not permitted; the tests tell this filter apart from other layers by running the same
call without it):

- Docker's default profile's blocked set: kernel modules, kexec, reboot, swap, acct,
  clock setting, keyrings, bpf, perf_event_open, userfaultfd, the NUMA calls, quotactl,
  name_to_handle_at/open_by_handle_at, ioperm/iopl, kcmp, lookup_dcookie, nfsservctl,
  personality-independent obsolete calls (uselib, ustat, sysfs, _sysctl, vm86);
- debugging other processes: ptrace, process_vm_readv/writev, pidfd_getfd;
- io_uring_setup/enter/register (a second syscall surface that seccomp cannot see);
- the whole mount API: mount, umount2, pivot_root, move_mount, open_tree,
  fsopen/fsconfig/fsmount/fspick, mount_setattr;
- namespaces: unshare, setns, and clone with any CLONE_NEW* flag;
- ioctl TIOCSTI and TIOCLINUX (typing into the terminal);
- with the network off: socket() of any family but AF_UNIX;
- optionally (Landlock-only mode, where unix socket paths of the host are reachable):
  socket(AF_UNIX) too (socketpair stays allowed).

``clone3`` answers ``ENOSYS`` so that libc falls back to ``clone``, whose flags a
classic BPF filter can inspect.  System calls of another architecture (the 32-bit
entry on x86-64) kill the process.

The hot path never imports pyseccomp (~45 ms): ``bpf_path`` returns the cached
program, compiling it only when the cache has no program for this definition.
"""

from __future__ import annotations

import errno
import hashlib
import os
import platform
from dataclasses import dataclass

VERSION = 1
"""Bump when the definition below changes meaning (it is part of the cache key)."""

DENIED = (
    # Docker's default profile: calls not on its allow list.
    "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module", "delete_module",
    "finit_module", "get_kernel_syms", "get_mempolicy", "init_module", "ioperm", "iopl", "kcmp",
    "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mbind", "move_pages", "nfsservctl",
    "open_by_handle_at", "name_to_handle_at", "perf_event_open", "query_module", "quotactl",
    "quotactl_fd", "reboot", "request_key", "set_mempolicy", "set_mempolicy_home_node", "settimeofday",
    "stime", "swapon", "swapoff", "sysfs", "_sysctl", "uselib", "userfaultfd", "ustat", "vm86",
    "vm86old", "syslog", "adjtimex",
    # Other processes.
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    # io_uring.
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # Mounts.
    "mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr",
    # Namespaces.
    "unshare", "setns",
)
"""System calls refused outright with EPERM."""

CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
"""clone(2) flags refused (each one alone is enough)."""

TIOCSTI = 0x5412
TIOCLINUX = 0x541C
AF_UNIX = 1
DENY_ERRNO = errno.EPERM


@dataclass(frozen=True)
class FilterOptions:
    """The variants of the filter (each compiles to its own cached program)."""

    network: bool = False
    """Allow sockets of every family."""
    deny_unix_sockets: bool = False
    """Refuse socket(AF_UNIX) as well (Landlock-only mode)."""


def native_arch() -> str:
    """Machine name used in the cache key."""
    return platform.machine() or "unknown"


def definition_key(options: FilterOptions) -> str:
    """Hash of everything that decides the compiled program."""
    text = repr((VERSION, DENIED, CLONE_NAMESPACE_FLAGS, TIOCSTI, TIOCLINUX, DENY_ERRNO,
                 options.network, options.deny_unix_sockets, native_arch()))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def compile_bpf(options: FilterOptions) -> bytes:
    """Build the filter with pyseccomp and export it as classic BPF bytes."""
    import tempfile

    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)
    try:
        f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    except (AttributeError, OSError):
        pass
    deny = sc.ERRNO(DENY_ERRNO)
    for name in DENIED:
        try:
            f.add_rule(deny, name)
        except (OSError, ValueError, RuntimeError):
            continue  # not a system call on this architecture
    for flag in CLONE_NAMESPACE_FLAGS:
        f.add_rule(deny, "clone", sc.Arg(_clone_flags_arg(), sc.MASKED_EQ, flag, flag))
    try:
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    except (OSError, ValueError, RuntimeError):
        pass
    for request in (TIOCSTI, TIOCLINUX):
        f.add_rule(deny, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    if not options.network:
        f.add_rule(deny, "socket", sc.Arg(0, sc.NE, AF_UNIX))
    if options.deny_unix_sockets:
        f.add_rule(deny, "socket", sc.Arg(0, sc.EQ, AF_UNIX))
    with tempfile.TemporaryFile() as fh:
        f.export_bpf(fh)
        fh.seek(0)
        return fh.read()


def _clone_flags_arg() -> int:
    """Index of clone's flags argument (s390 swaps the first two)."""
    return 1 if native_arch().startswith("s390") else 0


def bpf_path(cache_dir: str, options: FilterOptions) -> str:
    """Path of the cached program for ``options``, compiling and caching it if missing.

    Raises ``OSError`` when the cache cannot be written and ``ImportError``/``RuntimeError``
    when pyseccomp or libseccomp is missing.
    """
    path = os.path.join(cache_dir, f"seccomp-{native_arch()}-{definition_key(options)}.bpf")
    from ..cachefile import read_private, write_private

    cached = read_private(path)  # a program someone else could write is never installed
    if cached and len(cached) % 8 == 0:
        return path
    write_private(path, compile_bpf(options))
    return path


def load_bpf(path: str) -> None:
    """Install the cached program at ``path`` on the calling thread (needs no_new_privs)."""
    from . import _landlock_sys

    with open(path, "rb") as fh:
        _landlock_sys.load_seccomp_bpf(fh.read())
