"""Path rules: expansion, normalisation, most-specific matching, symlinks, odd workspaces."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from clawshell.model import Decision, EvalContext
from clawshell.policy import engine, loader, paths
from clawshell.policy.paths import Entry, Kind, PathTable
from clawshell.shellparse import parse

SUPERVISED = loader.load_preset("supervised")
FULL = loader.load_preset("full")


@pytest.mark.parametrize(("word", "expected"), [
    ("~", ("/home/u", True)),
    ("~/", ("/home/u/", True)),
    ("~/.ssh/id_rsa", ("/home/u/.ssh/id_rsa", True)),
    ("~bob/x", ("/home/bob/x", True)),
    ("~root/.bashrc", ("/root/.bashrc", True)),
    ("$HOME/.aws", ("/home/u/.aws", True)),
    ("${HOME}/.aws", ("/home/u/.aws", True)),
    ("$PWD/x", ("/w/x", True)),
    ("$TMPDIR/x", ("/tmp/t/x", True)),
    ("$HOME/.ssh/$KEY", ("/home/u/.ssh/", False)),
    ("$(pwd)/x", ("", False)),
    ("`pwd`/x", ("", False)),
    ("a~b", ("a~b", True)),
    ("plain/rel", ("plain/rel", True)),
])
def test_expand(word: str, expected: tuple[str, bool]) -> None:
    assert paths.expand(word, "/home/u", {"TMPDIR": "/tmp/t"}, cwd="/w") == expected


@pytest.mark.parametrize(("path", "cwd", "expected"), [
    ("x", "/w", "/w/x"),
    ("./x/../y", "/w", "/w/y"),
    ("../../../../..", "/w/a", "/"),
    ("//etc//passwd", "/w", "/etc/passwd"),
    ("/tmp/..", "/w", "/"),
    ("/./etc/.", "/w", "/etc"),
    ("a/b/", "/w", "/w/a/b"),
])
def test_normalize(path: str, cwd: str, expected: str) -> None:
    assert paths.normalize(path, cwd) == expected


def _table(*specs: tuple[str, Kind]) -> PathTable:
    entries = [paths.make_entry(p, k, "/home/u", "/") for p, k in specs]
    return PathTable(e for e in entries if e is not None)


@pytest.mark.parametrize(("path", "kind"), [
    ("/etc", Kind.FORBIDDEN),
    ("/etc/passwd", Kind.FORBIDDEN),
    ("/etcetera/x", None),            # component-wise, not string prefix
    ("/home/bob/x", Kind.FORBIDDEN),  # other users' homes
    ("/home/u/x", Kind.READ_OK),      # HOME (literal) beats /home/* (glob) at equal depth
    ("/home/u/.ssh/id_rsa", Kind.FORBIDDEN),
    ("/home/u/.ssh/ok/file", Kind.WRITE_OK),  # most specific entry wins
    ("/srv/shared", Kind.FORBIDDEN),  # deny wins a full tie
    ("/", None),
])
def test_most_specific_entry_wins_and_deny_wins_a_tie(path: str, kind: Kind | None) -> None:
    t = _table(("/etc", Kind.FORBIDDEN), ("/home/*", Kind.FORBIDDEN), ("/home/u", Kind.READ_OK),
               ("~/.ssh", Kind.FORBIDDEN), ("~/.ssh/ok", Kind.WRITE_OK),
               ("/srv/shared", Kind.WRITE_OK), ("/srv/shared", Kind.FORBIDDEN))
    e = t.lookup(paths.split(path))
    assert (e.kind if e else None) is kind


def test_reach_finds_entries_a_glob_or_tree_may_touch() -> None:
    t = _table(("~/.ssh", Kind.FORBIDDEN), ("/etc", Kind.FORBIDDEN))
    parts = paths.split("/home/u/.*/id_rsa")
    assert [e.path for e in t.reach(parts, 2, False, frozenset({Kind.FORBIDDEN}))] == ["/home/u/.ssh"]
    assert t.reach(paths.split("/home/u/*/id_rsa"), 2, False, frozenset({Kind.FORBIDDEN})) == []  # no dotfiles
    assert [e.path for e in t.reach((), 0, True, frozenset({Kind.FORBIDDEN}))] == ["/home/u/.ssh", "/etc"]
    assert t.reach(("home",), 1, False, frozenset({Kind.FORBIDDEN})) == []


def test_default_forbidden_list_has_the_design_entries() -> None:
    for p in ("/etc", "/sys", "/boot", "/proc", "~/.ssh", "~/.gnupg", "~/.aws", "~/.kube",
              "~/.docker", "~/.netrc", "~/.git-credentials", "~/.config"):
        assert p in paths.DEFAULT_FORBIDDEN_PATHS
    assert paths.OTHER_HOMES == ("/root", "/home/*")
    assert SUPERVISED.forbidden_paths == paths.DEFAULT_FORBIDDEN_PATHS
    assert paths.resolve_forbidden(["@defaults", "~/x", "/etc"])[-1] == "~/x"


def _ctx(ws: str, home: str = "/home/u", cwd: str | None = None, realpath=os.path.realpath) -> EvalContext:
    return EvalContext(cwd=cwd or ws, workspace=ws, home=home, clawshell_home=home + "/.clawshell",
                       realpath=realpath)


def _decide(cmd: str, ctx: EvalContext, policy=SUPERVISED) -> Decision:
    return engine.evaluate(parse(cmd), policy, ctx).decision


@pytest.mark.parametrize(("cmd", "decision"), [
    ("cat /dev/null", Decision.ALLOW),
    ("echo x > /dev/null 2>/dev/stderr", Decision.ALLOW),
    ("cat /usr/share/dict/words", Decision.ALLOW),
    ("ls /bin /usr/bin /usr/local/bin", Decision.ALLOW),
    ("/usr/bin/env python3 x.py", Decision.ALLOW),
    ("cat /proc/self/status", Decision.DENY),
    ("cat /proc/cpuinfo", Decision.DENY),
    ("cat /sys/class/net/eth0/address", Decision.DENY),
    ("ls /boot", Decision.DENY),
    ("echo x | tee /dev/fd/2", Decision.ALLOW),
    ("echo x > /proc/self/fd/1", Decision.ALLOW),
    ("cat /dev/sda", Decision.DENY),
    ("cat /var/run/docker.sock", Decision.DENY),
])
def test_system_paths(cmd: str, decision: Decision) -> None:
    assert _decide(cmd, _ctx("/srv/ws", realpath=lambda p: p)) is decision


@pytest.mark.parametrize("ws", ["/home/u/proj", "/tmp/ws", "/home/u/.config/proj", "/root/proj", "/home/u"])
def test_odd_workspaces_still_work(ws: str) -> None:
    ctx = _ctx(ws, realpath=lambda p: p)
    assert _decide("echo hi > out.txt && mkdir -p build && cat README.md", ctx) is Decision.ALLOW
    assert _decide("cat ~/.ssh/id_rsa", ctx) is Decision.DENY
    assert _decide("echo x > /opt/out", ctx) is Decision.DENY


def test_home_equal_to_root_is_not_forbidden_as_a_whole() -> None:
    ctx = _ctx("/root/proj", home="/root", realpath=lambda p: p)
    assert _decide("ls ~/.cargo/bin && cat ~/notes.txt", ctx) is Decision.ALLOW
    assert _decide("cat ~/.ssh/id_rsa", ctx) is Decision.DENY
    assert _decide("cat /home/bob/x", ctx) is Decision.DENY


@pytest.mark.parametrize(("home", "cmd", "decision", "source"), [
    ("/home/u", "cat /root/.bashrc", Decision.DENY, "other users' homes"),
    ("/home/u", "cat /home/bob/.bashrc", Decision.DENY, "other users' homes"),
    ("/tmp/h", "cat /home/u/.bashrc", Decision.DENY, "other users' homes"),
    ("/root", "cat /root/.bashrc", Decision.ALLOW, None),
    ("/home/u", "cat /home/u/notes", Decision.ALLOW, None),
])
def test_other_users_homes_are_forbidden_even_with_an_empty_list(home: str, cmd: str, decision: Decision,
                                                                  source: str | None) -> None:
    pol = dataclasses.replace(SUPERVISED, forbidden_paths=())
    v = engine.evaluate(parse(cmd), pol, _ctx("/srv/ws", home=home, realpath=lambda p: p))
    assert v.decision is decision
    if source:
        assert v.primary is not None and v.primary.reason.endswith(f"(forbidden_paths: {source})")


def test_a_shared_directory_can_be_carved_out_of_other_homes() -> None:
    pol = dataclasses.replace(SUPERVISED, allowed_paths=("/home/shared",))
    ctx = _ctx("/srv/ws", realpath=lambda p: p)
    assert engine.evaluate(parse("cp /home/shared/data.csv ."), pol, ctx).decision is Decision.ALLOW
    assert engine.evaluate(parse("cat /home/bob/x"), pol, ctx).decision is Decision.DENY


def test_clawshell_home_is_forbidden_even_inside_the_workspace() -> None:
    ctx = EvalContext(cwd="/w", workspace="/w", home="/home/u", clawshell_home="/w/.state")
    v = engine.evaluate(parse("cat .state/security/key"), SUPERVISED, ctx)
    assert v.decision is Decision.DENY and v.primary is not None
    assert v.primary.reason.endswith("(forbidden_paths: CLAWSHELL_HOME)")


# ---- real symlinks (checked again after resolving the existing prefix) ---------------


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    ws = home / "proj"
    secret = home / ".ssh"
    outside = tmp_path / "outside"
    for d in (ws, secret, outside):
        d.mkdir(parents=True)
    (secret / "id_rsa").write_text("k")
    (ws / "keys").symlink_to(secret)
    (ws / "out").symlink_to(outside)
    (ws / "sub").mkdir()
    (ws / "sub" / "up").symlink_to(home)
    (tmp_path / "wslink").symlink_to(ws)
    return {"home": home, "ws": ws, "outside": outside, "root": tmp_path}


def _real_ctx(t: dict[str, Path], ws: Path | None = None) -> EvalContext:
    w = str(ws or t["ws"])
    return EvalContext(cwd=w, workspace=w, home=str(t["home"]), clawshell_home=str(t["root"] / "claw"),
                       realpath=os.path.realpath)


@pytest.mark.parametrize(("cmd", "decision", "rule"), [
    ("cat keys/id_rsa", Decision.DENY, "paths.forbidden"),
    ("cat sub/up/.ssh/id_rsa", Decision.DENY, "paths.forbidden"),
    ("cat keys/../.ssh/id_rsa", Decision.DENY, "paths.forbidden"),  # lexically ws/.ssh, really ~/.ssh
    ("echo x > out/file", Decision.DENY, "paths.workspace_only"),
    ("echo x > out/new/deeper/file", Decision.DENY, "paths.workspace_only"),
    ("touch sub/up/evil", Decision.DENY, "paths.workspace_only"),
    ("echo x > sub/file", Decision.ALLOW, "actions.score"),
])
def test_symlinks_are_judged_where_they_land(tree: dict[str, Path], cmd: str, decision: Decision,
                                             rule: str) -> None:
    v = engine.evaluate(parse(cmd), SUPERVISED, _real_ctx(tree))
    assert v.decision is decision, v.evidence
    assert rule in {e.rule for e in v.evidence if e.decision is decision}


def test_workspace_given_through_a_symlink_is_still_writable(tree: dict[str, Path]) -> None:
    ctx = _real_ctx(tree, tree["root"] / "wslink")
    assert engine.evaluate(parse("echo x > out.txt && mkdir build"), SUPERVISED, ctx).decision is Decision.ALLOW


def test_allowed_paths_are_writable_outside_the_workspace(tree: dict[str, Path]) -> None:
    pol = dataclasses.replace(SUPERVISED, allowed_paths=(str(tree["outside"]),))
    v = engine.evaluate(parse(f"echo x > {tree['outside']}/f"), pol, _real_ctx(tree))
    assert v.decision is Decision.ALLOW
    assert v.extra_writable == (str(tree["outside"]),)
    # the most specific entry wins: a forbidden subtree inside an allowed root
    pol2 = dataclasses.replace(pol, forbidden_paths=pol.forbidden_paths + (str(tree["outside"] / "secret"),))
    assert engine.evaluate(parse(f"cat {tree['outside']}/secret/x"), pol2, _real_ctx(tree)).decision is Decision.DENY


def test_full_autonomy_writes_outside_and_reports_them(tree: dict[str, Path]) -> None:
    v = engine.evaluate(parse(f"echo x > {tree['outside']}/f"), FULL, _real_ctx(tree))
    assert v.decision is Decision.ALLOW
    assert v.extra_writable == (str(tree["outside"] / "f"),)


@pytest.mark.parametrize(("op", "path", "decision", "score"), [
    ("read", "README.md", Decision.ALLOW, 5),
    ("list", ".", Decision.ALLOW, 5),
    ("write", "src/x.py", Decision.ALLOW, 20),
    ("edit", "src/x.py", Decision.ALLOW, 20),
    ("delete", "src/x.py", Decision.DENY, 95),
    ("read", "keys/id_rsa", Decision.DENY, 5),
    ("write", "out/f", Decision.DENY, 20),
    ("read", ".env", Decision.APPROVE, 5),
    ("edit", ".env", Decision.APPROVE, 20),
    ("write", ".git/hooks/pre-commit", Decision.APPROVE, 20),
])
def test_file_tools_use_the_same_path_rules(tree: dict[str, Path], op: str, path: str, decision: Decision,
                                            score: int) -> None:
    v = engine.evaluate_file(op, path, SUPERVISED, _real_ctx(tree))
    assert (v.decision, v.score) == (decision, score), v.evidence


def test_file_tools_in_readonly_may_only_read(tree: dict[str, Path]) -> None:
    ro = loader.load_preset("readonly")
    assert engine.evaluate_file("read", "README.md", ro, _real_ctx(tree)).decision is Decision.ALLOW
    for op in ("write", "edit", "delete"):
        v = engine.evaluate_file(op, "README.md", ro, _real_ctx(tree))
        assert v.decision is Decision.DENY and v.primary is not None and v.primary.rule == "autonomy.readonly"


def test_file_tools_reject_unknown_operations(tree: dict[str, Path]) -> None:
    with pytest.raises(ValueError):
        engine.evaluate_file("chmod", "x", SUPERVISED, _real_ctx(tree))


def test_entry_path_and_literal_count() -> None:
    e = paths.make_entry("/home/*/x", Kind.FORBIDDEN, "/h", "/")
    assert e == Entry(("home", "*", "x"), Kind.FORBIDDEN, "/home/*/x", 2) and e.path == "/home/*/x"
    assert paths.make_entry("$X/y", Kind.FORBIDDEN, "/h", "/") is None


def test_concrete_entries_for_the_sandbox() -> None:
    got = paths.concrete_entries(("/root", "/home/*", "~/.ssh", "./secrets", "$HOME/.aws", "$X/y"), "/root", "/w")
    assert got == ("/home/*", "/root/.ssh", "/w/secrets", "/root/.aws")
