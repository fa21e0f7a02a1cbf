"""Front doors for agents: ``file`` (read/write/edit/ls), ``mcp``, ``session`` and
``hook`` (claude/codex/gemini).  Thin click edges over :mod:`clawshell.pipeline`,
:mod:`clawshell.mcp_server` and :mod:`clawshell.hooks`."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import click

_CWD_HELP = "Workspace root (default: $CLAWSHELL_CWD or the current directory)."
_POLICY_HELP = "Preset name or policy file (default: $CLAWSHELL_POLICY, then config/policy.toml)."


def _common(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--cwd``, ``--policy`` and ``--session`` for a file subcommand."""
    fn = click.option("--session", "session", default=None,
                      help="Session id (default: $CLAWSHELL_SESSION or the parent process).")(fn)
    fn = click.option("--policy", "policy", default=None, help=_POLICY_HELP)(fn)
    fn = click.option("--cwd", "cwd", default=None, help=_CWD_HELP)(fn)
    return fn


def _run_file(op: str, path: str, cwd: str | None, policy: str | None, session: str | None,
              **kw: Any) -> None:
    from ..pipeline import execute_file, resolve_workspace, session_id

    workspace, start = resolve_workspace(cwd, os.environ)
    result = execute_file(op, path, workspace=workspace, cwd=start,
                          session=session_id(session, os.environ),
                          policy_selector=policy or os.environ.get("CLAWSHELL_POLICY"), **kw)
    if result.output:
        out = sys.stdout.buffer
        out.write(result.output)
        out.flush()
    sys.exit(result.status)


# --------------------------------------------------------------------------- file


@click.group()
def file() -> None:
    """File tools under the shell's policy, with receipts and audit.

    Paths are confined to the workspace by the kernel (openat2 RESOLVE_BENEATH): a
    path outside it, or a symlink pointing out, is refused (exit 126) and nothing is
    written.  Exit 0 done, 1 failed, 126 refused.
    """


@file.command("read")
@click.argument("path")
@click.option("--offset", type=click.IntRange(min=1), default=None, help="First line to show (1-based).")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Number of lines to show.")
@click.option("--raw", is_flag=True, help="Print the lines as they are, without line numbers.")
@_common
def file_read(path: str, offset: int | None, limit: int | None, raw: bool, cwd: str | None,
              policy: str | None, session: str | None) -> None:
    """Print PATH as numbered lines (like Claude's Read); secrets are masked."""
    _run_file("read", path, cwd, policy, session, offset=offset, limit=limit, numbered=not raw)


@file.command("write")
@click.argument("path")
@_common
def file_write(path: str, cwd: str | None, policy: str | None, session: str | None) -> None:
    """Replace (or create) PATH with the content read from stdin, atomically."""
    content = sys.stdin.buffer.read()
    _run_file("write", path, cwd, policy, session, content=content)


@file.command("edit")
@click.argument("path")
@click.option("--old", "old", required=True, help="Exact text to replace.")
@click.option("--new", "new", required=True, help="Replacement text.")
@click.option("--all", "replace_all", is_flag=True, help="Replace every occurrence (default: exactly one).")
@_common
def file_edit(path: str, old: str, new: str, replace_all: bool, cwd: str | None, policy: str | None,
              session: str | None) -> None:
    """Replace the exact text OLD by NEW in PATH (it must occur once unless --all)."""
    _run_file("edit", path, cwd, policy, session, old=old, new=new, replace_all=replace_all)


@file.command("ls")
@click.argument("path", required=False, default=".")
@_common
def file_ls(path: str, cwd: str | None, policy: str | None, session: str | None) -> None:
    """List PATH (default: the current directory): dirs end in /, symlinks in @."""
    _run_file("ls", path, cwd, policy, session)


# --------------------------------------------------------------------------- mcp


@click.command()
@click.option("--cwd", "cwd", default=None, help=_CWD_HELP)
@click.option("--policy", "policy", default=None, help=_POLICY_HELP)
@click.option("--session", "session", default=None, help="Session id (default: $CLAWSHELL_SESSION or a new one).")
def mcp(cwd: str | None, policy: str | None, session: str | None) -> None:
    """Serve the shell and file tools over MCP on stdin/stdout.

    Tools: shell, read_file, write_file, edit_file, list_dir, check_command.  Register
    it with your agent, e.g. `claude mcp add clawshell -- clawshell mcp --cwd .`.
    """
    from ..mcp_server import ServerConfig, new_session_id, serve
    from ..pipeline import resolve_workspace

    workspace, _ = resolve_workspace(cwd, os.environ)
    sid = session or os.environ.get("CLAWSHELL_SESSION") or new_session_id()
    cfg = ServerConfig(workspace=workspace, session=sid, policy=policy or os.environ.get("CLAWSHELL_POLICY"))
    sys.exit(serve(cfg))


# --------------------------------------------------------------------------- session


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--cwd", "cwd", default=None, help=_CWD_HELP)
@click.option("--task", "task", default=None, help="What the agent is asked to do (stored with the session).")
@click.option("--policy", "policy", default=None, help=_POLICY_HELP)
@click.argument("agent", nargs=-1, required=True, type=click.UNPROCESSED)
def session(cwd: str | None, task: str | None, policy: str | None, agent: tuple[str, ...]) -> None:
    """Run AGENT with clawshell as its shell: `clawshell session --cwd DIR -- AGENT ARGS...`.

    A private directory with `bash` and `sh` entries for clawshell goes first on PATH;
    SHELL and CLAUDE_CODE_SHELL point at it; CLAWSHELL_CWD, CLAWSHELL_SESSION (a new
    id) and CLAWSHELL_POLICY are set, so every shell call of the agent joins one
    audited session.  The agent's exit status is passed through.
    """
    argv = list(agent)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise click.UsageError("missing the agent command after --")
    sys.exit(run_session(argv, cwd=cwd, task=task, policy=policy))


def new_session_id() -> str:
    """``s-YYYYMMDD-xxxxxxxx``: sortable by day, unguessable."""
    import secrets
    import time

    return f"s-{time.strftime('%Y%m%d', time.gmtime())}-{secrets.token_hex(4)}"


def clawshell_executable() -> str:
    """The ``clawshell`` program to link as ``bash``/``sh`` (never the real shell)."""
    import shutil

    candidates = [os.path.join(os.path.dirname(sys.executable), "clawshell")]
    if os.path.basename(sys.argv[0]) == "clawshell":
        candidates.append(os.path.abspath(sys.argv[0]))
    found = shutil.which("clawshell")
    if found:
        candidates.append(found)
    for cand in candidates:
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return os.path.realpath(cand)
    raise click.ClickException("cannot find the clawshell executable to install as the session's bash")


def run_session(argv: list[str], *, cwd: str | None, task: str | None, policy: str | None) -> int:
    """Start ``argv`` as an agent session with clawshell as its shell; return its exit status.

    The private ``bin`` directory lives in ``$CLAWSHELL_HOME/cache/sessions/<id>/`` —
    out of reach of sandboxed commands, so a command cannot replace the session's
    ``bash`` with something unconfined — and is removed when the agent exits.
    """
    import shutil
    import signal
    import subprocess

    from ..home import Home
    from ..pipeline import register_session, resolve_workspace

    workspace, _ = resolve_workspace(cwd, os.environ)
    home = Home.from_env()
    sid = new_session_id()
    exe = clawshell_executable()
    register_session(sid, task=task, cwd=workspace)
    top = os.path.join(home.zone("cache"), "sessions", sid)
    bin_dir = os.path.join(top, "bin")
    os.makedirs(bin_dir, mode=0o700)
    for name in ("bash", "sh"):
        os.symlink(exe, os.path.join(bin_dir, name))
    bash = os.path.join(bin_dir, "bash")
    env = dict(os.environ)
    env["PATH"] = bin_dir + (os.pathsep + env["PATH"] if env.get("PATH") else "")
    env.update(SHELL=bash, CLAUDE_CODE_SHELL=bash, CLAWSHELL_CWD=workspace, CLAWSHELL_SESSION=sid)
    if policy:
        env["CLAWSHELL_POLICY"] = policy
    # The terminal sends ^C / ^\ to the agent itself (same process group); the
    # launcher only waits.  TERM and HUP sent to the launcher are passed on.
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_quit = signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    try:
        try:
            child = subprocess.Popen(argv, env=env, cwd=workspace)
        except OSError as exc:
            raise click.ClickException(f"cannot start {argv[0]}: {exc.strerror or exc}") from None

        def forward(signum: int, _frame: object) -> None:
            try:
                child.send_signal(signum)
            except OSError:
                pass

        old_term = signal.signal(signal.SIGTERM, forward)
        old_hup = signal.signal(signal.SIGHUP, forward)
        try:
            status = child.wait()
        finally:
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGHUP, old_hup)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGQUIT, old_quit)
        shutil.rmtree(top, ignore_errors=True)
    return 128 - status if status < 0 else status


# --------------------------------------------------------------------------- hook


def _hook(agent: str, cwd: str | None, policy: str | None, approval_timeout: float | None) -> None:
    from ..hooks import run_hook

    try:
        data = sys.stdin.buffer.read()
    except Exception as exc:  # an unreadable stdin is still answered with a deny
        data = f"<stdin unreadable: {exc}>".encode()
    answer = run_hook(agent, data, cwd_option=cwd, policy_selector=policy, approval_timeout=approval_timeout)
    if answer.stdout:
        sys.stdout.write(answer.stdout + "\n")
        sys.stdout.flush()
    if answer.stderr:
        sys.stderr.write(answer.stderr + "\n")
        sys.stderr.flush()
    sys.exit(answer.exit)


def _hook_command(agent: str, doc: str) -> click.Command:
    @click.command(agent, help=doc)
    @click.option("--cwd", "cwd", default=None, help="Workspace root (default: $CLAWSHELL_CWD, the agent's "
                                                     "project dir, or the payload's cwd).")
    @click.option("--policy", "policy", default=None, help=_POLICY_HELP)
    @click.option("--approval-timeout", "approval_timeout", type=click.FloatRange(min=0), default=None,
                  help="Seconds to wait in the approval queue (codex/gemini; keep it below the hook timeout).")
    def command(cwd: str | None, policy: str | None, approval_timeout: float | None) -> None:
        _hook(agent, cwd, policy, approval_timeout)

    return command


@click.group()
def hook() -> None:
    """Pre-tool hooks: read the agent's JSON on stdin, answer allow / ask / deny.

    Any failure or malformed payload answers deny (never allow).
    """


hook.add_command(_hook_command(
    "claude", "Claude Code PreToolUse hook for Bash, Read, Write, Edit, MultiEdit (and Glob, Grep, LS, "
              "NotebookEdit): permissionDecision allow / ask / deny, exit 0."))
hook.add_command(_hook_command(
    "codex", "Codex CLI PreToolUse hook for Bash and apply_patch: allow = exit 0, deny = exit 2 with the "
             "reason on stderr; approval waits in clawshell's queue."))
hook.add_command(_hook_command(
    "gemini", "Gemini CLI BeforeTool hook (run_shell_command and the file tools): {} to allow; "
              "{\"decision\": \"deny\"} and exit 2 to block; approval waits in clawshell's queue."))


__all__ = ["file", "mcp", "session", "hook"]
