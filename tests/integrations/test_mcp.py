"""`clawshell mcp` driven by the official SDK's own stdio client over a spawned process:
tool listing, allowed and refused commands, a kernel-contained escape, bad arguments,
file tools, the dry run, and approvals through elicitation or the queue."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import CLAWSHELL

pytestmark = pytest.mark.timeout(180)

Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


def session_run(ws: Path, body: Callable[[ClientSession], Awaitable[Any]], *, elicit: Elicit | None = None,
                extra_args: tuple[str, ...] = ()) -> Any:
    """Spawn `clawshell mcp --cwd WS`, open a client session, run ``body``."""
    env = dict(os.environ)
    env.pop("CLAWSHELL_CWD", None)
    params = StdioServerParameters(command=CLAWSHELL, args=["mcp", "--cwd", str(ws), *extra_args], env=env)

    async def main() -> Any:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicit) as session:
                await session.initialize()
                return await body(session)

    return anyio.run(main)


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def audit_tools(clawhome: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(clawhome / "storage" / "clawshell.db")
    try:
        return db.execute("SELECT tool, json_extract(body, '$.outcome') FROM audit ORDER BY seq").fetchall()
    finally:
        db.close()


def test_lists_the_tools_with_schemas(workspace: Path, clawhome: Path) -> None:
    async def body(s: ClientSession) -> types.ListToolsResult:
        return await s.list_tools()

    tools = {t.name: t for t in session_run(workspace, body).tools}
    assert set(tools) == {"shell", "read_file", "write_file", "edit_file", "list_dir", "check_command"}
    assert tools["shell"].input_schema["required"] == ["command"]
    assert set(tools["shell"].input_schema["properties"]) == {"command", "cwd", "timeout"}
    assert tools["read_file"].annotations is not None and tools["read_file"].annotations.read_only_hint


def test_allowed_command_refusal_escape_and_bad_arguments_in_one_session(tmp_path: Path, clawhome: Path,
                                                                          user_home: Path) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    (user_home / ".ssh").mkdir()
    (user_home / ".ssh" / "id_rsa").write_text("FAKE KEY\n")
    escape = outside / "escaped.txt"
    # The target is assembled at run time, so only the kernel sandbox can stop it.
    parts = ", ".join(repr(p) for p in str(escape).strip("/").split("/"))
    sneaky = f"python3 -c \"import os; open(os.sep + os.sep.join([{parts}]), 'w').write('x')\""

    async def body(s: ClientSession) -> dict[str, types.CallToolResult]:
        out = {}
        out["ok"] = await s.call_tool("shell", {"command": "echo hello; echo warn >&2; exit 3"})
        out["cwd"] = await s.call_tool("shell", {"command": "pwd", "cwd": "sub"})
        out["cwd_out"] = await s.call_tool("shell", {"command": "pwd", "cwd": str(outside)})
        out["denied"] = await s.call_tool("shell", {"command": "cat ~/.ssh/id_rsa"})
        out["escape"] = await s.call_tool("shell", {"command": sneaky})
        out["bad_type"] = await s.call_tool("shell", {"command": 123})
        out["missing"] = await s.call_tool("read_file", {})
        out["bad_limit"] = await s.call_tool("read_file", {"path": "x", "limit": "many"})
        out["unknown"] = await s.call_tool("no_such_tool", {})
        out["after"] = await s.call_tool("shell", {"command": "echo still-up"})
        out["timeout"] = await s.call_tool("shell", {"command": "sleep 30", "timeout": 1})
        return out

    r = session_run(ws, body)
    ok = r["ok"]
    assert not ok.is_error
    sc = ok.structured_content
    assert (sc["exit_status"], sc["stdout"], sc["stderr"]) == (3, "hello\n", "warn\n")
    assert sc["receipt"].startswith("[clawshell receipt]") and sc["receipt"] in text(ok)
    assert r["cwd"].structured_content["stdout"] == f"{ws / 'sub'}\n"
    assert r["cwd_out"].is_error and "outside the workspace" in text(r["cwd_out"])

    denied = r["denied"]
    assert denied.is_error and text(denied).startswith("clawshell: denied: ") and "[rule: " in text(denied)
    assert "FAKE KEY" not in text(denied)

    assert not escape.exists()
    esc = r["escape"]
    assert esc.is_error or esc.structured_content["exit_status"] != 0

    for key in ("bad_type", "missing", "bad_limit", "unknown"):
        assert r[key].is_error, key
    assert "valid string" in text(r["bad_type"])
    after = r["after"]
    assert not after.is_error and after.structured_content["stdout"] == "still-up\n"
    assert r["timeout"].structured_content["timed_out"] is True

    tools = [t for t, _ in audit_tools(clawhome)]
    assert tools.count("mcp.shell") == 7  # every shell call that reached the pipeline, refused or not


def test_file_tools_and_dry_run(tmp_path: Path, clawhome: Path) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "link_out").symlink_to(outside)

    async def body(s: ClientSession) -> dict[str, types.CallToolResult]:
        out = {}
        out["write"] = await s.call_tool("write_file", {"path": "pkg/mod.py", "content": "a = 1\nb = 2\n"})
        out["edit"] = await s.call_tool("edit_file", {"path": "pkg/mod.py", "old_string": "b = 2",
                                                      "new_string": "b = 3"})
        out["ambiguous"] = await s.call_tool("edit_file", {"path": "pkg/mod.py", "old_string": " = ",
                                                           "new_string": "="})
        out["read"] = await s.call_tool("read_file", {"path": "pkg/mod.py", "offset": 2, "limit": 1})
        out["ls"] = await s.call_tool("list_dir", {"path": "."})
        out["out_write"] = await s.call_tool("write_file", {"path": "link_out/x.txt", "content": "pwned"})
        out["out_read"] = await s.call_tool("read_file", {"path": "../outside/x.txt"})
        out["check"] = await s.call_tool("check_command", {"command": "rm -rf /"})
        return out

    before = None
    r = session_run(ws, body)
    assert not r["write"].is_error and "wrote 12 bytes" in text(r["write"])
    assert not r["edit"].is_error
    assert (ws / "pkg/mod.py").read_text() == "a = 1\nb = 3\n"
    assert r["ambiguous"].is_error and "2 times" in text(r["ambiguous"])
    assert text(r["read"]).startswith("     2\tb = 3")
    assert text(r["ls"]).splitlines()[:2] == ["link_out@", "pkg/"]
    for key in ("out_write", "out_read"):
        assert r[key].is_error and "clawshell: denied: " in text(r[key]), key
    assert list(outside.iterdir()) == []
    check = r["check"]
    assert not check.is_error and check.structured_content["decision"] == "deny"
    assert before is None
    tools = [t for t, _ in audit_tools(clawhome)]
    assert "check_command" not in " ".join(tools)
    assert tools.count("file.write") == 2 and tools.count("file.edit") == 2


def _approval_policy(clawhome: Path, timeout: float) -> None:
    (clawhome / "config").mkdir(parents=True, exist_ok=True)
    (clawhome / "config" / "policy.toml").write_text(f"[safety.approval]\ntimeout_seconds = {timeout}\n")


@pytest.mark.parametrize("answer,refused", [("allow", False), ("deny", True), ("decline", True)])
def test_approval_through_elicitation(workspace: Path, clawhome: Path, answer: str, refused: bool) -> None:
    _approval_policy(clawhome, 60)
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if answer == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": answer})

    async def body(s: ClientSession) -> types.CallToolResult:
        return await s.call_tool("shell", {"command": "git push origin main"})

    res = session_run(workspace, body, elicit=elicit)
    assert len(asked) == 1 and "CLAW-" in asked[0] and "git push origin main" in asked[0]
    assert res.is_error is refused
    if refused:
        assert "denied by the human" in text(res)
    else:
        # It ran (git fails: the workspace is no repository), it was not refused.
        assert res.structured_content["exit_status"] not in (0, 126)
        assert "refusal" not in res.structured_content


def test_without_elicitation_the_queue_waits_then_auto_denies(workspace: Path, clawhome: Path) -> None:
    _approval_policy(clawhome, 1)

    async def body(s: ClientSession) -> types.CallToolResult:
        return await s.call_tool("shell", {"command": "git push origin main"})

    res = session_run(workspace, body)
    assert res.is_error and "auto-denied" in text(res) and "CLAW-" in text(res)


@pytest.mark.parametrize("right_code", [True, False], ids=["right-otp", "wrong-otp"])
def test_gated_write_asks_for_an_otp_code_through_elicitation(workspace: Path, clawhome: Path,
                                                              right_code: bool) -> None:
    import time

    from clawshell.approval import otp
    from clawshell.approval.queue import write_otp_secret
    from clawshell.home import Home

    raw = os.urandom(20)
    write_otp_secret(Home(str(clawhome)), otp.encode_secret(raw))
    (clawhome / "config").mkdir(parents=True, exist_ok=True)
    (clawhome / "config" / "policy.toml").write_text(
        '[safety.approval]\ntimeout_seconds = 30\n\n[security.otp]\ngated_actions = ["file_write"]\n')
    schemas: list[dict] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        schemas.append(params.requested_schema)
        code = otp.code_at(raw, time.time()) if right_code else "000000"
        if not right_code and code == otp.code_at(raw, time.time()):
            code = "111111"
        return types.ElicitResult(action="accept", content={"decision": "allow", "otp": code})

    async def body(s: ClientSession) -> types.CallToolResult:
        return await s.call_tool("write_file", {"path": "gated.txt", "content": "ok\n"})

    res = session_run(workspace, body, elicit=elicit)
    assert "otp" in schemas[0]["properties"]
    assert len(schemas) == (1 if right_code else 3)  # a wrong code is asked for again, then denied
    if right_code:
        assert not res.is_error, text(res)
        assert (workspace / "gated.txt").read_text() == "ok\n"
    else:
        assert res.is_error
        assert not (workspace / "gated.txt").exists()
