"""The human's side of approvals: ``approvals``, ``approve``, ``otp``, ``estop``.

``clawshell approvals [--json] [--all]``
    list pending requests (token, score, age, session, command, reason).
``clawshell approve TOKEN [TOKEN...] allow|deny|allow-30m|allow-session [--otp CODE]``
``clawshell approve --all-pending allow|deny [--otp CODE]``
    decide; unknown, expired or already decided tokens and malformed codes are a
    usage error (exit 2) and change nothing; a wrong OTP code is refused (126).
``clawshell otp setup [--force]`` / ``otp verify CODE`` / ``otp status``
    the TOTP second factor.
``clawshell estop [--reason TEXT]`` / ``estop resume [--otp CODE]`` / ``estop status``
    the emergency stop.

Deciding, OTP and resuming refuse (exit 126, one line) when run from inside a
command clawshell started; engaging the e-stop works from anywhere.
"""

from __future__ import annotations

import functools
import io
import json
import os
import socket
import time
from typing import Any, Callable, TypeVar

import click

from ..approval import queue as approval_queue
from ..errors import EXIT_DENIED, ClawshellError, UsageError
from ..home import Home

F = TypeVar("F", bound=Callable[..., Any])


def _handle_errors(func: F) -> F:
    """Turn a :class:`ClawshellError` into its one tagged stderr line and exit code,
    so the commands behave the same under the dispatcher and under ``CliRunner``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ClawshellError as exc:
            for line in str(exc).splitlines() or [exc.__class__.__name__]:
                click.echo(f"clawshell: {exc.tag}: {line}", err=True)
            raise SystemExit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


def _refuse_inside(what: str) -> None:
    """Exit 126 when this process runs inside a command clawshell started."""
    reason = approval_queue.inside_reason()
    if reason:
        click.echo(f"clawshell: denied: {what} must come from the human's own terminal, "
                   f"not from a command clawshell runs ({reason})", err=True)
        raise SystemExit(EXIT_DENIED)


def _open() -> tuple[Home, Any]:
    from ..store import Store

    home = Home.from_env()
    return home, Store.open(home)


def _age(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h"


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


# --------------------------------------------------------------------------- approvals


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the requests as JSON.")
@click.option("--all", "show_all", is_flag=True, help="Show the 20 newest requests in any state.")
@_handle_errors
def approvals(as_json: bool, show_all: bool) -> None:
    """List pending approval requests: token, score, age, session, command, reason."""
    _, store = _open()
    try:
        q = approval_queue.ApprovalQueue(store)
        now = time.time()
        q.expire_stale(now)
        rows = q.recent() if show_all else q.pending(now)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([r.as_dict(now) for r in rows], indent=2, sort_keys=True))
        return
    if not rows:
        click.echo("no pending approval requests" if not show_all else "no approval requests")
        return
    click.echo(f"{'TOKEN':<10} {'SCORE':>5} {'AGE':>5}  {'STATUS':<8} {'SESSION':<16} COMMAND")
    for r in rows:
        score = "-" if r.score is None else str(r.score)
        status = r.status + ("*" if r.gated else "")
        session = approval_queue.one_line(r.session or "-", 16)
        click.echo(f"{r.token:<10} {score:>5} {_age(r.age(now)):>5}  {status:<8} {session:<16} "
                   f"{approval_queue.one_line(r.command, 120)}")
        if r.reason:
            click.echo(f"{'':<10} reason: {approval_queue.one_line(r.reason, 160)}")
    if any(r.gated for r in rows):
        click.echo("* OTP-gated: allowing needs --otp CODE")
    if not show_all:
        click.echo("decide with: clawshell approve TOKEN allow|deny|allow-30m|allow-session")


@click.command()
@click.argument("args", nargs=-1, metavar="TOKEN... VERB")
@click.option("--all-pending", is_flag=True, help="Decide every pending request (VERB only).")
@click.option("--otp", "otp_code", default=None, metavar="CODE", help="Code from your authenticator app "
              "(needed to allow an OTP-gated request).")
@_handle_errors
def approve(args: tuple[str, ...], all_pending: bool, otp_code: str | None) -> None:
    """Decide requests: TOKEN [TOKEN...] allow|deny|allow-30m|allow-session.

    allow: this one request.  deny: this one request.  allow-30m: this exact action
    (command, cwd, policy) for 30 minutes in any session.  allow-session: this exact
    action for the rest of its session.
    """
    _refuse_inside("an approval")
    if not args:
        raise UsageError("approve needs TOKEN... VERB (or --all-pending VERB); "
                         f"VERB is one of {', '.join(approval_queue.VERBS)}")
    verb, tokens = args[-1], list(args[:-1])
    if verb.lower() not in approval_queue.VERBS:
        raise UsageError(f"the last argument must be the decision ({', '.join(approval_queue.VERBS)}), "
                         f"got {approval_queue.one_line(verb, 40)!r}")
    if all_pending and tokens:
        raise UsageError("give either tokens or --all-pending, not both")
    if not all_pending and not tokens:
        raise UsageError("no approval token given (see `clawshell approvals`), or use --all-pending")
    home, store = _open()
    try:
        q = approval_queue.ApprovalQueue(store, home=home)
        decided = q.decide_all_pending(verb, otp_code) if all_pending else q.decide_many(tokens, verb, otp_code)
    finally:
        store.close()
    for d in decided:
        click.echo(f"{d.token}: {d.status} ({d.scope}): {approval_queue.one_line(d.command, 120)}")


# --------------------------------------------------------------------------- otp


@click.group()
def otp() -> None:
    """TOTP second factor for gated approvals and e-stop resume."""


def _qr_text(uri: str) -> str | None:
    """The QR code of ``uri`` drawn with block characters, or None without ``qrcode``."""
    try:
        import qrcode  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None
    qr = qrcode.QRCode(border=1)
    qr.add_data(uri)
    qr.make(fit=True)
    out = io.StringIO()
    qr.print_ascii(out=out, invert=True)
    return out.getvalue()


@otp.command("setup")
@click.option("--force", is_flag=True, help="Replace an existing secret (the old app entry stops working).")
@click.option("--account", default=None, help="Account label in the app (default: USER@HOST).")
@_handle_errors
def otp_setup(force: bool, account: str | None) -> None:
    """Create the TOTP secret (security/otp.secret, 0600) and show it as a URI and QR code."""
    _refuse_inside("OTP setup")
    import secrets as _secrets

    from ..approval import otp as otp_mod

    home, store = _open()
    try:
        secret = otp_mod.encode_secret(_secrets.token_bytes(otp_mod.SECRET_BYTES))
        path = approval_queue.write_otp_secret(home, secret, force=force)
        approval_queue.reset_otp_state(store)
    finally:
        store.close()
    label = account or f"{os.environ.get('USER') or os.getuid()}@{socket.gethostname()}"
    uri = otp_mod.provisioning_uri(secret, label)
    click.echo(f"OTP secret written to {path} (mode 600).")
    click.echo("Add it to an authenticator app (TOTP, SHA-1, 6 digits, 30 s):")
    click.echo(f"  {uri}")
    qr = _qr_text(uri)
    if qr is not None:
        click.echo(qr.rstrip("\n"))
    else:
        click.echo("(no QR code: the `qrcode` package is not installed; scan nothing, type the secret)")
    click.echo(f"  secret: {' '.join(secret[i:i + 4] for i in range(0, len(secret), 4))}")
    click.echo("Check it with: clawshell otp verify CODE")


@otp.command("verify")
@click.argument("code")
@_handle_errors
def otp_verify(code: str) -> None:
    """Check a code from your app (it is spent: each code works once)."""
    _refuse_inside("an OTP code")
    home, store = _open()
    try:
        approval_queue.verify_otp(store, home, code, now=time.time(), what="otp verify")
    finally:
        store.close()
    click.echo("OTP code accepted.")


@otp.command("status")
@_handle_errors
def otp_status() -> None:
    """Whether a secret is set up, and the failure count / lockout."""
    home, store = _open()
    try:
        configured = approval_queue.read_otp_secret(home) is not None
        rows = store.query("SELECT last_step, failures, locked_until FROM otp_state WHERE id = 1")
    finally:
        store.close()
    if not configured:
        click.echo("OTP: not set up (run `clawshell otp setup`)")
        return
    failures, locked = (rows[0][1], rows[0][2]) if rows else (0, None)
    line = f"OTP: set up ({approval_queue.otp_secret_path(home)}); {failures} recent wrong code(s)"
    if locked is not None and locked > time.time():
        line += f"; locked until {_when(locked)}"
    click.echo(line)


# --------------------------------------------------------------------------- estop


@click.group(invoke_without_command=True)
@click.option("--reason", default=None, help="Why (shown to every refused command).")
@click.pass_context
@_handle_errors
def estop(ctx: click.Context, reason: str | None) -> None:
    """Emergency stop: refuse every new action and kill running sandboxed commands.

    `clawshell estop [--reason TEXT]` engages it (from anywhere); `estop resume
    [--otp CODE]` lifts it; `estop status` shows it.
    """
    if ctx.invoked_subcommand is not None:
        if reason is not None:
            raise UsageError("--reason goes with `clawshell estop`, not with a subcommand")
        return
    from ..approval import estop as estop_mod

    _, store = _open()
    try:
        result = estop_mod.engage(store, reason)
    finally:
        store.close()
    pids = ", ".join(str(p) for p in result.killed) or "none"
    click.echo(f"e-stop engaged{' (it already was)' if result.already else ''}: "
               f"{reason or 'engaged by the human'}; killed {len(result.killed)} process(es): {pids}")
    click.echo("every new command is refused until: clawshell estop resume")


def _resume_needs_otp(home: Home) -> bool:
    """True when the policy asks for an OTP to resume (estop.require_otp or a gated
    ``estop_resume``).  A policy that cannot be loaded is a config error (78)."""
    from ..approval.otp import is_gated
    from ..policy.loader import load_policy

    policy = load_policy(home, home.root, None)
    return bool(policy.estop_require_otp) or is_gated(policy, "estop_resume")


@estop.command("resume")
@click.option("--otp", "otp_code", default=None, metavar="CODE", help="Code from your authenticator app.")
@_handle_errors
def estop_resume(otp_code: str | None) -> None:
    """Lift the emergency stop (needs --otp CODE when the policy says so)."""
    _refuse_inside("resuming from an e-stop")
    from ..approval import estop as estop_mod

    home, store = _open()
    try:
        if _resume_needs_otp(home) or otp_code is not None:
            approval_queue.verify_otp(store, home, otp_code, now=time.time(), what="estop resume")
        was = estop_mod.resume(store)
    finally:
        store.close()
    click.echo("e-stop lifted: commands run again" if was else "e-stop was not engaged")


@estop.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
@_handle_errors
def estop_status(as_json: bool) -> None:
    """Show whether the emergency stop is engaged, since when and why."""
    from ..approval import estop as estop_mod

    _, store = _open()
    try:
        state = estop_mod.status(store)
        runs = store.query("SELECT COUNT(*) FROM runs")[0][0] if state.readable else None
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps({"engaged": state.engaged, "reason": state.reason, "since": state.since,
                               "readable": state.readable, "running": runs}, sort_keys=True))
        return
    if state.engaged:
        click.echo(f"e-stop ENGAGED since {_when(state.since)}: {state.reason}")
    else:
        click.echo(f"e-stop not engaged (last change {_when(state.since)}); {runs} registered run(s)")
