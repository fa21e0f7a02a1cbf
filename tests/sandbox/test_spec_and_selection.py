"""build_spec, layer selection, best effort, the environment allow-list, the probe cache."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from clawshell import sandbox
from clawshell.errors import SandboxUnavailableError
from clawshell.model import Decision, EvalContext, HostProbe, Policy, RiskLevel, Verdict
from clawshell.sandbox import probe as probe_mod

ALLOW = Verdict(decision=Decision.ALLOW, score=0, risk=RiskLevel.LOW, evidence=())
FULL = HostProbe(landlock_abi=7, seccomp=True, bwrap="/usr/bin/bwrap", userns=True)
NOTHING = HostProbe(landlock_abi=0, seccomp=False, bwrap=None, userns=False,
                    notes=("Landlock unavailable: ...", "bubblewrap not installed: apt-get install bubblewrap"))


def ctx(ws: Path, home: Path, claw: Path) -> EvalContext:
    return EvalContext(cwd=str(ws), workspace=str(ws), home=str(home), clawshell_home=str(claw))


@pytest.mark.parametrize("name,secret", [
    ("GITHUB_TOKEN", True), ("OPENAI_API_KEY", True), ("AWS_SECRET_ACCESS_KEY", True), ("AWS_SESSION_TOKEN", True),
    ("DB_PASSWORD", True), ("MYSQL_PWD", True), ("NPM_AUTH_TOKEN", True), ("PASSWORD", True),
    ("GOOGLE_APPLICATION_CREDENTIALS", True), ("SSH_PRIVATE_KEY", True),
    ("PATH", False), ("PWD", False), ("HOME", False), ("LANG", False), ("GIT_AUTHOR_NAME", False),
    ("KEYBOARD_LAYOUT", False), ("TERM", False), ("LC_ALL", False),
])
def test_secret_looking_names(name: str, secret: bool) -> None:
    assert sandbox.secret_looking(name) is secret


def test_environment_is_rebuilt_from_the_allow_list() -> None:
    environ = {"PATH": "/usr/bin", "HOME": "/h", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "USER": "u",
               "LOGNAME": "u", "SHELL": "/bin/bash", "TZ": "UTC", "COLORTERM": "truecolor", "NO_COLOR": "1",
               "EDITOR": "vim", "LD_PRELOAD": "/evil.so", "BASH_ENV": "/evil", "GITHUB_TOKEN": "ghp_secretvalue1",
               "CUSTOM": "x", "CI": "true", "LC_SECRET_TOKEN": "hidden-value"}
    pol = Policy(env_passthrough=("CI", "CUSTOM_*"))
    assert sandbox.scrub_env(environ, pol) == {
        "PATH": "/usr/bin", "HOME": "/h", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "USER": "u",
        "LOGNAME": "u", "SHELL": "/bin/bash", "TZ": "UTC", "COLORTERM": "truecolor", "NO_COLOR": "1", "CI": "true"}
    assert sandbox.scrubbed_secrets(environ, pol) == [b"ghp_secretvalue1", b"hidden-value"]
    explicit = Policy(env_passthrough=("GITHUB_TOKEN",))
    assert sandbox.scrub_env(environ, explicit)["GITHUB_TOKEN"] == "ghp_secretvalue1"
    assert sandbox.scrubbed_secrets(environ, explicit) == [b"hidden-value"]


def test_short_secret_values_are_not_reported_for_masking() -> None:
    assert sandbox.scrubbed_secrets({"API_TOKEN": "abc"}, Policy()) == []


def test_build_spec(workspace: Path, user_home: Path, clawhome: Path) -> None:
    (workspace / ".git").mkdir()
    pol = Policy(forbidden_paths=("/etc", "~/.ssh", "/proc"), writable_caches=("~/.cache/pip",), network=False,
                 timeout_seconds=12, max_output_bytes=1000)
    environ = {"HOME": str(user_home), "PATH": "/usr/bin:/bin", "SECRET_TOKEN": "zzzzzzzz"}
    verdict = replace(ALLOW, network=True)
    spec = sandbox.build_spec(pol, ctx(workspace, user_home, clawhome), verdict, environ, [])
    ws = os.path.realpath(workspace)
    home = os.path.realpath(user_home)
    assert spec.workspace == ws and spec.cwd == ws
    assert spec.network is True
    assert (spec.timeout, spec.max_output) == (12, 1000)
    assert "/etc" in spec.hidden and f"{user_home}/.ssh" in spec.hidden and "/proc" not in spec.hidden
    assert str(clawhome) in spec.hidden
    assert spec.writable == (f"{home}/.cache/pip",) and os.path.isdir(f"{home}/.cache/pip")
    assert spec.read_only[0] == home
    assert f"{ws}/.git/hooks" in spec.protected and f"{ws}/.bashrc" in spec.protected
    assert dict(spec.env) == {"HOME": str(user_home), "PATH": "/usr/bin:/bin"}
    assert dict(spec.limits)["core"] == 0 and dict(spec.limits)["pids"] > 0


@pytest.mark.parametrize("case", ["missing", "file", "forbidden", "forbidden-parent"])
def test_bad_workspace_is_refused(case: str, tmp_path: Path, user_home: Path, clawhome: Path) -> None:
    ws = tmp_path / "ws"
    pol = Policy(forbidden_paths=("~/.ssh",))
    if case == "file":
        ws.write_text("x")
    elif case == "forbidden":
        ws = user_home / ".ssh"
        ws.mkdir()
    elif case == "forbidden-parent":
        ws = user_home / ".ssh" / "proj"
        ws.mkdir(parents=True)
    with pytest.raises(SandboxUnavailableError) as exc:
        sandbox.build_spec(pol, ctx(ws, user_home, clawhome), ALLOW, {"HOME": str(user_home)}, [])
    assert exc.value.exit_code == 126
    assert ("forbidden" in str(exc.value)) == case.startswith("forbidden")


def test_bookkeeping_file_is_created_empty_and_a_symlinked_one_is_refused(workspace: Path, user_home: Path,
                                                                          clawhome: Path) -> None:
    import uuid

    tag = uuid.uuid4().hex[:10]
    good, link = f"/tmp/claude-{tag}-cwd", f"/tmp/claude-{tag}l-cwd"
    os.symlink(str(user_home / ".profile"), link)
    try:
        spec = sandbox.build_spec(Policy(), ctx(workspace, user_home, clawhome), ALLOW,
                                  {"HOME": str(user_home)}, [good, link])
        assert spec.writable == (good,)
        assert Path(good).read_bytes() == b""
    finally:
        for p in (good, link):
            if os.path.lexists(p):
                os.unlink(p)


@pytest.mark.parametrize("backend,probe,best_effort,layers", [
    ("auto", FULL, False, ("bwrap", "landlock", "seccomp", "no_new_privs", "rlimits")),
    ("bwrap", FULL, False, ("bwrap", "landlock", "seccomp", "no_new_privs", "rlimits")),
    ("landlock", FULL, False, ("landlock", "seccomp", "no_new_privs", "rlimits")),
    ("none", FULL, False, ()),
    ("auto", replace(FULL, bwrap=None, userns=False), False, ("landlock", "seccomp", "no_new_privs", "rlimits")),
    ("auto", replace(FULL, landlock_abi=0), False, ("bwrap", "seccomp", "no_new_privs", "rlimits")),
    ("bwrap", replace(FULL, landlock_abi=0), False, ("bwrap", "seccomp", "no_new_privs", "rlimits")),
    ("auto", NOTHING, True, ()),
    ("landlock", replace(FULL, landlock_abi=0), True, ("seccomp", "no_new_privs", "rlimits")),
])
def test_layer_selection(backend: str, probe: HostProbe, best_effort: bool, layers: tuple[str, ...],
                         workspace: Path, user_home: Path, clawhome: Path) -> None:
    if probe.seccomp and not probe_mod.probe_uncached().seccomp:
        pytest.skip("the seccomp program cannot be compiled here")
    pol = Policy(sandbox=backend, best_effort=best_effort)
    spec = sandbox.build_spec(pol, ctx(workspace, user_home, clawhome), ALLOW, {"HOME": str(user_home)}, [])
    plan = sandbox.plan(spec, ["bash", "-c", "true"], probe)
    assert plan.layers == layers
    if "bwrap" in layers:
        assert plan.argv[0] == "/usr/bin/bwrap" and plan.argv[-3:] == ("bash", "-c", "true")
    else:
        assert plan.argv == ("bash", "-c", "true")
    for kind, data in plan.preexec:
        if kind == "cleanup":
            os.rmdir(data)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend,probe,missing", [
    ("bwrap", replace(FULL, bwrap=None, userns=False, notes=("bubblewrap not installed: apt-get install bubblewrap",)),
     "bwrap"),
    ("landlock", replace(FULL, landlock_abi=0, notes=("Landlock unavailable: add landlock to lsm=",)), "landlock"),
    ("auto", NOTHING, "bwrap or landlock, seccomp"),
    ("auto", replace(FULL, seccomp=False), "seccomp"),
    ("nonsense", FULL, "unknown sandbox backend"),
])
def test_missing_layer_is_refused_with_how_to_enable_it(backend: str, probe: HostProbe, missing: str,
                                                         workspace: Path, user_home: Path, clawhome: Path) -> None:
    spec = sandbox.build_spec(Policy(sandbox=backend), ctx(workspace, user_home, clawhome), ALLOW,
                              {"HOME": str(user_home)}, [])
    with pytest.raises(SandboxUnavailableError) as exc:
        sandbox.plan(spec, ["true"], probe)
    msg = str(exc.value)
    assert missing in msg
    assert "\n" not in msg
    if probe.notes:
        assert probe.notes[0] in msg and "best_effort" in msg


def test_unwritable_temp_dir_is_refused(workspace: Path, user_home: Path, clawhome: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    real_mkdir = os.mkdir

    def fail(path: str, *a: object, **k: object) -> None:
        if str(path).startswith("/tmp/clawshell-"):
            raise PermissionError(13, "Permission denied")
        real_mkdir(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "mkdir", fail)
    spec = sandbox.build_spec(Policy(sandbox="landlock"), ctx(workspace, user_home, clawhome), ALLOW,
                              {"HOME": str(user_home)}, [])
    if not probe_mod.probe_uncached().seccomp:
        pytest.skip("seccomp unavailable")
    with pytest.raises(SandboxUnavailableError, match="private temp dir"):
        sandbox.plan(spec, ["true"], FULL)


# ----------------------------------------------------------------------------- probe


def test_probe_is_cached_and_keyed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = probe_mod.probe_uncached

    def counting() -> HostProbe:
        calls.append(1)
        return real()

    monkeypatch.setattr(probe_mod, "probe_uncached", counting)
    first = probe_mod.probe_host(str(tmp_path))
    second = probe_mod.probe_host(str(tmp_path))
    assert first == second and len(calls) == 1
    text = (tmp_path / probe_mod.CACHE_NAME).read_text()
    (tmp_path / probe_mod.CACHE_NAME).write_text(text.replace("key=", "key=stale"))
    assert probe_mod.probe_host(str(tmp_path)) == first and len(calls) == 2
    (tmp_path / probe_mod.CACHE_NAME).write_text("garbage")
    assert probe_mod.probe_host(str(tmp_path)) == first and len(calls) == 3


def test_probe_reports_this_kernel() -> None:
    p = probe_mod.probe_uncached()
    from clawshell.sandbox import _landlock_sys

    assert p.landlock_abi == _landlock_sys.abi_version()
    if p.bwrap is None:
        assert p.notes


def test_other_users_homes_never_hide_home_itself(tmp_path: Path, clawhome: Path) -> None:
    homes = tmp_path / "homes"
    me, other = homes / "me", homes / "other"
    for d in (me / ".pyenv", me / ".ssh", other):
        d.mkdir(parents=True)
    ws = me / "proj"
    ws.mkdir()
    pol = Policy(forbidden_paths=(str(homes), f"{homes}/*", "~/.ssh"))
    spec = sandbox.build_spec(pol, ctx(ws, me, clawhome), ALLOW, {"HOME": str(me)}, [])
    assert str(other) in spec.hidden and f"{me}/.ssh" in spec.hidden
    assert str(me) not in spec.hidden and str(homes) not in spec.hidden
    assert spec.read_only[0] == str(me)


@pytest.mark.parametrize("git_exists,approved,still_protected", [
    (True, [], {".git/hooks", ".git/config"}),
    (True, [".git/hooks"], {".git/config"}),
    (False, [".git/hooks"], set()),  # `.git` is missing: its cover is lifted with the approved write
    (False, [".git/config", ".git/hooks"], set()),
])
def test_approved_protected_paths_are_lifted_for_the_run(git_exists: bool, approved: list[str],
                                                         still_protected: set[str], workspace: Path,
                                                         user_home: Path, clawhome: Path) -> None:
    if git_exists:
        (workspace / ".git").mkdir()
    pol = Policy(protected_paths=(".git/hooks", ".git/config"))
    verdict = replace(ALLOW, extra_writable=tuple(str(workspace / a) for a in approved))
    spec = sandbox.build_spec(pol, ctx(workspace, user_home, clawhome), verdict, {"HOME": str(user_home)}, [])
    got = {p[len(str(workspace)) + 1:] for p in spec.protected if p.startswith(str(workspace) + "/")}
    assert got == still_protected
