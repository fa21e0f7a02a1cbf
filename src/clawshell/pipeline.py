"""Orchestration: argv -> parse -> policy -> (approval) -> sandbox -> run -> leaks ->
receipt -> audit.  The one module that wires the collaborators together; the CLI, the
MCP server and the hooks are thin edges around it.

Collaborators are imported inside functions so the hot path pays only for what a call
uses.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from .errors import (
    EXIT_DENIED,
    ClawshellError,
    RefusedError,
    SandboxUnavailableError,
    StoreError,
    UsageError,
)
from .home import Home
from .model import Decision, EvalContext, Policy, RunResult, Verdict

INSIDE_ENV = "CLAWSHELL_INSIDE"


def err(line: str) -> None:
    """Write one line to stderr, never raising."""
    try:
        os.write(2, (line.rstrip("\n") + "\n").encode("utf-8", "surrogateescape"))
    except OSError:
        pass


# --------------------------------------------------------------------------- context


def resolve_workspace(cwd_option: str | None, environ: Mapping[str, str]) -> tuple[str, str]:
    """Return ``(workspace, start_dir)``; UsageError when the workspace does not exist."""
    given = cwd_option or environ.get("CLAWSHELL_CWD") or ""
    if given:
        ws = os.path.abspath(os.path.expanduser(given))
        if not os.path.isdir(ws):
            what = "is not a directory" if os.path.exists(ws) else "no such directory"
            raise UsageError(f"--cwd {given}: {what}")
        ws = os.path.realpath(ws)
    else:
        ws = os.path.realpath(os.getcwd())
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:
        here = ws
    start = here if (here == ws or here.startswith(ws.rstrip("/") + "/")) else ws
    return ws, start


def realpath_existing(path: str) -> str:
    """Resolve symlinks of the longest existing prefix of ``path`` (the engine's I/O seam)."""
    return os.path.realpath(path)


def eval_context(workspace: str, start: str, home: Home, session: str,
                 environ: Mapping[str, str]) -> EvalContext:
    """Build the engine's view of the world."""
    user_home = environ.get("HOME") or os.path.expanduser("~")
    keep = ("HOME", "PWD", "USER", "TMPDIR", "OLDPWD")
    return EvalContext(
        cwd=start, workspace=workspace, home=os.path.abspath(user_home),
        clawshell_home=home.root, realpath=realpath_existing,
        env=tuple((k, environ[k]) for k in keep if k in environ) + (("PWD", start),),
        session=session,
    )


def session_id(option: str | None, environ: Mapping[str, str]) -> str:
    """The session this call belongs to: ``--session``, ``CLAWSHELL_SESSION``, or the
    parent process (an agent calling its shell repeatedly is one session)."""
    return option or environ.get("CLAWSHELL_SESSION") or f"ppid-{os.getppid()}"


# --------------------------------------------------------------------------- real shell


def locate_real_shell(prog: str, environ: Mapping[str, str]) -> str:
    """Find the real shell to run, never this program itself.

    ``CLAWSHELL_REAL_SHELL`` wins; otherwise search PATH for ``bash`` (``sh`` when
    called as ``sh``) skipping any file that is this program (same inode or same
    resolved path), then the usual system locations.
    """
    explicit = environ.get("CLAWSHELL_REAL_SHELL")
    if explicit:
        return explicit
    name = "sh" if prog in ("sh", "dash") else "bash"
    me = _self_identities()
    candidates = [os.path.join(d or ".", name) for d in environ.get("PATH", "").split(os.pathsep)]
    candidates += [f"/usr/bin/{name}", f"/bin/{name}"]
    for cand in candidates:
        try:
            st = os.stat(cand)
        except OSError:
            continue
        if not (st.st_mode & 0o111) or (st.st_dev, st.st_ino) in me:
            continue
        if os.path.realpath(cand) in {p for p in me if isinstance(p, str)}:
            continue
        return cand
    raise ClawshellError(f"no real {name} found on PATH (set CLAWSHELL_REAL_SHELL)")


def _self_identities() -> set[Any]:
    ids: set[Any] = set()
    for p in {sys.argv[0], os.path.realpath(sys.argv[0])}:
        try:
            st = os.stat(p)
        except OSError:
            continue
        ids.add((st.st_dev, st.st_ino))
        ids.add(os.path.realpath(p))
    return ids


def inside_sandbox(environ: Mapping[str, str]) -> bool:
    """True when this process runs inside a command clawshell already confined.

    The env marker alone could be forged by whoever starts us, so it only counts when
    the kernel confirms a confinement is in force (no_new_privs and a seccomp filter).
    """
    if environ.get(INSIDE_ENV) != "1":
        return False
    try:
        with open("/proc/self/status", "rb") as fh:
            status = fh.read()
    except OSError:
        return False
    return b"\nNoNewPrivs:\t1" in status and b"\nSeccomp:\t2" in status


# --------------------------------------------------------------------------- shell


@dataclass
class ShellCall:
    """One shell tool call being processed (mutable bookkeeping for the record)."""

    command: str
    argv: list[str]
    workspace: str
    cwd: str
    session: str
    tool: str = "shell"
    started: float = field(default_factory=time.time)
    record: dict[str, Any] = field(default_factory=dict)


def run_shell(inv: Any, *, prog: str = "clawshell", argv0: str | None = None) -> int:
    """Run a drop-in shell invocation end to end and return its exit status."""
    environ = os.environ
    real_shell = locate_real_shell(prog, environ)
    if inside_sandbox(environ):
        # Nested call (make, npm scripts, `bash -c` in a script): the kernel sandbox of
        # the outer command already bounds everything this can do, and the state home
        # is out of reach, so hand over to the real shell at once.
        args = [argv0 or prog, *inv.passthrough]
        if inv.command is not None:
            args += ["-c", inv.command, *inv.positional]
        elif inv.script_file is not None:
            args += [inv.script_file, *inv.positional]
        elif inv.stdin_script:
            args += ["-s", *inv.positional]
        os.execv(real_shell, args)
    workspace, start = resolve_workspace(inv.cwd, environ)
    text, argv = _command_and_argv(inv, real_shell, argv0 or prog)
    session = session_id(inv.session, environ)
    call = ShellCall(command=text, argv=argv, workspace=workspace, cwd=start, session=session)
    return execute(call, policy_selector=inv.policy or environ.get("CLAWSHELL_POLICY"))


def _command_and_argv(inv: Any, real_shell: str, argv0: str) -> tuple[str, list[str]]:
    """The command text to judge and the argv that runs it in the real shell.

    ``$0`` is set to the name we were called by (as bash would set it), so messages
    such as ``bash: line 1: X: unbound variable`` read the same as under real bash.
    """
    base = [real_shell, *inv.passthrough]
    if inv.command is not None:
        return inv.command, base + ["-c", inv.command, *(inv.positional or (argv0,))]
    if inv.script_file is not None:
        try:
            with open(inv.script_file, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise UsageError(f"{inv.script_file}: {exc.strerror}") from None
        return data.decode("utf-8", "surrogateescape"), base + [inv.script_file, *inv.positional]
    if os.isatty(0) and not inv.positional:
        raise UsageError("interactive use is not supported: pass a command with -c or a script on stdin")
    data = sys.stdin.buffer.read()
    script = data.decode("utf-8", "surrogateescape")
    # The script was consumed from stdin to judge it, so it is handed over as -c with
    # $0 set like `bash -s` sets it.
    return script, base + ["-c", script, argv0, *inv.positional]


def execute(call: ShellCall, *, policy_selector: str | None, verdict_override: Verdict | None = None,
            out_fd: int = 1, err_fd: int = 2, stdin_fd: int = 0,
            emit: Callable[[str], None] = err) -> int:
    """Judge, (approve), confine, run, scan, record.  Returns the exit status."""
    from .policy.loader import load_policy, policy_hash

    home = Home.from_env()
    environ = os.environ
    policy = load_policy(home, call.workspace, policy_selector)
    phash = policy_hash(policy)
    store = _open_store(home)
    record = _base_record(call, phash)
    try:
        try:
            _refuse_if_stopped(store)
        except RefusedError as exc:
            return _refuse(store, home, record, emit, f"clawshell: denied: {exc}", policy)
        ctx = eval_context(call.workspace, call.cwd, home, call.session, environ)
        verdict = verdict_override or judge(call.command, policy, ctx, home)
        record["decision"] = _verdict_record(verdict)
        verdict, approval = _gate(verdict, call, policy, phash, store, emit)
        record["approval"] = approval
        if verdict.decision is not Decision.ALLOW:
            return _refuse(store, home, record, emit, verdict_line(verdict, approval), policy)
        try:
            plan, known_secrets = _launch_plan(call, policy, ctx, verdict, home, environ)
        except SandboxUnavailableError as exc:
            return _refuse(store, home, record, emit, f"clawshell: sandbox: {exc}", policy,
                           outcome="failed", error=str(exc))
        result = _run(plan, policy, known_secrets, store, call.session, stdin_fd, out_fd, err_fd, emit)
        record.update(_result_record(result))
        appended = _append(store, home, record)
        _emit_receipt(store, home, appended, policy, emit)
        return result.status
    finally:
        store.close()


def judge(command: str, policy: Policy, ctx: EvalContext, home: Home) -> Verdict:
    """Parse and evaluate one command string."""
    from .parsercache import prepare_bashlex
    from .policy.engine import evaluate
    from .shellparse import parse

    prepare_bashlex(home.cache)
    parsed = parse(command, max_bytes=policy.max_command_bytes, max_depth=policy.max_depth)
    return evaluate(parsed, policy, ctx)


def verdict_line(verdict: Verdict, approval: dict[str, Any] | None) -> str:
    """The refusal line for a verdict after the approval gate."""
    from .render import reason_text, refusal_line

    if approval and approval.get("message"):
        return f"clawshell: denied: {approval['message']}: {reason_text(verdict)}"
    return refusal_line(verdict)


# --------------------------------------------------------------------------- steps


def _open_store(home: Home) -> Any:
    from .store import Store

    return Store.open(home)


def _refuse_if_stopped(store: Any) -> None:
    from .approval.estop import check

    engaged, reason = check(store)
    if engaged:
        raise RefusedError(f"emergency stop engaged: {reason or 'no reason given'} "
                           "(the human resumes with `clawshell estop resume`)")


def _gate(verdict: Verdict, call: ShellCall, policy: Policy, phash: str, store: Any,
          emit: Callable[[str], None]) -> tuple[Verdict, dict[str, Any] | None]:
    """Apply OTP gating and the approval queue.  Returns the verdict to act on."""
    from .approval.otp import is_gated

    gated = is_gated(policy, call.tool, call.command)
    if verdict.decision is Decision.DENY:
        return verdict, None
    if verdict.decision is Decision.ALLOW and not gated:
        return verdict, None
    from .approval.queue import obtain_approval
    from .render import reason_text

    result = obtain_approval(
        store, command=call.command, cwd=call.cwd, session=call.session, score=verdict.score,
        reason=reason_text(verdict), policy_hash=phash, gated=gated,
        timeout=policy.approval_timeout_seconds, emit=emit,
    )
    info = {"token": result.token, "decision": result.scope or ("allow" if result.allowed else "deny"),
            "by": result.by, "message": None if result.allowed else result.message}
    if result.allowed:
        return replace(verdict, decision=Decision.ALLOW), info
    return replace(verdict, decision=Decision.DENY), info


def _launch_plan(call: ShellCall, policy: Policy, ctx: EvalContext, verdict: Verdict, home: Home,
                 environ: Mapping[str, str]) -> tuple[Any, list[bytes]]:
    from . import sandbox
    from .sandbox.probe import probe_host

    spec = sandbox.build_spec(policy, ctx, verdict, environ, _bookkeeping_files(call.command))
    probe = probe_host(home.cache)
    plan = sandbox.plan(spec, call.argv, probe)
    extra = ((INSIDE_ENV, "1"), ("CLAWSHELL_SESSION", call.session), ("CLAWSHELL_CWD", call.workspace))
    plan = replace(plan, env=tuple(kv for kv in plan.env if kv[0] not in dict(extra)) + extra)
    return plan, sandbox.scrubbed_secrets(environ, policy)


def _bookkeeping_files(command: str) -> list[str]:
    """Agent bookkeeping files named by the command envelope (Claude Code writes
    ``pwd -P >| /tmp/claude-XXXX-cwd``); each is bound writable on its own."""
    import re

    return sorted(set(re.findall(r">\|?\s*['\"]?(/tmp/claude-[A-Za-z0-9_-]+-cwd)\b", command)))


def _run(plan: Any, policy: Policy, known_secrets: list[bytes], store: Any, session: str,
         stdin_fd: int, out_fd: int, err_fd: int, emit: Callable[[str], None]) -> RunResult:
    from . import runner
    from .approval.estop import register_run, unregister_run

    out_filter = err_filter = None
    if policy.leak_detection:
        from .leaks import LeakSettings, StreamScanner

        settings = LeakSettings.from_policy(policy)
        out_filter = StreamScanner("stdout", settings, known_secrets)
        err_filter = StreamScanner("stderr", settings, known_secrets)
    spawned: list[int] = []

    def on_spawn(pid: int) -> None:
        spawned.append(pid)
        register_run(store, pid, pid, session)

    try:
        result = runner.run(plan, stdout_filter=out_filter, stderr_filter=err_filter,
                            stdin_fd=stdin_fd, out_fd=out_fd, err_fd=err_fd, on_spawn=on_spawn)
    finally:
        for pid in spawned:
            try:
                unregister_run(store, pid)
            except StoreError:
                pass
    if out_filter is not None and err_filter is not None:
        from .leaks import injection_line, redaction_line

        findings = tuple(out_filter.findings) + tuple(err_filter.findings)
        injections = tuple(dict.fromkeys([*out_filter.injections, *err_filter.injections]))
        if findings:
            emit(redaction_line(list(findings)))
        if injections:
            emit(injection_line(list(injections)))
        result = replace(result, leaks=findings, injections=injections)
    return result


def _refuse(store: Any, home: Home, record: dict[str, Any], emit: Callable[[str], None], line: str,
            policy: Policy, *, outcome: str = "refused", error: str | None = None) -> int:
    record["outcome"] = outcome
    record["error"] = error
    record["duration"] = round(time.time() - record["_started"], 6)
    emit(line)
    appended = _append(store, home, record)
    _emit_receipt(store, home, appended, policy, emit)
    return EXIT_DENIED


def _base_record(call: ShellCall, phash: str) -> dict[str, Any]:
    return {
        "v": 1, "tool": call.tool, "session": call.session, "command": call.command,
        "cwd": call.cwd, "workspace": call.workspace, "decision": None, "approval": None,
        "sandbox": {"layers": []}, "exit": None, "duration": None, "stdout_sha256": None,
        "stderr_sha256": None, "leaks": [], "injections": [], "outcome": None, "error": None,
        "time": _utc(call.started), "policy_hash": phash, "_started": call.started,
    }


def _verdict_record(verdict: Verdict) -> dict[str, Any]:
    from .render import verdict_dict

    return verdict_dict(verdict)


def _result_record(result: RunResult) -> dict[str, Any]:
    return {
        "outcome": "timeout" if result.timed_out else "ran", "exit": result.status,
        "duration": round(result.duration, 6), "stdout_sha256": result.stdout_sha256,
        "stderr_sha256": result.stderr_sha256, "sandbox": {"layers": list(result.layers)},
        "truncated": result.truncated,
        "leaks": [{"kind": f.kind, "stream": f.stream, "offset": f.offset, "length": f.length}
                  for f in result.leaks],
        "injections": list(result.injections),
    }


def _append(store: Any, home: Home, record: dict[str, Any]) -> Any:
    from .audit import AuditLog

    body = {k: v for k, v in record.items() if not k.startswith("_")}
    return AuditLog(store, home).append(body)


def _emit_receipt(store: Any, home: Home, appended: Any, policy: Policy, emit: Callable[[str], None]) -> None:
    from .audit import AuditLog

    where = policy.receipts_emit
    if where == "none":
        return
    line = AuditLog(store, home).receipt_line(appended)
    if where == "stderr":
        emit(line)
    elif where.startswith("fd:"):
        try:
            os.write(int(where[3:]), (line + "\n").encode())
        except OSError:
            emit(line)


def _utc(ts: float) -> str:
    t = time.gmtime(ts)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{int((ts % 1) * 1000):03d}Z"
