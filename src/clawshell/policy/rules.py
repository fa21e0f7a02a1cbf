"""Command pattern rules (pure): argv normalisation, pattern matching, built-in rules.

A :class:`~clawshell.model.CommandRule` pattern is a sequence of tokens matched
against the *normalised* argv of every simple command, as a prefix:

- ``**`` matches any run of words (also none); a final ``$`` anchors the end;
- ``-x`` (a dash and one letter) matches the flag wherever it is: alone (``-x``), in
  a cluster (``-rxf``) or spelled long (``--recursive`` for ``rm -r``, via the
  per-command alias table below);
- any other token is a shell glob with ``{a,b}`` alternatives; in a token that
  starts with ``/`` or ``~``, ``*`` and ``?`` stay inside one path component;
  ``~`` at the start is the user's HOME.

Normalisation: the command word becomes its basename; ``git``'s global options
(``-C dir``, ``-c k=v``, ``--git-dir`` ...) are dropped so ``git -C x push -f`` is
``git push -f``; long options are mapped to their short alias per command
(``rm --recursive`` -> ``-r``, ``git push --force`` -> ``-f``; ``-R`` -> ``-r`` for
``rm``/``cp``); path operands are expanded (``~``, ``$HOME``) and lexically
normalised (``//``, ``/.``, ``/tmp/..`` -> ``/``; ``..`` resolved against the cwd).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from ..model import CommandRule, Decision, ParseResult
from . import paths
from .paths import LazyPattern

_ANY = object()
_END = object()

DECISION_WORDS = {Decision.DENY: "forbidden", Decision.APPROVE: "approve", Decision.ALLOW: "allow"}
"""Middle part of the evidence id ``commands.<word>.<rule id>``."""

GIT_GLOBAL_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                              "--super-prefix", "--exec-path", "--list-cmds", "--attr-source"})
"""git options before the subcommand that take a value (``-C dir``)."""

_CLUSTER = LazyPattern(r"^-[A-Za-z]+$")

# command (or "git sub") -> (letter aliases inside short clusters, long -> short aliases)
ALIASES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "rm": ({"R": "r"}, {"--recursive": "-r", "--force": "-f", "--dir": "-d", "--interactive": "-i"}),
    "cp": ({"R": "r"}, {"--recursive": "-r", "--force": "-f", "--archive": "-a", "--target-directory": "-t"}),
    "mv": ({}, {"--force": "-f", "--target-directory": "-t"}),
    "chmod": ({}, {"--recursive": "-R"}),
    "chown": ({}, {"--recursive": "-R"}),
    "chgrp": ({}, {"--recursive": "-R"}),
    "sed": ({}, {"--in-place": "-i", "--expression": "-e", "--file": "-f"}),
    "git push": ({}, {"--force": "-f", "--delete": "-d", "--set-upstream": "-u", "--dry-run": "-n",
                      "--verbose": "-v", "--quiet": "-q"}),
    "git clean": ({}, {"--force": "-f", "--dry-run": "-n"}),
    "git branch": ({}, {"--delete": "-d", "--force": "-f", "--move": "-m"}),
    "git reset": ({}, {}),
    "curl": ({}, {"--insecure": "-k", "--request": "-X", "--data": "-d", "--output": "-o",
                  "--remote-name": "-O", "--location": "-L", "--form": "-F", "--upload-file": "-T",
                  "--silent": "-s", "--fail": "-f", "--header": "-H", "--user": "-u"}),
    "kill": ({}, {"--signal": "-s"}),
    "find": ({}, {}),
}


def git_split(argv: Sequence[str]) -> tuple[list[tuple[str, str | None]], tuple[str, ...]]:
    """Split ``git`` argv into its global options and the rest (``rest[0]`` = subcommand)."""
    opts: list[tuple[str, str | None]] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a == "-":
            break
        if a == "--":
            i += 1
            break
        if "=" in a and a.startswith("--"):
            name, _, value = a.partition("=")
            opts.append((name, value))
        elif a in GIT_GLOBAL_VALUE and a != "--exec-path":
            opts.append((a, argv[i + 1] if i + 1 < len(argv) else ""))
            i += 1
        elif a.startswith("-C") and len(a) > 2:
            opts.append(("-C", a[2:]))
        elif a.startswith("-c") and len(a) > 2:
            opts.append(("-c", a[2:]))
        else:
            opts.append((a, None))
        i += 1
    return opts, tuple(argv[i:])


def _normalise_operand(word: str, home: str, cwd: str) -> str:
    if not word or word.startswith("-") or "://" in word:
        return word
    if word[0] == "~" or word.startswith("$"):
        expanded, _exact = paths.expand(word, home, cwd=cwd)
        if expanded and (expanded.startswith("/") or expanded != word):
            if expanded.startswith("/"):
                return paths.normalize(expanded, cwd)
            return expanded
        return word
    if word.startswith("/"):
        return paths.normalize(word, cwd)
    if word == ".." or word.startswith("../") or "/../" in word or word.endswith("/.."):
        return paths.normalize(word, cwd)
    return word


def normalise_argv(argv: Sequence[str], home: str, cwd: str) -> tuple[str, ...]:
    """The argv that rule patterns see (see the module docstring)."""
    if not argv:
        return ()
    name = argv[0].rsplit("/", 1)[-1]
    rest: tuple[str, ...] = tuple(argv[1:])
    head = [name]
    key = name
    if name == "git":
        _opts, rest = git_split(argv)
        if rest:
            head.append(rest[0])
            key = "git " + rest[0]
            rest = rest[1:]
    letters, longs = ALIASES.get(key, ({}, {}))
    out = list(head)
    ended = False
    for a in rest:
        if ended:
            out.append(_normalise_operand(a, home, cwd))
            continue
        if a == "--":
            ended = True
            out.append(a)
        elif a.startswith("--"):
            nm, eq, value = a.partition("=")
            if nm in longs:
                out.append(longs[nm])
                if eq:
                    out.append(value)
            else:
                out.append(a)
        elif _CLUSTER.match(a):
            out.append("-" + "".join(letters.get(c, c) for c in a[1:]))
        elif "=" in a and not a.startswith("/"):
            k, _, v = a.partition("=")
            out.append(k + "=" + _normalise_operand(v, home, cwd))
        else:
            out.append(_normalise_operand(a, home, cwd))
    return tuple(out)


def _glob_regex(token: str) -> str:
    """Translate one glob token (with ``{a,b}``) to a regex."""
    pathy = token.startswith("/")
    star, one = ("[^/]*", "[^/]") if pathy else (".*", ".")
    out = []
    i = 0
    while i < len(token):
        c = token[i]
        if c == "*":
            out.append(star)
        elif c == "?":
            out.append(one)
        elif c == "[":
            j = token.find("]", i + 2 if i + 1 < len(token) and token[i + 1] in "!^" else i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = token[i + 1:j]
                if body.startswith(("!", "^")):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "{":
            j = token.find("}", i)
            if j < 0:
                out.append(re.escape(c))
            else:
                alts = token[i + 1:j].split(",")
                out.append("(?:" + "|".join(_glob_regex_part(a, star, one) for a in alts) + ")")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _glob_regex_part(text: str, star: str, one: str) -> str:
    return "".join(star if c == "*" else one if c == "?" else re.escape(c) for c in text)


@dataclass(frozen=True)
class _Token:
    kind: str            # "flag" | "glob"
    flag: str = ""
    regex: re.Pattern[str] | None = None

    def matches(self, word: str) -> bool:
        if self.kind == "flag":
            return word == "-" + self.flag or (bool(_CLUSTER.match(word)) and self.flag in word[1:])
        assert self.regex is not None
        return self.regex.fullmatch(word) is not None


def _expand_tilde(token: str, home: str) -> str:
    if token == "~":
        return home
    if token.startswith("~/"):
        return home.rstrip("/") + token[1:]
    if token.startswith("{") and "~" in token:
        inner = token[1:-1] if token.endswith("}") else token[1:]
        return "{" + ",".join(_expand_tilde(a, home) for a in inner.split(",")) + "}"
    return token


def compile_pattern(pattern: Sequence[str], home: str) -> tuple[object, ...]:
    """Compile a rule pattern for :func:`pattern_matches` (memoised: a pure function of its text)."""
    return _compile_pattern(tuple(pattern), home)


@lru_cache(maxsize=2048)
def _compile_pattern(pattern: tuple[str, ...], home: str) -> tuple[object, ...]:
    out: list[object] = []
    for i, tok in enumerate(pattern):
        if tok == "**":
            out.append(_ANY)
        elif tok == "$" and i == len(pattern) - 1:
            out.append(_END)
        elif re.fullmatch(r"-[A-Za-z]", tok):
            out.append(_Token("flag", flag=tok[1]))
        else:
            tok = _expand_tilde(tok, home)
            if tok.startswith("{") and all(a.startswith("/") for a in tok[1:-1].split(",") if a):
                regex = "(?:" + "|".join(_glob_regex(a) for a in tok[1:-1].split(",")) + ")"
            else:
                regex = _glob_regex(tok)
            out.append(_Token("glob", regex=re.compile(regex, re.DOTALL)))
    return tuple(out)


def pattern_matches(compiled: Sequence[object], argv: Sequence[str]) -> bool:
    """True when the compiled pattern matches a prefix of the normalised ``argv``."""

    def go(i: int, j: int) -> bool:
        if i == len(compiled):
            return True
        p = compiled[i]
        if p is _END:
            return j == len(argv)
        if p is _ANY:
            return any(go(i + 1, k) for k in range(j, len(argv) + 1))
        if j >= len(argv):
            return False
        return p.matches(argv[j]) and go(i + 1, j + 1)  # type: ignore[attr-defined]

    return go(0, 0)


def first_names(pattern: Sequence[str]) -> frozenset[str] | None:
    """Literal command names a pattern can start with, or None when the first token globs."""
    if not pattern:
        return None
    tok = pattern[0]
    alts = tok[1:-1].split(",") if tok.startswith("{") and tok.endswith("}") else [tok]
    if any(paths.is_glob(a) or "{" in a for a in alts):
        return None
    return frozenset(alts)


def split_pattern(text: str) -> tuple[str, ...]:
    """Split a pattern given as one string on whitespace (quotes group words)."""
    import shlex

    return tuple(shlex.split(text))


def over_broad(pattern: Sequence[str], decision: Decision) -> str | None:
    """Why ``pattern`` is too broad to accept, or None."""
    if not pattern:
        return "empty pattern"
    if all(t in ("*", "**", "$") for t in pattern):
        return "pattern matches every command"
    if pattern[0] == "**":
        return "the first token must match the command name, not '**'"
    if decision is Decision.ALLOW and first_names(pattern) is None:
        return "an allow rule must name its command literally"
    return None


def _r(id: str, pattern: str, decision: Decision, reason: str, alternative: str | None = None,
       score: int | None = None, match: Iterable[str] = (), not_match: Iterable[str] = ()) -> CommandRule:
    return CommandRule(id=id, pattern=tuple(pattern.split()), decision=decision, reason=reason,
                       alternative=alternative, score=score, match=tuple(match), not_match=tuple(not_match))


D, A = Decision.DENY, Decision.APPROVE

_PUSH_ALT = "push without --force; if history really must be rewritten, ask the human to do it"

BUILTIN_RULES: tuple[CommandRule, ...] = (
    _r("rm_rf_root", "rm ** -r ** {/,/*}", D, "recursively deletes / or a top-level directory",
       "remove only paths inside the workspace, e.g. `rm -r ./build`", 98,
       ["rm -rf /", "rm -fr /", "rm -r -f /", "rm --recursive --force /", "rm -Rf /*", "rm -rf //",
        "rm -rf /usr", "rm -rf /tmp/..", "sudo rm -rf --no-preserve-root /", "rm -rf / --no-preserve-root"],
       ["rm -f /tmp/ws/x", "rm -rf build", "rm /", "rm -rf /tmp/ws/build"]),
    _r("rm_rf_home", "rm ** -r ** {~,~/*}", D, "recursively deletes HOME or a directory directly in it",
       "remove only paths inside the workspace", 98,
       ["rm -rf ~", "rm -rf ~/", "rm -r $HOME", "rm -rf ${HOME}", "rm -rf ~/*", "rm -rf $HOME/$DIR"],
       ["rm -rf build", "rm ~/notes.txt"]),
    _r("rm_no_preserve_root", "rm ** --no-preserve-root", D, "turns off rm's protection of /",
       "remove only paths inside the workspace", 98,
       ["rm -rf --no-preserve-root /tmp/x"], ["rm -rf build"]),
    _r("git_push_force", "git push ** -f", D, "force-push rewrites the remote's history", _PUSH_ALT, 90,
       ["git push -f", "git push --force origin main", "git push origin main --force", "git push -uf origin x",
        "git -C repo push -f", "git -c core.pager=cat push --force"],
       ["git push origin main", "git push -u origin main", "git fetch -f"]),
    _r("git_push_force_with_lease", "git push ** --force-{with-lease,if-includes}*", D,
       "force-push (with lease) still rewrites the remote's history", _PUSH_ALT, 90,
       ["git push --force-with-lease", "git push origin main --force-with-lease=main:abc",
        "git push --force-if-includes --force-with-lease"],
       ["git push origin main"]),
    _r("git_push_plus_refspec", "git push ** +*", D, "a +refspec force-pushes", _PUSH_ALT, 90,
       ["git push origin +main", "git push origin +HEAD:refs/heads/main"],
       ["git push origin main", "git push origin HEAD:main"]),
    _r("git_push_mirror", "git push ** --mirror", D, "--mirror overwrites and deletes every remote ref",
       _PUSH_ALT, 90, ["git push --mirror origin"], ["git push origin main"]),
    _r("chmod_recursive_root", "{chmod,chown,chgrp} ** -R ** {/,/*,~,~/*}", D,
       "recursively changes permissions or owners of system or home directories",
       "change permissions only on workspace paths, with the narrowest mode needed", 95,
       ["chmod -R 777 /", "chmod 777 -R /", "chmod --recursive a+rwx /", "chown -R nobody /usr", "chmod -R 700 ~"],
       ["chmod -R 755 build", "chmod 644 /tmp/ws/x"]),
    _r("disk_format", "{mkfs,mkfs.*,mke2fs,mkswap,wipefs,blkdiscard}", D, "formats or wipes a disk", None, 100,
       ["mkfs.ext4 /dev/sdb1", "mkfs -t xfs /dev/sda", "wipefs -a /dev/sda"], ["mkdir fs"]),
    _r("dd_to_device", "dd ** of=/dev/{sd*,hd*,vd*,xvd*,nvme*,mmcblk*,disk*,mapper/*,dm-*,loop*,md*,mem,kmem,port}", D,
       "writes raw data to a disk device", None, 100,
       ["dd if=/dev/zero of=/dev/sda bs=1M", "dd of=/dev/nvme0n1 if=x.img"],
       ["dd if=/dev/zero of=/dev/null count=1", "dd if=a of=b"]),
    _r("shutdown", "{shutdown,reboot,halt,poweroff}", D, "shuts down or reboots the machine", None, 100,
       ["shutdown -h now", "reboot", "sudo poweroff"], ["echo reboot"]),
    _r("init_runlevel", "{init,telinit} {0,6}", D, "shuts down or reboots the machine", None, 100,
       ["init 0", "telinit 6"], ["init --version"]),
    _r("systemctl_power", "systemctl ** {poweroff,reboot,halt,kexec,suspend,hibernate}", D,
       "shuts down or reboots the machine", None, 100,
       ["systemctl reboot", "systemctl --force poweroff"], ["systemctl status nginx"]),
    _r("kill_all", "{kill,pkill,killall} ** -1 $", D, "signals every process the user owns", None, 95,
       ["kill -9 -1", "kill -s KILL -1", "kill -- -1"], ["kill -1 1234", "kill 1234"]),
    _r("move_root_or_home", "mv ** {/,/*,~} ** *", D, "moves /, a top-level directory or HOME away",
       "move only paths inside the workspace", 98,
       ["mv / /tmp/x", "mv ~ /tmp/old", "mv -f /usr /tmp/u"], ["mv a b", "mv build/x ~"]),
)
"""Rules in force under every policy (the engine always applies them)."""

BUILTIN_IDS = frozenset(r.id for r in BUILTIN_RULES)
"""Ids config rules may not reuse."""

FORK_BOMB_ID = "fork_bomb"
"""Id of the structural fork-bomb check (not a pattern rule)."""

FORK_BOMB_MATCH = (":(){ :|:& };:", "bomb() { bomb | bomb & }; bomb", "f(){ f|f & }; f",
                   "function b { b | b & }; b")
"""Example fork bombs (tests)."""
FORK_BOMB_NOT_MATCH = ("f() { echo hi; }; f", "g() { ls | wc -l; }; g; g")
"""Examples that are not fork bombs (tests)."""

_BOMB_RES = (
    LazyPattern(r"([^\s(){};|&]{1,64})\(\)\{\1\|\1&"),
    LazyPattern(r"function\s+([^\s(){};|&]{1,64})\s*(?:\(\))?\s*\{\s*\1\s*\|\s*\1\s*&"),
)


def fork_bomb(parsed: ParseResult) -> str | None:
    """The fork-bomb text when ``parsed`` defines a function that spawns itself in the
    background or through a pipe to itself, else None.  Works on the source text too,
    so it catches bombs the parser could not read."""
    src = parsed.source
    if "{" in src and "|" in src and "&" in src:
        squeezed = re.sub(r"\s+", "", src)
        m = _BOMB_RES[0].search(squeezed) if "(){" in squeezed else None
        if m:
            return m.group(0)
        m = _BOMB_RES[1].search(src) if "function" in src else None
        if m:
            return m.group(0)
    for f in parsed.functions:
        calls = [c for c in parsed.commands if c.name == f]
        if len(calls) >= 3 and any(c.background for c in calls):
            return f
    return None


@dataclass(frozen=True)
class CompiledRule:
    """A rule ready to match."""

    rule: CommandRule
    """The rule."""
    tokens: tuple[object, ...]
    """Compiled pattern."""
    evidence_id: str
    """``commands.<forbidden|approve|allow>.<id>``."""


class RuleSet:
    """Rules indexed by command name for fast matching."""

    def __init__(self, rules: Iterable[CommandRule], home: str):
        self._by_name: dict[str, list[CompiledRule]] = {}
        self._wild: list[CompiledRule] = []
        for r in rules:
            cr = CompiledRule(r, compile_pattern(r.pattern, home),
                              f"commands.{DECISION_WORDS[r.decision]}.{r.id}")
            names = first_names(r.pattern)
            if names is None:
                self._wild.append(cr)
            else:
                for n in names:
                    self._by_name.setdefault(n, []).append(cr)

    def matching(self, norm_argv: Sequence[str]) -> list[CompiledRule]:
        """Rules whose pattern matches the normalised argv."""
        if not norm_argv:
            return []
        out = []
        for cr in self._by_name.get(norm_argv[0], ()):
            if pattern_matches(cr.tokens, norm_argv):
                out.append(cr)
        for cr in self._wild:
            if pattern_matches(cr.tokens, norm_argv):
                out.append(cr)
        return out


def rule_matches_command(rule: CommandRule, parsed: ParseResult, home: str, cwd: str) -> bool:
    """True when ``rule`` matches any simple command of ``parsed`` (used to check examples)."""
    tokens = compile_pattern(rule.pattern, home)
    return any(pattern_matches(tokens, normalise_argv(c.argv, home, cwd)) for c in parsed.commands)
