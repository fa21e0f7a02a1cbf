"""``clawshell mcp``: a stdio MCP server (official ``mcp`` SDK) exposing the shell and
the file tools under clawshell's policy, sandbox, leak masking, audit and receipts.

Tools: ``shell`` (command, optional cwd inside the workspace, timeout in seconds),
``read_file``, ``write_file``, ``edit_file``, ``list_dir`` and ``check_command`` (a dry
run).  A result carries the exit status, the (leak-masked) output and the receipt; a
refusal is a tool error (``isError``) whose text is the tagged reason line.  Wrong
argument types are tool errors from the SDK's validation; the server stays up.

Approvals: when a command needs one, the approval queue opens a request as for the
shell.  If the client declared the elicitation capability, the human is asked through
the client (``elicitation/create``) and the answer is recorded in the queue for that
token (an OTP code is asked for when the action is gated); the waiting pipeline then
proceeds or refuses.  Without elicitation the request simply waits in the queue for
``clawshell approve TOKEN`` from another terminal.  The command's own stdin is never
the channel: commands run with stdin from /dev/null.

stdout is the protocol: nothing else is ever written there.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from .errors import ClawshellError

OUTPUT_CAP = 512 * 1024
"""Bytes of stdout (and of stderr) put in one tool result; the rest is cut with a note
(the audit entry keeps the digest of the whole stream)."""

_TOKEN = re.compile(r"\btoken (CLAW-[A-Z0-9]{4})\b")


@dataclass(frozen=True)
class ServerConfig:
    """Where and how the server runs its tools."""

    workspace: str
    """Absolute, symlink-free workspace root."""
    session: str
    """Session id every call of this server joins."""
    policy: str | None = None
    """Policy selector (preset name or file), or None for the default."""


# --------------------------------------------------------------------------- helpers


def _text(data: bytes, cap: int = OUTPUT_CAP) -> str:
    if len(data) > cap:
        cut = len(data) - cap
        return data[:cap].decode("utf-8", "replace") + f"\n[... {cut} more bytes cut by clawshell]\n"
    return data.decode("utf-8", "replace")


def _result(text: str, structured: dict[str, Any], *, error: bool) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured,
                          is_error=error)


def _failure(exc: BaseException) -> CallToolResult:
    if isinstance(exc, ClawshellError):
        line = "\n".join(f"clawshell: {exc.tag}: {part}" for part in (str(exc).splitlines() or [exc.tag]))
    else:
        line = f"clawshell: internal error: {exc.__class__.__name__}: {exc}"
    return _result(line, {"error": line}, error=True)


def _inside(cfg: ServerConfig, cwd: str | None) -> str:
    """Absolute directory for ``cwd`` (relative to the workspace); ValueError when outside."""
    if not cwd:
        return cfg.workspace
    full = os.path.realpath(cwd if cwd.startswith("/") else os.path.join(cfg.workspace, cwd))
    root = cfg.workspace.rstrip("/")
    if full != root and not full.startswith(root + "/"):
        raise ValueError(f"cwd {cwd} is outside the workspace {cfg.workspace}")
    if not os.path.isdir(full):
        raise ValueError(f"cwd {cwd}: no such directory")
    return full


def _verdict_info(verdict: Any) -> dict[str, Any]:
    if verdict is None:
        return {}
    from .render import reason_text

    return {"decision": verdict.decision.label, "score": verdict.score, "risk": verdict.risk.value,
            "reason": reason_text(verdict)}


def _record_refusal(cfg: ServerConfig, command: str, reason: str) -> str | None:
    from .pipeline import record_refusal

    return record_refusal(tool="mcp.shell", subject=command, reason=reason, workspace=cfg.workspace,
                          session=cfg.session, policy_selector=cfg.policy, rule="paths.workspace_only")


class _Approve(BaseModel):
    """What the human answers to an approval request."""

    decision: Literal["allow", "allow-session", "allow-30m", "deny"] = Field(
        default="deny", description="allow once, for this session, for 30 minutes, or deny")


class _ApproveWithOtp(_Approve):
    """An approval that needs a one-time code."""

    otp: str = Field(default="", description="current code from your authenticator app")


def _supports_elicitation(ctx: Context) -> bool:
    try:
        caps = ctx.client_capabilities
    except ValueError:
        return False
    return caps is not None and getattr(caps, "elicitation", None) is not None


OTP_ATTEMPTS = 3
"""Times the human is asked again after a wrong OTP code before the request is denied."""


def _decide(token: str, verb: str, otp: str | None) -> tuple[str | None, bool]:
    """Record the human's answer in the queue.

    Returns ``(problem, retry)``: no problem when recorded; ``retry`` when the answer
    was refused but asking again makes sense (a wrong or malformed OTP code).
    """
    from .approval.queue import ApprovalQueue
    from .errors import RefusedError, UsageError
    from .home import Home
    from .store import Store

    home = Home.from_env()
    store = Store.open(home)
    try:
        ApprovalQueue(store, home=home).decide(token, verb, otp or None)
    except RefusedError as exc:  # wrong code (counted towards the lockout)
        return f"clawshell: {exc.tag}: {exc}", "locked" not in str(exc)
    except UsageError as exc:  # malformed code, or the request expired meanwhile
        return f"clawshell: {exc.tag}: {exc}", "otp" in str(exc).lower() or "code" in str(exc).lower()
    except ClawshellError as exc:
        return f"clawshell: {exc.tag}: {exc}", False
    finally:
        store.close()
    return None, False


class _Approver:
    """The ``emit`` of one tool call: collects tagged lines and, on an approval line,
    asks the human through the client (when it can) and records the answer."""

    def __init__(self, ctx: Context, elicit: bool):
        self.ctx = ctx
        self.elicit = elicit
        self.lines: list[str] = []
        self.problems: list[str] = []
        self.asked: set[str] = set()

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        match = _TOKEN.search(line) if line.startswith("clawshell: approval required") else None
        if match and self.elicit and match.group(1) not in self.asked:
            self.asked.add(match.group(1))
            try:
                anyio.from_thread.run(self._ask, match.group(1), line)
            except Exception as exc:  # the queue keeps waiting for an out-of-band decision
                self.problems.append(f"clawshell: elicitation failed ({exc.__class__.__name__}: {exc}); "
                                     f"waiting for `clawshell approve {match.group(1)}`")

    async def _ask(self, token: str, line: str) -> None:
        gated = "--otp" in line
        message = line.replace("clawshell: ", "", 1)
        schema = _ApproveWithOtp if gated else _Approve
        for _ in range(OTP_ATTEMPTS):
            result = await self.ctx.elicit(message, schema)
            if result.action == "accept":
                verb = result.data.decision
                otp = getattr(result.data, "otp", "") or None
            else:
                verb, otp = "deny", None
            problem, retry = await anyio.to_thread.run_sync(_decide, token, verb, otp)
            if problem is None:
                return
            self.problems.append(problem)
            if not retry:
                return
            message = f"{problem}. Try again: {line.replace('clawshell: ', '', 1)}"
        # Out of attempts: deny rather than leave the agent waiting for the timeout.
        problem, _ = await anyio.to_thread.run_sync(_decide, token, "deny", None)
        if problem:
            self.problems.append(problem)


# --------------------------------------------------------------------------- the server


def build_server(cfg: ServerConfig) -> MCPServer:
    """The MCP server with clawshell's tools bound to ``cfg``."""
    from . import __version__

    server: MCPServer = MCPServer(
        "clawshell", version=__version__, log_level="WARNING",
        instructions=("Run shell commands and edit files in the workspace "
                      f"{cfg.workspace} under clawshell's policy and kernel sandbox. A refusal is a "
                      "tool error whose text says why and what to do instead; every call leaves a "
                      "signed receipt."))

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, open_world_hint=True))
    async def shell(command: str, ctx: Context, cwd: str | None = None,
                    timeout: float | None = Field(default=None, gt=0, le=3600)) -> CallToolResult:
        """Run a bash command in the workspace (stdin is /dev/null). `cwd` is a directory
        inside the workspace; `timeout` in seconds can only shorten the policy's."""
        from .pipeline import run_captured

        try:
            where = _inside(cfg, cwd)
        except ValueError as exc:
            reason = str(exc)
            line = f"clawshell: denied: {reason} [rule: paths.workspace_only]"
            receipt = await anyio.to_thread.run_sync(lambda: _record_refusal(cfg, command, reason))
            return _result("\n".join([line, *([receipt] if receipt else [])]),
                           {"error": line, "refusal": line, "receipt": receipt, "exit_status": 126}, error=True)
        approver = _Approver(ctx, _supports_elicitation(ctx))
        try:
            run = await anyio.to_thread.run_sync(
                lambda: run_captured(command, workspace=cfg.workspace, cwd=where, session=cfg.session,
                                     policy_selector=cfg.policy, timeout=timeout, emit=approver))
        except Exception as exc:
            return _failure(exc)
        notices = [ln for ln in approver.lines if ln != run.refusal] + approver.problems
        info = {"exit_status": run.status, "stdout": _text(run.stdout), "stderr": _text(run.stderr),
                "receipt": run.receipt, "timed_out": run.timed_out, "notices": notices,
                **_verdict_info(run.verdict)}
        if run.refusal is not None:
            text = "\n".join([run.refusal, *approver.problems, *([run.receipt] if run.receipt else [])])
            info["refusal"] = run.refusal
            return _result(text, info, error=True)
        parts = []
        if run.stdout:
            parts.append(info["stdout"].rstrip("\n"))
        if run.stderr:
            parts.append("[stderr]\n" + info["stderr"].rstrip("\n"))
        parts.extend(notices)
        parts.append(f"[exit status {run.status}{', timed out' if run.timed_out else ''}]")
        if run.receipt:
            parts.append(run.receipt)
        return _result("\n".join(parts), info, error=False)

    async def _file(op: str, path: str, ctx: Context, **kw: Any) -> CallToolResult:
        from .pipeline import execute_file

        approver = _Approver(ctx, _supports_elicitation(ctx))
        try:
            res = await anyio.to_thread.run_sync(
                lambda: execute_file(op, path, workspace=cfg.workspace, session=cfg.session,
                                     policy_selector=cfg.policy, emit=approver, deliver_receipt=False,
                                     tool=f"file.{op}", **kw))
        except Exception as exc:
            return _failure(exc)
        notices = [ln for ln in approver.lines if ln != res.message] + approver.problems
        info = {"exit_status": res.status, "receipt": res.receipt, "notices": notices, **res.detail,
                **_verdict_info(res.verdict)}
        if res.status != 0:
            info["error"] = res.message
            text = "\n".join([res.message or "clawshell: file: failed", *approver.problems,
                              *([res.receipt] if res.receipt else [])])
            return _result(text, info, error=True)
        body = _text(res.output)
        info["output"] = body
        if op == "write":
            summary = f"wrote {res.detail.get('bytes', 0)} bytes to {res.detail.get('path', path)}"
            body = summary + (" (new file)" if res.detail.get("created") else "")
        elif op == "edit":
            body = f"replaced {res.detail.get('replacements', 0)} occurrence(s) in {res.detail.get('path', path)}"
        elif op == "read" and res.detail.get("more"):
            body += (f"[... more lines follow; read on with offset="
                     f"{res.detail.get('first_line', 1) + res.detail.get('lines', 0)}]\n")
        parts = [body.rstrip("\n"), *notices]
        if res.receipt:
            parts.append(res.receipt)
        return _result("\n".join(p for p in parts if p), info, error=False)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def read_file(path: str, ctx: Context, offset: int | None = Field(default=None, ge=1),
                        limit: int | None = Field(default=None, ge=1)) -> CallToolResult:
        """Read a text file of the workspace as numbered lines (`offset`: first line,
        1-based; `limit`: number of lines, default 2000). Secrets are masked."""
        from .filetools import DEFAULT_READ_LIMIT

        return await _file("read", path, ctx, offset=offset, limit=limit or DEFAULT_READ_LIMIT)

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def write_file(path: str, content: str, ctx: Context) -> CallToolResult:
        """Create or replace a file of the workspace with `content` (atomic; parents created)."""
        return await _file("write", path, ctx, content=content.encode("utf-8"))

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def edit_file(path: str, old_string: str, new_string: str, ctx: Context,
                        replace_all: bool = False) -> CallToolResult:
        """Replace the exact text `old_string` by `new_string` in a workspace file; it must
        occur once unless `replace_all` is true."""
        return await _file("edit", path, ctx, old=old_string, new=new_string, replace_all=replace_all)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def list_dir(ctx: Context, path: str = ".") -> CallToolResult:
        """List a directory of the workspace (directories end in /, symlinks in @)."""
        return await _file("ls", path, ctx)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def check_command(command: str, cwd: str | None = None) -> CallToolResult:
        """Dry run: the decision clawshell would take for `command`, with its evidence.
        Nothing runs and nothing is recorded."""
        try:
            where = _inside(cfg, cwd)
        except ValueError as exc:
            return _result(f"clawshell: usage: {exc}", {"error": str(exc)}, error=True)

        def dry() -> dict[str, Any]:
            from .home import Home
            from .pipeline import eval_context, judge
            from .policy.loader import load_policy
            from .render import reason_text, verdict_dict

            home = Home.from_env()
            pol = load_policy(home, cfg.workspace, cfg.policy)
            ctx = eval_context(cfg.workspace, where, home, cfg.session, os.environ)
            verdict = judge(command, pol, ctx, home)
            return {"command": command, "cwd": where, "policy": pol.name, **verdict_dict(verdict),
                    "reason": reason_text(verdict)}

        try:
            out = await anyio.to_thread.run_sync(dry)
        except Exception as exc:
            return _failure(exc)
        text = f"{out['decision']} (score {out['score']}, {out['risk']}): {out['reason']}"
        return _result(text, out, error=False)

    return server


def serve(cfg: ServerConfig) -> int:
    """Run the server on stdin/stdout until the client closes stdin; return 0."""
    server = build_server(cfg)
    anyio.run(server.run_stdio_async)
    return 0


def new_session_id() -> str:
    """A fresh session id for a server started without one."""
    return f"mcp-{secrets.token_hex(4)}"
