"""The policy engine (pure): a parsed command + policy + context -> :class:`Verdict`.

Decision order (docs/policy.md has the full table).  Every simple command and every
parse problem yields evidence; the verdict is the strictest evidence (ALLOW <
APPROVE < DENY).  Hard denies hold in every autonomy: built-in and configured
forbidden patterns, ``forbidden_commands``, a forbidden path touched (argument,
redirect target, assignment value, inline code literal), a write outside the
workspace when ``workspace_only``, a raw device, a forbidden env assignment, a score
at or above ``auto_deny`` or above ``max_irreversibility_score``.  Then approvals:
parse problems (denied under readonly), protected paths written, secrets read,
commands outside ``allowed_commands``, network needed while the policy has it off,
a score at or above ``flag`` (not under ``full``).  ``readonly`` denies anything
that can change state.

All I/O (symlinks) comes through ``ctx.realpath``; compiled tables are memoised per
``(policy, workspace, home, ...)`` so repeated calls cost microseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase, translate
from functools import lru_cache
from typing import Sequence

from ..model import (
    Autonomy, CommandRule, Decision, EvalContext, Evidence, ParseResult, Policy, SimpleCommand, Verdict,
)
from . import FILE_TOOLS, paths, rules, scores, tool_allowed
from .paths import Kind, LazyPattern

ALWAYS_ALLOWED = frozenset({
    "cd", "pwd", "echo", "printf", "true", "false", ":", "test", "[", "[[", "export", "unset", "set",
    "exit", "return", "shift", "local", "declare", "typeset", "readonly", "break", "continue", "wait",
    "read", "pushd", "popd", "shopt", "umask",
})
"""Shell builtins that ``allowed_commands`` never gates (their paths are still checked)."""

PROBLEM_REASONS = {
    "syntax": "the command could not be parsed",
    "too_large": "the command is over the parser's size limit",
    "too_deep": "the command nests deeper than the parser's limit",
    "dynamic_eval": "eval of text that is only known at run time",
    "dynamic_command": "the command name is built from expansions",
    "unsupported": "a construct the parser does not support",
}

ALTERNATIVES = {
    "paths.forbidden": "work inside the workspace; this path is off limits to agents",
    "paths.workspace_only": "write inside the workspace (e.g. ./tmp/) instead",
    "paths.protected": "ask the human to make this change",
    "paths.secret": "use the variable names, not the values, or ask the human",
    "paths.device": None,
    "env.forbidden": "call the program by its path or pass options instead of changing the environment",
    "parse": "write the command without dynamic command names or eval, or split it into simpler commands",
    "autonomy.readonly": "readonly autonomy only observes: ls, cat, grep, find, git status/log/diff",
    "network.escalation": "ask the human to approve network access for this command",
}

_INLINE_PATH = LazyPattern(r"(?<![\w.$])(?:~|\$HOME|\$\{HOME\})?/[\w.@+~-]+(?:/[\w.@+~-]*)*")

_MODE_VERB = {scores.READ: "reads", scores.WRITE: "writes", scores.TREE: "writes",
              scores.DELETE: "deletes", scores.RDELETE: "deletes"}


# --------------------------------------------------------------------------- compiled policy


@dataclass
class _Compiled:
    policy: Policy
    home: str
    workspace: str
    table: paths.PathTable
    protected: paths.PathTable
    write_allow: tuple[str, ...] | None
    secret_re: re.Pattern[str] | None
    secret_globs: tuple[str, ...]
    env_re: re.Pattern[str] | None
    ruleset: rules.RuleSet
    forbidden_cmds: frozenset[str]
    forbidden_cmd_globs: tuple[str, ...]
    allowed_cmds: frozenset[str] | None
    overrides: dict[str, int]
    workspace_roots: tuple[str, ...]


_MEMO: dict[tuple[object, ...], _Compiled] = {}
_MEMO_MAX = 16


def _glob_union(globs: Sequence[str]) -> re.Pattern[str] | None:
    return _glob_union_of(tuple(globs)) if globs else None


@lru_cache(maxsize=256)
def _glob_union_of(globs: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{translate(g)})" for g in globs))


def _compile(policy: Policy, ctx: EvalContext) -> _Compiled:
    extra = tuple(getattr(ctx, "extra_writable", ()) or ())
    key = (id(policy), ctx.workspace, ctx.home, ctx.clawshell_home, id(ctx.realpath), extra)
    hit = _MEMO.get(key)
    if hit is not None and hit.policy is policy:
        return hit
    home = paths.normalize(ctx.home or "/", "/")
    ws = paths.normalize(ctx.workspace or ctx.cwd, "/")

    def real(p: str) -> str:
        try:
            return paths.normalize(ctx.realpath(p), "/")
        except (OSError, ValueError):
            return p

    entries: list[paths.Entry] = []

    def add(text: str, kind: Kind, base: str = ws, source: str | None = None) -> None:
        e = paths.make_entry(text, kind, home, base, source)
        if e is None:
            return
        if kind is Kind.FORBIDDEN and e.path == home:
            return  # HOME itself is never forbidden (see paths.DEFAULT_FORBIDDEN_PATHS)
        entries.append(e)
        if not paths.is_glob(e.path):
            r = real(e.path)
            if r != e.path:
                e2 = paths.make_entry(r, kind, home, base, e.source)
                if e2 is not None and not (kind is Kind.FORBIDDEN and e2.path == home):
                    entries.append(e2)

    for f in policy.forbidden_paths:
        add(f, Kind.FORBIDDEN)
    if ctx.clawshell_home:
        add(ctx.clawshell_home, Kind.FORBIDDEN, source="CLAWSHELL_HOME")
    for other in paths.OTHER_HOMES:
        add(other, Kind.FORBIDDEN, source="other users' homes")
    add(home, Kind.READ_OK, source="HOME")
    add(ws, Kind.WRITE_OK, source="workspace")
    for a in (*policy.allowed_paths, *policy.writable_caches, *extra):
        add(a, Kind.WRITE_OK)
    table = paths.PathTable(entries)

    prot: list[paths.Entry] = []
    roots = tuple(dict.fromkeys((ws, real(ws))))
    for p in policy.protected_paths:
        rel = p.strip("/")
        for root in (*roots, home):
            e = paths.make_entry(root.rstrip("/") + "/" + rel, Kind.PROTECTED, home, "/", p)
            if e is not None:
                prot.append(e)
    wa = getattr(policy, "write_allow", None)
    write_allow = None if wa is None else tuple(paths.normalize(paths.expand(w, home)[0], ws) for w in wa)

    all_rules: list[CommandRule] = list(rules.BUILTIN_RULES)
    all_rules += [r for r in policy.rules if r.id not in rules.BUILTIN_IDS]
    fc = tuple(policy.forbidden_commands)
    ac = policy.allowed_commands
    comp = _Compiled(
        policy=policy, home=home, workspace=ws, table=table, protected=paths.PathTable(prot),
        write_allow=write_allow, secret_re=_glob_union(policy.secret_read_globs),
        secret_globs=tuple(policy.secret_read_globs), env_re=_glob_union(policy.forbidden_env),
        ruleset=rules.RuleSet(all_rules, home),
        forbidden_cmds=frozenset(c for c in fc if not paths.is_glob(c)),
        forbidden_cmd_globs=tuple(c for c in fc if paths.is_glob(c)),
        allowed_cmds=None if ac is None else frozenset(ac),
        overrides=dict(policy.scores), workspace_roots=roots,
    )
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = comp
    return comp


# --------------------------------------------------------------------------- evaluation state


@dataclass
class _State:
    c: _Compiled
    ctx: EvalContext
    env: dict[str, str]
    cwds: list[str]
    evidence: list[Evidence] = field(default_factory=list)
    seen: set[tuple[str, str, int]] = field(default_factory=set)
    parts: list[tuple[str, int]] = field(default_factory=list)
    extra_writable: list[str] = field(default_factory=list)
    network: bool = False
    real_memo: dict[str, str] = field(default_factory=dict)
    unwrapped: frozenset[tuple[str, ...]] = frozenset()

    @property
    def autonomy(self) -> Autonomy:
        return self.c.policy.autonomy

    def add(self, rule: str, decision: Decision, reason: str, matched: str = "", score: int | None = None,
            alternative: str | None = None) -> None:
        key = (rule, matched, int(decision))
        if key in self.seen:
            return
        self.seen.add(key)
        self.evidence.append(Evidence(rule=rule, decision=decision, reason=reason, matched=matched, score=score,
                                      alternative=alternative))

    def realpath(self, p: str) -> str:
        r = self.real_memo.get(p)
        if r is None:
            try:
                r = paths.normalize(self.ctx.realpath(p), "/")
            except (OSError, ValueError):
                r = paths.normalize(p, "/")
            self.real_memo[p] = r
        return r

    def gate(self, supervised: Decision, readonly: Decision, full: Decision) -> Decision:
        a = self.autonomy
        if a is Autonomy.READONLY:
            return readonly
        if a is Autonomy.FULL:
            return full
        return supervised

    def score_decision(self, score: int) -> Decision:
        t = self.c.policy.thresholds
        if score >= t.auto_deny:
            return Decision.DENY
        if score >= t.flag:
            return Decision.ALLOW if self.autonomy is Autonomy.FULL else Decision.APPROVE
        return Decision.ALLOW

    # ---- paths ---------------------------------------------------------------

    def check_path(self, word: str, mode: str, matched: str) -> bool:
        """Check one path word; returns True when some target is outside every writable root."""
        if not word or "{}" in word or word.startswith(("<(", ">(")):
            return False
        outside = False
        for cwd in self.cwds:
            text, exact = paths.expand(word, self.c.home, self.env, cwd)
            if not text:
                continue
            globbed = paths.is_glob(text)
            raw = text if text.startswith("/") else cwd.rstrip("/") + "/" + text
            lexical = paths.normalize(text, cwd)
            cands = [(lexical, globbed)]
            probe = paths.glob_prefix(raw) if globbed else raw
            phys = self.realpath(probe)
            if globbed:
                rest = lexical[len(paths.normalize(paths.glob_prefix(lexical), "/")):]
                if phys != paths.glob_prefix(lexical):
                    cands.append((phys.rstrip("/") + rest, True))
            elif phys != lexical:
                cands.append((phys, False))
            for p, g in cands:
                outside |= self._judge(word, p, g, exact, mode, matched)
        return outside

    def _judge(self, word: str, p: str, globbed: bool, exact: bool, mode: str, matched: str) -> bool:
        c = self.c
        if paths.is_stdio(p):
            return False
        if p.startswith("/dev/") and (mode != scores.READ or paths.is_raw_device(p)):
            self.add("paths.device", Decision.DENY, f"{_MODE_VERB[mode]} a device: {p}", word)
            return True
        prefix = paths.split(paths.glob_prefix(p)) if globbed else paths.split(p)
        full = paths.split(p)
        recursive = mode in (scores.TREE, scores.RDELETE)
        verb = _MODE_VERB[mode]
        e = c.table.lookup(prefix)
        if e is not None and e.kind is Kind.FORBIDDEN:
            self.add("paths.forbidden", Decision.DENY, f"{verb} a forbidden path: {p} (forbidden_paths: {e.source})",
                     word, alternative=ALTERNATIVES["paths.forbidden"])
            return mode != scores.READ
        if (globbed or recursive) and exact:
            for d in c.table.reach(full, len(prefix), recursive, frozenset({Kind.FORBIDDEN})):
                self.add("paths.forbidden", Decision.DENY,
                         f"{verb} {p}, which reaches the forbidden path {d.path} (forbidden_paths: {d.source})",
                         word, alternative=ALTERNATIVES["paths.forbidden"])
                break
        if mode == scores.READ:
            self._secret(word, p, globbed)
            return False
        outside = e is None or e.kind is not Kind.WRITE_OK
        if outside:
            if c.policy.workspace_only:
                self.add("paths.workspace_only", Decision.DENY, f"writes outside the workspace: {p}", word,
                         alternative=ALTERNATIVES["paths.workspace_only"])
            else:
                self.add("paths.outside", Decision.ALLOW, f"writes outside the workspace: {p}", word)
                self.extra_writable.append(paths.normalize(paths.glob_prefix(p), "/") if globbed else p)
        elif e is not None and e.source != "workspace":
            self.extra_writable.append(e.path)
        pe = c.protected.lookup(prefix)
        hits = [pe] if pe is not None else []
        if (globbed or recursive) and not hits:
            hits = c.protected.reach(full, len(prefix), recursive, frozenset({Kind.PROTECTED}))[:1]
        if hits:
            d = self.gate(Decision.APPROVE, Decision.DENY, Decision.APPROVE)
            self.add("paths.protected", d, f"{verb} a protected path: {hits[0].path} (protected_paths: "
                     f"{hits[0].source})", word, alternative=ALTERNATIVES["paths.protected"])
            # Once a human approves, the sandbox lifts this protection for this run only.
            self.extra_writable.append(hits[0].path)
        if c.write_allow is not None and not outside and paths.within(p, c.workspace):
            if not any(paths.within(p, w) for w in c.write_allow):
                self.add("paths.write_allow", Decision.DENY,
                         f"writes outside the project's write_allow directories: {p}", word,
                         alternative="write under: " + ", ".join(c.write_allow))
        return outside

    def _secret(self, word: str, p: str, globbed: bool) -> None:
        c = self.c
        if c.secret_re is None:
            return
        name = p.rsplit("/", 1)[-1]
        hit = bool(c.secret_re.fullmatch(name))
        if not hit and globbed:
            hit = any(fnmatchcase(g, name) or fnmatchcase(name.replace("*", "x"), g) for g in c.secret_globs)
        if hit:
            d = self.gate(Decision.APPROVE, Decision.APPROVE, Decision.ALLOW)
            self.add("paths.secret", d, f"reads a secret file: {p}", word, alternative=ALTERNATIVES["paths.secret"])

    # ---- env -----------------------------------------------------------------

    def check_assignment(self, name: str, value: str, matched: str) -> None:
        name = name.rstrip("+")
        if self.c.env_re is not None and self.c.env_re.fullmatch(name):
            self.add("env.forbidden", Decision.DENY, f"sets {name}, which changes what runs or how", f"{name}=",
                     alternative=ALTERNATIVES["env.forbidden"])
        for part in value.split(":"):
            if paths.looks_like_path(part) or part.startswith("~"):
                self.check_path(part, scores.READ, matched)


# --------------------------------------------------------------------------- commands


def _text(cmd: SimpleCommand) -> str:
    return cmd.text or " ".join(cmd.argv)


def _command(st: _State, cmd: SimpleCommand, depth: int = 0) -> None:
    c = st.c
    policy = c.policy
    matched = _text(cmd)
    for name, value in cmd.assignments:
        st.check_assignment(name, value, matched)
    wrote_redirect = False
    for r in cmd.redirects:
        if r.op in ("<<", "<<-", "<<<"):
            continue
        if r.op in (">&", "<&", "&>", ">&-", "<&-") and (r.target.isdigit() or r.target == "-"):
            continue
        if r.writes:
            wrote_redirect = True
            st.check_path(r.target, scores.WRITE, matched)
            if r.op == "<>":
                st.check_path(r.target, scores.READ, matched)
        else:
            st.check_path(r.target, scores.READ, matched)
    if st.autonomy is Autonomy.READONLY and wrote_redirect:
        st.add("autonomy.readonly", Decision.DENY, "readonly autonomy: redirect writes a file", matched,
               alternative=ALTERNATIVES["autonomy.readonly"])
    if not cmd.argv:
        if wrote_redirect:
            st.parts.append(("bash_write", scores.score_of("bash_write", c.overrides)))
        return
    if cmd.dynamic_name:
        d = st.gate(Decision.APPROVE, Decision.DENY, Decision.APPROVE)
        st.add("parse.dynamic_command", d, PROBLEM_REASONS["dynamic_command"], matched,
               alternative=ALTERNATIVES["parse"])
    name = cmd.name
    argv = cmd.argv

    # cd changes where later relative paths land: keep every candidate directory
    if name in ("cd", "pushd") and depth == 0:
        ops = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
        target = ops[0] if ops else "~"
        if target != "-":
            st.check_path(target, scores.READ, matched)
            text, exact = paths.expand(target, c.home, st.env)
            if exact and text and not paths.is_glob(text):
                new = [paths.normalize(text, cw) for cw in st.cwds]
                st.cwds = list(dict.fromkeys(new + st.cwds))[:8]

    # forbidden / allowed command names
    if name in c.forbidden_cmds or any(fnmatchcase(name, g) for g in c.forbidden_cmd_globs):
        st.add("commands.forbidden_commands", Decision.DENY, f"{name} is in forbidden_commands", matched)

    norm = rules.normalise_argv(argv, c.home, st.cwds[0])
    hits = c.ruleset.matching(norm)
    allow_rule: rules.CompiledRule | None = None
    rule_scores: list[tuple[str, int]] = []
    for h in hits:
        r = h.rule
        if r.decision is Decision.ALLOW:
            allow_rule = allow_rule or h
            continue
        st.add(h.evidence_id, r.decision, r.reason or f"matches rule {r.id}", matched, r.score, r.alternative)
        if r.score is not None:
            rule_scores.append((r.id, r.score))

    if c.allowed_cmds is not None and name not in c.allowed_cmds and name not in ALWAYS_ALLOWED \
            and allow_rule is None:
        d = st.gate(Decision.APPROVE, Decision.DENY, Decision.APPROVE)
        st.add("commands.allowed_commands", d, f"{name} is not in allowed_commands", matched)

    facts = scores.analyze(argv)
    action = facts.action

    for aname, avalue in facts.assignments:
        st.check_assignment(aname, avalue, matched)
    if facts.inner and depth < 8 and facts.inner not in st.unwrapped:
        # the parser normally unwraps wrappers itself; this covers any it left folded
        inner = SimpleCommand(argv=facts.inner, via=cmd.via + (facts.wrapper,), text=matched)
        _command(st, inner, depth + 1)

    escalated = any(v.split(" ", 1)[0] in scores.ESCALATION_WRAPPERS for v in cmd.via)
    if escalated and scores.default_score(action) < scores.default_score("privilege_escalation"):
        action = "privilege_escalation"

    if st.autonomy is Autonomy.READONLY:
        writes = any(m != scores.READ for _, m in facts.paths)
        code = cmd.inline_code is not None and cmd.inline_code[0] not in ("awk", "gawk", "mawk", "nawk", "sed", "jq")
        if facts.mutates or writes or code or escalated:
            st.add("autonomy.readonly", Decision.DENY, f"readonly autonomy: {name} can change state", matched,
                   alternative=ALTERNATIVES["autonomy.readonly"])

    dyn = set(cmd.dynamic_words)
    for word, mode in facts.paths:
        out = st.check_path(word, mode, matched)
        if out and mode in (scores.DELETE, scores.RDELETE):
            # deleting outside every writable root is the seed's delete / rm -rf
            action = "rm_rf" if mode == scores.RDELETE else "delete_file"
    if not facts.known:
        for i, a in enumerate(argv[1:], 1):
            word = a
            if a.startswith("-") and "=" in a:
                word = a.split("=", 1)[1]
            elif "=" in a and not a.startswith(("/", "~", ".")):
                word = a.split("=", 1)[1]
            if paths.looks_like_path(word) or (i in dyn and "$" in word):
                st.check_path(word, scores.READ, matched)
    if cmd.inline_code is not None:
        for m in _INLINE_PATH.finditer(cmd.inline_code[1]):
            st.check_path(m.group(0), scores.READ, matched)

    if facts.inner is not None and not wrote_redirect:
        # a wrapper (sudo, env, timeout, xargs ...) scores as the command it wraps
        return
    if wrote_redirect and scores.default_score(action) < scores.default_score("bash_write"):
        action = "bash_write"
    score = scores.score_of(action, c.overrides)
    if allow_rule is not None and allow_rule.rule.score is not None:
        action, score = allow_rule.rule.id, allow_rule.rule.score
    # one part per simple command, named by its action (drift counts distinct actions);
    # a matched rule with a higher score raises the part's score
    part_score = max([score, *(s for _, s in rule_scores)])
    st.parts.append((action, part_score))
    desc = scores.ACTIONS[action][1] if action in scores.ACTIONS else f"rule {action}"
    st.add("actions.score", st.score_decision(score), f"{action} scores {score}: {desc}", matched, score)

    if facts.network and not policy.network:
        st.network = True
        d = st.gate(Decision.APPROVE, Decision.APPROVE, Decision.ALLOW)
        st.add("network.escalation", d, f"{name} needs the network, which the policy turns off", matched,
               alternative=ALTERNATIVES["network.escalation"] if d is Decision.APPROVE else None)


def _finish(st: _State) -> Verdict:
    policy = st.c.policy
    t = policy.thresholds
    comb = scores.combine(st.parts, t.warn)
    score = comb.score
    if comb.bonus:
        total_d = st.score_decision(comb.score)
        if total_d is Decision.DENY and comb.base < t.auto_deny:
            # the drift bonus alone never denies: it can only raise a chain to approval
            score = max(comb.base, t.auto_deny - 1)
            total_d = Decision.ALLOW if st.autonomy is Autonomy.FULL else Decision.APPROVE
        st.add("actions.drift", total_d, f"{len(comb.drifting)} distinct actions at or above warn "
               f"({', '.join(comb.drifting)}): +{comb.bonus}", "", score)
    cap = policy.max_irreversibility_score
    if cap is not None and comb.score > cap:
        st.add("actions.max_score", Decision.DENY,
               f"score {comb.score} is above this project's max_irreversibility_score {cap}", "", comb.score)
    ev = sorted(st.evidence, key=lambda e: -int(e.decision))
    decision = ev[0].decision if ev else Decision.ALLOW
    network = policy.network or (st.network and decision is not Decision.DENY)
    return Verdict(decision=decision, score=score, risk=t.level(score), evidence=tuple(ev), thresholds=t,
                   network=network, extra_writable=tuple(dict.fromkeys(st.extra_writable)))


def _state(policy: Policy, ctx: EvalContext) -> _State:
    c = _compile(policy, ctx)
    cwd = paths.normalize(ctx.cwd or c.workspace, c.workspace)
    return _State(c=c, ctx=ctx, env=dict(ctx.env), cwds=[cwd])


def evaluate(parsed: ParseResult, policy: Policy, ctx: EvalContext) -> Verdict:
    """Decide a parsed shell command under ``policy`` in ``ctx`` (pure; never raises
    for any ``ParseResult``)."""
    st = _state(policy, ctx)
    st.unwrapped = frozenset(c.argv for c in parsed.commands if c.via)
    if not tool_allowed(policy, "shell"):
        st.add("tools.denied", Decision.DENY, "this project's policy does not allow shell commands", parsed.source)
    bomb = rules.fork_bomb(parsed)
    if bomb:
        st.add(f"commands.forbidden.{rules.FORK_BOMB_ID}", Decision.DENY,
               "a function that spawns itself without end (fork bomb)", bomb, 100)
        st.parts.append((rules.FORK_BOMB_ID, 100))
    for p in parsed.problems:
        d = st.gate(Decision.APPROVE, Decision.DENY, Decision.APPROVE)
        where = f" at position {p.position}" if p.position is not None else ""
        st.add(f"parse.{p.kind}", d, f"{PROBLEM_REASONS.get(p.kind, p.kind)}{where}: {p.message}",
               parsed.source[:200], alternative=ALTERNATIVES["parse"])
    for cmd in parsed.commands:
        _command(st, cmd)
    if not parsed.commands and not parsed.problems and not bomb:
        st.parts.append(("bash_readonly", scores.score_of("bash_readonly", st.c.overrides)))
    return _finish(st)


def evaluate_file(op: str, path: str, policy: Policy, ctx: EvalContext) -> Verdict:
    """Decide a file-tool action (``read``, ``write``, ``edit``, ``list``, ``delete``)
    on ``path`` with the same path rules as shell commands."""
    if op not in FILE_TOOLS:
        raise ValueError(f"unknown file operation {op!r}")
    st = _state(policy, ctx)
    tool = FILE_TOOLS[op]
    if not tool_allowed(policy, tool):
        st.add("tools.denied", Decision.DENY, f"this project's policy does not allow {tool}", path)
    if op in ("write", "edit", "delete") and st.autonomy is Autonomy.READONLY:
        st.add("autonomy.readonly", Decision.DENY, f"readonly autonomy: {op} changes state", path,
               alternative=ALTERNATIVES["autonomy.readonly"])
    if op in ("read", "list", "edit"):
        st.check_path(path, scores.READ, path)
    if op in ("write", "edit"):
        st.check_path(path, scores.WRITE, path)
    if op == "delete":
        st.check_path(path, scores.DELETE, path)
    score = scores.score_of(tool, st.c.overrides)
    st.parts.append((tool, score))
    st.add("actions.score", st.score_decision(score), f"{tool} scores {score}: {scores.ACTIONS[tool][1]}", path,
           score)
    return _finish(st)
