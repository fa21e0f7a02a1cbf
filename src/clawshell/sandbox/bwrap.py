"""Pure bubblewrap argv builder: a ``BwrapLayout`` in, the whole argv out.

The view the command gets, built in this order (bwrap applies its options in order,
and a mount must come after the mount of its parent directory):

1. ``--ro-bind / /``: everything read-only, then ``--dev /dev`` (fresh minimal /dev)
   and ``--proc /proc`` (a fresh procfs showing only the sandbox's PID namespace);
2. masks: an empty tmpfs over ``/tmp`` (the private temp dir), ``/run``,
   ``/var/tmp``, over ``/etc`` and ``/sys`` (re-exposed entry by entry), and over each
   forbidden directory; ``/dev/null`` over each forbidden file;
3. read-only re-exposures under a mask (the ``/etc`` allow-list, HOME when it lives
   under ``/tmp``...), symlinks recreated as symlinks;
4. read-write binds: the workspace, writable caches, the agent's bookkeeping file;
5. protected paths inside those: ``--ro-bind P P`` when P exists, an empty read-only
   tmpfs when it does not (the runner creates that mount point for the duration);
6. ``--remount-ro`` of the masks that must stay read-only;
7. namespaces (pid, ipc, uts, cgroup, net when the network is off), ``--new-session``
   (no controlling terminal: no TIOCSTI), ``--die-with-parent``, ``--cap-drop ALL``.

Ops are sorted by path depth so a parent is always mounted before its children;
within one path the mask comes before a bind and a hiding op comes last (the most
specific, most restrictive entry wins).  Nothing here touches the filesystem.
"""

from __future__ import annotations

from dataclasses import dataclass



SECCOMP_DEST = "/run/.clawshell-seccomp.bpf"
"""Where the cached seccomp program is bound inside the sandbox for the helper."""

_PRIORITY = {"tmpfs": 0, "ro": 1, "rw": 1, "symlink": 1, "protect": 2, "placeholder": 2, "hide_dir": 3,
             "hide_file": 3}


@dataclass(frozen=True)
class BwrapLayout:
    """Everything the argv depends on, with path kinds already resolved by the caller."""

    bwrap: str
    """Path of the bwrap binary."""
    masks: tuple[str, ...] = ("/tmp", "/run", "/var/tmp", "/etc", "/sys")
    """Directories replaced by an empty tmpfs."""
    writable_masks: tuple[str, ...] = ("/tmp", "/var/tmp")
    """Masks left writable (the private temp dirs); the others are remounted read-only."""
    ro: tuple[str, ...] = ()
    """Paths re-exposed read-only (only emitted when they sit under a mask)."""
    symlinks: tuple[tuple[str, str], ...] = ()
    """``(target, path)`` symlinks recreated under a mask."""
    rw: tuple[str, ...] = ()
    """Read-write roots bound at their own path."""
    protected: tuple[str, ...] = ()
    """Existing protected paths inside rw roots, bound read-only over themselves."""
    placeholders: tuple[str, ...] = ()
    """Missing protected paths: an empty read-only tmpfs is mounted there."""
    hidden_dirs: tuple[str, ...] = ()
    """Forbidden directories (covered by an empty read-only tmpfs where visible)."""
    hidden_files: tuple[str, ...] = ()
    """Forbidden files (``/dev/null`` bound over them where visible)."""
    seccomp_bpf: str | None = None
    """Host path of the cached seccomp program, bound at ``SECCOMP_DEST``."""
    network: bool = False
    """Keep the host network namespace."""
    cwd: str = "/"
    """Directory the command starts in."""


def _ops(layout: BwrapLayout) -> list[tuple[str, str, str]]:
    """Every mount op as ``(kind, source, dest)`` before ordering and pruning."""
    ops: list[tuple[str, str, str]] = [("tmpfs", "", m) for m in layout.masks]
    ops += [("ro", p, p) for p in layout.ro]
    ops += [("symlink", t, p) for t, p in layout.symlinks]
    ops += [("rw", p, p) for p in layout.rw]
    ops += [("protect", p, p) for p in layout.protected]
    ops += [("placeholder", "", p) for p in layout.placeholders]
    ops += [("hide_dir", "", p) for p in layout.hidden_dirs]
    ops += [("hide_file", "/dev/null", p) for p in layout.hidden_files]
    return ops


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


_MASKING = ("tmpfs", "hide_dir", "placeholder")


def _covering_above(by_dest: dict[str, tuple[str, str, str]], path: str) -> str | None:
    """Kind of the nearest op strictly above ``path`` (None: only the root ro-bind)."""
    cur = path
    while cur != "/":
        cur = cur.rsplit("/", 1)[0] or "/"
        op = by_dest.get(cur)
        if op is not None:
            return op[0]
    return None


def ordered_ops(layout: BwrapLayout) -> list[tuple[str, str, str]]:
    """The ops that change the view, parents first; redundant ones dropped.

    A read-only re-exposure is only needed where a mask hides the path; hiding is only
    needed where the path is still visible.  When two ops name the same path, the most
    restrictive one wins.
    """
    best: dict[str, tuple[str, str, str]] = {}
    for op in _ops(layout):
        cur = best.get(op[2])
        if cur is None or _PRIORITY[op[0]] > _PRIORITY[cur[0]]:
            best[op[2]] = op
    ops = list(best.values())
    kept = []
    for op in ops:
        kind, _, dest = op
        above = _covering_above(best, dest)
        if kind in ("ro", "symlink") and above not in _MASKING:
            continue
        if kind in ("hide_dir", "hide_file") and above in _MASKING:
            continue
        kept.append(op)
    return sorted(kept, key=lambda o: (_depth(o[2]), _PRIORITY[o[0]], o[2]))


def build_argv(layout: BwrapLayout, helper: list[str], command: list[str]) -> list[str]:
    """The whole bwrap argv: options, ``--``, the helper command, ``--``, the command.

    ``helper`` is the in-sandbox restriction step (``helper.script_command``);
    it execs ``command`` once Landlock and seccomp are in force.
    """
    argv = [layout.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    remount: list[str] = []
    for kind, src, dest in ordered_ops(layout):
        if kind == "tmpfs":
            argv += ["--tmpfs", dest]
            if dest not in layout.writable_masks:
                remount.append(dest)
        elif kind in ("ro", "protect"):
            argv += ["--ro-bind", src, dest]
        elif kind == "rw":
            argv += ["--bind", src, dest]
        elif kind == "symlink":
            argv += ["--symlink", src, dest]
        elif kind in ("placeholder", "hide_dir"):
            argv += ["--tmpfs", dest]
            remount.append(dest)
        elif kind == "hide_file":
            argv += ["--ro-bind", src, dest]
    if layout.seccomp_bpf:
        argv += ["--ro-bind", layout.seccomp_bpf, SECCOMP_DEST]
    # Remount deepest first is not needed (each is its own mount); keep source order.
    for dest in remount:
        argv += ["--remount-ro", dest]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not layout.network:
        argv.append("--unshare-net")
    argv += ["--new-session", "--die-with-parent", "--cap-drop", "ALL", "--chdir", layout.cwd, "--"]
    return argv + list(helper) + ["--"] + list(command)
