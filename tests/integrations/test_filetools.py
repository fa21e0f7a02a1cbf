"""File tools: openat2 confinement (and its portable fallback), atomic writes, edits,
listings, and the `clawshell file` commands with policy, audit and receipts."""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from clawshell import _openat2
from clawshell import filetools as ft
from tests.conftest import CLAWSHELL

MODES = [pytest.param(True, id="openat2"), pytest.param(False, id="walk")]


@pytest.fixture(autouse=True)
def _openat2_probe() -> None:
    if not _openat2.openat2_available():
        pytest.skip("openat2 is not available on this kernel (probe answered ENOSYS/EPERM)")


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with a dir, a file, symlinks in and out; and an outside dir."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    (ws / "sub" / "f.txt").write_text("inside\n")
    (outside / "secret.txt").write_text("outside\n")
    (ws / "in").symlink_to("sub")
    (ws / "abs_in").symlink_to(ws / "sub")
    (ws / "out").symlink_to(outside)
    (ws / "rel_out").symlink_to("../outside")
    (ws / "loop").symlink_to("loop")
    return ws, outside


# --------------------------------------------------------------------------- openat2 plumbing

RESOLUTION = [
    ("sub/f.txt", None),
    ("in/f.txt", None),
    ("./sub/../sub/f.txt", None),
    ("in/../sub/f.txt", None),
    ("", None),
    ("out/secret.txt", errno.EXDEV),
    ("rel_out/secret.txt", errno.EXDEV),
    ("abs_in/f.txt", errno.EXDEV),          # absolute symlinks are refused even when they point inside
    ("../outside/secret.txt", errno.EXDEV),
    ("sub/../../outside/secret.txt", errno.EXDEV),
    ("/etc/hostname", errno.EXDEV),
    ("loop", errno.ELOOP),
    ("missing/x", errno.ENOENT),
]


@pytest.mark.parametrize("use", MODES)
@pytest.mark.parametrize("path,err", RESOLUTION, ids=[p or "<empty>" for p, _ in RESOLUTION])
def test_resolution_beneath_the_workspace(tree: tuple[Path, Path], use: bool, path: str, err: int | None) -> None:
    ws, _ = tree
    root = os.open(ws, os.O_PATH | os.O_DIRECTORY)
    try:
        if err is None:
            fd = _openat2.open_beneath(root, path, os.O_RDONLY, use_openat2=use)
            os.close(fd)
        else:
            with pytest.raises(OSError) as info:
                _openat2.open_beneath(root, path, os.O_RDONLY, use_openat2=use)
            assert info.value.errno == err
    finally:
        os.close(root)


@pytest.mark.parametrize("use", MODES)
def test_magic_links_are_refused(use: bool) -> None:
    proc = os.open("/proc/self", os.O_PATH | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as info:
            _openat2.open_beneath(proc, "root/etc/hostname", os.O_RDONLY, use_openat2=use)
        assert info.value.errno in _openat2.ESCAPE_ERRNOS
    finally:
        os.close(proc)


def test_no_symlinks_flag_refuses_even_inner_links(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    root = os.open(ws, os.O_PATH | os.O_DIRECTORY)
    try:
        for use in (True, False):
            with pytest.raises(OSError) as info:
                _openat2.open_beneath(root, "in/f.txt", os.O_RDONLY, use_openat2=use,
                                      resolve=_openat2.RESOLVE_BENEATH | _openat2.RESOLVE_NO_SYMLINKS)
            assert info.value.errno == errno.ELOOP
    finally:
        os.close(root)


def test_errno_table_explains_escapes() -> None:
    assert "outside the workspace" in _openat2.explain(errno.EXDEV)
    assert _openat2.explain(errno.EIO) == os.strerror(errno.EIO)


# --------------------------------------------------------------------------- pure helpers

LEXICAL = [
    ("a.txt", "/w", "/w", ("/w/a.txt", "a.txt")),
    ("sub/../a.txt", "/w", "/w", ("/w/a.txt", "a.txt")),
    ("../a.txt", "/w", "/w/sub", ("/w/a.txt", "a.txt")),
    ("../x", "/w", "/w", ("/x", None)),
    ("/w", "/w", "/w/sub", ("/w", ".")),
    (".", "/w", "/w/sub", ("/w/sub", "sub")),
    ("/etc/hosts", "/w", "/w", ("/etc/hosts", None)),
    ("/wx/y", "/w", "/w", ("/wx/y", None)),
    ("~/notes", "/home/u/w", "/home/u/w", ("/home/u/notes", None)),
    ("~/w/notes", "/home/u/w", "/home/u/w", ("/home/u/w/notes", "notes")),
]


@pytest.mark.parametrize("path,ws,cwd,expected", LEXICAL)
def test_lexical_target(path: str, ws: str, cwd: str, expected: tuple[str, str | None]) -> None:
    assert ft.lexical_target(path, ws, cwd, "/home/u") == expected


EDITS = [
    ("a b a", "a", "c", True, ("c b c", 2)),
    ("a b", "b", "c", False, ("a c", 1)),
    ("line1\nline2\n", "line2\n", "", False, ("line1\n", 1)),
]


@pytest.mark.parametrize("text,old,new,all_,expected", EDITS)
def test_apply_edit(text: str, old: str, new: str, all_: bool, expected: tuple[str, int]) -> None:
    assert ft.apply_edit(text, old, new, replace_all=all_) == expected


@pytest.mark.parametrize("text,old,new,words", [
    ("a b a", "a", "c", "occurs 2 times"),
    ("a b", "z", "c", "not found"),
    ("a b", "", "c", "empty"),
    ("a b", "a", "a", "the same"),
])
def test_apply_edit_refuses_ambiguous_or_missing_text(text: str, old: str, new: str, words: str) -> None:
    with pytest.raises(ft.FileToolError, match=words):
        ft.apply_edit(text, old, new)


def test_number_lines_like_cat_n_and_cuts_long_lines() -> None:
    assert ft.number_lines(b"a\nb", 9) == b"     9\ta\n    10\tb\n"
    long = ft.number_lines(b"x" * (ft.MAX_LINE_CHARS + 5) + b"\n", 1)
    assert long.startswith(b"     1\t" + b"x" * ft.MAX_LINE_CHARS) and b"line cut" in long


def test_format_listing_marks_dirs_and_links() -> None:
    entries = [ft.Entry("a", "file", 1), ft.Entry("d", "dir", 0), ft.Entry("l", "symlink", 0)]
    assert ft.format_listing(entries) == b"a\nd/\nl@\n"
    assert ft.format_listing([], False) == b""


# --------------------------------------------------------------------------- the Workspace I/O


@pytest.mark.parametrize("use", MODES)
def test_read_lines_with_offset_and_limit(tmp_path: Path, use: bool) -> None:
    (tmp_path / "n.txt").write_bytes(b"".join(b"line%d\n" % i for i in range(1, 101)) + b"tail")
    with ft.Workspace(str(tmp_path), use_openat2=use) as ws:
        got = ws.read_lines("n.txt", offset=99, limit=5)
        assert (got.data, got.first_line, got.lines, got.more) == (b"line99\nline100\ntail", 99, 3, False)
        got = ws.read_lines("n.txt", offset=2, limit=2)
        assert (got.data, got.lines, got.more) == (b"line2\nline3\n", 2, True)
        got = ws.read_lines("n.txt")
        assert got.lines == 101 and not got.more
        got = ws.read_lines("n.txt", max_bytes=20)
        assert got.data == b"line1\nline2\nline3\n" and got.more


def test_reading_a_fifo_fails_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with ft.Workspace(str(tmp_path)) as ws:
        with pytest.raises(ft.FileToolError, match="not a regular file"):
            ws.read_lines("pipe")


@pytest.mark.parametrize("use", MODES)
def test_write_creates_parents_and_replaces_atomically_keeping_the_mode(tmp_path: Path, use: bool) -> None:
    with ft.Workspace(str(tmp_path), use_openat2=use) as ws:
        res = ws.write_atomic("a/b/c.txt", b"one\n")
        assert res == ft.WriteResult("a/b/c.txt", 4, True)
        os.chmod(tmp_path / "a/b/c.txt", 0o640)
        before = os.stat(tmp_path / "a/b/c.txt").st_ino
        res = ws.write_atomic("a/b/c.txt", b"two\n")
        assert res == ft.WriteResult("a/b/c.txt", 4, False)
    st = os.stat(tmp_path / "a/b/c.txt")
    assert (tmp_path / "a/b/c.txt").read_bytes() == b"two\n"
    assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_ino != before
    assert sorted(os.listdir(tmp_path / "a/b")) == ["c.txt"]  # no temp file left


def test_write_replaces_a_hard_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    os.link(target, ws_dir / "link.txt")
    with ft.Workspace(str(ws_dir)) as ws:
        ws.write_atomic("link.txt", b"new\n")
    assert target.read_text() == "keep\n"
    assert (ws_dir / "link.txt").read_text() == "new\n"


@pytest.mark.parametrize("use", MODES)
def test_write_through_an_inner_symlink_writes_its_target(tree: tuple[Path, Path], use: bool) -> None:
    ws_dir, _ = tree
    (ws_dir / "alias.txt").symlink_to("sub/f.txt")
    with ft.Workspace(str(ws_dir), use_openat2=use) as ws:
        res = ws.write_atomic("alias.txt", b"via link\n")
    assert res.path == "sub/f.txt"
    assert (ws_dir / "sub/f.txt").read_text() == "via link\n"
    assert (ws_dir / "alias.txt").is_symlink()


@pytest.mark.parametrize("use", MODES)
@pytest.mark.parametrize("path", ["out/new.txt", "rel_out/new.txt", "out/secret.txt", "../outside/new.txt"])
def test_write_through_a_symlink_out_is_refused_and_nothing_is_written(tree: tuple[Path, Path], use: bool,
                                                                       path: str) -> None:
    ws_dir, outside = tree
    (ws_dir / "leaf_out.txt").symlink_to(outside / "secret.txt")
    with ft.Workspace(str(ws_dir), use_openat2=use) as ws:
        for p in (path, "leaf_out.txt"):
            with pytest.raises(ft.EscapeError):
                ws.write_atomic(p, b"pwned\n")
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "outside\n"


@pytest.mark.parametrize("use", MODES)
def test_symlink_swapped_in_mid_operation_cannot_redirect_writes(tmp_path: Path, use: bool) -> None:
    """A racing thread flips ws/d between a real directory and a symlink to outside/."""
    ws_dir = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws_dir.mkdir()
    outside.mkdir()
    stop = threading.Event()

    def flip() -> None:
        d = ws_dir / "d"
        while not stop.is_set():
            try:
                d.mkdir()
                time.sleep(0)
                os.rename(d, ws_dir / "d.old")
                os.symlink(outside, ws_dir / "d.tmp")
                os.rename(ws_dir / "d.tmp", d)
                time.sleep(0)
                os.unlink(d)
                for child in (ws_dir / "d.old").iterdir():
                    child.unlink()
                (ws_dir / "d.old").rmdir()
            except OSError:
                pass

    racer = threading.Thread(target=flip)
    racer.start()
    outcomes: set[str] = set()
    try:
        with ft.Workspace(str(ws_dir), use_openat2=use) as ws:
            # Race for at least 1.5 s, and on a loaded machine until the swap was hit.
            start = time.monotonic()
            # The user-space walk has a far narrower window than openat2, so under load it may
            # only ever see the racer as a vanished or non-directory component ("failed").
            wanted = {"refused"} if use else {"refused", "failed"}
            while time.monotonic() - start < 1.5 or (not outcomes & wanted and time.monotonic() - start < 20):
                try:
                    ws.write_atomic("d/x.txt", b"data", create_parents=False)
                    outcomes.add("written")
                except ft.EscapeError:
                    outcomes.add("refused")
                except ft.FileToolError:
                    outcomes.add("failed")
    finally:
        stop.set()
        racer.join()
    assert list(outside.iterdir()) == []  # the property: nothing ever landed outside
    assert outcomes & wanted, outcomes  # and the racer really got in the way


@pytest.mark.parametrize("use", MODES)
def test_edit_replaces_exactly_once_or_all(tmp_path: Path, use: bool) -> None:
    (tmp_path / "e.py").write_text("x = 1\ny = 1\n")
    with ft.Workspace(str(tmp_path), use_openat2=use) as ws:
        with pytest.raises(ft.FileToolError, match="occurs 2 times"):
            ws.edit("e.py", "1", "2")
        assert (tmp_path / "e.py").read_text() == "x = 1\ny = 1\n"
        _, count = ws.edit("e.py", "x = 1", "x = 3")
        assert count == 1
        _, count = ws.edit("e.py", "= ", "== ", replace_all=True)
        assert count == 2
    assert (tmp_path / "e.py").read_text() == "x == 3\ny == 1\n"


def test_edit_keeps_non_utf8_bytes(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_bytes(b"\xff\xfe keep \x80 change me\n")
    with ft.Workspace(str(tmp_path)) as ws:
        ws.edit("b.txt", "change me", "changed")
    assert (tmp_path / "b.txt").read_bytes() == b"\xff\xfe keep \x80 changed\n"


def test_list_sorts_and_marks_kinds(tree: tuple[Path, Path]) -> None:
    ws_dir, _ = tree
    with ft.Workspace(str(ws_dir)) as ws:
        entries, cut = ws.list(".")
        assert not cut
        assert [(e.name, e.kind) for e in entries] == [
            ("abs_in", "symlink"), ("in", "symlink"), ("loop", "symlink"), ("out", "symlink"),
            ("rel_out", "symlink"), ("sub", "dir")]
        with pytest.raises(ft.EscapeError):
            ws.list("out")
        entries, cut = ws.list("sub", limit=0)
        assert cut and entries == []


@pytest.mark.parametrize("rel,expected", [("sub/f.txt", "file"), ("sub", "dir"), ("sub/new/x", "missing"),
                                          ("new.txt", "missing")])
def test_check_classifies_without_opening_content(tree: tuple[Path, Path], rel: str, expected: str) -> None:
    ws_dir, _ = tree
    with ft.Workspace(str(ws_dir)) as ws:
        assert ws.check(rel) == expected


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def quiet(clawhome: Path) -> Path:
    (clawhome / "config").mkdir(parents=True, exist_ok=True)
    (clawhome / "config" / "policy.toml").write_text('[receipts]\nemit = "none"\n')
    return clawhome


def claw(args: list[str], ws: Path, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, CLAWSHELL_CWD=str(ws), CLAWSHELL_SESSION="files-test")
    return subprocess.run([CLAWSHELL, *args], input=input, cwd=ws, env=env, capture_output=True, timeout=60)


def audit_rows(clawhome: Path) -> list[tuple[str, str, str]]:
    db = sqlite3.connect(clawhome / "storage" / "clawshell.db")
    try:
        return db.execute("SELECT tool, decision, json_extract(body, '$.outcome') FROM audit ORDER BY seq").fetchall()
    finally:
        db.close()


def test_file_commands_round_trip_with_receipts_and_audit(workspace: Path, clawhome: Path) -> None:
    res = claw(["file", "write", "notes/todo.txt"], workspace, input=b"alpha\nbeta\ngamma\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout == b""
    assert res.stderr.decode().splitlines()[-1].startswith("[clawshell receipt]")
    assert (workspace / "notes/todo.txt").read_bytes() == b"alpha\nbeta\ngamma\n"

    res = claw(["file", "read", "notes/todo.txt", "--offset", "2", "--limit", "1"], workspace)
    assert (res.returncode, res.stdout) == (0, b"     2\tbeta\n")
    res = claw(["file", "read", "--raw", "notes/todo.txt"], workspace)
    assert res.stdout == b"alpha\nbeta\ngamma\n"

    res = claw(["file", "edit", "notes/todo.txt", "--old", "beta", "--new", "BETA"], workspace)
    assert res.returncode == 0, res.stderr
    assert (workspace / "notes/todo.txt").read_text() == "alpha\nBETA\ngamma\n"

    res = claw(["file", "ls", "notes"], workspace)
    assert (res.returncode, res.stdout) == (0, b"todo.txt\n")
    rows = audit_rows(clawhome)
    assert [(t, o) for t, _, o in rows] == [("file.write", "ran"), ("file.read", "ran"), ("file.read", "ran"),
                                            ("file.edit", "ran"), ("file.ls", "ran")]


@pytest.mark.parametrize("args,input", [
    (["file", "read", "../outside/secret.txt"], None),
    (["file", "read", "link_out/secret.txt"], None),
    (["file", "write", "../outside/new.txt"], b"pwned"),
    (["file", "write", "link_out/new.txt"], b"pwned"),
    (["file", "edit", "link_out/secret.txt", "--old", "outside", "--new", "pwned"], None),
    (["file", "ls", "link_out"], None),
])
def test_paths_outside_the_workspace_are_refused_with_the_rule(tmp_path: Path, quiet: Path, args: list[str],
                                                               input: bytes | None) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("outside\n")
    (ws / "link_out").symlink_to(outside)
    res = claw(args, ws, input=input)
    assert res.returncode == 126
    assert res.stdout == b""
    lines = res.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clawshell: denied: ") and "[rule: " in lines[0], lines
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "outside\n"
    assert audit_rows(quiet)[-1][1:] == ("deny", "refused")


@pytest.mark.parametrize("args,words", [
    (["file", "read", "missing.txt"], "no such file"),
    (["file", "edit", "e.txt", "--old", "zzz", "--new", "y"], "not found"),
    (["file", "edit", "e.txt", "--old", "e", "--new", "E"], "--all"),
    (["file", "read", "."], "is a directory"),
])
def test_failures_exit_1_with_a_clear_line(workspace: Path, quiet: Path, args: list[str], words: str) -> None:
    (workspace / "e.txt").write_text("eee\n")
    res = claw(args, workspace)
    assert res.returncode == 1
    assert words in res.stderr.decode()
    assert (workspace / "e.txt").read_text() == "eee\n"
    assert audit_rows(quiet)[-1][2] == "failed"


def test_read_masks_secrets_in_the_output(workspace: Path, quiet: Path) -> None:
    key = "AKIA" + "Q3EGRKXWZ7PLM4TN"
    (workspace / "config.ini").write_text(f"[aws]\naws_access_key_id = {key}\nregion = eu-west-1\n")
    res = claw(["file", "read", "--raw", "config.ini"], workspace)
    assert res.returncode == 0
    assert key.encode() not in res.stdout
    assert b"region = eu-west-1\n" in res.stdout
    assert b"REDACTED" in res.stdout


def test_protected_path_write_needs_approval_and_times_out_refused(workspace: Path, clawhome: Path) -> None:
    (clawhome / "config").mkdir(parents=True, exist_ok=True)
    (clawhome / "config" / "policy.toml").write_text(
        '[receipts]\nemit = "none"\n\n[safety.approval]\ntimeout_seconds = 1\n')
    res = claw(["file", "write", ".git/hooks/pre-commit"], workspace, input=b"#!/bin/sh\necho pwned\n")
    assert res.returncode == 126
    assert not (workspace / ".git/hooks/pre-commit").exists()
    assert b"approval" in res.stderr
