"""ctypes plumbing for the calls that restrict a process: Landlock, prctl, capset, seccomp.

Syscall numbers, struct layouts, flag values and an errno -> explanation table live
here, with a small API on top (``abi_version``, ``Ruleset``, ``set_no_new_privs``,
``drop_capabilities``, ``load_seccomp_bpf``).  Nothing here decides *what* to
restrict: ``landlock.py`` and ``seccomp.py`` plan, ``helper.py`` applies.

The module must import fast and stand alone: ``helper.py`` runs it inside bwrap from
``python -I -S`` without the clawshell package on ``sys.path``.
"""

from __future__ import annotations

import ctypes
import errno
import os


# ------------------------------------------------------------------ Landlock (linux/landlock.h)

ACCESS_FS_EXECUTE = 1 << 0
ACCESS_FS_WRITE_FILE = 1 << 1
ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_READ_DIR = 1 << 3
ACCESS_FS_REMOVE_DIR = 1 << 4
ACCESS_FS_REMOVE_FILE = 1 << 5
ACCESS_FS_MAKE_CHAR = 1 << 6
ACCESS_FS_MAKE_DIR = 1 << 7
ACCESS_FS_MAKE_REG = 1 << 8
ACCESS_FS_MAKE_SOCK = 1 << 9
ACCESS_FS_MAKE_FIFO = 1 << 10
ACCESS_FS_MAKE_BLOCK = 1 << 11
ACCESS_FS_MAKE_SYM = 1 << 12
ACCESS_FS_REFER = 1 << 13
"""ABI 2: link/rename across directories."""
ACCESS_FS_TRUNCATE = 1 << 14
"""ABI 3: truncate(2), ftruncate on files opened after the restriction, O_TRUNC."""
ACCESS_FS_IOCTL_DEV = 1 << 15
"""ABI 5: ioctl(2) on character and block devices."""

ACCESS_NET_BIND_TCP = 1 << 0
"""ABI 4."""
ACCESS_NET_CONNECT_TCP = 1 << 1
"""ABI 4."""

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
"""ABI 6: no connecting to abstract unix sockets created outside the domain."""
SCOPE_SIGNAL = 1 << 1
"""ABI 6: no signals to processes outside the domain."""

CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

RESTRICT_SELF_LOG_SAME_EXEC_OFF = 1 << 0
"""ABI 7: do not audit-log denials of this very process image."""
RESTRICT_SELF_LOG_NEW_EXEC_ON = 1 << 1
"""ABI 7: audit-log denials after the next execve."""
RESTRICT_SELF_LOG_SUBDOMAINS_OFF = 1 << 2
"""ABI 7: mute logging of nested domains."""

FS_ACCESS_BY_ABI = {
    1: (1 << 13) - 1,
    2: (1 << 14) - 1,
    3: (1 << 15) - 1,
    4: (1 << 15) - 1,
    5: (1 << 16) - 1,
    6: (1 << 16) - 1,
    7: (1 << 16) - 1,
}
"""Every filesystem right a given ABI knows (what a ruleset can handle)."""

NET_ACCESS_BY_ABI = {abi: (ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP if abi >= 4 else 0) for abi in range(1, 8)}
SCOPED_BY_ABI = {abi: (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0) for abi in range(1, 8)}
MAX_KNOWN_ABI = 7

_LANDLOCK_NR = {"alpha": (554, 555, 556)}
_LANDLOCK_DEFAULT_NR = (444, 445, 446)  # unified syscall table: every other architecture


class RulesetAttr(ctypes.Structure):
    """struct landlock_ruleset_attr (size depends on the ABI: 8, 16 or 24 bytes)."""

    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    """struct landlock_path_beneath_attr (packed)."""

    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class NetPortAttr(ctypes.Structure):
    """struct landlock_net_port_attr."""

    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


ERRNO_EXPLANATIONS = {
    errno.ENOSYS: "Landlock is not built into this kernel (CONFIG_SECURITY_LANDLOCK)",
    errno.EOPNOTSUPP: "Landlock is built in but disabled: add 'landlock' to the lsm= boot parameter",
    errno.EINVAL: "the kernel rejected the ruleset (an access right or flag unknown to this ABI)",
    errno.E2BIG: "too many stacked Landlock domains (at most 16), or an attribute this kernel does not know",
    errno.EPERM: "not permitted (Landlock: no_new_privs unset and no CAP_SYS_ADMIN; prctl: no CAP_SETPCAP)",
    errno.EBADF: "a rule's file descriptor is not valid or not opened with O_PATH",
    errno.EBADFD: "a rule's file descriptor does not refer to a usable filesystem",
    errno.ENOMSG: "a rule grants no access right",
}
"""What a failing Landlock/prctl call means, for one clear message."""

# ------------------------------------------------------------------ prctl / capabilities / seccomp

PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_SECCOMP = 22
PR_GET_SECCOMP = 21
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
PR_GET_SECUREBITS = 27
SECBIT_NOROOT_BOTH = 0x3
"""SECBIT_NOROOT | SECBIT_NOROOT_LOCKED: uid 0 gains no capabilities on execve."""
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_LAST_CAP_FALLBACK = 40


class SockFilter(ctypes.Structure):
    """struct sock_filter: one classic BPF instruction (8 bytes)."""

    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    """struct sock_fprog: length and pointer to the instructions."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


class CapHeader(ctypes.Structure):
    """struct __user_cap_header_struct."""

    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    """struct __user_cap_data_struct (two of them for version 3)."""

    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    """The C library, loaded once, with errno capture."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
    return _libc


class LandlockError(OSError):
    """A Landlock call failed; ``str()`` names the call and explains the errno."""


def _fail(call: str) -> LandlockError:
    err = ctypes.get_errno()
    why = ERRNO_EXPLANATIONS.get(err, os.strerror(err))
    return LandlockError(err, f"{call}: {os.strerror(err)} ({why})")


def _numbers() -> tuple[int, int, int]:
    return _LANDLOCK_NR.get(os.uname().machine, _LANDLOCK_DEFAULT_NR)


def abi_version() -> int:
    """The Landlock ABI this kernel offers; 0 when Landlock is missing or disabled."""
    nr = _numbers()[0]
    res = libc().syscall(ctypes.c_long(nr), None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return int(res) if res > 0 else 0


def attr_size(abi: int) -> int:
    """sizeof(struct landlock_ruleset_attr) as the given ABI defines it."""
    if abi >= 6:
        return 24
    if abi >= 4:
        return 16
    return 8


class Ruleset:
    """One Landlock ruleset being built; ``restrict_self`` enforces it on this thread."""

    def __init__(self, abi: int, handled_fs: int, handled_net: int = 0, scoped: int = 0):
        self.abi = abi
        attr = RulesetAttr(handled_fs, handled_net, scoped)
        nr = _numbers()[0]
        fd = libc().syscall(ctypes.c_long(nr), ctypes.byref(attr), ctypes.c_size_t(attr_size(abi)),
                            ctypes.c_uint32(0))
        if fd < 0:
            raise _fail("landlock_create_ruleset")
        self.fd = int(fd)

    def add_path(self, path_fd: int, access: int) -> None:
        """Allow ``access`` beneath the file or directory open as ``path_fd`` (O_PATH)."""
        attr = PathBeneathAttr(access, path_fd)
        res = libc().syscall(ctypes.c_long(_numbers()[1]), ctypes.c_int(self.fd), ctypes.c_int(RULE_PATH_BENEATH),
                             ctypes.byref(attr), ctypes.c_uint32(0))
        if res < 0:
            raise _fail("landlock_add_rule(path_beneath)")

    def add_port(self, port: int, access: int) -> None:
        """Allow ``access`` (bind/connect) on TCP ``port``."""
        attr = NetPortAttr(access, port)
        res = libc().syscall(ctypes.c_long(_numbers()[1]), ctypes.c_int(self.fd), ctypes.c_int(RULE_NET_PORT),
                             ctypes.byref(attr), ctypes.c_uint32(0))
        if res < 0:
            raise _fail("landlock_add_rule(net_port)")

    def restrict_self(self, flags: int = 0) -> None:
        """Enforce the ruleset on the calling thread (and what it executes); closes the fd."""
        try:
            res = libc().syscall(ctypes.c_long(_numbers()[2]), ctypes.c_int(self.fd), ctypes.c_uint32(flags))
            if res < 0:
                raise _fail("landlock_restrict_self")
        finally:
            os.close(self.fd)


def set_no_new_privs() -> None:
    """prctl(PR_SET_NO_NEW_PRIVS, 1): execve can never grant privileges again."""
    if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _fail("prctl(PR_SET_NO_NEW_PRIVS)")


def no_new_privs() -> bool:
    """True when no_new_privs is already set on this thread."""
    return libc().prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1


def last_cap() -> int:
    """Highest capability number the kernel knows."""
    try:
        with open("/proc/sys/kernel/cap_last_cap", "rb") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return CAP_LAST_CAP_FALLBACK


def drop_capabilities() -> None:
    """Empty the bounding, ambient, inheritable, permitted and effective capability sets.

    Dropping the bounding set is what matters for uid 0: execve would otherwise hand
    root every capability again.  A bounding entry that cannot be dropped (no
    CAP_SETPCAP, e.g. bwrap already dropped it) must already be absent.
    """
    lib = libc()
    # Without CAP_SETPCAP the bounding set can only stay as it is.  That is safe when
    # execve can never raise capabilities again: no_new_privs caps what root gains at
    # execve to what it already has (nothing, once capset below clears it), and so
    # does SECBIT_NOROOT.
    cannot_regain = no_new_privs() or (
        lib.prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) & SECBIT_NOROOT_BOTH) == SECBIT_NOROOT_BOTH
    for cap in range(last_cap() + 1):
        if lib.prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1:
            if lib.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and not cannot_regain:
                raise _fail(f"prctl(PR_CAPBSET_DROP, {cap})")
    lib.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (CapData * 2)()
    if lib.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise _fail("capset")


def load_seccomp_bpf(program: bytes) -> None:
    """Install a classic-BPF seccomp filter (needs no_new_privs or CAP_SYS_ADMIN)."""
    if not program or len(program) % 8:
        raise OSError(errno.EINVAL, "seccomp: the BPF program is empty or not whole instructions")
    count = len(program) // 8
    buf = (SockFilter * count).from_buffer_copy(program)
    prog = SockFprog(count, ctypes.cast(buf, ctypes.POINTER(SockFilter)))
    if libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_SECCOMP): {os.strerror(err)}")


def seccomp_filter_supported() -> bool:
    """True when the kernel has seccomp filter mode (CONFIG_SECCOMP_FILTER).

    Probed without installing anything: PR_SET_SECCOMP with a NULL program fails with
    EFAULT when filters are supported, EINVAL when they are not.
    """
    lib = libc()
    if lib.prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
        return False
    res = lib.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, None, 0, 0)
    return res != 0 and ctypes.get_errno() == errno.EFAULT


OPENAT2_NR = {"alpha": 547, "ia64": 1461, "mips": 4437, "mips64": 5437}
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04


class OpenHow(ctypes.Structure):
    """struct open_how for openat2(2)."""

    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def open_path_no_symlinks(path: str) -> int:
    """O_PATH descriptor of ``path`` refusing every symlink on the way (openat2).

    The paths handed to Landlock are already resolved; refusing symlinks here means a
    component swapped for a symlink after planning cannot redirect a grant.  Kernels
    without openat2 get ``O_PATH | O_NOFOLLOW`` (last component only).
    """
    how = OpenHow(os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    nr = OPENAT2_NR.get(os.uname().machine, 437)
    fd = libc().syscall(ctypes.c_long(nr), ctypes.c_int(-100), path.encode("utf-8", "surrogateescape"),
                        ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
    if fd >= 0:
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM):
        return os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
    raise OSError(err, os.strerror(err), path)


def set_subreaper() -> bool:
    """prctl(PR_SET_CHILD_SUBREAPER, 1); False when refused."""
    return libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
