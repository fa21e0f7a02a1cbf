"""Shared fixtures: every test gets its own CLAWSHELL_HOME and HOME (never the real ones)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from clawshell.home import Home
    from clawshell.store import Store

ROOT = Path(__file__).resolve().parents[1]
os.environ["CLAWSHELL_WARM"] = os.environ.get("CLAWSHELL_TEST_WARM", "0")  # also for processes started outside a test's fixtures
VENV_BIN = Path(sys.executable).parent
CLAWSHELL = str(VENV_BIN / "clawshell")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME and CLAWSHELL_HOME at fresh temp dirs for every test."""
    base = tmp_path_factory.mktemp("home")
    home = base / "user"
    claw = base / "clawhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAWSHELL_HOME", str(claw))
    # No warm server unless a test asks for one (tests/test_warm.py): thousands of
    # short-lived homes must not each leave a resident process behind.
    monkeypatch.setenv("CLAWSHELL_WARM", os.environ.get("CLAWSHELL_TEST_WARM", "0"))
    monkeypatch.setenv("CLAWSHELL_WARM_IDLE", "3")
    for name in ("CLAWSHELL_CWD", "CLAWSHELL_POLICY", "CLAWSHELL_SESSION", "CLAWSHELL_DEPTH",
                 "CLAWSHELL_INSIDE", "CLAWSHELL_REAL_SHELL"):
        monkeypatch.delenv(name, raising=False)
    return claw


@pytest.fixture
def clawhome(isolated_home: Path) -> Path:
    """The temp CLAWSHELL_HOME of this test."""
    return isolated_home


@pytest.fixture
def home(clawhome: Path) -> "Home":
    """The state home of this test as a ``Home``."""
    from clawshell.home import Home

    return Home(str(clawhome))


@pytest.fixture
def store(home: "Home") -> "Iterator[Store]":
    """An open store in this test's home, closed afterwards."""
    from clawshell.store import Store

    s = Store.open(home)
    yield s
    s.close()


@pytest.fixture
def user_home() -> Path:
    """The temp HOME of this test."""
    return Path(os.environ["HOME"])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh workspace directory."""
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def run_clawshell(args: list[str], *, input: bytes | None = None, cwd: str | os.PathLike[str] | None = None,
                  env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``clawshell`` with ``args``; returns the completed process (bytes)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([CLAWSHELL, *args], input=input, cwd=cwd, env=full_env,
                          capture_output=True, timeout=timeout)


@pytest.fixture
def clawshell_cmd():
    """The ``run_clawshell`` helper as a fixture."""
    return run_clawshell
