"""Pre-tool hooks for Claude Code, Codex CLI and Gemini CLI: the same policy, judged
before the agent runs its own tool, with an audit entry for every decision.

Each agent sends one JSON object on stdin and reads the answer from stdout / the
exit status:

* Claude Code ``PreToolUse``: always exit 0 with
  ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
  "allow|ask|deny", "permissionDecisionReason": ...}}``.  APPROVE becomes ``ask``:
  Claude asks its human.
* Codex ``PreToolUse`` (Claude-shaped payload, ``Bash`` or ``apply_patch``): allow is
  exit 0 with no output (Codex then applies its own approval settings); deny is exit
  2 with the reason on stderr.  Codex cannot ask, so APPROVE waits in clawshell's
  approval queue for ``clawshell approve TOKEN`` (bounded by the policy timeout).
* Gemini ``BeforeTool``: allow is ``{}``; deny is ``{"decision": "deny", "reason":
  ...}`` on stdout *and* exit 2 with the reason on stderr, so a parse problem on
  the agent's side still blocks.  APPROVE waits in the queue like Codex.

Fail closed: a payload that is not JSON, misses a field or has the wrong type, and
any internal error, answer *deny* with the reason — never allow, never a crash with
an exit status the agent would treat as "carry on".

The payload parsing, Claude's command-envelope unwrapping and the answer builders
are pure; :func:`run_hook` does the I/O through :mod:`clawshell.pipeline`.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .model import Decision
from .pipeline import unwrap_claude_envelope, unwrap_codex_wrapper

__all__ = ["run_hook", "parse_claude", "parse_codex", "parse_gemini", "apply_patch_targets",
           "unwrap_claude_envelope", "unwrap_codex_wrapper", "answer_for", "deny_answer", "HookAnswer",
           "HookCall", "PayloadError", "AGENTS", "EXIT_BLOCK"]

AGENTS = ("claude", "codex", "gemini")
"""Agents with a hook front door."""

EXIT_BLOCK = 2
"""Exit status that blocks the tool call in all three agents."""


class PayloadError(ValueError):
    """The hook payload is not what the agent documents (deny, with this reason)."""


@dataclass(frozen=True)
class HookCall:
    """One tool call an agent asks about, reduced to clawshell actions."""

    agent: str
    """``claude`` | ``codex`` | ``gemini``."""
    tool_name: str
    """The agent's tool name (``Bash``, ``Write``, ``run_shell_command``...)."""
    actions: tuple[tuple[str, str], ...]
    """``("shell", command)`` or ``(op, path)`` pairs to judge together."""
    subject: str
    """What the audit entry and the approval request show."""
    cwd: str | None = None
    """Directory the agent runs the tool in, when the payload says."""
    session_id: str | None = None
    """The agent's own session id, when the payload has one."""
    unwrapped: bool = False
    """True when a command envelope was recognised and only the model's command judged."""


@dataclass(frozen=True)
class HookAnswer:
    """What to write and how to exit."""

    stdout: str
    """JSON (or nothing) for the agent."""
    stderr: str
    """Reason for a blocking exit, else empty."""
    exit: int
    """Exit status."""


# --------------------------------------------------------------------------- payloads


def _object(data: bytes | str) -> dict[str, Any]:
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise PayloadError("hook payload is not UTF-8") from None
    if not data.strip():
        raise PayloadError("hook payload is empty (expected a JSON object on stdin)")
    try:
        payload = json.loads(data)
    except ValueError as exc:
        raise PayloadError(f"hook payload is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise PayloadError(f"hook payload is a JSON {type(payload).__name__}, not an object")
    return payload


def _str_field(obj: Mapping[str, Any], key: str, where: str) -> str:
    if key not in obj:
        raise PayloadError(f"hook payload misses {where}{key}")
    value = obj[key]
    if not isinstance(value, str):
        raise PayloadError(f"hook payload field {where}{key} is a {type(value).__name__}, not a string")
    if not value.strip():
        raise PayloadError(f"hook payload field {where}{key} is empty")
    return value


def _opt_str(obj: Mapping[str, Any], key: str, where: str = "") -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise PayloadError(f"hook payload field {where}{key} is a {type(value).__name__}, not a string")
    return value or None


def _first_path(tool_input: Mapping[str, Any], keys: tuple[str, ...], tool: str) -> str:
    for key in keys:
        if key in tool_input:
            return _str_field(tool_input, key, "tool_input.")
    raise PayloadError(f"hook payload for {tool} misses tool_input.{keys[0]}")


def _common(payload: Mapping[str, Any], agent: str, events: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    event = payload.get("hook_event_name")
    if event is not None and event not in events:
        raise PayloadError(f"clawshell hook {agent} answers {' / '.join(events)} events, not {event!r}")
    tool_name = _str_field(payload, "tool_name", "")
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        what = "misses tool_input" if tool_input is None else f"has a {type(tool_input).__name__} tool_input"
        raise PayloadError(f"hook payload {what} (expected an object)")
    return tool_name, tool_input


def parse_claude(data: bytes | str) -> HookCall | None:
    """Claude Code PreToolUse payload -> actions; None for a tool clawshell does not judge."""
    payload = _object(data)
    tool, ti = _common(payload, "claude", ("PreToolUse",))
    cwd = _opt_str(payload, "cwd")
    sid = _opt_str(payload, "session_id")
    if tool == "Bash":
        command = _str_field(ti, "command", "tool_input.")
        inner = unwrap_claude_envelope(command)
        judged = inner if inner is not None else command
        return HookCall("claude", tool, (("shell", judged),), judged, cwd, sid, inner is not None)
    file_tools = {"Read": ("read", ("file_path",)), "Write": ("write", ("file_path",)),
                  "Edit": ("edit", ("file_path",)), "MultiEdit": ("edit", ("file_path",)),
                  "NotebookEdit": ("edit", ("notebook_path",)), "NotebookRead": ("read", ("notebook_path",))}
    if tool in file_tools:
        op, keys = file_tools[tool]
        path = _first_path(ti, keys, tool)
        if tool == "MultiEdit" and not isinstance(ti.get("edits"), list):
            raise PayloadError("hook payload for MultiEdit misses tool_input.edits (a list)")
        return HookCall("claude", tool, ((op, path),), f"{tool} {path}", cwd, sid)
    listing = {"Glob": "list", "LS": "list", "Grep": "read"}
    if tool in listing:
        path = _opt_str(ti, "path", "tool_input.") or cwd or "."
        return HookCall("claude", tool, ((listing[tool], path),), f"{tool} {path}", cwd, sid)
    return None


def apply_patch_targets(patch: str) -> list[tuple[str, str]]:
    """File actions of a Codex ``apply_patch`` envelope: Add -> write, Update -> edit,
    Delete -> delete, a move's source -> edit and its destination -> write."""
    actions: list[tuple[str, str]] = []
    for raw in patch.splitlines():
        line = raw.strip()
        for marker, op in (("*** Add File:", "write"), ("*** Update File:", "edit"),
                           ("*** Delete File:", "delete"), ("*** Move to:", "write")):
            if line.startswith(marker):
                path = line[len(marker):].strip()
                if path:
                    actions.append((op, path))
                break
    return actions


def _codex_command(ti: Mapping[str, Any]) -> str:
    value = ti.get("command")
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return shlex.join(value)
    if isinstance(value, str) and value.strip():
        return value
    if value is None:
        raise PayloadError("hook payload misses tool_input.command")
    raise PayloadError(f"hook payload field tool_input.command is a {type(value).__name__}, "
                       "not a string or a list of strings")


def parse_codex(data: bytes | str) -> HookCall | None:
    """Codex PreToolUse payload (Claude's shape) -> actions; None for other tools."""
    payload = _object(data)
    tool, ti = _common(payload, "codex", ("PreToolUse",))
    cwd = _opt_str(payload, "cwd")
    sid = _opt_str(payload, "session_id")
    if tool in ("Bash", "shell", "exec_command", "shell_command", "local_shell"):
        command = _codex_command(ti)
        return HookCall("codex", tool, (("shell", command),), command, cwd, sid)
    if tool == "apply_patch":
        patch = next((ti[k] for k in ("command", "patch", "input") if isinstance(ti.get(k), str)), None)
        if patch is None:
            raise PayloadError("hook payload for apply_patch misses the patch text (tool_input.command)")
        targets = apply_patch_targets(patch)
        if not targets:
            raise PayloadError("apply_patch payload names no file (no '*** Add/Update/Delete File:' line)")
        subject = "apply_patch " + " ".join(f"{op}:{path}" for op, path in targets)
        return HookCall("codex", tool, tuple(targets), subject, cwd, sid)
    return None


_GEMINI_PATH_KEYS = ("file_path", "absolute_path", "path", "dir_path", "directory")
_GEMINI_FILE_TOOLS = {
    "read_file": "read", "write_file": "write", "replace": "edit", "edit": "edit",
    "list_directory": "list", "ls": "list", "glob": "list", "search_file_content": "read",
    "grep": "read", "grep_search": "read", "read_many_files": "read",
}


def parse_gemini(data: bytes | str) -> HookCall | None:
    """Gemini CLI BeforeTool payload -> actions; None for tools clawshell does not judge."""
    payload = _object(data)
    tool, ti = _common(payload, "gemini", ("BeforeTool",))
    cwd = _opt_str(payload, "cwd")
    sid = _opt_str(payload, "session_id")
    if tool == "run_shell_command":
        command = _str_field(ti, "command", "tool_input.")
        here = _opt_str(ti, "dir_path", "tool_input.") or _opt_str(ti, "directory", "tool_input.")
        if here and cwd and not here.startswith("/"):
            here = os.path.normpath(os.path.join(cwd, here))
        return HookCall("gemini", tool, (("shell", command),), command, here or cwd, sid)
    if tool in _GEMINI_FILE_TOOLS:
        op = _GEMINI_FILE_TOOLS[tool]
        if tool == "read_many_files":
            paths = ti.get("paths", ti.get("include"))
            if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
                raise PayloadError("hook payload for read_many_files misses tool_input.paths (a list of strings)")
            return HookCall("gemini", tool, tuple((op, p) for p in paths), f"{tool} {' '.join(paths)}", cwd, sid)
        if op == "list" or tool in ("search_file_content", "grep", "grep_search"):
            path = next((ti[k] for k in _GEMINI_PATH_KEYS if isinstance(ti.get(k), str) and ti[k]), None) or cwd or "."
        else:
            path = _first_path(ti, _GEMINI_PATH_KEYS, tool)
        return HookCall("gemini", tool, ((op, path),), f"{tool} {path}", cwd, sid)
    return None


PARSERS: dict[str, Callable[[bytes | str], HookCall | None]] = {
    "claude": parse_claude, "codex": parse_codex, "gemini": parse_gemini,
}


# --------------------------------------------------------------------------- answers


def claude_answer(decision: str, reason: str) -> HookAnswer:
    """Claude Code's PreToolUse decision JSON (exit 0)."""
    body = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                   "permissionDecisionReason": reason}}
    return HookAnswer(json.dumps(body), "", 0)


def deny_answer(agent: str, reason: str) -> HookAnswer:
    """The explicit deny of ``agent`` (built without anything that can fail)."""
    reason = reason if reason.startswith("clawshell:") else f"clawshell: denied: {reason}"
    if agent == "claude":
        return claude_answer("deny", reason)
    if agent == "gemini":
        return HookAnswer(json.dumps({"decision": "deny", "reason": reason}), reason, EXIT_BLOCK)
    return HookAnswer("", reason, EXIT_BLOCK)


def answer_for(agent: str, decision: Decision, line: str | None, allow_reason: str) -> HookAnswer:
    """Map a final decision to ``agent``'s answer."""
    if decision is Decision.DENY:
        return deny_answer(agent, line or "clawshell: denied")
    if agent == "claude":
        if decision is Decision.APPROVE:
            return claude_answer("ask", line or "clawshell: approval required")
        return claude_answer("allow", allow_reason)
    if decision is Decision.APPROVE:  # codex / gemini cannot ask: never let it through
        return deny_answer(agent, line or "clawshell: approval required")
    if agent == "gemini":
        return HookAnswer("{}", "", 0)
    return HookAnswer("", "", 0)


def no_opinion(agent: str) -> HookAnswer:
    """Answer for a tool clawshell does not judge: let the agent's own rules apply."""
    return HookAnswer("{}" if agent == "gemini" else "", "", 0)


# --------------------------------------------------------------------------- the hook


def _workspace(agent: str, cwd_option: str | None, call: HookCall, environ: Mapping[str, str]) -> tuple[str, str]:
    from .pipeline import resolve_workspace

    project = {"claude": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR"}.get(agent, "")
    given = (cwd_option or environ.get("CLAWSHELL_CWD") or (environ.get(project) if project else None)
             or call.cwd or None)
    env = dict(environ)
    env.pop("CLAWSHELL_CWD", None)
    workspace, _ = resolve_workspace(given, env)
    here = workspace
    if call.cwd:
        cand = os.path.realpath(call.cwd if call.cwd.startswith("/") else os.path.join(workspace, call.cwd))
        if cand == workspace or cand.startswith(workspace.rstrip("/") + "/"):
            here = cand
    return workspace, here


def run_hook(agent: str, data: bytes, *, cwd_option: str | None = None, policy_selector: str | None = None,
             environ: Mapping[str, str] | None = None, approval_timeout: float | None = None,
             emit: Callable[[str], None] | None = None) -> HookAnswer:
    """Judge one hook payload of ``agent`` and return the answer; never raises.

    ``approval_timeout`` bounds the queue wait of Codex / Gemini (their hook timeout
    must be longer); ``emit`` receives the approval-required line while waiting.
    """
    env = os.environ if environ is None else environ
    try:
        if agent not in PARSERS:
            return deny_answer("codex", f"unknown agent {agent!r}: use {', '.join(AGENTS)}")
        call = PARSERS[agent](data)
        if call is None:
            return no_opinion(agent)
        from .pipeline import err, inside_sandbox, judge_actions, session_id

        if inside_sandbox(env):
            # The state home is out of reach in here: nothing could be judged or recorded.
            return deny_answer(agent, "clawshell: denied: the hook runs inside a command clawshell confined; "
                                      "configure the agent to run `clawshell hook` outside the sandbox")

        workspace, here = _workspace(agent, cwd_option, call, env)
        session = env.get("CLAWSHELL_SESSION") or (f"{agent}-{call.session_id}" if call.session_id
                                                    else session_id(None, env))
        judgement = judge_actions(
            list(call.actions), tool=f"hook.{agent}", workspace=workspace, cwd=here, session=session,
            policy_selector=policy_selector or env.get("CLAWSHELL_POLICY"), subject=call.subject,
            args={"agent": agent, "tool_name": call.tool_name, "unwrapped": call.unwrapped},
            wait_approval=agent != "claude", approval_timeout=approval_timeout, emit=emit or err)
        verdict = judgement.verdict
        allow_reason = f"clawshell: allowed (score {verdict.score}, {verdict.risk.value})"
        return answer_for(agent, verdict.decision, judgement.line, allow_reason)
    except PayloadError as exc:
        _record_bad_payload(agent, str(exc), data, cwd_option, policy_selector, env)
        return deny_answer(agent, f"clawshell: denied: {exc}")
    except BaseException as exc:  # fail closed on anything, even KeyboardInterrupt
        name = exc.__class__.__name__
        tag = getattr(exc, "tag", None)
        text = str(exc).splitlines()[0] if str(exc) else name
        what = f"{tag}: {text}" if tag else f"{name}: {text}"
        return deny_answer(agent if agent in AGENTS else "codex", f"clawshell: denied: hook failed ({what})")


def _record_bad_payload(agent: str, reason: str, data: bytes, cwd_option: str | None,
                        policy_selector: str | None, env: Mapping[str, str]) -> None:
    """Leave an audit entry for a payload refused before it could be judged (best effort)."""
    try:
        import hashlib

        from .pipeline import record_refusal, resolve_workspace, session_id

        project = {"claude": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR"}.get(agent, "")
        given = cwd_option or env.get("CLAWSHELL_CWD") or (env.get(project) if project else None)
        workspace, _ = resolve_workspace(given, {})
        record_refusal(tool=f"hook.{agent}", subject=f"hook {agent}: malformed payload", reason=reason,
                       workspace=workspace, session=session_id(None, env),
                       policy_selector=policy_selector or env.get("CLAWSHELL_POLICY"),
                       args={"agent": agent, "payload_sha256": hashlib.sha256(data).hexdigest(),
                             "payload_bytes": len(data)})
    except Exception:
        pass
