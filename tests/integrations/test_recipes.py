"""Each recipe of docs/integrations.md replayed in the exact argv shape its agent uses,
through the real `clawshell` executable installed as `bash`/`sh` (as `clawshell
session` and the recipes install it), compared with real bash: same stdout, same
status (and same stderr where the agent reads it).  Receipts are off (`emit = "none"`)
so stderr is comparable."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CLAWSHELL

BASH = "/bin/bash"

SNAPSHOT = """\
# Claude Code / Codex style shell snapshot: functions, aliases, options, PATH
greet() { echo "hello $1"; }
shopt -s expand_aliases
alias ll='ls -1'
export SNAPSHOT_LOADED=yes
"""


@pytest.fixture
def env_setup(tmp_path: Path, clawhome: Path, user_home: Path) -> dict[str, Path]:
    """Quiet receipts, a workspace with content, a snapshot, and clawshell installed
    as bash/sh in a private bin dir."""
    (clawhome / "config").mkdir(parents=True)
    (clawhome / "config" / "policy.toml").write_text('[receipts]\nemit = "none"\n')
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "b.txt").write_text("b\n")
    (ws / "a.txt").write_text("a\n")
    snaps = user_home / ".claude" / "shell-snapshots"
    snaps.mkdir(parents=True)
    snap = snaps / "snapshot-bash-1732900000000-ab12cd.sh"
    snap.write_text(SNAPSHOT)
    codex_snap = user_home / ".codex" / "shell_snapshots" / "snapshot.sh"
    codex_snap.parent.mkdir(parents=True)
    codex_snap.write_text(SNAPSHOT)
    bindir = tmp_path / "clawbin"
    bindir.mkdir()
    (bindir / "bash").symlink_to(CLAWSHELL)
    (bindir / "sh").symlink_to(CLAWSHELL)
    return {"ws": ws, "snap": snap, "codex_snap": codex_snap, "bin": bindir}


def replay(args: list[str], setup: dict[str, Path], *, cwd: Path | None = None, env: dict[str, str] | None = None,
           on_path: bool = False) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    """Run ``args`` with argv[0] = <bin>/bash under real bash and under clawshell.

    ``on_path``: the agent finds `bash` through PATH (Gemini CLI, `clawshell session`),
    so the clawshell bin dir goes first on PATH; otherwise it is configured by absolute
    path (CLAUDE_CODE_SHELL, the passwd login shell, GOOSE_SHELL, SHELL).
    """
    ws = setup["ws"]
    argv0 = str(setup["bin"] / "bash")
    base = dict(os.environ, **(env or {}))
    base.pop("CLAWSHELL_CWD", None)
    claw_env = dict(base, CLAWSHELL_CWD=str(ws))
    if on_path:
        claw_env["PATH"] = f"{setup['bin']}:{base['PATH']}"
    real = subprocess.run([argv0, *args], executable=BASH, cwd=cwd or ws, env=base, capture_output=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    claw = subprocess.run([argv0, *args], cwd=cwd or ws, env=claw_env, capture_output=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    return real, claw


def same(real: subprocess.CompletedProcess[bytes], claw: subprocess.CompletedProcess[bytes], *,
         stderr: bool = True) -> None:
    assert claw.stdout == real.stdout, (claw.stdout, claw.stderr)
    assert claw.returncode == real.returncode, claw.stderr
    if stderr:
        assert claw.stderr == real.stderr


def quote(text: str) -> str:
    """Single-quote like Claude Code does for the eval payload."""
    return "'" + text.replace("'", "'\\''") + "'"


def claude_envelope(model_command: str, cwd_file: str, snapshot: Path | None) -> str:
    parts = []
    if snapshot is not None:
        parts.append(f"source {quote(str(snapshot))} 2>/dev/null || true")
    parts.append("shopt -u extglob 2>/dev/null || true")
    parts.append(f"eval {quote(model_command)} \\< /dev/null")
    parts.append(f"pwd -P >| {cwd_file}")
    return " && ".join(parts)


@pytest.fixture
def cwd_files() -> list[str]:
    made: list[str] = []
    yield made
    for path in made:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def new_cwd_file(made: list[str]) -> str:
    path = f"/tmp/claude-{secrets.token_hex(4)}-cwd"
    made.append(path)
    return path


# --------------------------------------------------------------------------- Claude Code

CLAUDE_COMMANDS = [
    ("echo hello", ""),
    ("greet world; echo $SNAPSHOT_LOADED", ""),
    ("ll | sort", ""),
    ("cd sub && pwd -P", "sub"),
    ("echo 'it''s' \"quoted\" && printf '%s\\n' a b", ""),
    ("echo to-stderr >&2; exit 3", None),
]


@pytest.mark.parametrize("with_snapshot", [True, False], ids=["snapshot", "no-snapshot"])
@pytest.mark.parametrize("command,cwd_after", CLAUDE_COMMANDS, ids=[c for c, _ in CLAUDE_COMMANDS])
def test_claude_code_envelope_with_dash_c_dash_l(env_setup: dict[str, Path], cwd_files: list[str], command: str,
                                                  cwd_after: str | None, with_snapshot: bool) -> None:
    if not with_snapshot and ("greet" in command or "ll" in command):
        pytest.skip("needs the snapshot's function/alias")
    snap = env_setup["snap"] if with_snapshot else None
    real_file, claw_file = new_cwd_file(cwd_files), new_cwd_file(cwd_files)
    ws = env_setup["ws"]
    argv0 = str(env_setup["bin"] / "bash")
    base = dict(os.environ)
    base.pop("CLAWSHELL_CWD", None)
    real = subprocess.run([argv0, "-c", "-l", claude_envelope(command, real_file, snap)], executable=BASH,
                          cwd=ws, env=base, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    claw = subprocess.run([argv0, "-c", "-l", claude_envelope(command, claw_file, snap)], cwd=ws,
                          env=dict(base, CLAWSHELL_CWD=str(ws)), capture_output=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    same(real, claw)
    if cwd_after is None:
        # The command exited before `pwd -P`: no directory was recorded.
        assert not os.path.exists(real_file)
        assert not os.path.exists(claw_file) or Path(claw_file).read_text() == ""
    else:
        expected = str(ws / cwd_after).rstrip("/") + "\n"
        assert Path(real_file).read_text() == expected
        assert Path(claw_file).read_text() == expected  # Claude's bookkeeping file was written


def test_claude_cwd_file_is_not_left_behind_when_the_command_exits_early(env_setup: dict[str, Path],
                                                                       cwd_files: list[str]) -> None:
    """Like bash, nothing creates Claude's cwd file when the command ends before `pwd -P`."""
    claw_file = new_cwd_file(cwd_files)
    ws = env_setup["ws"]
    env = dict(os.environ, CLAWSHELL_CWD=str(ws))
    res = subprocess.run([str(env_setup["bin"] / "bash"), "-c", "-l", claude_envelope("exit 3", claw_file, None)],
                         cwd=ws, env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert res.returncode == 3
    assert not os.path.exists(claw_file)


def test_claude_code_version_probe(env_setup: dict[str, Path]) -> None:
    res = subprocess.run([str(env_setup["bin"] / "bash"), "--version"], capture_output=True, timeout=30)
    assert res.returncode == 0 and res.stdout.startswith(b"GNU bash, version ")


def test_claude_code_env_capture_runs(env_setup: dict[str, Path]) -> None:
    _, claw = replay(["-c", "env"], env_setup)
    assert claw.returncode == 0 and b"PATH=" in claw.stdout


# --------------------------------------------------------------------------- Codex CLI


@pytest.mark.parametrize("script", ["echo hi; pwd -P", "ls; exit 4", "echo $0 \"$#\""])
def test_codex_login_command(env_setup: dict[str, Path], script: str) -> None:
    same(*replay(["-lc", script], env_setup))


@pytest.mark.parametrize("command", [
    ["bash", "-lc", "echo hi; echo $SNAPSHOT_LOADED; greet codex"],
    ["bash", "-lc", "printf '%s|' \"$@\"; echo", "arg0", "one two", "three"],
    ["ls", "-1"],
])
def test_codex_snapshot_wrapper_with_positional_arguments(env_setup: dict[str, Path], command: list[str]) -> None:
    wrapper = ["-c", '. "$1" && shift && exec "$@"', "codex-shell-snapshot", str(env_setup["codex_snap"])]
    same(*replay(wrapper + command, env_setup))


# --------------------------------------------------------------------------- Gemini CLI, Aider


@pytest.mark.parametrize("command", ["echo hi && ls", "for i in 1 2; do echo $i; done | tac",
                                     "echo out; echo err >&2; false"])
def test_gemini_and_aider_dash_c(env_setup: dict[str, Path], command: str) -> None:
    same(*replay(["-c", command], env_setup, on_path=True))  # Gemini looks bash up on PATH
    same(*replay(["-c", command], env_setup))                # Aider runs $SHELL -c


# --------------------------------------------------------------------------- Goose


def test_goose_login_interactive_path_probe(env_setup: dict[str, Path]) -> None:
    real, claw = replay(["-l", "-i", "-c", "echo $PATH"], env_setup)
    assert claw.returncode == real.returncode == 0
    assert claw.stdout.splitlines()[-1:] == real.stdout.splitlines()[-1:]


def test_goose_shell_command(env_setup: dict[str, Path]) -> None:
    same(*replay(["-c", "echo goose; cat a.txt b.txt"], env_setup))


# --------------------------------------------------------------------------- Continue


@pytest.mark.parametrize("command", ["echo continue; echo $0", "cd sub; pwd -P; exit 5"])
def test_continue_dash_l_dash_c(env_setup: dict[str, Path], command: str) -> None:
    same(*replay(["-l", "-c", command], env_setup))


# --------------------------------------------------------------------------- refusals look the same everywhere


@pytest.mark.parametrize("args", [["-c", "cat ~/.ssh/id_rsa"], ["-lc", "cat ~/.ssh/id_rsa"],
                                  ["-l", "-c", "cat ~/.ssh/id_rsa"]])
def test_a_refusal_is_126_with_one_line_in_every_shape(env_setup: dict[str, Path], user_home: Path,
                                                       args: list[str]) -> None:
    (user_home / ".ssh").mkdir()
    (user_home / ".ssh" / "id_rsa").write_text("FAKE KEY\n")
    _, claw = replay(args, env_setup)
    assert claw.returncode == 126 and claw.stdout == b""
    assert claw.stderr.decode().startswith("clawshell: denied: ") and len(claw.stderr.splitlines()) == 1
