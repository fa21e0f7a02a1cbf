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

    _dccache.defer_import("inspect")
    _dccache.install(os.path.join(_warmclient.home_root(os.environb), "cache"))
    from .cli import finish
    from .cli import main as cli_main

    os._exit(finish(cli_main(sys.argv)))


if __name__ == "__main__":
    main()
