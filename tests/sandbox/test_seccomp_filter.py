"""The seccomp filter on its own: compiled and cached once, and each denial traced to it.

Every call runs twice in a forked child: once with only no_new_privs (the control,
as root it mostly succeeds or fails for another reason) and once with the filter
loaded on top.  The filter's answer (EPERM, ENOSYS for clone3) is only attributed to
it when the control answered differently.
"""

from __future__ import annotations

import errno
import os
import platform
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from clawshell import runner
from clawshell.model import LaunchPlan
from clawshell.sandbox import seccomp

from .conftest import host_probe

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="raw syscall numbers below are x86-64")

PRELUDE = """
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(*a):
    r = libc.syscall(*[ctypes.c_long(x) if isinstance(x, int) else x for x in a])
    return r, (ctypes.get_errno() if r < 0 else 0)
"""

CASES = {
    "unshare(CLONE_NEWUTS)": "r, e = sc(272, 0x04000000)",
    "setns(-1)": "r, e = sc(308, 99, 0)",
    "ptrace(ATTACH own child)": textwrap.dedent("""
        pid = os.fork()
        if pid == 0:
            import time; time.sleep(5); os._exit(0)
        r, e = sc(101, 16, pid, 0, 0)
        os.kill(pid, 9)"""),
    "process_vm_readv": "r, e = sc(310, os.getpid(), 0, 0, 0, 0, 0)",
    "io_uring_setup": "p = (ctypes.c_char * 120)(); r, e = sc(425, 4, p)",
    "bpf": "r, e = sc(321, 5, 0, 0)",
    "perf_event_open": "r, e = sc(298, 0, 0, -1, -1, 0)",
    "keyctl": "r, e = sc(250, 0, 0, 0, 0, 0)",
    "add_key": "r, e = sc(248, 0, 0, 0, 0, 0)",
    "userfaultfd": "r, e = sc(323, 0)",
    "kexec_load": "r, e = sc(246, 0, 0, 0, 0)",
    "init_module": "r, e = sc(175, 0, 0, 0)",
    "reboot(bad magic)": "r, e = sc(169, 0, 0, 0, 0)",
    "open_by_handle_at": "r, e = sc(304, -1, 0, 0)",
    "fsopen": "r, e = sc(430, ctypes.c_char_p(b'tmpfs'), 0)",
    "open_tree": "r, e = sc(428, -100, ctypes.c_char_p(b'/'), 0)",
    "clone(CLONE_NEWUSER)": textwrap.dedent("""
        r, e = sc(56, 0x10000000 | 17, 0, 0, 0, 0)
        if r == 0:
            os._exit(0)
        if r > 0:
            os.waitpid(r, 0)"""),
    "clone3": "r, e = sc(435, 0, 0)",
    "socket(AF_INET)": "r, e = sc(41, 2, 1, 0)",
    "socket(AF_NETLINK)": "r, e = sc(41, 16, 3, 0)",
    "TIOCSTI": textwrap.dedent("""
        import pty
        m, s = pty.openpty()
        r, e = sc(16, s, 0x5412, ctypes.c_char_p(b'x'))"""),
    "TIOCSTI high bits": textwrap.dedent("""
        import pty
        m, s = pty.openpty()
        r, e = sc(16, s, 0x100005412, ctypes.c_char_p(b'x'))"""),
}

EXPECTED = {name: errno.EPERM for name in CASES}
EXPECTED["clone3"] = errno.ENOSYS


def _run(code: str, steps: tuple) -> tuple[int, int]:
    script = PRELUDE + code + "\nprint(r, e)\n"
    plan = LaunchPlan(argv=(sys.executable, "-I", "-c", script), env=(("PATH", "/usr/bin:/bin"),), cwd="/",
                      layers=(), preexec=steps)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        res = runner.run(plan, out_fd=out.fileno(), err_fd=err.fileno())
        out.seek(0)
        err.seek(0)
        text = out.read().decode()
        assert res.status == 0, err.read().decode()
    r, e = text.split()
    return int(r), int(e)


@pytest.fixture(scope="module")
def bpf(tmp_path_factory: pytest.TempPathFactory) -> str:
    if not host_probe().seccomp:
        pytest.skip("seccomp filters unavailable: " + "; ".join(host_probe().notes))
    return seccomp.bpf_path(str(tmp_path_factory.mktemp("cache")), seccomp.FilterOptions(network=False))


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_denial_comes_from_the_filter(name: str, bpf: str) -> None:
    if os.geteuid() != 0 and name.startswith(("unshare", "TIOCSTI", "clone(")):
        pytest.skip("the control needs root to tell the filter apart from missing privileges")
    control = _run(CASES[name], (("no_new_privs", None),))
    filtered = _run(CASES[name], (("no_new_privs", None), ("seccomp", bpf)))
    assert filtered == (-1, EXPECTED[name])
    assert control != filtered, f"{name}: control gave the same answer, the test proves nothing"


@pytest.mark.parametrize("options,code,allowed", [
    (seccomp.FilterOptions(network=True), CASES["socket(AF_INET)"], True),
    (seccomp.FilterOptions(network=False), "r, e = sc(41, 1, 1, 0)", True),           # AF_UNIX
    (seccomp.FilterOptions(deny_unix_sockets=True), "r, e = sc(41, 1, 1, 0)", False),
    (seccomp.FilterOptions(deny_unix_sockets=True),
     "fds = (ctypes.c_int * 2)(); r, e = sc(53, 1, 1, 0, fds)", True),               # socketpair
    (seccomp.FilterOptions(), "r, e = sc(56, 17, 0, 0, 0, 0)\nif r == 0: os._exit(0)\nif r > 0: os.waitpid(r, 0)",
     True),                                                                           # plain fork via clone
])
def test_filter_variants(options: seccomp.FilterOptions, code: str, allowed: bool, tmp_path: Path) -> None:
    if not host_probe().seccomp:
        pytest.skip("seccomp filters unavailable")
    path = seccomp.bpf_path(str(tmp_path), options)
    r, e = _run(code, (("no_new_privs", None), ("seccomp", path)))
    assert (r >= 0) is allowed, (r, e)


def test_program_is_compiled_once_and_cached_per_definition(tmp_path: Path) -> None:
    a = seccomp.bpf_path(str(tmp_path), seccomp.FilterOptions())
    mtime = os.stat(a).st_mtime_ns
    assert seccomp.bpf_path(str(tmp_path), seccomp.FilterOptions()) == a
    assert os.stat(a).st_mtime_ns == mtime
    b = seccomp.bpf_path(str(tmp_path), seccomp.FilterOptions(network=True))
    c = seccomp.bpf_path(str(tmp_path), seccomp.FilterOptions(deny_unix_sockets=True))
    assert len({a, b, c}) == 3
    for p in (a, b, c):
        assert os.path.getsize(p) % 8 == 0 and os.path.getsize(p) > 0
        assert Path(p).name.startswith(f"seccomp-{platform.machine()}-")


def test_a_corrupt_cache_entry_is_rebuilt(tmp_path: Path) -> None:
    a = seccomp.bpf_path(str(tmp_path), seccomp.FilterOptions())
    Path(a).write_bytes(b"123")
    assert seccomp.bpf_path(str(tmp_path), seccomp.FilterOptions()) == a
    assert os.path.getsize(a) % 8 == 0 and os.path.getsize(a) > 8


def test_hot_path_does_not_import_pyseccomp(tmp_path: Path) -> None:
    seccomp.bpf_path(str(tmp_path), seccomp.FilterOptions())
    code = textwrap.dedent(f"""
        import sys
        from clawshell.sandbox import seccomp
        seccomp.bpf_path({str(tmp_path)!r}, seccomp.FilterOptions())
        print("pyseccomp" in sys.modules)
    """)
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "False\n"
