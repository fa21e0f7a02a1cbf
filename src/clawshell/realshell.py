"""Finding the real shell, and the nested fast path.

Imported before anything heavy: a call from inside a command clawshell already
confined (make, npm scripts, ``bash -c`` in a script) hands over to the real shell
from here without loading the policy, parser or store.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping, NoReturn

from .errors import ClawshellError

INSIDE_ENV = "CLAWSHELL_INSIDE"
"""Set in every command clawshell runs."""


def locate_real_shell(prog: str, environ: Mapping[str, str]) -> str:
    """Find the real shell to run, never this program itself.

    ``CLAWSHELL_REAL_SHELL`` wins; otherwise search PATH for ``bash`` (``sh`` when
    called as ``sh``) skipping any file that is this program (same inode or same
    resolved path), then the usual system locations.
    """
    explicit = environ.get("CLAWSHELL_REAL_SHELL")
    if explicit:
        return explicit
    name = "sh" if prog in ("sh", "dash") else "bash"
    me = _self_identities()
    candidates = [os.path.join(d or ".", name) for d in environ.get("PATH", "").split(os.pathsep)]
    candidates += [f"/usr/bin/{name}", f"/bin/{name}"]
    for cand in candidates:
        try:
            st = os.stat(cand)
        except OSError:
            continue
        if not (st.st_mode & 0o111) or (st.st_dev, st.st_ino) in me:
            continue
        if os.path.realpath(cand) in {p for p in me if isinstance(p, str)}:
            continue
        return cand
    raise ClawshellError(f"no real {name} found on PATH (set CLAWSHELL_REAL_SHELL)")


def _self_identities() -> set[Any]:
    ids: set[Any] = set()
    for p in {sys.argv[0], os.path.realpath(sys.argv[0])}:
        try:
            st = os.stat(p)
        except OSError:
            continue
        ids.add((st.st_dev, st.st_ino))
        ids.add(os.path.realpath(p))
    return ids


def inside_sandbox(environ: Mapping[str, str]) -> bool:
    """True when this process runs inside a command clawshell already confined.

    The env marker alone could be forged by whoever starts us, so it only counts when
    the kernel confirms a confinement is in force (no_new_privs and a seccomp filter).
    """
    if environ.get(INSIDE_ENV) != "1":
        return False
    try:
        with open("/proc/self/status", "rb") as fh:
            status = fh.read()
    except OSError:
        return False
    return b"\nNoNewPrivs:\t1" in status and b"\nSeccomp:\t2" in status


def exec_real_shell(real_shell: str, inv: Any, argv0: str) -> NoReturn:
    """Replace this process with the real shell running ``inv`` unchanged.

    Used for nested calls: the kernel sandbox of the outer command already bounds
    everything this can do, and the state home is out of its reach.
    """
    args = [argv0, *inv.passthrough]
    if inv.command is not None:
        args += ["-c", inv.command, *inv.positional]
    elif inv.script_file is not None:
        args += [inv.script_file, *inv.positional]
    elif inv.stdin_script:
        args += ["-s", *inv.positional]
    os.execv(real_shell, args)
