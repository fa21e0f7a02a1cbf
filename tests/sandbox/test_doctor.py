"""``clawshell doctor``: the host's layers and what a default run enforces, in words and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawshell.cli.doctor import doctor
from clawshell.model import HostProbe, Policy
from clawshell.sandbox import describe_enforcement

from .conftest import host_probe


def test_doctor_json_matches_the_probe(clawhome: Path) -> None:
    res = CliRunner().invoke(doctor, ["--json"])
    rep = json.loads(res.output)
    p = host_probe()
    assert (rep["landlock_abi"], rep["seccomp"], rep["bwrap"], rep["userns"]) == (
        p.landlock_abi, p.seccomp, p.bwrap, p.userns)
    layers = rep["default_run"]["layers"]
    if p.seccomp and (p.landlock_abi or p.bwrap):
        assert res.exit_code == 0 and layers[-2:] == ["no_new_privs", "rlimits"] and "seccomp" in layers
        assert ("bwrap" in layers) == bool(p.bwrap) and ("landlock" in layers) == bool(p.landlock_abi)
    else:
        assert res.exit_code == 1 and rep["default_run"]["refused"]
    assert (clawhome / "cache" / "probe-v1.txt").exists()


def test_doctor_words(clawhome: Path) -> None:
    res = CliRunner().invoke(doctor, [])
    assert res.output.startswith("kernel ")
    for word in ("landlock:", "seccomp:", "bwrap:", "a default run"):
        assert word in res.output


@pytest.mark.parametrize("policy,probe,layers,refused", [
    (Policy(), HostProbe(7, True, "/usr/bin/bwrap", True), ["bwrap", "landlock", "seccomp", "no_new_privs", "rlimits"],
     False),
    (Policy(sandbox="landlock"), HostProbe(7, True, "/usr/bin/bwrap", True),
     ["landlock", "seccomp", "no_new_privs", "rlimits"], False),
    (Policy(), HostProbe(0, False, None, False, ("bubblewrap not installed",)), [], True),
    (Policy(sandbox="none"), HostProbe(7, True, None, False), [], False),
])
def test_describe_enforcement(policy: Policy, probe: HostProbe, layers: list[str], refused: bool) -> None:
    rep = describe_enforcement(policy, probe)
    assert rep["layers"] == layers
    assert bool(rep["refused"]) is refused
    topics = [t for t, _ in rep["items"]]  # type: ignore[attr-defined]
    if "landlock" in layers and "bwrap" not in layers:
        assert "unix sockets" in topics and "protected" in topics
