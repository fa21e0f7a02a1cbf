"""``clawshell security [--fix] [--json]``: the start-up audit of an installation.

Checks the state home's modes, the key files, the policy's risky settings and the
kernel layers, says what is wrong in one line each, and with ``--fix`` repairs what
can be repaired safely (modes).  Exit 0 when nothing is wrong, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import asdict, dataclass

import click

from ..errors import ClawshellError
from ..home import Home
from ..model import Autonomy, Policy


@dataclass(frozen=True)
class Finding:
    """One problem found by the audit."""

    check: str
    """Stable id of the check."""
    severity: str
    """``high`` | ``medium`` | ``low``."""
    message: str
    """What is wrong and where."""
    fixable: bool = False
    """``--fix`` can repair it."""
    fixed: bool = False
    """``--fix`` repaired it."""


def _mode_findings(home: Home, fix: bool) -> list[Finding]:
    out: list[Finding] = []
    wanted = [(home.root, 0o700)]
    for zone in ("config", "security", "storage", "logs", "cache"):
        wanted.append((os.path.join(home.root, zone), 0o700))
    if os.path.isdir(home.security):
        for name in sorted(os.listdir(home.security)):
            entry = os.path.join(home.security, name)
            wanted.append((entry, 0o700 if os.path.isdir(entry) else 0o600))
    if os.path.exists(home.database):
        wanted.append((home.database, 0o600))
    for path, mode in wanted:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            out.append(Finding("home.symlink", "high", f"{path} is a symlink; state must not be redirected"))
            continue
        have = stat.S_IMODE(st.st_mode)
        if have & ~mode:
            fixed = False
            if fix:
                os.chmod(path, mode)
                fixed = True
            out.append(Finding("home.mode", "high" if "security" in path else "medium",
                               f"{path} has mode {have:o}, expected {mode:o}", True, fixed))
        if st.st_uid != os.getuid():
            out.append(Finding("home.owner", "high", f"{path} is owned by uid {st.st_uid}, not {os.getuid()}"))
    return out


def _policy_findings(policy: Policy) -> list[Finding]:
    out: list[Finding] = []
    if policy.autonomy is Autonomy.FULL:
        out.append(Finding("policy.autonomy", "medium",
                           "autonomy is full: no approval gates and writes outside the workspace are allowed"))
    if policy.sandbox == "none":
        out.append(Finding("policy.sandbox", "high", "sandbox backend is none: commands run unconfined"))
    if policy.best_effort:
        out.append(Finding("policy.best_effort", "medium",
                           "best_effort is on: commands run with fewer kernel layers than asked"))
    if policy.network:
        out.append(Finding("policy.network", "low", "network is on for every command"))
    if not policy.leak_detection:
        out.append(Finding("policy.leaks", "medium", "leak detection is off: secrets in output reach the model"))
    if policy.receipts_emit == "none":
        out.append(Finding("policy.receipts", "low", "receipts are not shown to the agent (still recorded)"))
    return out


def _otp_findings(home: Home, policy: Policy) -> list[Finding]:
    secret = os.path.join(home.security, "otp.secret")
    needs = bool(policy.otp_gated_actions) or policy.estop_require_otp
    if needs and not os.path.exists(secret):
        return [Finding("otp.missing", "high",
                        "OTP is required by the policy but not set up: run `clawshell otp setup`")]
    return []


def _sandbox_findings(home: Home, policy: Policy) -> list[Finding]:
    from ..sandbox.probe import probe_host

    probe = probe_host(home.cache)
    out: list[Finding] = []
    if probe.landlock_abi == 0:
        out.append(Finding("sandbox.landlock", "high", "Landlock is unavailable on this kernel"))
    if not probe.seccomp:
        out.append(Finding("sandbox.seccomp", "high", "seccomp filters cannot be installed"))
    if probe.bwrap is None or not probe.userns:
        out.append(Finding("sandbox.bwrap", "medium" if policy.sandbox != "bwrap" else "high",
                           "bubblewrap is not usable: no mount/PID/network namespaces"
                           + (f" ({'; '.join(probe.notes)})" if probe.notes else "")))
    return out


@click.command()
@click.option("--fix", is_flag=True, help="Repair what can be repaired safely (file modes).")
@click.option("--json", "as_json", is_flag=True, help="Print findings as JSON.")
@click.option("--cwd", default=None, help="Workspace whose project policy to include.")
def security(fix: bool, as_json: bool, cwd: str | None) -> None:
    """Audit this installation: modes, keys, risky policy settings, kernel layers."""
    from ..policy.loader import load_policy

    home = Home.from_env()
    findings = _mode_findings(home, fix)
    try:
        policy = load_policy(home, os.path.abspath(cwd or os.getcwd()), os.environ.get("CLAWSHELL_POLICY"))
    except ClawshellError as exc:
        findings.append(Finding("policy.invalid", "high", str(exc)))
    else:
        findings += _policy_findings(policy) + _otp_findings(home, policy) + _sandbox_findings(home, policy)
    open_findings = [f for f in findings if not f.fixed]
    if as_json:
        click.echo(json.dumps({"home": home.root, "ok": not open_findings,
                               "findings": [asdict(f) for f in findings]}, indent=2))
    else:
        if not findings:
            click.echo(f"{home.root}: no problems found")
        for f in findings:
            state = " (fixed)" if f.fixed else (" (--fix repairs this)" if f.fixable else "")
            click.echo(f"{f.severity:6} {f.check}: {f.message}{state}")
    raise SystemExit(0 if not open_findings else 1)
