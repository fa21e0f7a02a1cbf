"""The drop-in shell against real bash: same stdout, stderr and status for every
invocation shape agents use, signals, binary data, stdin, multi-call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import CLAWSHELL

BASH = "/bin/bash"


@pytest.fixture
def quiet_home(clawhome: Path) -> Path:
    """A home whose policy emits no receipt line, so stderr can be compared with bash's."""
    (clawhome / "config").mkdir(parents=True)
    (clawhome / "config" / "policy.toml").write_text('[receipts]\nemit = "none"\n')
    return clawhome


def both(args: list[str], workspace: Path, *, input: bytes | None = None,
         env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    """Run ``args`` under real bash and under clawshell in ``workspace``."""
    full = dict(os.environ, **(env or {}))
    full["CLAWSHELL_CWD"] = str(workspace)
    # Real bash is started with clawshell's argv[0] so that $0 and messages agree.
    real = subprocess.run([CLAWSHELL, *args], executable=BASH, input=input, cwd=workspace, env=full,
                          capture_output=True, timeout=60)
    claw = subprocess.run([CLAWSHELL, *args], input=input, cwd=workspace, env=full, capture_output=True,
                          timeout=60)
    return real, claw


SHAPES = [
    ["-c", "echo hi; echo err >&2; exit 3"],
    ["-c", 'echo "$0|$1|$2|$#"', "zero", "one", "two"],
    ["-c", 'echo "$0"'],
    ["-lc", "echo login"],
    ["-cl", "echo login"],
    ["-l", "-c", "echo login"],
    ["-c", "-l", "echo claude-order"],
    ["--login", "-c", "echo x"],
    ["--norc", "--noprofile", "-c", "echo x"],
    ["-e", "-c", "false; echo not-reached"],
    ["-u", "-c", 'echo "$UNSET_VARIABLE_X"'],
    ["-x", "-c", "echo traced"],
    ["-o", "pipefail", "-c", "false | true"],
    ["+H", "-c", "echo 'a!b'"],
    ["-c", 'printf "%s\\n" "$@"', "--", "a b", "c"],
    ["-c", "exit 255"],
    ["-c", "printf 'no newline'"],
    ["-c", "for i in 1 2 3; do echo $i; done | tac"],
    ["-c", "cd sub && pwd -P | sed 's|.*/||'"],
]


@pytest.mark.parametrize("args", SHAPES, ids=[" ".join(a) for a in SHAPES])
def test_invocation_shape_matches_real_bash(args: list[str], workspace: Path, quiet_home: Path) -> None:
    (workspace / "sub").mkdir()
    real, claw = both(args, workspace)
    assert (claw.stdout, claw.stderr, claw.returncode) == (real.stdout, real.stderr, real.returncode)


def test_interactive_login_probe_prints_only_the_payload(workspace: Path, quiet_home: Path) -> None:
    # Goose's PATH probe: `-l -i -c 'echo $PATH'` with no terminal; it reads the last line.
    real, claw = both(["-l", "-i", "-c", "echo payload"], workspace)
    assert claw.returncode == real.returncode == 0
    assert claw.stdout.splitlines()[-1] == real.stdout.splitlines()[-1] == b"payload"


@pytest.mark.parametrize("args,script", [
    (["-s"], b"echo from-stdin; echo $#\n"),
    (["-s", "a", "b"], b'echo "$1-$2"\n'),
    ([], b"echo no-args; exit 4\n"),
])
def test_script_on_stdin(args: list[str], script: bytes, workspace: Path, quiet_home: Path) -> None:
    real, claw = both(args, workspace, input=script)
    assert (claw.stdout, claw.returncode) == (real.stdout, real.returncode)


def test_stdin_passes_through_byte_for_byte(workspace: Path, quiet_home: Path) -> None:
    data = bytes(range(256)) * 4096
    real, claw = both(["-c", "cat"], workspace, input=data)
    assert claw.stdout == real.stdout == data
    assert claw.returncode == 0


def test_binary_output_passes_through(workspace: Path, quiet_home: Path) -> None:
    real, claw = both(["-c", r"printf '\x00\xff\xfe\x80binary\x00'; printf '\xc3\x28' >&2"], workspace)
    assert (claw.stdout, claw.stderr) == (real.stdout, real.stderr)
    assert claw.stdout == b"\x00\xff\xfe\x80binary\x00"


def test_large_output_is_complete(workspace: Path, quiet_home: Path) -> None:
    real, claw = both(["-c", "seq 1 300000"], workspace)
    assert claw.stdout == real.stdout


def test_signal_death_is_128_plus_n(workspace: Path, quiet_home: Path) -> None:
    # Real bash dies of the signal (its parent sees -15); clawshell reports it the way
    # a shell reports a child's signal death, 128+N (DESIGN: exit status).
    real, claw = both(["-c", "kill -TERM $$"], workspace)
    assert (real.returncode, claw.returncode) == (-signal.SIGTERM, 128 + signal.SIGTERM)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_signals_reach_the_command(sig: signal.Signals, workspace: Path, quiet_home: Path) -> None:
    script = f"trap 'echo caught-{int(sig)}; exit 7' {int(sig)}; echo ready; while :; do sleep 0.05; done"
    env = dict(os.environ, CLAWSHELL_CWD=str(workspace))
    proc = subprocess.Popen([CLAWSHELL, "-c", script], cwd=workspace, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    time.sleep(0.1)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=20)
    assert out == f"caught-{int(sig)}\n".encode()
    assert proc.returncode == 7


def test_version_answers_like_bash(workspace: Path) -> None:
    res = subprocess.run([CLAWSHELL, "--version"], capture_output=True, timeout=30)
    assert res.returncode == 0
    assert res.stdout.startswith(b"GNU bash, version ")


def test_installed_as_bash_runs_the_real_shell_and_never_itself(tmp_path: Path, workspace: Path,
                                                               quiet_home: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "bash").symlink_to(CLAWSHELL)
    (bindir / "sh").symlink_to(CLAWSHELL)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", CLAWSHELL_CWD=str(workspace))
    for name in ("bash", "sh"):
        res = subprocess.run([str(bindir / name), "-c", "-l", "echo hi"] if name == "bash"
                             else [str(bindir / name), "-c", "echo hi"],
                             cwd=workspace, env=env, capture_output=True, timeout=30)
        assert (res.stdout, res.returncode) == (b"hi\n", 0), res.stderr


def test_nonexistent_cwd_is_a_usage_error(tmp_path: Path) -> None:
    res = subprocess.run([CLAWSHELL, "--cwd", str(tmp_path / "missing"), "-c", "true"], capture_output=True,
                         timeout=30)
    assert res.returncode == 2
    assert res.stdout == b""
    assert len(res.stderr.splitlines()) == 1 and b"no such directory" in res.stderr


def test_bad_option_is_a_usage_error() -> None:
    res = subprocess.run([CLAWSHELL, "-Z", "-c", "true"], capture_output=True, timeout=30)
    assert res.returncode == 2


def test_denied_command_gives_126_and_one_tagged_line(workspace: Path, user_home: Path, quiet_home: Path) -> None:
    (user_home / ".ssh").mkdir()
    (user_home / ".ssh" / "id_rsa").write_text("FAKE-PRIVATE-KEY\n")
    res = subprocess.run([CLAWSHELL, "--cwd", str(workspace), "-c", "cat ~/.ssh/id_rsa"],
                         capture_output=True, timeout=30)
    assert res.returncode == 126
    assert res.stdout == b""
    lines = res.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clawshell: denied: ") and "[rule: " in lines[0]


def test_unparseable_command_is_refused_with_position(workspace: Path, quiet_home: Path) -> None:
    marker = workspace / "ran"
    res = subprocess.run([CLAWSHELL, "--cwd", str(workspace), "--policy", "readonly", "-c",
                          f"touch {marker}; echo 'unterminated"], capture_output=True, timeout=30)
    assert res.returncode == 126
    assert not marker.exists()
    assert b"position" in res.stderr or b"offset" in res.stderr or b"col" in res.stderr


def test_invalid_config_is_78_with_file_and_line(workspace: Path, clawhome: Path) -> None:
    (clawhome / "config").mkdir(parents=True)
    policy = clawhome / "config" / "policy.toml"
    policy.write_text('[autonomy]\nlevel = "supervised"\nbogus_key = 1\n')
    marker = workspace / "ran"
    res = subprocess.run([CLAWSHELL, "--cwd", str(workspace), "-c", f"touch {marker}"], capture_output=True,
                         timeout=30)
    assert res.returncode == 78
    assert not marker.exists()
    assert f"{policy}:3: ".encode() in res.stderr and b"bogus_key" in res.stderr
    log = subprocess.run([CLAWSHELL, "audit", "--json", "--last", "1"], capture_output=True, timeout=30)
    assert b"invalid configuration" in log.stdout and b'"failed"' in log.stdout  # refused, still recorded


def test_receipt_line_follows_the_output_on_stderr(workspace: Path) -> None:
    res = subprocess.run([CLAWSHELL, "--cwd", str(workspace), "-c", "echo out; echo err >&2"],
                         capture_output=True, timeout=30)
    assert res.returncode == 0
    assert res.stdout == b"out\n"
    lines = res.stderr.decode().splitlines()
    assert lines[0] == "err" and lines[-1].startswith("[clawshell receipt]") and len(lines) == 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
