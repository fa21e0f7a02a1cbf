"""Tests of clawshell.shellparse: every simple command a string would run.

The tables compare whole SimpleCommand objects (``text`` left out: it is evidence, not
semantics) and (kind, position) of the problems.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clawshell.model import ParseProblem, ParseResult, Redirect, SimpleCommand
from clawshell.shellparse import parse


def C(*argv: str, a: tuple[tuple[str, str], ...] = (), r: tuple[Redirect, ...] = (), dyn: tuple[int, ...] = (),
      via: tuple[str, ...] = (), code: tuple[str, str] | None = None, bg: bool = False) -> SimpleCommand:
    """Expected command (text is not compared)."""
    return SimpleCommand(argv=tuple(argv), assignments=a, redirects=r, dynamic_words=dyn, via=via,
                         inline_code=code, background=bg)


def R(op: str, target: str, fd: int | None = None, dyn: bool = False) -> Redirect:
    return Redirect(op=op, fd=fd, target=target, dynamic=dyn)


S = ("$(...)",)
B = ("`...`",)


def commands(result: ParseResult) -> list[SimpleCommand]:
    return [replace(c, text="") for c in result.commands]


def problems(result: ParseResult) -> list[tuple[str, int | None]]:
    return [(p.kind, p.position) for p in result.problems]


# (source, expected commands)  -- each of these parses without problems
CHAINING = [
    ("ls -la", [C("ls", "-la")]),
    ("a && b || c", [C("a"), C("b"), C("c")]),
    ("a; b; c", [C("a"), C("b"), C("c")]),
    ("a;b&&c||d|e", [C("a"), C("b"), C("c"), C("d"), C("e")]),
    ("a | b | c", [C("a"), C("b"), C("c")]),
    ("a |& b", [C("a"), C("b")]),
    ("a & b", [C("a", bg=True), C("b")]),
    ("a && b & c", [C("a", bg=True), C("b", bg=True), C("c")]),
    ("(a; b) &", [C("a", bg=True), C("b", bg=True)]),
    ("sleep 1 & wait", [C("sleep", "1", bg=True), C("wait")]),
    ("a\nb\n\nc", [C("a"), C("b"), C("c")]),
    ("! a | b", [C("a"), C("b")]),
    ("{ a; b; }", [C("a"), C("b")]),
    ("(cd /tmp && rm -rf x)", [C("cd", "/tmp"), C("rm", "-rf", "x")]),
    ("cd dir && make test", [C("cd", "dir"), C("make", "test")]),
    ("ls; # rm -rf x", [C("ls")]),
    ("ls # $(rm x)\necho hi", [C("ls"), C("echo", "hi")]),
    ("time make -j4 | tee log", [C("make", "-j4"), C("tee", "log")]),
    ("time -p ls", [C("ls")]),
    ("coproc sleep 1", [C("sleep", "1", bg=True)]),
    ("a \\\n  && b", [C("a"), C("b")]),
    ("", []),
    ("   \n\t ", []),
    ("# only a comment", []),
    ("true;", [C("true")]),
]

SUBSTITUTION = [
    ("echo $(whoami)", [C("echo", "$(whoami)", dyn=(1,)), C("whoami", via=S)]),
    ("echo `id -u`", [C("echo", "`id -u`", dyn=(1,)), C("id", "-u", via=B)]),
    ('echo "$(date) and `hostname`"', [C("echo", "$(date) and `hostname`", dyn=(1,)), C("date", via=S),
                                       C("hostname", via=B)]),
    ("echo $(echo $(rm x))", [C("echo", "$(echo $(rm x))", dyn=(1,)), C("echo", "$(rm x)", dyn=(1,), via=S),
                              C("rm", "x", via=S + S)]),
    ("cat <(ls) >(wc -l)", [C("cat", "<(ls)", ">(wc -l)", dyn=(1, 2)), C("ls", via=("<(...)",)),
                            C("wc", "-l", via=(">(...)",))]),
    ("diff <(sort a) <(sort b)", [C("diff", "<(sort a)", "<(sort b)", dyn=(1, 2)), C("sort", "a", via=("<(...)",)),
                                  C("sort", "b", via=("<(...)",))]),
    ("X=$(rm -rf /) true", [C("true", a=(("X", "$(rm -rf /)"),)), C("rm", "-rf", "/", via=S)]),
    ("ls > $(mktemp)", [C("ls", r=(R(">", "$(mktemp)", dyn=True),)), C("mktemp", via=S)]),
    ("echo ${x:-$(id)}", [C("echo", "${x:-$(id)}", dyn=(1,)), C("id", via=S)]),
    ("echo ${x:-`id`}", [C("echo", "${x:-`id`}", dyn=(1,)), C("id", via=B)]),
    ("echo $((1 + $(wc -l < f)))", [C("echo", "$((1 + $(wc -l < f)))", dyn=(1,)),
                                    C("wc", "-l", r=(R("<", "f"),), via=S)]),
    ("echo $[1+2]", [C("echo", "$[1+2]", dyn=(1,))]),
    ("a[$(id)]=1 ls", [C("ls", a=(("a[$(id)]", "1"),)), C("id", via=S)]),
    ("for f in $(ls *.py); do echo $f; done", [C("ls", "*.py", via=S), C("echo", "$f", dyn=(1,))]),
    ("case $(uname) in Linux) echo l;; esac", [C("uname", via=S), C("echo", "l")]),
    ("x=`date`", [C(a=(("x", "`date`"),)), C("date", via=B)]),
    ('git commit -m "$(cat <<\'EOF\'\nFix it\n\nBody.\nEOF\n)"',
     [C("git", "commit", "-m", "$(cat <<'EOF'\nFix it\n\nBody.\nEOF\n)", dyn=(3,)),
      C("cat", r=(R("<<", "Fix it\n\nBody.\n"),), via=S)]),
    ("echo $(case x in a) rm y;; esac)", [C("echo", "$(case x in a) rm y;; esac)", dyn=(1,)), C("rm", "y", via=S)]),
    ("echo $( (cd x; ls) )", [C("echo", "$( (cd x; ls) )", dyn=(1,)), C("cd", "x", via=S), C("ls", via=S)]),
    ("[ -n \"$(git status --porcelain)\" ]", [C("[", "-n", "$(git status --porcelain)", "]", dyn=(2,)),
                                            C("git", "status", "--porcelain", via=S)]),
    ("while read l; do echo $l; done < <(find .)",
     [C("read", "l"), C("echo", "$l", dyn=(1,)), C(r=(R("<", "<(find .)", dyn=True),)),
      C("find", ".", via=("<(...)",))]),
    ("ls > >(tee x)", [C("ls", r=(R(">", ">(tee x)", dyn=True),)), C("tee", "x", via=(">(...)",))]),
    ("tool --file=<(rm x)", [C("tool", "--file=<(rm x)", dyn=(1,)), C("rm", "x", via=("<(...)",))]),
    ("x=<(ls) y", [C("y", a=(("x", "<(ls)"),)), C("ls", via=("<(...)",))]),
    ("echo $(cd sub && pwd)", [C("echo", "$(cd sub && pwd)", dyn=(1,)), C("cd", "sub", via=S), C("pwd", via=S)]),
    ("x=$(sleep 1 & echo hi)", [C(a=(("x", "$(sleep 1 & echo hi)"),)), C("sleep", "1", via=S, bg=True),
                                C("echo", "hi", via=S)]),
    ('echo "`echo \\`id\\``"', [C("echo", "`echo \\`id\\``", dyn=(1,)), C("echo", "`id`", dyn=(1,), via=B),
                                C("id", via=B + B)]),
]

QUOTING = [
    ("\\rm -rf x", [C("rm", "-rf", "x")]),
    ('"r""m" x', [C("rm", "x")]),
    ("$'\\x72m' x", [C("rm", "x")]),
    ("r\\m x", [C("rm", "x")]),
    ("'rm' x", [C("rm", "x")]),
    ('$"rm" x', [C("rm", "x")]),
    ("$'\\162m' x", [C("rm", "x")]),
    ("$'\\u0072m' x", [C("rm", "x")]),
    ("$'\\U00000072m' x", [C("rm", "x")]),
    ("ec''ho hi", [C("echo", "hi")]),
    ("echo $'a\\tb\\n' $'\\cA' $'\\e'", [C("echo", "a\tb\n", "\x01", "\x1b")]),
    ('echo "a\\"b" \'c\'"d"', [C("echo", 'a"b', "cd")]),
    ('echo "\\$HOME" \\$HOME', [C("echo", "$HOME", "$HOME")]),
    ("echo '$HOME'", [C("echo", "$HOME")]),
    ('echo "$HOME"/.ssh', [C("echo", "$HOME/.ssh", dyn=(1,))]),
    ("echo ${HOME}/.aws", [C("echo", "${HOME}/.aws", dyn=(1,))]),
    ("echo ~/x *.py [ab]", [C("echo", "~/x", "*.py", "[ab]")]),
    ('echo "a b"c', [C("echo", "a bc")]),
    ("echo a\\ b", [C("echo", "a b")]),
    ("echo 'it'\\''s'", [C("echo", "it's")]),
    ('echo "it\'s"', [C("echo", "it's")]),
    ('echo "a\\nb"', [C("echo", "a\\nb")]),
    ("echo $1 $@ $# $? $$ $! $-", [C("echo", "$1", "$@", "$#", "$?", "$$", "$!", "$-", dyn=(1, 2, 3, 4, 5, 6, 7))]),
    ("echo $ a$", [C("echo", "$", "a$")]),
    ('cat "my file.txt"', [C("cat", "my file.txt")]),
    ('echo "a<(b)" \'c<(d)\' e\\<\\(f\\)', [C("echo", "a<(b)", "c<(d)", "e<(f)")]),
    ("echo $'$(x)' '$(y)' \"\\$(z)\"", [C("echo", "$(x)", "$(y)", "$(z)")]),
    ("X='$(no)' y", [C("y", a=(("X", "$(no)"),))]),
]

WRAPPERS = [
    ('bash -c "rm -rf /tmp/x; ls"', [C("bash", "-c", "rm -rf /tmp/x; ls"), C("rm", "-rf", "/tmp/x", via=("bash -c",)),
                                     C("ls", via=("bash -c",))]),
    ("sh -c 'echo hi' arg0 arg1", [C("sh", "-c", "echo hi", "arg0", "arg1"), C("echo", "hi", via=("sh -c",))]),
    ("bash -lc 'make'", [C("bash", "-lc", "make"), C("make", via=("bash -c",))]),
    ("bash -c -l 'make'", [C("bash", "-c", "-l", "make"), C("make", via=("bash -c",))]),
    ("bash -ec 'a && b'", [C("bash", "-ec", "a && b"), C("a", via=("bash -c",)), C("b", via=("bash -c",))]),
    ("bash -o pipefail -c 'a | b'", [C("bash", "-o", "pipefail", "-c", "a | b"), C("a", via=("bash -c",)),
                                     C("b", via=("bash -c",))]),
    ("zsh -c ls", [C("zsh", "-c", "ls"), C("ls", via=("zsh -c",))]),
    ("dash -c ls", [C("dash", "-c", "ls"), C("ls", via=("dash -c",))]),
    ("ksh -c ls", [C("ksh", "-c", "ls"), C("ls", via=("ksh -c",))]),
    ("/bin/bash -c ls", [C("/bin/bash", "-c", "ls"), C("ls", via=("bash -c",))]),
    ("bash script.sh", [C("bash", "script.sh")]),
    ("bash -c \"bash -c 'rm x'\"", [C("bash", "-c", "bash -c 'rm x'"), C("bash", "-c", "rm x", via=("bash -c",)),
                                    C("rm", "x", via=("bash -c", "bash -c"))]),
    ('eval "ls -la"', [C("eval", "ls -la"), C("ls", "-la", via=("eval",))]),
    ("eval rm -rf x", [C("eval", "rm", "-rf", "x"), C("rm", "-rf", "x", via=("eval",))]),
    ("exec rm x", [C("exec", "rm", "x"), C("rm", "x", via=("exec",))]),
    ("exec -a name ls", [C("exec", "-a", "name", "ls"), C("ls", via=("exec",))]),
    ("exec 3>&1", [C("exec", r=(R(">&", "1", fd=3),))]),
    ("env FOO=1 rm x", [C("env", "FOO=1", "rm", "x"), C("rm", "x", a=(("FOO", "1"),), via=("env",))]),
    ("env -i -u HOME A=1 B=2 cmd", [C("env", "-i", "-u", "HOME", "A=1", "B=2", "cmd"),
                                    C("cmd", a=(("A", "1"), ("B", "2")), via=("env",))]),
    ("env -S 'rm -rf x'", [C("env", "-S", "rm -rf x"), C("rm", "-rf", "x", via=("env -S",))]),
    ("env", [C("env")]),
    ("command rm x", [C("command", "rm", "x"), C("rm", "x", via=("command",))]),
    ("command -p rm x", [C("command", "-p", "rm", "x"), C("rm", "x", via=("command",))]),
    ("command -v rm", [C("command", "-v", "rm")]),
    ("builtin cd x", [C("builtin", "cd", "x"), C("cd", "x", via=("builtin",))]),
    ("nohup ./server &", [C("nohup", "./server", bg=True), C("./server", via=("nohup",), bg=True)]),
    ("timeout 10 make", [C("timeout", "10", "make"), C("make", via=("timeout",))]),
    ("timeout -s KILL -k 5 10s make", [C("timeout", "-s", "KILL", "-k", "5", "10s", "make"),
                                       C("make", via=("timeout",))]),
    ("timeout --signal=TERM 1m rm x", [C("timeout", "--signal=TERM", "1m", "rm", "x"), C("rm", "x", via=("timeout",))]),
    ("nice -n 5 make", [C("nice", "-n", "5", "make"), C("make", via=("nice",))]),
    ("nice -10 make", [C("nice", "-10", "make"), C("make", via=("nice",))]),
    ("ionice -c 3 rm x", [C("ionice", "-c", "3", "rm", "x"), C("rm", "x", via=("ionice",))]),
    ("stdbuf -oL -eL grep x", [C("stdbuf", "-oL", "-eL", "grep", "x"), C("grep", "x", via=("stdbuf",))]),
    ("\\time -v ls", [C("time", "-v", "ls"), C("ls", via=("time",))]),
    ("/usr/bin/time -o out -f %e ls", [C("/usr/bin/time", "-o", "out", "-f", "%e", "ls"), C("ls", via=("time",))]),
    ("xargs rm", [C("xargs", "rm"), C("rm", via=("xargs",))]),
    ("xargs -I{} -n 1 -P 4 mv {} dst", [C("xargs", "-I{}", "-n", "1", "-P", "4", "mv", "{}", "dst"),
                                        C("mv", "{}", "dst", via=("xargs",))]),
    ("xargs -0 -r -I % sh -c 'rm %'", [C("xargs", "-0", "-r", "-I", "%", "sh", "-c", "rm %"),
                                       C("sh", "-c", "rm %", via=("xargs",)),
                                       C("rm", "%", via=("xargs", "sh -c"))]),
    ("xargs", [C("xargs"), C("echo", via=("xargs",))]),
    ("find . -name '*.py' -exec rm {} \\;", [C("find", ".", "-name", "*.py", "-exec", "rm", "{}", ";"),
                                             C("rm", "{}", via=("find -exec",))]),
    ("find . -type f -exec chmod 644 {} +", [C("find", ".", "-type", "f", "-exec", "chmod", "644", "{}", "+"),
                                             C("chmod", "644", "{}", via=("find -exec",))]),
    ("find . -execdir sh -c 'rm \"$1\"' _ {} ';'",
     [C("find", ".", "-execdir", "sh", "-c", 'rm "$1"', "_", "{}", ";"),
      C("sh", "-c", 'rm "$1"', "_", "{}", via=("find -execdir",)),
      C("rm", "$1", dyn=(1,), via=("find -execdir", "sh -c"))]),
    ("find . -ok rm {} \\; -okdir cat {} \\;", [C("find", ".", "-ok", "rm", "{}", ";", "-okdir", "cat", "{}", ";"),
                                                C("rm", "{}", via=("find -ok",)), C("cat", "{}", via=("find -okdir",))]),
    ("find /tmp -name '*.log' -delete", [C("find", "/tmp", "-name", "*.log", "-delete")]),
    ("sudo rm -rf /", [C("sudo", "rm", "-rf", "/"), C("rm", "-rf", "/", via=("sudo",))]),
    ("sudo -u root -H bash -c 'id'", [C("sudo", "-u", "root", "-H", "bash", "-c", "id"),
                                      C("bash", "-c", "id", via=("sudo",)), C("id", via=("sudo", "bash -c"))]),
    ("sudo -E FOO=1 make install", [C("sudo", "-E", "FOO=1", "make", "install"),
                                    C("make", "install", a=(("FOO", "1"),), via=("sudo",))]),
    ("sudo --user=bob ls", [C("sudo", "--user=bob", "ls"), C("ls", via=("sudo",))]),
    ("sudo -l", [C("sudo", "-l")]),
    ("doas -u root rm x", [C("doas", "-u", "root", "rm", "x"), C("rm", "x", via=("doas",))]),
    ("su -c 'rm x' root", [C("su", "-c", "rm x", "root"), C("rm", "x", via=("su -c",))]),
    ("su - bob --command='ls'", [C("su", "-", "bob", "--command=ls"), C("ls", via=("su -c",))]),
    ("git -c core.pager='less; rm x' log", [C("git", "-c", "core.pager=less; rm x", "log"),
                                            C("less", via=("git -c core.pager",)), C("rm", "x", via=("git -c core.pager",))]),
    ("git -c core.sshCommand='ssh -i k' fetch", [C("git", "-c", "core.sshCommand=ssh -i k", "fetch"),
                                                 C("ssh", "-i", "k", via=("git -c core.sshCommand",))]),
    ("git -c alias.x='!rm -rf ~' x", [C("git", "-c", "alias.x=!rm -rf ~", "x"),
                                      C("rm", "-rf", "~", via=("git -c alias.x",))]),
    ("git -c alias.st=status st", [C("git", "-c", "alias.st=status", "st")]),
    ("git -c core.editor=vim -c diff.external=./d.sh commit",
     [C("git", "-c", "core.editor=vim", "-c", "diff.external=./d.sh", "commit"),
      C("vim", via=("git -c core.editor",)), C("./d.sh", via=("git -c diff.external",))]),
    ("git -c credential.helper='!f() { echo x; }; f' push",
     [C("git", "-c", "credential.helper=!f() { echo x; }; f", "push"),
      C("echo", "x", via=("git -c credential.helper",)), C("f", via=("git -c credential.helper",))]),
    ("git -c core.fsmonitor=true status", [C("git", "-c", "core.fsmonitor=true", "status")]),
    ("git -c user.name=x commit -m hi", [C("git", "-c", "user.name=x", "commit", "-m", "hi")]),
    ("git -C repo status", [C("git", "-C", "repo", "status")]),
    ("git submodule foreach --recursive 'git clean -fdx'",
     [C("git", "submodule", "foreach", "--recursive", "git clean -fdx"),
      C("git", "clean", "-fdx", via=("git submodule foreach",))]),
    ("git rebase -i --exec 'make test' HEAD~3", [C("git", "rebase", "-i", "--exec", "make test", "HEAD~3"),
                                                 C("make", "test", via=("git rebase --exec",))]),
    ("git rebase -x 'rm x' main", [C("git", "rebase", "-x", "rm x", "main"), C("rm", "x", via=("git rebase -x",))]),
    ("git bisect run make test", [C("git", "bisect", "run", "make", "test"),
                                  C("make", "test", via=("git bisect run",))]),
    ("git filter-branch --tree-filter 'rm -f secret' HEAD",
     [C("git", "filter-branch", "--tree-filter", "rm -f secret", "HEAD"),
      C("rm", "-f", "secret", via=("git filter-branch --tree-filter",))]),
    ("git fetch --upload-pack='touch /tmp/p' origin", [C("git", "fetch", "--upload-pack=touch /tmp/p", "origin"),
                                                       C("touch", "/tmp/p", via=("git fetch --upload-pack",))]),
    ("watch -n 1 'ls | wc -l'", [C("watch", "-n", "1", "ls | wc -l"), C("ls", via=("watch",)),
                                 C("wc", "-l", via=("watch",))]),
    ("watch -x ls -l", [C("watch", "-x", "ls", "-l"), C("ls", "-l", via=("watch",))]),
    ("setsid -f server", [C("setsid", "-f", "server"), C("server", via=("setsid",))]),
    ("chroot /mnt /bin/sh", [C("chroot", "/mnt", "/bin/sh"), C("/bin/sh", via=("chroot",))]),
    ("flock /tmp/lock -c 'rm x'", [C("flock", "/tmp/lock", "-c", "rm x"), C("rm", "x", via=("flock -c",))]),
    ("flock -n /tmp/lock make", [C("flock", "-n", "/tmp/lock", "make"), C("make", via=("flock",))]),
    ("strace -f -o trace.txt ls", [C("strace", "-f", "-o", "trace.txt", "ls"), C("ls", via=("strace",))]),
    ("ltrace -e malloc ls", [C("ltrace", "-e", "malloc", "ls"), C("ls", via=("ltrace",))]),
    ("unbuffer make", [C("unbuffer", "make"), C("make", via=("unbuffer",))]),
    ("script -qc 'ls -la' /dev/null", [C("script", "-qc", "ls -la", "/dev/null"), C("ls", "-la", via=("script -c",))]),
    ("trap 'rm -f $tmp' EXIT", [C("trap", "rm -f $tmp", "EXIT"), C("rm", "-f", "$tmp", dyn=(2,), via=("trap",))]),
    ("trap - INT", [C("trap", "-", "INT")]),
    ("busybox sh -c ls", [C("busybox", "sh", "-c", "ls"), C("sh", "-c", "ls", via=("busybox",)),
                          C("ls", via=("busybox", "sh -c"))]),
    ("timeout 5 nohup nice -n 1 sudo rm x",
     [C("timeout", "5", "nohup", "nice", "-n", "1", "sudo", "rm", "x"),
      C("nohup", "nice", "-n", "1", "sudo", "rm", "x", via=("timeout",)),
      C("nice", "-n", "1", "sudo", "rm", "x", via=("timeout", "nohup")),
      C("sudo", "rm", "x", via=("timeout", "nohup", "nice")),
      C("rm", "x", via=("timeout", "nohup", "nice", "sudo"))]),
]

REDIRECTS = [
    ("ls > out", [C("ls", r=(R(">", "out"),))]),
    ("ls >> out", [C("ls", r=(R(">>", "out"),))]),
    ("ls 2> err", [C("ls", r=(R(">", "err", fd=2),))]),
    ("ls 2>&1", [C("ls", r=(R(">&", "1", fd=2),))]),
    ("ls &> all", [C("ls", r=(R("&>", "all"),))]),
    ("ls &>> all", [C("ls", r=(R("&>>", "all"),))]),
    ("sort < in", [C("sort", r=(R("<", "in"),))]),
    ("cat <> rw", [C("cat", r=(R("<>", "rw"),))]),
    ("ls >| f", [C("ls", r=(R(">|", "f"),))]),
    ("exec 3<&-", [C("exec", r=(R("<&", "-", fd=3),))]),
    ("echo x >&2", [C("echo", "x", r=(R(">&", "2"),))]),
    ("make > /dev/null 2>&1", [C("make", r=(R(">", "/dev/null"), R(">&", "1", fd=2)))]),
    ("> out", [C(r=(R(">", "out"),))]),
    ("echo x >$HOME/f", [C("echo", "x", r=(R(">", "$HOME/f", dyn=True),))]),
    ("echo x > 'a b'", [C("echo", "x", r=(R(">", "a b"),))]),
    ("{ a; b; } > out 2>&1", [C("a"), C("b"), C(r=(R(">", "out"), R(">&", "1", fd=2)))]),
    ("(a) > out", [C("a"), C(r=(R(">", "out"),))]),
    ("> /etc/passwd echo x", [C("echo", "x", r=(R(">", "/etc/passwd"),))]),
    ("ls 1>out 2>>err", [C("ls", r=(R(">", "out", fd=1), R(">>", "err", fd=2)))]),
]

HEREDOCS = [
    ("cat <<EOF\nhi $USER\nEOF", [C("cat", r=(R("<<", "hi $USER\n", dyn=True),))]),
    ("cat <<'EOF'\nhi $USER\nEOF", [C("cat", r=(R("<<", "hi $USER\n"),))]),
    ('cat <<"EOF"\n$(x)\nEOF', [C("cat", r=(R("<<", "$(x)\n"),))]),
    ("cat <<\\EOF\n`x`\nEOF", [C("cat", r=(R("<<", "`x`\n"),))]),
    ("cat <<-EOF\n\tx\n\t\ty\n\tEOF", [C("cat", r=(R("<<-", "x\ny\n"),))]),
    ("cat <<EOF\n\\$HOME \\`x\\` a\\b\nEOF", [C("cat", r=(R("<<", "$HOME `x` a\\b\n"),))]),
    ("cat <<EOF\n$(rm x)\nEOF", [C("cat", r=(R("<<", "$(rm x)\n", dyn=True),)), C("rm", "x", via=S)]),
    ("cat <<EOF\n`rm x`\nEOF", [C("cat", r=(R("<<", "`rm x`\n", dyn=True),)), C("rm", "x", via=B)]),
    ("cat <<< 'hi there'", [C("cat", r=(R("<<<", "hi there"),))]),
    ("cat <<< $(id)", [C("cat", r=(R("<<<", "$(id)", dyn=True),)), C("id", via=S)]),
    ("cat <<EOF | sh\nrm x\nEOF", [C("cat", r=(R("<<", "rm x\n"),)), C("sh")]),
    ("bash <<'EOF'\nrm -rf x\nEOF", [C("bash", r=(R("<<", "rm -rf x\n"),)), C("rm", "-rf", "x", via=("bash <<",))]),
    ("sh -s <<EOF\nls\nEOF", [C("sh", "-s", r=(R("<<", "ls\n"),)), C("ls", via=("sh <<",))]),
    ("bash <<< 'rm x'", [C("bash", r=(R("<<<", "rm x"),)), C("rm", "x", via=("bash <<",))]),
    ("cat <<A <<B\na\nA\nb\nB", [C("cat", r=(R("<<", "a\n"), R("<<", "b\n")))]),
    ("cat <<A; cat <<B\n1\nA\n2\nB", [C("cat", r=(R("<<", "1\n"),)), C("cat", r=(R("<<", "2\n"),))]),
    ("cat > f.py <<'EOF'\nimport os\nEOF\npython f.py", [C("cat", r=(R(">", "f.py"), R("<<", "import os\n"))),
                                                        C("python", "f.py")]),
    ("cat <<EOF\nEOF", [C("cat", r=(R("<<", ""),))]),
    # here-docs inside compound commands (bashlex alone parses their bodies as commands)
    ("if true; then cat <<EOF\nrm -rf x\nEOF\nfi", [C("true"), C("cat", r=(R("<<", "rm -rf x\n"),))]),
    ("{ cat <<EOF\nhello $(id)\nEOF\n}", [C("cat", r=(R("<<", "hello $(id)\n", dyn=True),)), C("id", via=S)]),
    ("for i in 1; do python3 - <<'EOF'\nprint(1)\nEOF\ndone",
     [C("python3", "-", r=(R("<<", "print(1)\n"),), code=("python", "print(1)\n"))]),
    ("while true; do\n  cat <<EOF\n  body\nEOF\n  break\ndone", [C("true"), C("cat", r=(R("<<", "  body\n"),)),
                                                                   C("break")]),
    ("if x; then cat <<A; cat <<B\n1\nA\n2\nB\nfi", [C("x"), C("cat", r=(R("<<", "1\n"),)),
                                                    C("cat", r=(R("<<", "2\n"),))]),
    ("cat <<EOF; ls\nbody\nEOF", [C("cat", r=(R("<<", "body\n"),)), C("ls")]),
]

ENV_PREFIXES = [
    ("FOO=1 BAR=2 cmd", [C("cmd", a=(("FOO", "1"), ("BAR", "2")))]),
    ("PATH=/tmp:$PATH ls", [C("ls", a=(("PATH", "/tmp:$PATH"),))]),
    ("LD_PRELOAD=/x.so ls", [C("ls", a=(("LD_PRELOAD", "/x.so"),))]),
    ("FOO=bar", [C(a=(("FOO", "bar"),))]),
    ("a+=x cmd", [C("cmd", a=(("a", "x"),))]),
    ('X="a b" y', [C("y", a=(("X", "a b"),))]),
    ("X='$(no)' y", [C("y", a=(("X", "$(no)"),))]),
    ("X= y", [C("y", a=(("X", ""),))]),
    ("arr=(a b $(c)) cmd", [C("cmd", a=(("arr", "(a b $(c))"),)), C("c", via=S)]),
    ("arr=(1 2 3)", [C(a=(("arr", "(1 2 3)"),))]),
    ("x[1]=2 cmd", [C("cmd", a=(("x[1]", "2"),))]),
    ("declare -a arr=(1 $(id) 3)", [C("declare", "-a", "arr=(1 $(id) 3)", dyn=(2,)), C("id", via=S)]),
    ("local files=(*.py); ls", [C("local", "files=(*.py)"), C("ls")]),
    ("export PATH=\"$HOME/bin:$PATH\"", [C("export", "PATH=$HOME/bin:$PATH", dyn=(1,))]),
    ("echo A=1", [C("echo", "A=1")]),
    ("FOO=1 sudo BAR=2 cmd", [C("sudo", "BAR=2", "cmd", a=(("FOO", "1"),)),
                              C("cmd", a=(("FOO", "1"), ("BAR", "2")), via=("sudo",))]),
    ("GIT_SSH_COMMAND='ssh -i k' git fetch", [C("git", "fetch", a=(("GIT_SSH_COMMAND", "ssh -i k"),))]),
]

FUNCTIONS = [
    ("f() { rm x; }", [C("rm", "x")], ("f",)),
    ("function g { ls; }", [C("ls")], ("g",)),
    ("function h() { ls; } > log", [C("ls"), C(r=(R(">", "log"),))], ("h",)),
    ("f() ( cd x; ls )", [C("cd", "x"), C("ls")], ("f",)),
    ("f() { g; }; f", [C("g"), C("f")], ("f",)),
    ("a() { :; }; b() { a; }; b", [C(":"), C("a"), C("b")], ("a", "b")),
    ("f() { echo $(id); }", [C("echo", "$(id)", dyn=(1,)), C("id", via=S)], ("f",)),
]

LOOPS = [
    ("for i in 1 2; do echo $i; done", [C("echo", "$i", dyn=(1,))]),
    ("for i in a b\ndo\n  rm $i\ndone", [C("rm", "$i", dyn=(1,))]),
    ("for ((i=0; i<3; i++)); do echo $i; done", [C("echo", "$i", dyn=(1,))]),
    ("for ((i=0; i<$(nproc); i++)) do make; done", [C("nproc", via=S), C("make")]),
    ("while true; do sleep 1; done", [C("true"), C("sleep", "1")]),
    ("until make; do sleep 5; done", [C("make"), C("sleep", "5")]),
    ("while read -r l; do echo \"$l\"; done < f", [C("read", "-r", "l"), C("echo", "$l", dyn=(1,)),
                                                    C(r=(R("<", "f"),))]),
    ("if a; then b; elif c; then d; else e; fi", [C("a"), C("b"), C("c"), C("d"), C("e")]),
    ("if [ -f x ]; then rm x; fi", [C("[", "-f", "x", "]"), C("rm", "x")]),
    ("if [[ -f x && $(d) == y ]]; then ls; fi", [C("[[", "-f", "x", "&&", "$(d)", "==", "y", "]]", dyn=(4,)),
                                                 C("d", via=S), C("ls")]),
    ("[[ $x =~ ^(a|b)$ ]] && echo y", [C("[[", "$x", "=~", "^(a|b)$", "]]", dyn=(1,)), C("echo", "y")]),
    ("a=1 [[ x || rm -rf / ]]", [C("[[", "x", a=(("a", "1"),)), C("rm", "-rf", "/", "]]")]),  # not a keyword here
    ("> out [[ x ]]", [C("[[", "x", "]]", r=(R(">", "out"),))]),
    ("[[ -n \"$x\" ]] > out", [C("[[", "-n", "$x", "]]", dyn=(2,), r=(R(">", "out"),))]),
    ("(( i++ ))", [C("((", "i++", "))", dyn=(1,))]),
    ("(( 1 + 2 )) && ok", [C("((", "1 + 2", "))"), C("ok")]),
    ("((x = $(id -u)))", [C("((", "x = $(id -u)", "))", dyn=(1,)), C("id", "-u", via=S)]),
    ("case \"$1\" in start|run) ./go;; stop) kill 1;; *) echo usage;; esac",
     [C("./go"), C("kill", "1"), C("echo", "usage")]),
    ("case x in (a) ls ;& b) pwd ;;& *) id; esac", [C("ls"), C("pwd"), C("id")]),
    ("case x in\n  a)\n    rm a\n    ;;\nesac", [C("rm", "a")]),
    ("case x in esac", []),
    ("case $x in a) ls;; esac > out", [C("ls"), C(r=(R(">", "out"),))]),
    ("select x in a b; do rm $x; done", [C("rm", "$x", dyn=(1,))]),
    ("for f in *; do for g in *; do diff $f $g; done; done", [C("diff", "$f", "$g", dyn=(1, 2))]),
    ("while :; do break; done &", [C(":", bg=True), C("break", bg=True)]),
    ("for f in *.txt; do mv \"$f\" \"${f%.txt}.md\"; done", [C("mv", "$f", "${f%.txt}.md", dyn=(1, 2))]),
]

INTERPRETERS = [
    ("python -c 'print(1)'", [C("python", "-c", "print(1)", code=("python", "print(1)"))]),
    ("python3 -Ic 'import os'", [C("python3", "-Ic", "import os", code=("python", "import os"))]),
    ("python3.11 -c x a b", [C("python3.11", "-c", "x", "a", "b", code=("python", "x"))]),
    ("pypy3 -c x", [C("pypy3", "-c", "x", code=("python", "x"))]),
    ("python -W ignore -c x", [C("python", "-W", "ignore", "-c", "x", code=("python", "x"))]),
    ("python - <<'EOF'\nimport os\nEOF", [C("python", "-", r=(R("<<", "import os\n"),), code=("python", "import os\n"))]),
    ("python3 <<< 'print(1)'", [C("python3", r=(R("<<<", "print(1)"),), code=("python", "print(1)"))]),
    ("echo x | python3", [C("echo", "x"), C("python3", code=("python", ""))]),
    ("python -m pytest -q", [C("python", "-m", "pytest", "-q")]),
    ("python script.py --x", [C("python", "script.py", "--x")]),
    ("python --version", [C("python", "--version")]),
    ("perl -e 'print 1'", [C("perl", "-e", "print 1", code=("perl", "print 1"))]),
    ("perl -ne 'print' f", [C("perl", "-ne", "print", "f", code=("perl", "print"))]),
    ("perl -lane 'print $F[0]' f", [C("perl", "-lane", "print $F[0]", "f", code=("perl", "print $F[0]"))]),
    ("perl -i.bak -pe 's/a/b/' f", [C("perl", "-i.bak", "-pe", "s/a/b/", "f", code=("perl", "s/a/b/"))]),
    ("perl -E 'say 1' -e 'say 2'", [C("perl", "-E", "say 1", "-e", "say 2", code=("perl", "say 1\nsay 2"))]),
    ("perl script.pl", [C("perl", "script.pl")]),
    ("node -e 'console.log(1)'", [C("node", "-e", "console.log(1)", code=("node", "console.log(1)"))]),
    ("node --eval='x'", [C("node", "--eval=x", code=("node", "x"))]),
    ("node -p 'process.version'", [C("node", "-p", "process.version", code=("node", "process.version"))]),
    ("node -pe 1", [C("node", "-pe", "1", code=("node", "1"))]),
    ("node app.js", [C("node", "app.js")]),
    ("ruby -e 'puts 1'", [C("ruby", "-e", "puts 1", code=("ruby", "puts 1"))]),
    ("ruby -rjson -ne 'p 1'", [C("ruby", "-rjson", "-ne", "p 1", code=("ruby", "p 1"))]),
    ("php -r 'echo 1;'", [C("php", "-r", "echo 1;", code=("php", "echo 1;"))]),
    ("deno eval 'console.log(1)'", [C("deno", "eval", "console.log(1)", code=("deno", "console.log(1)"))]),
    ("awk '{system(\"rm x\")}' f", [C("awk", '{system("rm x")}', "f", code=("awk", '{system("rm x")}'))]),
    ("gawk -F: -v n=1 '{print $1}' /etc/passwd", [C("gawk", "-F:", "-v", "n=1", "{print $1}", "/etc/passwd",
                                                    code=("awk", "{print $1}"))]),
    ("awk -f prog.awk f", [C("awk", "-f", "prog.awk", "f")]),
    ("sudo python3 -c 'x'", [C("sudo", "python3", "-c", "x"), C("python3", "-c", "x", via=("sudo",),
                                                                 code=("python", "x"))]),
]

# (source, expected commands, expected problems as (kind, position))
DYNAMIC = [
    ("$CMD args", [C("$CMD", "args", dyn=(0,))], [("dynamic_command", 0)]),
    ("${CMD} args", [C("${CMD}", "args", dyn=(0,))], [("dynamic_command", 0)]),
    ("$(echo rm) -rf /", [C("$(echo rm)", "-rf", "/", dyn=(0,)), C("echo", "rm", via=S)], [("dynamic_command", 0)]),
    ("`echo rm` x", [C("`echo rm`", "x", dyn=(0,)), C("echo", "rm", via=B)], [("dynamic_command", 0)]),
    ('ls; "$X"', [C("ls"), C("$X", dyn=(0,))], [("dynamic_command", 4)]),
    ("x$Y z", [C("x$Y", "z", dyn=(0,))], [("dynamic_command", 0)]),
    ("sudo $CMD", [C("sudo", "$CMD", dyn=(1,)), C("$CMD", dyn=(0,), via=("sudo",))], [("dynamic_command", 0)]),
    ("eval $X", [C("eval", "$X", dyn=(1,)), C("$X", dyn=(0,), via=("eval",))],
     [("dynamic_eval", 0), ("dynamic_command", 0)]),
    ('eval "rm $F"', [C("eval", "rm $F", dyn=(1,)), C("rm", "$F", dyn=(1,), via=("eval",))], [("dynamic_eval", 0)]),
    ('bash -c "$SCRIPT"', [C("bash", "-c", "$SCRIPT", dyn=(2,)), C("$SCRIPT", dyn=(0,), via=("bash -c",))],
     [("dynamic_eval", 0), ("dynamic_command", 0)]),
    ("git --config-env=core.pager=PAGER log", [C("git", "--config-env=core.pager=PAGER", "log")],
     [("dynamic_eval", 0)]),
    ("git -c core.pager=\"$P\" log", [C("git", "-c", "core.pager=$P", "log", dyn=(2,)),
                                      C("$P", dyn=(0,), via=("git -c core.pager",))],
     [("dynamic_eval", 0), ("dynamic_command", 0)]),
    ("git -c include.path=/tmp/x.cfg log", [C("git", "-c", "include.path=/tmp/x.cfg", "log")], [("dynamic_eval", 0)]),
    ("$(which python) -c 'x'", [C("$(which python)", "-c", "x", dyn=(0,)), C("which", "python", via=S)],
     [("dynamic_command", 0)]),
]

SYNTAX = [
    ('echo "unterminated', [("syntax", 18)]),
    ("echo 'unterminated", [("syntax", 18)]),
    ("ls |", [("syntax", 4)]),
    ("a &&", [("syntax", 4)]),
    ("if true; then ls", [("syntax", 16)]),
    ("(ls", [("syntax", 3)]),
    ("ls )", [("syntax", 3)]),
    ("for do done", [("syntax", 7)]),
    ("cat <<EOF\nno end", [("syntax", 16)]),
    ("echo $(ls", [("syntax", 9)]),
    ("case x in a) ls", [("syntax", 15)]),
    ("; ls", [("syntax", 0)]),
    ("echo `ls", [("syntax", 8)]),
    ("bash -c 'echo \"x'", [("syntax", 0)]),
]


# Constructs bash accepts that the parser does not handle: each must come back as a
# problem (the policy then asks or denies), never as a silently smaller command list.
GAPS = [
    ("f() [[ -f x ]]", "syntax"),          # a function body that is [[ ]] or (( )) directly
    ("f() (( x ))", "syntax"),
    ("coproc NAME { ls; }", "syntax"),     # named coprocess
    ("time", "syntax"),                    # bare time
    ("echo a\\", "syntax"),                # trailing backslash at the end of input
    ("cat <<EOF\nno end", "syntax"),       # here-doc closed by end of input (bash warns and runs it)
]


def _ids(table: list[tuple]) -> list[str]:
    return [repr(row[0])[:60] for row in table]


@pytest.mark.parametrize("source,expected", CHAINING + SUBSTITUTION + QUOTING + WRAPPERS + REDIRECTS + HEREDOCS
                         + ENV_PREFIXES + LOOPS + INTERPRETERS,
                         ids=_ids(CHAINING + SUBSTITUTION + QUOTING + WRAPPERS + REDIRECTS + HEREDOCS + ENV_PREFIXES
                                  + LOOPS + INTERPRETERS))
def test_parse_finds_every_simple_command(source: str, expected: list[SimpleCommand]) -> None:
    result = parse(source)
    assert problems(result) == []
    assert commands(result) == expected
    assert result.source == source


@pytest.mark.parametrize("source,expected,names", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_function_bodies_are_commands_and_names_are_recorded(source: str, expected: list[SimpleCommand],
                                                            names: tuple[str, ...]) -> None:
    result = parse(source)
    assert (commands(result), problems(result), result.functions) == (expected, [], names)


@pytest.mark.parametrize("source,expected,found", DYNAMIC, ids=_ids(DYNAMIC))
def test_what_cannot_be_known_statically_is_reported(source: str, expected: list[SimpleCommand],
                                                     found: list[tuple[str, int]]) -> None:
    result = parse(source)
    assert (commands(result), problems(result)) == (expected, found)


@pytest.mark.parametrize("source,found", SYNTAX, ids=_ids(SYNTAX))
def test_syntax_errors_are_problems_with_a_position(source: str, found: list[tuple[str, int]]) -> None:
    result = parse(source)
    assert problems(result) == found
    assert all(p.message for p in result.problems)


@pytest.mark.parametrize("source,kind", GAPS, ids=_ids(GAPS))
def test_constructs_the_parser_cannot_handle_are_problems(source: str, kind: str) -> None:
    result = parse(source)
    assert [p.kind for p in result.problems] == [kind]
    assert result.problems[0].position is not None


def test_inner_syntax_error_names_the_wrapper() -> None:
    result = parse("bash -c 'echo \"x'")
    assert commands(result) == [C("bash", "-c", 'echo "x')]
    assert "bash -c" in result.problems[0].message


def test_the_text_of_each_command_is_its_source_slice() -> None:
    result = parse("FOO=1 ls -la > out && echo $(id -u)")
    assert [c.text for c in result.commands] == ["FOO=1 ls -la > out", "echo $(id -u)", "id -u"]


# --------------------------------------------------------------------------- limits


def test_input_over_max_bytes_is_not_parsed() -> None:
    result = parse("echo " + "x" * 100, max_bytes=64)
    assert (commands(result), problems(result)) == ([], [("too_large", None)])


def test_max_bytes_counts_utf8_bytes_not_characters() -> None:
    assert problems(parse("echo " + "é" * 40, max_bytes=64)) == [("too_large", None)]
    assert problems(parse("echo " + "é" * 20, max_bytes=64)) == []


def test_default_limit_is_64_kib() -> None:
    assert problems(parse("#" * 65537)) == [("too_large", None)]
    assert problems(parse("#" * 65536)) == []


@pytest.mark.parametrize("source,max_depth,expected", [
    ("echo $(echo $(echo $(rm x)))", 2,
     [C("echo", "$(echo $(echo $(rm x)))", dyn=(1,)), C("echo", "$(echo $(rm x))", dyn=(1,), via=S),
      C("echo", "$(rm x)", dyn=(1,), via=S + S)]),
    ("eval eval eval rm x", 2,
     [C("eval", "eval", "eval", "rm", "x"), C("eval", "eval", "rm", "x", via=("eval",)),
      C("eval", "rm", "x", via=("eval", "eval"))]),
    ("sudo sudo sudo rm x", 1, [C("sudo", "sudo", "sudo", "rm", "x"), C("sudo", "sudo", "rm", "x", via=("sudo",))]),
    ("bash -c \"bash -c 'bash -c ls'\"", 1, [C("bash", "-c", "bash -c 'bash -c ls'"),
                                             C("bash", "-c", "bash -c ls", via=("bash -c",))]),
], ids=["substitution", "eval", "sudo", "bash -c"])
def test_nesting_beyond_max_depth_is_not_followed(source: str, max_depth: int, expected: list[SimpleCommand]) -> None:
    result = parse(source, max_depth=max_depth)
    assert commands(result) == expected
    assert [p.kind for p in result.problems] == ["too_deep"]


def test_deep_nesting_within_the_default_limit_is_followed() -> None:
    source = "echo " + "$(echo " * 10 + "rm x" + ")" * 10
    result = parse(source)
    assert problems(result) == []
    assert commands(result)[-1] == C("echo", "rm", "x", via=S * 10)


@pytest.mark.parametrize("source", [
    "$(" * 3000 + "x" + ")" * 3000,
    "(" * 20000 + "x" + ")" * 20000,
    "$((" * 20000,
    "[[ \n" * 10000,
    "eval " * 10000 + "ls",
    "`" * 30000,
    "${" * 20000,
    "cat <<EOF\n" * 5000,
], ids=["comsub", "parens", "arith", "cond", "eval", "backticks", "braces", "heredocs"])
def test_adversarial_nesting_ends_quickly_with_a_problem_or_a_result(source: str) -> None:
    import time

    t0 = time.perf_counter()
    result = parse(source)
    elapsed = time.perf_counter() - t0
    assert isinstance(result, ParseResult)
    assert elapsed < 20
    assert result.problems or result.commands


# --------------------------------------------------------------------------- properties

_PLAIN = st.text(alphabet="abcxyzABC019_./-+:@%^=", min_size=1, max_size=6)
_ANY = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=8)
_ANSI = st.lists(st.one_of(
    st.sampled_from(["\\n", "\\t", "\\\\", "\\'", '\\"', "\\a", "\\e"]),
    st.integers(0x21, 0x7E).map(lambda c: f"\\x{c:02x}"),
    st.integers(0o40, 0o176).map(lambda c: f"\\{c:03o}"),
    st.integers(0x21, 0x7E).map(lambda c: f"\\u{c:04x}"),
    st.text(alphabet="abcXYZ 01.-", min_size=1, max_size=4),
), max_size=5).map(lambda parts: "$'" + "".join(parts) + "'")
_PIECE = st.one_of(
    _PLAIN,
    _ANY.filter(lambda s: "'" not in s).map(lambda s: f"'{s}'"),
    _ANY.map(lambda s: '"' + "".join("\\" + ch if ch in '"\\$`' else ch for ch in s) + '"'),
    st.characters(min_codepoint=33, max_codepoint=126).map(lambda ch: "\\" + ch),
    _ANSI,
)
_WORD = st.lists(_PIECE, min_size=1, max_size=4).map("".join)


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs /bin/bash as the oracle")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_WORD, min_size=1, max_size=5))
def test_static_words_normalise_exactly_as_bash_expands_them(words: list[str]) -> None:
    source = "printf '%s\\0' " + " ".join(words)
    out = subprocess.run(["/bin/bash", "--norc", "--noprofile", "-c", source], capture_output=True,
                         env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}, timeout=10)
    assert out.returncode == 0, out.stderr
    bash_argv = out.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
    result = parse(source)
    assert problems(result) == []
    assert commands(result) == [C("printf", "%s\\0", *bash_argv)]



def test_importing_shellparse_does_not_import_bashlex() -> None:
    code = "import sys, clawshell.shellparse; print('bashlex' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_parse_works_without_prepare_bashlex_in_a_fresh_process() -> None:
    code = ("from clawshell.shellparse import parse; r = parse('sudo rm -rf x'); "
            "print([c.argv for c in r.commands], r.problems)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[('sudo', 'rm', '-rf', 'x'), ('rm', '-rf', 'x')] ()"


def test_non_text_input_is_a_problem_not_an_exception() -> None:
    assert commands(parse(b"ls -la")) == [C("ls", "-la")]  # type: ignore[arg-type]
    assert isinstance(parse(None), ParseResult)  # type: ignore[arg-type]


def _check_result(text: str, result: ParseResult) -> None:
    assert isinstance(result, ParseResult)
    assert result.source == text
    for cmd in result.commands:
        assert isinstance(cmd, SimpleCommand)
        assert all(isinstance(w, str) for w in cmd.argv)
        assert all(0 <= i < len(cmd.argv) for i in cmd.dynamic_words)
        assert list(cmd.dynamic_words) == sorted(set(cmd.dynamic_words))
    for prob in result.problems:
        assert isinstance(prob, ParseProblem)
        assert prob.kind in ("syntax", "too_large", "too_deep", "dynamic_eval", "dynamic_command", "unsupported")
    # a dynamic command name is always reported
    if any(c.dynamic_name for c in result.commands):
        assert "dynamic_command" in [p.kind for p in result.problems]


SHELL_TOKENS = [
    " ", "  ", "\t", "\n", ";", "&", "&&", "|", "||", "|&", "(", ")", "{", "}", "[[", "]]", "((", "))", "<", ">",
    ">>", "<<", "<<-", "<<<", "2>&1", "&>", ">|", "'", '"', "`", "\\", "$", "$(", "${", "$((", "$[", "$'", '$"',
    "#", "=", "~", "*", "?", "!", "-", "--", "-c", "-e", "-exec", "\\;", "{}", "+", "EOF", "x", "rm", "-rf", "/",
    "a=", "a=(", "case", "in", "esac", ";;", ";&", ";;&", "for", "do", "done", "if", "then", "else", "fi",
    "while", "until", "select", "coproc", "time", "function", "f()", "bash", "sh", "eval", "env", "sudo",
    "xargs", "find", "git", "-c", "core.pager=", "alias.x=!", "python", "perl", "node", "awk", "\\x72", "\\n",
    "é", "\x00", "\u2028",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=120))
def test_parse_never_raises_on_random_text(text: str) -> None:
    _check_result(text, parse(text))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(SHELL_TOKENS), max_size=40).map("".join))
def test_parse_never_raises_on_shell_metacharacter_soup(text: str) -> None:
    result = parse(text)
    _check_result(text, result)
    assert parse(text) == result  # deterministic


LEAF = st.sampled_from(["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"]).flatmap(
    lambda name: st.sampled_from([f"{name}", f"{name} -x", f"{name} 'a b'", f"{name} > out"]))


def _wrap(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, inner).map(lambda t: f"{t[0]} && {t[1]}"),
        st.tuples(inner, inner).map(lambda t: f"{t[0]} | {t[1]}"),
        st.tuples(inner, inner).map(lambda t: f"{t[0]}; {t[1]}"),
        inner.map(lambda s: f"( {s} )"),
        inner.map(lambda s: f"{{ {s}; }}"),
        inner.map(lambda s: f"echo $( {s} )"),
        inner.map(lambda s: f"if {s}; then :; fi"),
        inner.map(lambda s: f"while {s}; do :; done"),
        inner.map(lambda s: f"for i in 1; do {s}; done"),
        inner.map(lambda s: f"case x in x) {s};; esac"),
        inner.map(lambda s: f"bash -c {shlex.quote(s)}"),
        inner.map(lambda s: f"eval {shlex.quote(s)}"),
        inner.map(lambda s: f"f() {{ {s}; }}"),
        inner.map(lambda s: f"{s} & wait"),
        inner.map(lambda s: f"[[ -n $( {s} ) ]]"),
        inner.map(lambda s: f"( cat <<E{len(s)}\n$( {s} )\nE{len(s)}\n)"),  # nested bodies: distinct delimiters
        inner.map(lambda s: f"sudo -u root sh -c {shlex.quote(s)}"),
        inner.map(lambda s: f"find . -exec bash -c {shlex.quote(s)} \\;"),
    )


PROGRAMS = st.recursive(LEAF, _wrap, max_leaves=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PROGRAMS)
def test_every_leaf_command_of_a_generated_program_is_found(program: str) -> None:
    result = parse(program)
    assert problems(result) == []
    found = {c.argv[0] for c in result.commands if c.argv}
    leaves = {word for word in program.replace("(", " ").replace(")", " ").replace("'", " ").replace("\"", " ")
              .replace(";", " ").replace("{", " ").split() if len(word) == 2 and word[0] == "c" and word[1].isdigit()}
    assert leaves <= found
