"""Entry point: ``python -m clawshell`` and the ``clawshell`` console script."""

from __future__ import annotations

import sys


def main() -> None:
    """Dispatch to the CLI (kept tiny: the hot path imports as little as possible)."""
    # clawshell starts once per agent command: compiling its modules from source on
    # every start (PYTHONDONTWRITEBYTECODE=1 is common in agent containers) costs
    # more than everything else it does, so it always keeps its bytecode cache.
    sys.dont_write_bytecode = False
    import os

    from . import _dccache

    home = os.environ.get("CLAWSHELL_HOME") or os.path.join(os.path.expanduser("~"), ".clawshell")
    _dccache.install(os.path.join(os.path.abspath(home), "cache"))
    from .cli import main as cli_main

    sys.exit(cli_main(sys.argv))


if __name__ == "__main__":
    main()
