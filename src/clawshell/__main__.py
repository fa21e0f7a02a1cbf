"""Entry point: ``python -m clawshell`` and the ``clawshell`` console script.

No ``from __future__`` import and no ``os`` before the warm-server attempt: both cost
start-up time on every agent command (see ``_warmclient``).
"""

import sys


def main() -> None:
    """Dispatch to the CLI (kept tiny: the hot path imports as little as possible)."""
    # clawshell starts once per agent command: compiling its modules from source on
    # every start (PYTHONDONTWRITEBYTECODE=1 is common in agent containers) costs
    # more than everything else it does, so it always keeps its bytecode cache.
    sys.dont_write_bytecode = False
    from . import _warmclient

    warm_status = _warmclient.run(sys.argv)
    if warm_status is not None:  # a warm server ran the call (see clawshell.warm)
        import posix

        posix._exit(warm_status)
    import os

    if sys.flags.no_site:
        # Started by the lean launcher (python -I -S, see scripts/_bootstrap.sh), which
        # skips site-packages for the warm path; running in-process needs them.
        import site

        site.main()

    from . import _dccache

    home = os.environ.get("CLAWSHELL_HOME") or os.path.join(os.path.expanduser("~"), ".clawshell")
    _dccache.defer_import("inspect")
    _dccache.install(os.path.join(os.path.abspath(home), "cache"))
    from .cli import main as cli_main

    status = cli_main(sys.argv)
    # Skip the interpreter's teardown of every module and object (a noticeable part of
    # each call's cost): flush what Python buffered, run the atexit hooks, and leave.
    import atexit

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        status = status or 1
    atexit._run_exitfuncs()
    os._exit(status if isinstance(status, int) else 1)


if __name__ == "__main__":
    main()
