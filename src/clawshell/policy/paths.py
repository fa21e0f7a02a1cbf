"""Path rules (pure): expansion, lexical normalisation and most-specific-entry matching.

A path word from a command goes through three steps:

1. :func:`expand` replaces ``~``, ``~user``, ``$HOME``/``${HOME}``, ``$PWD`` and any
   ``$NAME`` known in the context; what stays unknown (another ``$NAME``, a command
   substitution) cuts the word at that point: the static prefix is what is checked.
2. :func:`normalize` joins it to the working directory and resolves ``.``/``..``
   lexically.  The engine also checks the *physical* path (``ctx.realpath``) of the
   un-normalised absolute path, so ``ws/link/../x`` is judged where it really lands.
3. A :class:`PathTable` finds the most specific entry containing the path, comparing
   whole components (``/etcetera`` is not inside ``/etc``).  Entries may hold shell
   globs per component (``/home/*``).  Specificity is (depth, literal components);
   on a full tie a forbidden entry wins.

Nothing here touches the file system.
"""

from __future__ import annotations

import enum
import posixpath
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Iterable, Mapping, Sequence

class LazyPattern:
    """A regex compiled on first use (keeps ``re`` compilation off module import, which
    is on clawshell's hot path); after that, its methods are the compiled pattern's."""

    def __init__(self, pattern: str, flags: int = 0):
        self._pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        rx = re.compile(self._pattern, self._flags)
        for m in ("match", "search", "fullmatch", "sub", "finditer", "findall", "split"):
            setattr(self, m, getattr(rx, m))
        return getattr(rx, name)


GLOB_CHARS = frozenset("*?[")
"""Characters that make a word a glob pattern."""

DEFAULT_FORBIDDEN_PATHS: tuple[str, ...] = (
    "/etc", "/sys", "/boot", "/proc",
    "/var/run/docker.sock", "/run/docker.sock", "/dev/mem", "/dev/kmem", "/dev/port",
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.kube", "~/.docker", "~/.netrc",
    "~/.git-credentials", "~/.config", "~/.npmrc", "~/.pypirc", "~/.pgpass", "~/.vault-token",
    "~/.password-store", "~/.local/share/keyrings", "~/.mozilla",
    "~/.bash_history", "~/.zsh_history", "~/.python_history",
    "~/.cargo/credentials", "~/.cargo/credentials.toml", "~/.gem/credentials",
    "~/.terraform.d/credentials.tfrc.json",
)
"""Default ``forbidden_paths``: the secret parts of HOME, not HOME itself (toolchains
live there), and the system trees DESIGN.md names.  Other users' homes are forbidden
by the engine on top of any list (:data:`OTHER_HOMES`)."""

OTHER_HOMES: tuple[str, ...] = ("/root", "/home/*")
"""Other users' homes, always forbidden by the engine (like ``CLAWSHELL_HOME``) and not
part of ``forbidden_paths``: the kernel relies on their 0700 modes, and a sandbox that hid
``/root`` would hide the interpreter of a root-installed toolchain.  An entry equal to
HOME is dropped, and HOME (a literal entry) is more specific than ``/home/*``, so the
user's own HOME stays readable; ``allowed_paths`` can carve out a shared directory."""

DEFAULTS_MARKER = "@defaults"
"""A ``forbidden_paths`` entry that stands for :data:`DEFAULT_FORBIDDEN_PATHS`."""

STDIO_PATHS = frozenset({
    "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero",
    "/dev/random", "/dev/urandom", "/dev/full", "/dev/ptmx",
    "/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2",
})
"""Paths that are stream plumbing, not files: never forbidden, never "outside"."""

_STDIO_PREFIXES = ("/dev/fd/", "/dev/pts/")

_RAW_DEVICE = LazyPattern(
    r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|loop|dm-|md|sr|nbd|disk|mapper/|mem$|kmem$|port$)")

_VAR = LazyPattern(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class Kind(enum.IntEnum):
    """What an entry of a :class:`PathTable` says about the paths under it.

    The value is the priority on a full specificity tie (higher wins)."""

    READ_OK = 1
    """Readable; writes count as outside the workspace (HOME)."""
    WRITE_OK = 2
    """Readable and writable (workspace, allowed_paths, writable caches)."""
    PROTECTED = 3
    """Inside a writable root but needs approval to write (``.git/hooks`` ...)."""
    FORBIDDEN = 4
    """Never read or written."""


@dataclass(frozen=True)
class Entry:
    """One compiled path entry."""

    parts: tuple[str, ...]
    """Components of the absolute path (``("home", "*")`` for ``/home/*``)."""
    kind: Kind
    """What the entry says."""
    source: str
    """The entry as configured (for evidence), e.g. ``~/.ssh``."""
    literal: int
    """Number of components without glob characters."""

    @property
    def path(self) -> str:
        """The absolute path (or glob) of the entry."""
        return "/" + "/".join(self.parts)


_GLOB_RE = LazyPattern(r"[*?\[]")


def is_glob(text: str) -> bool:
    """True when ``text`` contains a shell glob character."""
    return _GLOB_RE.search(text) is not None


def split(path: str) -> tuple[str, ...]:
    """Components of a normalised absolute path (``/`` -> ``()``)."""
    return tuple(p for p in path.split("/") if p)


def expand(word: str, home: str, env: Mapping[str, str] | None = None, cwd: str | None = None) -> tuple[str, bool]:
    """Expand ``~``, ``~user`` and ``$NAME``; return ``(text, exact)``.

    ``exact`` is False when something could not be expanded statically; ``text`` is
    then cut just before it (``$HOME/.ssh/$KEY`` -> ``/home/u/.ssh/``), so checking
    ``text`` checks every path the word could become."""
    env = env or {}
    exact = True
    if word.startswith("~"):
        head, sep, rest = word.partition("/")
        user = head[1:]
        if user == "":
            base = home
        elif user == "+" and cwd:
            base = cwd
        elif re.fullmatch(r"[A-Za-z0-9._-]+", user):
            base = "/root" if user == "root" else "/home/" + user
        else:
            base = None
        if base is not None:
            word = base + (sep + rest if sep else "")
    if "$" in word or "`" in word:
        def sub(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(2)
            if name == "HOME":
                return home
            if name == "PWD" and cwd:
                return cwd
            value = env.get(name)
            return value if value is not None else m.group(0)
        word = _VAR.sub(sub, word)
        cut = [i for i in (word.find("$"), word.find("`")) if i >= 0]
        if cut:
            exact = False
            word = word[: min(cut)]
    return word, exact


def normalize(path: str, cwd: str) -> str:
    """Absolute, lexically normalised path: joined to ``cwd``, ``.``/``..`` resolved."""
    if not path.startswith("/"):
        path = cwd.rstrip("/") + "/" + path
    out = posixpath.normpath(path)
    if out.startswith("//"):
        out = "/" + out.lstrip("/")
    return out


def glob_prefix(path: str) -> str:
    """The directory part of ``path`` before its first globbed component."""
    parts = path.split("/")
    keep: list[str] = []
    for p in parts:
        if is_glob(p):
            break
        keep.append(p)
    out = "/".join(keep)
    return out or "/"


def is_stdio(path: str) -> bool:
    """True for stream plumbing such as ``/dev/null`` or ``/dev/fd/3``."""
    return path in STDIO_PATHS or path.startswith(_STDIO_PREFIXES)


def is_raw_device(path: str) -> bool:
    """True for block devices and memory devices under ``/dev``."""
    return bool(_RAW_DEVICE.match(path))


def looks_like_path(word: str) -> bool:
    """A word an unknown command probably uses as a path: absolute, ``~``, ``$HOME``,
    containing ``/`` or being ``..``."""
    if not word or word.startswith("-") or "://" in word:
        return False
    return (word[0] in "/~" or word.startswith(("$HOME", "${HOME}")) or "/" in word
            or word in ("..", "."))


def _comp_match(pattern: str, name: str) -> bool:
    """Shell-like match of one component: globs do not match a leading dot."""
    if not is_glob(pattern):
        return pattern == name
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatchcase(name, pattern)


def _comp_overlap(a: str, b: str) -> bool:
    """True when component patterns ``a`` and ``b`` may name the same component."""
    ga, gb = is_glob(a), is_glob(b)
    if ga and gb:
        return True
    if ga:
        return _comp_match(a, b)
    if gb:
        return _comp_match(b, a)
    return a == b


class PathTable:
    """Compiled path entries; :meth:`lookup` returns the most specific entry for a path."""

    def __init__(self, entries: Iterable[Entry]):
        self.entries: tuple[Entry, ...] = tuple(entries)
        # literal entries by their whole component tuple: a lookup probes each prefix
        self._literal: dict[tuple[str, ...], list[Entry]] = {}
        self._globs: list[Entry] = []
        for e in self.entries:
            if e.literal == len(e.parts):
                self._literal.setdefault(e.parts, []).append(e)
            else:
                self._globs.append(e)

    def lookup(self, parts: Sequence[str]) -> Entry | None:
        """Most specific entry containing the path ``parts`` (deny wins a full tie)."""
        best: Entry | None = None
        best_key: tuple[int, int, int] = (-1, -1, -1)
        parts = tuple(parts)
        lit = self._literal
        for n in range(len(parts) + 1):
            for e in lit.get(parts[:n], ()):
                key = (n, n, int(e.kind))
                if key > best_key:
                    best, best_key = e, key
        for e in self._globs:
            n = len(e.parts)
            if n > len(parts):
                continue
            if all(_comp_match(e.parts[i], parts[i]) for i in range(n)):
                key = (n, e.literal, int(e.kind))
                if key > best_key:
                    best, best_key = e, key
        return best

    def reach(self, parts: Sequence[str], literal_depth: int, recursive: bool,
              kinds: frozenset[Kind]) -> list[Entry]:
        """Entries of ``kinds`` deeper than ``literal_depth`` that ``parts`` may reach.

        ``parts`` may hold glob components after its first ``literal_depth`` ones; an
        entry is reached when every shared component may match and either the pattern
        is at least as deep as the entry (an expansion lands inside it) or the access
        is ``recursive`` (a tree operation on an ancestor of the entry)."""
        out = []
        for e in self.entries:
            if e.kind not in kinds or len(e.parts) <= literal_depth:
                continue
            if len(e.parts) > len(parts) and not recursive:
                continue
            n = min(len(e.parts), len(parts))
            if all(_comp_overlap(parts[i], e.parts[i]) for i in range(n)):
                out.append(e)
        return out


def make_entry(text: str, kind: Kind, home: str, base: str, source: str | None = None) -> Entry | None:
    """Compile one configured path (``~`` and ``$HOME`` allowed; relative to ``base``)."""
    expanded, exact = expand(text, home)
    if not expanded or not exact:
        return None
    path = normalize(expanded, base)
    parts = split(path)
    literal = sum(1 for p in parts if not is_glob(p))
    return Entry(parts, kind, source if source is not None else text, literal)


def resolve_forbidden(entries: Sequence[str]) -> tuple[str, ...]:
    """Replace :data:`DEFAULTS_MARKER` in a configured list by the defaults."""
    out: list[str] = []
    for e in entries:
        if e == DEFAULTS_MARKER:
            out.extend(DEFAULT_FORBIDDEN_PATHS)
        else:
            out.append(e)
    return tuple(dict.fromkeys(out))


def within(path: str, root: str) -> bool:
    """Component-wise ``path`` is ``root`` or below it (both normalised absolute)."""
    if root == "/":
        return True
    return path == root or path.startswith(root.rstrip("/") + "/")


def concrete_entries(entries: Sequence[str], home: str, base: str) -> tuple[str, ...]:
    """Absolute forms of configured path entries (``~``/``$HOME`` expanded, relative ones
    joined to ``base``), without an entry equal to HOME: the engine never forbids HOME as
    a whole (``/root`` in the defaults stands for another user's home).  Per-component
    globs such as ``/home/*`` are kept for the caller to expand.  For the sandbox planner,
    so that it hides exactly what the engine forbids."""
    out: list[str] = []
    home_n = normalize(home or "/", "/")
    for text in entries:
        e = make_entry(text, Kind.FORBIDDEN, home_n, base)
        if e is None or e.path == home_n:
            continue
        out.append(e.path)
    return tuple(dict.fromkeys(out))
