"""``clawshell warm status|stop``: the per-home warm server (see :mod:`clawshell.warm`)."""

from __future__ import annotations

import json

import click


@click.group()
def warm() -> None:
    """The warm server that keeps clawshell loaded between agent commands.

    It starts by itself on the first `clawshell -c` of a home and exits after
    CLAWSHELL_WARM_IDLE seconds without a call (default 600).  CLAWSHELL_WARM=0
    turns it off (every call then runs in-process).
    """


@warm.command("status")
@click.option("--all", "all_homes", is_flag=True, help="Servers of every home, not just this one.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(all_homes: bool, as_json: bool) -> None:
    """List running warm servers (this home's by default)."""
    from ..home import Home
    from ..warm import servers

    found = servers(None if all_homes else Home.from_env().root)
    if as_json:
        click.echo(json.dumps([{"pid": pid, "home": home} for pid, home in found]))
        return
    if not found:
        click.echo("no warm server running" + ("" if all_homes else " for this home"))
    for pid, home in found:
        click.echo(f"pid {pid}  home {home}")


@warm.command("stop")
@click.option("--all", "all_homes", is_flag=True, help="Stop the servers of every home.")
def stop(all_homes: bool) -> None:
    """Stop warm servers (running calls finish; the next call starts a new one)."""
    from ..home import Home
    from ..warm import stop as stop_servers

    pids = stop_servers(None if all_homes else Home.from_env().root)
    click.echo(f"stopped {len(pids)} warm server(s)" + (": " + " ".join(map(str, pids)) if pids else ""))
