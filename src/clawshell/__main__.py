"""Entry point: ``python -m clawshell`` and the ``clawshell`` console script."""

from __future__ import annotations

import sys


def main() -> None:
    """Dispatch to the CLI (kept tiny: the hot path imports as little as possible)."""
    from .cli import main as cli_main

    sys.exit(cli_main(sys.argv))


if __name__ == "__main__":
    main()
