"""The ``clawshell SUBCOMMAND`` click group.  Each area's commands live in their own
module and are imported only when used (``LAZY``)."""

from __future__ import annotations

import importlib
import json
import os
import sys

import click

from ..errors import ClawshellError

LAZY: dict[str, tuple[str, str]] = {
    "audit": ("clawshell.cli.audit", "audit"),
    "receipts": ("clawshell.cli.audit", "receipts"),
    "approvals": ("clawshell.cli.approvals", "approvals"),
    "approve": ("clawshell.cli.approvals", "approve"),
    "otp": ("clawshell.cli.approvals", "otp"),
    "estop": ("clawshell.cli.approvals", "estop"),
    "doctor": ("clawshell.cli.doctor", "doctor"),
    "file": ("clawshell.cli.integrations", "file"),
    "mcp": ("clawshell.cli.integrations", "mcp"),
    "session": ("clawshell.cli.integrations", "session"),
    "hook": ("clawshell.cli.integrations", "hook"),
    "security": ("clawshell.cli.security", "security"),
    "warm": ("clawshell.cli.warm", "warm"),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """All command names, eager and lazy."""
        return sorted(set(super().list_commands(ctx)) | set(LAZY))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import the module of a lazy command when it is asked for."""
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None or cmd_name not in LAZY:
            return cmd
        module_name, attr = LAZY[cmd_name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return None
            raise
        return getattr(module, attr, None)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="clawshell", prog_name="clawshell")
def cli() -> None:
    """clawshell: a drop-in shell for AI coding agents.

    Run `clawshell -c COMMAND` like `bash -c`; the subcommands below are for humans
    and integrations.
    """


@cli.command()
@click.option("-c", "command", required=True, help="The command string to judge.")
@click.option("--cwd", "cwd", default=None, help="Workspace root (default: $CLAWSHELL_CWD or .).")
@click.option("--policy", "policy", default=None, help="Preset name or policy file.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def check(command: str, cwd: str | None, policy: str | None, as_json: bool) -> None:
    """Show the decision for COMMAND with its evidence; nothing runs."""
    from ..home import Home
    from ..pipeline import eval_context, judge, resolve_workspace, session_id
    from ..policy.loader import load_policy
    from ..render import reason_text, verdict_dict

    home = Home.from_env()
    workspace, start = resolve_workspace(cwd, os.environ)
    pol = load_policy(home, workspace, policy or os.environ.get("CLAWSHELL_POLICY"))
    ctx = eval_context(workspace, start, home, session_id(None, os.environ), os.environ)
    verdict = judge(command, pol, ctx, home)
    if as_json:
        out = {"command": command, "cwd": start, "workspace": workspace, "policy": pol.name,
               **verdict_dict(verdict)}
        click.echo(json.dumps(out, indent=2, sort_keys=True))
    else:
        click.echo(f"{verdict.decision.label} (score {verdict.score}, {verdict.risk.value}): {reason_text(verdict)}")
        for ev in verdict.evidence:
            line = f"  - {ev.decision.label:7} {ev.rule}: {ev.reason}"
            if ev.matched:
                line += f" [{ev.matched}]"
            if ev.score is not None:
                line += f" (score {ev.score})"
            click.echo(line)
    sys.exit({"allow": 0, "approve": 1, "deny": 126}[verdict.decision.label])


def run_click(args: list[str]) -> int:
    """Run the click group on ``args``; map errors to exit codes and one-line messages."""
    try:
        rv = cli.main(args=args, prog_name="clawshell", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        return 130
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except ClawshellError:
        raise
    # With standalone_mode=False click returns ctx.exit(n)'s code instead of raising.
    return rv if isinstance(rv, int) else 0
