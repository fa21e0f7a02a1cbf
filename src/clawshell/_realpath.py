"""``os.path.realpath`` in three system calls when the path exists.

``posixpath.realpath`` walks the path in Python, one ``lstat`` (and ``readlink``) per
component; the planners call it a few hundred times per command.  For a path that
exists, the kernel resolves it in one ``open(O_PATH)`` and ``/proc/self/fd/N`` names
the result.  Anything else (a missing component, a dangling or looping symlink, no
``/proc``, a name the kernel marks ``(deleted)``) falls back to ``os.path.realpath``,
so the result is always what ``os.path.realpath`` returns.
"""

from __future__ import annotations

import os

_FLAGS = getattr(os, "O_PATH", 0) | os.O_CLOEXEC
_SUFFIX = " (deleted)"


def realpath(path: str) -> str:
    """Same result as ``os.path.realpath(path)`` (non-strict), faster for existing paths."""
    if not _FLAGS & getattr(os, "O_PATH", 0) or not path or "\0" in path:
        return os.path.realpath(path)
    try:
        fd = os.open(path, _FLAGS)
    except (OSError, ValueError):
        return os.path.realpath(path)
    try:
        resolved = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)
    finally:
        os.close(fd)
    if not resolved.startswith("/") or resolved.endswith(_SUFFIX):
        return os.path.realpath(path)
    return resolved
