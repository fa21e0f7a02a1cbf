"""The helper's script mode (``python -I -S -c STUB``), as bwrap runs it: what it imports,
how it finds and starts the command, and its bytecode cache.

Start-up cost is the point of script mode's shape (it runs once per sandboxed command),
so the imports are pinned here: neither ``os`` nor the ``ctypes`` package nor
``resource`` may creep back in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clawshell.sandbox import helper

from .conftest import host_probe

HERE = os.path.dirname(os.path.abspath(helper.__file__))
HEAVY = ("os", "ctypes", "resource", "struct", "stat", "__future__", "posixpath", "_collections_abc")
"""Modules ``python -S`` does not load and script mode must not load either."""


def run_script(steps: tuple[tuple[str, object], ...], command: list[str]) -> subprocess.CompletedProcess[str]:
    argv = helper.script_command(sys.executable, steps) + ["--", *command]
    return subprocess.run(argv, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, timeout=60)


def test_script_command_is_the_stub_then_the_encoded_steps() -> None:
    steps = (("no_new_privs", None), ("drop_caps", None))
    argv = helper.script_command("/py", steps)
    assert argv[:4] == ["/py", "-I", "-S", "-c"]
    assert f"sys.path.insert(0,{HERE!r})" in argv[4] and "import helper" in argv[4]
    assert argv[5:] == ["--nnp", "--drop-caps"]


def test_every_step_applies_without_loading_heavy_modules() -> None:
    p = host_probe()
    if p.landlock_abi == 0 or not p.seccomp:
        pytest.skip("Landlock or seccomp unavailable: " + "; ".join(p.notes))
    from clawshell.sandbox.seccomp import FilterOptions, bpf_path

    bpf = bpf_path(str(Path(os.environ["CLAWSHELL_HOME"]) / "cache"), FilterOptions())
    steps = (("rlimits", (("nofile", 512, 512), ("core", 0, 0))), ("no_new_privs", None),
             ("landlock", (p.landlock_abi, (1 << 13) - 1, 0, 0, 0, ((0xD, "/usr"),), ())),
             ("drop_caps", None), ("seccomp", bpf))
    code = (f"import sys;sys.path.insert(0,{HERE!r});import helper;"
            f"helper.apply_steps(helper.decode_args(sys.argv[1:])[0]);"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules) or 'light')")
    argv = [sys.executable, "-I", "-S", "-c", code, *helper.encode_steps(steps), "--", "x"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert (res.returncode, res.stdout.strip(), res.stderr) == (0, "light", "")


def test_the_command_is_found_on_path_and_its_status_passes_through() -> None:
    res = run_script((("no_new_privs", None),), ["sh", "-c", "grep NoNewPrivs /proc/self/status; exit 7"])
    assert (res.returncode, res.stdout) == (7, "NoNewPrivs:\t1\n")


def test_a_missing_or_unrunnable_command_exits_127_or_126_with_one_line(tmp_path: Path) -> None:
    res = run_script((), ["no-such-command-here"])
    assert res.returncode == 127 and res.stderr == "clawshell: no-such-command-here: No such file or directory\n"
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    res = run_script((), [str(script)])
    assert res.returncode == 126 and res.stderr == f"clawshell: {script}: Permission denied\n"


def test_a_step_that_fails_stops_the_command(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    res = run_script((("seccomp", str(tmp_path / "missing.bpf")),), ["touch", str(marker)])
    assert res.returncode == 126 and res.stderr.startswith("clawshell: sandbox: seccomp: cannot read")
    assert not marker.exists()


def test_refresh_bytecode_writes_a_missing_or_stale_cache_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in helper.SCRIPT_MODULES:
        (tmp_path / f"{name}.py").write_text(f"X = {name!r}\n")
    monkeypatch.setattr(helper, "__file__", str(tmp_path / "helper.py"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    helper.refresh_bytecode()
    cached = [tmp_path / "__pycache__" / f"{n}.{sys.implementation.cache_tag}.pyc" for n in helper.SCRIPT_MODULES]
    first = [c.stat().st_mtime_ns for c in cached]
    helper.refresh_bytecode()
    assert [c.stat().st_mtime_ns for c in cached] == first  # fresh: left alone
    src = tmp_path / "_landlock_sys.py"
    src.write_text("X = 'changed, and longer'\n")
    helper.refresh_bytecode()
    assert cached[0].stat().st_mtime_ns == first[0] and cached[1].stat().st_mtime_ns != first[1]
    out = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys;sys.path.insert(0,{str(tmp_path)!r});"
                          "import _landlock_sys;print(_landlock_sys.X, _landlock_sys.__cached__)"],
                         capture_output=True, text=True, check=True).stdout
    assert out == f"changed, and longer {cached[1]}\n"


def test_refresh_bytecode_respects_dont_write_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "helper.py").write_text("")
    monkeypatch.setattr(helper, "__file__", str(tmp_path / "helper.py"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    helper.refresh_bytecode()
    assert not (tmp_path / "__pycache__").exists()
