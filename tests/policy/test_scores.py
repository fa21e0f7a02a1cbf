"""Irreversibility scores: the action table, command classification, combination, overrides."""

from __future__ import annotations

import dataclasses
import shlex

import pytest

from clawshell.model import Decision, EvalContext, RiskLevel, Thresholds
from clawshell.policy import engine, loader, scores
from clawshell.shellparse import parse

CTX = EvalContext(cwd="/w", workspace="/w", home="/home/u", clawshell_home="/home/u/.clawshell")
SUPERVISED = loader.load_preset("supervised")


def test_seed_table_values() -> None:
    seed = {"read_file": 5, "web_fetch": 10, "write_file": 20, "edit_file": 20, "bash_readonly": 10,
            "bash_write": 35, "package_install": 45, "git_commit": 55, "git_push": 70, "message_send": 80,
            "delete_file": 95, "rm_rf": 98}
    assert {k: scores.default_score(k) for k in seed} == seed
    assert all(0 <= s <= 100 and desc for s, desc in scores.ACTIONS.values())


ANALYZE = [
    # (command, action, mutates, network)
    ("ls -la", "bash_readonly", False, False),
    ("cat a b", "bash_readonly", False, False),
    ("grep -rn x src", "bash_readonly", False, False),
    ("echo hi", "bash_readonly", False, False),
    ("mkdir -p a/b", "bash_write", True, False),
    ("cp a b", "bash_write", True, False),
    ("mv a b", "bash_write", True, False),
    ("rm a", "bash_write", True, False),
    ("rm -r a", "rm_recursive", True, False),
    ("rm -Rf a", "rm_recursive", True, False),
    ("rm --recursive a", "rm_recursive", True, False),
    ("find . -delete", "rm_recursive", True, False),
    ("find . -name '*.o' -delete", "bash_write", True, False),
    ("find . -name x -exec rm -rf {} +", "bash_write", True, False),
    ("find . -exec cat {} ;", "bash_readonly", False, False),
    ("python3 -c 1", "bash_run", True, False),
    ("python3 x.py", "bash_run", True, False),
    ("python3 -m pip install x", "package_install", True, True),
    ("python3 -m venv .venv", "bash_write", True, False),
    ("node -e 1", "bash_run", True, False),
    ("perl -pi -e s/a/b/ f", "bash_write", True, False),
    ("make test", "bash_run", True, False),
    ("pip install -r req.txt", "package_install", True, True),
    ("pip uninstall -y x", "package_install", True, True),
    ("pip list", "bash_readonly", False, False),
    ("npm install", "package_install", True, True),
    ("npm i -D x", "package_install", True, True),
    ("npm ci", "package_install", True, True),
    ("npm test", "bash_run", True, False),
    ("npm run build", "bash_run", True, False),
    ("npm publish", "package_publish", True, True),
    ("npm unpublish x", "package_unpublish", True, True),
    ("yarn", "package_install", True, True),
    ("yarn add x", "package_install", True, True),
    ("pnpm install", "package_install", True, True),
    ("cargo build", "bash_run", True, False),
    ("cargo add serde", "package_install", True, True),
    ("cargo install ripgrep", "package_install", True, True),
    ("cargo publish", "package_publish", True, True),
    ("go test ./...", "bash_run", True, False),
    ("go get x@v1", "package_install", True, True),
    ("go mod tidy", "package_install", True, False),
    ("apt-get install -y jq", "package_install", True, True),
    ("brew install jq", "package_install", True, True),
    ("gem install rails", "package_install", True, True),
    ("gem push x.gem", "package_publish", True, True),
    ("uv add httpx", "package_install", True, True),
    ("uv pip install x", "package_install", True, True),
    ("uv run pytest", "bash_run", True, False),
    ("uv publish", "package_publish", True, True),
    ("poetry add x", "package_install", True, True),
    ("poetry publish", "package_publish", True, True),
    ("twine upload dist/*", "package_publish", True, True),
    ("git status", "git_read", False, False),
    ("git log -p", "git_read", False, False),
    ("git diff", "git_read", False, False),
    ("git branch", "git_read", False, False),
    ("git branch -a --list", "git_read", False, False),
    ("git branch new", "git_stage", True, False),
    ("git branch -d old", "git_merge", True, False),
    ("git branch -D old", "git_branch_delete", True, False),
    ("git add .", "git_stage", True, False),
    ("git commit -m x", "git_commit", True, False),
    ("git commit --amend --no-edit", "git_rebase", True, False),
    ("git revert HEAD", "git_commit", True, False),
    ("git push", "git_push", True, True),
    ("git push origin --delete old", "git_push_delete", True, True),
    ("git push origin :old", "git_push_delete", True, True),
    ("git push --dry-run", "git_read", False, True),
    ("git reset HEAD x", "git_stage", True, False),
    ("git reset --hard", "git_discard", True, False),
    ("git checkout main", "git_stage", True, False),
    ("git checkout -- .", "git_discard", True, False),
    ("git checkout .", "git_discard", True, False),
    ("git restore --staged x", "git_stage", True, False),
    ("git restore x", "git_discard", True, False),
    ("git clean -n", "git_read", False, False),
    ("git clean -fdx", "rm_recursive", True, False),
    ("git stash", "git_stage", True, False),
    ("git stash list", "git_read", False, False),
    ("git stash pop", "git_merge", True, False),
    ("git stash drop", "git_branch_delete", True, False),
    ("git stash clear", "git_discard", True, False),
    ("git rebase -i HEAD~3", "git_rebase", True, False),
    ("git merge feature", "git_merge", True, False),
    ("git pull", "git_merge", True, True),
    ("git fetch origin", "git_fetch", True, True),
    ("git clone https://x/y", "git_fetch", True, True),
    ("git tag v1", "git_stage", True, False),
    ("git tag", "git_read", False, False),
    ("git tag -d v1", "git_branch_delete", True, False),
    ("git filter-branch --tree-filter x", "git_history_destroy", True, False),
    ("git reflog expire --expire=now --all", "git_history_destroy", True, False),
    ("git gc --prune=now", "git_history_destroy", True, False),
    ("git gc", "git_stage", True, False),
    ("git config user.name", "git_read", False, False),
    ("git config --list", "git_read", False, False),
    ("git config user.name me", "bash_write", True, False),
    ("git send-email x.patch", "message_send", True, True),
    ("curl https://x", "web_fetch", False, True),
    ("curl -o f https://x", "bash_write", True, True),
    ("curl -X POST https://api.x/y", "http_mutation", True, True),
    ("curl -XDELETE https://api.x/y", "http_mutation", True, True),
    ("curl --json {} https://api.x/y", "http_mutation", True, True),
    ("curl -d x https://hooks.slack.com/services/T/B/X", "message_send", True, True),
    ("curl -d x https://discord.com/api/webhooks/1/2", "message_send", True, True),
    ("wget https://x/f.tgz", "bash_write", True, True),
    ("wget -O - https://x", "web_fetch", False, True),
    ("wget --post-data=x https://x", "http_mutation", True, True),
    ("http POST https://x a=1", "http_mutation", True, True),
    ("http https://x", "web_fetch", False, True),
    ("ssh host uptime", "remote_exec", True, True),
    ("scp f host:/tmp/", "remote_exec", True, True),
    ("rsync -a src/ host:/srv/", "remote_exec", True, True),
    ("rsync -a --delete src/ dst/", "rm_recursive", True, False),
    ("nc -l 8080", "remote_exec", True, True),
    ("mail -s hi a@b", "message_send", True, True),
    ("sendmail a@b", "message_send", True, True),
    ("slack chat send hi", "message_send", True, True),
    ("signal-cli -u +1 send -m hi +2", "message_send", True, True),
    ("gh pr view 1", "web_fetch", False, True),
    ("gh pr list", "web_fetch", False, True),
    ("gh pr create --fill", "message_send", True, True),
    ("gh pr merge 1", "message_send", True, True),
    ("gh issue comment 1 -b x", "message_send", True, True),
    ("gh repo delete a/b --yes", "repo_delete", True, True),
    ("gh repo create x --public", "repo_admin", True, True),
    ("gh release delete v1", "repo_delete", True, True),
    ("gh api repos/a/b", "web_fetch", False, True),
    ("gh api -X DELETE repos/a/b", "repo_delete", True, True),
    ("gh api repos/a/b/issues -f title=x", "message_send", True, True),
    ("gh secret set X", "repo_admin", True, True),
    ("docker ps -a", "container_read", False, False),
    ("docker build -t x .", "container_build", True, False),
    ("docker run --rm x", "container_run", True, True),
    ("docker compose up -d", "container_run", True, True),
    ("docker compose down", "container_stop", True, False),
    ("docker compose down -v", "container_delete", True, False),
    ("docker stop x", "container_stop", True, False),
    ("docker push x", "container_push", True, True),
    ("docker rm -f x", "container_delete", True, False),
    ("docker image prune -a", "container_delete", True, False),
    ("docker system prune", "container_delete", True, False),
    ("kubectl get pods", "cluster_read", False, True),
    ("kubectl logs x", "cluster_read", False, True),
    ("kubectl apply -f x.yaml", "cluster_apply", True, True),
    ("kubectl -n prod scale deploy x --replicas=0", "cluster_apply", True, True),
    ("kubectl exec -it x -- sh", "cluster_exec", True, True),
    ("kubectl drain node1", "cluster_drain", True, True),
    ("kubectl delete pod x", "cluster_delete", True, True),
    ("helm list", "cluster_read", False, True),
    ("helm upgrade --install x ./chart", "cluster_apply", True, True),
    ("helm uninstall x", "cluster_delete", True, True),
    ("terraform plan", "infra_read", True, True),
    ("terraform validate", "infra_read", False, False),
    ("terraform apply -auto-approve", "infra_apply", True, True),
    ("terraform destroy", "infra_destroy", True, True),
    ("terraform apply -destroy", "infra_destroy", True, True),
    ("terraform state rm x", "infra_state", True, True),
    ("terraform state list", "infra_read", False, True),
    ("pulumi up", "infra_apply", True, True),
    ("pulumi destroy", "infra_destroy", True, True),
    ("pulumi preview", "infra_read", False, True),
    ("cdk deploy", "infra_apply", True, True),
    ("aws s3 ls s3://b", "cloud_read", False, True),
    ("aws s3 cp f s3://b/f", "cloud_mutate", True, True),
    ("aws s3 sync . s3://b --delete", "cloud_delete", True, True),
    ("aws s3 rm s3://b/f", "cloud_delete", True, True),
    ("aws ec2 describe-instances", "cloud_read", False, True),
    ("aws sts get-caller-identity", "cloud_read", False, True),
    ("aws ec2 run-instances --image-id x", "cloud_mutate", True, True),
    ("aws ec2 terminate-instances --instance-ids i-1", "cloud_delete", True, True),
    ("aws iam delete-user --user-name x", "cloud_delete", True, True),
    ("gcloud compute instances list", "cloud_read", False, True),
    ("gcloud compute instances delete x", "cloud_delete", True, True),
    ("gcloud run deploy x --image y", "cloud_mutate", True, True),
    ("az vm list", "cloud_read", False, True),
    ("az group delete -n x", "cloud_delete", True, True),
    ("az vm create -n x", "cloud_mutate", True, True),
    ("heroku apps:destroy x", "cloud_delete", True, True),
    ("vercel deploy --prod", "cloud_mutate", True, True),
    ("kill 1234", "process_signal", True, False),
    ("pkill -f server", "process_signal", True, False),
    ("kill -l", "bash_readonly", False, False),
    ("sudo apt install x", "privilege_escalation", True, False),
    ("su -c id", "privilege_escalation", True, False),
    ("crontab -l", "bash_readonly", False, False),
    ("crontab f", "scheduled_task", True, False),
    ("crontab -r", "delete_file", True, False),
    ("at now + 1 minute", "scheduled_task", True, False),
    ("systemctl status x", "bash_readonly", False, False),
    ("systemctl stop x", "service_control", True, False),
    ("mount /dev/sdb1 /mnt", "system_admin", True, False),
    ("iptables -F", "system_admin", True, False),
    ("ip addr show", "bash_readonly", False, False),
    ("ip link set eth0 down", "system_admin", True, False),
    ("sysctl -w x=1", "system_admin", True, False),
    ("shred -u f", "delete_file", True, False),
    ("tar czf a.tgz d", "bash_write", True, False),
    ("tar xf a.tar -C out", "bash_write", True, False),
    ("tar tf a.tar", "bash_readonly", False, False),
    ("unzip -l a.zip", "bash_readonly", False, False),
    ("jq . f", "bash_readonly", False, False),
    ("yq -i .a=1 f.yaml", "bash_write", True, False),
    ("sed -n p f", "bash_readonly", False, False),
    ("sed -i s/a/b/ f", "bash_write", True, False),
    ("sed 's/a/b/w out' f", "bash_write", True, False),
    ("awk '{print}' f", "bash_readonly", False, False),
    ("awk '{print > \"o\"}' f", "bash_run", True, False),
    ("sort -o o f", "bash_write", True, False),
    ("uniq a b", "bash_write", True, False),
    ("unknown-tool --flag", "bash_run", True, False),
]


@pytest.mark.parametrize(("cmd", "action", "mutates", "network"), ANALYZE, ids=[c for c, *_ in ANALYZE])
def test_analyze(cmd: str, action: str, mutates: bool, network: bool) -> None:
    argv = shlex.split(cmd)
    if argv[0] == "sudo":
        f = scores.analyze(argv)
        assert f.inner == tuple(argv[1:]) and f.wrapper == "sudo"
    f = scores.analyze(argv)
    assert (f.action, f.mutates, f.network) == (action, mutates, network)
    assert f.action in scores.ACTIONS


@pytest.mark.parametrize(("cmd", "paths"), [
    ("cp -r a b dest", [("a", "read"), ("b", "read"), ("dest", "tree")]),
    ("cp -t dest a b", [("a", "read"), ("b", "read"), ("dest", "write")]),
    ("mv a b", [("a", "tree"), ("b", "tree")]),
    ("ln -s target", [("target", "read"), (".", "write")]),
    ("rm -rf a b", [("a", "rdelete"), ("b", "rdelete")]),
    ("rmdir d", [("d", "delete")]),
    ("tee -a x y", [("x", "write"), ("y", "write")]),
    ("dd if=a of=b", [("a", "read"), ("b", "write")]),
    ("chmod -R 755 d", [("d", "tree")]),
    ("chmod --reference=r f", [("r", "read"), ("f", "write")]),
    ("chown me f", [("f", "write")]),
    ("tar xzf a.tgz -C out", [("a.tgz", "read"), ("out", "write")]),
    ("tar -czf a.tgz src", [("a.tgz", "write"), ("src", "read")]),
    ("git clone https://h/o/repo.git", [("repo", "write")]),
    ("git clone https://h/o/repo.git dest", [("dest", "write")]),
    ("curl -o out https://x", [("out", "write")]),
    ("curl -O https://x/f", [(".", "write")]),
    ("curl -T up.txt https://x", [("up.txt", "read")]),
    ("wget -O f https://x", [("f", "write")]),
    ("grep -f pats.txt -r src", [("pats.txt", "read"), ("src", "read")]),
    ("grep x", []),
    ("head -n 5 f", [("f", "read")]),
    ("sed -i.bak -e s/a/b/ f g", [("f", "write"), ("g", "write")]),
    ("find src -name x -delete", [("src", "read"), ("src", "delete")]),
    ("find a b -fprint out", [("a", "read"), ("b", "read"), ("out", "write")]),
    ("install -d a b", [("a", "write"), ("b", "write")]),
    ("truncate -s 0 f", [("f", "write")]),
    ("unzip a.zip -d out", [("a.zip", "read"), ("out", "write")]),
    ("patch -p1 -i x.diff", [("x.diff", "read"), (".", "write")]),
    ("ssh-keygen -f k -N ''", [("k", "write")]),
    ("openssl req -in a.csr -out b.crt", [("a.csr", "read"), ("b.crt", "write")]),
    ("source env.sh", [("env.sh", "read")]),
    ("docker run -v /:/host x", [("/", "tree")]),
    ("docker run -v $PWD:/w:ro x", [("$PWD", "read")]),
    ("pip install --target /opt/x y", [("/opt/x", "write")]),
    ("pip install --user y", [("~/.local", "write")]),
    ("git config --global a.b c", [("~/.gitconfig", "write")]),
    ("git -C /srv/repo status", [("/srv/repo", "read")]),
    ("rsync -a a/ b/", [("a/", "read"), ("b/", "tree")]),
])
def test_paths_a_command_touches(cmd: str, paths: list[tuple[str, str]]) -> None:
    assert scores.analyze(shlex.split(cmd)).paths == paths


@pytest.mark.parametrize(("parts", "warn", "expected"), [
    ([], 40, scores.Combined(0, 0, 0, ())),
    ([("git_read", 10)], 40, scores.Combined(10, 10, 0, ())),
    ([("git_commit", 55), ("git_push", 70)], 40, scores.Combined(80, 70, 10, ("git_commit", "git_push"))),
    ([("git_push", 70), ("git_push", 70)], 40, scores.Combined(70, 70, 0, ("git_push",))),
    ([("bash_write", 35), ("git_push", 70)], 40, scores.Combined(70, 70, 0, ("git_push",))),
    ([("bash_write", 35), ("git_push", 70)], 30, scores.Combined(80, 70, 10, ("bash_write", "git_push"))),
    ([("rm_rf", 98), ("git_push", 70)], 40, scores.Combined(100, 98, 10, ("rm_rf", "git_push"))),
])
def test_combine(parts: list[tuple[str, int]], warn: int, expected: scores.Combined) -> None:
    assert scores.combine(parts, warn) == expected


@pytest.mark.parametrize(("score", "level"), [
    (0, RiskLevel.LOW), (39, RiskLevel.LOW), (40, RiskLevel.MEDIUM), (64, RiskLevel.MEDIUM),
    (65, RiskLevel.HIGH), (94, RiskLevel.HIGH), (95, RiskLevel.CRITICAL), (100, RiskLevel.CRITICAL),
])
def test_thresholds_map_scores_to_levels(score: int, level: RiskLevel) -> None:
    assert Thresholds().level(score) is level


def _judge(cmd: str, **changes: object):
    pol = dataclasses.replace(SUPERVISED, **changes)
    return engine.evaluate(parse(cmd), pol, CTX)


def test_score_overrides_change_the_decision() -> None:
    assert _judge("git push").decision is Decision.APPROVE
    v = _judge("git push", scores=(("git_push", 50),), network=True)
    assert (v.decision, v.score) == (Decision.ALLOW, 50)
    v = _judge("git commit -m x", scores=(("git_commit", 96),))
    assert (v.decision, v.score) == (Decision.DENY, 96)


def test_lower_thresholds_flag_more() -> None:
    v = _judge("git commit -m x", thresholds=Thresholds(warn=20, flag=50, auto_deny=90))
    assert (v.decision, v.risk) == (Decision.APPROVE, RiskLevel.HIGH)
    v = _judge("rm -rf build", thresholds=Thresholds(warn=20, flag=50, auto_deny=80))
    assert v.decision is Decision.DENY


def test_max_irreversibility_score_is_a_ceiling() -> None:
    assert _judge("git commit -m x", max_irreversibility_score=60).decision is Decision.ALLOW
    v = _judge("git commit -m x", max_irreversibility_score=50)
    assert v.decision is Decision.DENY and v.primary is not None and v.primary.rule == "actions.max_score"
    # the chain counts with its drift bonus
    assert _judge("npm install && git commit -m x", max_irreversibility_score=60, network=True).decision \
        is Decision.DENY


def test_rule_scores_feed_the_verdict() -> None:
    v = engine.evaluate(parse("mkfs.ext4 /dev/sdb"), SUPERVISED, CTX)
    assert v.score == 100 and v.risk is RiskLevel.CRITICAL


def test_every_action_name_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "policy.md").read_text()
    missing = [a for a in scores.ACTIONS if f"`{a}`" not in doc]
    assert not missing
