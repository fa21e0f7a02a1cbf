"""Frozen data types shared by every layer of clawshell.

Data flows one way: argv -> shellparse (``ParseResult``) -> policy.engine
(``Verdict``) -> approval -> sandbox (``SandboxSpec`` -> ``LaunchPlan``) ->
runner (``RunResult``) -> leaks -> receipts -> audit.  Nothing in here does I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, NewType

SessionId = NewType("SessionId", str)
"""Identifier grouping the shell calls of one agent session."""

ApprovalToken = NewType("ApprovalToken", str)
"""Human-facing approval token such as ``CLAW-A8F2``."""


class Decision(enum.IntEnum):
    """What happens to an action.  Ordered: the strictest part of a command wins."""

    ALLOW = 0
    APPROVE = 1
    DENY = 2

    @property
    def label(self) -> str:
        """Lower-case name used in messages and JSON."""
        return self.name.lower()


class Autonomy(str, enum.Enum):
    """Coarse knob from the seed documents."""

    READONLY = "readonly"
    SUPERVISED = "supervised"
    FULL = "full"


class RiskLevel(str, enum.Enum):
    """Risk level an irreversibility score maps to (seed: declared risk levels)."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


# --------------------------------------------------------------------------- parse


@dataclass(frozen=True)
class Redirect:
    """One redirection of a simple command."""

    op: str
    """Operator as written: ``>``, ``>>``, ``<``, ``>|``, ``&>``, ``<<``, ``<<<``, ``>&`` ..."""
    fd: int | None
    """Explicit file descriptor on the left (``2>``), or None."""
    target: str
    """Normalised target word (a path, an fd number for ``>&``, or here-doc text)."""
    dynamic: bool = False
    """True when the target contains an expansion that cannot be known statically."""

    @property
    def writes(self) -> bool:
        """True when this redirect may create or modify its target file."""
        if self.op in ("<", "<<", "<<<", "<<-", "<&"):
            return False
        if self.op in (">&", "&>", ">&-") and self.target.isdigit():
            return False
        return self.target not in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty") and self.target != "-"


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command the shell would run, after unwrapping wrappers."""

    argv: tuple[str, ...]
    """Normalised words (quotes, backslashes and ``$'..'`` decoded).  May be empty
    for a bare assignment or redirect-only command."""
    assignments: tuple[tuple[str, str], ...] = ()
    """Env-assignment prefixes ``NAME=value`` (value normalised)."""
    redirects: tuple[Redirect, ...] = ()
    """Redirections attached to this command."""
    dynamic_words: tuple[int, ...] = ()
    """Indexes into ``argv`` of words containing expansions not known statically
    (``$VAR``, ``$(..)``, globs are *not* counted)."""
    via: tuple[str, ...] = ()
    """Wrapper chain this command was found inside, outermost first
    (e.g. ``("sudo", "bash -c")``)."""
    inline_code: tuple[str, str] | None = None
    """``(language, code)`` when this is an interpreter running inline code
    (``python -c``, ``node -e``, ``python -`` with a here-doc ...)."""
    text: str = ""
    """Source text of the command (for evidence)."""
    background: bool = False
    """True when run with ``&``."""

    @property
    def name(self) -> str:
        """Basename of the command word, or ``""``."""
        if not self.argv:
            return ""
        return self.argv[0].rsplit("/", 1)[-1]

    @property
    def dynamic_name(self) -> bool:
        """True when the command name itself is built from expansions."""
        return 0 in self.dynamic_words


@dataclass(frozen=True)
class ParseProblem:
    """Something the parser could not know statically or could not parse."""

    kind: str
    """``syntax`` | ``too_large`` | ``too_deep`` | ``dynamic_eval`` | ``dynamic_command`` | ``unsupported``"""
    message: str
    """Human-readable explanation."""
    position: int | None = None
    """Character offset into the command text, when known."""


@dataclass(frozen=True)
class ParseResult:
    """Every simple command a string would run, plus what could not be known."""

    source: str
    """The command text as given."""
    commands: tuple[SimpleCommand, ...]
    """All simple commands found at any depth, in source order."""
    problems: tuple[ParseProblem, ...] = ()
    """Empty when the whole string was understood statically."""
    functions: tuple[str, ...] = ()
    """Names of shell functions the string defines (their bodies are in ``commands``)."""


# --------------------------------------------------------------------------- policy


@dataclass(frozen=True)
class Thresholds:
    """Score thresholds from ``[actions.thresholds]``."""

    warn: int = 40
    """At or above: medium risk, runs and is logged ``[HIGH_RISK]``."""
    flag: int = 65
    """At or above: high risk, needs approval."""
    auto_deny: int = 95
    """At or above: critical, denied."""

    def level(self, score: int) -> RiskLevel:
        """Map a 0-100 irreversibility score to a risk level."""
        if score >= self.auto_deny:
            return RiskLevel.CRITICAL
        if score >= self.flag:
            return RiskLevel.HIGH
        if score >= self.warn:
            return RiskLevel.MEDIUM
        return RiskLevel.LOW


@dataclass(frozen=True)
class Evidence:
    """One reason contributing to a verdict."""

    rule: str
    """Stable rule id, e.g. ``paths.workspace_only`` or ``commands.forbidden.rm_rf_root``."""
    decision: Decision
    """What this piece of evidence asks for."""
    reason: str
    """Short human sentence (``writes outside the workspace``)."""
    matched: str = ""
    """The part of the command (or the path) that matched."""
    score: int | None = None
    """Irreversibility score this evidence carries, if any."""
    alternative: str | None = None
    """A safer way to do it, when one exists."""


@dataclass(frozen=True)
class Verdict:
    """The decision for one action with everything that led to it."""

    decision: Decision
    """Strictest decision of all evidence."""
    score: int
    """Irreversibility score 0-100 of the whole action."""
    risk: RiskLevel
    """Risk level of ``score`` under ``thresholds``."""
    evidence: tuple[Evidence, ...]
    """All evidence, strictest first."""
    thresholds: Thresholds = field(default_factory=Thresholds)
    """Thresholds in force."""
    network: bool = False
    """True when the action is allowed network access (escalation granted by policy)."""
    extra_writable: tuple[str, ...] = ()
    """Absolute paths outside the workspace the action may write (escalations)."""

    @property
    def primary(self) -> Evidence | None:
        """The evidence that decided (first of the strictest)."""
        return self.evidence[0] if self.evidence else None

    @property
    def high_risk(self) -> bool:
        """True for medium or worse (logged ``[HIGH_RISK]``)."""
        return self.risk is not RiskLevel.LOW


@dataclass(frozen=True)
class EvalContext:
    """What the pure engine needs to know about the world, passed in."""

    cwd: str
    """Absolute working directory the command runs in."""
    workspace: str
    """Absolute sandbox root (``--cwd``)."""
    home: str
    """The user's HOME (absolute)."""
    clawshell_home: str
    """Absolute CLAWSHELL_HOME (always protected)."""
    realpath: Callable[[str], str] = lambda p: p
    """Resolves symlinks of the existing prefix of an absolute path (injected I/O)."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables visible for ``$VAR`` expansion of paths (HOME, PWD...)."""
    session: str = ""
    """Session id, for forecasting."""


# --------------------------------------------------------------------------- sandbox


class Layer(str, enum.Enum):
    """One kernel confinement layer."""

    BWRAP = "bwrap"
    LANDLOCK = "landlock"
    SECCOMP = "seccomp"
    NO_NEW_PRIVS = "no_new_privs"
    RLIMITS = "rlimits"


@dataclass(frozen=True)
class HostProbe:
    """What this host offers (from ``sandbox.probe``); pure code takes it as an argument."""

    landlock_abi: int
    """0 when Landlock is unavailable."""
    seccomp: bool
    """True when seccomp filters can be installed."""
    bwrap: str | None
    """Path of a working bwrap, or None."""
    userns: bool
    """True when bwrap could create its namespaces here."""
    notes: tuple[str, ...] = ()
    """Why a layer is missing and how to enable it."""


@dataclass(frozen=True)
class SandboxSpec:
    """What the policy asks of the kernel for one command."""

    backend: str = "auto"
    """``auto`` | ``bwrap`` | ``landlock`` | ``none``."""
    best_effort: bool = False
    """Run with fewer layers than asked instead of refusing."""
    workspace: str = ""
    """Absolute read-write root."""
    cwd: str = ""
    """Absolute directory the command starts in."""
    read_only: tuple[str, ...] = ()
    """Extra absolute paths readable/executable (system dirs are always added)."""
    writable: tuple[str, ...] = ()
    """Extra absolute paths writable (package caches, agent bookkeeping files...)."""
    hidden: tuple[str, ...] = ()
    """Forbidden absolute paths: neither readable nor writable."""
    protected: tuple[str, ...] = ()
    """Absolute paths inside writable roots kept read-only (may not exist yet)."""
    network: bool = False
    """Allow network (TCP/UDP, non-unix sockets)."""
    timeout: float | None = None
    """Seconds before the whole process tree is killed."""
    env: tuple[tuple[str, str], ...] = ()
    """The scrubbed environment the command gets."""
    limits: tuple[tuple[str, int], ...] = ()
    """rlimits by name (``fsize``, ``as``, ``nofile``, ``core``, ``nproc``)."""
    max_output: int | None = None
    """Bytes of stdout+stderr before output is cut with a marker."""


@dataclass(frozen=True)
class LaunchPlan:
    """How to start the command: argv + env, built by a backend; only runner spawns."""

    argv: tuple[str, ...]
    """Full argv to exec (e.g. ``bwrap ... -- python helper ... -- bash -c CMD``)."""
    env: tuple[tuple[str, str], ...]
    """Environment for the exec."""
    cwd: str
    """Directory to start in."""
    layers: tuple[str, ...]
    """Layers that will really be in force (for receipts)."""
    pass_fds: tuple[int, ...] = ()
    """File descriptors the child must inherit."""
    preexec: tuple[tuple[str, object], ...] = ()
    """In-process restrictions the runner applies in the forked child before exec
    (used when there is no helper process), as ``(kind, data)`` pairs."""
    timeout: float | None = None
    """Seconds before the tree is killed."""
    max_output: int | None = None
    """Output cap in bytes."""


@dataclass(frozen=True)
class LeakFinding:
    """A secret found in output; never holds the value."""

    kind: str
    """Pattern name, e.g. ``aws_access_key_id``."""
    stream: str
    """``stdout`` | ``stderr`` | ``file``."""
    offset: int
    """Byte offset in the original stream."""
    length: int
    """Length of the masked span in bytes."""


@dataclass(frozen=True)
class RunResult:
    """What happened when a command ran."""

    status: int
    """Exit status as bash would report it (128+N for a signal death)."""
    duration: float
    """Wall seconds."""
    stdout_sha256: str
    """Hex digest of stdout as the command produced it."""
    stderr_sha256: str
    """Hex digest of stderr as the command produced it."""
    layers: tuple[str, ...] = ()
    """Layers really in force."""
    timed_out: bool = False
    """Killed by the timeout."""
    truncated: bool = False
    """Output cut at the cap."""
    leaks: tuple[LeakFinding, ...] = ()
    """Secrets masked in the output."""
    injections: tuple[str, ...] = ()
    """Prompt-injection phrasings seen in the output (kinds)."""


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class CommandRule:
    """A forbidden/approve/allow command pattern from policy (``[[rules]]``)."""

    id: str
    """Stable id used in evidence (``commands.<id>``)."""
    pattern: tuple[str, ...]
    """Argv prefix pattern; each token is an fnmatch glob; ``**`` matches any run of words."""
    decision: Decision
    """What a match asks for."""
    reason: str = ""
    """Why (shown to the agent)."""
    alternative: str | None = None
    """Suggested safer command."""
    score: int | None = None
    """Score a match carries."""
    match: tuple[str, ...] = ()
    """Example commands that must match (checked at load)."""
    not_match: tuple[str, ...] = ()
    """Example commands that must not match (checked at load)."""


@dataclass(frozen=True)
class Policy:
    """The effective policy: global config, preset, and project narrowing merged."""

    name: str = "supervised"
    """Preset or file it came from."""
    autonomy: Autonomy = Autonomy.SUPERVISED
    """readonly | supervised | full."""
    workspace_only: bool = True
    """Writes outside the workspace are denied (defaults to False under full unless set)."""
    allowed_commands: tuple[str, ...] | None = None
    """None (missing): any command name; empty tuple: every command needs approval
    (denied under readonly); otherwise only these basenames run, others need approval.
    Shell builtins such as ``cd`` and ``echo`` are never gated by this list."""
    forbidden_commands: tuple[str, ...] = ()
    """Basenames that are always denied."""
    rules: tuple[CommandRule, ...] = ()
    """Configured pattern rules; the engine always applies its built-in rules too."""
    forbidden_paths: tuple[str, ...] = ()
    """Paths (``~`` allowed) never read or written.  Empty in a hand-built Policy; the
    loader fills in ``policy.paths.DEFAULT_FORBIDDEN_PATHS``.  Other users' homes and
    CLAWSHELL_HOME are forbidden by the engine itself."""
    allowed_paths: tuple[str, ...] = ()
    """Paths outside the workspace that may be written (most specific entry wins)."""
    protected_paths: tuple[str, ...] = (
        ".git/hooks", ".git/config", ".clawshell", ".bashrc", ".bash_profile", ".profile",
        ".zshrc", ".zprofile", ".envrc",
    )
    """Workspace-relative paths that need approval to write (read-only in the sandbox)."""
    secret_read_globs: tuple[str, ...] = (".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_ed25519")
    """Workspace basenames whose read needs approval."""
    scores: tuple[tuple[str, int], ...] = ()
    """``[actions.scores]`` overrides by action name."""
    thresholds: Thresholds = field(default_factory=Thresholds)
    """``[actions.thresholds]``."""
    max_irreversibility_score: int | None = None
    """Project ceiling: a score above it is denied."""
    forbidden_env: tuple[str, ...] = (
        "LD_*", "BASH_ENV", "ENV", "PATH", "GIT_*_COMMAND", "GIT_SSH", "GIT_EXEC_PATH", "GIT_DIR",
        "GIT_CONFIG*", "PAGER", "GIT_PAGER", "EDITOR", "VISUAL", "PROMPT_COMMAND", "PYTHONSTARTUP",
        "PYTHONPATH", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "IFS", "SHELLOPTS", "BASHOPTS", "DYLD_*",
    )
    """Env-assignment prefixes that are denied (globs)."""
    network: bool = False
    """Commands may use the network."""
    sandbox: str = "auto"
    """auto | bwrap | landlock | none."""
    best_effort: bool = False
    """Run with fewer layers than asked instead of refusing."""
    writable_caches: tuple[str, ...] = ()
    """Package cache dirs made writable (``~/.cache/pip`` ...)."""
    env_passthrough: tuple[str, ...] = ()
    """Extra environment names passed to commands."""
    timeout_seconds: float = 600.0
    """Per-command timeout."""
    max_output_bytes: int = 64 * 1024 * 1024
    """Output cap."""
    receipts_emit: str = "stderr"
    """stderr | fd:N | none."""
    approval_timeout_seconds: float = 300.0
    """How long a flagged command waits for a human."""
    otp_gated_actions: tuple[str, ...] = ()
    """Tool kinds / command patterns needing ``--otp``."""
    estop_require_otp: bool = False
    """``estop resume`` needs an OTP code."""
    leak_detection: bool = True
    """Scan output for secrets."""
    leak_sensitivity: float = 0.7
    """0.0-1.0; higher is more aggressive."""
    leak_high_entropy: bool = True
    """Run the high-entropy heuristic."""
    secret_files: tuple[str, ...] = ()
    """Files whose contents are masked wherever they appear."""
    max_command_bytes: int = 65536
    """Commands longer than this are not parsed (decided by policy)."""
    max_depth: int = 32
    """Nesting depth limit of the parser."""
    sources: tuple[str, ...] = ()
    """Files merged into this policy, in order (for messages and the policy hash)."""
