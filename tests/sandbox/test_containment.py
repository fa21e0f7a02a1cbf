"""Real-kernel containment: each attack runs in a sandboxed child, each denial is proven
by its side effect on the host (the file was not written, the process is still alive...).

Every case runs under both layer combinations that matter: ``landlock`` (Landlock +
seccomp + no_new_privs + rlimits + dropped capabilities, no namespaces) and ``bwrap``
(bwrap namespaces + the same in-child layers).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

import pytest

from clawshell import sandbox

from .conftest import Box


def test_layers_really_in_force_are_reported(box: Box) -> None:
    res = box.run("grep -E '^(NoNewPrivs|Seccomp|CapEff|CapPrm):' /proc/self/status")
    assert res.status == 0
    status = dict(line.split(":\t") for line in res.out.decode().splitlines())
    assert status == {"NoNewPrivs": "1", "Seccomp": "2", "CapEff": "0000000000000000",
                      "CapPrm": "0000000000000000"}
    expected = (("bwrap",) if box.mode == "bwrap" else ()) + ("landlock", "seccomp", "no_new_privs", "rlimits")
    assert res.result.layers == expected


def test_rlimits_and_capability_sets_are_applied(box: Box) -> None:
    res = box.run("ulimit -S -n; ulimit -H -n; ulimit -c; ulimit -f; ulimit -v; "
                  "grep -E '^Cap(Inh|Bnd|Amb):' /proc/self/status")
    assert res.status == 0, res.text
    lines = res.out.decode().splitlines()
    # nofile soft/hard 16384, core 0, fsize 16 GiB and address space 64 GiB in KiB
    assert lines[:5] == ["16384", "16384", "0", str(16 << 20), str(64 << 20)]
    caps = dict(line.split(":\t") for line in lines[5:])
    assert caps["CapInh"] == caps["CapAmb"] == "0000000000000000"
    if box.mode == "landlock":
        # Inside bwrap the helper has no CAP_SETPCAP left to empty the bounding set
        # with; no_new_privs keeps execve from granting anything from it.
        assert caps["CapBnd"] == "0000000000000000"


@pytest.mark.parametrize("action", [
    "echo pwned > {outside}/new.txt",
    "echo pwned >> {outside}/target.txt",
    "rm {outside}/target.txt",
    "mv {outside}/target.txt {outside}/moved.txt",
    "mv {outside}/target.txt {ws}/stolen.txt",
    "python3 -c \"open('{outside}/target.txt', 'w').write('pwned')\"",
    "touch {home}/.bashrc-new",
    "echo pwned >> {home}/.profile",
])
def test_writes_deletes_and_renames_outside_the_workspace_fail(box: Box, action: str) -> None:
    res = box.run(action.format(outside=box.outside, ws=box.ws, home=box.home))
    assert res.status != 0
    assert sorted(p.name for p in box.outside.iterdir()) == ["target.txt"]
    assert (box.outside / "target.txt").read_text() == "original\n"
    assert not (box.ws / "stolen.txt").exists()
    assert not (box.home / ".bashrc-new").exists()
    assert (box.home / ".profile").read_text() == "export FROM_PROFILE=profile-was-read\n"


def test_workspace_files_and_private_tmp_are_writable(box: Box) -> None:
    (box.ws / "src").mkdir()
    (box.ws / "README").write_text("r\n")
    res = box.run("mkdir -p src/pkg && echo data > src/pkg/a.txt && mv src/pkg/a.txt src/b.txt && cat src/b.txt "
                  "&& echo more >> README && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && rm src/b.txt "
                  "&& rmdir src/pkg && echo ok")
    assert (res.status, res.out) == (0, b"data\nt\nok\n"), res.text
    assert (box.ws / "README").read_text() == "r\nmore\n"


def test_new_entries_at_the_workspace_root(box: Box) -> None:
    res = box.run("echo new > new.txt && mkdir newdir && echo ok")
    if box.mode == "landlock":
        # Landlock alone: a right on the workspace root would reach .git/hooks too, so
        # the root itself is read-only while protected paths exist or may be created
        # (docs/threat-model.md); existing entries stay fully writable.
        assert res.status != 0 and not (box.ws / "new.txt").exists()
    else:
        assert (res.status, res.out) == (0, b"ok\n"), res.text
        assert (box.ws / "new.txt").read_text() == "new\n"


def test_tmp_outside_the_private_temp_dir_is_not_writable_on_the_host(box: Box) -> None:
    name = f"/tmp/clawshell-escape-{uuid.uuid4().hex}"
    res = box.run(f"echo pwned > {name}; echo rc=$?; echo \"$TMPDIR\"")
    try:
        assert not os.path.exists(name)
        lines = res.out.decode().split()
        assert lines[0] != "rc=0" or box.mode == "bwrap"  # bwrap: the write lands in its private tmpfs
        tmpdir = lines[-1]
        assert tmpdir == "/tmp" if box.mode == "bwrap" else tmpdir.startswith("/tmp/clawshell-")
    finally:
        if os.path.exists(name):
            os.unlink(name)


def test_private_temp_dir_is_removed_after_the_run(box: Box) -> None:
    res = box.run("echo x > \"$TMPDIR/leftover\"; echo \"$TMPDIR\"")
    tmpdir = res.out.decode().strip()
    assert res.status == 0
    if box.mode == "landlock":
        assert tmpdir.startswith("/tmp/clawshell-") and not os.path.exists(tmpdir)
    else:
        assert not os.path.exists("/tmp/leftover")


@pytest.mark.parametrize("target", ["~/.ssh/id_rsa", "/proc/self/root{home}/.ssh/id_rsa", "/etc/shadow"])
def test_forbidden_paths_cannot_be_read(box: Box, target: str) -> None:
    path = target.replace("~", str(box.home)).format(home=box.home)
    res = box.run(f"cat {path}; ls {box.home}/.ssh")
    # bwrap shows an empty directory (or nothing) where Landlock answers EACCES.
    assert b"FAKE-PRIVATE-KEY" not in res.out + res.err
    assert b"id_rsa\n" not in res.out


def test_allowed_etc_entries_are_readable_but_not_the_rest(box: Box) -> None:
    res = box.run("id -un; test -r /etc/ld.so.cache && echo cache; cat /etc/ssl/private/* 2>/dev/null; "
                  "ls /etc/ssl/private 2>/dev/null; cat /etc/fstab 2>/dev/null || echo no-fstab")
    assert res.out == b"root\ncache\nno-fstab\n" if os.geteuid() == 0 else b"cache\nno-fstab\n" in res.out


def test_symlink_in_workspace_cannot_write_or_read_through_to_outside(box: Box) -> None:
    (box.ws / "link-out").symlink_to(box.outside / "target.txt")
    (box.ws / "link-key").symlink_to(box.home / ".ssh" / "id_rsa")
    res = box.run("echo pwned > link-out; echo pwned >> link-out; cat link-key")
    assert res.status != 0
    assert (box.outside / "target.txt").read_text() == "original\n"
    assert b"FAKE-PRIVATE-KEY" not in res.out + res.err


def test_hardlink_tricks_fail(box: Box) -> None:
    res = box.run(f"ln {box.outside}/target.txt hl-out; echo pwned >> hl-out; "
                  f"ln {box.home}/.ssh/id_rsa hl-key; cat hl-key")
    assert (box.outside / "target.txt").read_text() == "original\n"
    assert b"FAKE-PRIVATE-KEY" not in res.out + res.err
    assert not (box.ws / "hl-key").exists()


def test_proc_pid_cwd_and_environ_of_a_host_process_are_out_of_reach(box: Box) -> None:
    (box.outside / "secret.txt").write_text("HOST-CWD-SECRET\n")
    proc = subprocess.Popen(["sleep", "60"], cwd=box.outside, env={"HOST_ENV_SECRET": "HOST-ENV-SECRET-42"})
    try:
        res = box.run(f"cat /proc/{proc.pid}/cwd/secret.txt; cat /proc/{proc.pid}/environ; "
                      f"echo pwned > /proc/{proc.pid}/cwd/new.txt; ls /proc/{proc.pid}/root/ >/dev/null && echo listed")
        assert b"HOST-CWD-SECRET" not in res.out + res.err
        assert b"HOST-ENV-SECRET" not in res.out + res.err
        assert b"listed" not in res.out
        assert not (box.outside / "new.txt").exists()
    finally:
        proc.kill()
        proc.wait()


def test_remount_of_root_fails_and_nothing_reaches_the_host(box: Box) -> None:
    canary = box.outside / "remount-canary"
    res = box.run(f"mount -o remount,bind,rw / ; mount -o remount,rw / ; echo pwned > {canary}; "
                  f"mount -t tmpfs none {box.ws} && echo mounted")
    assert not canary.exists()
    assert b"mounted" not in res.out
    assert not os.path.ismount(box.ws)


def _listener() -> tuple[socket.socket, int, list[bool]]:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(20)
    hits: list[bool] = []

    def accept() -> None:
        try:
            conn, _ = srv.accept()
            hits.append(True)
            conn.close()
        except OSError:
            pass

    threading.Thread(target=accept, daemon=True).start()
    return srv, srv.getsockname()[1], hits


@pytest.mark.parametrize("network", [False, True])
def test_tcp_connect_to_loopback_listener_follows_the_network_switch(box: Box, network: bool) -> None:
    if network and box.mode == "bwrap" and os.environ.get("CLAWSHELL_TEST_NO_HOST_NET"):
        pytest.skip("host network namespace not shared in this environment")
    srv, port, hits = _listener()
    try:
        res = box.run(f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected", network=network)
        time.sleep(0.1)
        if network:
            assert res.out == b"connected\n" and hits == [True], res.text
        else:
            assert res.out == b"" and hits == [], res.text
    finally:
        srv.close()


@pytest.mark.parametrize("family", ["socket.AF_INET, socket.SOCK_DGRAM", "socket.AF_INET6, socket.SOCK_STREAM",
                                    "socket.AF_NETLINK, socket.SOCK_RAW", "socket.AF_PACKET, socket.SOCK_RAW"])
def test_non_unix_sockets_are_refused_with_the_network_off(box: Box, family: str) -> None:
    res = box.run(f"python3 -c 'import socket; socket.socket({family}); print(\"made\")'")
    assert b"made" not in res.out and b"PermissionError" in res.err, res.text


def test_kill_of_a_process_outside_the_sandbox_fails(box: Box) -> None:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        res = box.run(f"kill -TERM {proc.pid}; kill -KILL {proc.pid}; echo rc=$?")
        time.sleep(0.1)
        assert proc.poll() is None, res.text
        assert b"rc=0" not in res.out
    finally:
        proc.kill()
        proc.wait()


PTRACE_CHILD = """
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    signal.pause()
    os._exit(0)
r = libc.ptrace(16, pid, 0, 0)  # PTRACE_ATTACH own child
err = ctypes.get_errno()
os.kill(pid, 9)
print("ptrace", r, err)
"""

IO_URING = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
params = (ctypes.c_char * 120)()
r = libc.syscall(425, 8, params)
print("io_uring", r, ctypes.get_errno())
"""

TIOCSTI = """
import fcntl, os, pty
m, s = pty.openpty()
try:
    fcntl.ioctl(s, 0x5412, b"x")
    print("tiocsti ok")
except OSError as e:
    print("tiocsti", e.errno)
"""


@pytest.mark.parametrize("code,expect", [
    (PTRACE_CHILD, b"ptrace -1 1\n"),
    (IO_URING, b"io_uring -1 1\n"),
    (TIOCSTI, b"tiocsti 1\n"),
])
def test_ptrace_io_uring_and_tiocsti_fail(box: Box, code: str, expect: bytes) -> None:
    res = box.run("", argv=["python3", "-c", code])
    assert res.out == expect, res.text


@pytest.mark.parametrize("cmd", ["unshare -U true", "unshare -m true", "unshare -n true",
                                 "mount -t tmpfs none /mnt", "mount --bind . ."])
def test_namespace_and_mount_commands_fail(box: Box, cmd: str) -> None:
    res = box.run(f"{cmd} && echo succeeded")
    assert res.status != 0 and b"succeeded" not in res.out, res.text


@pytest.mark.parametrize("setup", ["none", "git-init", "empty-git-dir"])
def test_git_hooks_cannot_be_created_even_when_git_did_not_exist(box: Box, setup: str) -> None:
    if setup == "git-init":
        subprocess.run(["git", "init", "-q", str(box.ws)], check=True)
    elif setup == "empty-git-dir":
        (box.ws / ".git").mkdir()
    hooks_before = sorted(p.name for p in (box.ws / ".git" / "hooks").glob("*")) if setup == "git-init" else []
    config_before = (box.ws / ".git" / "config").read_text() if setup == "git-init" else None
    res = box.run("mkdir -p .git/hooks; echo 'echo pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
                  "echo '[core] hooksPath = /tmp/x' >> .git/config; mv .git .git-old; rm -rf .git/hooks; "
                  "rm -rf .git; echo 'gitdir: /tmp/evil' > .git")
    assert not (box.ws / ".git" / "hooks" / "pre-commit").exists(), res.text
    assert not (box.ws / ".git-old").exists()
    if setup == "none":
        assert not os.path.lexists(box.ws / ".git"), res.text  # the mount point is gone too
    else:
        assert (box.ws / ".git").is_dir() and not (box.ws / ".git").is_symlink()
    if setup == "git-init":
        assert sorted(p.name for p in (box.ws / ".git" / "hooks").glob("*")) == hooks_before
        assert (box.ws / ".git" / "config").read_text() == config_before


@pytest.mark.parametrize("name", [".clawshell/security-policy.toml", ".envrc", ".bashrc", ".zshrc"])
def test_existing_protected_files_are_read_only(box: Box, name: str) -> None:
    path = box.ws / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("original\n")
    res = box.run(f"echo pwned >> {name}; cat {name}; rm -f {name}; mv {name} moved; "
                  f"mv {name.split('/')[0]} renamed-away")
    assert path.read_text() == "original\n"
    assert b"original" in res.out
    assert not (box.ws / "renamed-away").exists()


def test_clawshell_home_is_hidden(box: Box) -> None:
    (box.clawhome / "security").mkdir(parents=True, exist_ok=True)
    (box.clawhome / "security" / "receipt.key").write_text("RECEIPT-KEY-SECRET\n")
    res = box.run(f"cat {box.clawhome}/security/receipt.key; echo x > {box.clawhome}/security/new")
    assert b"RECEIPT-KEY-SECRET" not in res.out + res.err
    assert not (box.clawhome / "security" / "new").exists()


def test_env_secrets_are_not_visible_and_are_reported_for_masking(box: Box) -> None:
    token = "ghp_" + "a1B2" * 9
    env = {"GITHUB_TOKEN": token, "MY_API_KEY": "sk-test-1234567890", "LANG": "C.UTF-8", "EDITOR": "vim"}
    res = box.run("env", env=env)
    names = {line.split("=", 1)[0] for line in res.out.decode().splitlines()}
    assert token.encode() not in res.out and b"sk-test" not in res.out
    assert "LANG" in names and "EDITOR" not in names and "GITHUB_TOKEN" not in names
    secrets = sandbox.scrubbed_secrets({**os.environ, **env}, box.policy)
    assert token.encode() in secrets and b"sk-test-1234567890" in secrets


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_timeout_kills_grandchildren_including_setsid_ones(box: Box) -> None:
    marker = box.ws / "pids"
    marker.write_text("")
    # A duration of its own: the host-wide pgrep below must not see other tests' sleeps.
    nap = f"300.{os.getpid()}{len(box.mode)}"
    cmd = (f"sleep {nap} & echo $! >> pids; setsid sleep {nap} & echo $! >> pids; "
           f"(setsid bash -c 'sleep {nap} & echo $! >> pids; wait' &) ; sleep {nap}")
    t0 = time.monotonic()
    res = box.run(cmd, timeout=1.5)
    assert res.result.timed_out and res.status == 137
    assert time.monotonic() - t0 < 15
    time.sleep(0.2)
    pids = [int(x) for x in marker.read_text().split()]
    assert len(pids) == 3
    if box.mode == "bwrap":
        # pids are from inside the PID namespace; the whole namespace is gone
        host = subprocess.run(["pgrep", "-f", f"sleep {nap}"], capture_output=True).stdout.split()
        assert [p for p in host if _alive(int(p))] == []
    else:
        assert [p for p in pids if _alive(p)] == []


def test_fork_bomb_ends_within_the_limit(box: Box) -> None:
    # A name of its own, so that the leftover count below (and the fork-bomb tests of
    # other modules running alongside) only ever see this test's processes.
    bomb = f"bomb_{uuid.uuid4().hex[:12]}"
    t0 = time.monotonic()
    res = box.run(f"{bomb}(){{ {bomb}|{bomb}& }};{bomb} ; sleep 30", timeout=6,
                  limits=(("nofile", 1024), ("core", 0), ("pids", 256)))
    elapsed = time.monotonic() - t0
    assert elapsed < 20, elapsed
    # Bounded by the pids limit (fork fails) or, without a pids cgroup, by the watchdog.
    assert (b"Resource temporarily unavailable" in res.err or b"process limit exceeded" in res.err
            or b"Cannot fork" in res.err), res.text[-2000:]
    time.sleep(0.3)
    leftovers = subprocess.run(["pgrep", "-c", "-f", f"bash -c {bomb}"], capture_output=True).stdout.strip()
    assert leftovers in (b"0", b"")


def test_output_beyond_the_cap_is_cut_with_a_marker(box: Box) -> None:
    from dataclasses import replace

    res = box.run("yes", policy=replace(box.policy, max_output_bytes=5000))
    assert len(res.out) == 5000 and res.result.truncated
    assert b"output truncated at 5000 bytes" in res.err


# ----------------------------------------------------------------------------- ordinary work


def test_python_and_git_work(box: Box) -> None:
    (box.ws / "repo").mkdir()
    res = box.run("python3 -c 'import json, ssl, sqlite3; print(\"py-ok\")' && git init -q repo && cd repo "
                  "&& git -c user.email=a@b -c user.name=a commit -q --allow-empty -m init && git log --oneline "
                  "| wc -l")
    assert (res.status, res.out) == (0, b"py-ok\n1\n"), res.text


def test_git_commit_in_a_protected_repo(box: Box) -> None:
    subprocess.run(["git", "init", "-q", str(box.ws)], check=True)
    (box.ws / "a.txt").write_text("a\n")
    res = box.run("git add a.txt && git -c user.email=a@b -c user.name=a commit -q -m one && git log --oneline | wc -l")
    if box.mode == "landlock":
        # Landlock alone cannot keep .git/hooks read-only while letting git create
        # index.lock beside it: the workspace root and .git itself stay read-only
        # (docs/threat-model.md).
        assert res.status != 0
    else:
        assert (res.status, res.out) == (0, b"1\n"), res.text


def test_login_shell_reads_startup_files_read_only(box: Box) -> None:
    res = box.run("echo \"$FROM_PROFILE\"; echo pwned >> ~/.profile", argv=None)
    assert res.out == b"\n"
    res = box.run("", argv=["bash", "-l", "-c", "echo \"$FROM_PROFILE\"; echo pwned >> ~/.profile"])
    assert res.out == b"profile-was-read\n", res.text
    assert (box.home / ".profile").read_text() == "export FROM_PROFILE=profile-was-read\n"


def test_toolchains_under_home_on_path_stay_usable(box: Box) -> None:
    tool = box.home / ".mytool" / "bin"
    tool.mkdir(parents=True)
    (tool / "hello-tool").write_text("#!/bin/sh\necho tool-ran\n")
    (tool / "hello-tool").chmod(0o755)
    path = f"{tool}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    res = box.run("hello-tool; echo pwned > \"$(dirname \"$(command -v hello-tool)\")/x\"", env={"PATH": path})
    assert b"tool-ran\n" in res.out, res.text
    assert not (tool / "x").exists()


def test_package_caches_are_writable_only_where_the_policy_says(box: Box, make_box: object) -> None:
    from dataclasses import replace

    pol = replace(box.policy, writable_caches=("~/.cache/pip",))
    res = box.run("echo c > ~/.cache/pip/entry && echo pip-ok; echo c > ~/.cache/other 2>/dev/null || echo other-denied",
                  policy=pol)
    assert res.out == b"pip-ok\nother-denied\n", res.text
    assert (box.home / ".cache" / "pip" / "entry").read_text() == "c\n"
    assert not (box.home / ".cache" / "other").exists()


def test_agent_bookkeeping_file_is_writable_and_nothing_else_in_tmp(box: Box) -> None:
    tag = uuid.uuid4().hex[:12]
    book = f"/tmp/claude-{tag}-cwd"
    other = f"/tmp/claude-{tag}-other"
    try:
        res = box.run(f"pwd -P >| {book}; echo pwned > {other}", extra_writable=(book,))
        assert Path(book).read_text() == f"{box.ws}\n", res.text
        assert not os.path.exists(other)
    finally:
        for p in (book, other):
            if os.path.exists(p):
                os.unlink(p)


def test_dev_null_stdout_and_stderr_reopen_work(box: Box) -> None:
    res = box.run("echo a > /dev/null; echo b > /dev/stdout; echo c > /dev/stderr; head -c 4 /dev/urandom | wc -c")
    assert (res.status, res.out, res.err) == (0, b"b\n4\n", b"c\n"), res.text


def test_signals_inside_the_sandbox_still_work(box: Box) -> None:
    res = box.run("sleep 30 & kill $!; wait $!; echo status=$?")
    assert res.out == b"status=143\n", res.text


def test_exit_status_passes_through(box: Box) -> None:
    assert box.run("exit 42").status == 42
    assert box.run("kill -SEGV $$").status == 128 + signal.SIGSEGV


def test_a_symlinked_protected_path_cannot_be_replaced(box: Box) -> None:
    subprocess.run(["git", "init", "-q", str(box.ws)], check=True)
    real_hooks = box.ws / "hooks-real"
    (box.ws / ".git" / "hooks").rename(real_hooks)
    (box.ws / ".git" / "hooks").symlink_to(real_hooks)
    res = box.run("rm -f .git/hooks; mkdir -p .git/hooks; echo 'echo pwned' > .git/hooks/pre-commit; "
                  "echo pwned > hooks-real/pre-commit")
    assert (box.ws / ".git" / "hooks").is_symlink(), res.text
    assert not (real_hooks / "pre-commit").exists()


def test_placeholder_left_by_a_killed_run_is_reused_and_removed(make_box: Callable[[str], Box]) -> None:
    box = make_box("bwrap")  # mount points for missing protected paths exist only with bwrap
    (box.ws / ".git").mkdir(mode=0o500)
    os.chmod(box.ws / ".git", 0o500)
    res = box.run("mkdir -p .git/hooks && echo created")
    assert b"created" not in res.out
    assert not os.path.lexists(box.ws / ".git")


def test_sigpipe_has_its_default_disposition_in_the_command(box: Box) -> None:
    res = box.run("grep SigIgn /proc/self/status; yes | head -c 4; s=${PIPESTATUS[0]}; echo; echo $s")
    ignored = int(res.out.split()[1], 16)
    assert ignored & (1 << (signal.SIGPIPE - 1)) == 0, res.text
    assert res.out.split()[-1] == b"141" and res.err == b"", res.text


def test_unused_bookkeeping_file_is_not_left_behind(box: Box) -> None:
    book = f"/tmp/claude-{uuid.uuid4().hex[:12]}-cwd"
    try:
        res = box.run("exit 3", extra_writable=(book,))
        assert res.status == 3 and not os.path.exists(book)
    finally:
        if os.path.exists(book):
            os.unlink(book)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_signals_reach_the_sandboxed_command(box: Box, sig: int) -> None:
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(Path(sandbox.__file__).parents[2])!r})
        from clawshell import runner, sandbox
        from clawshell.model import Decision, EvalContext, Policy, RiskLevel, Verdict
        from clawshell.sandbox.probe import probe_uncached
        pol = Policy(sandbox={box.mode!r})
        ctx = EvalContext(cwd={str(box.ws)!r}, workspace={str(box.ws)!r}, home={str(box.home)!r},
                          clawshell_home={str(box.clawhome)!r})
        v = Verdict(decision=Decision.ALLOW, score=0, risk=RiskLevel.LOW, evidence=())
        spec = sandbox.build_spec(pol, ctx, v, os.environ, [])
        cmd = "trap 'echo caught-{int(sig)}; exit 7' {int(sig)}; echo ready; while :; do sleep 0.05; done"
        plan = sandbox.plan(spec, ["bash", "-c", cmd], probe_uncached())
        sys.exit(runner.run(plan).status)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            env=dict(os.environ, HOME=str(box.home), CLAWSHELL_HOME=str(box.clawhome)))
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    time.sleep(0.1)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert (out, proc.returncode) == (f"caught-{int(sig)}\n".encode(), 7), err
