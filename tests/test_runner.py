"""runner.run: pass-through of bytes and status, hashing, signals, EPIPE, caps, timeouts."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from clawshell import runner
from clawshell.model import LaunchPlan

ENV = (("PATH", "/usr/local/bin:/usr/bin:/bin"), ("LANG", "C.UTF-8"))


def plan(cmd: str, **kw: object) -> LaunchPlan:
    """A LaunchPlan for ``bash -c cmd`` with no sandbox."""
    return LaunchPlan(argv=("bash", "-c", cmd), env=ENV, cwd=kw.pop("cwd", "/tmp"),  # type: ignore[arg-type]
                      layers=("none",), **kw)  # type: ignore[arg-type]


def run_capture(p: LaunchPlan, **kw: object) -> tuple[runner.RunResult, bytes, bytes]:
    """Run with stdout/stderr going to temp files; return result and both outputs."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        res = runner.run(p, out_fd=out.fileno(), err_fd=err.fileno(), **kw)  # type: ignore[arg-type]
        out.seek(0)
        err.seek(0)
        return res, out.read(), err.read()


@pytest.mark.parametrize("cmd,status,stdout,stderr", [
    ("exit 0", 0, b"", b""),
    ("exit 7", 7, b"", b""),
    ("echo out; echo err >&2; exit 255", 255, b"out\n", b"err\n"),
    ("printf '\\x00\\xff\\x01binary'", 0, b"\x00\xff\x01binary", b""),
    ("kill -TERM $$", 128 + signal.SIGTERM, b"", b""),
    ("kill -KILL $$", 128 + signal.SIGKILL, b"", b""),
])
def test_status_and_bytes_pass_through_like_bash(cmd: str, status: int, stdout: bytes, stderr: bytes) -> None:
    res, out, err = run_capture(plan(cmd))
    assert (res.status, out, err) == (status, stdout, stderr)
    assert res.stdout_sha256 == hashlib.sha256(stdout).hexdigest()
    assert res.stderr_sha256 == hashlib.sha256(stderr).hexdigest()
    assert res.layers == ("none",)


@pytest.mark.parametrize("argv,status,message", [
    (("no-such-command-xyz",), 127, b"command not found"),
    (("/etc/hostname",), 126, b"clawshell: /etc/hostname: "),
    (("/no/such/file",), 127, b"No such file or directory"),
])
def test_unrunnable_commands_get_bash_statuses(argv: tuple[str, ...], status: int, message: bytes) -> None:
    res, out, err = run_capture(LaunchPlan(argv=argv, env=ENV, cwd="/", layers=()))
    assert (res.status, out) == (status, b"")
    assert message in err


def test_large_output_on_both_streams_does_not_deadlock() -> None:
    res, out, err = run_capture(plan("head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2; "
                                     "head -c 2000000 /dev/zero"))
    assert (res.status, len(out), len(err)) == (0, 5_000_000, 3_000_000)
    assert res.stdout_sha256 == hashlib.sha256(b"\0" * 5_000_000).hexdigest()


def test_stdin_is_inherited_directly(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"line1\nline2\n")
    fd = os.open(src, os.O_RDONLY)
    try:
        res, out, _ = run_capture(plan("wc -l; test -p /dev/stdin && echo pipe || echo notpipe"), stdin_fd=fd)
    finally:
        os.close(fd)
    assert (res.status, out) == (0, b"2\nnotpipe\n")


class Upper:
    """A filter that upper-cases and holds back the last byte until finish."""

    def __init__(self) -> None:
        self.held = b""

    def feed(self, data: bytes) -> bytes:
        data = self.held + data
        self.held = data[-1:]
        return data[:-1].upper()

    def finish(self) -> bytes:
        tail, self.held = self.held.upper(), b""
        return tail


def test_filters_transform_output_but_hash_covers_raw_stream() -> None:
    res, out, err = run_capture(plan("echo hello; echo world >&2"), stdout_filter=Upper(), stderr_filter=Upper())
    assert (out, err) == (b"HELLO\n", b"WORLD\n")
    assert res.stdout_sha256 == hashlib.sha256(b"hello\n").hexdigest()


def test_closed_stdout_gives_the_child_sigpipe_like_bash() -> None:
    code = textwrap.dedent("""
        import os, sys
        sys.path.insert(0, %r)
        from clawshell import runner
        from clawshell.model import LaunchPlan
        r = runner.run(LaunchPlan(argv=("bash", "-c", "yes; echo after >&2"), env=(("PATH", "/usr/bin:/bin"),),
                                  cwd="/", layers=()))
        sys.stderr.write("STATUS %%d\\n" %% r.status)
    """ % str(Path(runner.__file__).parents[1]))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b"y\ny\ny\ny\ny\n"
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=30) == 0
    assert b"after" in err and b"STATUS 0" in err


def test_output_beyond_cap_is_cut_with_a_marker() -> None:
    res, out, err = run_capture(plan("yes", max_output=10_000))
    assert len(out) == 10_000 and res.truncated
    assert b"clawshell: output truncated at 10000 bytes" in err
    assert res.status == 128 + signal.SIGPIPE


def test_timeout_kills_grandchildren_including_setsid_ones(tmp_path: Path) -> None:
    marker = tmp_path / "pids"
    cmd = (f"sleep 60 & echo $! >> {marker}; setsid bash -c 'echo $$ >> {marker}; sleep 60' & "
           f"(setsid sleep 60 & echo $! >> {marker}; wait) & sleep 60")
    t0 = time.monotonic()
    res, _, err = run_capture(plan(cmd, timeout=1.0))
    assert res.timed_out and res.status == 137 and time.monotonic() - t0 < 10
    assert b"timed out" in err
    pids = [int(x) for x in marker.read_text().split()]
    assert len(pids) == 3
    time.sleep(0.1)
    for p in pids:
        assert not Path(f"/proc/{p}").exists() or Path(f"/proc/{p}/stat").read_text().split()[2] == "Z"


def test_background_leftovers_end_with_the_command(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    t0 = time.monotonic()
    res, out, _ = run_capture(plan(f"setsid sleep 60 & echo $! > {marker}; echo done"))
    assert (res.status, out) == (0, b"done\n") and time.monotonic() - t0 < 5
    pid = int(marker.read_text())
    time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_signals_are_forwarded_to_the_child(sig: int, tmp_path: Path) -> None:
    marker = tmp_path / "got"
    cmd = f"trap 'echo {int(sig)} > {marker}; exit 9' {int(sig)}; echo ready; while :; do sleep 0.05; done"
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(runner.__file__).parents[1])!r})
        from clawshell import runner
        from clawshell.model import LaunchPlan
        r = runner.run(LaunchPlan(argv=("bash", "-c", {cmd!r}), env=(("PATH", "/usr/bin:/bin"),), cwd="/", layers=()))
        sys.exit(r.status)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(sig)
    assert proc.wait(timeout=20) == 9
    assert marker.read_text().strip() == str(int(sig))


def test_on_spawn_gets_the_child_pid() -> None:
    seen: list[int] = []
    res, out, _ = run_capture(plan("echo $$"), on_spawn=seen.append)
    assert res.status == 0 and out == f"{seen[0]}\n".encode()


def test_run_works_from_a_thread_without_signal_forwarding() -> None:
    box: list[int] = []
    t = threading.Thread(target=lambda: box.append(run_capture(plan("exit 4"))[0].status))
    t.start()
    t.join(30)
    assert box == [4]


class HoldAll:
    """A filter that holds everything back until flush() or finish()."""

    def __init__(self) -> None:
        self.buf = b""
        self.flushes = 0

    def feed(self, data: bytes) -> bytes:
        self.buf += data
        return b""

    def flush(self) -> bytes:
        self.flushes += 1
        out, self.buf = self.buf, b""
        return out

    def finish(self) -> bytes:
        out, self.buf = self.buf, b""
        return out


def test_a_quiet_stream_is_flushed_so_prompts_show_before_the_command_ends() -> None:
    r, w = os.pipe()
    got: list[tuple[float, bytes]] = []

    def reader() -> None:
        while chunk := os.read(r, 100):
            got.append((time.monotonic(), chunk))

    t = threading.Thread(target=reader)
    t.start()
    filt = HoldAll()
    t0 = time.monotonic()
    try:
        res = runner.run(plan("printf 'Continue? [y/N] '; sleep 1.5; echo done"), out_fd=w, stdout_filter=filt)
    finally:
        os.close(w)
    t.join(10)
    os.close(r)
    assert res.status == 0
    assert got[0][1] == b"Continue? [y/N] " and got[0][0] - t0 < 1.0
    assert b"".join(c for _, c in got) == b"Continue? [y/N] done\n"


def test_a_prejoined_cgroup_bounds_the_run_and_is_pruned_later(tmp_path: Path) -> None:
    """runner.prejoin_cgroup (a warm spare's move, made while idle): the run adopts it,
    its pids limit holds a fork bomb, the tree dies, and the cgroup goes with its owner."""
    parent = "/sys/fs/cgroup/pids"
    if not (os.path.isfile(os.path.join(parent, "cgroup.procs")) and os.access(parent, os.W_OK)):
        pytest.skip("no writable cgroup v1 pids hierarchy on this host")
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(Path(runner.__file__).parents[1])!r})
        from clawshell import runner
        from clawshell.model import LaunchPlan
        path = runner.prejoin_cgroup({parent!r})
        assert path, "prejoin failed"
        print(path, flush=True)
        plan = LaunchPlan(argv=("bash", "-c", ":(){{ :|:& }};: ; sleep 30"), env=(("PATH", "/usr/bin:/bin"),),
                          cwd="/", layers=(), preexec=(("cgroup", ({parent!r}, 64)),), timeout=4.0)
        r = runner.run(plan)
        print(open(os.path.join(path, "pids.max")).read().strip(), flush=True)
        print(r.status, r.timed_out, flush=True)
    """)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert time.monotonic() - t0 < 30
    lines = proc.stdout.decode().split("\n")
    path, limit = lines[0], lines[1]
    assert os.path.dirname(path) == parent and os.path.basename(path).startswith("clawshell-"), path
    assert limit == "65"  # the plan's 64, plus the adopting process itself
    assert b"Resource temporarily unavailable" in proc.stderr or b"fork" in proc.stderr, proc.stderr[-500:]
    time.sleep(0.3)
    leftovers = subprocess.run(["pgrep", "-c", "-f", r"^bash -c :\(\)"], capture_output=True).stdout.strip()
    assert leftovers in (b"0", b"")
    # its owner is gone: the next run under this parent prunes it
    runner._prune_cgroups(parent)
    assert not os.path.exists(path)
