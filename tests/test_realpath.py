"""_realpath.realpath gives exactly os.path.realpath's answer (real files, real symlinks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawshell._realpath import realpath


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Directories, files and every kind of symlink the planners meet."""
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "f").write_text("x")
    (tmp_path / "ln_dir").symlink_to("a/b")
    (tmp_path / "a" / "up").symlink_to("..")
    (tmp_path / "abs").symlink_to(tmp_path / "a" / "b" / "c" / "f")
    (tmp_path / "dangling").symlink_to("nowhere/at/all")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "chain").symlink_to("ln_dir")
    (tmp_path / "to_file_dir").symlink_to("a/b/c/f")
    os.mkfifo(tmp_path / "fifo")
    gone = tmp_path / "gone"
    gone.mkdir()
    return tmp_path


CASES = ["", ".", "a", "a/b/c/f", "ln_dir", "ln_dir/c/f", "ln_dir/..", "a/up/a/up/ln_dir/c", "abs", "dangling",
         "dangling/x", "loop1", "loop1/x", "chain/c/f/", "to_file_dir/x", "missing", "missing/ln_dir", "a/b/../b/./c",
         "fifo", "a//b///c", "ln_dir/c/../../b", "/proc/self", "/proc/self/fd/0", "/", "/etc/../etc/passwd",
         "/nonexistent/../etc"]


@pytest.mark.parametrize("rel", CASES)
def test_same_answer_as_os_path_realpath(tree: Path, rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    path = rel if rel.startswith("/") or not rel else rel
    assert realpath(path) == os.path.realpath(path)
    assert realpath(str(tree / rel)) == os.path.realpath(str(tree / rel))


def test_a_deleted_directory_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "d"
    d.mkdir()
    monkeypatch.chdir(d)
    fd = os.open(str(tmp_path), os.O_RDONLY)
    d.rmdir()
    with pytest.raises(FileNotFoundError):  # os.path.realpath needs getcwd(), which fails
        os.path.realpath(".")
    with pytest.raises(FileNotFoundError):  # the kernel's "(deleted)" name is not taken
        realpath(".")
    os.fchdir(fd)
    os.close(fd)


_PARTS = st.sampled_from(["a", "b", "ln_dir", "up", "..", ".", "c", "f", "dangling", "chain", "missing", ""])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_PARTS, max_size=7))
def test_random_walks_agree(parts: list[str], tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.getbasetemp() / "walk"
    if not base.exists():
        (base / "a" / "b" / "c").mkdir(parents=True)
        (base / "a" / "b" / "c" / "f").write_text("x")
        (base / "ln_dir").symlink_to("a/b")
        (base / "a" / "up").symlink_to("..")
        (base / "a" / "b" / "ln_dir").symlink_to("../../ln_dir")
        (base / "dangling").symlink_to("nowhere")
        (base / "chain").symlink_to("ln_dir")
    path = str(base) + "/" + "/".join(parts)
    assert realpath(path) == os.path.realpath(path)


@pytest.mark.parametrize("rel", ["missing", "a/missing", "ln_dir/missing", "a/up/missing", "b/../dangling",
                                 "missing/../ln_dir", "a/b/c/f/missing", "ln_dir/c/missing/deeper"])
def test_missing_last_components_agree(tree: Path, rel: str) -> None:
    assert realpath(str(tree / rel)) == os.path.realpath(str(tree / rel))
