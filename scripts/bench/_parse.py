"""Implementation of scripts/bench/parse (run with the venv's interpreter).

Prints, in one run:
  * ``shellparse.parse`` latency p50/p90/p99/max over ~1,000 realistic agent commands
    (generated from templates with a fixed seed), in a warm process;
  * the cost of ``import bashlex`` and of the first ``parse()`` in a fresh process,
    without the table cache, with a cold cache (it gets written) and with a warm cache.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

FILES = ["src/main.py", "README.md", "tests/test_app.py", "package.json", "Cargo.toml", "src/lib.rs",
         "app/models/user.rb", "cmd/server/main.go", "docs/index.md", "setup.cfg", "src/utils/helpers.ts",
         "Makefile", ".github/workflows/ci.yml", "pyproject.toml", "src/components/App.tsx"]
DIRS = ["src", "tests", "build", "dist", "node_modules/.cache", "target", "docs", "scripts", "app", "lib"]
WORDS = ["foo", "bar", "TODO", "FIXME", "def main", "import os", "useState", "fn new", "class User", "error"]
BRANCHES = ["main", "feature/login", "fix/issue-42", "develop", "release/1.2"]
PKGS = ["requests", "numpy", "pytest", "lodash", "react", "serde", "express", "typescript"]

TEMPLATES = [
    "git status", "git status --short", "git diff", "git diff --stat {b}", "git log --oneline -{n}",
    "git log -p -n {n} -- {f}", "git show HEAD~{n}:{f}", "git add {f} && git commit -m 'Update {w}'",
    "git checkout -b {b}", "git switch {b}", "git stash && git pull --rebase && git stash pop",
    "git push origin {b}", "git fetch --all --prune", "git branch -a | grep {w}", "git blame -L 1,{n} {f}",
    "git rev-parse --show-toplevel", "git -C {d} status", "git diff --name-only | xargs grep -l '{w}'",
    "ls", "ls -la", "ls -la {d}", "ls {d} | head -{n}", "tree -L 2 {d}", "pwd", "whoami", "date",
    "cat {f}", "head -n {n} {f}", "tail -n {n} {f}", "wc -l {f}", "sed -n '{n},{m}p' {f}",
    "grep -rn '{w}' {d}", "grep -rn --include='*.py' '{w}' .", "rg -n '{w}' {d}", "rg --files | wc -l",
    "find {d} -name '*.py' -type f", "find . -name '*.pyc' -delete", "find {d} -type f -exec wc -l {{}} +",
    "find . -name '*.log' -mtime +7 -exec rm {{}} \\;", "find {d} -maxdepth 2 -type d | sort",
    "python -m pytest -q", "python -m pytest {f} -k '{w}' -x", "pytest -q tests/ 2>&1 | tail -{n}",
    "python -c 'import sys; print(sys.version)'", "python3 -c \"import json; print(json.load(open('{f}')))\"",
    "python3 - <<'EOF'\nimport os\nfor root, dirs, files in os.walk('{d}'):\n    print(root, len(files))\nEOF",
    "python {f} --verbose", "pip install {p}", "pip install -e '.[test]'", "uv pip install {p}",
    "npm install", "npm install --save-dev {p}", "npm test", "npm run build", "npx tsc --noEmit",
    "node -e 'console.log(process.version)'", "yarn lint --fix", "pnpm -r build",
    "cargo build", "cargo test -- --nocapture", "cargo clippy --all-targets", "go test ./...",
    "go build -o bin/app ./cmd/server", "make -j{n}", "make test 2>&1 | tee build.log",
    "mkdir -p {d}/out && cp {f} {d}/out/", "mv {f} {f}.bak", "rm -rf {d}", "rm -f {f}.bak",
    "touch {d}/__init__.py", "chmod +x scripts/*.sh", "ln -sf ../{f} {d}/link",
    "echo '{w}' >> {f}", "printf '%s\\n' '{w}' > /tmp/out.txt",
    "cat > {f} <<'EOF'\nline one {w}\nline two\nEOF", "cat <<EOF > {d}/config.json\n{{\"name\": \"$USER\"}}\nEOF",
    "sed -i 's/{w}/replacement/g' {f}", "sed -i.bak -e '/^#/d' {f}", "awk '{{print $1}}' {f} | sort | uniq -c",
    "awk -F: '$3 > 1000 {{print $1}}' /etc/passwd", "perl -pi -e 's/\\bfoo\\b/bar/g' {f}",
    "jq '.dependencies | keys' package.json", "curl -sSL https://example.com/api | jq .",
    "wget -q -O - https://example.com", "tar czf /tmp/backup.tgz {d}", "unzip -o archive.zip -d {d}",
    "docker build -t app:latest .", "docker compose up -d", "docker ps --format '{{{{.Names}}}}'",
    "kubectl get pods -n default", "ps aux | grep python | grep -v grep", "kill -9 $(pgrep -f server)",
    "lsof -i :{port}", "du -sh {d}/* | sort -h", "df -h", "env | sort", "export PATH=$PATH:$HOME/.local/bin",
    "source .venv/bin/activate && python -m pytest", "cd {d} && ls -la && cd -", "(cd {d} && make)",
    "for f in {d}/*.py; do echo \"$f\"; wc -l \"$f\"; done", "while read -r line; do echo \"$line\"; done < {f}",
    "if [ -f {f} ]; then cat {f}; else echo missing; fi", "[[ -d {d} ]] && echo yes || echo no",
    "test -f {f} && echo exists", "for i in $(seq 1 {n}); do echo $i; done", "echo $((1 + {n}))",
    "case \"$1\" in start) echo start;; stop) echo stop;; *) echo usage;; esac",
    "timeout 30 npm test", "nohup python server.py > server.log 2>&1 &", "sleep {n} && echo done",
    "bash -c 'cd {d} && make test'", "sh -c \"echo $HOME\"", "sudo apt-get install -y {p}",
    "env FOO=bar BAZ=1 python {f}", "FOO=1 npm run dev", "xargs -n 1 echo < {f}",
    "diff -u {f} {f}.bak || true", "patch -p1 < fix.patch", "ssh-keygen -lf ~/.ssh/id_ed25519.pub",
    "git log --format='%H %s' | head -{n}", "echo \"Today is $(date +%Y-%m-%d)\"", "which python3",
    "command -v node >/dev/null && node --version", "type -a python", "realpath {f}", "stat {f}",
    "shellcheck scripts/*.sh", "black --check {d}", "ruff check {d} --fix", "mypy {d} --strict",
    "eslint {d} --ext .ts,.tsx", "prettier --write '{d}/**/*.ts'", "clang-format -i {f}",
    "openssl rand -hex 16", "base64 -d <<< 'aGVsbG8='", "sort -u {f} | comm -23 - other.txt",
    "tr '[:upper:]' '[:lower:]' < {f} > /tmp/lower.txt", "cut -d, -f1,3 data.csv | head",
    "git commit -am \"$(cat <<'EOF'\nFix {w}\n\nLonger description here.\nEOF\n)\"",
    "python -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt",
]


def make_commands(count: int, seed: int = 7) -> list[str]:
    """``count`` realistic agent commands from the templates (deterministic)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        template = TEMPLATES[i % len(TEMPLATES)] if i < len(TEMPLATES) else rng.choice(TEMPLATES)
        out.append(template.format(
            f=rng.choice(FILES), d=rng.choice(DIRS), w=rng.choice(WORDS), b=rng.choice(BRANCHES),
            p=rng.choice(PKGS), n=rng.randint(1, 50), m=rng.randint(51, 200), port=rng.randint(3000, 9000)))
    return out


def latency(commands: list[str]) -> None:
    from clawshell import parsercache, shellparse

    with tempfile.TemporaryDirectory() as cache:
        parsercache.prepare_bashlex(cache)
    for command in commands[:50]:  # warm up
        shellparse.parse(command)
    wall: list[float] = []
    cpu: list[float] = []
    problems = 0
    for _ in range(3):
        for command in commands:
            c0 = time.thread_time()
            t0 = time.perf_counter()
            result = shellparse.parse(command)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
            problems += bool(result.problems)

    print(f"shellparse.parse over {len(commands)} agent commands x3 (warm process)")
    for name, samples in (("wall", wall), ("cpu ", cpu)):
        samples.sort()

        def q(p: float) -> float:
            return samples[min(len(samples) - 1, int(p * len(samples)))] * 1000

        print(f"  {name}  p50 {q(0.50):.3f} ms   p90 {q(0.90):.3f} ms   p99 {q(0.99):.3f} ms"
              f"   max {samples[-1] * 1000:.3f} ms   mean {statistics.mean(samples) * 1000:.3f} ms")
    print(f"  commands with a parse problem: {problems // 3} of {len(commands)}")


FRESH = """
import sys, time
t0 = time.perf_counter()
from clawshell import parsercache
mode = sys.argv[1]
if mode != "none":
    parsercache.prepare_bashlex(sys.argv[2])
t1 = time.perf_counter()
import bashlex
t2 = time.perf_counter()
from clawshell import shellparse
shellparse.parse("git status && ls -la | grep foo")
t3 = time.perf_counter()
print(f"{(t2 - t0) * 1000:.1f} {(t3 - t0) * 1000:.1f}")
"""


def fresh_process(runs: int) -> None:
    print(f"fresh process: import bashlex / first parse() incl. import, median of {runs} runs (ms)")
    with tempfile.TemporaryDirectory() as tmp:
        rows = {"no cache": [], "cold cache (written)": [], "warm cache": []}
        for i in range(runs):
            for name in rows:
                if name == "no cache":
                    args = ["none", ""]
                elif name == "cold cache (written)":
                    args = ["cache", f"{tmp}/cold{i}"]
                else:
                    args = ["cache", f"{tmp}/warm"]
                # the clawshell.model import (dataclasses, typing) is paid by every hot path anyway
                out = subprocess.run([sys.executable, "-c", "import clawshell.model, re\n" + FRESH, *args],
                                     capture_output=True, text=True, check=True).stdout.split()
                rows[name].append((float(out[0]), float(out[1])))
        for name, vals in rows.items():
            imp = statistics.median(v[0] for v in vals)
            first = statistics.median(v[1] for v in vals)
            print(f"  {name:22} import {imp:7.1f}   first parse {first:7.1f}")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.2f} on {os.cpu_count()} CPUs (figures scale with it)")
    latency(make_commands(count))
    fresh_process(runs)


if __name__ == "__main__":
    main()
