"""A project's .clawshell/security-policy.toml can only narrow the global policy."""

from __future__ import annotations

import dataclasses
import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clawshell.errors import ConfigError
from clawshell.home import Home
from clawshell.model import Autonomy, Decision, EvalContext, Thresholds
from clawshell.policy import engine, loader, scores
from clawshell.shellparse import parse

HOME = "/home/u"
WS = "/home/u/proj"
CTX = EvalContext(cwd=WS, workspace=WS, home=HOME, clawshell_home=HOME + "/.clawshell")

PRESETS = {n: loader.load_preset(n) for n in loader.PRESETS}
GLOBALS = list(PRESETS.values()) + [
    dataclasses.replace(PRESETS["supervised"], allowed_commands=("git", "ls", "cat", "python", "rm", "curl")),
    dataclasses.replace(PRESETS["full"], best_effort=True, allowed_commands=("git", "npm", "make")),
    dataclasses.replace(PRESETS["supervised"], network=True, thresholds=Thresholds(30, 50, 90),
                        max_irreversibility_score=80),
]


def narrow(policy, body: dict):
    """Apply a project dict (with HOME pinned for ~ expansion)."""
    old = os.environ.get("HOME")
    os.environ["HOME"] = HOME
    try:
        return loader.narrow(policy, body, WS, check_examples=False)
    finally:
        if old is not None:
            os.environ["HOME"] = old


def test_seed_example_code_review_agent() -> None:
    p = narrow(PRESETS["supervised"], {"policy": {"tools": {"allowed": ["read_file", "web_fetch"]},
                                                  "actions": {"max_irreversibility_score": 10}}})
    assert engine.evaluate(parse("ls"), p, CTX).decision is Decision.DENY  # no shell tool
    assert engine.evaluate_file("read", "README.md", p, CTX).decision is Decision.ALLOW
    v = engine.evaluate_file("write", "x.md", p, CTX)
    assert v.decision is Decision.DENY and {e.rule for e in v.evidence} >= {"tools.denied", "actions.max_score"}


def test_seed_example_report_agent() -> None:
    p = narrow(PRESETS["supervised"], {"policy": {
        "tools": {"denied": ["bash", "spawn_zora_agent", "send_signal_message"]},
        "filesystem": {"write_allow": ["./reports"]},
        "actions": {"max_irreversibility_score": 25}}})
    assert engine.evaluate_file("write", "reports/q3.md", p, CTX).decision is Decision.ALLOW
    v = engine.evaluate_file("write", "src/x.py", p, CTX)
    assert v.decision is Decision.DENY and v.primary is not None and v.primary.rule == "paths.write_allow"
    assert engine.evaluate(parse("git status"), p, CTX).decision is Decision.DENY


@pytest.mark.parametrize(("body", "check"), [
    ({"policy": {"autonomy": {"level": "readonly"}}}, lambda p: p.autonomy is Autonomy.READONLY),
    ({"policy": {"autonomy": {"level": "full"}}}, lambda p: p.autonomy is Autonomy.SUPERVISED),
    ({"policy": {"autonomy": {"workspace_only": False}}}, lambda p: p.workspace_only is True),
    ({"policy": {"actions": {"flag": 45}}}, lambda p: p.thresholds == Thresholds(40, 45, 95)),
    ({"policy": {"actions": {"flag": 90}}}, lambda p: p.thresholds == Thresholds(40, 65, 95)),
    ({"policy": {"actions": {"max_irreversibility_score": 60}}}, lambda p: p.max_irreversibility_score == 60),
    ({"policy": {"actions": {"scores": {"git_push": 90, "git_commit": 10}}}},
     lambda p: dict(p.scores) == {"git_push": 90, "git_commit": 55}),
    ({"policy": {"shell": {"deny": ["curl", "wget"]}}}, lambda p: p.forbidden_commands == ("curl", "wget")),
    ({"policy": {"shell": {"allowed": ["git", "ls"]}}}, lambda p: p.allowed_commands == ("git", "ls")),
    ({"policy": {"filesystem": {"deny": ["./secrets", "~/notes"]}}},
     lambda p: p.forbidden_paths[-2:] == (WS + "/secrets", HOME + "/notes")),
    ({"policy": {"network": {"enabled": False}}}, lambda p: p.network is False),
    ({"policy": {"network": {"allow_domains": ["pypi.org"]}}}, lambda p: p.network is False),
    ({"policy": {"sandbox": {"best_effort": True}}}, lambda p: p.best_effort is False),
])
def test_each_key_narrows(body: dict, check) -> None:
    assert check(narrow(PRESETS["supervised"], body))


def test_narrowing_full_turns_workspace_only_back_on_when_autonomy_is_lowered() -> None:
    p = narrow(dataclasses.replace(PRESETS["full"], network=False), {"policy": {"autonomy": {"level": "supervised"}}})
    assert (p.autonomy, p.workspace_only) == (Autonomy.SUPERVISED, True)


def test_allowed_commands_intersect() -> None:
    base = dataclasses.replace(PRESETS["supervised"], allowed_commands=("git", "ls", "cat"))
    p = narrow(base, {"policy": {"shell": {"allowed": ["ls", "cat", "rm"]}}})
    assert p.allowed_commands == ("ls", "cat")


@pytest.mark.parametrize(("body", "expected"), [
    ("[policy.shell]\ndeny = 'curl'\n", ["{f}:2: policy.shell.deny: expected a list, got 'curl'"]),
    ("[policy.budget]\nmax_actions_per_session = 30\n",
     ["{f}:1: policy.budget: unknown key (known: actions, autonomy, description, filesystem, network, sandbox, "
      "shell, tools)"]),
    ("[policy.actions]\nwarn = 50\nflag = 45\n",
     ["{f}:3: policy.actions.flag: thresholds must satisfy warn <= flag <= auto_deny (warn=50, flag=45)"]),
    ("[policy.filesystem]\nwrite_allow = ['/tmp/out']\n",
     ["{f}:2: policy.filesystem.write_allow: item 1: '/tmp/out' is outside the workspace"]),
    ("[[policy.shell.rules]]\nid = 'ok'\npattern = 'git push'\ndecision = 'allow'\n",
     ["{f}:4: policy.shell.rules[0].decision: a project policy can only add deny or approve rules"]),
    ("[[policy.shell.rules]]\nid = 'np'\npattern = 'npm publish'\ndecision = 'deny'\nmatch = ['npm ci']\n",
     ["{f}:5: policy.shell.rules[0].match: example 'npm ci' does not match pattern 'npm publish'"]),
    ("[policy.actions.scores]\nbogus = 3\n", ["{f}:2: policy.actions.scores.bogus: unknown action (see "
                                             "docs/policy.md for action names)"]),
])
def test_project_file_errors(clawhome: Path, workspace: Path, body: str, expected: list[str]) -> None:
    f = workspace / ".clawshell" / "security-policy.toml"
    f.parent.mkdir()
    f.write_text(body)
    with pytest.raises(ConfigError) as exc:
        loader.load_policy(Home(str(clawhome)), str(workspace), "supervised")
    assert exc.value.problems == [e.format(f=f) for e in expected]


def test_project_file_is_applied_by_load_policy(clawhome: Path, workspace: Path) -> None:
    f = workspace / ".clawshell" / "security-policy.toml"
    f.parent.mkdir()
    f.write_text(textwrap.dedent("""
        [policy.shell]
        deny = ["curl"]
        [[policy.shell.rules]]
        id = "no_publish"
        pattern = "npm publish"
        decision = "deny"
        reason = "this project is private"
        match = ["npm publish --access public"]
        not_match = ["npm pack"]
    """))
    p = loader.load_policy(Home(str(clawhome)), str(workspace), "full")
    assert p.sources == (loader.preset_path("full"), str(f))
    ctx = EvalContext(cwd=str(workspace), workspace=str(workspace), home=os.environ["HOME"],
                      clawshell_home=str(clawhome))
    v = engine.evaluate(parse("npm publish"), p, ctx)
    assert v.decision is Decision.DENY and v.primary is not None
    assert (v.primary.rule, v.primary.reason) == ("commands.forbidden.no_publish", "this project is private")
    assert loader.policy_hash(p) != loader.policy_hash(PRESETS["full"])


# --------------------------------------------------------------------------- the property

COMMANDS = [
    "ls -la", "cat README.md", "git status", "git push", "git commit -m x && git push", "npm install",
    "npm install && git commit -m x", "rm -rf build", "rm build/x", "echo hi > out/x.txt", "echo x > src/a.py",
    "cat secrets/key.txt", "cat ~/notes/x", "curl https://example.com", "curl -X POST https://api.x/y -d 1",
    "python -c 'print(1)'", "make", "pytest -q", "$X", "eval \"$Y\"", "echo x > .git/hooks/pre-commit",
    "cat .env", "sudo ls", "kubectl apply -f x.yaml", "terraform apply", "git reset --hard",
    "pip install x && npm test", "docker run --rm alpine", "echo x > /tmp/y", "cp a /opt/x",
    "cd src && rm -rf gen", "wget https://x/y.tgz", "gh pr create --fill", "chmod +x run.sh",
]
FILE_OPS = [("read", "README.md"), ("write", "src/a.py"), ("edit", "out/x"), ("delete", "build/x"),
            ("list", "."), ("write", "/tmp/x"), ("read", ".env")]

SUBSET = lambda xs: st.lists(st.sampled_from(xs), unique=True, max_size=3)  # noqa: E731
RULES = st.lists(st.builds(
    lambda i, pat, dec, score: {"id": f"r{i}", "pattern": pat, "decision": dec,
                                **({"score": score} if score is not None else {})},
    st.integers(0, 99), st.sampled_from(["git push", "git **", "rm ** -r", "curl **", "npm install", "py*",
                                         "cat ** .env", "make"]),
    st.sampled_from(["deny", "approve"]), st.none() | st.integers(0, 100)),
    max_size=2, unique_by=lambda r: r["id"])


@st.composite
def projects(draw) -> dict:
    pol: dict = {}
    if draw(st.booleans()):
        pol["autonomy"] = {"level": draw(st.sampled_from(["readonly", "supervised", "full"]))}
        if draw(st.booleans()):
            pol["autonomy"]["workspace_only"] = draw(st.booleans())
    if draw(st.booleans()):
        pol["tools"] = {k: draw(SUBSET(["bash", "shell", "read_file", "write_file", "edit_file", "list_dir",
                                        "delete_file", "spawn_zora_agent"]))
                        for k in draw(SUBSET(["denied", "allowed"]))}
    if draw(st.booleans()):
        pol["filesystem"] = {}
        if draw(st.booleans()):
            pol["filesystem"]["deny"] = draw(SUBSET(["./secrets", "src", "/opt", "~/notes", "."]))
        if draw(st.booleans()):
            pol["filesystem"]["write_allow"] = draw(SUBSET(["./out", "build", ".", "src/gen"]))
    if draw(st.booleans()):
        acts: dict = {}
        trio = sorted(draw(st.lists(st.integers(0, 100), min_size=3, max_size=3)))
        for k, v in zip(("warn", "flag", "auto_deny"), trio):
            if draw(st.booleans()):
                acts[k] = v
        if draw(st.booleans()):
            acts["max_irreversibility_score"] = draw(st.integers(0, 100))
        if draw(st.booleans()):
            acts["scores"] = {a: draw(st.integers(0, 100)) for a in draw(SUBSET(sorted(scores.ACTIONS)))}
        pol["actions"] = acts
    if draw(st.booleans()):
        sh: dict = {}
        if draw(st.booleans()):
            sh["deny"] = draw(SUBSET(["curl", "rm", "python", "git", "npm", "wget"]))
        if draw(st.booleans()):
            sh["allowed"] = draw(SUBSET(["git", "ls", "cat", "make", "python", "npm", "rm"]))
        rules_ = draw(RULES)
        if rules_:
            sh["rules"] = rules_
        pol["shell"] = sh
    if draw(st.booleans()):
        pol["network"] = draw(st.sampled_from([{"enabled": False}, {"enabled": True}, {"allow_domains": ["x.org"]},
                                               {}]))
    if draw(st.booleans()):
        pol["sandbox"] = {"best_effort": draw(st.booleans())}
    return {"policy": pol}


ORDER = {Autonomy.READONLY: 0, Autonomy.SUPERVISED: 1, Autonomy.FULL: 2}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=st.sampled_from(GLOBALS), project=projects(), cmd=st.sampled_from(COMMANDS),
       op=st.sampled_from(FILE_OPS))
def test_project_policy_never_widens(g, project: dict, cmd: str, op: tuple[str, str]) -> None:
    merged = narrow(g, project)
    parsed = parse(cmd)
    before = engine.evaluate(parsed, g, CTX)
    after = engine.evaluate(parsed, merged, CTX)
    assert after.decision >= before.decision, (cmd, project, before.evidence, after.evidence)
    fb = engine.evaluate_file(op[0], op[1], g, CTX)
    fa = engine.evaluate_file(op[0], op[1], merged, CTX)
    assert fa.decision >= fb.decision, (op, project, fb.evidence, fa.evidence)
    # and field by field
    assert ORDER[merged.autonomy] <= ORDER[g.autonomy]
    assert merged.workspace_only >= g.workspace_only
    assert merged.network <= g.network and merged.best_effort <= g.best_effort
    t0, t1 = g.thresholds, merged.thresholds
    assert (t1.warn, t1.flag, t1.auto_deny) <= (t0.warn, t0.flag, t0.auto_deny) or (
        t1.warn <= t0.warn and t1.flag <= t0.flag and t1.auto_deny <= t0.auto_deny)
    assert set(g.forbidden_paths) <= set(merged.forbidden_paths)
    assert set(g.forbidden_commands) <= set(merged.forbidden_commands)
    assert set(g.rules) <= set(merged.rules)
    if g.allowed_commands is not None:
        assert merged.allowed_commands is not None and set(merged.allowed_commands) <= set(g.allowed_commands)
    if g.max_irreversibility_score is not None:
        assert merged.max_irreversibility_score is not None
        assert merged.max_irreversibility_score <= g.max_irreversibility_score
