"""Fixtures for the real-kernel sandbox tests.

``sandboxed(mode)`` runs ``bash -c CMD`` through ``sandbox.build_spec`` +
``sandbox.plan`` + ``runner.run`` directly: the parser is out of the picture, which is
the "verdict forced to allow" seam.  Every restriction lives in the child the runner
forks; the pytest process itself is never restricted.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import pytest

from clawshell import runner, sandbox
from clawshell.model import Decision, EvalContext, HostProbe, Policy, RiskLevel, RunResult, Verdict
from clawshell.sandbox.probe import probe_uncached

FORBIDDEN = ("/etc", "/sys", "/boot", "/proc", "~/.ssh", "~/.gnupg", "~/.aws", "~/.kube", "~/.docker",
             "~/.netrc", "~/.git-credentials", "~/.config")
"""The DESIGN.md default forbidden paths."""

MODES = ("landlock", "bwrap")
"""Layer combinations that matter: Landlock+seccomp alone, and bwrap+Landlock+seccomp."""

_PROBE: HostProbe | None = None


def host_probe() -> HostProbe:
    """Probe once per test process (uncached: no file I/O in the real HOME)."""
    global _PROBE
    if _PROBE is None:
        _PROBE = probe_uncached()
    return _PROBE


def skip_unless_mode(mode: str) -> None:
    """Skip (with the probe's reason) when the host cannot run ``mode``."""
    p = host_probe()
    if not p.seccomp:
        pytest.skip("seccomp filters unavailable on this host: " + "; ".join(p.notes))
    if mode in ("landlock", "bwrap") and p.landlock_abi == 0:
        pytest.skip("Landlock unavailable on this host: " + "; ".join(p.notes))
    if mode == "bwrap" and not (p.bwrap and p.userns):
        pytest.skip("bwrap unusable on this host: " + "; ".join(p.notes))


@dataclass
class Outcome:
    """What a sandboxed run produced."""

    result: RunResult
    out: bytes
    err: bytes

    @property
    def status(self) -> int:
        """Exit status."""
        return self.result.status

    @property
    def text(self) -> str:
        """stdout + stderr decoded, for assertions on messages."""
        return (self.out + self.err).decode("utf-8", "replace")


@dataclass
class Box:
    """A temp world for one test: HOME with a fake secret, a workspace, an outside dir."""

    mode: str
    home: Path
    ws: Path
    outside: Path
    clawhome: Path
    policy: Policy = field(default_factory=Policy)

    def run(self, cmd: str, *, network: bool = False, timeout: float | None = 60.0,
            extra_writable: tuple[str, ...] = (), env: dict[str, str] | None = None,
            policy: Policy | None = None, limits: tuple[tuple[str, int], ...] | None = None,
            argv: list[str] | None = None, stdin_fd: int | None = None) -> Outcome:
        """Run ``bash -c cmd`` in the sandbox of ``self.mode``."""
        pol = policy or self.policy
        pol = replace(pol, timeout_seconds=timeout or 0.0)
        ctx = EvalContext(cwd=str(self.ws), workspace=str(self.ws), home=str(self.home),
                          clawshell_home=str(self.clawhome))
        verdict = Verdict(decision=Decision.ALLOW, score=0, risk=RiskLevel.LOW, evidence=(), network=network)
        environ = dict(os.environ)
        environ["HOME"] = str(self.home)
        if env:
            environ.update(env)
        spec = sandbox.build_spec(pol, ctx, verdict, environ, list(extra_writable))
        if limits is not None:
            spec = replace(spec, limits=limits)
        if not timeout:
            spec = replace(spec, timeout=None)
        plan = sandbox.plan(spec, argv or ["bash", "-c", cmd], host_probe())
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            kw = {} if stdin_fd is None else {"stdin_fd": stdin_fd}
            res = runner.run(plan, out_fd=out.fileno(), err_fd=err.fileno(), **kw)
            out.seek(0)
            err.seek(0)
            return Outcome(res, out.read(), err.read())


@pytest.fixture
def make_box(tmp_path: Path, user_home: Path, clawhome: Path) -> Callable[[str], Box]:
    """Factory: ``make_box(mode)`` -> a Box (skips when the host lacks the mode)."""

    def make(mode: str, **policy_kw: object) -> Box:
        skip_unless_mode(mode)
        ssh = user_home / ".ssh"
        ssh.mkdir(exist_ok=True)
        (ssh / "id_rsa").write_text("FAKE-PRIVATE-KEY-0123456789\n")
        (user_home / ".profile").write_text("export FROM_PROFILE=profile-was-read\n")
        ws = tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        outside = tmp_path / "outside"
        outside.mkdir(exist_ok=True)
        (outside / "target.txt").write_text("original\n")
        pol = Policy(sandbox=mode, forbidden_paths=FORBIDDEN, timeout_seconds=60.0, **policy_kw)  # type: ignore[arg-type]
        return Box(mode=mode, home=user_home, ws=ws, outside=outside, clawhome=clawhome, policy=pol)

    return make


@pytest.fixture(params=MODES)
def box(request: pytest.FixtureRequest, make_box: Callable[[str], Box]) -> Box:
    """A Box for each layer combination that matters."""
    return make_box(request.param)
