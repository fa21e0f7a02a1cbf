"""approval.queue: requests, waiting, decisions, grants, OTP gating, restarts, who may decide."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from clawshell.approval import otp, queue
from clawshell.approval.queue import ApprovalQueue, ApprovalResult, Decided, Outcome, obtain_approval
from clawshell.errors import RefusedError, UsageError
from clawshell.home import Home
from clawshell.store import Store

T0 = 1_800_000_000.0


class FakeClock:
    """A clock that only moves when told to (or when ``sleep`` is called)."""

    def __init__(self, t: float = T0):
        self.t = t
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(store: Store, clock: FakeClock, home: Home) -> ApprovalQueue:
    return ApprovalQueue(store, clock=clock, home=home)


@pytest.fixture
def secret(home: Home) -> bytes:
    raw = bytes(range(1, 21))
    queue.write_otp_secret(home, otp.encode_secret(raw))
    return raw


def snapshot(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    return {t: store.query(f"SELECT * FROM {t} ORDER BY 1, 2") for t in ("approvals", "grants", "otp_state")}


def ask(q: ApprovalQueue, command: str = "git push origin main", session: str | None = "s1",
        gated: bool = False, timeout: float | None = 300.0, cwd: str = "/w") -> str:
    digest = q.digest(command, cwd, "ph1")
    return q.request(command, cwd, session, 70, "git push [rule: scores.git_push]", digest, gated, timeout=timeout)


# --------------------------------------------------------------------------- digest and tokens


def test_digest_is_stable_and_covers_command_cwd_and_policy() -> None:
    base = ApprovalQueue.digest("git push", "/w", "p1")
    assert base == ApprovalQueue.digest("git push", "/w", "p1")
    assert len(base) == 64
    others = {ApprovalQueue.digest("git push ", "/w", "p1"), ApprovalQueue.digest("git push", "/w2", "p1"),
              ApprovalQueue.digest("git push", "/w", "p2"), base}
    assert len(others) == 4


@pytest.mark.parametrize(("given", "expected"), [
    ("CLAW-A8F2", "CLAW-A8F2"), ("claw-a8f2", "CLAW-A8F2"), ("a8f2", "CLAW-A8F2"), (" CLAW-ZZ99 ", "CLAW-ZZ99"),
])
def test_tokens_are_normalised(given: str, expected: str) -> None:
    assert queue.normalize_token(given) == expected


@pytest.mark.parametrize("given", ["", "CLAW-", "CLAW-A8F", "CLAW-A8F22", "CLAW-A0F2", "CLAW-A8F!", "XXXX-A8F2-"])
def test_malformed_tokens_are_usage_errors(given: str) -> None:
    with pytest.raises(UsageError):
        queue.normalize_token(given)


def test_request_returns_a_fresh_unique_token(q: ApprovalQueue) -> None:
    tokens = {ask(q, command=f"git push origin b{i}") for i in range(30)}
    assert len(tokens) == 30
    assert all(t.startswith("CLAW-") and len(t) == 9 for t in tokens)


def test_the_same_pending_action_gets_the_same_token(q: ApprovalQueue) -> None:
    first = ask(q)
    assert ask(q) == first
    assert ask(q, session="s2") != first
    assert ask(q, cwd="/elsewhere") != first
    assert len(q.pending()) == 3


# --------------------------------------------------------------------------- waiting


def test_wait_returns_allowed_after_a_decision_from_another_process(store: Store, home: Home) -> None:
    real = ApprovalQueue(store, home=home)
    token = ask(real)
    code = textwrap.dedent(f"""
        import time
        from clawshell.approval.queue import ApprovalQueue
        from clawshell.home import Home
        from clawshell.store import Store
        time.sleep(0.3)
        ApprovalQueue(Store.open(Home({home.root!r}))).decide({token!r}, "allow")
    """)
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        started = time.monotonic()
        outcome = real.wait(token, timeout=20, poll=0.05)
        waited = time.monotonic() - started
    finally:
        assert child.wait(timeout=20) == 0
    assert outcome == Outcome("allowed", "allow")
    assert 0.2 < waited < 10


@pytest.mark.parametrize(("verb", "expected"), [
    ("allow", Outcome("allowed", "allow")),
    ("deny", Outcome("denied", "deny")),
    ("allow-30m", Outcome("allowed", "allow-30m")),
    ("allow-session", Outcome("allowed", "allow-session")),
])
def test_wait_reports_the_decision(q: ApprovalQueue, clock: FakeClock, verb: str, expected: Outcome) -> None:
    token = ask(q)
    assert q.decide(token, verb) == Decided(token, expected.status, verb, "git push origin main")
    assert q.wait(token, timeout=5, sleep=clock.sleep) == expected


def test_wait_times_out_and_expires_the_request(q: ApprovalQueue, clock: FakeClock, store: Store) -> None:
    token = ask(q, timeout=10)
    outcome = q.wait(token, timeout=10, poll=0.5, sleep=clock.sleep)
    assert outcome == Outcome("timeout", None, "", "timeout")
    assert clock.t == T0 + 10
    assert store.query("SELECT status FROM approvals WHERE token = ?", (token,)) == [("expired",)]
    before = snapshot(store)
    with pytest.raises(UsageError, match="expired"):
        q.decide(token, "allow")
    assert snapshot(store) == before


def test_wait_ends_denied_when_abort_says_so(q: ApprovalQueue, clock: FakeClock, store: Store) -> None:
    token = ask(q)
    calls = iter([None, None, "emergency stop engaged: test"])
    outcome = q.wait(token, timeout=60, poll=1, sleep=clock.sleep, abort=lambda: next(calls))
    assert outcome == Outcome("denied", None, "emergency stop engaged: test", "abort")
    assert store.query("SELECT status FROM approvals WHERE token = ?", (token,)) == [("expired",)]


def test_a_restarted_waiter_finds_the_decision_made_while_it_was_gone(q: ApprovalQueue, clock: FakeClock) -> None:
    token = ask(q)             # the first waiter is killed here, before seeing anything
    clock.t += 20
    q.decide(token, "allow")
    clock.t += 5
    again = ask(q)             # the agent retries the same command in the same session
    assert again == token
    assert q.wait(again, timeout=5, sleep=clock.sleep) == Outcome("allowed", "allow")
    # once collected, the one-shot allow is spent: the next identical action asks again
    assert ask(q) != token


def test_a_restarted_waiter_rejoins_the_pending_request(q: ApprovalQueue, clock: FakeClock, store: Store) -> None:
    token = ask(q, timeout=10)
    clock.t += 8
    assert ask(q, timeout=10) == token
    # the deadline moved with the new waiter: still decidable after the first one's
    clock.t += 5
    assert q.decide(token, "deny").status == "denied"


def test_a_pending_request_past_its_deadline_is_replaced(q: ApprovalQueue, clock: FakeClock, store: Store) -> None:
    token = ask(q, timeout=10)
    clock.t += 11
    fresh = ask(q, timeout=10)
    assert fresh != token
    assert store.query("SELECT status FROM approvals WHERE token = ?", (token,)) == [("expired",)]


def test_denials_are_not_remembered(q: ApprovalQueue, clock: FakeClock) -> None:
    token = ask(q)
    q.decide(token, "deny")
    assert q.wait(token, timeout=1, sleep=clock.sleep).status == "denied"
    assert q.find_grant(q.digest("git push origin main", "/w", "ph1"), "s1") is None
    assert ask(q) != token


# --------------------------------------------------------------------------- grants


def test_allow_30m_is_honoured_for_thirty_minutes_in_any_session(q: ApprovalQueue, clock: FakeClock) -> None:
    token = ask(q)
    q.decide(token, "allow-30m")
    digest = q.digest("git push origin main", "/w", "ph1")
    grant = q.find_grant(digest, "s1")
    assert grant is not None and (grant.scope, grant.session, grant.expires) == ("allow-30m", None, T0 + 1800)
    assert q.find_grant(digest, "another-session", now=T0 + 1799) is not None
    assert q.find_grant(digest, None, now=T0 + 1799) is not None
    assert q.find_grant(digest, "s1", now=T0 + 1800) is None
    assert q.find_grant(q.digest("git push origin other", "/w", "ph1"), "s1") is None


def test_allow_session_is_scoped_to_its_session(q: ApprovalQueue, clock: FakeClock) -> None:
    token = ask(q, session="s1")
    q.decide(token, "allow-session")
    digest = q.digest("git push origin main", "/w", "ph1")
    assert q.find_grant(digest, "s1", now=T0 + 10 * 86400) is not None
    assert q.find_grant(digest, "s2") is None
    assert q.find_grant(digest, None) is None
    assert q.find_grant(q.digest("git push origin main", "/w", "other-policy"), "s1") is None


def test_allow_session_without_a_session_is_refused_without_change(q: ApprovalQueue, store: Store) -> None:
    token = ask(q, session=None)
    before = snapshot(store)
    with pytest.raises(UsageError, match="no session"):
        q.decide(token, "allow-session")
    assert snapshot(store) == before


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("token", "verb", "match"), [
    ("CLAW-ZZZZ", "allow", "unknown approval token"),
    ("nonsense!", "allow", "malformed approval token"),
    ("{pending}", "approve", "unknown decision"),
    ("{pending}", "", "unknown decision"),
    ("{decided}", "allow", "already decided"),
    ("{decided}", "deny", "already decided"),
    ("{expired}", "allow", "expired"),
])
def test_bad_decisions_are_usage_errors_and_change_nothing(q: ApprovalQueue, clock: FakeClock, store: Store,
                                                           token: str, verb: str, match: str) -> None:
    tokens = {"pending": ask(q, command="a"), "decided": ask(q, command="b"), "expired": ask(q, command="c", timeout=1)}
    q.decide(tokens["decided"], "allow")
    clock.t += 2
    before = snapshot(store)
    with pytest.raises(UsageError, match=match):
        q.decide(token.format(**tokens), verb)
    assert snapshot(store) == before


def test_a_batch_is_all_or_nothing(q: ApprovalQueue, store: Store) -> None:
    a, b = ask(q, command="a"), ask(q, command="b")
    before = snapshot(store)
    with pytest.raises(UsageError, match="unknown"):
        q.decide_many([a, "CLAW-ZZZZ", b], "deny")
    assert snapshot(store) == before
    assert [d.token for d in q.decide_many([a, b, a.lower()], "deny")] == [a, b]
    assert q.pending() == []


def test_decide_all_pending_decides_every_live_request(q: ApprovalQueue, clock: FakeClock) -> None:
    tokens = [ask(q, command=c) for c in ("a", "b", "c")]
    stale = ask(q, command="old", timeout=1)
    clock.t += 2
    decided = q.decide_all_pending("allow")
    assert sorted(d.token for d in decided) == sorted(tokens)
    assert stale not in {d.token for d in decided}
    with pytest.raises(UsageError, match="no pending"):
        q.decide_all_pending("deny")


# --------------------------------------------------------------------------- listing and expiry


def test_pending_lists_command_score_reason_session_and_age(q: ApprovalQueue, clock: FakeClock) -> None:
    token = ask(q)
    clock.t += 42
    [req] = q.pending()
    assert req.as_dict(clock.t) == {
        "token": token, "command": "git push origin main", "cwd": "/w", "session": "s1", "score": 70,
        "reason": "git push [rule: scores.git_push]", "gated": False, "status": "pending", "scope": None,
        "created": T0, "age": 42.0, "expires": T0 + 300, "digest": q.digest("git push origin main", "/w", "ph1"),
    }


def test_expire_stale_marks_old_requests_and_drops_ended_grants(q: ApprovalQueue, clock: FakeClock,
                                                                store: Store) -> None:
    late = ask(q, command="late", timeout=10)
    fresh = ask(q, command="fresh", timeout=None)
    kept = ask(q, command="kept", timeout=None)
    q.decide(ask(q, command="granted"), "allow-30m")
    clock.t += 3600
    kept2 = ask(q, command="recent", timeout=None)
    assert q.expire_stale(max_age=1800) == 3
    status = dict(store.query("SELECT command, status FROM approvals"))
    assert status == {"late": "expired", "fresh": "expired", "kept": "expired", "granted": "allowed",
                      "recent": "pending"}
    assert store.query("SELECT COUNT(*) FROM grants") == [(0,)]
    assert {late, fresh, kept, kept2}


# --------------------------------------------------------------------------- OTP gating


def test_a_gated_request_needs_a_valid_code_once(q: ApprovalQueue, clock: FakeClock, store: Store,
                                                  secret: bytes) -> None:
    first, second = ask(q, command="a", gated=True), ask(q, command="b", gated=True)
    before = snapshot(store)
    with pytest.raises(UsageError, match="needs an OTP code"):
        q.decide(first, "allow")
    with pytest.raises(UsageError, match="malformed OTP code"):
        q.decide(first, "allow", otp_code="12345")
    assert snapshot(store) == before
    code = otp.code_at(secret, clock.t)
    assert q.decide(first, "allow", otp_code=code).status == "allowed"
    before = snapshot(store)
    with pytest.raises(RefusedError, match="already used"):
        q.decide(second, "allow", otp_code=code)
    after = snapshot(store)
    assert after["approvals"] == before["approvals"]
    assert after["otp_state"][0][2] == 1  # the replay counted as a failure
    # denying a gated request needs no code
    assert q.decide(second, "deny").status == "denied"


def test_a_wrong_code_leaves_the_request_pending(q: ApprovalQueue, clock: FakeClock, store: Store,
                                                 secret: bytes) -> None:
    token = ask(q, gated=True)
    good = {otp.code_at_step(secret, otp.time_step(clock.t) + d) for d in (-1, 0, 1)}
    wrong = next(c for c in ("000000", "111111", "222222") if c not in good)
    with pytest.raises(RefusedError, match="wrong OTP code") as info:
        q.decide(token, "allow", otp_code=wrong)
    assert wrong not in str(info.value)
    assert q.get(token).status == "pending"  # type: ignore[union-attr]


def test_five_wrong_codes_lock_out_even_the_right_one(q: ApprovalQueue, clock: FakeClock, store: Store,
                                                      secret: bytes) -> None:
    token = ask(q, gated=True, timeout=3600)
    good = {otp.code_at_step(secret, otp.time_step(clock.t) + d) for d in (-1, 0, 1)}
    wrong = next(c for c in ("000000", "111111", "222222") if c not in good)
    for _ in range(5):
        with pytest.raises(RefusedError):
            q.decide(token, "allow", otp_code=wrong)
    clock.t += 60
    with pytest.raises(RefusedError, match="locked"):
        q.decide(token, "allow", otp_code=otp.code_at(secret, clock.t))
    clock.t += 300
    assert q.decide(token, "allow", otp_code=otp.code_at(secret, clock.t)).status == "allowed"


def test_a_gated_request_without_a_secret_cannot_be_allowed(q: ApprovalQueue, store: Store) -> None:
    token = ask(q, gated=True)
    with pytest.raises(UsageError, match="otp setup"):
        q.decide(token, "allow", otp_code="123456")


def test_verify_otp_is_single_use(store: Store, home: Home, secret: bytes) -> None:
    code = otp.code_at(secret, T0)
    assert queue.verify_otp(store, home, code, now=T0) == otp.time_step(T0)
    with pytest.raises(RefusedError, match="already used"):
        queue.verify_otp(store, home, code, now=T0 + 1)


def test_the_secret_file_is_private_and_not_replaced_without_force(home: Home) -> None:
    path = queue.write_otp_secret(home, "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(home.security).st_mode & 0o777 == 0o700
    with pytest.raises(UsageError, match="--force"):
        queue.write_otp_secret(home, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
    queue.write_otp_secret(home, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", force=True)
    assert queue.read_otp_secret(home) == bytes(20)


# --------------------------------------------------------------------------- obtain_approval


def obtain(store: Store, clock: FakeClock, lines: list[str], **kw: Any) -> ApprovalResult:
    args: dict[str, Any] = dict(command="git push origin main", cwd="/w", session="s1", score=70,
                                reason="git push", policy_hash="ph1", gated=False, timeout=30.0,
                                emit=lines.append, clock=clock, sleep=clock.sleep, poll=1.0)
    args.update(kw)
    return obtain_approval(store, **args)


def test_obtain_approval_emits_one_line_and_waits_for_the_human(store: Store, clock: FakeClock) -> None:
    lines: list[str] = []
    decided: list[str] = []

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if not decided:
            token = lines[0].split("token ")[1].split(";")[0]
            decided.append(ApprovalQueue(store, clock=clock).decide(token, "allow-session").token)

    result = obtain(store, clock, lines, sleep=sleep)
    assert result == ApprovalResult(True, decided[0], "allow-session", "human",
                                    f"approved by the human (allow-session) [token {decided[0]}]")
    assert lines == [f"clawshell: approval required (score 70, high): git push origin main; token {decided[0]}; "
                     f"decide in another terminal: clawshell approve {decided[0]} allow|deny|allow-30m|allow-session;"
                     " auto-deny in 30s"]
    # the grant answers the next identical call at once, silently
    again: list[str] = []
    assert obtain(store, clock, again) == ApprovalResult(True, None, "allow-session", "grant",
                                                         "remembered approval (allow-session)")
    assert again == []


def test_obtain_approval_times_out_as_a_denial(store: Store, clock: FakeClock) -> None:
    lines: list[str] = []
    result = obtain(store, clock, lines, gated=True, risk="high")
    assert (result.allowed, result.by, result.scope) == (False, "timeout", None)
    assert result.message == f"no decision within 30s, auto-denied [token {result.token}]"
    assert lines[0].endswith("allow|deny|allow-30m|allow-session --otp CODE; auto-deny in 30s")
    assert clock.t == T0 + 30


def test_obtain_approval_stops_waiting_when_the_estop_engages(store: Store, clock: FakeClock) -> None:
    from clawshell.approval import estop

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        estop.engage(store, "stop everything", kill=False)

    result = obtain(store, clock, [], sleep=sleep)
    assert (result.allowed, result.by) == (False, "estop")
    assert result.message.startswith("emergency stop engaged: stop everything")


def test_obtain_approval_renders_a_multiline_command_on_one_line(store: Store, clock: FakeClock) -> None:
    lines: list[str] = []
    obtain(store, clock, lines, command="git commit -m 'a\nb' && git push", timeout=1.0)
    assert len(lines) == 1 and "\n" not in lines[0]
    assert "git commit -m 'a\\nb' && git push" in lines[0]


# --------------------------------------------------------------------------- who may decide


@pytest.mark.parametrize(("env", "inside"), [
    ({}, False),
    ({"CLAWSHELL_INSIDE": "1"}, True),
    ({"CLAWSHELL_INSIDE": "0"}, False),
    ({"CLAWSHELL_DEPTH": "2"}, True),
    ({"CLAWSHELL_DEPTH": "0"}, False),
])
def test_inside_reason_reads_the_environment(env: dict[str, str], inside: bool) -> None:
    assert (queue.inside_reason(env) is not None) is inside


PROBE = "from clawshell.approval.queue import inside_reason; import sys; print(inside_reason() or 'outside')"


def _probe_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAWSHELL_INSIDE", "CLAWSHELL_DEPTH")}
    env.update(extra)
    return env


def test_an_ancestor_named_clawshell_means_inside() -> None:
    script = f'{sys.executable} -c "{PROBE}"; true'
    out = subprocess.run(["bash", "-c", f"exec -a clawshell bash -c '{script}'"], capture_output=True, text=True,
                         env=_probe_env(), timeout=30)
    assert "is clawshell" in out.stdout, out.stderr


def test_an_ancestor_marked_inside_counts_even_when_the_child_unsets_it() -> None:
    script = f'env -u CLAWSHELL_INSIDE {sys.executable} -c "{PROBE}"; true'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                         env=_probe_env(CLAWSHELL_INSIDE="1"), timeout=30)
    assert "runs inside a command clawshell started" in out.stdout, out.stderr


def test_a_plain_process_is_outside() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=_probe_env(), timeout=30)
    assert out.stdout.strip() == "outside", out.stderr


LANDLOCK_CHILD = textwrap.dedent("""
    import ctypes, os, struct, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    # landlock_create_ruleset(attr{handled_access_fs = MAKE_REG}, size, 0): restricts only file creation,
    # but any Landlock domain also cuts ptrace-mode access (readlink /proc/PID/exe) to processes outside it
    attr = ctypes.create_string_buffer(struct.pack("Q", 1 << 8), 8)
    fd = libc.syscall(444, attr, 8, 0)
    if fd < 0:
        print("landlock-unavailable", ctypes.get_errno()); sys.exit(0)
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        print("nnp-failed"); sys.exit(0)
    if libc.syscall(446, fd, 0) != 0:
        print("restrict-failed", ctypes.get_errno()); sys.exit(0)
    from clawshell.approval.queue import inside_reason
    print(inside_reason({}) or "outside")
""")


def test_a_landlocked_process_with_no_new_privs_is_inside() -> None:
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"landlock syscall numbers not known here for {platform.machine()}")
    # the probe runs as a grandchild so that its parent (this bash) is outside its domain
    out = subprocess.run(["bash", "-c", f'{sys.executable} -c "$CHILD"; true'], capture_output=True, text=True,
                         env=_probe_env(CHILD=LANDLOCK_CHILD), timeout=30)
    if out.stdout.startswith(("landlock-unavailable", "nnp-failed", "restrict-failed")):
        pytest.skip(f"kernel cannot apply Landlock here: {out.stdout.strip()}")
    assert "sandboxed" in out.stdout, (out.stdout, out.stderr)
