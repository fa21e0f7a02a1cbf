"""cli/approvals.py: the human's commands, driven with CliRunner (and once for real)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from click.testing import CliRunner

from clawshell.approval import estop as estop_mod
from clawshell.approval import otp, queue
from clawshell.approval.queue import ApprovalQueue
from clawshell.cli import approvals as cli
from clawshell.home import Home
from clawshell.store import Store

from ..conftest import CLAWSHELL


@pytest.fixture(autouse=True)
def env_only_inside_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Judge "inside" by the environment only, so the tests pass even when the suite
    itself runs under clawshell; the ancestry checks are tested in test_queue.py."""
    real = queue.inside_reason
    monkeypatch.setattr(cli.approval_queue, "inside_reason", lambda: real(proc="/nonexistent"))


@pytest.fixture
def q(store: Store, home: Home) -> ApprovalQueue:
    return ApprovalQueue(store, home=home)


def ask(q: ApprovalQueue, command: str = "git push origin main", gated: bool = False,
        session: str | None = "s1", timeout: float = 300.0) -> str:
    return q.request(command, "/w", session, 70, "pushes to a remote [rule: scores.git_push]",
                     q.digest(command, "/w", "ph"), gated, timeout=timeout)


def snapshot(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    return {t: store.query(f"SELECT * FROM {t} ORDER BY 1, 2") for t in ("approvals", "grants", "otp_state", "estop")}


def invoke(command: Any, args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(command, args, env=env, catch_exceptions=False)


@pytest.fixture
def secret(home: Home) -> bytes:
    raw = os.urandom(20)
    queue.write_otp_secret(home, otp.encode_secret(raw))
    return raw


# --------------------------------------------------------------------------- approvals


def test_approvals_says_when_nothing_is_pending() -> None:
    result = invoke(cli.approvals, [])
    assert (result.exit_code, result.output) == (0, "no pending approval requests\n")


def test_approvals_lists_token_score_age_session_command_and_reason(q: ApprovalQueue) -> None:
    token = ask(q)
    gated = ask(q, command="rm -rf build", gated=True)
    result = invoke(cli.approvals, [])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["TOKEN", "SCORE", "AGE", "STATUS", "SESSION", "COMMAND"]
    assert re.match(rf"{token} +70 +\d+s  pending +s1 +git push origin main$", lines[1])
    assert lines[2].strip() == "reason: pushes to a remote [rule: scores.git_push]"
    assert re.match(rf"{gated} +70 +\d+s  pending\* +s1 +rm -rf build$", lines[3])
    assert "* OTP-gated: allowing needs --otp CODE" in lines


def test_approvals_json_is_the_pending_list(q: ApprovalQueue) -> None:
    token = ask(q)
    rows = json.loads(invoke(cli.approvals, ["--json"]).output)
    assert [(r["token"], r["command"], r["score"], r["session"], r["status"]) for r in rows] == [
        (token, "git push origin main", 70, "s1", "pending")]
    assert set(rows[0]) == {"token", "command", "cwd", "session", "score", "reason", "gated", "status", "scope",
                            "created", "age", "expires", "digest"}


def test_approvals_expires_stale_requests_first(q: ApprovalQueue, store: Store) -> None:
    token = ask(q, timeout=0.01)
    time.sleep(0.02)
    assert invoke(cli.approvals, []).output == "no pending approval requests\n"
    assert store.query("SELECT status FROM approvals WHERE token = ?", (token,)) == [("expired",)]
    assert token in invoke(cli.approvals, ["--all"]).output


# --------------------------------------------------------------------------- approve


@pytest.mark.parametrize("verb", queue.VERBS)
def test_approve_decides_a_request(q: ApprovalQueue, verb: str) -> None:
    token = ask(q)
    result = invoke(cli.approve, [token.lower(), verb])
    status = "denied" if verb == "deny" else "allowed"
    assert (result.exit_code, result.output) == (0, f"{token}: {status} ({verb}): git push origin main\n")
    assert q.get(token).status == status  # type: ignore[union-attr]


def test_approve_takes_several_tokens_or_all_pending(q: ApprovalQueue) -> None:
    a, b, c = ask(q, command="a"), ask(q, command="b"), ask(q, command="c")
    assert invoke(cli.approve, [a, b, "deny"]).exit_code == 0
    assert [r.token for r in q.pending()] == [c]
    result = invoke(cli.approve, ["--all-pending", "allow"])
    assert (result.exit_code, result.output) == (0, f"{c}: allowed (allow): c\n")


@pytest.mark.parametrize(("args", "message"), [
    ([], "approve needs TOKEN... VERB"),
    (["CLAW-ZZZZ", "allow"], "unknown approval token CLAW-ZZZZ"),
    (["not-a-token", "allow"], "malformed approval token"),
    (["{pending}", "yes"], "the last argument must be the decision"),
    (["allow"], "no approval token given"),
    (["{pending}", "--all-pending", "allow"], "either tokens or --all-pending"),
    (["{decided}", "deny"], "was already decided"),
    (["{expired}", "allow"], "expired"),
    (["{gated}", "allow"], "needs an OTP code"),
    (["{gated}", "allow", "--otp", "12ab56"], "malformed OTP code"),
])
def test_bad_approve_input_exits_2_with_one_line_and_changes_nothing(q: ApprovalQueue, store: Store, secret: bytes,
                                                                       args: list[str], message: str) -> None:
    tokens = {"pending": ask(q, command="p"), "decided": ask(q, command="d"),
              "expired": ask(q, command="e", timeout=0.01), "gated": ask(q, command="g", gated=True)}
    q.decide(tokens["decided"], "allow")
    time.sleep(0.02)
    before = snapshot(store)
    result = CliRunner().invoke(cli.approve, [a.format(**tokens) for a in args])
    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("clawshell: usage: ") and message in line
    assert snapshot(store) == before


def test_a_gated_request_is_allowed_with_a_valid_code_and_refused_with_a_wrong_one(
        q: ApprovalQueue, store: Store, secret: bytes) -> None:
    token = ask(q, gated=True)
    now = time.time()
    good = {otp.code_at_step(secret, otp.time_step(now) + d) for d in (-1, 0, 1, 2)}
    wrong = next(c for c in ("000000", "111111", "222222", "333333", "444444") if c not in good)
    result = CliRunner().invoke(cli.approve, [token, "allow", "--otp", wrong])
    assert result.exit_code == 126
    assert result.stderr.startswith("clawshell: denied: wrong OTP code") and wrong not in result.stderr
    assert q.get(token).status == "pending"  # type: ignore[union-attr]
    result = invoke(cli.approve, [token, "allow", "--otp", otp.code_at(secret, time.time())])
    assert result.exit_code == 0, result.output
    assert q.get(token).status == "allowed"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- the agent cannot approve itself


@pytest.mark.parametrize(("command", "args"), [
    ("approve", ["{token}", "allow"]),
    ("approve", ["--all-pending", "allow"]),
    ("otp", ["setup"]),
    ("otp", ["verify", "123456"]),
    ("estop", ["resume"]),
])
@pytest.mark.parametrize("marker", [{"CLAWSHELL_INSIDE": "1"}, {"CLAWSHELL_DEPTH": "1"}])
def test_deciding_verbs_refuse_inside_a_clawshell_command(q: ApprovalQueue, store: Store, home: Home,
                                                          command: str, args: list[str],
                                                          marker: dict[str, str]) -> None:
    token = ask(q)
    estop_mod.engage(store, "stopped", kill=False)
    before = snapshot(store)
    result = CliRunner().invoke(getattr(cli, command), [a.format(token=token) for a in args],
                                                env=marker)
    assert result.exit_code == 126
    [line] = result.stderr.splitlines()
    assert line.startswith("clawshell: denied: ") and "human's own terminal" in line
    assert snapshot(store) == before
    assert not os.path.exists(queue.otp_secret_path(home))


def test_engaging_the_estop_works_from_inside(store: Store) -> None:
    result = invoke(cli.estop, ["--reason", "agent stops itself"], env={"CLAWSHELL_INSIDE": "1"})
    assert result.exit_code == 0
    assert estop_mod.check(store) == (True, "agent stops itself")


# --------------------------------------------------------------------------- otp


def test_otp_setup_writes_a_private_secret_and_shows_the_uri(home: Home, store: Store) -> None:
    result = invoke(cli.otp, ["setup", "--account", "me@box"])
    assert result.exit_code == 0, result.output
    path = queue.otp_secret_path(home)
    assert os.stat(path).st_mode & 0o777 == 0o600
    secret_b32 = open(path).read().strip()
    uri = f"otpauth://totp/clawshell:me@box?secret={secret_b32}&issuer=clawshell&algorithm=SHA1&digits=6&period=30"
    assert f"  {uri}\n" in result.output
    assert len(otp.decode_secret(secret_b32)) == 20
    again = CliRunner().invoke(cli.otp, ["setup"])
    assert again.exit_code == 2 and "--force" in again.stderr
    assert open(path).read().strip() == secret_b32
    assert invoke(cli.otp, ["setup", "--force"]).exit_code == 0
    assert open(path).read().strip() != secret_b32


def test_otp_setup_draws_a_qr_code_when_qrcode_is_installed() -> None:
    pytest.importorskip("qrcode", reason="the optional qrcode package is not installed")
    output = invoke(cli.otp, ["setup"]).output
    assert "\u2588" in output and "no QR code" not in output


def test_otp_setup_falls_back_to_the_uri_without_qrcode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "qrcode", None)
    output = invoke(cli.otp, ["setup"]).output
    assert "otpauth://totp/" in output
    assert "no QR code: the `qrcode` package is not installed" in output


def test_otp_verify_accepts_a_code_once(secret: bytes) -> None:
    code = otp.code_at(secret, time.time())
    assert invoke(cli.otp, ["verify", code]).output == "OTP code accepted.\n"
    replay = CliRunner().invoke(cli.otp, ["verify", code])
    assert replay.exit_code == 126
    assert replay.stderr.startswith("clawshell: denied: OTP code already used") and code not in replay.stderr


@pytest.mark.parametrize(("args", "code"), [(["verify", "abc"], 2), (["verify", "1234567"], 2)])
def test_otp_verify_rejects_malformed_codes(secret: bytes, store: Store, args: list[str], code: int) -> None:
    before = snapshot(store)
    assert CliRunner().invoke(cli.otp, args).exit_code == code
    assert snapshot(store) == before


def test_otp_verify_without_setup_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli.otp, ["verify", "123456"])
    assert result.exit_code == 2 and "otp setup" in result.stderr


def test_otp_locks_after_five_wrong_codes(secret: bytes) -> None:
    now = time.time()
    good = {otp.code_at_step(secret, otp.time_step(now) + d) for d in (-1, 0, 1, 2)}
    wrong = next(c for c in ("000000", "111111", "222222", "333333", "444444") if c not in good)
    codes = [CliRunner().invoke(cli.otp, ["verify", wrong]).exit_code for _ in range(5)]
    assert codes == [126] * 5
    locked = CliRunner().invoke(cli.otp, ["verify", otp.code_at(secret, time.time())])
    assert locked.exit_code == 126 and "locked" in locked.stderr
    assert "locked until" in invoke(cli.otp, ["status"]).output


# --------------------------------------------------------------------------- estop


def test_estop_engage_status_resume(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_resume_needs_otp", lambda home: False)
    result = invoke(cli.estop, ["--reason", "weird activity"])
    assert result.output.startswith("e-stop engaged: weird activity; killed 0 process(es): none\n")
    assert estop_mod.check(store) == (True, "weird activity")
    assert "e-stop ENGAGED since " in invoke(cli.estop, ["status"]).output
    status = json.loads(invoke(cli.estop, ["status", "--json"]).output)
    assert (status["engaged"], status["reason"], status["readable"]) == (True, "weird activity", True)
    assert invoke(cli.estop, ["resume"]).output == "e-stop lifted: commands run again\n"
    assert estop_mod.check(store) == (False, None)
    assert invoke(cli.estop, ["resume"]).output == "e-stop was not engaged\n"


def test_estop_resume_needs_a_code_when_the_policy_says_so(store: Store, secret: bytes,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_resume_needs_otp", lambda home: True)
    estop_mod.engage(store, "stop", kill=False)
    missing = CliRunner().invoke(cli.estop, ["resume"])
    assert missing.exit_code == 2 and "--otp" in missing.stderr
    assert estop_mod.check(store)[0] is True
    ok = invoke(cli.estop, ["resume", "--otp", otp.code_at(secret, time.time())])
    assert ok.exit_code == 0
    assert estop_mod.check(store) == (False, None)


def test_estop_reason_with_a_subcommand_is_a_usage_error() -> None:
    assert CliRunner().invoke(cli.estop, ["--reason", "x", "status"]).exit_code == 2


# --------------------------------------------------------------------------- for real, another process


def test_a_waiting_request_proceeds_after_clawshell_approve_in_another_process(q: ApprovalQueue) -> None:
    lines: list[str] = []
    results: list[queue.ApprovalResult] = []
    store2 = Store.open(Home.from_env())

    def agent_side() -> None:
        results.append(queue.obtain_approval(
            store2, command="git push origin main", cwd="/w", session="s9", score=70, reason="push",
            policy_hash="ph", gated=False, timeout=30, emit=lines.append, poll=0.05))

    waiter = threading.Thread(target=agent_side)
    waiter.start()
    try:
        deadline = time.monotonic() + 10
        while not lines and time.monotonic() < deadline:
            time.sleep(0.01)
        token = lines[0].split("token ")[1].split(";")[0]
        human = subprocess.run([CLAWSHELL, "approve", token, "allow"], capture_output=True, text=True, timeout=60)
        assert (human.returncode, human.stdout) == (0, f"{token}: allowed (allow): git push origin main\n"), human.stderr
    finally:
        waiter.join(timeout=30)
        store2.close()
    assert results == [queue.ApprovalResult(True, token, "allow", "human",
                                            f"approved by the human (allow) [token {token}]")]


def test_the_real_cli_exits_2_on_an_unknown_token() -> None:
    out = subprocess.run([CLAWSHELL, "approve", "CLAW-ZZZZ", "deny"], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == "clawshell: usage: unknown approval token CLAW-ZZZZ (see `clawshell approvals`)\n"


def test_the_real_cli_refuses_approve_inside_a_command() -> None:
    out = subprocess.run([CLAWSHELL, "approve", "CLAW-ZZZZ", "allow"], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, CLAWSHELL_INSIDE="1"))
    assert out.returncode == 126
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("clawshell: denied: an approval must come from")
