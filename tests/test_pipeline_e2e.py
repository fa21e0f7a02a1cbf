"""End to end through the real ``clawshell`` executable: audit entries for every call,
receipts that verify, fail-closed store, e-stop, approvals from another process,
masked secrets, and an agent that cannot approve itself."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import CLAWSHELL


def claw(*args: str, workspace: Path, input: bytes | None = None, timeout: float = 60,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run clawshell with the workspace as --cwd."""
    return subprocess.run([CLAWSHELL, "--cwd", str(workspace), *args], cwd=workspace, input=input,
                          capture_output=True, timeout=timeout, env=dict(os.environ, **(env or {})))


def sub(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """Run a clawshell subcommand (the human's side)."""
    return subprocess.run([CLAWSHELL, *args], capture_output=True, timeout=timeout)


def audit_entries() -> list[dict]:
    res = sub("audit", "--json", "--last", "100")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    return data if isinstance(data, list) else data["entries"]


def receipt_of(stderr: bytes) -> str:
    lines = [ln for ln in stderr.decode().splitlines() if ln.startswith("[clawshell receipt]")]
    assert len(lines) == 1, stderr
    return lines[0]


def test_allowed_and_refused_calls_both_leave_verifiable_entries(workspace: Path) -> None:
    ok = claw("-c", "echo hello", workspace=workspace)
    no = claw("-c", "cat /etc/shadow", workspace=workspace)
    assert (ok.returncode, ok.stdout) == (0, b"hello\n")
    assert no.returncode == 126
    for res in (ok, no):
        check = sub("receipts", "verify", receipt_of(res.stderr))
        assert check.returncode == 0, check.stdout + check.stderr
    entries = audit_entries()
    outcomes = [(e.get("outcome") or e.get("body", {}).get("outcome")) for e in entries]
    assert "ran" in outcomes and "refused" in outcomes
    assert sub("audit", "verify").returncode == 0


def test_unwritable_store_refuses_and_runs_nothing(workspace: Path, clawhome: Path) -> None:
    assert claw("-c", "true", workspace=workspace).returncode == 0  # creates the database
    storage = clawhome / "storage"
    for p in storage.iterdir():
        p.chmod(0o400)
    storage.chmod(0o500)
    marker = workspace / "ran"
    try:
        # root ignores modes on plain files; make the database itself unusable instead
        db = storage / "clawshell.db"
        db.chmod(0o600)
        db.write_bytes(b"this is not a database" * 100)
        res = claw("-c", f"touch {marker}", workspace=workspace)
    finally:
        storage.chmod(0o700)
    assert res.returncode == 126
    assert not marker.exists()
    assert len(res.stderr.decode().splitlines()) == 1 and b"clawshell: store:" in res.stderr


def test_estop_refuses_new_commands_until_resume(workspace: Path) -> None:
    assert sub("estop", "--reason", "test stop").returncode == 0
    marker = workspace / "ran"
    res = claw("-c", f"touch {marker}", workspace=workspace)
    assert res.returncode == 126 and not marker.exists()
    assert b"emergency stop" in res.stderr and b"test stop" in res.stderr
    assert sub("estop", "resume").returncode == 0
    assert claw("-c", f"touch {marker}", workspace=workspace).returncode == 0
    assert marker.exists()


def test_flagged_command_waits_for_the_human_and_proceeds(workspace: Path) -> None:
    (workspace / "build").mkdir()
    (workspace / "build" / "x.o").write_text("x")
    proc = subprocess.Popen([CLAWSHELL, "--cwd", str(workspace), "-c", "rm -r build"], cwd=workspace,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    token = None
    deadline = time.time() + 30
    while token is None and time.time() < deadline:
        listing = sub("approvals", "--json")
        pending = json.loads(listing.stdout or b"[]")
        pending = pending if isinstance(pending, list) else pending.get("pending", [])
        if pending:
            token = pending[0]["token"]
        else:
            time.sleep(0.2)
    assert token, "no pending approval appeared"
    assert (workspace / "build").exists()  # nothing ran while waiting
    assert sub("approve", token, "allow").returncode == 0
    out, errout = proc.communicate(timeout=60)
    assert proc.returncode == 0, errout
    assert not (workspace / "build").exists()
    assert token.encode() in errout


def test_sandboxed_command_cannot_approve_its_own_request(workspace: Path) -> None:
    (workspace / "build").mkdir()
    script = ("t=$(clawshell approvals --json 2>/dev/null | head -c 2000); "
              "clawshell approve \"$(echo \"$t\" | grep -o 'CLAW-[A-Z0-9]*' | head -1)\" allow; echo rc=$?")
    env = {"PATH": f"{Path(CLAWSHELL).parent}:{os.environ['PATH']}"}
    # a pending request exists for `rm -r build`; the agent tries to approve it from inside
    waiter = subprocess.Popen([CLAWSHELL, "--cwd", str(workspace), "-c", "rm -r build"], cwd=workspace,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.5)
        res = claw("-c", script, workspace=workspace, env=env)
        assert b"rc=0" not in res.stdout
        assert (workspace / "build").exists()
    finally:
        sub("approve", "--all-pending", "deny")
        waiter.communicate(timeout=60)
    assert waiter.returncode == 126
    assert (workspace / "build").exists()


def test_cat_env_shows_masked_values(workspace: Path) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (workspace / ".env").write_text(f"GITHUB_TOKEN={secret}\nDEBUG=true\n")
    res = claw("--policy", "full", "-c", "cat .env", workspace=workspace)
    assert res.returncode == 0, res.stderr
    assert secret.encode() not in res.stdout
    assert b"[REDACTED:" in res.stdout and b"DEBUG=true" in res.stdout
    assert b"clawshell: redacted" in res.stderr


def test_secret_file_contents_are_masked_wherever_they_appear(workspace: Path, clawhome: Path,
                                                             tmp_path: Path) -> None:
    secret_file = tmp_path / "db-password"
    secret_file.write_text("plain-words-no-pattern-2931\n")
    (clawhome / "config").mkdir(parents=True)
    (clawhome / "config" / "policy.toml").write_text(
        f'[security.leak_detection]\nsecret_files = ["{secret_file}"]\n')
    res = claw("-c", "echo the password is plain-words-no-pattern-2931 ok", workspace=workspace)
    assert res.returncode == 0, res.stderr
    assert b"plain-words-no-pattern-2931" not in res.stdout
    assert b"the password is [REDACTED:known_secret] ok" in res.stdout


@pytest.mark.parametrize("shape", [["-c", "exit 3"], ["-lc", "exit 3"], ["-c", "-l", "exit 3"]])
def test_exit_status_passes_through_with_audit_entry(shape: list[str], workspace: Path) -> None:
    res = claw(*shape, workspace=workspace)
    assert res.returncode == 3
    assert receipt_of(res.stderr)


def test_medium_risk_runs_and_is_tagged_high_risk_in_the_log(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    for key, value in (("user.name", "t"), ("user.email", "t@example.com")):  # the sandbox scrubs GIT_* env
        subprocess.run(["git", "-C", str(workspace), "config", key, value], check=True)
    check = sub("check", "--json", "--cwd", str(workspace), "-c", "git commit --allow-empty -q -m x")
    verdict = json.loads(check.stdout)
    assert verdict["decision"] == "allow" and verdict["risk"] == "medium", verdict
    res = claw("-c", "git commit --allow-empty -q -m x", workspace=workspace)
    assert res.returncode == 0, res.stderr
    assert b"HIGH_RISK" not in res.stderr  # invisible to the agent: only the log carries it
    raw = sub("audit", "--json", "--last", "1").stdout.decode()
    assert "HIGH_RISK" in raw


def approve_next(timeout: float = 30) -> str:
    """Wait for one pending request and allow it (the human's side)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        pending = json.loads(sub("approvals", "--json").stdout or b"[]")
        pending = pending if isinstance(pending, list) else pending.get("pending", [])
        if pending:
            token = pending[0]["token"]
            assert sub("approve", token, "allow").returncode == 0
            return token
        time.sleep(0.2)
    raise AssertionError("no pending approval appeared")


@pytest.mark.parametrize("command,created", [
    ("git init -q", ".git/config"),
    ("mkdir -p .git/hooks && echo 'exit 0' > .git/hooks/pre-commit", ".git/hooks/pre-commit"),
])
def test_an_approved_protected_write_goes_through_the_sandbox(command: str, created: str,
                                                              workspace: Path) -> None:
    proc = subprocess.Popen([CLAWSHELL, "--cwd", str(workspace), "-c", command], cwd=workspace,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    approve_next()
    _, errout = proc.communicate(timeout=60)
    assert proc.returncode == 0, errout
    assert (workspace / created).exists()


def test_an_unapproved_protected_write_is_refused_and_nothing_is_created(workspace: Path) -> None:
    proc = subprocess.Popen([CLAWSHELL, "--cwd", str(workspace), "-c", "git init -q"], cwd=workspace,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while time.time() < deadline and not json.loads(sub("approvals", "--json").stdout or b"[]"):
        time.sleep(0.2)
    assert sub("approve", "--all-pending", "deny").returncode == 0
    proc.communicate(timeout=60)
    assert proc.returncode == 126
    assert not (workspace / ".git").exists()
