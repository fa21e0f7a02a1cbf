"""Pure Landlock ruleset planner: which rights on which paths, by ABI version.

Landlock can only *grant*: a right given on a directory holds for everything beneath
it.  To keep a forbidden subtree (``~/.ssh`` inside a readable HOME) or a protected
path (``.git/hooks`` inside a writable workspace) out of a grant, the grant is split:
the directory is not granted itself, its children are granted one by one, and the
split recurses only along the way to the hole (``cover``).  The directory listing and
symlink resolution this needs come in through an ``FsView`` (injected I/O), so the
planner is tested without the kernel.

Rights by ABI: 1 the base set, 2 ``REFER``, 3 ``TRUNCATE``, 5 ``IOCTL_DEV``; ABI 4 adds
TCP bind/connect (handled, with no port granted, when the network is off); ABI 6 adds
scoping of signals and abstract unix sockets to the sandbox.  ``MAKE_CHAR`` and
``MAKE_BLOCK`` are never granted anywhere.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15

NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""Rights that mean something on a non-directory (the kernel rejects the others there)."""

READ = EXECUTE | READ_FILE | READ_DIR
"""Read and execute."""
READ_NOEXEC = READ_FILE | READ_DIR
"""Read without execute (``/proc``, ``/etc`` files)."""
WRITE = (READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO
         | MAKE_SYM | REFER | TRUNCATE)
"""Everything a workspace needs; never device nodes."""
DEVICE_RW = READ_FILE | WRITE_FILE | IOCTL_DEV
"""Terminals and the harmless character devices."""


def handled_fs(abi: int) -> int:
    """Every filesystem right ABI ``abi`` knows (all of them are handled: deny by default)."""
    if abi <= 0:
        return 0
    if abi == 1:
        return (1 << 13) - 1
    if abi == 2:
        return (1 << 14) - 1
    if abi <= 4:
        return (1 << 15) - 1
    return (1 << 16) - 1


@dataclass(frozen=True)
class FsView:
    """The I/O the planner needs, injected (real functions in production, fakes in tests)."""

    listdir: Callable[[str], Sequence[str] | None]
    """Names in a directory; None when it is not a readable directory."""
    realpath: Callable[[str], str]
    """Resolve symlinks of an absolute path."""
    kind: Callable[[str], str]
    """``dir`` | ``file`` | ``missing`` (symlinks followed)."""


@dataclass(frozen=True)
class LandlockPlan:
    """A ruleset ready for ``helper``: what is handled and what is granted where."""

    abi: int
    """ABI the plan was made for."""
    handled_fs: int
    """Filesystem rights the ruleset handles (denied unless granted)."""
    handled_net: int
    """TCP rights handled (0: network not restricted by Landlock)."""
    scoped: int
    """IPC scopes (ABI 6+)."""
    rules: tuple[tuple[int, str], ...]
    """``(access, path)`` grants; the helper masks directory-only rights on files."""
    ports: tuple[tuple[int, int], ...] = ()
    """``(access, port)`` TCP grants."""
    restrict_flags: int = 0
    """Flags for landlock_restrict_self."""


@dataclass(frozen=True)
class Grants:
    """What the sandbox spec asks of the filesystem, as absolute resolved paths."""

    read: tuple[str, ...] = ()
    """Read + execute roots (system dirs, toolchains, HOME...)."""
    read_noexec: tuple[str, ...] = ()
    """Read-only without execute (``/proc``, ``/etc`` allow-list, ``/sys`` bits)."""
    write: tuple[str, ...] = ()
    """Full read-write roots (workspace, private temp dir, caches, bookkeeping files)."""
    devices: tuple[str, ...] = ()
    """Device nodes and ``/dev/pts``-like dirs given DEVICE_RW."""
    hidden: tuple[str, ...] = ()
    """Never covered by any grant."""
    protected: tuple[str, ...] = ()
    """Never covered by a *write* grant (still readable through a read grant)."""
    network: bool = False
    """TCP bind/connect allowed."""
    ports: tuple[int, ...] = field(default_factory=tuple)
    """TCP ports allowed for connect even with the network off (none by default)."""


def is_within(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or lies beneath it (component-wise)."""
    if root == "/":
        return path.startswith("/")
    return path == root or path.startswith(root + "/")


class HoleSet:
    """Holes sorted for range queries: the ones strictly inside a path in O(log n)."""

    def __init__(self, holes: Iterable[str]):
        self.members = frozenset(holes)
        self.sorted = sorted(self.members)

    def inside(self, root: str) -> list[str]:
        """Holes strictly beneath ``root`` ('/' sorts right before '0')."""
        import bisect

        prefix = root.rstrip("/") + "/"
        lo = bisect.bisect_left(self.sorted, prefix)
        hi = bisect.bisect_left(self.sorted, prefix[:-1] + "0")
        return self.sorted[lo:hi]


def ancestors(path: str) -> list[str]:
    """``path`` and every directory above it, up to ``/``."""
    out = [path]
    while path not in ("/", ""):
        path = path.rsplit("/", 1)[0] or "/"
        out.append(path)
    return out


def under_any(path: str, roots: frozenset[str] | set[str]) -> bool:
    """``is_within(path, r)`` for some ``r`` in ``roots`` (by walking up: O(depth))."""
    return any(a in roots for a in ancestors(path))


def cover(root: str, access: int, holes: "Iterable[str] | frozenset[str] | HoleSet", fs: FsView,
          _seen: frozenset[str] | None = None) -> list[tuple[int, str]]:
    """Grants giving ``access`` on everything under ``root`` except the ``holes``.

    ``root`` is an explicit grant: a hole *above* it does not remove it (the most
    specific entry wins: ``/etc/passwd`` is readable although ``/etc`` is forbidden),
    a hole equal to it does.  Holes beneath it split it into its children
    (recursively, only along the way to a hole).  A child that is a symlink is
    dropped: its target is either outside this grant or covered at its own place.
    Missing holes still split: a protected path that does not exist yet stays
    impossible to create.
    """
    top = _seen is None
    seen = _seen or frozenset()
    lexical = root
    root = fs.realpath(root)
    if root in seen:
        return []
    if top:
        ordered = holes if isinstance(holes, HoleSet) else HoleSet(holes)
        if lexical in ordered.members or root in ordered.members:
            return []
        # Holes above an explicit grant are overridden by it; only the ones inside count.
        holes = frozenset(ordered.inside(root))
    else:
        holes = holes if isinstance(holes, frozenset) else frozenset(holes)
        if under_any(root, holes):
            return []
    prefix = root.rstrip("/") + "/"
    inner = [h for h in holes if h.startswith(prefix)]
    kind = fs.kind(root)
    if kind == "missing":
        return []
    if not inner or kind != "dir":
        return [(access if kind == "dir" else access & FILE_RIGHTS, root)]
    names = fs.listdir(root)
    if names is None:
        return []
    out: list[tuple[int, str]] = []
    seen = seen | {root}
    for name in sorted(names):
        child = posixpath.join(root, name)
        if fs.realpath(child) != child:
            # A symlink: granting it would grant wherever it points (out of the root or
            # into a hole).  A target inside the root is covered at its own place.
            continue
        out.extend(cover(child, access, holes, fs, seen))
    return out


def plan_ruleset(abi: int, grants: Grants, fs: FsView) -> LandlockPlan:
    """Build the ruleset for ``abi`` from ``grants``.

    Each grant is covered minus the hidden paths (and, for write grants, minus the
    protected ones too).  Rules on the same path are merged.
    """
    if abi <= 0:
        raise ValueError("Landlock is not available (ABI 0)")
    mask = handled_fs(abi)
    merged: dict[str, int] = {}

    def add(pairs: list[tuple[int, str]]) -> None:
        for acc, path in pairs:
            merged[path] = merged.get(path, 0) | acc

    hidden = HoleSet(grants.hidden)
    closed = HoleSet((*grants.hidden, *grants.protected))
    for root in grants.read:
        add(cover(root, READ, hidden, fs))
    for root in grants.read_noexec:
        add(cover(root, READ_NOEXEC, hidden, fs))
    for root in grants.devices:
        add(cover(root, DEVICE_RW, hidden, fs))
    for root in grants.write:
        add(cover(root, READ, hidden, fs))
        add(cover(root, WRITE, closed, fs))
    rules = drop_covered([(acc & mask, path) for path, acc in sorted(merged.items()) if acc & mask])
    handled_net = 0
    ports: tuple[tuple[int, int], ...] = ()
    if abi >= 4 and not grants.network:
        handled_net = NET_BIND_TCP | NET_CONNECT_TCP
        ports = tuple((NET_CONNECT_TCP, p) for p in sorted(set(grants.ports)))
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    return LandlockPlan(abi=abi, handled_fs=mask, handled_net=handled_net, scoped=scoped, rules=rules,
                        ports=ports)


def drop_covered(rules: Iterable[tuple[int, str]]) -> tuple[tuple[int, str], ...]:
    """``rules`` without those an ancestor's rules already grant (order kept).

    Within one ruleset Landlock grants a path the union of the rules on it and on every
    directory above it, so a rule whose rights are all granted above it changes
    nothing (``/usr/bin`` under ``/usr``); dropping it only saves the helper an open
    and a system call per rule.  Never grants more: at worst, when an ancestor's path
    cannot be opened at run time, the path below is not granted either.
    """
    rules = list(rules)
    by_path: dict[str, int] = {}
    for acc, path in rules:
        by_path[path] = by_path.get(path, 0) | acc
    out: list[tuple[int, str]] = []
    for acc, path in rules:
        above = 0
        for a in ancestors(path)[1:]:
            above |= by_path.get(a, 0)
        if acc & ~above:
            out.append((acc, path))
    return tuple(out)


def describe(access: int) -> str:
    """Short human text for an access mask (for doctor and messages)."""
    names = [("x", EXECUTE), ("r", READ_FILE), ("ls", READ_DIR), ("w", WRITE_FILE), ("rm", REMOVE_FILE),
             ("rmdir", REMOVE_DIR), ("mkdir", MAKE_DIR), ("mk", MAKE_REG), ("sym", MAKE_SYM),
             ("sock", MAKE_SOCK), ("fifo", MAKE_FIFO), ("refer", REFER), ("trunc", TRUNCATE),
             ("ioctl", IOCTL_DEV)]
    return ",".join(n for n, bit in names if access & bit)
