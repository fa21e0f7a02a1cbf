"""The policy layer: ``engine`` (pure decisions), ``rules`` (command patterns),
``paths`` (path rules), ``scores`` (irreversibility), ``loader`` (TOML, I/O).

Importing this package is cheap: submodules are imported by name where needed.
:class:`ScopedPolicy` carries what a project file can add beyond the fields of
:class:`~clawshell.model.Policy`; the engine reads those fields with ``getattr`` so a
plain ``Policy`` works everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Policy

SHELL_TOOLS = frozenset({"shell", "bash"})
"""Tool names that mean "run shell commands" in ``[policy.tools]``."""

FILE_TOOLS = {"read": "read_file", "write": "write_file", "edit": "edit_file", "list": "list_dir",
              "delete": "delete_file"}
"""``evaluate_file`` op -> tool name in ``[policy.tools]``."""


@dataclass(frozen=True)
class ScopedPolicy(Policy):
    """A :class:`~clawshell.model.Policy` plus the narrowing a project file can add."""

    tools_allowed: tuple[str, ...] | None = None
    """``[policy.tools] allowed``: None (missing) any tool; otherwise only these
    (``shell``/``bash``, ``read_file``, ``write_file``, ``edit_file``, ``list_dir``,
    ``delete_file``); a tool not listed is denied."""
    tools_denied: tuple[str, ...] = ()
    """``[policy.tools] denied``: tools that are denied (wins over ``allowed``)."""
    write_allow: tuple[str, ...] | None = None
    """``[policy.filesystem] write_allow``: None (missing) anywhere writable; otherwise
    writes inside the workspace must fall under one of these absolute paths."""


def tool_allowed(policy: Policy, tool: str) -> bool:
    """True when ``tool`` may be used under ``policy`` (``bash`` and ``shell`` are one tool)."""
    names = SHELL_TOOLS if tool in SHELL_TOOLS else frozenset({tool})
    denied = getattr(policy, "tools_denied", ())
    if names & set(denied):
        return False
    allowed = getattr(policy, "tools_allowed", None)
    return allowed is None or bool(names & set(allowed))
