"""approval.otp: RFC 6238 vectors, single use, window, lockout, gating."""

from __future__ import annotations

import pytest

from clawshell.approval import otp
from clawshell.approval.otp import OtpCheck, OtpState
from clawshell.model import Policy

RFC_SECRET = b"12345678901234567890"


@pytest.mark.parametrize(("now", "code8"), [
    (59, "94287082"), (1111111109, "07081804"), (1111111111, "14050471"),
    (1234567890, "89005924"), (2000000000, "69279037"), (20000000000, "65353130"),
])
def test_codes_follow_rfc6238_sha1_vectors(now: int, code8: str) -> None:
    # the RFC vectors are 8 digits; a 6-digit code is the low 6 digits of the same value
    assert otp.code_at(RFC_SECRET, now) == code8[-6:]


@pytest.mark.parametrize(("given", "expected"), [
    ("123456", "123456"), (" 123 456 ", "123456"), ("000000", "000000"),
])
def test_normalize_code_accepts_six_digits(given: str, expected: str) -> None:
    assert otp.normalize_code(given) == expected


@pytest.mark.parametrize("given", ["", "12345", "1234567", "12345a", "١٢٣٤٥٦", "12-456", "abcdef"])
def test_normalize_code_rejects_malformed(given: str) -> None:
    with pytest.raises(otp.OtpCodeFormatError):
        otp.normalize_code(given)


def test_secret_round_trips_through_base32() -> None:
    raw = bytes(range(20))
    text = otp.encode_secret(raw)
    assert "=" not in text
    assert otp.decode_secret(text.lower()) == raw
    assert otp.decode_secret(" ".join([text[:8], text[8:]])) == raw


@pytest.mark.parametrize("bad", ["not base32!", "AAAA", ""])
def test_decode_secret_rejects_bad_text(bad: str) -> None:
    with pytest.raises(ValueError):
        otp.decode_secret(bad)


def test_provisioning_uri_names_issuer_and_parameters() -> None:
    uri = otp.provisioning_uri("JBSWY3DPEHPK3PXP", "alice@host")
    assert uri == ("otpauth://totp/clawshell:alice@host?secret=JBSWY3DPEHPK3PXP&issuer=clawshell"
                   "&algorithm=SHA1&digits=6&period=30")


NOW = 1_700_000_015.0  # 15 s into a step


@pytest.mark.parametrize("offset", [-1, 0, 1])
def test_codes_one_step_either_side_are_accepted(offset: int) -> None:
    step = otp.time_step(NOW) + offset
    code = otp.code_at_step(RFC_SECRET, step)
    assert otp.check(RFC_SECRET, code, NOW, OtpState()) == OtpCheck(True, OtpState(step, 0, None), "accepted", step)


@pytest.mark.parametrize("offset", [-3, -2, 2, 3])
def test_codes_outside_the_window_are_refused(offset: int) -> None:
    code = otp.code_at_step(RFC_SECRET, otp.time_step(NOW) + offset)
    if code in {otp.code_at_step(RFC_SECRET, otp.time_step(NOW) + d) for d in (-1, 0, 1)}:
        pytest.skip("code collision between steps for this secret (1 in 10^6)")
    result = otp.check(RFC_SECRET, code, NOW, OtpState())
    assert (result.ok, result.state) == (False, OtpState(None, 1, None))


def test_a_code_is_accepted_once() -> None:
    code = otp.code_at(RFC_SECRET, NOW)
    first = otp.check(RFC_SECRET, code, NOW, OtpState())
    assert first.ok
    replay = otp.check(RFC_SECRET, code, NOW + 1, first.state)
    assert (replay.ok, replay.reason.startswith("OTP code already used")) == (False, True)
    assert replay.state == OtpState(first.state.last_step, 1, None)


def test_an_older_step_is_refused_after_a_newer_one_was_accepted() -> None:
    step = otp.time_step(NOW)
    newer = otp.check(RFC_SECRET, otp.code_at_step(RFC_SECRET, step + 1), NOW, OtpState())
    older = otp.check(RFC_SECRET, otp.code_at_step(RFC_SECRET, step), NOW, newer.state)
    assert (newer.ok, older.ok) == (True, False)


def test_the_next_step_code_is_accepted_after_the_current_one() -> None:
    step = otp.time_step(NOW)
    first = otp.check(RFC_SECRET, otp.code_at_step(RFC_SECRET, step), NOW, OtpState())
    later = otp.check(RFC_SECRET, otp.code_at_step(RFC_SECRET, step + 1), NOW + 30, first.state)
    assert (first.ok, later.ok, later.state.last_step) == (True, True, step + 1)


def _wrong(now: float) -> str:
    good = {otp.code_at_step(RFC_SECRET, otp.time_step(now) + d) for d in (-1, 0, 1)}
    return next(c for c in ("000000", "111111", "222222") if c not in good)


def test_five_wrong_codes_lock_verification_for_five_minutes() -> None:
    state = OtpState()
    for i in range(4):
        result = otp.check(RFC_SECRET, _wrong(NOW), NOW + i, state)
        assert (result.ok, result.state.failures, result.state.locked_until) == (False, i + 1, None)
        state = result.state
    fifth = otp.check(RFC_SECRET, _wrong(NOW), NOW + 4, state)
    assert fifth.state == OtpState(None, 0, NOW + 4 + 300)
    assert "locked" in fifth.reason
    # while locked even the right code is refused, and nothing changes
    right = otp.code_at(RFC_SECRET, NOW + 100)
    locked = otp.check(RFC_SECRET, right, NOW + 100, fifth.state)
    assert (locked.ok, locked.state) == (False, fifth.state)
    assert right not in locked.reason
    # after the lockout the right code works again
    later = NOW + 4 + 300
    assert otp.check(RFC_SECRET, otp.code_at(RFC_SECRET, later), later, fifth.state).ok


def test_a_success_resets_the_failure_count() -> None:
    state = otp.check(RFC_SECRET, _wrong(NOW), NOW, OtpState()).state
    ok = otp.check(RFC_SECRET, otp.code_at(RFC_SECRET, NOW), NOW, state)
    assert ok.state.failures == 0


def test_reasons_never_contain_the_code() -> None:
    wrong = _wrong(NOW)
    assert wrong not in otp.check(RFC_SECRET, wrong, NOW, OtpState()).reason


@pytest.mark.parametrize(("gated", "tool", "command", "parts", "expected"), [
    ((), "shell", "git push origin main", (), False),
    (("shell",), "shell", "ls", (), True),
    (("shell",), "mcp.shell", "ls", (), True),
    (("shell",), "file.write", "", (), False),
    (("file_write",), "file.write", "", (), True),
    (("file_write",), "write_file", "", (), True),
    (("estop_resume",), "estop_resume", "", (), True),
    (("git push*",), "shell", "git push origin main", (), True),
    (("git push",), "shell", "git push origin main", (), True),
    (("git push",), "shell", "git pushy", (), False),
    (("git push",), "shell", "cd app && git push origin main", ("cd app", "git push origin main"), True),
    (("git push*",), "shell", "git status", ("git status",), False),
    (("rm -rf *",), "shell", "rm  -rf   build", (), True),
    (("*",), "shell", "echo hi", (), True),
])
def test_is_gated_matches_tool_kinds_and_command_patterns(gated, tool, command, parts, expected) -> None:
    assert otp.is_gated(Policy(otp_gated_actions=gated), tool, command, parts) is expected


@pytest.mark.parametrize(("entries", "count"), [
    (("shell", "git push*", "file_write"), 0),
    (("browser_open",), 1),
    (("file.writes",), 1),
    (("",), 1),
])
def test_gated_actions_problems_reports_unknown_kinds(entries, count) -> None:
    assert len(otp.gated_actions_problems(entries)) == count
