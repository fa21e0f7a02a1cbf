"""Private cache files in ``$CLAWSHELL_HOME/cache``: one way to read and one way to write.

The caches (parser tables, compiled dataclass code, the loaded policy, the host probe,
the compiled seccomp program) are loaded as code or trusted as configuration, so a
cache file is only used when it is a regular file of ours that nobody else can write,
opened without following a symlink; and it is written whole (temp file in the same
directory, then rename) with mode 0600 in a 0700 directory.  Imports only ``os``.
"""

from __future__ import annotations

import os

_S_IFMT, _S_IFREG = 0o170000, 0o100000


def read_private(path: str) -> bytes | None:
    """Contents of ``path`` when it is a regular file owned by us and not writable by
    group or others; None otherwise (missing, foreign, unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_mode & _S_IFMT != _S_IFREG or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def write_private(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, mode 0600, creating its directory 0700.
    Raises OSError; a half-written temp file is removed."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
