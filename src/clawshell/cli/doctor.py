"""``clawshell doctor [--json]``: which kernel layers this host offers and what a run enforces.

Reports the Landlock ABI, seccomp filter support, whether bubblewrap is installed and
can create its namespaces, the pids cgroup, and, for the policy in force here, the
layers a default run would really apply, in words (or one JSON object with
``--json``).  Exit 0 when a default run would be confined, 1 when it would be
refused or run unconfined.
"""

from __future__ import annotations

import json
import os

import click


def _report(policy_selector: str | None, cwd: str | None) -> dict[str, object]:
    from ..home import Home
    from ..model import Policy
    from ..sandbox import describe_enforcement
    from ..sandbox.probe import pids_cgroup_parent, probe_host

    home = Home.from_env()
    probe = probe_host(home.cache)
    policy_note = None
    try:
        from ..policy.loader import load_policy

        policy = load_policy(home, os.path.abspath(cwd or os.environ.get("CLAWSHELL_CWD") or "."), policy_selector)
    except Exception as exc:  # a broken policy must not hide the host report
        policy = Policy()
        policy_note = f"policy not loaded ({exc.__class__.__name__}: {exc}); showing the built-in defaults"
    cgroup = pids_cgroup_parent()
    enforce = describe_enforcement(policy, probe, cgroup)
    from .._warmclient import OFF_VALUES
    from ..warm import servers

    warm_setting = os.environ.get("CLAWSHELL_WARM", "1").strip().lower()
    return {
        "warm_server": {"enabled": warm_setting not in OFF_VALUES,
                        "spawn": warm_setting not in OFF_VALUES and warm_setting != "no-spawn",
                        "running": [pid for pid, _home in servers(home.root)]},
        "kernel": os.uname().release,
        "euid": os.geteuid(),
        "landlock_abi": probe.landlock_abi,
        "seccomp": probe.seccomp,
        "bwrap": probe.bwrap,
        "userns": probe.userns,
        "pids_cgroup": cgroup,
        "notes": list(probe.notes),
        "policy": {"name": policy.name, "sandbox": policy.sandbox, "best_effort": policy.best_effort,
                   "network": policy.network, "note": policy_note},
        "default_run": {"layers": enforce["layers"], "refused": enforce["refused"],
                        "enforces": [{"topic": t, "what": w} for t, w in enforce["items"]]},  # type: ignore[attr-defined]
    }


def _words(rep: dict[str, object]) -> str:
    abi = rep["landlock_abi"]
    lines = [f"kernel {rep['kernel']}, running as uid {rep['euid']}",
             f"landlock: {'ABI ' + str(abi) if abi else 'unavailable'}",
             f"seccomp:  {'filters supported' if rep['seccomp'] else 'unavailable'}",
             f"bwrap:    {rep['bwrap'] + ' (namespaces usable)' if rep['bwrap'] else 'unusable'}",
             f"pids:     {rep['pids_cgroup'] or 'no writable pids cgroup (watchdog instead)'}"]
    lines += [f"  note: {n}" for n in rep["notes"]]  # type: ignore[attr-defined]
    warm = rep["warm_server"]
    if not warm["enabled"]:  # type: ignore[index]
        lines.append("warm:     off (CLAWSHELL_WARM); every call starts in-process")
    else:
        running = warm["running"]  # type: ignore[index]
        state = f"running (pid {', '.join(map(str, running))})" if running else "not running"
        lines.append(f"warm:     {state}; " + ("the next call starts one" if warm["spawn"] and not running  # type: ignore[index]
                                                else "calls without a terminal use it" if running
                                                else "not started automatically (CLAWSHELL_WARM=no-spawn)"))
    pol = rep["policy"]
    run = rep["default_run"]
    lines.append("")
    lines.append(f"policy {pol['name']!r}: sandbox = {pol['sandbox']}, best_effort = "  # type: ignore[index]
                 f"{str(pol['best_effort']).lower()}")  # type: ignore[index]
    if pol["note"]:  # type: ignore[index]
        lines.append(f"  note: {pol['note']}")  # type: ignore[index]
    if run["refused"]:  # type: ignore[index]
        lines.append(f"a default run would be REFUSED: {run['refused']}")  # type: ignore[index]
    else:
        layers = ", ".join(run["layers"]) or "none"  # type: ignore[index]
        lines.append(f"a default run enforces: {layers}")
        for item in run["enforces"]:  # type: ignore[index]
            lines.append(f"  {item['topic']}: {item['what']}")
    return "\n".join(lines)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--policy", "policy", default=None, help="Preset name or policy file (default: as for -c).")
@click.option("--cwd", "cwd", default=None, help="Workspace whose project policy applies (default: .).")
def doctor(as_json: bool, policy: str | None, cwd: str | None) -> None:
    """Show which sandbox layers this host offers and what a run would enforce."""
    rep = _report(policy or os.environ.get("CLAWSHELL_POLICY"), cwd)
    if as_json:
        click.echo(json.dumps(rep, indent=2, sort_keys=True))
    else:
        click.echo(_words(rep))
    run = rep["default_run"]
    confined = bool(run["layers"]) and not run["refused"]  # type: ignore[index]
    raise SystemExit(0 if confined else 1)
