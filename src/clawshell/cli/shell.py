"""Bash-compatible argument parsing for the drop-in shell (``clawshell -c CMD`` and
``bash -c CMD`` when installed under the name ``bash``/``sh``).

Options are parsed the way bash parses them: long options first, then single-letter
options (bundled or not, ``-`` or ``+``) in any order until the first operand or
``--``.  With ``-c`` the first operand is the command string, the next ones become
``$0``, ``$1`` ...  Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError

# Single-letter flags bash accepts on its command line that take no argument.  They
# are passed through to the real shell unchanged.
_PLAIN_FLAGS = frozenset("abefhkmnptuvxBCEHPTilrsD")
# Flags that take the next word as their argument.
_ARG_FLAGS = frozenset("oO")
# bash's long options: (name, takes an argument).
_BASH_LONG = {
    "--login": False, "--norc": False, "--noprofile": False, "--noediting": False,
    "--posix": False, "--verbose": False, "--restricted": False, "--debugger": False,
    "--dump-strings": False, "--dump-po-strings": False, "--protected": False,
    "--wordexp": False, "--rcfile": True, "--init-file": True,
}
# clawshell's own long options, accepted among bash's.
_OWN_LONG = {"--cwd": True, "--policy": True, "--session": True}


@dataclass(frozen=True)
class ShellInvocation:
    """A parsed drop-in shell command line."""

    command: str | None
    """The ``-c`` command string, or None when the script comes from stdin."""
    positional: tuple[str, ...] = ()
    """Operands after the command string (``$0``, ``$1`` ...) or, for ``-s``, ``$1`` ..."""
    passthrough: tuple[str, ...] = ()
    """Options handed to the real shell as given (``-l``, ``-e``, ``-o pipefail``, ``--norc`` ...)."""
    login: bool = False
    """``-l`` / ``--login``: the real shell reads the user's startup files."""
    interactive: bool = False
    """``-i`` given."""
    stdin_script: bool = False
    """``-s`` given, or no command and no script file."""
    script_file: str | None = None
    """``bash FILE args``: the first operand when there is no ``-c``."""
    cwd: str | None = None
    """``--cwd DIR``."""
    policy: str | None = None
    """``--policy NAME|FILE``."""
    session: str | None = None
    """``--session ID``."""
    version: bool = False
    """``--version``."""
    help: bool = False
    """``--help``."""


def parse_shell_args(args: list[str]) -> ShellInvocation:
    """Parse ``args`` (without argv[0]) like bash does; raise UsageError on bad usage."""
    passthrough: list[str] = []
    own: dict[str, str] = {}
    flags_c = login = interactive = stdin_script = version = want_help = False
    i = 0
    n = len(args)
    # Long options come first in bash, but agents and users mix ours in anywhere
    # before the first operand, so both kinds are accepted in any order.
    while i < n:
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in _OWN_LONG:
                if not eq:
                    if i + 1 >= n:
                        raise UsageError(f"{name}: option requires an argument")
                    value = args[i + 1]
                    i += 1
                own[name[2:]] = value
            elif name == "--version":
                version = True
            elif name == "--help":
                want_help = True
            elif name in _BASH_LONG:
                if name == "--login":
                    login = True
                passthrough.append(name)
                if _BASH_LONG[name]:
                    if eq:
                        passthrough.append(value)
                    elif i + 1 < n:
                        passthrough.append(args[i + 1])
                        i += 1
                    else:
                        raise UsageError(f"{name}: option requires an argument")
            else:
                raise UsageError(f"{arg}: invalid option")
            i += 1
            continue
        if len(arg) > 1 and arg[0] in "-+" and arg != "-":
            sign = arg[0]
            letters = arg[1:]
            j = 0
            kept = ""
            while j < len(letters):
                ch = letters[j]
                if ch == "c" and sign == "-":
                    flags_c = True
                elif ch in _ARG_FLAGS:
                    # `-o pipefail`: the argument is the rest of this word or the next word.
                    if kept:
                        passthrough.append(sign + kept)
                        kept = ""
                    rest = letters[j + 1:]
                    if rest:
                        optarg = rest
                    elif i + 1 < n:
                        optarg = args[i + 1]
                        i += 1
                    else:
                        optarg = None
                    passthrough.append(sign + ch)
                    if optarg is not None:
                        passthrough.append(optarg)
                    break
                elif ch in _PLAIN_FLAGS:
                    if sign == "-":
                        if ch == "l":
                            login = True
                        elif ch == "i":
                            interactive = True
                        elif ch == "s":
                            stdin_script = True
                            j += 1
                            continue  # -s is ours to honour, not the real shell's
                    kept += ch
                else:
                    raise UsageError(f"{sign}{ch}: invalid option")
                j += 1
            if kept:
                passthrough.append(sign + kept)
            i += 1
            continue
        break
    operands = args[i:]
    command: str | None = None
    script_file: str | None = None
    positional: tuple[str, ...] = ()
    if version or want_help:
        pass
    elif flags_c:
        if not operands:
            raise UsageError("-c: option requires an argument")
        command = operands[0]
        positional = tuple(operands[1:])
    elif stdin_script or not operands:
        stdin_script = True
        positional = tuple(operands)
    else:
        script_file = operands[0]
        positional = tuple(operands[1:])
    return ShellInvocation(
        command=command, positional=positional, passthrough=tuple(passthrough), login=login,
        interactive=interactive, stdin_script=stdin_script, script_file=script_file,
        cwd=own.get("cwd"), policy=own.get("policy"), session=own.get("session"),
        version=version, help=want_help,
    )
