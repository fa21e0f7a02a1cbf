"""File tools confined to the workspace by the kernel: read, write, edit, list.

Every path is opened relative to a descriptor of the workspace root with openat2
``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`` (see :mod:`clawshell._openat2`), so a
``..``, an absolute path or a symlink pointing out — even one swapped in while the
tool runs — makes the call fail instead of touching a file outside.  Writes go to a
temporary file created next to the target through the same parent descriptor and
are renamed over it (``renameat`` within one directory descriptor): readers see the
old content or the new one, never half, and a hard link to the target is replaced,
not written through.

This module does the I/O only; the decision (policy, approval, audit, receipt) is
made by :func:`clawshell.pipeline.execute_file`.  The formatting helpers at the
bottom are pure.
"""

from __future__ import annotations

import errno
import os
import posixpath
import secrets
import stat
from dataclasses import dataclass

from ._openat2 import ESCAPE_ERRNOS, explain, open_beneath

ESCAPE_RULE = "files.beneath_workspace"
"""Rule id of the refusal when a path leaves the workspace."""

DEFAULT_READ_LIMIT = 2000
"""Lines a read returns when no limit is given by an agent-facing tool (like Claude's Read)."""

MAX_LINE_CHARS = 2000
"""Numbered output cuts longer lines (bytes) and says so."""

MAX_EDIT_BYTES = 64 * 1024 * 1024
"""Files larger than this are not edited in memory."""

MAX_LIST_ENTRIES = 10000
"""A listing stops after this many entries and says so."""

_CHUNK = 1 << 16


class FileToolError(Exception):
    """A file tool failed (exit 1): not found, not a regular file, edit text missing..."""

    def __init__(self, message: str, err: int | None = None):
        super().__init__(message)
        self.errno = err


class EscapeError(FileToolError):
    """The path resolves outside the workspace: a refusal (exit 126), nothing touched."""

    rule = ESCAPE_RULE


# --------------------------------------------------------------------------- paths (pure)


def lexical_target(path: str, workspace: str, cwd: str, home: str) -> tuple[str, str | None]:
    """Return ``(absolute path, workspace-relative path or None)`` for ``path``.

    Relative paths are taken from ``cwd``; ``~`` expands to ``home``; ``..`` is
    collapsed lexically, so what is judged is exactly what is then opened beneath
    the workspace descriptor.  ``None`` means the path is outside the workspace.
    """
    if path == "~" or path.startswith("~/"):
        path = home.rstrip("/") + path[1:]
    full = posixpath.normpath(path if path.startswith("/") else posixpath.join(cwd, path))
    if full.startswith("//"):
        full = "/" + full.lstrip("/")
    root = workspace.rstrip("/") or "/"
    if full == root:
        return full, "."
    prefix = root if root.endswith("/") else root + "/"
    if full.startswith(prefix):
        return full, full[len(prefix):]
    return full, None


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ReadResult:
    """Lines read from a file."""

    data: bytes
    """The selected lines, raw (newlines kept)."""
    first_line: int
    """1-based number of the first selected line."""
    lines: int
    """How many lines were selected."""
    more: bool
    """True when the file goes on after the selection (limit or byte cap reached)."""
    size: int
    """File size in bytes."""


@dataclass(frozen=True)
class WriteResult:
    """What a write did."""

    path: str
    """Workspace-relative path really written (a symlink inside resolved to its target)."""
    bytes: int
    """Bytes written."""
    created: bool
    """True when the file did not exist before."""


@dataclass(frozen=True)
class Entry:
    """One directory entry."""

    name: str
    """File name."""
    kind: str
    """``dir`` | ``file`` | ``symlink`` | ``other``."""
    size: int
    """Size in bytes (0 for directories and others)."""


# --------------------------------------------------------------------------- the workspace


class Workspace:
    """An open descriptor of the workspace root; every operation resolves beneath it.

    Use as a context manager.  ``use_openat2`` forces the syscall (True) or the
    portable walk (False); None picks openat2 when the kernel has it.
    """

    def __init__(self, root: str, *, use_openat2: bool | None = None):
        """Open ``root`` (an absolute, symlink-free directory path)."""
        self.root = root
        """Absolute path of the workspace root."""
        self.use_openat2 = use_openat2
        try:
            self.fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise FileToolError(f"workspace {root}: {exc.strerror}", exc.errno) from None

    def close(self) -> None:
        """Close the root descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "Workspace":
        """Context manager entry."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close on exit."""
        self.close()

    # ------------------------------------------------------------------ opening

    def open(self, rel: str, flags: int, mode: int = 0o666) -> int:
        """Open ``rel`` beneath the root; EscapeError when it would leave it."""
        try:
            return open_beneath(self.fd, rel, flags, mode, use_openat2=self.use_openat2)
        except OSError as exc:
            raise _error(rel, exc) from None

    def check(self, rel: str) -> str:
        """Resolve ``rel`` beneath the root without opening its content.

        Returns ``missing`` (a parent exists, the leaf does not), ``dir``, ``file`` or
        ``other``; raises EscapeError when the path leaves the workspace.
        """
        try:
            fd = self.open(rel, os.O_PATH)
        except FileToolError as exc:
            if exc.errno != errno.ENOENT or isinstance(exc, EscapeError):
                raise
            parent = posixpath.dirname(rel)
            while parent not in ("", "."):
                try:
                    os.close(self.open(parent, os.O_PATH))
                    break
                except FileToolError as inner:
                    if inner.errno != errno.ENOENT or isinstance(inner, EscapeError):
                        raise
                parent = posixpath.dirname(parent)
            return "missing"
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            return "dir"
        return "file" if stat.S_ISREG(st.st_mode) else "other"

    def _open_regular(self, rel: str) -> tuple[int, os.stat_result]:
        # O_NONBLOCK so that a FIFO planted under the name cannot hang the tool.
        fd = self.open(rel, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            what = "is a directory" if stat.S_ISDIR(st.st_mode) else "is not a regular file"
            raise FileToolError(f"{rel}: {what}", errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL)
        os.set_blocking(fd, True)
        return fd, st

    # ------------------------------------------------------------------ read

    def read_lines(self, rel: str, offset: int | None = None, limit: int | None = None,
                   max_bytes: int = 64 * 1024 * 1024) -> ReadResult:
        """Lines ``offset`` (1-based) .. ``offset + limit - 1`` of ``rel``, at most ``max_bytes``."""
        start = max(1, offset or 1)
        fd, st = self._open_regular(rel)
        out: list[bytes] = []
        taken = 0
        line_no = 1
        more = False
        partial = b""
        try:
            while True:
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    if partial:
                        if line_no >= start:
                            out.append(partial)
                            taken += len(partial)
                        line_no += 1
                    break
                buf = partial + chunk
                parts = buf.split(b"\n")
                partial = parts.pop()
                stop = False
                for piece in parts:
                    if line_no >= start:
                        if limit is not None and len(out) >= limit:
                            more = True
                            stop = True
                            break
                        line = piece + b"\n"
                        if taken + len(line) > max_bytes:
                            more = True
                            stop = True
                            break
                        out.append(line)
                        taken += len(line)
                    line_no += 1
                if stop:
                    break
                if limit is not None and len(out) >= limit:
                    # Anything left (a partial line or more data) means the file goes on.
                    more = bool(partial) or bool(os.read(fd, 1))
                    break
                if len(partial) > max_bytes:
                    more = True
                    break
        finally:
            os.close(fd)
        return ReadResult(b"".join(out), start, len(out), more, st.st_size)

    def read_bytes(self, rel: str, max_bytes: int) -> bytes:
        """The whole content of regular file ``rel`` (FileToolError above ``max_bytes``)."""
        fd, st = self._open_regular(rel)
        try:
            if st.st_size > max_bytes:
                raise FileToolError(f"{rel}: file too large ({st.st_size} bytes; limit {max_bytes})", errno.EFBIG)
            chunks = []
            total = 0
            while True:
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > max_bytes:
                    raise FileToolError(f"{rel}: file too large (limit {max_bytes} bytes)", errno.EFBIG)
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ write

    def write_atomic(self, rel: str, data: bytes, *, create_parents: bool = True) -> WriteResult:
        """Replace (or create) ``rel`` with ``data``: temp file + rename in its directory."""
        for _ in range(8):
            parent, name = posixpath.split(rel)
            if name in ("", ".", ".."):
                raise FileToolError(f"{rel or '.'}: not a file path", errno.EISDIR)
            pfd = self._parent(parent or ".", create_parents)
            try:
                try:
                    st: os.stat_result | None = os.stat(name, dir_fd=pfd, follow_symlinks=False)
                except FileNotFoundError:
                    st = None
                if st is not None and stat.S_ISLNK(st.st_mode):
                    # A symlink inside the workspace: write to its target, resolved
                    # beneath the workspace again (a link out is refused).
                    rel = self._resolve_link(rel)
                    continue
                if st is not None and stat.S_ISDIR(st.st_mode):
                    raise FileToolError(f"{rel}: is a directory", errno.EISDIR)
                if st is not None and not stat.S_ISREG(st.st_mode):
                    raise FileToolError(f"{rel}: is not a regular file", errno.EINVAL)
                self._replace(pfd, name, data, None if st is None else stat.S_IMODE(st.st_mode))
                return WriteResult(rel, len(data), st is None)
            finally:
                os.close(pfd)
        raise FileToolError(f"{rel}: too many levels of symbolic links", errno.ELOOP)

    def _parent(self, parent: str, create: bool) -> int:
        try:
            return self.open(parent, os.O_PATH | os.O_DIRECTORY)
        except FileToolError as exc:
            if not create or exc.errno != errno.ENOENT or isinstance(exc, EscapeError):
                raise
        # Create the missing directories one at a time, each through a descriptor of
        # its own parent resolved beneath the workspace.
        done = ""
        for part in [p for p in parent.split("/") if p not in ("", ".")]:
            here = posixpath.join(done, part) if done else part
            try:
                os.close(self.open(here, os.O_PATH | os.O_DIRECTORY))
            except FileToolError as exc:
                if exc.errno != errno.ENOENT or isinstance(exc, EscapeError):
                    raise
                up = self.open(done or ".", os.O_PATH | os.O_DIRECTORY)
                try:
                    os.mkdir(part, 0o777, dir_fd=up)
                except FileExistsError:
                    pass
                except OSError as err:
                    raise _error(here, err) from None
                finally:
                    os.close(up)
            done = here
        return self.open(parent, os.O_PATH | os.O_DIRECTORY)

    def _resolve_link(self, rel: str) -> str:
        fd = self.open(rel, os.O_PATH)
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            raise FileToolError(f"{rel}: is a symbolic link; write to its target instead", errno.ELOOP) from None
        finally:
            os.close(fd)
        _, inside = lexical_target(real, self.root, self.root, "/")
        if inside is None or inside == ".":
            raise EscapeError(f"{rel}: {explain(errno.EXDEV)}", errno.EXDEV)
        return inside

    @staticmethod
    def _replace(pfd: int, name: str, data: bytes, mode: int | None) -> None:
        stem = name[:200]
        tmp = f".{stem}.{secrets.token_hex(4)}.clawshell-tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o666 if mode is None else 0o600, dir_fd=pfd)
        except OSError as exc:
            raise _error(name, exc) from None
        try:
            try:
                if mode is not None:
                    os.fchmod(fd, mode)
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
        except OSError as exc:
            try:
                os.unlink(tmp, dir_fd=pfd)
            except OSError:
                pass
            raise _error(name, exc) from None

    # ------------------------------------------------------------------ edit

    def edit(self, rel: str, old: str, new: str, *, replace_all: bool = False) -> tuple[WriteResult, int]:
        """Replace ``old`` by ``new`` in ``rel`` (exactly once unless ``replace_all``)."""
        data = self.read_bytes(rel, MAX_EDIT_BYTES)
        text = data.decode("utf-8", "surrogateescape")
        updated, count = apply_edit(text, old, new, replace_all=replace_all, path=rel)
        result = self.write_atomic(rel, updated.encode("utf-8", "surrogateescape"), create_parents=False)
        return result, count

    # ------------------------------------------------------------------ list

    def list(self, rel: str, limit: int = MAX_LIST_ENTRIES) -> tuple[list[Entry], bool]:
        """Entries of directory ``rel`` sorted by name, and whether the list was cut."""
        fd = self.open(rel, os.O_RDONLY | os.O_DIRECTORY)
        entries: list[Entry] = []
        cut = False
        try:
            with os.scandir(fd) as it:
                for item in it:
                    if len(entries) >= limit:
                        cut = True
                        break
                    try:
                        st = os.stat(item.name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISLNK(st.st_mode):
                        kind, size = "symlink", 0
                    elif stat.S_ISDIR(st.st_mode):
                        kind, size = "dir", 0
                    elif stat.S_ISREG(st.st_mode):
                        kind, size = "file", st.st_size
                    else:
                        kind, size = "other", 0
                    entries.append(Entry(item.name, kind, size))
        finally:
            os.close(fd)
        entries.sort(key=lambda e: e.name)
        return entries, cut


def _error(rel: str, exc: OSError) -> FileToolError:
    err = exc.errno or 0
    shown = rel or "."
    if err in ESCAPE_ERRNOS:
        return EscapeError(f"{shown}: {explain(err)}", err)
    return FileToolError(f"{shown}: {explain(err)}", err)


# --------------------------------------------------------------------------- pure helpers


def apply_edit(text: str, old: str, new: str, *, replace_all: bool = False, path: str = "file") -> tuple[str, int]:
    """Replace ``old`` by ``new`` in ``text``; FileToolError when absent or ambiguous."""
    if old == "":
        raise FileToolError(f"{path}: the text to replace is empty", errno.EINVAL)
    if old == new:
        raise FileToolError(f"{path}: the old and new text are the same; nothing to change", errno.EINVAL)
    count = text.count(old)
    if count == 0:
        raise FileToolError(f"{path}: the text to replace was not found (it must match exactly, "
                            "whitespace included)", errno.ENOENT)
    if count > 1 and not replace_all:
        raise FileToolError(f"{path}: the text to replace occurs {count} times; add surrounding lines "
                            "to make it unique, or replace every occurrence with --all", errno.EEXIST)
    return text.replace(old, new), count


def number_lines(data: bytes, first_line: int) -> bytes:
    """``cat -n`` style numbering (like Claude's Read): ``{n:>6}\\t{line}``, long lines cut."""
    if not data:
        return b""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for i, line in enumerate(lines):
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + b" [... line cut at %d bytes]" % MAX_LINE_CHARS
        out.append(b"%6d\t%s\n" % (first_line + i, line))
    return b"".join(out)


def format_listing(entries: list[Entry], cut: bool = False) -> bytes:
    """One entry per line, ``ls -p`` style: directories end in ``/``, symlinks in ``@``."""
    suffix = {"dir": "/", "symlink": "@", "file": "", "other": ""}
    lines = [e.name + suffix[e.kind] for e in entries]
    if cut:
        lines.append(f"[... listing cut after {len(entries)} entries]")
    text = "\n".join(lines) + ("\n" if lines else "")
    return text.encode("utf-8", "surrogateescape")
