"""Plumbing for openat2(2): resolve a path *beneath* a directory file descriptor.

The file tools open everything relative to a descriptor of the workspace root with
``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS``: the kernel refuses (``EXDEV``) any
resolution that would leave the root — through ``..``, an absolute path, or a symlink
pointing out, even one swapped in while the call is running — and ``/proc`` magic
links (``ELOOP``).  A check-then-open in user space cannot give that guarantee.

Kernels before 5.6, and container seccomp profiles that answer ``ENOSYS`` for
openat2, get :func:`walk_beneath`: a component-by-component walk with
``O_NOFOLLOW`` that follows symlinks itself, keeps its own stack of directory
descriptors for ``..`` and never climbs above the root.  It is also race-free:
every step is an ``openat`` relative to a descriptor already known to be beneath
the root.

This module holds the syscall numbers, the ``struct open_how`` layout, the flags
and an errno explanation table; :func:`open_beneath` is the small API on top.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat

# ---------------------------------------------------------------- constants (linux/openat2.h)

RESOLVE_NO_XDEV = 0x01
"""Do not cross mount points."""
RESOLVE_NO_MAGICLINKS = 0x02
"""Refuse ``/proc/*/fd``-style magic links (``ELOOP``)."""
RESOLVE_NO_SYMLINKS = 0x04
"""Refuse every symlink (``ELOOP``)."""
RESOLVE_BENEATH = 0x08
"""Refuse any resolution leaving the starting directory (``EXDEV``)."""
RESOLVE_IN_ROOT = 0x10
"""Treat the starting directory as ``/`` (chroot-like); not used here."""
RESOLVE_CACHED = 0x20
"""Only succeed from the dentry cache (``EAGAIN`` otherwise); not used here."""

DEFAULT_RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
"""What the file tools ask for: stay beneath the root, no magic links."""

_SYSCALL_NUMBERS = {
    # The unified syscall table gives openat2 the number 437 on every architecture
    # that joined after it was introduced; the older ABIs add their offsets.
    "alpha": 547,
    "ia64": 1461,
    "mips": 4437,
    "mips64": 5437,
}

SYS_OPENAT2 = _SYSCALL_NUMBERS.get(platform.machine(), 437)
"""Syscall number of openat2 on this machine."""

MAX_SYMLINKS = 40
"""Symlinks followed in one resolution before ``ELOOP`` (the kernel's limit)."""

EXPLANATIONS: dict[int, str] = {
    errno.EXDEV: "resolves outside the workspace (through '..', an absolute path or a symlink)",
    errno.ELOOP: "goes through a symbolic link that is not allowed here (or too many links)",
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "a path component is not a directory",
    errno.EISDIR: "is a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EAGAIN: "the path changed while it was being resolved; try again",
    errno.ENOSYS: "openat2 is not available (kernel older than 5.6 or blocked by seccomp)",
    errno.E2BIG: "openat2 rejected the request structure (kernel too old for its size)",
    errno.EINVAL: "invalid flags for openat2",
    errno.ENAMETOOLONG: "file name too long",
    errno.EEXIST: "already exists",
    errno.ENOSPC: "no space left on the device",
    errno.EROFS: "read-only file system",
}
"""One-line explanations of the errors the resolution can report."""

ESCAPE_ERRNOS = frozenset({errno.EXDEV, errno.ELOOP})
"""Errors meaning "this path would leave the root": refusals, not plain failures."""


def explain(err: int) -> str:
    """A short explanation of ``err`` (falls back to ``os.strerror``)."""
    return EXPLANATIONS.get(err) or os.strerror(err)


# ---------------------------------------------------------------- the syscall


class OpenHow(ctypes.Structure):
    """``struct open_how`` (linux/openat2.h): three u64 fields, 24 bytes."""

    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc: ctypes.CDLL | None = None
_unavailable = False


def _syscall() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc.syscall


def openat2(dirfd: int, path: str | bytes, flags: int, mode: int = 0, resolve: int = DEFAULT_RESOLVE) -> int:
    """Call openat2(2) once; return the new descriptor or raise ``OSError`` with errno.

    ``O_CLOEXEC`` is always added.  ``EAGAIN`` (a concurrent rename seen while
    resolving ``..``) is retried a few times, as the kernel documentation advises.
    """
    raw = os.fsencode(path)
    tmpfile = getattr(os, "O_TMPFILE", 0)
    # The kernel rejects a mode (EINVAL) unless the call can create a file; O_TMPFILE
    # includes O_DIRECTORY's bit, so test it whole.
    creates = bool(flags & os.O_CREAT) or (tmpfile != 0 and flags & tmpfile == tmpfile)
    how = OpenHow(flags=flags | os.O_CLOEXEC, mode=mode if creates else 0, resolve=resolve)
    call = _syscall()
    for _ in range(8):
        fd = call(ctypes.c_long(SYS_OPENAT2), ctypes.c_int(dirfd), ctypes.c_char_p(raw),
                  ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err != errno.EAGAIN:
            break
    raise OSError(err, explain(err), os.fsdecode(raw))


def openat2_available() -> bool:
    """True when openat2 works here (probed once, on the current directory)."""
    global _unavailable
    if _unavailable:
        return False
    try:
        fd = openat2(_AT_FDCWD, ".", os.O_PATH | os.O_DIRECTORY)
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EPERM, errno.E2BIG, errno.EINVAL):
            _unavailable = True
            return False
        return True
    os.close(fd)
    return True


_AT_FDCWD = -100


# ---------------------------------------------------------------- the portable walk


def _split(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def walk_beneath(dirfd: int, path: str | bytes, flags: int, mode: int = 0,
                 resolve: int = DEFAULT_RESOLVE) -> int:
    """Resolve ``path`` beneath ``dirfd`` one component at a time (no openat2 needed).

    Same contract as :func:`openat2` with ``RESOLVE_BENEATH``: absolute paths and
    absolute symlink targets raise ``EXDEV``, ``..`` above the root raises ``EXDEV``,
    ``RESOLVE_NO_SYMLINKS`` turns any symlink into ``ELOOP``.  Magic links cannot be
    reached because every step is relative to a descriptor beneath the root.
    """
    text = os.fsdecode(path)
    if text.startswith("/"):
        raise OSError(errno.EXDEV, explain(errno.EXDEV), text)
    pending = _split(text)
    if text.endswith("/") and pending:
        pending[-1] += "/"
    stack: list[int] = []  # descriptors opened by this walk, innermost last
    links = 0

    def current() -> int:
        return stack[-1] if stack else dirfd

    try:
        while pending:
            comp = pending.pop(0)
            want_dir = comp.endswith("/")
            comp = comp.rstrip("/")
            last = not pending
            if comp == "..":
                if not stack:
                    raise OSError(errno.EXDEV, explain(errno.EXDEV), text)
                os.close(stack.pop())
                if last:
                    return os.dup(current()) if flags & os.O_PATH else _reopen(current(), flags)
                continue
            if not last or want_dir:
                step_flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
            else:
                step_flags = flags | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(comp, step_flags, mode, dir_fd=current())
            except OSError as exc:
                # O_NOFOLLOW on a symlink: ELOOP (or ENOTDIR with O_DIRECTORY on some
                # kernels); anything else is a real error.
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                try:
                    st = os.stat(comp, dir_fd=current(), follow_symlinks=False)
                except OSError:
                    raise exc from None
                if not stat.S_ISLNK(st.st_mode):
                    raise
                fd = -1
            if fd >= 0:
                st = os.fstat(fd)
                if not stat.S_ISLNK(st.st_mode):
                    if last and not want_dir:
                        return fd
                    if not stat.S_ISDIR(st.st_mode):
                        os.close(fd)
                        raise OSError(errno.ENOTDIR, explain(errno.ENOTDIR), text)
                    stack.append(fd)
                    if last:
                        if flags & os.O_PATH:
                            return os.dup(stack[-1])
                        return _reopen(stack[-1], flags)
                    continue
                os.close(fd)
            # A symlink: follow it ourselves, beneath the root.
            if resolve & RESOLVE_NO_SYMLINKS:
                raise OSError(errno.ELOOP, explain(errno.ELOOP), text)
            links += 1
            if links > MAX_SYMLINKS:
                raise OSError(errno.ELOOP, explain(errno.ELOOP), text)
            target = os.readlink(comp, dir_fd=current())
            if target.startswith("/"):
                raise OSError(errno.EXDEV, explain(errno.EXDEV), text)
            parts = _split(target)
            if (want_dir or target.endswith("/")) and parts:
                parts[-1] += "/"
            pending = parts + pending
        # Empty path ("" or "."): the root itself.
        return os.dup(dirfd) if flags & os.O_PATH else _reopen(dirfd, flags)
    finally:
        for fd in stack:
            try:
                os.close(fd)
            except OSError:
                pass


def _reopen(fd: int, flags: int) -> int:
    """Open the directory ``fd`` refers to with ``flags`` (not through /proc)."""
    return os.open(".", (flags & ~os.O_CREAT) | os.O_CLOEXEC, dir_fd=fd)


# ---------------------------------------------------------------- the API


def open_beneath(dirfd: int, path: str | bytes, flags: int, mode: int = 0o666, *,
                 resolve: int = DEFAULT_RESOLVE, use_openat2: bool | None = None) -> int:
    """Open ``path`` relative to ``dirfd`` without ever leaving it; return the descriptor.

    Uses openat2(2) when the kernel offers it, the portable walk otherwise
    (``use_openat2`` forces one or the other, for tests).  Raises ``OSError``; an
    errno in :data:`ESCAPE_ERRNOS` means the path would leave ``dirfd``.
    """
    text = os.fsdecode(path) or "."
    if use_openat2 is None:
        use_openat2 = openat2_available()
    if use_openat2:
        return openat2(dirfd, text, flags, mode, resolve)
    return walk_beneath(dirfd, text, flags, mode, resolve)
