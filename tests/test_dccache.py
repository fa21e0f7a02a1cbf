"""The dataclass code cache of the hot path: written once, reused, never trusted when
others can write it, and the classes behave exactly as without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = r"""
import sys
from clawshell import _dccache
_dccache.install(sys.argv[1])
import dataclasses
from clawshell.model import Verdict, Decision, RiskLevel, Evidence, Policy
ev = Evidence(rule="r", decision=Decision.DENY, reason="x")
v = Verdict(decision=Decision.DENY, score=1, risk=RiskLevel.LOW, evidence=(ev,))
assert dataclasses.replace(v, score=2).score == 2 and v == Verdict(Decision.DENY, 1, RiskLevel.LOW, (ev,))
assert hash(v) == hash(Verdict(Decision.DENY, 1, RiskLevel.LOW, (ev,)))
assert repr(ev).startswith("Evidence(rule='r'")
try:
    v.score = 3
except dataclasses.FrozenInstanceError:
    pass
else:
    raise SystemExit("not frozen")
assert Policy().autonomy.value == "supervised"
print("ok")
"""


def run_probe(cache: Path) -> str:
    res = subprocess.run([sys.executable, "-c", PROBE, str(cache)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_cache_is_written_then_reused_with_identical_behaviour(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert run_probe(cache) == "ok\n"
    (written,) = cache.glob("dataclass-code-*.marshal")
    assert written.stat().st_mode & 0o777 == 0o600
    before = written.stat().st_mtime_ns
    assert run_probe(cache) == "ok\n"
    assert written.stat().st_mtime_ns == before  # all hits: nothing rewritten


def test_a_cache_others_can_write_or_a_damaged_one_is_ignored(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_probe(cache)
    (written,) = cache.glob("dataclass-code-*.marshal")
    written.chmod(0o666)
    assert run_probe(cache) == "ok\n"
    written.write_bytes(b"\x00garbage")
    written.chmod(0o600)
    assert run_probe(cache) == "ok\n"
