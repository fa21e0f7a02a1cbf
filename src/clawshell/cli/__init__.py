"""Command-line entry: a multi-call program.

Called as ``bash``/``sh`` (a symlink or copy under that name) or as ``clawshell`` with
shell options, it is the drop-in shell; ``clawshell SUBCOMMAND ...`` goes to the click
group in ``cli.commands``.  This module is on the hot path: it imports nothing heavy.
"""

from __future__ import annotations

import os
import sys

from .._warmclient import SHELL_NAMES, SUBCOMMANDS
from ..errors import EXIT_INTERNAL, EXIT_USAGE, ClawshellError, err

BASH_VERSION_TEXT = (
    "GNU bash, version {bash} (clawshell {claw})\n"
    "Copyright (C) 2022 Free Software Foundation, Inc.\n"
    "License GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>\n"
    "\n"
    "This is free software; you are free to change and redistribute it.\n"
    "There is NO WARRANTY, to the extent permitted by law.\n"
)

USAGE = """\
Usage: clawshell [--cwd DIR] [--policy NAME|FILE] [bash options] -c COMMAND [ARG0 ARGS...]
       clawshell [--cwd DIR] [bash options] [-s] [ARGS...]   (script on stdin)
       clawshell COMMAND ...   (check, audit, receipts, approvals, approve, otp, estop,
                                doctor, file, mcp, session, hook, security, warm; --help for each)
"""


def finish(status: object) -> int:
    """Flush what Python buffered and run the atexit hooks; the exit status to report.

    Callers then leave with ``os._exit`` (skipping the interpreter's teardown of every
    module and object, a noticeable part of each call's cost): ``__main__`` in-process,
    and a warm-server worker before it reports the status to its caller.
    """
    import atexit

    code = status if isinstance(status, int) else 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = code or 1
    atexit._run_exitfuncs()
    return code


def main(argv: list[str]) -> int:
    """Run clawshell with ``argv`` (including argv[0]) and return the exit status."""
    prog = os.path.basename(argv[0]) if argv else "clawshell"
    args = list(argv[1:])
    try:
        if prog in SHELL_NAMES or not args or args[0] not in SUBCOMMANDS:
            return _shell_main(prog, args, argv[0] if argv else prog)
        from .commands import run_click

        return run_click(args)
    except ClawshellError as exc:
        for line in str(exc).splitlines() or [exc.__class__.__name__]:
            err(f"clawshell: {exc.tag}: {line}")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # an internal error: nothing ran, say what broke
        err(f"clawshell: internal error: {exc.__class__.__name__}: {exc}")
        if os.environ.get("CLAWSHELL_DEBUG"):
            import traceback

            traceback.print_exc()
        return EXIT_INTERNAL


def _shell_main(prog: str, args: list[str], argv0: str) -> int:
    from .shell import parse_shell_args

    try:
        inv = parse_shell_args(args)
    except ClawshellError as exc:
        err(f"{prog}: {exc}")
        err(USAGE.splitlines()[0])
        return EXIT_USAGE
    if inv.version:
        from .. import __version__

        bash_version = os.environ.get("BASH_VERSION_OVERRIDE", "5.2.15(1)-release")
        sys.stdout.write(BASH_VERSION_TEXT.format(bash=bash_version, claw=__version__))
        sys.stdout.flush()
        return 0
    if inv.help:
        sys.stdout.write(USAGE)
        return 0
    from ..realshell import exec_real_shell, inside_sandbox, locate_real_shell

    if inside_sandbox(os.environ):
        # Nested call inside a command clawshell already confined: hand over at once.
        exec_real_shell(locate_real_shell(prog, os.environ), inv, argv0)
    from ..pipeline import run_shell

    return run_shell(inv, prog=prog, argv0=argv0)
