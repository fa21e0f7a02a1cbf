"""The warm server (clawshell.warm): real servers, real workers, real signals.

Every test here turns the server on for its own home (conftest turns it off for every
other test) and stops it afterwards.  Whether a call went through the server is told
by its side effect: under sandbox=none the command's parent is the worker, not the
clawshell process the test started.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawshell import warm
from clawshell._warmclient import identity, socket_name

from .conftest import CLAWSHELL


@pytest.fixture
def warm_home(clawhome: Path, monkeypatch: pytest.MonkeyPatch):
    """This test's home with sandbox=none and the warm server on; the server is stopped after."""
    (clawhome / "config").mkdir(parents=True)
    (clawhome / "config" / "policy.toml").write_text('[sandbox]\nbackend = "none"\n')
    monkeypatch.setenv("CLAWSHELL_WARM", "1")
    monkeypatch.setenv("CLAWSHELL_WARM_IDLE", "60")
    yield clawhome
    warm.stop(str(clawhome))


def _run(args: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([CLAWSHELL, *args], cwd=cwd, capture_output=True, timeout=60, **kw)


def _start_server(workspace: Path, home: Path) -> None:
    """Make the first call (it starts the server) and wait until a spare is ready."""
    _run(["-c", "true"], workspace)
    deadline = time.monotonic() + 30
    while not _served(workspace):
        if time.monotonic() > deadline:
            pytest.fail("the warm server did not come up within 30 s")
        time.sleep(0.1)


def _served(workspace: Path) -> bool:
    """True when a call is run by a warm worker (the command's parent is not our child)."""
    proc = subprocess.Popen([CLAWSHELL, "-c", "echo $PPID"], cwd=workspace, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    out, _ = proc.communicate(timeout=60)
    return out.strip() != str(proc.pid).encode()


def test_second_call_is_served_warm_with_the_same_result(warm_home: Path, workspace: Path) -> None:
    _start_server(workspace, warm_home)
    assert warm.servers(str(warm_home)), "clawshell warm status sees no server"
    script = 'echo "out $0 $1"; echo err >&2; printf "\\x00\\xff"; exit 3'
    warm_res = _run(["-c", script, "name", "arg"], workspace)
    cold_res = _run(["-c", script, "name", "arg"], workspace, env=dict(os.environ, CLAWSHELL_WARM="0"))
    assert warm_res.returncode == cold_res.returncode == 3
    assert warm_res.stdout == cold_res.stdout == b"out name arg\n\x00\xff"
    strip = [line for line in warm_res.stderr.splitlines() if not line.startswith(b"[clawshell receipt]")]
    assert strip == [b"err"]


def test_stdin_cwd_and_umask_are_the_callers(warm_home: Path, workspace: Path) -> None:
    _start_server(workspace, warm_home)
    sub = workspace / "sub"
    sub.mkdir()
    data = bytes(range(256)) * 1000
    res = _run(["-c", "cat"], sub, input=data)
    assert res.returncode == 0 and res.stdout == data
    res = _run(["-c", "pwd; umask"], sub, preexec_fn=lambda: os.umask(0o027))
    assert res.stdout.split() == [str(sub).encode(), b"0027"]
    res = _run(["-s", "x", "y"], workspace, input=b'echo "script $1 $2"\n')
    assert res.stdout == b"script x y\n"


def test_session_and_audit_name_the_callers_parent(warm_home: Path, workspace: Path) -> None:
    _start_server(workspace, warm_home)
    assert _run(["-c", "echo audited"], workspace).returncode == 0
    out = subprocess.run([CLAWSHELL, "audit", "--last", "1", "--json"], capture_output=True, check=True,
                         env=dict(os.environ, CLAWSHELL_WARM="0")).stdout
    entries = json.loads(out) if out.strip().startswith(b"[") else [json.loads(x) for x in out.splitlines()]
    entry = entries[-1]
    body = entry["body"]
    assert body.get("command") == "echo audited"
    assert body.get("session") == f"ppid-{os.getpid()}"


def test_signals_reach_the_command(warm_home: Path, workspace: Path) -> None:
    _start_server(workspace, warm_home)
    proc = subprocess.Popen([CLAWSHELL, "-c", 'trap "echo got-term; exit 7" TERM; echo ready; '
                             'sleep 30 & wait'], cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=30)
    assert b"got-term" in rest
    assert proc.returncode == 7


def test_a_killed_caller_takes_its_command_down(warm_home: Path, workspace: Path) -> None:
    _start_server(workspace, warm_home)
    marker = workspace / "after"
    proc = subprocess.Popen([CLAWSHELL, "-c", "echo ready; sleep 3; touch after"], cwd=workspace,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    proc.kill()
    proc.wait(timeout=10)
    time.sleep(5)
    assert not marker.exists()  # the worker hung up on the command when its caller died


def _no_new_privs() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        os._exit(99)


def test_a_confined_caller_is_refused_and_runs_in_process(warm_home: Path, workspace: Path) -> None:
    _start_server(workspace, warm_home)
    proc = subprocess.Popen([CLAWSHELL, "-c", "echo $PPID"], cwd=workspace, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, preexec_fn=_no_new_privs)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert out.strip() == str(proc.pid).encode()  # ran in the caller's own process


@pytest.mark.parametrize("backend", ["auto", "landlock"])
def test_the_socket_is_out_of_reach_of_a_sandboxed_command(clawhome: Path, workspace: Path, backend: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """bwrap (own network namespace) and Landlock alone (ABI >= 6 abstract-socket scope):
    connecting to the server's name from inside the sandbox fails."""
    if backend == "landlock":
        from clawshell.sandbox._landlock_sys import abi_version

        if abi_version() < 6:
            pytest.skip(f"Landlock ABI {abi_version()} has no abstract-socket scope (needs 6)")
    (clawhome / "config").mkdir(parents=True)
    (clawhome / "config" / "policy.toml").write_text(f'[sandbox]\nbackend = "{backend}"\n')
    monkeypatch.setenv("CLAWSHELL_WARM", "1")
    monkeypatch.setenv("CLAWSHELL_WARM_IDLE", "60")
    try:
        _run(["-c", "true"], workspace)
        name = socket_name(identity(os.environb))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(name)
                break
            except OSError:
                time.sleep(0.1)
            finally:
                probe.close()
        else:
            pytest.fail("the warm server did not come up")
        # (probe reached it from outside; now the same connect from inside the sandbox)
        code = ("import socket,sys\n"
                f"try:\n    socket.socket(socket.AF_UNIX).connect({name!r})\n"
                "except OSError as e:\n    print('refused', e.errno); sys.exit(0)\n"
                "print('connected')\n")
        script = workspace / "probe.py"
        script.write_text(code)
        res = _run(["-c", "python3 probe.py || /usr/bin/env python3 probe.py"], workspace)
        assert b"refused" in res.stdout, (res.stdout, res.stderr)
        assert b"connected" not in res.stdout
    finally:
        warm.stop(str(clawhome))


def test_warm_status_and_stop(warm_home: Path, workspace: Path) -> None:
    _start_server(workspace, warm_home)
    env = dict(os.environ, CLAWSHELL_WARM="0")
    status = subprocess.run([CLAWSHELL, "warm", "status", "--json"], capture_output=True, env=env, check=True)
    listed = json.loads(status.stdout)
    assert [s["home"] for s in listed] == [str(warm_home)]
    stopped = subprocess.run([CLAWSHELL, "warm", "stop"], capture_output=True, env=env, check=True)
    assert stopped.stdout.startswith(b"stopped 1 warm server")
    deadline = time.monotonic() + 10
    while warm.servers(str(warm_home)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert warm.servers(str(warm_home)) == []
    # the next call runs in-process (and starts a new server)
    proc = subprocess.Popen([CLAWSHELL, "-c", "echo $PPID"], cwd=workspace, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    out, _ = proc.communicate(timeout=60)
    assert out.strip() == str(proc.pid).encode()


def test_off_switch_never_starts_a_server(clawhome: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAWSHELL_WARM", "0")
    for _ in range(3):
        assert _run(["-c", "true"], workspace).returncode == 0
    time.sleep(1)
    assert warm.servers(str(clawhome)) == []


def test_doctor_reports_the_warm_server(warm_home: Path, workspace: Path) -> None:
    env = dict(os.environ, CLAWSHELL_WARM="0")
    off = json.loads(subprocess.run([CLAWSHELL, "doctor", "--json"], capture_output=True, env=env).stdout)
    assert off["warm_server"] == {"enabled": False, "spawn": False, "running": []}
    _start_server(workspace, warm_home)
    on = json.loads(subprocess.run([CLAWSHELL, "doctor", "--json"], capture_output=True).stdout)
    assert on["warm_server"]["enabled"] and on["warm_server"]["running"] == [
        pid for pid, _home in warm.servers(str(warm_home))]


@pytest.mark.parametrize("args", [
    ["-c", "-l", "echo hi"],                       # Claude Code's shape
    ["-lc", 'echo "$0" "$#"'],                     # Codex's
    ["-c", 'echo "$@"', "zero", "one", "two"],
    ["-o", "pipefail", "-c", "false | true; echo $?"],
    ["-e", "-c", "false; echo never"],
    ["--version"],
])
def test_agent_shapes_as_bash_match_in_process(warm_home: Path, workspace: Path, tmp_path: Path,
                                                args: list[str]) -> None:
    """Installed as `bash` (multi-call), a warm call prints, fails and exits like an in-process one."""
    bindir = tmp_path / "clawbin"
    bindir.mkdir()
    (bindir / "bash").symlink_to(CLAWSHELL)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    _start_server(workspace, warm_home)
    assert _served(workspace)

    def run(extra: dict[str, str]) -> tuple[int, bytes, list[bytes]]:
        res = subprocess.run([str(bindir / "bash"), *args], cwd=workspace, capture_output=True, timeout=60,
                             env=dict(env, **extra))
        err = [line for line in res.stderr.splitlines() if not line.startswith(b"[clawshell receipt]")]
        return res.returncode, res.stdout, err

    assert run({}) == run({"CLAWSHELL_WARM": "0"})


def test_a_large_request_arrives_whole(warm_home: Path, workspace: Path) -> None:
    """A command string and environment far larger than one socket read."""
    _start_server(workspace, warm_home)
    big = "x" * 60_000  # under the policy's max_command_bytes (64 KiB): longer ones ask
    script = f": {big}; echo \"$LANG\" ${{#0}}"
    res = _run(["-c", script, "zero"], workspace, env=dict(os.environ, LANG="C.UTF-8", BIG_UNUSED="y" * 120_000))
    assert res.returncode == 0, res.stderr[-500:]
    assert res.stdout == b"C.UTF-8 4\n"
    assert _served(workspace)


@pytest.mark.parametrize("warm_mode", ["1", "0"])
def test_terminated_while_waiting_for_approval_ends_like_in_process(warm_home: Path, workspace: Path,
                                                                   warm_mode: str) -> None:
    """SIGTERM to a call waiting for a human: the caller dies of SIGTERM, warm or not."""
    _start_server(workspace, warm_home)
    proc = subprocess.Popen([CLAWSHELL, "-c", "git push origin main"], cwd=workspace, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, CLAWSHELL_WARM=warm_mode))
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert b"approval required" in line, line
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM
    assert b"internal error" not in err


def test_a_keeper_holds_the_database_open_and_ends_with_the_server(warm_home: Path, workspace: Path) -> None:
    _start_server(workspace, warm_home)
    assert _run(["-c", "true"], workspace).returncode == 0
    db = str(warm_home / "storage" / "clawshell.db")
    [(server, _home)] = warm.servers(str(warm_home))

    def holders() -> list[int]:
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or warm._parent(int(pid)) != server:
                continue
            try:
                links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            except OSError:
                continue
            if db in links:
                found.append(int(pid))
        return found

    deadline = time.monotonic() + 15
    while not holders() and time.monotonic() < deadline:
        time.sleep(0.1)
    keepers = holders()
    assert len(keepers) == 1, keepers
    warm.stop(str(warm_home))
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{keepers[0]}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{keepers[0]}") or open(f"/proc/{keepers[0]}/stat").read().split()[2] == "Z"


_PATHS = st.lists(st.sampled_from(["/", ".", "..", "a", "b", "//", "///", "x y"]), max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(path=_PATHS)
def test_the_clients_path_functions_match_posixpath(path: str) -> None:
    """The client avoids importing os; its normpath/abspath must give posixpath's answers."""
    from clawshell import _warmclient as wc

    assert wc.normpath(path) == os.path.normpath(path)
    assert wc.abspath(path) == os.path.abspath(path)


@pytest.mark.parametrize("env", [
    {"CLAWSHELL_HOME": "/tmp/x/../y/claw", "HOME": "/home/me"},
    {"CLAWSHELL_HOME": "rel/claw", "HOME": "/home/me"},
    {"CLAWSHELL_HOME": "", "HOME": "/home/me/"},
    {"HOME": "/"},
    {"HOME": "//net/home"},
    {"HOME": "/home/me"},
])
def test_the_clients_home_matches_home_from_env(env: dict[str, str]) -> None:
    from clawshell import _warmclient as wc
    from clawshell.home import Home

    environb = {k.encode(): v.encode() for k, v in env.items()}
    assert wc.home_root(environb) == Home.from_env(env).root
