"""The kernel sandbox: from a policy and a verdict to a ``LaunchPlan`` the runner executes.

``build_spec`` turns the policy, the verdict's escalations and the caller's environment
into a ``SandboxSpec`` (what the kernel must enforce); ``plan`` picks the layers this
host offers (``probe.probe_host``) and asks the pure planners (``landlock``,
``seccomp``, ``bwrap``) for the argv and the in-child steps.  ``scrubbed_secrets``
returns the values of secret variables that were kept out of the command's
environment, so the leak scanner can mask them if they show up anyway.

Layers (``sandbox = auto | bwrap | landlock | none``):

- ``auto``: every layer the host offers (bwrap when usable, Landlock, seccomp,
  no_new_privs, rlimits); it needs at least one filesystem layer and seccomp.
- ``bwrap``: bwrap and seccomp required, Landlock added when available.
- ``landlock``: Landlock and seccomp required, no namespaces.
- ``none``: nothing but the scrubbed environment.

What cannot be applied raises ``SandboxUnavailableError`` naming the layer and how to
enable it, unless the policy says ``best_effort``; ``LaunchPlan.layers`` lists what is
really in force.  docs/threat-model.md explains each choice.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
import sys
from typing import Mapping, Sequence

from .._realpath import realpath as _realpath
from ..errors import SandboxUnavailableError
from ..model import EvalContext, HostProbe, Layer, LaunchPlan, Policy, SandboxSpec, Verdict

SYSTEM_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store",
               "/snap/bin")
"""Read + execute everywhere: the system's programs and libraries."""

ETC_ALLOW = (
    # dynamic linking, time, users and groups (names, not /etc/shadow)
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload", "/etc/localtime",
    "/etc/timezone", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
    # name resolution and services
    "/etc/host.conf", "/etc/hosts", "/etc/resolv.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
    "/etc/networks",
    # TLS trust (not /etc/ssl/private)
    "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ca-certificates.conf",
    "/etc/pki/tls/certs", "/etc/pki/ca-trust", "/etc/crypto-policies",
    # program choices, shells and their startup files
    "/etc/alternatives", "/etc/shells", "/etc/bash.bashrc", "/etc/profile", "/etc/profile.d",
    "/etc/environment", "/etc/inputrc", "/etc/bash_completion", "/etc/bash_completion.d", "/etc/zsh",
    "/etc/zshrc", "/etc/zshenv", "/etc/zprofile",
    # tools
    "/etc/gitconfig", "/etc/vim", "/etc/mime.types", "/etc/magic", "/etc/magic.mime", "/etc/terminfo",
    "/etc/ssh/ssh_config", "/etc/ssh/ssh_config.d", "/etc/ssh/ssh_known_hosts",
    # locale and system identity
    "/etc/locale.alias", "/etc/default/locale", "/etc/os-release", "/etc/lsb-release", "/etc/debian_version",
    "/etc/mtab",
)
"""The /etc entries commands may read (everything else in /etc stays hidden)."""

SYS_ALLOW = ("/sys/devices/system/cpu",)
"""The /sys entries commands may read (CPU count for sysconf, nproc, build tools)."""

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/pts",
           "/dev/ptmx")
"""Character devices given read/write/ioctl."""

HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".kube", ".docker", ".netrc", ".git-credentials", ".config", ".npmrc",
    ".pypirc", ".pgpass", ".my.cnf", ".s3cfg", ".boto", ".azure", ".vault-token", ".password-store",
    ".local/share/keyrings", ".terraform.d/credentials.tfrc.json", ".cargo/credentials",
    ".cargo/credentials.toml", ".m2/settings.xml", ".m2/settings-security.xml", ".gradle/gradle.properties",
    ".claude/.credentials.json", ".claude.json", ".bash_history", ".zsh_history", ".python_history",
    ".node_repl_history", ".psql_history", ".mysql_history", ".sqlite_history", ".lesshst", ".viminfo",
)
"""Secret parts of HOME hidden by the sandbox in addition to the policy's forbidden paths."""

ETC_HIDDEN = ("/etc/ssl/private",)
"""Secret parts of allowed /etc entries."""

ENV_ALLOW = ("PATH", "HOME", "LANG", "LC_*", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "COLORTERM",
             "NO_COLOR")
"""Variables passed to commands (plus ``Policy.env_passthrough``)."""

_SECRET_WORDS = {"KEY", "KEYS", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "PWD",
                 "CREDENTIAL", "CREDENTIALS", "CREDS", "APIKEY", "AUTH", "COOKIE", "PRIVATE", "PAT", "DSN",
                 "PASSPHRASE", "SIGNATURE", "CERT"}
_SECRET_SUBSTRINGS = ("PASSWORD", "SECRET", "TOKEN", "APIKEY", "API_KEY", "CREDENTIAL", "PRIVATE_KEY")

DEFAULT_LIMITS = (("fsize", 16 << 30), ("as", 64 << 30), ("nofile", 16384), ("core", 0), ("pids", 4096))
"""rlimits (bytes / counts) and the process-count limit every sandboxed run gets."""

RC_NAMES = frozenset({".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
                      ".zprofile", ".zshenv", ".zlogin", ".envrc"})
"""Protected names that only matter once they exist, unless the workspace is HOME.

A shell sources these only from HOME, and direnv refuses a new ``.envrc`` until the
human runs ``direnv allow``; so when they are missing from a workspace that is not
HOME no mount point is made for them (no empty directories cluttering ``ls -la``).
When they exist they are read-only like every protected path."""

PLACEHOLDER_MODE = 0o500
"""Mode of the empty mount points the runner creates for missing protected paths."""


# --------------------------------------------------------------------------- environment


def secret_looking(name: str) -> bool:
    """True for variable names that usually hold a secret (``GITHUB_TOKEN``, ``DB_PASSWORD``...)."""
    upper = name.upper()
    if name == "PWD":
        return False
    if any(s in upper for s in _SECRET_SUBSTRINGS):
        return True
    parts = [p for p in re.split(r"[^A-Z0-9]+", upper) if p]
    return any(p in _SECRET_WORDS for p in parts) and len(parts) > 1 or upper in ("PASSWORD", "TOKEN", "SECRET")


def _passthrough(name: str, patterns: Sequence[str]) -> bool:
    """``fnmatchcase(name, p)`` for any ``p``, as one compiled alternation."""
    if not patterns:
        return False
    return _glob_set(tuple(patterns)).match(name) is not None


@functools.lru_cache(maxsize=64)
def _glob_set(patterns: tuple[str, ...]) -> "re.Pattern[str]":
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def scrub_env(environ: Mapping[str, str], policy: Policy) -> dict[str, str]:
    """The environment a command gets: the allow-list plus explicit passthrough names.

    A secret-looking name is only passed when ``Policy.env_passthrough`` names it.
    """
    out: dict[str, str] = {}
    for name, value in environ.items():
        if _passthrough(name, policy.env_passthrough):
            out[name] = value
        elif _passthrough(name, ENV_ALLOW) and not secret_looking(name):
            out[name] = value
    return out


def scrubbed_secrets(environ: Mapping[str, str], policy: Policy) -> list[bytes]:
    """Values of secret-looking variables kept out of the command (for the leak scanner).

    Short values (under 6 bytes) are left out: masking them would garble ordinary output.
    """
    kept = scrub_env(environ, policy)
    out: list[bytes] = []
    for name, value in environ.items():
        if name in kept or not secret_looking(name) or len(value) < 6:
            continue
        out.append(value.encode("utf-8", "surrogateescape"))
    return sorted(set(out), key=lambda b: (-len(b), b))


# --------------------------------------------------------------------------- spec


def _expand(path: str, home: str, workspace: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    elif path.startswith("$HOME"):
        path = home + path[5:]
    if not path.startswith("/"):
        path = posixpath.join(workspace, path)
    return posixpath.normpath(path)


def _glob(pattern: str) -> list[str]:
    """Expand a forbidden-path glob (``/home/*``) to what exists; a plain path as is."""
    if not any(c in pattern for c in "*?["):
        return [pattern]
    import glob

    return sorted(glob.glob(pattern))


def _hide_except(path: str, keep: Sequence[str]) -> list[str]:
    """``path`` to hide, or, when it contains one of ``keep``, its other children (recursively)."""
    from .landlock import is_within

    inside = [k for k in keep if is_within(k, path)]
    if not inside:
        return [path]
    if any(k == path for k in inside):
        return []
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    out: list[str] = []
    for name in names:
        out += _hide_except(posixpath.join(path, name), inside)
    return out


def _with_real(paths: Sequence[str]) -> list[str]:
    """Each path plus its resolved form (a forbidden symlink hides its target too)."""
    out: list[str] = []
    for p in paths:
        out.append(p)
        if not os.path.lexists(p):
            continue
        real = _realpath(p)
        if real != p:
            out.append(real)
    return list(dict.fromkeys(out))


def _first_missing(path: str, root: str) -> str:
    """The shallowest component of ``path`` below ``root`` that does not exist
    (``path`` itself when it exists)."""
    rel = posixpath.relpath(path, root)
    cur = root
    for part in rel.split("/"):
        cur = posixpath.join(cur, part)
        if not os.path.lexists(cur):
            return cur
    return path


def _within_any(path: str, roots: Sequence[str] | frozenset[str]) -> bool:
    from .landlock import under_any

    return under_any(path, roots if isinstance(roots, (set, frozenset)) else frozenset(roots))


def toolchain_dirs(path_var: str, home: str, hidden: Sequence[str]) -> list[str]:
    """Directories on PATH (resolved) and their install prefix (``.../bin`` -> ``...``).

    What lives under a hidden path stays hidden; ``/`` and HOME itself are never added
    as a prefix.
    """
    out: list[str] = []
    for d in path_var.split(":"):
        if not d.startswith("/") or not os.path.isdir(d):
            continue
        real = _realpath(d)
        if _within_any(real, hidden) or _within_any(d, hidden):
            continue
        out.append(real)
        if posixpath.basename(real) in ("bin", "sbin", "shims"):
            parent = posixpath.dirname(real)
            if parent not in ("/", home, "/usr", "/usr/local") and not _within_any(parent, hidden):
                out.append(parent)
    return list(dict.fromkeys(out))


def _bookkeeping(path: str) -> bool:
    return re.fullmatch(r"/tmp/claude-[A-Za-z0-9_-]+-cwd", path) is not None


def build_spec(policy: Policy, ctx: EvalContext, verdict: Verdict, environ: Mapping[str, str],
               extra_writable: Sequence[str]) -> SandboxSpec:
    """What the kernel must enforce for one command (I/O: resolves paths, creates caches).

    Raises ``SandboxUnavailableError`` for a workspace that does not exist, is not a
    directory, or is a forbidden path.
    """
    home = _realpath(environ.get("HOME") or ctx.home)
    ws = _realpath(ctx.workspace)
    if not os.path.isdir(ws):
        raise SandboxUnavailableError(f"workspace {ctx.workspace} does not exist or is not a directory")
    lexical_home = environ.get("HOME") or ctx.home
    forbidden: list[str] = []
    for entry in policy.forbidden_paths:
        forbidden += _glob(_expand(entry, lexical_home, ws))
    # "Other users' homes" (/root, /home/*) never hides HOME itself: DESIGN.md keeps
    # HOME readable minus its secret parts (toolchains live there).  An entry above
    # HOME is replaced by its other children.
    forbidden = [f for p in forbidden for f in _hide_except(p, [lexical_home, home])]
    forbidden += [posixpath.join(lexical_home, s) for s in HOME_SECRETS]
    forbidden += list(ETC_HIDDEN)
    if ctx.clawshell_home:
        forbidden.append(posixpath.normpath(ctx.clawshell_home))
    # /proc is needed by most tools: bwrap gives a fresh one (own PID namespace); with
    # Landlock alone other processes' /proc entries are guarded by Landlock's ptrace
    # rules (see docs/threat-model.md).
    hidden = [h for h in _with_real(forbidden) if h not in ("/proc",) and h != "/"]
    hidden = list(dict.fromkeys(hidden))
    if _within_any(ws, hidden):
        raise SandboxUnavailableError(f"workspace {ws} is a forbidden path")
    cwd = _realpath(ctx.cwd or ws)

    writable: list[str] = []
    for cache in policy.writable_caches:
        p = _expand(cache, lexical_home, ws)
        if not os.path.exists(p) and _within_any(p, [lexical_home, home, ws]) and not _within_any(p, hidden):
            try:
                os.makedirs(p, mode=0o700, exist_ok=True)
            except OSError:
                continue
        if os.path.exists(p):
            writable.append(_realpath(p))
    for p in (*verdict.extra_writable, *extra_writable):
        p = posixpath.normpath(p)
        if _bookkeeping(p) and not os.path.lexists(p):
            try:
                os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
            except OSError:
                continue
        if os.path.islink(p) and _bookkeeping(p):
            continue  # a bookkeeping file swapped for a symlink: never bind what it points at
        if os.path.exists(p):
            writable.append(_realpath(p))
    writable = [w for w in dict.fromkeys(writable) if not _within_any(w, hidden) and w != "/"]

    read_only = [home] + toolchain_dirs(environ.get("PATH", ""), home, hidden)
    read_only = [r for r in dict.fromkeys(read_only) if not _within_any(r, hidden)]

    protected = [posixpath.normpath(posixpath.join(ws, p)) for p in policy.protected_paths]
    protected += _submodule_protected(ws)
    # A protected path that is a symlink protects its target too (when that target is
    # inside the workspace; outside it is read-only anyway).
    protected += [r for r in (_realpath(p) for p in protected if os.path.islink(p))
                  if _within_any(r, [ws])]
    # Protected paths the verdict escalates (a human approved writing them) are lifted
    # for this run; everything else, and always the clawshell home, stays read-only.
    # A missing protected path is covered at its first missing component (`.git`), so
    # an approved write beneath that component lifts the cover too.
    approved = [posixpath.normpath(p) for p in verdict.extra_writable if _within_any(posixpath.normpath(p), [ws])]
    if approved:
        protected = [p for p in protected
                     if not _within_any(p, approved) and not any(_within_any(a, [_first_missing(p, ws)])
                                                                 for a in approved)]
    if ctx.clawshell_home and _within_any(_realpath(ctx.clawshell_home), [ws]):
        protected.append(_realpath(ctx.clawshell_home))

    env = scrub_env(environ, policy)
    return SandboxSpec(
        backend=policy.sandbox, best_effort=policy.best_effort, workspace=ws, cwd=cwd,
        read_only=tuple(read_only), writable=tuple(writable), hidden=tuple(hidden),
        protected=tuple(dict.fromkeys(protected)), network=bool(verdict.network or policy.network),
        timeout=policy.timeout_seconds, env=tuple(sorted(env.items())), limits=DEFAULT_LIMITS,
        max_output=policy.max_output_bytes,
    )


def _submodule_protected(ws: str) -> list[str]:
    """hooks/ and config of the submodule repositories kept in ``.git/modules`` (existing ones)."""
    out: list[str] = []
    todo = [posixpath.join(ws, ".git", "modules")]
    while todo and len(out) < 400:
        d = todo.pop()
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            sub = posixpath.join(d, n)
            if os.path.isfile(posixpath.join(sub, "HEAD")):
                out += [posixpath.join(sub, "hooks"), posixpath.join(sub, "config")]
                todo.append(posixpath.join(sub, "modules"))
            elif os.path.isdir(sub) and not os.path.islink(sub):
                todo.append(sub)
    return out


# --------------------------------------------------------------------------- plan


def _fs_view():  # type: ignore[no-untyped-def]
    from .landlock import FsView

    def listdir(p: str) -> list[str] | None:
        try:
            return os.listdir(p)
        except OSError:
            return None

    def kind(p: str) -> str:
        try:
            st = os.stat(p)
        except OSError:
            return "missing"
        import stat

        return "dir" if stat.S_ISDIR(st.st_mode) else "file"

    return FsView(listdir=listdir, realpath=_realpath, kind=kind)


def _layers_for(spec: SandboxSpec, probe: HostProbe) -> tuple[bool, bool, bool]:
    """(bwrap, landlock, seccomp) to use, or SandboxUnavailableError."""
    bwrap_ok = bool(probe.bwrap and probe.userns)
    ll_ok = probe.landlock_abi > 0
    sc_ok = probe.seccomp
    backend = spec.backend
    if backend not in ("auto", "bwrap", "landlock", "none"):
        raise SandboxUnavailableError(f"unknown sandbox backend {backend!r} (auto, bwrap, landlock or none)")
    if backend == "none":
        return False, False, False
    missing: list[str] = []
    notes = "; ".join(probe.notes)
    if backend == "bwrap" and not bwrap_ok:
        missing.append("bwrap")
    if backend == "landlock" and not ll_ok:
        missing.append("landlock")
    if backend == "auto" and not (bwrap_ok or ll_ok):
        missing.append("bwrap or landlock")
    if not sc_ok:
        missing.append("seccomp")
    use = (bwrap_ok and backend in ("auto", "bwrap"), ll_ok and backend in ("auto", "bwrap", "landlock"), sc_ok)
    if missing and not spec.best_effort:
        raise SandboxUnavailableError(
            f"sandbox layer unavailable: {', '.join(missing)} (sandbox = {backend!r})"
            + (f": {notes}" if notes else "")
            + "; or set best_effort = true in the policy to run with fewer layers")
    return use


def _rlimit_steps(spec: SandboxSpec) -> tuple[tuple[str, int, int], ...]:
    return tuple((name, value, value) for name, value in spec.limits if name != "pids")


def _pids_limit(spec: SandboxSpec) -> int | None:
    for name, value in spec.limits:
        if name == "pids":
            return value
    return None


def _resolved_etc() -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """Existing /etc allow-list entries: (plain paths, (target, link) symlinks, resolved targets)."""
    plain: list[str] = []
    links: list[tuple[str, str]] = []
    targets: list[str] = []
    for p in ETC_ALLOW:
        if os.path.islink(p):
            if not os.path.exists(p):
                continue
            links.append((os.readlink(p), p))
            real = _realpath(p)
            if not real.startswith("/proc/"):
                targets.append(real)
        elif os.path.exists(p):
            plain.append(p)
    return plain, links, targets


def _placeholders(spec: SandboxSpec) -> tuple[list[str], list[str]]:
    """(existing protected paths, mount points to create for the missing ones).

    A missing protected path is covered at its first missing component, so
    ``.git/hooks`` with no ``.git`` yields a placeholder at ``.git``.  A protected path
    under an existing *file* is protected by protecting that file.  Missing shell rc
    files and ``.envrc`` get no placeholder unless the workspace is HOME (``RC_NAMES``).
    """
    existing: list[str] = []
    missing: list[str] = []
    home = dict(spec.env).get("HOME", "")
    ws_is_home = bool(home) and _realpath(home) == spec.workspace
    for p in spec.protected:
        rel = posixpath.relpath(p, spec.workspace)
        if rel.startswith(".."):
            if os.path.lexists(p):
                existing.append(p)
            continue
        cur = spec.workspace
        for part in rel.split("/"):
            cur = posixpath.join(cur, part)
            if _is_placeholder(cur):
                missing.append(cur)  # left behind by a killed run: reuse it, remove it after
                break
            if not os.path.lexists(cur):
                if not (rel in RC_NAMES and not ws_is_home):
                    missing.append(cur)
                break
            if cur == p:
                existing.append(p)
                break
            if not os.path.isdir(cur) or os.path.islink(cur):
                existing.append(cur)
                break
    missing = [m for m in dict.fromkeys(missing) if not any(m != o and m.startswith(o + "/") for o in missing)]
    return list(dict.fromkeys(existing)), missing


def _is_placeholder(path: str) -> bool:
    """An empty directory with the placeholder mode: a mount point a killed run left behind."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == PLACEHOLDER_MODE and not os.listdir(path)


def _pins(spec: SandboxSpec, protected: Sequence[str]) -> list[str]:
    """Directories between the workspace and a protected path, to be bound onto themselves.

    A mount point cannot be renamed or removed (EBUSY), so binding ``.git`` read-write
    onto itself keeps ``mv .git .git-old && mkdir -p .git/hooks`` from side-stepping
    the read-only ``.git/hooks`` while git keeps writing its index and objects.
    """
    out: list[str] = []
    for p in protected:
        rel = posixpath.relpath(p, spec.workspace)
        if rel.startswith("..") or "/" not in rel:
            continue
        cur = spec.workspace
        for part in rel.split("/")[:-1]:
            cur = posixpath.join(cur, part)
            if os.path.isdir(cur) and not os.path.islink(cur):
                out.append(cur)
    return list(dict.fromkeys(out))


def _private_tmpdir() -> str:
    """A fresh ``/tmp/clawshell-<random>`` (0700), like mkdtemp without importing tempfile."""
    for _ in range(20):
        path = f"/tmp/clawshell-{os.urandom(6).hex()}"
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
        except OSError as exc:
            raise SandboxUnavailableError(f"cannot create the private temp dir under /tmp: {exc.strerror}") from exc
    raise SandboxUnavailableError("cannot create the private temp dir under /tmp: no free name")


def plan(spec: SandboxSpec, argv: Sequence[str], probe: HostProbe) -> LaunchPlan:
    """Choose the layers and build the launch plan for ``argv`` under ``spec``.

    I/O: compiles/loads the cached seccomp program, creates the private temp dir in
    Landlock-only mode.  Raises ``SandboxUnavailableError`` (see ``_layers_for``).
    """
    use_bwrap, use_ll, use_sc = _layers_for(spec, probe)
    env = dict(spec.env)
    argv = list(argv)
    runner_steps: list[tuple[str, object]] = []
    if spec.backend == "none" or not (use_bwrap or use_ll or use_sc):
        env.setdefault("TMPDIR", "/tmp")
        return LaunchPlan(argv=tuple(argv), env=tuple(sorted(env.items())), cwd=spec.cwd, layers=(),
                          timeout=spec.timeout, max_output=spec.max_output)

    from ..home import Home

    cache = Home.from_env().cache
    layers: list[str] = []
    helper_steps: list[tuple[str, object]] = [("rlimits", _rlimit_steps(spec)), ("no_new_privs", None)]

    bpf: str | None = None
    if use_sc:
        from .seccomp import FilterOptions, bpf_path

        try:
            bpf = bpf_path(cache, FilterOptions(network=spec.network, deny_unix_sockets=not use_bwrap))
        except (OSError, ImportError, RuntimeError) as exc:
            if not spec.best_effort:
                raise SandboxUnavailableError(
                    f"sandbox layer unavailable: seccomp (compiling the filter failed: {exc}; "
                    "install libseccomp2 and pyseccomp, or set best_effort = true)") from exc
            use_sc = False

    for w in spec.writable:
        # A bookkeeping file build_spec created empty goes away again if the command
        # never wrote to it (it ended before its `pwd -P >| file`), as under bash.
        if _bookkeeping(w):
            try:
                if os.path.getsize(w) == 0:
                    runner_steps.append(("remove_if_empty", w))
            except OSError:
                pass
    pids = _pids_limit(spec)
    if pids:
        from .probe import pids_cgroup_parent

        parent = pids_cgroup_parent()
        runner_steps.append(("cgroup", (parent, pids)) if parent else ("pids_watchdog", pids))

    etc_plain, etc_links, etc_targets = _resolved_etc()
    hidden = list(spec.hidden)
    system = [p for p in SYSTEM_READ if os.path.exists(p)]
    reads = [*system, *spec.read_only]
    noexec = [*etc_plain, *etc_targets, "/proc", *[p for p in SYS_ALLOW if os.path.exists(p)]]

    if use_bwrap:
        tmpdir = "/tmp"
        env["TMPDIR"] = tmpdir
        existing_prot, missing_prot = _placeholders(spec)
        writes_exact = ["/tmp", "/var/tmp", "/dev/shm"]
        writes = [spec.workspace, *spec.writable]
    else:
        tmpdir = _private_tmpdir()
        runner_steps.append(("cleanup", tmpdir))
        env["TMPDIR"] = tmpdir
        if _within_any(posixpath.join(env.get("HOME", "/"), ".config"), hidden):
            # git and friends warn on an unreadable ~/.config/...; point them at nothing.
            env["XDG_CONFIG_HOME"] = posixpath.join(tmpdir, ".config")
        existing_prot, missing_prot = list(spec.protected), []
        writes_exact = ["/dev/shm"]
        writes = [spec.workspace, tmpdir, *spec.writable]

    if use_ll:
        from .landlock import WRITE, Grants, drop_covered, plan_ruleset

        # With bwrap the mounts keep protected paths read-only, except a protected path
        # that is a symlink: a mount lands on its target, so the link itself could be
        # replaced.  Those are cut out of the Landlock write grant as well.
        ll_protected = [p for p in existing_prot if os.path.islink(p)] if use_bwrap else list(spec.protected)
        grants = Grants(read=tuple(reads), read_noexec=tuple(noexec), write=tuple(writes),
                        devices=DEVICES, hidden=tuple(hidden), protected=tuple(ll_protected),
                        network=spec.network)
        ll = plan_ruleset(probe.landlock_abi, grants, _fs_view())
        rules = drop_covered([*ll.rules, *((WRITE & ll.handled_fs, p) for p in writes_exact)])
        helper_steps.append(("landlock", (ll.abi, ll.handled_fs, ll.handled_net, ll.scoped, ll.restrict_flags,
                                          tuple(rules), ll.ports)))
    helper_steps.append(("drop_caps", None))

    if use_bwrap:
        from . import bwrap as bw
        from .helper import refresh_bytecode, script_command

        if bpf:
            helper_steps.append(("seccomp", bw.SECCOMP_DEST))
        helper_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helper.py")
        python_parts = [os.path.realpath(sys.executable), sys.prefix, sys.base_prefix,
                        os.path.dirname(helper_py)]
        masks = bw.BwrapLayout.masks
        if use_ll:
            # Landlock already confines reads to the allow-lists, so /etc and /sys need
            # no mount masks (which cost ~60 mounts per run); /tmp, /run and /var/tmp
            # are still replaced: Landlock does not govern connecting to the unix
            # sockets that live there.  Secrets deeper down are masked as well.
            masks = ("/tmp", "/run", "/var/tmp")
            hidden = [h for h in hidden if h.count("/") >= 2]
        hidden_dirs = [h for h in hidden if os.path.isdir(h) and not os.path.islink(h)]
        hidden_files = [h for h in hidden if os.path.exists(h) and not os.path.isdir(h) and not os.path.islink(h)]
        layout = bw.BwrapLayout(
            bwrap=probe.bwrap or "bwrap", masks=masks,
            ro=tuple(dict.fromkeys([*etc_plain, *etc_targets, *SYS_ALLOW, *reads, *python_parts])),
            symlinks=tuple(etc_links),
            rw=tuple(dict.fromkeys([*writes, *_pins(spec, [*existing_prot, *missing_prot])])),
            protected=tuple(existing_prot),
            placeholders=tuple(missing_prot), hidden_dirs=tuple(hidden_dirs), hidden_files=tuple(hidden_files),
            seccomp_bpf=bpf, network=spec.network, cwd=spec.cwd)
        refresh_bytecode()
        helper_cmd = script_command(sys.executable, tuple(helper_steps))
        full = bw.build_argv(layout, helper_cmd, argv)
        if missing_prot:
            import hashlib

            lock = os.path.join(cache, "locks", hashlib.sha256(spec.workspace.encode()).hexdigest()[:24] + ".lock")
            runner_steps.append(("placeholders", (lock, tuple(missing_prot), PLACEHOLDER_MODE)))
        layers.append(Layer.BWRAP.value)
        if use_ll:
            layers.append(Layer.LANDLOCK.value)
        if bpf:
            layers.append(Layer.SECCOMP.value)
        layers += [Layer.NO_NEW_PRIVS.value, Layer.RLIMITS.value]
        runner_steps.append(("pid_namespace", None))
        return LaunchPlan(argv=tuple(full), env=tuple(sorted(env.items())), cwd=spec.cwd, layers=tuple(layers),
                          preexec=tuple(runner_steps), timeout=spec.timeout, max_output=spec.max_output)

    if bpf:
        helper_steps.append(("seccomp", bpf))
    if use_ll:
        layers.append(Layer.LANDLOCK.value)
    if bpf:
        layers.append(Layer.SECCOMP.value)
    layers += [Layer.NO_NEW_PRIVS.value, Layer.RLIMITS.value]
    return LaunchPlan(argv=tuple(argv), env=tuple(sorted(env.items())), cwd=spec.cwd, layers=tuple(layers),
                      preexec=tuple(runner_steps + helper_steps), timeout=spec.timeout, max_output=spec.max_output)


# --------------------------------------------------------------------------- description


def describe_enforcement(policy: Policy, probe: HostProbe, pids_cgroup: str | None = None) -> dict[str, object]:
    """What a run under ``policy`` would enforce on this host, for ``clawshell doctor``.

    Pure given the probe: returns ``{"layers", "refused", "items"}`` where ``items`` are
    ``(topic, sentence)`` pairs in plain words.
    """
    spec = SandboxSpec(backend=policy.sandbox, best_effort=policy.best_effort)
    try:
        use_bwrap, use_ll, use_sc = _layers_for(spec, probe)
        refused = None
    except SandboxUnavailableError as exc:
        return {"layers": [], "refused": str(exc), "items": [("refused", f"nothing would run: {exc}")]}
    layers = [name for name, on in (("bwrap", use_bwrap), ("landlock", use_ll), ("seccomp", use_sc)) if on]
    items: list[tuple[str, str]] = []
    if not layers:
        items.append(("none", "commands run unconfined (sandbox = none or best effort with nothing available)"))
        return {"layers": [], "refused": refused, "items": items}
    layers += ["no_new_privs", "rlimits"]
    abi = probe.landlock_abi
    if use_bwrap:
        items.append(("filesystem", "bwrap mount namespace: / read-only, fresh /dev and /proc, empty /tmp, /run, "
                                    "/var/tmp; /etc and /sys re-exposed entry by entry; forbidden paths covered "
                                    "by empty read-only mounts; the workspace read-write"))
        items.append(("protected", "protected paths bound read-only over themselves, missing ones covered by an "
                                   "empty read-only mount point for the duration of the run; their parent "
                                   "directories pinned so they cannot be renamed away"))
        items.append(("processes", "own PID, IPC, UTS and cgroup namespaces, new session (no controlling "
                                   "terminal), killed with the parent, all capabilities dropped"))
    if use_ll:
        items.append(("landlock", f"Landlock ABI {abi}: read+execute on system dirs, toolchains on PATH and "
                                  "HOME minus its secrets; read on the /etc allow-list and /proc; read-write on "
                                  "the workspace, the private temp dir and the policy's writable caches"
                                  + ("; TCP bind/connect denied unless the network is on" if abi >= 4 else
                                     "; TCP not restricted by Landlock before ABI 4")
                                  + ("; signals and abstract unix sockets scoped to the sandbox" if abi >= 6 else
                                     "")))
        if not use_bwrap:
            items.append(("protected", "Landlock cannot subtract a path from a grant, so the workspace root "
                                       "and .git itself stay read-only (new top-level entries and git commits "
                                       "fail); every existing entry except the protected ones is writable"))
            items.append(("unix sockets", "socket(AF_UNIX) denied: without a mount namespace the host's "
                                          "sockets (docker, systemd) would be reachable"))
    if use_sc:
        items.append(("seccomp", "denied: Docker's default blocked set, ptrace, process_vm_*, io_uring, bpf, "
                                 "perf_event_open, keyrings, userfaultfd, the mount API, unshare/setns, clone "
                                 "with namespace flags (clone3 -> ENOSYS), TIOCSTI/TIOCLINUX, and sockets other "
                                 "than AF_UNIX while the network is off"))
    items.append(("limits", "timeout kills the whole tree; RLIMIT_FSIZE 16 GiB, RLIMIT_AS 64 GiB, RLIMIT_NOFILE "
                            "16384, RLIMIT_CORE 0; process count capped by "
                            + ("a pids cgroup" if pids_cgroup else "a watchdog (no writable pids cgroup)")))
    items.append(("network", "on for every command" if policy.network else
                  "off unless the verdict grants it" + (" (own network namespace)" if use_bwrap else "")))
    return {"layers": layers, "refused": refused, "items": items}
