"""Load a policy from TOML (I/O): a preset or file, then the project's narrowing.

``load_policy(home, workspace, selector)``:

1. ``selector`` is a preset name (``readonly``, ``supervised``, ``full``,
   ``code-review``, ``ci``) or a file path; None means
   ``$CLAWSHELL_HOME/config/policy.toml`` when it exists, else the ``supervised`` preset.
   A file may start from a preset with ``extends = "NAME"``.
2. ``<workspace>/.clawshell/security-policy.toml``, when present, can only narrow the
   result (see :func:`narrow`).

Every file is validated as a whole before anything is built; all problems are raised
together as :class:`~clawshell.errors.ConfigError` lines ``file:line: key: message``.
Rules' ``match``/``not_match`` examples in user files are checked at load (the shipped
presets' examples are checked by the test suite, which keeps the hot path fast).
``tomllib`` is imported only when a file is read.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Callable, Mapping, Sequence

from ..errors import ConfigError
from ..home import Home
from ..model import Autonomy, CommandRule, Decision, Policy, Thresholds
from . import ScopedPolicy, paths, rules, scores
from .paths import LazyPattern

PRESETS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "policies")
"""Directory of the shipped presets."""

PRESETS = ("readonly", "supervised", "full", "code-review", "ci")
"""Preset names, strictest first."""

DEFAULT_PRESET = "supervised"
"""Preset used when no selector and no global policy file are given."""

PROJECT_FILE = os.path.join(".clawshell", "security-policy.toml")
"""A project's narrowing file, relative to the workspace."""

_AUTONOMY_ORDER = {Autonomy.READONLY: 0, Autonomy.SUPERVISED: 1, Autonomy.FULL: 2}

# --------------------------------------------------------------------------- validators

Validator = Callable[[Any], "str | None"]


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else f"expected true or false, got {_show(v)}"


def _str(v: Any) -> str | None:
    return None if isinstance(v, str) else f"expected a string, got {_show(v)}"


def _int_range(lo: int, hi: int) -> Validator:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int):
            return f"expected an integer {lo}..{hi}, got {_show(v)}"
        if not lo <= v <= hi:
            return f"{v} is outside {lo}..{hi}"
        return None
    return check


def _number(lo: float, hi: float, *, open_lo: bool = False) -> Validator:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"expected a number, got {_show(v)}"
        if (v <= lo if open_lo else v < lo) or v > hi:
            return f"{v} is outside {'(' if open_lo else '['}{lo}, {hi}]"
        return None
    return check


def _enum(*choices: str) -> Validator:
    def check(v: Any) -> str | None:
        if not isinstance(v, str):
            return f"expected one of {', '.join(choices)}, got {_show(v)}"
        if v not in choices:
            return f"{v!r} is not one of {', '.join(choices)}"
        return None
    return check


def _list_of(item: Validator, *, unique: bool = False) -> Validator:
    def check(v: Any) -> str | None:
        if not isinstance(v, list):
            return f"expected a list, got {_show(v)}"
        for i, x in enumerate(v):
            msg = item(x)
            if msg:
                return f"item {i + 1}: {msg}"
        return None
    return check


_NAME_RE = LazyPattern(r"^[A-Za-z0-9_.+\-\[:]+$")
_ENV_RE = LazyPattern(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ID_RE = LazyPattern(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


def _command_name(v: Any) -> str | None:
    if not isinstance(v, str):
        return f"expected a command name, got {_show(v)}"
    if not v or "/" in v or " " in v:
        return f"{v!r} is not a command basename"
    return None


def _command_glob(v: Any) -> str | None:
    msg = _command_name(v)
    if msg:
        return msg
    if v.strip("*?") == "":
        return f"{v!r} matches every command"
    return None


def _path(v: Any) -> str | None:
    if not isinstance(v, str) or not v:
        return f"expected a path, got {_show(v)}"
    if v == paths.DEFAULTS_MARKER:
        return None
    if not (v.startswith(("/", "~", "$HOME", "${HOME}"))):
        return f"{v!r} must be absolute or start with ~"
    return None


def _writable_path(v: Any) -> str | None:
    msg = _path(v)
    if msg:
        return msg
    if v == paths.DEFAULTS_MARKER:
        return f"{v!r} is only meaningful in forbidden_paths"
    norm = v.rstrip("/") or "/"
    if norm in ("/", "~", "$HOME", "${HOME}") or paths.is_glob(v):
        return f"{v!r} is too broad to make writable"
    return None


def _relpath(v: Any) -> str | None:
    if not isinstance(v, str) or not v or v.startswith("/") or ".." in v.split("/"):
        return f"expected a path relative to the workspace, got {_show(v)}"
    return None


def _env_name(v: Any) -> str | None:
    if not isinstance(v, str) or not _ENV_RE.match(v):
        return f"{_show(v)} is not an environment variable name"
    if v.startswith(("LD_", "DYLD_")) or v in ("BASH_ENV", "ENV", "PROMPT_COMMAND"):
        return f"{v} changes what runs; it cannot be passed through"
    return None


def _env_glob(v: Any) -> str | None:
    if not isinstance(v, str) or not re.match(r"^[A-Za-z_*?][A-Za-z0-9_*?]*$", v):
        return f"{_show(v)} is not an environment variable name or glob"
    return None


def _emit(v: Any) -> str | None:
    if not isinstance(v, str):
        return f"expected stderr, none or fd:N, got {_show(v)}"
    if v in ("stderr", "none"):
        return None
    m = re.fullmatch(r"fd:(\d+)", v)
    if not m:
        return f"{v!r} is not stderr, none or fd:N"
    if int(m.group(1)) < 2:
        return f"{v!r}: fd 0 and 1 belong to the command (use stderr or fd:3 and up)"
    return None


def _scores_table(v: Any) -> str | None:
    if not isinstance(v, dict):
        return f"expected a table, got {_show(v)}"
    return None


def _show(v: Any) -> str:
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return repr(v)
    return f"{type(v).__name__} {v!r}"


_SCORE = _int_range(0, 100)

_RULE_KEYS: dict[str, Validator] = {
    "id": _str, "pattern": lambda v: None if isinstance(v, (str, list)) else f"expected a string or list, got {_show(v)}",
    "decision": _enum("deny", "approve", "allow"), "reason": _str, "alternative": _str, "score": _SCORE,
    "match": _list_of(_str), "not_match": _list_of(_str),
}

GLOBAL_SCHEMA: dict[str, Any] = {
    "description": _str,
    "extends": _enum(*PRESETS),
    "autonomy": {
        "level": _enum("readonly", "supervised", "full"),
        "workspace_only": _bool,
        "allowed_commands": _list_of(_command_name),
        "forbidden_commands": _list_of(_command_glob),
        "forbidden_paths": _list_of(_path),
        "allowed_paths": _list_of(_writable_path),
        "protected_paths": _list_of(_relpath),
        "secret_read_globs": _list_of(_str),
    },
    "actions": {
        "thresholds": {"warn": _SCORE, "flag": _SCORE, "auto_deny": _SCORE},
        "scores": _scores_table,
        "max_irreversibility_score": _SCORE,
    },
    "rules": "rules",
    "sandbox": {
        "backend": _enum("auto", "bwrap", "landlock", "none"),
        "best_effort": _bool,
        "network": _bool,
        "writable_caches": _list_of(_writable_path),
    },
    "env": {"passthrough": _list_of(_env_name), "forbidden": _list_of(_env_glob)},
    "limits": {"timeout_seconds": _number(0, 86400 * 7, open_lo=True),
               "max_output_bytes": _int_range(1, 2 ** 40)},
    "receipts": {"emit": _emit},
    "safety": {"approval": {"timeout_seconds": _number(0, 86400, open_lo=True)}},
    "security": {
        "otp": {"gated_actions": _list_of(_str)},
        "estop": {"require_otp": _bool},
        "leak_detection": {"enabled": _bool, "sensitivity": _number(0.0, 1.0), "high_entropy_tokens": _bool,
                           "secret_files": _list_of(_path)},
    },
    "parser": {"max_command_bytes": _int_range(64, 16 * 1024 * 1024), "max_depth": _int_range(1, 1000)},
}
"""Keys of a global policy file (``[[rules]]`` checked by the rule validator)."""


def _project_path(v: Any) -> str | None:
    if not isinstance(v, str) or not v:
        return f"expected a path, got {_show(v)}"
    return None


PROJECT_SCHEMA: dict[str, Any] = {
    "policy": {
        "description": _str,
        "autonomy": {"level": _enum("readonly", "supervised", "full"), "workspace_only": _bool},
        "tools": {"denied": _list_of(_str), "allowed": _list_of(_str)},
        "filesystem": {"deny": _list_of(_project_path), "write_allow": _list_of(_project_path)},
        "actions": {"max_irreversibility_score": _SCORE, "warn": _SCORE, "flag": _SCORE, "auto_deny": _SCORE,
                    "scores": _scores_table},
        "shell": {"deny": _list_of(_command_glob), "allowed": _list_of(_command_name), "rules": "rules"},
        "network": {"enabled": _bool, "allow_domains": _list_of(_str)},
        "sandbox": {"best_effort": _bool},
    },
}
"""Keys of a project's ``.clawshell/security-policy.toml``."""


# --------------------------------------------------------------------------- TOML text


class _Source:
    """One TOML file: its text, data and a key -> line index for messages."""

    def __init__(self, path: str, text: str, display: str | None = None):
        self.path = path
        self.display = display or path
        self.text = text
        self._index: dict[str, int] | None = None

    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = _line_index(self.text)
        return self._index

    def line(self, key: str) -> int:
        idx = self.index()
        k = key
        while k:
            if k in idx:
                return idx[k]
            k = re.sub(r"(\[\d+\]|\.[^.\[]+|\[\d+\])$", "", k) if ("." in k or "[" in k) else ""
        return 1

    def problem(self, key: str, message: str) -> str:
        return f"{self.display}:{self.line(key)}: {key}: {message}"


_HEADER = LazyPattern(r"^\s*\[\[\s*([^\]]+?)\s*\]\]|^\s*\[\s*([^\]]+?)\s*\]")
_KEYLINE = LazyPattern(r"^\s*((?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _dotted(raw: str) -> str:
    parts = [p.strip().strip("\"'") for p in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", raw)]
    return ".".join(p for p in parts if p)


def _line_index(text: str) -> dict[str, int]:
    """Map dotted keys (``actions.thresholds.flag``, ``rules[1].pattern``) to line numbers."""
    index: dict[str, int] = {}
    counts: dict[str, int] = {}
    table = ""
    in_multi: str | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if in_multi:
            if line.count(in_multi) % 2 == 1:
                in_multi = None
            continue
        m = _HEADER.match(line)
        if m and not _KEYLINE.match(line):
            if m.group(1):
                name = _dotted(m.group(1))
                n = counts.get(name, 0)
                counts[name] = n + 1
                # nested arrays of tables inside an array: resolve the parent index
                parent, _, last = name.rpartition(".")
                prefix = ""
                if parent:
                    pn = counts.get(parent)
                    prefix = f"{parent}[{pn - 1}]." if pn else parent + "."
                table = f"{prefix}{last}[{n}]"
            else:
                table = _dotted(m.group(2))
                parent, _, last = table.rpartition(".")
                pn = counts.get(parent) if parent else None
                if pn:
                    table = f"{parent}[{pn - 1}].{last}"
            index.setdefault(table, lineno)
            continue
        k = _KEYLINE.match(line)
        if k:
            key = _dotted(k.group(1))
            full = f"{table}.{key}" if table else key
            index.setdefault(full, lineno)
            rest = line[k.end():]
            for q in ('"""', "'''"):
                if rest.count(q) % 2 == 1:
                    in_multi = q
                    break
    return index


def _read_toml(path: str, display: str | None = None) -> tuple[_Source, dict[str, Any]]:
    import tomllib

    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(f"{display or path}:1: file: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{display or path}:1: file: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    src = _Source(path, text, display)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        line = int(m.group(1)) if m else 1
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", msg) + (f" (column {m.group(2)})" if m else "")
        raise ConfigError(f"{src.display}:{line}: toml: {msg}") from None
    return src, data


# --------------------------------------------------------------------------- validation


def _validate(src: _Source, data: Mapping[str, Any], schema: Mapping[str, Any], prefix: str,
              problems: list[str], rule_tables: list[tuple[str, dict[str, Any]]], *, project: bool) -> None:
    import difflib

    for key, value in data.items():
        dotted = f"{prefix}{key}"
        spec = schema.get(key)
        if spec is None:
            close = difflib.get_close_matches(key, list(schema), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(sorted(schema))})"
            problems.append(src.problem(dotted, "unknown key" + hint))
        elif spec == "rules":
            if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
                problems.append(src.problem(dotted, "expected an array of tables ([[...]])"))
                continue
            for i, r in enumerate(value):
                rule_tables.append((f"{dotted}[{i}]", r))
        elif isinstance(spec, dict):
            if not isinstance(value, dict):
                problems.append(src.problem(dotted, f"expected a table, got {_show(value)}"))
                continue
            _validate(src, value, spec, dotted + ".", problems, rule_tables, project=project)
        else:
            msg = spec(value)
            if msg:
                problems.append(src.problem(dotted, msg))


def _check_scores(src: _Source, key: str, table: Mapping[str, Any], problems: list[str]) -> None:
    import difflib

    for name, v in table.items():
        if name not in scores.ACTIONS:
            close = difflib.get_close_matches(name, list(scores.ACTIONS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else " (see docs/policy.md for action names)"
            problems.append(src.problem(f"{key}.{name}", "unknown action" + hint))
            continue
        msg = _SCORE(v)
        if msg:
            problems.append(src.problem(f"{key}.{name}", msg))


def _check_thresholds(src: _Source, key: str, t: Mapping[str, Any], base: Thresholds,
                      problems: list[str]) -> None:
    vals = {k: t.get(k, getattr(base, k)) for k in ("warn", "flag", "auto_deny")}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in vals.values()):
        return
    if not vals["warn"] <= vals["flag"] <= vals["auto_deny"]:
        where = next((k for k in ("flag", "auto_deny", "warn") if k in t), "flag")
        problems.append(src.problem(f"{key}.{where}", "thresholds must satisfy warn <= flag <= auto_deny "
                                                      f"(warn={vals['warn']}, flag={vals['flag']}, "
                                                      f"auto_deny={vals['auto_deny']})"))


def _build_rules(src: _Source, tables: Sequence[tuple[str, dict[str, Any]]], problems: list[str],
                 taken: set[str], *, project: bool) -> list[tuple[str, CommandRule]]:
    out: list[tuple[str, CommandRule]] = []
    for key, t in tables:
        bad = False
        for k, v in t.items():
            spec = _RULE_KEYS.get(k)
            if spec is None:
                problems.append(src.problem(f"{key}.{k}", f"unknown key (known: {', '.join(_RULE_KEYS)})"))
                bad = True
                continue
            msg = spec(v)
            if msg:
                problems.append(src.problem(f"{key}.{k}", msg))
                bad = True
        for req in ("id", "pattern", "decision"):
            if req not in t:
                problems.append(src.problem(key, f"missing required key {req!r}"))
                bad = True
        if bad:
            continue
        rid = t["id"]
        if not _ID_RE.match(rid):
            problems.append(src.problem(f"{key}.id", f"{rid!r} is not a valid id (letters, digits, _ . -)"))
            continue
        if rid in rules.BUILTIN_IDS or rid == rules.FORK_BOMB_ID:
            problems.append(src.problem(f"{key}.id", f"{rid!r} is the id of a built-in rule"))
            continue
        if rid in taken:
            problems.append(src.problem(f"{key}.id", f"duplicate rule id {rid!r}"))
            continue
        taken.add(rid)
        decision = {"deny": Decision.DENY, "approve": Decision.APPROVE, "allow": Decision.ALLOW}[t["decision"]]
        if project and decision is Decision.ALLOW:
            problems.append(src.problem(f"{key}.decision", "a project policy can only add deny or approve rules"))
            continue
        raw = t["pattern"]
        if isinstance(raw, str):
            try:
                pattern = rules.split_pattern(raw)
            except ValueError as exc:
                problems.append(src.problem(f"{key}.pattern", f"cannot split: {exc}"))
                continue
        else:
            if not all(isinstance(x, str) and x for x in raw):
                problems.append(src.problem(f"{key}.pattern", "every token must be a non-empty string"))
                continue
            pattern = tuple(raw)
        why = rules.over_broad(pattern, decision)
        if why:
            problems.append(src.problem(f"{key}.pattern", f"over-broad: {why}"))
            continue
        out.append((key, CommandRule(
            id=rid, pattern=pattern, decision=decision, reason=t.get("reason", ""),
            alternative=t.get("alternative"), score=t.get("score"),
            match=tuple(t.get("match", ())), not_match=tuple(t.get("not_match", ())))))
    return out


def check_examples(rule: CommandRule, home_dir: str, cwd: str) -> list[tuple[str, str]]:
    """Failing examples of ``rule`` as ``(key, message)`` pairs (``match``/``not_match``)."""
    from ..shellparse import parse

    out = []
    for ex in rule.match:
        if not rules.rule_matches_command(rule, parse(ex), home_dir, cwd):
            out.append(("match", f"example {ex!r} does not match pattern {' '.join(rule.pattern)!r}"))
    for ex in rule.not_match:
        if rules.rule_matches_command(rule, parse(ex), home_dir, cwd):
            out.append(("not_match", f"example {ex!r} matches pattern {' '.join(rule.pattern)!r}"))
    return out


def _check_rule_examples(src: _Source, built: Sequence[tuple[str, CommandRule]], home: Home | None,
                         problems: list[str], cwd: str) -> None:
    if not any(r.match or r.not_match for _, r in built):
        return
    if home is not None:
        try:
            from ..parsercache import prepare_bashlex

            prepare_bashlex(home.cache)
        except Exception:  # the cache is an optimisation only
            pass
    home_dir = os.environ.get("HOME") or "/"
    for key, r in built:
        for sub, msg in check_examples(r, home_dir, cwd):
            problems.append(src.problem(f"{key}.{sub}", msg))


# --------------------------------------------------------------------------- global files


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge: tables merge key by key, ``rules`` arrays concatenate, other values replace."""
    out = dict(base)
    for k, v in over.items():
        if k == "rules" and isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = list(out[k]) + list(v)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _get(data: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    cur: Any = data
    for p in dotted.split("."):
        if not isinstance(cur, dict) or p not in cur:
            return default
        cur = cur[p]
    return cur


def preset_path(name: str) -> str:
    """Path of preset ``name`` (no check that it exists)."""
    return os.path.join(PRESETS_DIR, f"{name}.toml")


def _load_global(path: str, home: Home | None, workspace: str, *, check_examples: bool,
                 display: str | None = None, depth: int = 0) -> tuple[dict[str, Any], list[CommandRule], list[str]]:
    src, data = _read_toml(path, display)
    problems: list[str] = []
    rule_tables: list[tuple[str, dict[str, Any]]] = []
    _validate(src, data, GLOBAL_SCHEMA, "", problems, rule_tables, project=False)
    base_data: dict[str, Any] = {}
    base_rules: list[CommandRule] = []
    sources: list[str] = []
    ext = data.get("extends")
    if isinstance(ext, str) and ext in PRESETS and depth == 0:
        base_data, base_rules, sources = _load_global(preset_path(ext), home, workspace, check_examples=False,
                                                      depth=1)
    sc = _get(data, "actions.scores")
    if isinstance(sc, dict):
        _check_scores(src, "actions.scores", sc, problems)
    th = _get(data, "actions.thresholds")
    if isinstance(th, dict):
        base_th = _thresholds(_get(base_data, "actions.thresholds", {}) or {}, Thresholds())
        _check_thresholds(src, "actions.thresholds", th, base_th, problems)
    taken = {r.id for r in base_rules}
    built = _build_rules(src, rule_tables, problems, taken, project=False)
    if check_examples and not problems:
        _check_rule_examples(src, built, home, problems, workspace)
    if problems:
        raise ConfigError(problems)
    merged = _merge(base_data, {k: v for k, v in data.items() if k != "rules"})
    return merged, base_rules + [r for _, r in built], sources + [path]


def _thresholds(t: Mapping[str, Any], base: Thresholds) -> Thresholds:
    return Thresholds(warn=t.get("warn", base.warn), flag=t.get("flag", base.flag),
                      auto_deny=t.get("auto_deny", base.auto_deny))


def build_policy(data: Mapping[str, Any], rule_list: Sequence[CommandRule], name: str,
                 sources: Sequence[str]) -> Policy:
    """Build a :class:`Policy` from validated global-file data (missing keys -> defaults)."""
    g = lambda k, d=None: _get(data, k, d)  # noqa: E731
    level = Autonomy(g("autonomy.level", "supervised"))
    ws_only = g("autonomy.workspace_only")
    if ws_only is None:
        ws_only = level is not Autonomy.FULL
    allowed = g("autonomy.allowed_commands")
    forbidden_paths = g("autonomy.forbidden_paths")
    base = Policy()
    kw: dict[str, Any] = dict(
        name=name, autonomy=level, workspace_only=bool(ws_only),
        allowed_commands=None if allowed is None else tuple(dict.fromkeys(allowed)),
        forbidden_commands=tuple(dict.fromkeys(g("autonomy.forbidden_commands", ()))),
        rules=tuple(rule_list),
        forbidden_paths=(paths.DEFAULT_FORBIDDEN_PATHS if forbidden_paths is None
                         else paths.resolve_forbidden(forbidden_paths)),
        allowed_paths=tuple(g("autonomy.allowed_paths", ())),
        scores=tuple(sorted((g("actions.scores", {}) or {}).items())),
        thresholds=_thresholds(g("actions.thresholds", {}) or {}, Thresholds()),
        max_irreversibility_score=g("actions.max_irreversibility_score"),
        network=g("sandbox.network", base.network),
        sandbox=g("sandbox.backend", base.sandbox),
        best_effort=g("sandbox.best_effort", base.best_effort),
        writable_caches=tuple(g("sandbox.writable_caches", ())),
        env_passthrough=tuple(g("env.passthrough", ())),
        timeout_seconds=float(g("limits.timeout_seconds", base.timeout_seconds)),
        max_output_bytes=g("limits.max_output_bytes", base.max_output_bytes),
        receipts_emit=g("receipts.emit", base.receipts_emit),
        approval_timeout_seconds=float(g("safety.approval.timeout_seconds", base.approval_timeout_seconds)),
        otp_gated_actions=tuple(g("security.otp.gated_actions", ())),
        estop_require_otp=g("security.estop.require_otp", base.estop_require_otp),
        leak_detection=g("security.leak_detection.enabled", base.leak_detection),
        leak_sensitivity=float(g("security.leak_detection.sensitivity", base.leak_sensitivity)),
        leak_high_entropy=g("security.leak_detection.high_entropy_tokens", base.leak_high_entropy),
        secret_files=tuple(g("security.leak_detection.secret_files", ())),
        max_command_bytes=g("parser.max_command_bytes", base.max_command_bytes),
        max_depth=g("parser.max_depth", base.max_depth),
        sources=tuple(sources),
    )
    if g("autonomy.protected_paths") is not None:
        kw["protected_paths"] = tuple(g("autonomy.protected_paths"))
    if g("autonomy.secret_read_globs") is not None:
        kw["secret_read_globs"] = tuple(g("autonomy.secret_read_globs"))
    if g("env.forbidden") is not None:
        kw["forbidden_env"] = tuple(dict.fromkeys((*base.forbidden_env, *g("env.forbidden"))))
    return ScopedPolicy(**kw)


def load_file(path: str, home: Home | None = None, workspace: str | None = None, *,
              name: str | None = None, check_examples: bool = True) -> Policy:
    """Load one global policy file (with its ``extends`` preset); raises ConfigError."""
    ws = workspace or os.getcwd()
    data, rule_list, sources = _load_global(path, home, ws, check_examples=check_examples)
    return build_policy(data, rule_list, name or path, sources)


def load_preset(name: str) -> Policy:
    """Load a shipped preset by name (examples are not re-checked; the tests do that)."""
    if name not in PRESETS:
        raise ConfigError(f"{name}:1: policy: unknown preset (choose one of {', '.join(PRESETS)})")
    return load_file(preset_path(name), None, "/", name=name, check_examples=False)


# --------------------------------------------------------------------------- projects


def narrow(policy: Policy, data: Mapping[str, Any], workspace: str, *, source: str = "<project>",
           text: str = "", home: Home | None = None, check_examples: bool = True) -> ScopedPolicy:
    """Apply a project's narrowing (already-parsed TOML ``data``) to ``policy``.

    The result is never looser than ``policy``: autonomy, thresholds and the score
    ceiling take the stricter value; forbidden paths, commands and rules are added;
    allowed commands and tools intersect; network and best_effort can only turn off;
    action scores can only go up.  Raises ConfigError for invalid data."""
    src = _Source(source, text)
    problems: list[str] = []
    rule_tables: list[tuple[str, dict[str, Any]]] = []
    _validate(src, data, PROJECT_SCHEMA, "", problems, rule_tables, project=True)
    p = data.get("policy") if isinstance(data.get("policy"), dict) else {}
    g = lambda k, d=None: _get(p, k, d)  # noqa: E731
    ws = paths.normalize(workspace, "/")
    sc = g("actions.scores")
    if isinstance(sc, dict):
        _check_scores(src, "policy.actions.scores", sc, problems)
    given = [(k, g(f"actions.{k}")) for k in ("warn", "flag", "auto_deny")]
    given = [(k, v) for k, v in given if isinstance(v, int) and not isinstance(v, bool)]
    if [v for _, v in given] != sorted(v for _, v in given):
        problems.append(src.problem(f"policy.actions.{given[-1][0]}",
                                    "thresholds must satisfy warn <= flag <= auto_deny ("
                                    + ", ".join(f"{k}={v}" for k, v in given) + ")"))
    for key in ("filesystem.write_allow",):
        items = g(key, ())
        for i, w in enumerate(items if isinstance(items, list) else ()):
            if isinstance(w, str) and w:
                full = paths.normalize(paths.expand(w, os.environ.get("HOME") or "/")[0], ws)
                if not paths.within(full, ws):
                    problems.append(src.problem(f"policy.{key}", f"item {i + 1}: {w!r} is outside the workspace"))
    taken = {r.id for r in policy.rules}
    built = _build_rules(src, rule_tables, problems, taken, project=True)
    if check_examples and not problems:
        _check_rule_examples(src, built, home, problems, ws)
    if problems:
        raise ConfigError(problems)

    base = policy
    level = base.autonomy
    want = g("autonomy.level")
    lowered = False
    if want is not None and _AUTONOMY_ORDER[Autonomy(want)] < _AUTONOMY_ORDER[level]:
        level, lowered = Autonomy(want), True
    ws_only = base.workspace_only or bool(g("autonomy.workspace_only", False)) or \
        (lowered and level is not Autonomy.FULL)

    t0 = base.thresholds
    thresholds = Thresholds(warn=min(t0.warn, g("actions.warn", t0.warn)),
                            flag=min(t0.flag, g("actions.flag", t0.flag)),
                            auto_deny=min(t0.auto_deny, g("actions.auto_deny", t0.auto_deny)))
    cap = g("actions.max_irreversibility_score")
    if cap is not None and base.max_irreversibility_score is not None:
        cap = min(cap, base.max_irreversibility_score)
    elif cap is None:
        cap = base.max_irreversibility_score
    merged_scores = dict(base.scores)
    for name, v in (g("actions.scores", {}) or {}).items():
        merged_scores[name] = max(scores.score_of(name, dict(base.scores)), v)

    allowed = base.allowed_commands
    if g("shell.allowed") is not None:
        proj = tuple(dict.fromkeys(g("shell.allowed")))
        allowed = proj if allowed is None else tuple(c for c in allowed if c in proj)
    home_dir = os.environ.get("HOME") or "/"
    extra_forbidden = []
    for d in g("filesystem.deny", ()) or ():
        text_, _ = paths.expand(d, home_dir)
        extra_forbidden.append(paths.normalize(text_, ws) if not text_.startswith("/") else text_)

    tools_allowed = getattr(base, "tools_allowed", None)
    if g("tools.allowed") is not None:
        proj_t = tuple(dict.fromkeys(g("tools.allowed")))
        tools_allowed = proj_t if tools_allowed is None else tuple(t for t in tools_allowed if t in proj_t)
    write_allow = getattr(base, "write_allow", None)
    if g("filesystem.write_allow") is not None:
        wa = tuple(paths.normalize(paths.expand(w, home_dir)[0], ws) for w in g("filesystem.write_allow"))
        write_allow = wa if write_allow is None else tuple(
            w for w in wa if any(paths.within(w, x) for x in write_allow))
    network = base.network and g("network.enabled", True) and not (g("network.allow_domains") is not None)
    best_effort = base.best_effort and g("sandbox.best_effort", True)

    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    fields.update(
        autonomy=level, workspace_only=ws_only, thresholds=thresholds, max_irreversibility_score=cap,
        scores=tuple(sorted(merged_scores.items())), allowed_commands=allowed,
        forbidden_commands=tuple(dict.fromkeys((*base.forbidden_commands, *(g("shell.deny", ()) or ())))),
        forbidden_paths=tuple(dict.fromkeys((*base.forbidden_paths, *extra_forbidden))),
        rules=tuple(base.rules) + tuple(r for _, r in built),
        network=network, best_effort=best_effort,
        tools_allowed=tools_allowed,
        tools_denied=tuple(dict.fromkeys((*getattr(base, "tools_denied", ()), *(g("tools.denied", ()) or ())))),
        write_allow=write_allow,
        sources=tuple(base.sources) + (source,),
    )
    return ScopedPolicy(**fields)


def narrow_file(policy: Policy, path: str, workspace: str, home: Home | None = None) -> ScopedPolicy:
    """Read a project file and apply it with :func:`narrow`."""
    src, data = _read_toml(path)
    return narrow(policy, data, workspace, source=path, text=src.text, home=home)


# --------------------------------------------------------------------------- entry points


def load_policy(home: Home, workspace: str, selector: str | None) -> Policy:
    """The effective policy for ``workspace``: selector/global file/preset, then the
    project's narrowing.  Raises :class:`~clawshell.errors.ConfigError`."""
    if selector is None or selector == "":
        if os.path.exists(home.policy_file):
            policy = load_file(home.policy_file, home, workspace, name=home.policy_file)
        else:
            policy = load_preset(DEFAULT_PRESET)
    elif selector in PRESETS:
        policy = load_preset(selector)
    elif os.sep in selector or selector.endswith(".toml") or os.path.exists(selector):
        path = os.path.abspath(selector)
        if not os.path.isfile(path):
            raise ConfigError(f"{selector}:1: policy: no such file")
        policy = load_file(path, home, workspace, name=path)
    else:
        raise ConfigError(f"{selector}:1: policy: unknown preset (choose one of {', '.join(PRESETS)}, "
                          "or give a file path)")
    project = os.path.join(workspace, PROJECT_FILE)
    if os.path.isfile(project):
        policy = narrow_file(policy, project, workspace, home)
    return policy


def _canon(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _canon(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, Decision):
        return v.label
    if isinstance(v, (Autonomy,)):
        return v.value
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _canon(x) for k, x in v.items()}
    return v


def policy_hash(policy: Policy) -> str:
    """sha256 (hex) of a canonical form of everything that decides (not name/sources),
    including the built-in rules and score table of this version."""
    import hashlib
    import json

    body = _canon(policy)
    body.pop("name", None)
    body.pop("sources", None)
    body["_builtin_rules"] = _canon(list(rules.BUILTIN_RULES))
    body["_actions"] = {k: v[0] for k, v in scores.ACTIONS.items()}
    body["_type"] = type(policy).__name__
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- cache
# Loading a policy (tomllib, validation, the project's narrowing, the hash) costs tens
# of milliseconds on every `clawshell -c`; the result only changes when one of its
# files or clawshell itself changes.  The cache lives in $CLAWSHELL_HOME/cache (mode
# 0700, hidden from sandboxed commands) and is keyed by everything the result depends on.


def _stat_key(path: str) -> tuple[Any, ...]:
    try:
        st = os.stat(path)
    except OSError:
        return (path, None)
    return (path, st.st_ino, st.st_size, st.st_mtime_ns)


def _cache_key(home: Home, workspace: str, selector: str | None) -> str:
    import hashlib

    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.dirname(here)
    parts: list[Any] = [
        "policy-cache-v1", selector, workspace, home.root, os.environ.get("HOME"),
        _stat_key(home.policy_file), _stat_key(os.path.join(workspace, PROJECT_FILE)),
        _stat_key(PRESETS_DIR),
    ]
    parts += [_stat_key(os.path.join(PRESETS_DIR, f"{p}.toml")) for p in PRESETS]
    parts += [_stat_key(os.path.join(here, f)) for f in sorted(os.listdir(here)) if f.endswith(".py")]
    parts.append(_stat_key(os.path.join(pkg, "model.py")))
    if selector and selector not in PRESETS:
        parts.append(_stat_key(os.path.abspath(selector)))
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def load_policy_and_hash(home: Home, workspace: str, selector: str | None) -> tuple[Policy, str]:
    """``(load_policy(...), policy_hash(...))``, served from the cache when nothing it
    depends on has changed.  Errors are never cached: a bad file fails every time."""
    import pickle

    from ..cachefile import read_private, write_private

    path = os.path.join(home.cache, f"policy-{_cache_key(home, workspace, selector)}.pickle")
    blob = read_private(path)  # only a private file of ours: pickle runs code when loaded
    if blob:
        try:
            policy, digest = pickle.loads(blob)
            if isinstance(policy, Policy) and isinstance(digest, str):
                return policy, digest
        except Exception:
            pass
    policy = load_policy(home, workspace, selector)
    digest = policy_hash(policy)
    try:
        home.zone("cache")
        write_private(path, pickle.dumps((policy, digest), protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        pass  # a cache that cannot be written costs time, never correctness
    return policy, digest
