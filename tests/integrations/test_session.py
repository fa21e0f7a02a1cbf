"""`clawshell session`: the agent runs with clawshell as its bash/sh, every shell call
joins one audited session, the task is stored, the exit status passes through."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

from tests.conftest import CLAWSHELL

AGENT = """#!/bin/bash
# A fake agent: it calls "bash" and "sh" by name (through PATH), like real agents do.
out="$1"
{
  echo "session=$CLAWSHELL_SESSION"
  echo "cwd=$CLAWSHELL_CWD"
  echo "policy=${CLAWSHELL_POLICY:-}"
  echo "shell=$SHELL"
  echo "claude_shell=$CLAUDE_CODE_SHELL"
  echo "pwd=$(pwd -P)"
  echo "via_bash=$(bash -c 'echo $CLAWSHELL_SESSION')"
  echo "via_sh=$(sh -c 'echo sh-ran')"
  echo "denied=$(bash -c 'cat ~/.ssh/id_rsa' 2>/dev/null; echo $?)"
} > "$out"
exit 7
"""


def _db(clawhome: Path) -> sqlite3.Connection:
    return sqlite3.connect(clawhome / "storage" / "clawshell.db")


def test_session_runs_the_agent_with_clawshell_as_its_shell(tmp_path: Path, workspace: Path, clawhome: Path,
                                                            user_home: Path) -> None:
    (clawhome / "config").mkdir(parents=True)
    (clawhome / "config" / "policy.toml").write_text('[receipts]\nemit = "none"\n')
    (user_home / ".ssh").mkdir()
    (user_home / ".ssh" / "id_rsa").write_text("FAKE KEY\n")
    agent = tmp_path / "agent.sh"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    report = tmp_path / "report.txt"
    env = dict(os.environ)
    env.pop("CLAWSHELL_CWD", None)
    res = subprocess.run([CLAWSHELL, "session", "--cwd", str(workspace), "--task", "fix the flaky test",
                          "--policy", "supervised", "--", str(agent), str(report)],
                         env=env, capture_output=True, timeout=120)
    assert res.returncode == 7, res.stderr
    facts = dict(line.split("=", 1) for line in report.read_text().splitlines())
    sid = facts["session"]
    assert sid.startswith("s-") and facts["via_bash"] == sid
    assert facts["via_sh"] == "sh-ran"
    assert facts["denied"] == "126"
    assert facts["cwd"] == str(workspace) and facts["pwd"] == str(workspace)
    assert facts["policy"] == "supervised"
    assert facts["shell"] == facts["claude_shell"] and facts["shell"].endswith("/bin/bash")
    assert facts["shell"].startswith(str(clawhome / "cache" / "sessions" / sid))
    assert not Path(facts["shell"]).exists()  # the private bin dir is gone after the session

    db = _db(clawhome)
    try:
        rows = db.execute("SELECT id, task, cwd FROM sessions").fetchall()
        entries = db.execute("SELECT session, tool, body FROM audit ORDER BY seq").fetchall()
    finally:
        db.close()
    assert rows == [(sid, "fix the flaky test", str(workspace))]
    assert len(entries) == 3
    assert {(s, t) for s, t, _ in entries} == {(sid, "shell")}
    outcomes = [json.loads(b)["outcome"] for _, _, b in entries]
    assert outcomes == ["ran", "ran", "refused"]


def test_session_passes_signal_deaths_and_missing_agents_through(workspace: Path, clawhome: Path) -> None:
    env = dict(os.environ)
    res = subprocess.run([CLAWSHELL, "session", "--cwd", str(workspace), "--", "/bin/sh", "-c", "kill -TERM $$"],
                         env=env, capture_output=True, timeout=60)
    assert res.returncode == 128 + 15
    res = subprocess.run([CLAWSHELL, "session", "--cwd", str(workspace), "--", str(workspace / "no-such-agent")],
                         env=env, capture_output=True, timeout=60)
    assert res.returncode != 0 and b"cannot start" in res.stderr


def test_session_needs_an_agent(workspace: Path) -> None:
    res = subprocess.run([CLAWSHELL, "session", "--cwd", str(workspace)], capture_output=True, timeout=60)
    assert res.returncode == 2


def test_nested_shell_calls_inside_a_session_command_work(workspace: Path, clawhome: Path, tmp_path: Path) -> None:
    """make, npm scripts and `bash -lc` written by the model call `bash` again from inside
    a confined command: the session's bash entry must hand over to the real shell there."""
    (clawhome / "config").mkdir(parents=True)
    (clawhome / "config" / "policy.toml").write_text(
        '[receipts]\nemit = "none"\n\n[safety.approval]\ntimeout_seconds = 5\n')
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/bash\nbash -c 'bash -lc \"echo nested-2\"; sh -c \"echo sh-nested\"'\n")
    agent.chmod(0o755)
    res = subprocess.run([CLAWSHELL, "session", "--cwd", str(workspace), "--", str(agent)],
                         capture_output=True, timeout=120)
    assert (res.stdout, res.returncode) == (b"nested-2\nsh-nested\n", 0), res.stderr
