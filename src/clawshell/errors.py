"""One exception tree.  Denials are values (``Verdict``); exceptions are for broken
config, a missing backend, a store failure, or bugs."""

from __future__ import annotations

import os

EXIT_DENIED = 126
EXIT_USAGE = 2
EXIT_CONFIG = 78
EXIT_INTERNAL = 70


class ClawshellError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with, ``tag`` the stderr tag."""

    exit_code = EXIT_INTERNAL
    tag = "error"


class UsageError(ClawshellError):
    """Bad command-line usage (exit 2)."""

    exit_code = EXIT_USAGE
    tag = "usage"


class ConfigError(ClawshellError):
    """Invalid configuration (exit 78).  ``problems`` are ``file:line: key: message`` lines."""

    exit_code = EXIT_CONFIG
    tag = "config"

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class SandboxUnavailableError(ClawshellError):
    """The configured sandbox cannot be applied (exit 126: nothing runs)."""

    exit_code = EXIT_DENIED
    tag = "sandbox"


class StoreError(ClawshellError):
    """The audit/approval database cannot be read or written (fail closed, 126)."""

    exit_code = EXIT_DENIED
    tag = "store"


class RefusedError(ClawshellError):
    """An action refused outside the policy engine (e-stop, OTP wrong ...), exit 126."""

    exit_code = EXIT_DENIED
    tag = "denied"


def err(line: str) -> None:
    """Write one line to stderr (fd 2, unbuffered), never raising: the tagged lines
    clawshell shows an agent must not depend on Python's stream state."""
    try:
        os.write(2, (line.rstrip("\n") + "\n").encode("utf-8", "surrogateescape"))
    except OSError:
        pass
