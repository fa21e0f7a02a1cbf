"""Private cache files: read only when ours and not writable by others; written whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawshell.cachefile import read_private, write_private


def test_written_file_is_private_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "x.bin"
    write_private(str(path), b"data")
    assert read_private(str(path)) == b"data"
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["x.bin"]  # no temp file left


@pytest.mark.parametrize("spoil", ["group_writable", "world_writable", "symlink", "directory", "missing"])
def test_untrusted_cache_files_are_not_read(spoil: str, tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    if spoil == "symlink":
        target = tmp_path / "real"
        write_private(str(target), b"data")
        path.symlink_to(target)
    elif spoil == "directory":
        path.mkdir()
    elif spoil != "missing":
        write_private(str(path), b"data")
        path.chmod(0o620 if spoil == "group_writable" else 0o602)
    assert read_private(str(path)) is None
