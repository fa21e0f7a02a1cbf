"""The state home: ``$CLAWSHELL_HOME`` (default ``~/.clawshell``), mode 700, in zones.

``config/`` policy.toml and settings (no secrets); ``security/`` receipt keys, OTP
secret (0600); ``storage/`` the SQLite database; ``logs/``; ``cache/`` (disposable).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Home:
    """Paths of one clawshell state home."""

    root: str
    """Absolute path of the home."""

    @classmethod
    def from_env(cls, environ: os._Environ[str] | dict[str, str] | None = None) -> "Home":
        """Locate the home from ``CLAWSHELL_HOME`` or ``~/.clawshell``."""
        env = os.environ if environ is None else environ
        root = env.get("CLAWSHELL_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".clawshell")
        return cls(os.path.abspath(root))

    @property
    def config(self) -> str:
        """``config/``: policy.toml and settings."""
        return os.path.join(self.root, "config")

    @property
    def security(self) -> str:
        """``security/``: keys and secrets, 0700 dir, 0600 files."""
        return os.path.join(self.root, "security")

    @property
    def storage(self) -> str:
        """``storage/``: the database."""
        return os.path.join(self.root, "storage")

    @property
    def logs(self) -> str:
        """``logs/``."""
        return os.path.join(self.root, "logs")

    @property
    def cache(self) -> str:
        """``cache/``: disposable (parser tables, compiled BPF)."""
        return os.path.join(self.root, "cache")

    @property
    def policy_file(self) -> str:
        """The global policy file."""
        return os.path.join(self.config, "policy.toml")

    @property
    def database(self) -> str:
        """The SQLite database."""
        return os.path.join(self.storage, "clawshell.db")

    def zone(self, name: str) -> str:
        """Return zone ``name``, creating the home (0700) and the zone (0700) if missing."""
        path = os.path.join(self.root, name)
        # makedirs applies the mode only to the last component: make the root 0700 first.
        for d in (self.root, path):
            try:
                os.makedirs(d, mode=0o700, exist_ok=True)
            except FileExistsError:
                pass
        if not os.path.isdir(path):
            from .errors import StoreError

            raise StoreError(f"{path} exists and is not a directory")
        return path
