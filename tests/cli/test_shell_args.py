"""Bash-compatible option parsing of the drop-in shell (pure)."""

from __future__ import annotations

import pytest

from clawshell.cli.shell import ShellInvocation, parse_shell_args
from clawshell.errors import UsageError

CASES = [
    (["-c", "echo hi"], ShellInvocation(command="echo hi")),
    (["-c", "echo $0 $1", "zero", "one"], ShellInvocation(command="echo $0 $1", positional=("zero", "one"))),
    (["-lc", "echo hi"], ShellInvocation(command="echo hi", passthrough=("-l",), login=True)),
    (["-cl", "echo hi"], ShellInvocation(command="echo hi", passthrough=("-l",), login=True)),
    (["-ilc", "echo hi"], ShellInvocation(command="echo hi", passthrough=("-il",), login=True, interactive=True)),
    (["-l", "-c", "echo hi"], ShellInvocation(command="echo hi", passthrough=("-l",), login=True)),
    (["-c", "-l", "echo hi"], ShellInvocation(command="echo hi", passthrough=("-l",), login=True)),
    (["-l", "-i", "-c", "echo hi"],
     ShellInvocation(command="echo hi", passthrough=("-l", "-i"), login=True, interactive=True)),
    (["--login", "-c", "x"], ShellInvocation(command="x", passthrough=("--login",), login=True)),
    (["--norc", "--noprofile", "-c", "x"], ShellInvocation(command="x", passthrough=("--norc", "--noprofile"))),
    (["-e", "-u", "-x", "-c", "x"], ShellInvocation(command="x", passthrough=("-e", "-u", "-x"))),
    (["-o", "pipefail", "-c", "x"], ShellInvocation(command="x", passthrough=("-o", "pipefail"))),
    (["-eo", "pipefail", "-c", "x"], ShellInvocation(command="x", passthrough=("-e", "-o", "pipefail"))),
    (["+H", "-c", "x"], ShellInvocation(command="x", passthrough=("+H",))),
    (["-c", "x", "--", "a"], ShellInvocation(command="x", positional=("--", "a"))),
    (["--", "script.sh", "a"], ShellInvocation(command=None, script_file="script.sh", positional=("a",))),
    (["-s"], ShellInvocation(command=None, stdin_script=True)),
    (["-s", "a", "b"], ShellInvocation(command=None, stdin_script=True, positional=("a", "b"))),
    ([], ShellInvocation(command=None, stdin_script=True)),
    (["--version"], ShellInvocation(command=None, version=True)),
    (["--cwd", "/w", "-c", "x"], ShellInvocation(command="x", cwd="/w")),
    (["--cwd=/w", "--policy", "readonly", "-lc", "x"],
     ShellInvocation(command="x", cwd="/w", policy="readonly", passthrough=("-l",), login=True)),
    (["-c", "x", "--cwd", "/w"], ShellInvocation(command="x", positional=("--cwd", "/w"))),
    (["--rcfile", "/r", "-i", "-c", "x"],
     ShellInvocation(command="x", passthrough=("--rcfile", "/r", "-i"), interactive=True)),
]


@pytest.mark.parametrize("args,expected", CASES, ids=[" ".join(a) or "<none>" for a, _ in CASES])
def test_parse_shell_args_matches_bash(args: list[str], expected: ShellInvocation) -> None:
    assert parse_shell_args(args) == expected


@pytest.mark.parametrize("args", [["-c"], ["-Z", "-c", "x"], ["--bogus", "-c", "x"], ["--cwd"], ["-l", "-c"]])
def test_bad_usage_is_a_usage_error(args: list[str]) -> None:
    with pytest.raises(UsageError):
        parse_shell_args(args)
