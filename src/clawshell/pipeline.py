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

from .errors import EXIT_DENIED, ConfigError, SandboxUnavailableError, StoreError, UsageError, err
from .home import Home
from .model import Decision, EvalContext, Policy, RunResult, Verdict
from .realshell import INSIDE_ENV, inside_sandbox, locate_real_shell  # noqa: F401  (re-exported)

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
    from ._realpath import realpath

    return realpath(path)


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


PARENT_PID: int | None = None
"""The caller's parent pid when a warm-server worker runs the call (its own parent is the server)."""


def session_id(option: str | None, environ: Mapping[str, str]) -> str:
    """The session this call belongs to: ``--session``, ``CLAWSHELL_SESSION``, or the
    parent process (an agent calling its shell repeatedly is one session)."""
    parent = PARENT_PID if PARENT_PID is not None else os.getppid()
    return option or environ.get("CLAWSHELL_SESSION") or f"ppid-{parent}"


# --------------------------------------------------------------------------- shell


@dataclass
class ShellCall:
    """One tool call being processed: what the audit record says it was."""

    command: str
    argv: list[str]
    workspace: str
    cwd: str
    session: str
    tool: str = "shell"
    started: float = field(default_factory=time.time)


def run_shell(inv: Any, *, prog: str = "clawshell", argv0: str | None = None) -> int:
    """Run a drop-in shell invocation end to end and return its exit status."""
    environ = os.environ
    real_shell = locate_real_shell(prog, environ)
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


def execute(call: ShellCall, *, policy_selector: str | None,
            out_fd: int = 1, err_fd: int = 2, stdin_fd: int = 0,
            emit: Callable[[str], None] = err) -> int:
    """Judge, (approve), confine, run, scan, record.  Returns the exit status."""
    from .policy.loader import load_policy_and_hash

    home = Home.from_env()
    environ = os.environ
    try:
        policy, phash = load_policy_and_hash(home, call.workspace, policy_selector)
    except ConfigError as exc:
        _record_config_failure(home, call, exc)
        raise
    store = _open_store(home)
    record = _base_record(call, phash)
    try:
        stopped = _stop_reason(store)
        if stopped is not None:
            record["decision"] = _verdict_record(_estop_verdict(stopped))
            return _refuse(store, home, record, emit, f"clawshell: denied: {stopped}", policy)
        ctx = eval_context(call.workspace, call.cwd, home, call.session, environ)
        # A known agent envelope (Claude's eval wrapper, Codex's snapshot wrapper) is
        # scaffolding: the model's command inside it is what gets judged; the whole
        # text still runs in the sandbox.
        verdict = judge(judged_command(call.command, call.argv), policy, ctx, home)
        record["decision"] = _verdict_record(verdict)
        if verdict.high_risk:
            record["tags"] = ["HIGH_RISK"]  # medium or worse: runs, and is marked in the log
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
        receipt_for(store, home, appended, policy, emit)
        return result.status
    finally:
        store.close()


def _record_config_failure(home: Home, call: ShellCall, exc: ConfigError) -> None:
    """A call refused because the configuration is invalid still leaves an audit entry
    (best effort: the store may be the thing that is broken; the 78 exit stands)."""
    try:
        store = _open_store(home)
    except StoreError:
        return
    try:
        record = _base_record(call, "")
        _close(store, home, record, "failed", "invalid configuration: " + "; ".join(exc.problems))
    except StoreError:
        pass
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


def _stop_reason(store: Any) -> str | None:
    """Why every action is refused right now (an engaged or unreadable e-stop), or None."""
    from .approval.estop import check

    engaged, reason = check(store)
    if engaged:
        return (f"emergency stop engaged: {reason or 'no reason given'} "
                "(the human resumes with `clawshell estop resume`)")
    return None


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
        timeout=policy.approval_timeout_seconds, emit=emit, risk=verdict.risk.value,
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
    depth = str(int(environ.get("CLAWSHELL_DEPTH", "0") or 0) + 1)
    extra = ((INSIDE_ENV, "1"), ("CLAWSHELL_DEPTH", depth), ("CLAWSHELL_SESSION", call.session),
             ("CLAWSHELL_CWD", call.workspace))
    plan = replace(plan, env=tuple(kv for kv in plan.env if kv[0] not in dict(extra)) + extra)
    return plan, known_secrets(policy, environ)


def known_secrets(policy: Policy, environ: Mapping[str, str]) -> list[bytes]:
    """Values masked exactly wherever they appear in output: the secret-looking
    environment variables the sandbox scrubbed, and the contents of the policy's
    ``secret_files`` (whole file and each non-empty line).  An unreadable secret file
    is skipped: it cannot leak through clawshell's own reads either."""
    from . import sandbox

    values = list(sandbox.scrubbed_secrets(environ, policy))
    home = environ.get("HOME") or os.path.expanduser("~")
    for name in policy.secret_files:
        path = home + name[1:] if name.startswith("~/") else name
        try:
            with open(path, "rb") as fh:
                data = fh.read(1 << 20)
        except OSError:
            continue
        values.append(data.strip())
        values.extend(line.strip() for line in data.splitlines())
    return sorted({v for v in values if len(v) >= 8}, key=len, reverse=True)


def _bookkeeping_files(command: str) -> list[str]:
    """Agent bookkeeping files named by the command envelope (Claude Code writes
    ``pwd -P >| /tmp/claude-<id>-cwd``); each is bound writable on its own."""
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
    emit(line)
    appended = _close(store, home, record, outcome, error)
    receipt_for(store, home, appended, policy, emit)
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


def _close(store: Any, home: Home, record: dict[str, Any], outcome: str, error: str | None = None) -> Any:
    """Set the record's outcome, error and duration, and append it to the audit log."""
    record["outcome"] = outcome
    record["error"] = error
    record["duration"] = round(time.time() - record["_started"], 6)
    return _append(store, home, record)


def _append(store: Any, home: Home, record: dict[str, Any]) -> Any:
    from .audit import AuditLog

    body = {k: v for k, v in record.items() if not k.startswith("_")}
    return AuditLog(store, home).append(body)


def _utc(ts: float) -> str:
    t = time.gmtime(ts)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{int((ts % 1) * 1000):03d}Z"


# --------------------------------------------------------------------------- integrations
# File tools, captured runs (MCP) and judge-only calls (hooks).  Same steps as
# ``execute``: e-stop, policy, approval gate, audit entry, receipt.


@dataclass(frozen=True)
class FileResult:
    """What one file-tool call did."""

    status: int
    """0 done, 1 failed (not found, edit text missing...), 126 refused."""
    output: bytes
    """Bytes for the agent (read / ls), leak-masked; empty otherwise."""
    message: str | None
    """The tagged refusal or error line, None on success."""
    receipt: str | None
    """The receipt line (None when ``[receipts] emit = "none"``)."""
    verdict: Verdict | None
    """The verdict acted on (after the approval gate), None when nothing was judged."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Op-specific facts: ``bytes``, ``created``, ``replacements``, ``lines``, ``more``, ``entries``."""


FILE_OPS: dict[str, str] = {"read": "read", "write": "write", "edit": "edit", "ls": "list", "list": "list"}
"""File-tool verbs and the engine op each one is judged as."""


def receipt_for(store: Any, home: Home, appended: Any, policy: Policy, emit: Callable[[str], None] | None) -> str | None:
    """The receipt line of ``appended``, delivered like ``execute`` delivers it when
    ``emit`` is given; None when the policy says ``emit = "none"``."""
    from .audit import AuditLog

    where = policy.receipts_emit
    if where == "none":
        return None
    line = AuditLog(store, home).receipt_line(appended)
    if emit is not None:
        if where.startswith("fd:"):
            try:
                os.write(int(where[3:]), (line + "\n").encode())
            except (OSError, ValueError):
                emit(line)
        else:
            emit(line)
    return line


def with_escape(verdict: Verdict, path: str, reason: str) -> Verdict:
    """``verdict`` made a DENY by the file tools' workspace confinement."""
    from .filetools import ESCAPE_RULE
    from .model import Evidence

    ev = Evidence(rule=ESCAPE_RULE, decision=Decision.DENY, reason=reason, matched=path,
                  alternative="work on files inside the workspace")
    if verdict.decision is Decision.DENY:  # the engine's own reason (a forbidden path...) stays first
        return replace(verdict, evidence=(*verdict.evidence, ev))
    return replace(verdict, decision=Decision.DENY, evidence=(ev, *verdict.evidence))


def combine_verdicts(verdicts: list[Verdict]) -> Verdict:
    """One verdict for several actions judged together: the strictest decision, the
    highest score, all evidence (strictest first)."""
    if not verdicts:
        raise ValueError("combine_verdicts needs at least one verdict")
    if len(verdicts) == 1:
        return verdicts[0]
    top = max(verdicts, key=lambda v: (v.decision, v.score))
    evidence = sorted((e for v in verdicts for e in v.evidence), key=lambda e: -int(e.decision))
    return replace(top, decision=max(v.decision for v in verdicts), score=max(v.score for v in verdicts),
                   evidence=tuple(evidence), network=any(v.network for v in verdicts),
                   extra_writable=tuple(dict.fromkeys(p for v in verdicts for p in v.extra_writable)))


def _estop_verdict(reason: str) -> Verdict:
    from .model import Evidence, RiskLevel

    return Verdict(decision=Decision.DENY, score=0, risk=RiskLevel.LOW,
                   evidence=(Evidence(rule="estop.engaged", decision=Decision.DENY, reason=reason),))


def execute_file(op: str, path: str, *, workspace: str, session: str, cwd: str | None = None,
                 policy_selector: str | None = None, content: bytes | None = None, old: str | None = None,
                 new: str | None = None, replace_all: bool = False, offset: int | None = None,
                 limit: int | None = None, numbered: bool = True, tool: str | None = None,
                 emit: Callable[[str], None] = err, deliver_receipt: bool = True,
                 use_openat2: bool | None = None) -> FileResult:
    """Judge, (approve), perform and record one file-tool call confined to ``workspace``.

    ``op``: ``read`` (``offset``/``limit`` in lines, output numbered like Claude's Read
    unless ``numbered=False``), ``write`` (``content``), ``edit`` (``old`` -> ``new``,
    ``replace_all``), ``ls``.  Paths are relative to ``cwd`` (default: the workspace).
    A path outside the workspace, or resolving outside through a symlink (also one
    swapped in mid-call), is refused with rule ``files.beneath_workspace`` and nothing
    is touched.  Refusal and error lines go to ``emit``; so does the receipt when
    ``deliver_receipt``.  Raises ConfigError / StoreError like ``execute``.
    """
    import hashlib

    from . import filetools as ft
    from .policy.engine import evaluate_file
    from .policy.loader import load_policy_and_hash

    if op not in FILE_OPS:
        raise UsageError(f"unknown file operation {op!r}: use read, write, edit or ls")
    home = Home.from_env()
    environ = os.environ
    start = cwd or workspace
    policy, phash = load_policy_and_hash(home, workspace, policy_selector)
    user_home = os.path.abspath(environ.get("HOME") or os.path.expanduser("~"))
    abs_path, rel = ft.lexical_target(path, workspace, start, user_home)
    call = ShellCall(command=f"file {op} {path}", argv=[], workspace=workspace, cwd=start, session=session,
                     tool=tool or f"file.{'ls' if op == 'list' else op}")
    args: dict[str, Any] = {"op": op, "path": path, "resolved": abs_path}
    if op == "read":
        args.update(offset=offset, limit=limit)
    elif op == "write":
        data = content or b""
        args.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    elif op == "edit":
        args.update(old_sha256=hashlib.sha256((old or "").encode("utf-8", "surrogateescape")).hexdigest(),
                    new_sha256=hashlib.sha256((new or "").encode("utf-8", "surrogateescape")).hexdigest(),
                    replace_all=replace_all)
    receipt_emit = emit if deliver_receipt else None
    store = _open_store(home)
    record = _base_record(call, phash)
    record["args"] = args
    ws: Any = None

    def finish(status: int, line: str | None, verdict: Verdict | None, outcome: str, *,
               error: str | None = None, output: bytes = b"", detail: dict[str, Any] | None = None) -> FileResult:
        record["exit"] = status if outcome != "refused" else None
        if line:
            emit(line)
        appended = _close(store, home, record, outcome, error)
        receipt = receipt_for(store, home, appended, policy, receipt_emit)
        return FileResult(status, output, line, receipt, verdict, detail or {})

    try:
        stopped = _stop_reason(store)
        if stopped is not None:
            verdict = _estop_verdict(stopped)
            record["decision"] = _verdict_record(verdict)
            return finish(EXIT_DENIED, f"clawshell: denied: {stopped}", verdict, "refused")
        ctx = eval_context(workspace, start, home, session, environ)
        verdict = evaluate_file(FILE_OPS[op], abs_path, policy, ctx)
        if rel is None:
            verdict = with_escape(verdict, abs_path, "file tools work only inside the workspace")
        else:
            try:
                ws = ft.Workspace(workspace, use_openat2=use_openat2)
            except ft.FileToolError as exc:
                return finish(1, f"clawshell: file: {exc}", verdict, "failed", error=str(exc))
            try:
                ws.check(rel)
            except ft.EscapeError as exc:
                verdict = with_escape(verdict, abs_path, str(exc).split(": ", 1)[-1])
            except ft.FileToolError:
                pass  # a plain failure (missing parent...) shows up when the op runs
        record["decision"] = _verdict_record(verdict)
        verdict, approval = _gate(verdict, call, policy, phash, store, emit)
        record["approval"] = approval
        if verdict.decision is not Decision.ALLOW:
            return finish(EXIT_DENIED, verdict_line(verdict, approval), verdict, "refused")
        assert ws is not None and rel is not None
        detail: dict[str, Any] = {}
        try:
            if op == "read":
                got = ws.read_lines(rel, offset, limit, policy.max_output_bytes)
                raw = ft.number_lines(got.data, got.first_line) if numbered else got.data
                detail = {"lines": got.lines, "first_line": got.first_line, "more": got.more, "size": got.size}
            elif op in ("ls", "list"):
                entries, cut = ws.list(rel)
                raw = ft.format_listing(entries, cut)
                detail = {"entries": len(entries), "more": cut}
            elif op == "write":
                wrote = ws.write_atomic(rel, content or b"")
                raw = b""
                detail = {"bytes": wrote.bytes, "created": wrote.created, "path": wrote.path}
            else:
                if old is None or new is None:
                    raise UsageError("edit needs the old and the new text")
                wrote, count = ws.edit(rel, old, new, replace_all=replace_all)
                raw = b""
                detail = {"replacements": count, "bytes": wrote.bytes, "path": wrote.path}
        except ft.EscapeError as exc:
            # The path changed under us (a symlink swapped in): the kernel refused.
            verdict = with_escape(verdict, abs_path, str(exc).split(": ", 1)[-1])
            record["decision"] = _verdict_record(verdict)
            return finish(EXIT_DENIED, verdict_line(verdict, None), verdict, "refused")
        except ft.FileToolError as exc:
            return finish(1, f"clawshell: file: {exc}", verdict, "failed", error=str(exc))
        record["stdout_sha256"] = hashlib.sha256(raw).hexdigest()
        output = raw
        if raw and policy.leak_detection:
            output, findings = _scan_output(raw, policy, environ)
            if findings:
                from .leaks import redaction_line

                emit(redaction_line(list(findings)))
                record["leaks"] = [{"kind": f.kind, "stream": f.stream, "offset": f.offset, "length": f.length}
                                   for f in findings]
        return finish(0, None, verdict, "ran", output=output, detail=detail)
    finally:
        if ws is not None:
            ws.close()
        store.close()


def _scan_output(data: bytes, policy: Policy, environ: Mapping[str, str]) -> tuple[bytes, tuple[Any, ...]]:
    """Mask secrets in tool output that does not come from the runner (file reads)."""
    from .leaks import LeakSettings, scan_bytes

    settings = LeakSettings.from_policy(policy)
    known = known_secrets(policy, environ)
    masked, findings = scan_bytes(data, settings, known)
    return masked, tuple(findings)


@dataclass(frozen=True)
class CapturedRun:
    """A shell command run with its output captured (for the MCP server)."""

    status: int
    """Exit status (126 refused)."""
    stdout: bytes
    """Leak-masked stdout."""
    stderr: bytes
    """Leak-masked stderr."""
    receipt: str | None
    """The receipt line (None when receipts are off)."""
    refusal: str | None
    """The tagged refusal line, None when the command ran."""
    notices: tuple[str, ...] = ()
    """Other tagged lines clawshell emitted (redactions, injection flags, approval)."""
    verdict: Verdict | None = None
    """The verdict acted on."""
    timed_out: bool = False
    """True when the timeout killed the command."""


def run_captured(command: str, *, workspace: str, session: str, cwd: str | None = None,
                 policy_selector: str | None = None, timeout: float | None = None, tool: str = "mcp.shell",
                 emit: Callable[[str], None] | None = None, max_capture: int | None = None) -> CapturedRun:
    """Run ``command`` like ``execute`` does (e-stop, judge, approval, sandbox, leaks,
    audit) with stdin from /dev/null and stdout/stderr captured.

    ``timeout`` (seconds) can only shorten the policy's.  ``emit`` sees every tagged
    line as it is produced (the approval line among them, so a caller can ask the
    human through its own channel while the queue waits).  Raises ConfigError /
    StoreError like ``execute``.
    """
    import tempfile

    from .policy.loader import load_policy_and_hash

    home = Home.from_env()
    environ = os.environ
    start = cwd or workspace
    notices: list[str] = []

    def note(line: str) -> None:
        notices.append(line)
        if emit is not None:
            emit(line)

    policy, phash = load_policy_and_hash(home, workspace, policy_selector)
    real_shell = locate_real_shell("bash", environ)
    call = ShellCall(command=command, argv=[real_shell, "-c", command, "bash"], workspace=workspace, cwd=start,
                     session=session, tool=tool)
    store = _open_store(home)
    record = _base_record(call, phash)
    if timeout is not None:
        record["args"] = {"timeout": timeout}

    def refused(line: str, verdict: Verdict | None, *, outcome: str = "refused", error: str | None = None) -> CapturedRun:
        note(line)
        appended = _close(store, home, record, outcome, error)
        receipt = receipt_for(store, home, appended, policy, None)
        return CapturedRun(EXIT_DENIED, b"", b"", receipt, line, tuple(notices[:-1]), verdict)

    try:
        stopped = _stop_reason(store)
        if stopped is not None:
            verdict = _estop_verdict(stopped)
            record["decision"] = _verdict_record(verdict)
            return refused(f"clawshell: denied: {stopped}", verdict)
        ctx = eval_context(workspace, start, home, session, environ)
        verdict = judge(command, policy, ctx, home)
        record["decision"] = _verdict_record(verdict)
        verdict, approval = _gate(verdict, call, policy, phash, store, note)
        record["approval"] = approval
        if verdict.decision is not Decision.ALLOW:
            return refused(verdict_line(verdict, approval), verdict)
        try:
            plan, known_secrets = _launch_plan(call, policy, ctx, verdict, home, environ)
        except SandboxUnavailableError as exc:
            return refused(f"clawshell: sandbox: {exc}", verdict, outcome="failed", error=str(exc))
        if timeout is not None and timeout > 0:
            plan = replace(plan, timeout=min(plan.timeout or timeout, timeout))
        cap = max_capture if max_capture is not None else policy.max_output_bytes
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errf:
            devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            try:
                result = _run(plan, policy, known_secrets, store, session, devnull, out.fileno(), errf.fileno(), note)
            finally:
                os.close(devnull)
            out.seek(0)
            errf.seek(0)
            stdout = out.read(cap)
            stderr = errf.read(cap)
        record.update(_result_record(result))
        appended = _append(store, home, record)
        receipt = receipt_for(store, home, appended, policy, None)
        return CapturedRun(result.status, stdout, stderr, receipt, None, tuple(notices), verdict, result.timed_out)
    finally:
        store.close()


@dataclass(frozen=True)
class Judgement:
    """A decision taken without running anything (hooks)."""

    verdict: Verdict
    """The combined verdict of every action judged."""
    line: str | None
    """The tagged refusal / approval-required line; None when allowed."""
    receipt: str | None
    """The receipt of the audit entry, when one was written and receipts are on."""


def judge_actions(actions: list[tuple[str, str]], *, tool: str, workspace: str, session: str,
                  cwd: str | None = None, policy_selector: str | None = None, subject: str | None = None,
                  args: dict[str, Any] | None = None, wait_approval: bool = False,
                  approval_timeout: float | None = None, emit: Callable[[str], None] = err) -> Judgement:
    """Judge shell commands and file operations together and record one audit entry.

    ``actions`` are ``("shell", command)`` or ``(op, path)`` with op one of the engine's
    file ops (read, write, edit, list, delete); relative paths are taken from ``cwd``.
    The strictest decision wins; an engaged e-stop is a deny.  With ``wait_approval``
    an APPROVE goes through the approval queue like ``execute`` (the human decides
    with ``clawshell approve``; ``approval_timeout`` can only shorten the policy's
    wait) and the result is ALLOW or DENY; without it APPROVE is returned for the
    caller's own channel (a hook's ``ask``).  The entry's outcome is ``refused`` for
    a deny and ``judged`` otherwise: nothing runs here.
    """
    from .policy.engine import evaluate_file
    from .policy.loader import load_policy_and_hash

    if not actions:
        raise UsageError("nothing to judge")
    home = Home.from_env()
    environ = os.environ
    start = cwd or workspace
    policy, phash = load_policy_and_hash(home, workspace, policy_selector)
    if approval_timeout is not None:
        policy = replace(policy, approval_timeout_seconds=min(policy.approval_timeout_seconds, approval_timeout))
    text = subject or "\n".join(what if kind == "shell" else f"{kind} {what}" for kind, what in actions)
    call = ShellCall(command=text, argv=[], workspace=workspace, cwd=start, session=session, tool=tool)
    store = _open_store(home)
    record = _base_record(call, phash)
    record["args"] = dict(args or {}, actions=[list(a) for a in actions])
    try:
        approval: dict[str, Any] | None = None
        stopped = _stop_reason(store)
        if stopped is not None:
            verdict = _estop_verdict(stopped)
            record["decision"] = _verdict_record(verdict)
            line: str | None = f"clawshell: denied: {stopped}"
        else:
            ctx = eval_context(workspace, start, home, session, environ)
            user_home = os.path.abspath(environ.get("HOME") or os.path.expanduser("~"))
            verdicts = []
            for kind, what in actions:
                if kind == "shell":
                    verdicts.append(judge(what, policy, ctx, home))
                    continue
                target = what
                if target == "~" or target.startswith("~/"):
                    target = user_home + target[1:]
                elif not target.startswith("/"):
                    target = os.path.join(start, target)
                verdicts.append(evaluate_file(kind, os.path.normpath(target), policy, ctx))
            verdict = combine_verdicts(verdicts)
            record["decision"] = _verdict_record(verdict)
            if wait_approval:
                verdict, approval = _gate(verdict, call, policy, phash, store, emit)
            line = None if verdict.decision is Decision.ALLOW else verdict_line(verdict, approval)
        record["approval"] = approval
        appended = _close(store, home, record, "refused" if verdict.decision is Decision.DENY else "judged")
        receipt = receipt_for(store, home, appended, policy, None)
        return Judgement(verdict, line, receipt)
    finally:
        store.close()


def register_session(sid: str, *, task: str | None, cwd: str, created: float | None = None) -> None:
    """Store a session (id, task, cwd, created) in the ``sessions`` table."""
    home = Home.from_env()
    store = _open_store(home)
    try:
        with store.transaction() as cur:
            cur.execute("INSERT INTO sessions(id, task, cwd, created) VALUES (?, ?, ?, ?)",
                        (sid, task, cwd, time.time() if created is None else created))
    finally:
        store.close()


def record_refusal(*, tool: str, subject: str, reason: str, workspace: str, session: str,
                   cwd: str | None = None, policy_selector: str | None = None,
                   args: dict[str, Any] | None = None, rule: str = "input.malformed") -> str | None:
    """Best-effort audit entry for a call refused before it could be judged (a hook
    payload that does not parse, an MCP cwd outside the workspace).  Returns the
    receipt line, or None when nothing could be recorded; never raises."""
    try:
        from .model import Evidence, RiskLevel
        from .policy.loader import load_policy_and_hash

        home = Home.from_env()
        policy, phash = load_policy_and_hash(home, workspace, policy_selector)
        call = ShellCall(command=subject, argv=[], workspace=workspace, cwd=cwd or workspace, session=session,
                         tool=tool)
        verdict = Verdict(decision=Decision.DENY, score=0, risk=RiskLevel.LOW,
                          evidence=(Evidence(rule=rule, decision=Decision.DENY, reason=reason),))
        store = _open_store(home)
        try:
            record = _base_record(call, phash)
            record["args"] = dict(args or {})
            record["decision"] = _verdict_record(verdict)
            appended = _close(store, home, record, "refused", reason)
            return receipt_for(store, home, appended, policy, None)
        finally:
            store.close()
    except Exception:
        return None


# --------------------------------------------------------------------------- agent envelopes
# Agents wrap the model's command in scaffolding of their own.  The whole text still
# runs (in the sandbox); the policy judges the model's command.  Only exact, known
# shapes are recognised: anything else is judged as a whole.

_SNAPSHOT_RE = (r"""(?:'[^']*/\.claude/shell-snapshots/snapshot-[A-Za-z0-9._-]+\.sh'"""
                r"""|"[^"$`\\]*/\.claude/shell-snapshots/snapshot-[A-Za-z0-9._-]+\.sh\""""
                r"""|[^\s'"$`\\;&|<>]*/\.claude/shell-snapshots/snapshot-[A-Za-z0-9._-]+\.sh)""")
_CWD_FILE_RE = (r"""(?:'[^']*/claude-[A-Za-z0-9_-]+-cwd'|"[^"$`\\]*/claude-[A-Za-z0-9_-]+-cwd\""""
                r"""|[^\s'"$`\\;&|<>]*/claude-[A-Za-z0-9_-]+-cwd)""")
_CODEX_WRAPPERS = frozenset({'. "$1" && shift && exec "$@"', 'source "$1" && shift && exec "$@"'})


_ENVELOPE_PATTERNS: tuple[Any, list[Any], Any] | None = None


def _envelope_patterns() -> tuple[Any, list[Any], Any]:
    """The envelope regexes, compiled on first use (``re`` stays off the hot path)."""
    global _ENVELOPE_PATTERNS
    if _ENVELOPE_PATTERNS is not None:
        return _ENVELOPE_PATTERNS
    import re

    scaffold = [re.compile(p) for p in (
        rf"(?:source|\.) +{_SNAPSHOT_RE}(?: +2>/dev/null)?(?: +\|\| +true)?",
        r"shopt -u extglob(?: +2>/dev/null)?(?: +\|\| +true)?",
        r"setopt +NO_EXTENDED_GLOB(?: +2>/dev/null)?(?: +\|\| +true)?",
        r"\{ *shopt -u extglob *\|\| *setopt +NO_EXTENDED_GLOB *; *\} *>/dev/null +2>&1(?: +\|\| +true)?",
    )]
    _ENVELOPE_PATTERNS = (re.compile(r"(?:^|&&\s*)eval\s+"), scaffold,
                          re.compile(rf"\s*(?:\\?<\s*/dev/null\s*)?(?:&&\s*pwd +-P +>\|\s*{_CWD_FILE_RE}\s*)?"))
    return _ENVELOPE_PATTERNS


def _static_word(text: str, pos: int) -> tuple[str, int] | None:
    """Decode one static shell word at ``pos`` (single quotes, ``\\x``, double quotes
    without expansions); None when it has an expansion or is unterminated."""
    out: list[str] = []
    i, n = pos, len(text)
    while i < n and not text[i].isspace() and text[i] not in ";&|<>()":
        ch = text[i]
        if ch == "'":
            end = text.find("'", i + 1)
            if end < 0:
                return None
            out.append(text[i + 1:end])
            i = end + 1
        elif ch == "\\":
            if i + 1 >= n:
                return None
            out.append(text[i + 1])
            i += 2
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                c = text[i]
                if c in "$`":
                    return None
                if c == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    out.append(text[i + 1])
                    i += 2
                    continue
                out.append(c)
                i += 1
            if i >= n:
                return None
            i += 1
        elif ch in "$`*?[{~":
            return None
        else:
            out.append(ch)
            i += 1
    return ("".join(out), i) if i > pos else None


def unwrap_claude_envelope(text: str) -> str | None:
    """The model's command inside a Claude Code Bash envelope, or None.

    The envelope is scaffolding joined by ``&&``: source the shell snapshot
    (``~/.claude/shell-snapshots/snapshot-*.sh``), turn extglob off, ``eval
    'MODEL_COMMAND'`` with stdin from /dev/null, then ``pwd -P >| /tmp/claude-<id>-cwd``.
    Only that exact shape is recognised: anything else around the ``eval`` (another
    command, a different file sourced) returns None, and the whole text is judged.
    """
    if "eval" not in text:
        return None
    eval_re, scaffold, suffix = _envelope_patterns()
    match = eval_re.search(text)
    if match is None:
        return None
    prefix = text[:match.start()].strip()
    for piece in prefix.split("&&") if prefix else ():
        piece = piece.strip()
        if piece and not any(p.fullmatch(piece) for p in scaffold):
            return None
    word = _static_word(text, match.end())
    if word is None:
        return None
    command, end = word
    return command if suffix.fullmatch(text, end) else None


def unwrap_codex_wrapper(script: str, positional: tuple[str, ...] | list[str]) -> str | None:
    """Codex's snapshot wrapper ``-c '. "$1" && shift && exec "$@"' ARG0 SNAPSHOT CMD...``
    as the command it really runs (``. SNAPSHOT && exec CMD...``), or None.

    ``positional`` is ``($0, $1, ...)``: the operands after the script.
    """
    if script.strip() not in _CODEX_WRAPPERS or len(positional) < 3:
        return None
    import shlex

    return f". {shlex.quote(positional[1])} && exec {shlex.join(positional[2:])}"


def judged_command(command: str, argv: tuple[str, ...] | list[str] = ()) -> str:
    """The text the policy should judge for a shell call whose real argv is ``argv``:
    the model's command inside a known agent envelope, else ``command`` itself."""
    inner = unwrap_claude_envelope(command)
    if inner is not None:
        return inner
    for i in range(len(argv) - 1):
        if argv[i] == "-c" and argv[i + 1] == command:
            wrapped = unwrap_codex_wrapper(command, tuple(argv[i + 2:]))
            if wrapped is not None:
                return wrapped
            break
    return command
