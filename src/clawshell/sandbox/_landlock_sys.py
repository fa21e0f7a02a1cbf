"""Raw-call plumbing for the calls that restrict a process: Landlock, prctl, capset, seccomp.

Syscall numbers, struct layouts, flag values and an errno -> explanation table live
here, with a small API on top (``abi_version``, ``Ruleset``, ``set_no_new_privs``,
``drop_capabilities``, ``load_seccomp_bpf``).  Nothing here decides *what* to
restrict: ``landlock.py`` and ``seccomp.py`` plan, ``helper.py`` applies.

The module must import fast and stand alone: ``helper.py`` runs it inside bwrap from
``python -I -S`` without the clawshell package on ``sys.path``, once per sandboxed
command.  So it calls libc through ``_ctypes``, the C core of ``ctypes``, and not the
``ctypes`` package: importing that package costs ~5 ms (it builds dozens of types and
a test callback), ``_ctypes`` ~1 ms.  What is used of ``_ctypes`` is what
``ctypes.CDLL`` itself is built on (``dlopen``, ``CFuncPtr``, ``_SimpleCData``,
``get_errno``).  Structs are passed as ``bytes`` packed by hand (the ``struct``
module is another import), in native byte order; the layouts are written next to
each one.  ``posix`` stands in for ``os`` (built in; ``os`` is not loaded by
``python -S`` and costs ~2 ms more), and there is no ``from __future__`` import.
"""

import _ctypes
import errno
import posix
import sys

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


# ------------------------------------------------------------------ calling libc

_MACHINE = posix.uname().machine
_BYTEORDER = sys.byteorder


class _Long(_ctypes._SimpleCData):
    """C ``long``: what ``syscall(2)`` returns."""

    _type_ = "l"


class _Int(_ctypes._SimpleCData):
    """C ``int``."""

    _type_ = "i"


class _Word(_ctypes._SimpleCData):
    """A register-wide argument (``void *``): an int (negative ones sign-extended),
    ``bytes`` or a buffer (passed by address), ``None`` (NULL)."""

    _type_ = "P"


class _Char(_ctypes._SimpleCData):
    """C ``char``, for writable byte buffers."""

    _type_ = "c"


_POINTER_SIZE = _ctypes.sizeof(_Word)


class _Libc:
    """The C library as ``CFuncPtr`` wants it: an object with a ``dlopen`` handle."""

    _handle = 0


_functions: dict[str, object] = {}


def _function(name: str, restype: type, argtypes: tuple[type, ...]) -> object:
    """libc's ``name`` (once looked up, kept); errno is captured after every call.

    ``argtypes`` convert the arguments in C, and a call must pass all of them.
    """
    func = _functions.get(name)
    if func is None:
        if not _Libc._handle:
            _Libc._handle = _ctypes.dlopen(None, _ctypes.RTLD_LOCAL)

        class _Func(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = restype
            _argtypes_ = argtypes

        func = _functions[name] = _Func((name, _Libc))
    return func


def syscall(nr: int, a1: object = 0, a2: object = 0, a3: object = 0, a4: object = 0, a5: object = 0) -> int:
    """``syscall(nr, ...)`` with every argument register-wide (``_Word``; unused ones
    are 0: the C library loads them all anyway).  Returns the result, -1 with
    ``get_errno()`` set on failure."""
    return _function("syscall", _Long, (_Long, _Word, _Word, _Word, _Word, _Word))(  # type: ignore[operator]
        nr, a1, a2, a3, a4, a5)


def prctl(option: int, a2: object = 0, a3: object = 0, a4: object = 0, a5: object = 0) -> int:
    """``prctl(2)`` (its variadic arguments are read as unsigned long: ``_Word``); -1 with
    ``get_errno()`` set on failure."""
    return _function("prctl", _Int, (_Int, _Word, _Word, _Word, _Word))(option, a2, a3, a4, a5)  # type: ignore[operator]


def get_errno() -> int:
    """errno as the last libc call through this module left it."""
    return _ctypes.get_errno()


def _u64(*values: int) -> bytes:
    return b"".join(v.to_bytes(8, _BYTEORDER) for v in values)


# ------------------------------------------------------------------ Landlock calls


class LandlockError(OSError):
    """A Landlock call failed; ``str()`` names the call and explains the errno."""


def _fail(call: str) -> LandlockError:
    err = _ctypes.get_errno()
    why = ERRNO_EXPLANATIONS.get(err, posix.strerror(err))
    return LandlockError(err, f"{call}: {posix.strerror(err)} ({why})")


def _numbers() -> tuple[int, int, int]:
    return _LANDLOCK_NR.get(_MACHINE, _LANDLOCK_DEFAULT_NR)


def abi_version() -> int:
    """The Landlock ABI this kernel offers; 0 when Landlock is missing or disabled."""
    res = syscall(_numbers()[0], None, 0, CREATE_RULESET_VERSION)
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
        # struct landlock_ruleset_attr {u64 handled_access_fs, handled_access_net, scoped;},
        # cut to the size the ABI defines.
        size = attr_size(abi)
        attr = _u64(handled_fs, handled_net, scoped)[:size]
        self._create, self._add, self._restrict = _numbers()
        fd = syscall(self._create, attr, size, 0)
        if fd < 0:
            raise _fail("landlock_create_ruleset")
        self.fd = int(fd)

    def add_path(self, path_fd: int, access: int) -> None:
        """Allow ``access`` beneath the file or directory open as ``path_fd`` (O_PATH)."""
        # struct landlock_path_beneath_attr {u64 allowed_access; s32 parent_fd;} __packed
        attr = access.to_bytes(8, _BYTEORDER) + path_fd.to_bytes(4, _BYTEORDER, signed=True)
        if syscall(self._add, self.fd, RULE_PATH_BENEATH, attr, 0) < 0:
            raise _fail("landlock_add_rule(path_beneath)")

    def add_port(self, port: int, access: int) -> None:
        """Allow ``access`` (bind/connect) on TCP ``port``."""
        # struct landlock_net_port_attr {u64 allowed_access; u64 port;}
        if syscall(self._add, self.fd, RULE_NET_PORT, _u64(access, port), 0) < 0:
            raise _fail("landlock_add_rule(net_port)")

    def restrict_self(self, flags: int = 0) -> None:
        """Enforce the ruleset on the calling thread (and what it executes); closes the fd."""
        try:
            if syscall(self._restrict, self.fd, flags) < 0:
                raise _fail("landlock_restrict_self")
        finally:
            posix.close(self.fd)


# ------------------------------------------------------------------ prctl / capabilities / seccomp calls


def set_no_new_privs() -> None:
    """prctl(PR_SET_NO_NEW_PRIVS, 1): execve can never grant privileges again."""
    if prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
        raise _fail("prctl(PR_SET_NO_NEW_PRIVS)")


def no_new_privs() -> bool:
    """True when no_new_privs is already set on this thread."""
    return prctl(PR_GET_NO_NEW_PRIVS) == 1


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
    root every capability again.  Without CAP_SETPCAP (inside bwrap, which dropped
    it) the bounding set stays as it is, which is only accepted when execve can never
    grant from it (no_new_privs or SECBIT_NOROOT); otherwise this fails.
    """
    # Without CAP_SETPCAP the bounding set can only stay as it is.  That is safe when
    # execve can never raise capabilities again: no_new_privs caps what root gains at
    # execve to what it already has (nothing, once capset below clears it), and so
    # does SECBIT_NOROOT.
    cannot_regain = no_new_privs() or (prctl(PR_GET_SECUREBITS) & SECBIT_NOROOT_BOTH) == SECBIT_NOROOT_BOTH
    # Every capability the kernel knows: PR_CAPBSET_READ answers EINVAL past the last
    # one (saves reading /proc/sys/kernel/cap_last_cap).  PR_CAPBSET_DROP of a valid
    # capability only fails for want of CAP_SETPCAP, so after one such failure the
    # others would fail too (inside bwrap, which dropped CAP_SETPCAP, that is ~80
    # prctl calls saved).
    cap = 0
    while (held := prctl(PR_CAPBSET_READ, cap)) >= 0:
        if held == 1 and prctl(PR_CAPBSET_DROP, cap) != 0:
            if not cannot_regain:
                raise _fail(f"prctl(PR_CAPBSET_DROP, {cap})")
            break
        cap += 1
    else:
        if cap == 0:
            raise _fail("prctl(PR_CAPBSET_READ, 0)")
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    # struct __user_cap_header_struct {u32 version; int pid;} (writable: the kernel
    # writes its preferred version back into it when it rejects ours), then two
    # struct __user_cap_data_struct {u32 effective, permitted, inheritable;}, all zero.
    header = (_Char * 8).from_buffer_copy(LINUX_CAPABILITY_VERSION_3.to_bytes(4, _BYTEORDER) + bytes(4))
    data = bytes(24)
    if _function("capset", _Int, (_Word, _Word))(header, data) != 0:  # type: ignore[operator]
        raise _fail("capset")


def load_seccomp_bpf(program: bytes) -> None:
    """Install a classic-BPF seccomp filter (needs no_new_privs or CAP_SYS_ADMIN)."""
    if not program or len(program) % 8:
        raise OSError(errno.EINVAL, "seccomp: the BPF program is empty or not whole instructions")
    count = len(program) // 8
    # The instructions (struct sock_filter, 8 bytes each) in a buffer of ours, then
    # struct sock_fprog {unsigned short len; struct sock_filter *filter;}: the length
    # padded to pointer alignment, then the buffer's address.
    buf = (_Char * len(program)).from_buffer_copy(program)
    prog = (count.to_bytes(2, _BYTEORDER) + bytes(_POINTER_SIZE - 2)
            + _ctypes.addressof(buf).to_bytes(_POINTER_SIZE, _BYTEORDER))
    if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog) != 0:
        err = _ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_SECCOMP): {posix.strerror(err)}")


def seccomp_filter_supported() -> bool:
    """True when the kernel has seccomp filter mode (CONFIG_SECCOMP_FILTER).

    Probed without installing anything: PR_SET_SECCOMP with a NULL program fails with
    EFAULT when filters are supported, EINVAL when they are not.
    """
    if prctl(PR_GET_SECCOMP) < 0:
        return False
    res = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, None)
    return res != 0 and _ctypes.get_errno() == errno.EFAULT


RLIMIT_NUMBERS = {"cpu": 0, "fsize": 1, "stack": 3, "core": 4, "nproc": 6, "nofile": 7, "as": 9}
"""Resource numbers as asm-generic/resource.h has them (x86, arm, riscv, powerpc, s390...)."""
_RLIMIT_OWN_NUMBERING = ("alpha", "mips", "sparc")
"""Architectures numbering some limits their own way: asked of the ``resource`` module."""
RLIM_INFINITY = (1 << 64) - 1
"""``RLIM64_INFINITY``: no limit."""


def prlimit(name: str, new: tuple[int, int] | None = None) -> tuple[int, int]:
    """``(soft, hard)`` of this process's ``name`` limit (``RLIMIT_NUMBERS`` keys), set
    to ``new`` when given; returns the values from before.  Unlimited is
    ``RLIM_INFINITY``.  Raises ``KeyError`` for an unknown name."""
    number = RLIMIT_NUMBERS[name]
    if _MACHINE.startswith(_RLIMIT_OWN_NUMBERING):
        import resource

        number = getattr(resource, "RLIMIT_" + name.upper())
    try:
        call = _function("prlimit64", _Int, (_Int, _Int, _Word, _Word))
    except AttributeError as exc:  # a C library without it
        raise OSError(errno.ENOSYS, f"prlimit64: {exc}") from exc
    # struct rlimit64 {u64 rlim_cur, rlim_max;}
    old = (_Char * 16)()
    if call(0, number, None if new is None else _u64(*new), old) != 0:  # type: ignore[operator]
        err = _ctypes.get_errno()
        raise OSError(err, f"prlimit64(RLIMIT_{name.upper()}): {posix.strerror(err)}")
    raw = bytes(old)
    return int.from_bytes(raw[:8], _BYTEORDER), int.from_bytes(raw[8:], _BYTEORDER)


OPENAT2_NR = {"alpha": 547, "ia64": 1461, "mips": 4437, "mips64": 5437}
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
AT_FDCWD = -100

_OPEN_HOW = _u64(posix.O_PATH | posix.O_CLOEXEC | posix.O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
"""struct open_how {u64 flags, mode, resolve;} for ``open_path_no_symlinks``."""


def open_path_no_symlinks(path: str) -> int:
    """O_PATH descriptor of ``path`` refusing every symlink on the way (openat2).

    The paths handed to Landlock are already resolved; refusing symlinks here means a
    component swapped for a symlink after planning cannot redirect a grant.  Kernels
    without openat2 get ``O_PATH | O_NOFOLLOW`` (last component only).
    """
    nr = OPENAT2_NR.get(_MACHINE, 437)
    fd = syscall(nr, AT_FDCWD, path.encode("utf-8", "surrogateescape"), _OPEN_HOW, len(_OPEN_HOW))
    if fd >= 0:
        return int(fd)
    err = _ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM):
        return posix.open(path, posix.O_PATH | posix.O_CLOEXEC | posix.O_NOFOLLOW)
    raise OSError(err, posix.strerror(err), path)


def set_subreaper() -> bool:
    """prctl(PR_SET_CHILD_SUBREAPER, 1); False when refused."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0
