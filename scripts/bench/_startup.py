"""Implementation of scripts/bench/startup (run with the venv's interpreter)."""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N = int(sys.argv[1]) if len(sys.argv) > 1 else 30
BIN = Path(sys.executable).parent
CLAW = str(BIN / "clawshell")


def timed(argv: list[str], env: dict[str, str], cwd: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def startup() -> None:
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        base_env = dict(os.environ, HOME=str(Path(tmp) / "home"), CLAWSHELL_HOME=str(Path(tmp) / "claw"),
                        CLAWSHELL_CWD=str(ws), CLAWSHELL_WARM_IDLE="30")
        (Path(tmp) / "home").mkdir()
        none_home = Path(tmp) / "claw-none"
        (none_home / "config").mkdir(parents=True)
        (none_home / "config" / "policy.toml").write_text('[sandbox]\nbackend = "none"\n')
        rows = {
            "bash -c true": (["bash", "-c", "true"], base_env),
            "python -c pass": ([sys.executable, "-c", "pass"], base_env),
            "python -S -c pass": ([sys.executable, "-S", "-c", "pass"], base_env),
            "bwrap (cap-drop) bash -c true": (["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                               "--unshare-all", "--cap-drop", "ALL", "--die-with-parent",
                                               "--new-session", "bash", "-c", "true"], base_env),
            "clawshell -c true (sandbox=none, cold)": ([CLAW, "-c", "true"], dict(base_env, CLAWSHELL_WARM="0",
                                                                                 CLAWSHELL_HOME=str(none_home))),
            "clawshell -c true (sandbox=none, warm)": ([CLAW, "-c", "true"], dict(base_env,
                                                                                 CLAWSHELL_HOME=str(none_home))),
            "clawshell -c true (default, cold)": ([CLAW, "-c", "true"], dict(base_env, CLAWSHELL_WARM="0")),
            "clawshell -c true (default, warm)": ([CLAW, "-c", "true"], base_env),
        }
        for argv, env in rows.values():  # warm caches (parser tables, probe, BPF) and start the servers
            for _ in range(2):
                timed(argv, env, str(ws))
        time.sleep(2)
        samples: dict[str, list[float]] = {k: [] for k in rows}
        for _ in range(N):  # interleaved so drift hits every row alike
            for name, (argv, env) in rows.items():
                samples[name].append(timed(argv, env, str(ws)))
        py = statistics.median(samples["python -c pass"])
        bw = statistics.median(samples["bwrap (cap-drop) bash -c true"])
        print(f"start-up, median of {N} interleaved runs")
        print(f"{'command':40} {'median ms':>10} {'p90 ms':>8} {'x python':>9} {'x bwrap':>8}")
        for name, vals in samples.items():
            med = statistics.median(vals)
            p90 = sorted(vals)[int(0.9 * (len(vals) - 1))]
            print(f"{name:40} {med * 1000:10.1f} {p90 * 1000:8.1f} {med / py:9.2f} {med / bw:8.2f}")
        from clawshell import warm

        for home in (base_env["CLAWSHELL_HOME"], str(none_home)):
            warm.stop(home)
        deadline = time.monotonic() + 10
        while any(warm.servers(h) for h in (base_env["CLAWSHELL_HOME"], str(none_home))) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # spares end with their server (parent-death signal)


COMMANDS = [
    "git status", "git diff --stat", "git log --oneline -20", "ls -la", "ls src", "cat README.md",
    "grep -rn 'def main' src", "rg -n TODO", "pytest -q", "python -m pytest tests/test_x.py -k foo",
    "npm test", "npm run build", "npm install", "cargo build --release", "cargo test", "make -j4",
    "python -c 'import sys; print(sys.version)'", "sed -i 's/foo/bar/g' src/a.py", "mkdir -p build/out",
    "echo hello > out.txt", "cat <<'EOF' > notes.md\nhello\nEOF", "find . -name '*.py' | xargs wc -l",
    "cd src && ls", "git add -A && git commit -m 'wip'", "git push origin main", "rm -rf build",
    "curl -s https://example.com", "pip install -r requirements.txt", "head -50 src/main.py",
    "tail -f /dev/null & sleep 0", "for f in *.py; do echo $f; done", "diff a.txt b.txt || true",
    "tar czf out.tgz src", "docker ps", "kubectl get pods", "cat ~/.ssh/id_rsa", "rm -rf /",
    "bash -c 'echo nested && ls'", "env FOO=1 python script.py", "timeout 10 npm test",
    "export X=1; echo $X", "jq .name package.json", "awk '{print $1}' file.txt | sort | uniq -c",
    "python3 - <<'EOF'\nprint('hi')\nEOF", "git checkout -b feature/x", "go test ./...",
    "node -e 'console.log(1)'", "wc -l $(git ls-files)", "chmod +x scripts/run.sh",
]


def decision_latency() -> None:
    from clawshell.home import Home
    from clawshell.parsercache import prepare_bashlex
    from clawshell.pipeline import eval_context
    from clawshell.policy.engine import evaluate
    from clawshell.policy.loader import load_policy
    from clawshell.shellparse import parse

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = str(Path(tmp) / "home")
        os.environ["CLAWSHELL_HOME"] = str(Path(tmp) / "claw")
        home = Home.from_env()
        prepare_bashlex(home.cache)
        policy = load_policy(home, tmp, None)
        ctx = eval_context(tmp, tmp, home, "bench", os.environ)
        rng = random.Random(7)
        cmds = [rng.choice(COMMANDS) + ("" if rng.random() < 0.6 else f" && echo {i}") for i in range(1000)]
        for c in cmds[:50]:
            evaluate(parse(c), policy, ctx)
        lat = []
        for c in cmds:
            t0 = time.perf_counter()
            evaluate(parse(c), policy, ctx)
            lat.append(time.perf_counter() - t0)
        lat.sort()
        print(f"\ndecision latency (parse + evaluate) over {len(cmds)} agent commands:"
              f" p50 {lat[500] * 1000:.3f} ms, p99 {lat[989] * 1000:.3f} ms, max {lat[-1] * 1000:.3f} ms")


if __name__ == "__main__":
    startup()
    decision_latency()
