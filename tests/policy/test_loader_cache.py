"""The policy cache: served only while nothing it depends on changed; never trusted
when damaged or writable by others; errors are never cached."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clawshell.errors import ConfigError
from clawshell.home import Home
from clawshell.policy.loader import load_policy, load_policy_and_hash, policy_hash


def write_policy(path: Path, text: str, bump: int) -> None:
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + bump * 1_000_000_000))


def test_cached_policy_equals_a_fresh_load(clawhome: Path, workspace: Path) -> None:
    home = Home(str(clawhome))
    first = load_policy_and_hash(home, str(workspace), None)
    second = load_policy_and_hash(home, str(workspace), None)
    fresh = load_policy(home, str(workspace), None)
    assert first == second == (fresh, policy_hash(fresh))
    assert list((clawhome / "cache").glob("policy-*.pickle"))


@pytest.mark.parametrize("where", ["global", "project"])
def test_editing_a_policy_file_takes_effect_at_once(where: str, clawhome: Path, workspace: Path) -> None:
    home = Home(str(clawhome))
    target = (clawhome / "config" / "policy.toml") if where == "global" else \
        (workspace / ".clawshell" / "security-policy.toml")
    target.parent.mkdir(parents=True)
    body = '[autonomy]\nlevel = "supervised"\n' if where == "global" else '[policy]\ndescription = "x"\n'
    write_policy(target, body, 1)
    before, _ = load_policy_and_hash(home, str(workspace), None)
    body = '[autonomy]\nlevel = "readonly"\n' if where == "global" else '[policy.autonomy]\nlevel = "readonly"\n'
    write_policy(target, body, 2)
    after, _ = load_policy_and_hash(home, str(workspace), None)
    assert after == load_policy(home, str(workspace), None)
    assert after.autonomy.value == "readonly" and before.autonomy.value == "supervised"


def test_a_bad_file_fails_every_time(clawhome: Path, workspace: Path) -> None:
    home = Home(str(clawhome))
    (clawhome / "config").mkdir(parents=True)
    (clawhome / "config" / "policy.toml").write_text("bogus_key = 1\n")
    for _ in range(2):
        with pytest.raises(ConfigError):
            load_policy_and_hash(home, str(workspace), None)


@pytest.mark.parametrize("damage", ["garbage", "world_writable"])
def test_damaged_or_untrusted_cache_is_ignored(damage: str, clawhome: Path, workspace: Path) -> None:
    home = Home(str(clawhome))
    good = load_policy_and_hash(home, str(workspace), None)
    (cached,) = (clawhome / "cache").glob("policy-*.pickle")
    if damage == "garbage":
        cached.write_bytes(b"\x80\x04not a pickle")
    else:
        import pickle

        from clawshell.model import Policy

        cached.write_bytes(pickle.dumps((Policy(name="poisoned"), "x")))
        cached.chmod(0o666)
    assert load_policy_and_hash(home, str(workspace), None) == good
