"""Irreversibility scores (pure): the action table and what each command does.

:data:`ACTIONS` is the seed table (read 5, fetch 10, write 20, read-only bash 10, bash
write 35, package install 45, git commit 55, git push 70, message send 80, delete 95,
rm -rf 98) extended to the commands agents run most.  Every name can be overridden
in ``[actions.scores]``.

:func:`analyze` looks at one argv and says which action it is, which paths it reads,
writes or deletes, whether it can change state (readonly autonomy) and whether it
needs the network.  :func:`combine` scores a whole command line: the riskiest part
plus a drift bonus of :data:`DRIFT_BONUS` when two or more *distinct* actions are at
or above ``warn``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from .paths import LazyPattern
from .rules import git_split

DRIFT_BONUS = 10
"""Added to a compound command with two or more distinct actions at or above ``warn``."""

ACTIONS: dict[str, tuple[int, str]] = {
    # file tools and the seed table
    "read_file": (5, "file tool read"),
    "list_dir": (5, "file tool list"),
    "web_fetch": (10, "network read (curl/wget GET, git fetch)"),
    "write_file": (20, "file tool write"),
    "edit_file": (20, "file tool edit"),
    "delete_file": (95, "file tool delete; shell delete outside the workspace; shred"),
    "bash_readonly": (10, "read-only shell command (ls, cat, grep, git diff ...)"),
    "bash_write": (35, "shell write inside the workspace (mkdir, cp, mv, sed -i, rm FILE, > file)"),
    "bash_run": (35, "running a program, script, build, test or inline interpreter code"),
    "package_install": (45, "package install/remove/update (pip, npm, cargo, apt ...)"),
    "git_commit": (55, "git commit, revert, am"),
    "git_push": (70, "git push"),
    "message_send": (80, "sending a message (mail, slack, webhooks, gh pr/issue create/comment)"),
    "rm_recursive": (80, "recursive delete inside the workspace (rm -r, find -delete, git clean -f)"),
    "rm_rf": (98, "recursive delete outside the workspace"),
    # packages
    "package_publish": (90, "publishing a package (npm/cargo/poetry/uv publish, twine upload, gem push)"),
    "package_unpublish": (95, "unpublishing or yanking a package"),
    # git
    "git_read": (10, "git status/log/diff/show/branch list ..."),
    "git_fetch": (20, "git fetch/clone/pull into the workspace"),
    "git_stage": (20, "git add, checkout BRANCH, switch, stash, init, branch NEW, tag"),
    "git_merge": (40, "git merge, cherry-pick, pull with merge, stash pop"),
    "git_rebase": (45, "git rebase, commit --amend (local history rewrite)"),
    "git_branch_delete": (60, "git branch -D, stash drop, tag -d, worktree remove --force"),
    "git_discard": (75, "git reset --hard, checkout -- PATH, restore PATH, stash clear"),
    "git_push_delete": (90, "git push --delete / :branch (deletes a remote ref)"),
    "git_history_destroy": (90, "git filter-branch/filter-repo, reflog expire, gc --prune=now"),
    # network
    "http_mutation": (70, "HTTP POST/PUT/PATCH/DELETE (curl, wget, httpie)"),
    "remote_exec": (70, "ssh/scp/rsync to a remote host, nc/socat"),
    # containers / clusters / infra / cloud
    "container_read": (10, "docker ps/images/logs/inspect"),
    "container_build": (35, "docker build/pull/tag"),
    "container_run": (45, "docker run/exec/start, compose up"),
    "container_stop": (60, "docker stop/kill, compose down"),
    "container_push": (70, "docker push/login"),
    "container_delete": (90, "docker rm/rmi/prune, volume rm"),
    "cluster_read": (10, "kubectl get/describe/logs, helm list/status"),
    "cluster_exec": (60, "kubectl exec/port-forward/cp"),
    "cluster_apply": (70, "kubectl apply/create/patch/scale/rollout, helm install/upgrade"),
    "cluster_drain": (85, "kubectl drain"),
    "cluster_delete": (95, "kubectl delete, helm uninstall"),
    "infra_read": (10, "terraform plan/validate/show, pulumi preview"),
    "infra_apply": (80, "terraform apply, pulumi up, cdk deploy, ansible-playbook"),
    "infra_state": (85, "terraform import/state rm/mv/push/taint/force-unlock"),
    "infra_destroy": (98, "terraform destroy, pulumi destroy, cdk destroy"),
    "cloud_read": (10, "aws describe-*/list-*/get-*, gcloud/az list/describe/show"),
    "cloud_mutate": (70, "aws/gcloud/az create/update/deploy, s3 cp/sync"),
    "cloud_delete": (95, "aws delete-*/terminate-*, s3 rm/rb, gcloud/az delete"),
    # hosting / repos
    "repo_admin": (70, "gh repo create/fork/edit, gh workflow run, gh secret set"),
    "repo_delete": (98, "gh repo delete/archive, gh release delete"),
    # system
    "process_signal": (40, "kill/pkill/killall"),
    "privilege_escalation": (75, "sudo/doas/su"),
    "scheduled_task": (80, "crontab/at/batch (runs later, outside clawshell)"),
    "service_control": (80, "systemctl/service start/stop/enable ..."),
    "system_admin": (80, "mount, iptables, useradd, sysctl -w, modprobe ..."),
}
"""Action name -> (default score, what it covers)."""


def default_score(name: str) -> int:
    """Default score of action ``name`` (KeyError when unknown)."""
    return ACTIONS[name][0]


def score_of(name: str, overrides: Mapping[str, int]) -> int:
    """Score of action ``name`` with ``[actions.scores]`` overrides applied."""
    if name in overrides:
        return overrides[name]
    return ACTIONS[name][0]


@dataclass(frozen=True)
class Combined:
    """Score of a whole command line."""

    score: int
    """Riskiest part plus the drift bonus, capped at 100."""
    base: int
    """Riskiest part alone."""
    bonus: int
    """Drift bonus applied (0 or :data:`DRIFT_BONUS`)."""
    drifting: tuple[str, ...]
    """Distinct actions at or above warn (two or more earn the bonus)."""


def combine(parts: Sequence[tuple[str, int]], warn: int) -> Combined:
    """Combine ``(action, score)`` parts: max plus a drift bonus (see module docstring)."""
    if not parts:
        return Combined(0, 0, 0, ())
    base = max(s for _, s in parts)
    hot = tuple(dict.fromkeys(a for a, s in parts if s >= warn))
    bonus = DRIFT_BONUS if len(hot) >= 2 else 0
    return Combined(min(100, base + bonus), base, bonus, hot)


# --------------------------------------------------------------------------- analysis

READ, WRITE, TREE, DELETE, RDELETE = "read", "write", "tree", "delete", "rdelete"
"""Path access modes: read; create/modify; modify a whole tree (``chmod -R``, ``mv``
source); remove; remove recursively."""


@dataclass
class Facts:
    """What one simple command does (built by :func:`analyze`)."""

    action: str = "bash_run"
    """Action name (key of :data:`ACTIONS`)."""
    paths: list[tuple[str, str]] = field(default_factory=list)
    """``(word, mode)`` pairs; words are as written (the engine expands them)."""
    mutates: bool = True
    """Can change state (denied under readonly)."""
    network: bool = False
    """Needs the network to do its job."""
    known: bool = True
    """False for commands this table does not know (path-looking args are read-checked)."""
    inner: tuple[str, ...] | None = None
    """Argv of a wrapped command (``sudo X``, ``env A=1 X``) not yet unwrapped."""
    assignments: tuple[tuple[str, str], ...] = ()
    """``NAME=value`` pairs set by this command (``env``, ``export`` ...)."""
    wrapper: str = ""
    """Name of the wrapper when ``inner`` is set."""

    def read(self, *words: str) -> "Facts":
        """Record read paths."""
        self.paths.extend((w, READ) for w in words if w and w != "-")
        return self

    def write(self, *words: str, mode: str = WRITE) -> "Facts":
        """Record written paths."""
        self.paths.extend((w, mode) for w in words if w and w != "-")
        return self


def parse_opts(args: Sequence[str], short_val: str = "", long_val: Iterable[str] = (),
               posix: bool = False) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Split ``args`` into options and operands, getopt-style.

    ``short_val``: short options taking a value; ``long_val``: long options taking a
    value as the next word; ``posix``: options end at the first operand."""
    long_val = frozenset(long_val)
    opts: list[tuple[str, str | None]] = []
    operands: list[str] = []
    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        if a == "--":
            operands.extend(args[i + 1:])
            break
        if a.startswith("--") and len(a) > 2:
            name, eq, val = a.partition("=")
            if eq:
                opts.append((name, val))
            elif name in long_val and i + 1 < n:
                opts.append((name, args[i + 1]))
                i += 1
            else:
                opts.append((name, None))
        elif a.startswith("-") and len(a) > 1 and not _NUMBER.match(a):
            j = 1
            while j < len(a):
                c = a[j]
                if c in short_val:
                    val = a[j + 1:]
                    if not val and i + 1 < n:
                        val = args[i + 1]
                        i += 1
                    opts.append(("-" + c, val))
                    break
                opts.append(("-" + c, None))
                j += 1
        else:
            operands.append(a)
            if posix:
                operands.extend(args[i + 1:])
                break
        i += 1
    return opts, operands


_NUMBER = LazyPattern(r"^-\d+$")


def _has(opts: Sequence[tuple[str, str | None]], *names: str) -> bool:
    return any(o in names for o, _ in opts)


def _vals(opts: Sequence[tuple[str, str | None]], *names: str) -> list[str]:
    return [v for o, v in opts if o in names and v is not None]


def _cmd(argv: Sequence[str]) -> str:
    return argv[0].rsplit("/", 1)[-1] if argv else ""


# ---- plain readers / writers ------------------------------------------------------

NO_PATH_READONLY = frozenset({
    "echo", "printf", "true", "false", ":", "test", "[", "[[", "pwd", "whoami", "id", "uname", "date",
    "hostname", "basename", "dirname", "seq", "sleep", "printenv", "which", "type", "hash", "expr", "tr",
    "cal", "uptime", "nproc", "arch", "tty", "groups", "locale", "getconf", "wait", "jobs", "help",
    "history", "umask", "set", "shopt", "unset", "shift", "exit", "return", "break", "continue", "read",
    "getopts", "let", "times", "ulimit", "ps", "free", "df", "lsblk", "lscpu", "w", "who", "pgrep",
    "pidof", "man", "info", "whatis", "apropos", "bc", "dc", "factor", "numfmt", "cd", "pushd", "popd",
    "dirs", "alias", "unalias", "logname", "users", "env", "clear", "tput", "stty", "yes", "nl",
    "lsof", "ss", "netstat", "vmstat", "iostat", "top", "htop", "dmesg", "getent", "export", "declare", "typeset", "local", "readonly", "sha1sum", "tldr", "fg", "bg", "disown",
    "command", "builtin", "compgen", "complete", "enable", "caller", "cksum", "sum",
})
"""Commands whose arguments are not paths and which change no files (readonly-safe;
``env``/``command``/``builtin`` as such, their wrapped command is judged on its own)."""

# name -> (short options taking values, long options taking values, options naming a written file)
READERS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "cat": ("", (), ()), "tac": ("s", (), ()), "less": ("bhjkpPtTxyz", (), ()), "more": ("n", (), ()),
    "bat": ("lmHr", ("--language", "--line-range", "--highlight-line", "--theme", "--style"), ()),
    "head": ("nc", ("--lines", "--bytes"), ()), "tail": ("ncs", ("--lines", "--bytes", "--pid", "--sleep-interval"), ()),
    "wc": ("", (), ()), "file": ("mfFeP", (), ()), "stat": ("c", ("--format", "--printf"), ()),
    "md5sum": ("", (), ()), "sha256sum": ("", (), ()), "sha512sum": ("", (), ()), "sha224sum": ("", (), ()),
    "sha384sum": ("", (), ()), "b2sum": ("l", (), ()), "hexdump": ("nsef", (), ()), "od": ("AjNStw", (), ()),
    "strings": ("nte", (), ()), "diff": ("UCxXSFIL", ("--label", "--exclude", "--exclude-from"), ()),
    "cmp": ("in", (), ()), "comm": ("", (), ()), "paste": ("d", (), ()), "join": ("12jteo", (), ()),
    "column": ("cstoNRdHWEl", (), ()), "fold": ("w", (), ()), "fmt": ("wpg", (), ()),
    "expand": ("t", (), ()), "unexpand": ("t", (), ()), "rev": ("", (), ()),
    "iconv": ("fto", ("--from-code", "--to-code", "--output"), ("-o", "--output")),
    "zcat": ("", (), ()), "bzcat": ("", (), ()), "xzcat": ("", (), ()), "zless": ("", (), ()),
    "readlink": ("", (), ()), "realpath": ("", ("--relative-to", "--relative-base"), ()),
    "ls": ("IwT", ("--ignore", "--hide", "--width", "--tabsize", "--format", "--sort", "--time-style", "--block-size"), ()),
    "tree": ("LPIoH", ("--filelimit", "--timefmt"), ("-o",)), "du": ("dBtX", ("--max-depth", "--exclude", "--threshold"), ()),
    "pr": ("hlwo", (), ()), "base64": ("w", ("--wrap",), ()), "base32": ("w", ("--wrap",), ()),
    "sort": ("kotTS", ("--key", "--output", "--field-separator", "--temporary-directory", "--buffer-size"),
             ("-o", "--output")),
    "shuf": ("ion", ("--output", "--input-range", "--head-count", "--random-source"), ("-o", "--output")),
    "cut": ("dfbc", ("--delimiter", "--fields", "--bytes", "--characters", "--output-delimiter"), ()),
    "look": ("t", (), ()), "tsort": ("", (), ()), "xmllint": ("", ("--xpath", "--output"), ("--output",)),
    "sha1sum": ("", (), ()), "cksum": ("", (), ()), "view": ("", (), ()), "zgrep": ("e", (), ()),
    "vdir": ("", (), ()), "dir": ("", (), ()), "lsattr": ("", (), ()), "getfacl": ("", (), ()),
    "namei": ("", (), ()), "ldd": ("", (), ()),
    "nm": ("", (), ()), "objdump": ("j", (), ()), "readelf": ("", (), ()), "size": ("", (), ()),
    "pdftotext": ("fl", (), ()), "identify": ("", (), ()), "exiftool": ("", (), ()),
}
"""Commands whose operands are all read (plus options that name a written file)."""


def _reader(argv: Sequence[str]) -> Facts:
    short_val, long_val, writes = READERS[_cmd(argv)]
    opts, ops = parse_opts(argv[1:], short_val, long_val)
    f = Facts("bash_readonly", mutates=False).read(*ops)
    outs = _vals(opts, *writes) if writes else []
    if outs:
        f.write(*outs)
        f.action, f.mutates = "bash_write", True
    if _cmd(argv) in ("ls", "tree", "du", "vdir", "dir") and not ops:
        f.read(".")
    return f


def _uniq(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "fsw", ("--skip-fields", "--skip-chars", "--check-chars"))
    f = Facts("bash_readonly", mutates=False).read(*ops[:1])
    if len(ops) > 1:
        f.write(ops[1])
        f.action, f.mutates = "bash_write", True
    return f


def _xxd(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "cglsoO")
    f = Facts("bash_readonly", mutates=False).read(*ops[:1])
    if len(ops) > 1:
        f.write(ops[1])
        f.action, f.mutates = "bash_write", True
    return f


def _grep(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    if name in ("rg", "ripgrep"):
        opts, ops = parse_opts(argv[1:], "efgmABCtTMjE", (
            "--regexp", "--file", "--glob", "--iglob", "--max-count", "--context", "--after-context",
            "--before-context", "--type", "--type-not", "--type-add", "--threads", "--encoding", "--pre",
            "--pre-glob", "--max-depth", "--max-filesize", "--sort", "--sortr", "--replace", "--colors",
            "--path-separator", "--max-columns", "--ignore-file", "--engine"))
        recursive = True
    else:
        opts, ops = parse_opts(argv[1:], "efmABCdD", (
            "--regexp", "--file", "--max-count", "--after-context", "--before-context", "--context",
            "--include", "--exclude", "--exclude-dir", "--label", "--exclude-from", "--devices",
            "--directories", "--binary-files", "--group-separator"))
        recursive = _has(opts, "-r", "-R", "--recursive", "--dereference-recursive") or name in ("ag", "ack")
    f = Facts("bash_readonly", mutates=False)
    f.read(*_vals(opts, "-f", "--file", "--ignore-file"))
    if not _has(opts, "-e", "--regexp", "-f", "--file") and ops:
        ops = ops[1:]
    f.read(*ops)
    if not ops and recursive:
        f.read(".")
    if _has(opts, "--pre"):
        f.action, f.mutates = "bash_run", True
    return f


_AWK_UNSAFE = LazyPattern(r"system\s*\(|\||>|\bgetline\b|\bfflush\b")


def _awk(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "fvF", ("--file", "--assign", "--field-separator", "--include", "--load"))
    f = Facts("bash_readonly", mutates=False)
    progfiles = _vals(opts, "-f", "--file")
    f.read(*progfiles)
    if progfiles:
        f.action, f.mutates = "bash_run", True
    elif ops:
        prog, ops = ops[0], ops[1:]
        if _AWK_UNSAFE.search(prog):
            f.action, f.mutates = "bash_run", True
    f.read(*[o for o in ops if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", o)])
    return f


_SED_WRITES = LazyPattern(r"(?:^|[;{}\n/]|\s)\d*[wWe](?:\s|$|;)|/[gpIiMm0-9]*w\s")


def _sed(argv: Sequence[str]) -> Facts:
    args = list(argv[1:])
    inplace = False
    cleaned = []
    for a in args:
        if a.startswith("--in-place") or re.match(r"^-[a-zA-Z]*i", a) and not a.startswith("--"):
            inplace = True
            # drop the -i (and an attached suffix); keep the other letters of a cluster
            if a.startswith("--"):
                continue
            head = a[1:a.index("i")]
            if head:
                cleaned.append("-" + head)
            continue
        cleaned.append(a)
    opts, ops = parse_opts(cleaned, "efl", ("--expression", "--file", "--line-length"))
    scripts = _vals(opts, "-e", "--expression")
    files = _vals(opts, "-f", "--file")
    if not scripts and not files and ops:
        scripts, ops = [ops[0]], ops[1:]
    f = Facts("bash_readonly", mutates=False).read(*files)
    if any(_SED_WRITES.search(s) for s in scripts):
        f.action, f.mutates = "bash_write", True
    if inplace:
        f.action, f.mutates = "bash_write", True
        f.write(*ops)
    else:
        f.read(*ops)
    return f


def _find(argv: Sequence[str]) -> Facts:
    args = list(argv[1:])
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P", "-D", "-O") or (i < len(args) and re.match(r"^-O\d$", args[i])):
        i += 2 if args[i] == "-D" else 1
    roots = []
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", "!", ")", ",")):
        roots.append(args[i])
        i += 1
    expr = args[i:]
    roots = roots or ["."]
    f = Facts("bash_readonly", mutates=False).read(*roots)
    filtered = any(e in ("-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename", "-newer",
                         "-mtime", "-mmin", "-size") for e in expr)
    if "-delete" in expr:
        f.action, f.mutates = ("bash_write" if filtered else "rm_recursive"), True
        f.write(*roots, mode=DELETE if filtered else RDELETE)
    for k, e in enumerate(expr):
        if e in ("-fprint", "-fprint0", "-fprintf", "-fls") and k + 1 < len(expr):
            f.write(expr[k + 1])
            f.action, f.mutates = "bash_write", True
        if e in ("-exec", "-execdir", "-ok", "-okdir") and k + 1 < len(expr):
            inner = []
            for w in expr[k + 1:]:
                if w in (";", "+"):
                    break
                inner.append(w)
            if inner:
                sub = analyze(tuple(inner))
                if sub.mutates:
                    f.mutates = True
                    if sub.action in ("bash_write", "rm_recursive", "delete_file", "rm_rf"):
                        deleting = _cmd(inner) in ("rm", "rmdir", "unlink", "shred")
                        recursive = deleting and any(re.match(r"^-[a-zA-Z]*[rR]", w) or w == "--recursive"
                                                     for w in inner[1:])
                        mode = (RDELETE if recursive else DELETE) if deleting else TREE
                        f.write(*roots, mode=mode)
                        if deleting and not filtered:
                            f.action = "rm_recursive"
                        elif f.action == "bash_readonly":
                            f.action = "bash_write"
                    elif f.action == "bash_readonly":
                        f.action = "bash_run"
    return f


def _cp_like(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    short = {"cp": "tS", "mv": "tS", "install": "gmoSt", "ln": "tS"}[name]
    opts, ops = parse_opts(argv[1:], short, ("--target-directory", "--suffix", "--mode", "--owner", "--group"))
    f = Facts("bash_write")
    targets = _vals(opts, "-t", "--target-directory")
    recursive = _has(opts, "-r", "-R", "-a", "--recursive", "--archive")
    if name == "install" and _has(opts, "-d", "--directory"):
        return f.write(*ops)
    if targets:
        sources, dest = ops, targets[-1]
    elif len(ops) >= 2:
        sources, dest = ops[:-1], ops[-1]
    elif name == "ln" and ops:
        sources, dest = ops, "."
    else:
        sources, dest = ops, ""
    if name == "mv":
        f.write(*sources, mode=TREE)
        f.write(dest, mode=TREE)
    else:
        f.read(*sources)
        f.write(dest, mode=TREE if recursive else WRITE)
    return f


def _rm(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    opts, ops = parse_opts(argv[1:], "")
    recursive = name == "rm" and _has(opts, "-r", "-R", "--recursive")
    f = Facts("rm_recursive" if recursive else "bash_write")
    return f.write(*ops, mode=RDELETE if recursive else DELETE)


def _shred(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "nsx", ("--iterations", "--size", "--random-source"))
    return Facts("delete_file").write(*ops)


def _simple_writer(short_val: str = "", long_val: tuple[str, ...] = (), reads: tuple[str, ...] = ()) -> Callable[[Sequence[str]], Facts]:
    def handler(argv: Sequence[str]) -> Facts:
        opts, ops = parse_opts(argv[1:], short_val, long_val)
        f = Facts("bash_write").write(*ops)
        f.read(*_vals(opts, *reads))
        return f
    return handler


def _dd(argv: Sequence[str]) -> Facts:
    f = Facts("bash_write")
    for a in argv[1:]:
        if a.startswith("if="):
            f.read(a[3:])
        elif a.startswith("of="):
            f.write(a[3:])
    return f


def _chmod(argv: Sequence[str]) -> Facts:
    args = list(argv[1:])
    # chmod modes like -w or -x look like options: treat "-[rwxXst]+" as a mode operand
    mode_like = [a for a in args if re.fullmatch(r"-[rwxXstugo]+", a)]
    opts, ops = parse_opts([a for a in args if a not in mode_like], "", ("--reference",))
    refs = _vals(opts, "--reference")
    if not refs and not mode_like and ops:
        ops = ops[1:]
    recursive = _has(opts, "-R", "--recursive")
    return Facts("bash_write").read(*refs).write(*ops, mode=TREE if recursive else WRITE)


def _tar(argv: Sequence[str]) -> Facts:
    args = list(argv[1:])
    if args and not args[0].startswith("-") and re.fullmatch(r"[A-Za-z]+", args[0]):
        # old style: "tar xzf archive": letters are flags, values follow in order
        letters = args[0]
        rest = args[1:]
        new: list[str] = []
        for c in letters:
            if c in "fCTXbgKLNV" and rest:
                new += ["-" + c, rest.pop(0)]
            else:
                new.append("-" + c)
        args = new + rest
    opts, ops = parse_opts(args, "fCTXbgKLNVIH", (
        "--file", "--directory", "--files-from", "--exclude-from", "--use-compress-program", "--exclude",
        "--transform", "--owner", "--group", "--mode", "--format", "--newer", "--label"))
    archives = _vals(opts, "-f", "--file")
    dirs = _vals(opts, "-C", "--directory")
    f = Facts("bash_readonly", mutates=False)
    f.read(*_vals(opts, "-T", "--files-from", "-X", "--exclude-from"))
    if _has(opts, "-x", "--extract", "--get"):
        f.action, f.mutates = "bash_write", True
        f.read(*archives)
        f.write(*(dirs or ["."]), mode=WRITE)
    elif _has(opts, "-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--delete"):
        f.action, f.mutates = "bash_write", True
        f.write(*archives)
        base = dirs[-1] if dirs else None
        f.read(*[(base.rstrip("/") + "/" + o) if base and not o.startswith(("/", "~")) else o for o in ops])
    else:  # -t list
        f.read(*archives)
    return f


def _unzip(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "dxP", ())
    f = Facts("bash_readonly", mutates=False).read(*ops[:1])
    if _has(opts, "-l", "-v", "-t", "-Z", "-z") or _has(opts, "-p"):
        return f
    f.action, f.mutates = "bash_write", True
    return f.write(*(_vals(opts, "-d") or ["."]))


def _zip(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "bntxiPOZs", ())
    f = Facts("bash_write")
    if ops:
        f.write(ops[0])
        f.read(*ops[1:])
    return f


def _compress(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "bSTL", ("--suffix",))
    if _has(opts, "-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test"):
        return Facts("bash_readonly", mutates=False).read(*ops)
    return Facts("bash_write").write(*ops)


def _patch(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "pdioBDFrVYzg", ("--input", "--output", "--directory", "--strip",
                                                      "--reject-file", "--backup-if-mismatch", "--prefix"))
    f = Facts("bash_write").read(*_vals(opts, "-i", "--input"))
    f.write(*_vals(opts, "-o", "--output"))
    if _has(opts, "--dry-run"):
        f.action, f.mutates = "bash_readonly", False
        return f
    if ops:
        f.write(ops[0])
        f.read(*ops[1:])
    else:
        f.write(*(_vals(opts, "-d", "--directory") or ["."]))
    return f


def _editor(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "cSTuUiwW", ())
    return Facts("bash_write").write(*[o for o in ops if not o.startswith("+")])


def _split(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "abClnt", ("--bytes", "--lines", "--line-bytes", "--number",
                                                 "--suffix-length", "--additional-suffix", "--separator"))
    f = Facts("bash_write").read(*ops[:1])
    return f.write(ops[1] if len(ops) > 1 else ".")


def _tee(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "", ("--output-error",))
    return Facts("bash_write").write(*ops)


def _source(argv: Sequence[str]) -> Facts:
    return Facts("bash_run").read(*argv[1:2])


def _openssl(argv: Sequence[str]) -> Facts:
    f = Facts("bash_run")
    args = list(argv[1:])
    for k, a in enumerate(args[:-1]):
        if a in ("-in", "-inkey", "-CAfile", "-signkey", "-certfile", "-key", "-cert", "-CA", "-CAkey", "-passin"):
            f.read(args[k + 1])
        elif a in ("-out", "-keyout", "-certout"):
            f.write(args[k + 1])
    return f


def _ssh_keygen(argv: Sequence[str]) -> Facts:
    opts, _ops = parse_opts(argv[1:], "abCEfFGIJKmMnNOPrSsTtVwYZz", ())
    f = Facts("bash_write")
    files = _vals(opts, "-f")
    if _has(opts, "-l", "-y", "-F", "-L", "-B"):
        f.action, f.mutates = "bash_readonly", False
        return f.read(*files)
    return f.write(*files)


def _sqlite(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "", ("-cmd", "-separator", "-newline", "-nullvalue"))
    return Facts("bash_run").write(*ops[:1])


# ---- git -------------------------------------------------------------------------

GIT_READ = frozenset({
    "status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame", "describe", "shortlog",
    "grep", "cat-file", "whatchanged", "show-ref", "for-each-ref", "rev-list", "name-rev", "count-objects",
    "fsck", "check-ignore", "check-attr", "merge-base", "var", "version", "help", "diff-tree", "diff-files",
    "diff-index", "range-diff", "cherry", "show-branch", "annotate", "verify-commit", "verify-tag",
    "request-pull", "ls-remote", "difftool", "log-tree", "reflog-show", "check-ref-format", "get-tar-commit-id",
})


def _git(argv: Sequence[str]) -> Facts:
    gopts, rest = git_split(argv)
    f = Facts("git_stage")
    for o, v in gopts:
        if o in ("-C", "--git-dir", "--work-tree") and v:
            f.read(v)
    if not rest:
        f.action, f.mutates = "git_read", False
        return f
    sub, args = rest[0], rest[1:]
    opts, ops = parse_opts(args, "", ())

    def act(name: str, mutates: bool = True, network: bool = False) -> Facts:
        f.action, f.mutates, f.network = name, mutates, network
        return f

    if sub in GIT_READ:
        act("git_read", False, sub == "ls-remote")
        if sub in ("diff", "log", "show") and _has(opts, "--output"):
            f.write(*_vals(opts, "--output"))
            act("bash_write")
        return f
    if sub == "branch":
        if _has(opts, "-D") or (_has(opts, "-d", "--delete") and _has(opts, "-f", "--force")):
            return act("git_branch_delete")
        if _has(opts, "-d", "--delete"):
            return act("git_merge")
        if _has(opts, "-m", "-M", "-c", "-C", "--move", "--copy", "-u", "--set-upstream-to",
                "--unset-upstream", "--edit-description") or (ops and not _has(opts, "-l", "--list", "--contains",
                                                                             "--merged", "--no-merged", "--points-at")):
            return act("git_stage")
        return act("git_read", False)
    if sub == "tag":
        if _has(opts, "-d", "--delete"):
            return act("git_branch_delete")
        if ops and not _has(opts, "-l", "--list", "--contains", "--points-at", "--merged", "--no-merged", "-v", "--verify"):
            return act("git_stage")
        return act("git_read", False)
    if sub == "remote":
        if not ops or ops[0] in ("show", "get-url", "-v"):
            return act("git_read", False)
        f.write(".git/config")
        return act("git_stage", network=ops[0] in ("update", "prune"))
    if sub == "config":
        if _has(opts, "--global"):
            f.write("~/.gitconfig")
        elif _has(opts, "--system"):
            f.write("/etc/gitconfig")
        reading = (_has(opts, "--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch",
                        "--show-origin", "--show-scope", "--get-color", "--get-colorbool")
                   and not _has(opts, "--unset", "--unset-all", "--add", "--replace-all", "--rename-section",
                                "--remove-section", "--edit", "-e"))
        if reading or (len(ops) == 1 and not _has(opts, "--unset", "--unset-all", "--edit", "-e",
                                                   "--remove-section", "--rename-section")):
            f.paths = [(w, READ) for w, _ in f.paths]
            return act("git_read", False)
        if ops and ops[0] in ("get", "list"):
            f.paths = [(w, READ) for w, _ in f.paths]
            return act("git_read", False)
        if not _has(opts, "--global", "--system"):
            f.write(*(_vals(opts, "--file", "-f") or [".git/config"]))
        return act("bash_write")
    if sub == "stash":
        verb = ops[0] if ops else "push"
        if verb in ("list", "show"):
            return act("git_read", False)
        if verb == "drop":
            return act("git_branch_delete")
        if verb == "clear":
            return act("git_discard")
        if verb in ("pop", "apply"):
            return act("git_merge")
        return act("git_stage")
    if sub == "reset":
        if _has(opts, "--hard", "--merge", "--keep"):
            return act("git_discard")
        return act("git_stage")
    if sub in ("checkout", "restore"):
        if sub == "restore" and _has(opts, "--staged", "-S") and not _has(opts, "--worktree", "-W"):
            return act("git_stage")
        if "--" in args or sub == "restore" or _has(opts, "-f", "--force") or (sub == "checkout" and "." in ops):
            return act("git_discard")
        return act("git_stage")
    if sub == "clean":
        if _has(opts, "-n", "--dry-run") and not _has(opts, "-f", "--force"):
            return act("git_read", False)
        if _has(opts, "-f", "--force") or _has(opts, "-i"):
            return act("rm_recursive")
        return act("git_read", False)
    if sub == "push":
        if _has(opts, "-n", "--dry-run"):
            return act("git_read", False, True)
        if _has(opts, "-d", "--delete", "--prune") or any(o.startswith(":") and len(o) > 1 for o in ops):
            return act("git_push_delete", network=True)
        return act("git_push", network=True)
    if sub in ("commit", "revert", "am"):
        if sub == "commit" and _has(opts, "--amend"):
            return act("git_rebase")
        if sub == "commit" and _has(opts, "--dry-run"):
            return act("git_read", False)
        return act("git_commit")
    if sub in ("rebase",):
        if _has(opts, "--abort", "--show-current-patch"):
            return act("git_stage")
        return act("git_rebase")
    if sub in ("merge", "cherry-pick", "pull"):
        return act("git_merge", network=sub == "pull")
    if sub in ("fetch",):
        return act("git_fetch", network=True)
    if sub == "clone":
        copts, cops = parse_opts(args, "bojcu", ("--branch", "--origin", "--jobs", "--config", "--upload-pack",
                                                  "--depth", "--reference", "--separate-git-dir", "--template",
                                                  "--filter", "--shallow-since", "--shallow-exclude"))
        if len(cops) >= 2:
            f.write(cops[1], mode=WRITE)
        elif cops:
            base = cops[0].rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
            base = base[:-4] if base.endswith(".git") else base
            f.write(base or ".")
        f.read(*[c for c in cops[:1] if not re.match(r"^[\w.+-]+://|^[\w.-]+@|^[\w.-]+:", c)])
        return act("git_fetch", network=any(re.match(r"^[\w.+-]+://|^[\w.-]+@|^[\w.-]+:[^/]", c) for c in cops[:1]))
    if sub in ("gc", "prune", "reflog", "filter-branch", "filter-repo", "replace"):
        if sub == "reflog" and (not ops or ops[0] in ("show", "exists")):
            return act("git_read", False)
        if sub == "gc" and not any(v in ("now", "all") or (o == "--prune" and v and "now" in v)
                                   for o, v in opts):
            return act("git_stage")
        if sub == "prune" and not _has(opts, "--expire"):
            return act("git_stage")
        return act("git_history_destroy")
    if sub == "update-ref":
        return act("git_branch_delete" if _has(opts, "-d") else "git_stage")
    if sub == "worktree":
        verb = ops[0] if ops else ""
        if verb == "list":
            return act("git_read", False)
        if verb == "remove" and _has(opts, "-f", "--force"):
            return act("git_branch_delete")
        if verb == "add" and len(ops) > 1:
            f.write(ops[1])
        return act("git_stage")
    if sub == "submodule":
        verb = ops[0] if ops else "status"
        if verb in ("status", "summary", "foreach"):
            return act("git_read" if verb != "foreach" else "bash_run", verb == "foreach")
        if verb == "add":
            f.write(".git/config", ".gitmodules")
        return act("git_fetch", network=verb in ("add", "update", "sync"))
    if sub == "send-email":
        return act("message_send", network=True)
    if sub in ("format-patch", "archive", "bundle"):
        f.write(*_vals(opts, "-o", "--output", "--output-directory"))
        return act("bash_write")
    if sub == "init" and not _has(opts, "--bare"):
        # A new repository's config and hooks are protected paths: creating them is
        # approved by the human like any other protected write.
        target = (ops[0] if ops else ".").rstrip("/") or "/"
        f.write(f"{target}/.git/config", f"{target}/.git/hooks")
        return act("git_stage")
    if sub in ("add", "mv", "rm", "init", "switch", "notes", "bisect", "apply", "sparse-checkout", "lfs",
               "mergetool", "maintenance", "commit-graph", "repack", "pack-refs", "stage", "restore", "update-index"):
        return act("git_stage")
    return act("bash_run")


# ---- package managers ------------------------------------------------------------

_PKG_READ = frozenset({"list", "ls", "show", "info", "view", "search", "outdated", "freeze", "check", "config",
                       "help", "version", "--version", "-v", "-V", "audit", "why", "explain", "doctor", "env",
                       "inspect", "tree", "metadata", "verify-project", "locate-project", "pkgid", "owner",
                       "whoami", "fund", "query", "bin", "root", "prefix", "cache", "debug", "licenses",
                       "policy", "depends", "rdepends", "madison", "show-versions"})
_PKG_INSTALL = frozenset({"install", "i", "in", "ci", "add", "remove", "rm", "uninstall", "un", "r", "update", "up",
                          "upgrade", "sync", "lock", "link", "unlink", "dedupe", "prune", "purge", "reinstall",
                          "autoremove", "dist-upgrade", "full-upgrade", "get", "download", "fetch", "tap",
                          "untap", "require", "vendor", "tidy", "isolated", "import", "build-dep", "clean"})
_PKG_PUBLISH = frozenset({"publish", "upload", "push", "release"})
_PKG_UNPUBLISH = frozenset({"unpublish", "yank", "owner-remove", "deprecate"})


def _pkg_verb(argv: Sequence[str], skip_value: str = "", long_val: tuple[str, ...] = ()) -> tuple[str | None, list[str]]:
    """First operand (the verb) of a package-manager style command and the rest."""
    _opts, ops = parse_opts(argv[1:], skip_value, long_val, posix=True)
    if not ops:
        return None, []
    return ops[0], ops[1:]


def _pkg(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    verb, rest = _pkg_verb(argv, "C" if name in ("npm", "yarn", "pnpm", "bun") else "", ("--prefix", "--cwd", "--dir",
                                                                                          "--manifest-path", "-C"))
    if name == "yarn" and verb is None:
        verb = "install"
    if name in ("pip", "pip3", "uv", "pipx") and verb == "pip" and rest:
        verb, rest = rest[0], rest[1:]
    if name == "go" and verb == "mod" and rest:
        verb = "tidy" if rest[0] in ("tidy", "download", "vendor", "edit") else "list"
        if rest[0] == "download":
            verb = "download"
    if name in ("cargo", "go", "npm", "yarn", "pnpm", "bun", "poetry", "uv", "gem", "bundle", "composer",
                "dotnet", "mvn", "gradle", "hatch", "pdm", "rye", "mix", "swift", "stack", "cabal"):
        pass
    f = Facts("bash_run")
    if verb is None:
        f.action, f.mutates = ("package_install", True) if name in ("apt", "apt-get", "brew") else ("bash_run", True)
        return f
    if verb in _PKG_UNPUBLISH:
        f.action, f.network = "package_unpublish", True
    elif verb in _PKG_PUBLISH or (name in ("mvn", "gradle", "./gradlew") and verb in ("deploy", "publish")):
        f.action, f.network = "package_publish", True
    elif verb in _PKG_INSTALL:
        f.action, f.network = "package_install", verb not in ("lock", "tidy", "link", "unlink", "clean", "prune")
        if name in ("go",) and verb == "clean":
            f.action = "bash_write"
        if name in ("pip", "pip3", "uv") and verb in ("install", "download"):
            opts, _ops = parse_opts(argv[1:], "rctde", ("--requirement", "--constraint", "--target",
                                                         "--prefix", "--root", "--dest", "--editable", "--src"))
            f.read(*_vals(opts, "-r", "--requirement", "-c", "--constraint"))
            f.write(*_vals(opts, "-t", "--target", "--prefix", "--root", "-d", "--dest", "--src"))
            if _has(opts, "--user"):
                f.write("~/.local")
        if name in ("npm", "pnpm", "yarn", "bun") and verb in ("install", "i", "add") and \
                any(a in ("-g", "--global") for a in argv[1:]):
            f.action = "package_install"
    elif verb in _PKG_READ:
        f.action, f.mutates = "bash_readonly", False
        if verb in ("search", "view", "info", "show", "outdated", "audit") and name not in ("pip", "pip3"):
            f.network = True
        if verb == "audit" and rest and rest[0] == "fix":
            f.action, f.mutates = "package_install", True
        if verb == "cache" and rest and rest[0] in ("clean", "purge", "remove", "rm", "prune", "clear"):
            f.action, f.mutates = "bash_write", True
        if verb == "config" and rest and rest[0] in ("set", "delete", "edit", "unset"):
            f.action, f.mutates = "bash_write", True
    elif verb in ("init", "new", "create", "venv", "generate", "fmt", "format"):
        f.action = "bash_write"
    else:  # run/test/build/exec/start ...
        f.action = "bash_run"
    return f


def _python(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "cmWXQ", (), posix=True)
    code = _vals(opts, "-c")
    mods = _vals(opts, "-m")
    f = Facts("bash_run")
    if code:
        return f
    if mods:
        mod = mods[0]
        inner = (mod, *ops)
        if mod in ("pip", "pip3", "uv", "poetry", "pipx", "twine"):
            return analyze(("pip" if mod == "pip3" else mod, *ops))
        if mod == "venv" or mod == "virtualenv":
            vopts, vops = parse_opts(ops, "p", ("--prompt",))
            return Facts("bash_write").write(*vops)
        if mod in ("json.tool", "tokenize", "pydoc", "this", "site", "platform", "sysconfig"):
            g = Facts("bash_readonly", mutates=False)
            return g.read(*[o for o in ops if not o.startswith("-")][:1])
        if mod == "http.server":
            return f
        if mod in ("zipfile", "tarfile"):
            return f
        del inner
        return f
    if ops and ops[0] != "-":
        f.read(ops[0])
    return f


def _node_like(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    short = {"node": "erpi", "nodejs": "erpi", "ruby": "erIC", "perl": "eEIMlx0iC", "php": "rfcdBRFEz",
             "deno": "", "bun": "e", "lua": "el", "Rscript": "e", "julia": "eE", "tsx": "e", "ts-node": "e"}.get(name, "e")
    if name in ("deno", "bun") and len(argv) > 1 and argv[1] in ("run", "test", "x", "install", "add", "remove",
                                                                 "publish", "eval", "fmt", "lint", "compile"):
        if argv[1] in ("install", "add", "remove"):
            return Facts("package_install", network=True)
        if argv[1] == "publish":
            return Facts("package_publish", network=True)
        return Facts("bash_run")
    args = list(argv[1:])
    inplace = name == "perl" and any(re.match(r"^-[a-zA-Z]*i", a) for a in args if not a.startswith("--"))
    opts, ops = parse_opts(args, short.replace("i", "") if name == "perl" else short, (), posix=True)
    code = _vals(opts, "-e", "-E", "--eval", "-p" if name in ("node", "nodejs") else "--print",
                 "-r" if name == "php" else "-e")
    f = Facts("bash_run")
    if code or inplace:
        if inplace:
            f.action = "bash_write"
            f.write(*ops)
        return f
    if ops and ops[0] != "-":
        f.read(ops[0])
    return f


def _shell(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "oO", ("--rcfile", "--init-file"), posix=True)
    f = Facts("bash_run")
    if _has(opts, "-c"):
        return f
    if ops:
        f.read(ops[0])
    return f


# ---- network ---------------------------------------------------------------------

_WEBHOOK = LazyPattern(r"hooks\.slack\.com|discord(?:app)?\.com/api/webhooks|api\.telegram\.org/bot|"
                      r"outlook\.office(?:365)?\.com/webhook|chat\.googleapis\.com|api\.twilio\.com|"
                      r"api\.sendgrid\.com|api\.mailgun\.net|slack\.com/api/chat\.postMessage|/webhooks?/", re.I)


def _curl(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "XdoFTHuAeEKbcDhmrwxyYzCQtUP", (
        "--request", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii", "--json",
        "--output", "--form", "--form-string", "--upload-file", "--header", "--user", "--user-agent",
        "--referer", "--cert", "--key", "--config", "--cookie", "--cookie-jar", "--dump-header",
        "--max-time", "--connect-timeout", "--retry", "--proxy", "--write-out", "--output-dir",
        "--cacert", "--resolve", "--connect-to", "--interface", "--url", "--range", "--limit-rate",
        "--stderr", "--trace", "--trace-ascii", "--netrc-file", "--unix-socket", "--oauth2-bearer"))
    f = Facts("web_fetch", mutates=False, network=True)
    methods = [v.upper() for v in _vals(opts, "-X", "--request")]
    datas = _vals(opts, "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii",
                  "--json", "-F", "--form", "--form-string")
    uploads = _vals(opts, "-T", "--upload-file")
    for d in datas:
        if "@" in d:
            f.read(d.split("@", 1)[1].split(";", 1)[0])
    f.read(*uploads)
    f.read(*_vals(opts, "-K", "--config", "--cert", "-E", "--key", "--cacert", "--netrc-file", "-b", "--cookie"))
    outs = _vals(opts, "-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--stderr",
                 "--trace", "--trace-ascii")
    dirs = _vals(opts, "--output-dir")
    f.write(*[o for o in outs if o not in ("-", "/dev/null")])
    if _has(opts, "-O", "--remote-name", "--remote-name-all", "-J"):
        f.write(*(dirs or ["."]))
    urls = ops + _vals(opts, "--url")
    mutating = bool(datas or uploads) or any(m in ("POST", "PUT", "PATCH", "DELETE") for m in methods)
    if f.paths and any(m != READ for _, m in f.paths):
        f.mutates = True
        f.action = "bash_write"
    if mutating:
        f.mutates = True
        f.action = "message_send" if any(_WEBHOOK.search(u) for u in urls) else "http_mutation"
    return f


def _wget(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "OoaPiTtwQUeDRAXIlB", (
        "--output-document", "--output-file", "--append-output", "--directory-prefix", "--input-file",
        "--post-data", "--post-file", "--method", "--body-data", "--body-file", "--header", "--user",
        "--password", "--load-cookies", "--save-cookies", "--user-agent", "--tries", "--timeout"))
    f = Facts("bash_write", network=True)
    outs = _vals(opts, "-O", "--output-document")
    if _has(opts, "--spider"):
        f.action, f.mutates = "web_fetch", False
    elif outs:
        f.write(*[o for o in outs if o not in ("-", "/dev/null")])
        if all(o in ("-", "/dev/null") for o in outs):
            f.action, f.mutates = "web_fetch", False
    else:
        f.write(*(_vals(opts, "-P", "--directory-prefix") or ["."]))
    f.write(*_vals(opts, "-o", "--output-file", "-a", "--append-output", "--save-cookies"))
    f.read(*_vals(opts, "-i", "--input-file", "--post-file", "--body-file", "--load-cookies"))
    method = [m.upper() for m in _vals(opts, "--method")]
    if _has(opts, "--post-data", "--post-file", "--body-data", "--body-file") or \
            any(m in ("POST", "PUT", "PATCH", "DELETE") for m in method):
        f.mutates = True
        f.action = "message_send" if any(_WEBHOOK.search(u) for u in ops) else "http_mutation"
    return f


def _httpie(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "aAov", ("--auth", "--output", "--session", "--verify", "--cert"))
    f = Facts("web_fetch", mutates=False, network=True)
    method = ops[0].upper() if ops and ops[0].isalpha() else ""
    items = ops[2:] if method else ops[1:]
    if method in ("POST", "PUT", "PATCH", "DELETE") or any(re.match(r"^[\w.-]+:?=", i) for i in items):
        f.action, f.mutates = "http_mutation", True
    f.write(*_vals(_opts, "-o", "--output"))
    return f


def _remote(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    f = Facts("remote_exec", network=True)
    if name == "ssh":
        opts, ops = parse_opts(argv[1:], "BbcDEeFIiJLlmOoPpQRSWw", ())
        f.read(*_vals(opts, "-i", "-F"))
        return f
    if name in ("scp", "rsync", "sftp"):
        opts, ops = parse_opts(argv[1:], "cFiJloPSe" if name != "rsync" else "eBfT",
                               ("--exclude", "--include", "--exclude-from", "--include-from", "--files-from",
                                "--rsh", "--filter", "--backup-dir", "--partial-dir", "--temp-dir",
                                "--log-file", "--password-file", "--chmod", "--chown", "--max-size", "--bwlimit"))
        f.read(*_vals(opts, "-i", "-F", "--exclude-from", "--include-from", "--files-from"))
        remote = [o for o in ops if re.match(r"^([\w.-]+@)?[\w.-]+:", o) or o.startswith("rsync://")]
        local = [o for o in ops if o not in remote]
        if not remote and name != "sftp":
            f.action, f.network = "bash_write", False
        if len(ops) >= 2 and ops[-1] in local:
            f.read(*local[:-1])
            deleting = name == "rsync" and any(o.startswith("--delete") for o, _ in opts)
            f.write(ops[-1], mode=RDELETE if deleting else TREE)
            if deleting:
                f.action = "rm_recursive" if not remote else f.action
        else:
            f.read(*local)
        return f
    return f


def _gh(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "R", ("--repo",), posix=True)
    f = Facts("web_fetch", mutates=False, network=True)
    if not ops:
        return f
    group, verb = ops[0], (ops[1] if len(ops) > 1 else "")
    reads = {"view", "list", "status", "diff", "checks", "search", "browse", "download", "watch", "checkout",
             "clone", "ls", "token"}

    def act(name: str) -> Facts:
        f.action, f.mutates = name, True
        return f

    if group == "api":
        aopts, _aops = parse_opts(ops[1:], "XfFHpq", ("--method", "--field", "--raw-field", "--header",
                                                      "--preview", "--jq", "--template", "--input", "--hostname"))
        methods = [m.upper() for m in _vals(aopts, "-X", "--method")]
        if "DELETE" in methods:
            return act("repo_delete")
        if any(m in ("POST", "PUT", "PATCH") for m in methods) or _has(aopts, "-f", "-F", "--field", "--raw-field",
                                                                         "--input"):
            return act("message_send")
        return f
    if group == "repo":
        if verb in ("delete", "archive"):
            return act("repo_delete")
        if verb in ("create", "fork", "edit", "rename", "sync", "set-default", "deploy-key"):
            return act("repo_admin")
        if verb == "clone":
            f.write(ops[3] if len(ops) > 3 else ops[2].rsplit("/", 1)[-1] if len(ops) > 2 else ".")
            return act("git_fetch")
        return f
    if group == "release":
        if verb == "delete" or verb == "delete-asset":
            return act("repo_delete")
        if verb in ("create", "edit", "upload"):
            return act("message_send")
        if verb == "download":
            f.write(".")
            return act("bash_write")
        return f
    if group in ("pr", "issue", "gist", "discussion"):
        if verb in ("delete",):
            return act("repo_delete")
        if verb == "checkout":
            return act("git_stage")
        if verb in reads:
            return f
        return act("message_send")
    if group in ("secret", "variable", "workflow", "run", "label", "ruleset", "cache", "codespace", "ssh-key",
                 "gpg-key", "project", "extension"):
        if verb in reads or verb == "":
            return f
        if verb in ("delete", "remove"):
            return act("repo_delete") if group in ("secret", "variable", "ruleset") else act("repo_admin")
        return act("repo_admin")
    if group == "auth":
        return act("repo_admin") if verb in ("login", "logout", "refresh", "setup-git", "switch") else f
    return f


def _mail(argv: Sequence[str]) -> Facts:
    return Facts("message_send", network=True)


def _signal_cli(argv: Sequence[str]) -> Facts:
    if "send" in argv[1:]:
        return Facts("message_send", network=True)
    return Facts("bash_run", network=True)


# ---- containers / clusters / infra / cloud ---------------------------------------

def _docker(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "HcDl", ("--host", "--context", "--config", "--log-level"), posix=True)
    if not ops:
        return Facts("container_read", mutates=False)
    group = ops[0]
    rest = ops[1:]
    if group in ("compose", "container", "image", "volume", "network", "system", "builder", "buildx") and rest:
        sub_opts, sub_ops = parse_opts(rest, "fp", ("--file", "--project-name", "--profile", "--env-file"), posix=True)
        verb = sub_ops[0] if sub_ops else ""
        if group == "compose":
            if verb in ("down",):
                return Facts("container_delete" if "-v" in rest or "--volumes" in rest else "container_stop")
            if verb in ("rm",):
                return Facts("container_delete")
            group = {"up": "run", "run": "run", "exec": "exec", "start": "start", "restart": "restart",
                     "stop": "stop", "kill": "kill", "build": "build", "pull": "pull", "push": "push"}.get(verb, "ps")
        elif verb in ("rm", "prune", "remove"):
            return Facts("container_delete")
        else:
            group = verb or "ps"
    if group in ("ps", "images", "logs", "inspect", "version", "info", "history", "top", "stats", "events",
                 "search", "diff", "port", "ls", "config", "context", "manifest"):
        return Facts("container_read", mutates=False, network=group == "search")
    if group in ("build", "pull", "tag", "create", "load", "import", "commit", "save", "cp"):
        f = Facts("container_build", network=group == "pull")
        if group == "build":
            bopts, bops = parse_opts(rest, "ftoc", ("--file", "--tag", "--output", "--build-arg", "--target",
                                                    "--platform", "--secret", "--ssh", "--cache-from"))
            f.read(*_vals(bopts, "-f", "--file"), *bops[:1])
        if group == "save":
            sopts, _ = parse_opts(rest, "o", ("--output",))
            f.write(*_vals(sopts, "-o", "--output"))
        return f
    if group in ("run", "exec", "start", "restart", "unpause", "attach"):
        f = Facts("container_run", network=group == "run")
        ropts, _ = parse_opts(rest, "vewpuhlm", ("--volume", "--mount", "--env-file", "--workdir", "--name",
                                                 "--network", "--entrypoint", "--user", "--publish", "--env"))
        for v in _vals(ropts, "-v", "--volume"):
            host = v.split(":", 1)[0]
            if host.startswith(("/", "~", ".", "$")):
                f.paths.append((host, TREE if not v.endswith(":ro") else READ))
        f.read(*_vals(ropts, "--env-file"))
        return f
    if group in ("stop", "kill", "pause", "down"):
        return Facts("container_stop")
    if group in ("push", "login", "logout"):
        return Facts("container_push", network=True)
    if group in ("rm", "rmi", "prune"):
        return Facts("container_delete")
    return Facts("container_run")


def _kubectl(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "nsl", ("--namespace", "--context", "--kubeconfig", "--cluster", "--user",
                                             "--server", "--token", "--selector"), posix=True)
    verb = ops[0] if ops else ""
    f = Facts("cluster_read", mutates=False, network=True)
    if verb in ("get", "describe", "logs", "top", "explain", "version", "api-resources", "api-versions",
                "cluster-info", "diff", "auth", "events", "wait", "") or (verb == "config" and len(ops) > 1
                                                                         and ops[1] in ("view", "get-contexts",
                                                                                        "current-context")):
        return f
    f.mutates = True
    if verb == "delete":
        f.action = "cluster_delete"
    elif verb == "drain":
        f.action = "cluster_drain"
    elif verb in ("exec", "attach", "port-forward", "cp", "debug", "proxy"):
        f.action = "cluster_exec"
    elif verb == "config":
        f.action = "bash_write"
    else:
        f.action = "cluster_apply"
    kopts, _ = parse_opts(ops[1:], "fk", ("--filename", "--kustomize"))
    f.read(*_vals(kopts, "-f", "--filename", "-k", "--kustomize"))
    return f


def _helm(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "n", ("--namespace", "--kube-context", "--kubeconfig"), posix=True)
    verb = ops[0] if ops else ""
    if verb in ("list", "ls", "status", "get", "show", "template", "lint", "search", "history", "version",
                "env", "", "verify", "dependency"):
        return Facts("cluster_read", mutates=False, network=verb in ("search", "status", "get", "list", "ls",
                                                                      "history"))
    if verb in ("uninstall", "delete", "del", "un"):
        return Facts("cluster_delete", network=True)
    if verb == "repo" and len(ops) > 1 and ops[1] == "list":
        return Facts("cluster_read", mutates=False)
    return Facts("cluster_apply", network=True)


def _terraform(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts([a for a in argv[1:] if not a.startswith("-chdir")], "", (), posix=True)
    verb = ops[0] if ops else ""
    rest = [a for a in argv[1:] if a != verb]
    if verb in ("plan", "validate", "fmt", "show", "output", "graph", "providers", "version", "console",
                "workspace", "get", "", "init", "test", "login", "metadata", "modules"):
        if verb == "workspace" and len(ops) > 1 and ops[1] in ("new", "delete", "select"):
            return Facts("infra_state" if ops[1] == "delete" else "bash_write")
        if verb == "fmt":
            return Facts("bash_write")
        return Facts("infra_read", mutates=verb in ("init", "get", "test", "plan"), network=verb in ("init", "plan"))
    if verb == "destroy" or (verb == "apply" and any(a in ("-destroy", "--destroy") for a in rest)):
        return Facts("infra_destroy", network=True)
    if verb in ("apply", "refresh"):
        return Facts("infra_apply", network=True)
    if verb == "state":
        sub = ops[1] if len(ops) > 1 else ""
        if sub in ("list", "show", "pull"):
            return Facts("infra_read", mutates=False, network=True)
        return Facts("infra_state", network=True)
    return Facts("infra_state", network=True)


def _pulumi_like(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    _opts, ops = parse_opts(argv[1:], "sC", ("--stack", "--cwd", "--app", "--profile", "--context"), posix=True)
    verb = ops[0] if ops else ""
    if verb in ("destroy",) or (name == "pulumi" and verb == "stack" and len(ops) > 1 and ops[1] == "rm"):
        return Facts("infra_destroy", network=True)
    if verb in ("up", "update", "deploy", "refresh", "import", "bootstrap"):
        return Facts("infra_apply", network=True)
    if name == "ansible-playbook":
        if "--check" in argv or "-C" in argv:
            return Facts("infra_read", network=True)
        return Facts("infra_apply", network=True)
    return Facts("infra_read", mutates=verb not in ("preview", "synth", "diff", "ls", "list", "stack", "config",
                                                   "whoami", "version", "about", ""), network=True)


_CLOUD_READ = LazyPattern(r"^(describe|list|get|show|head|ls|wait|search|lookup|query|read|export|"
                         r"get-caller-identity|whoami|account|version|help|configure-list|scan|filter|"
                         r"estimate|test|validate|check|print|info|view|tail|logs?|download)(-|$)")
_CLOUD_DELETE = LazyPattern(r"^(delete|terminate|remove|deregister|destroy|purge|rb|rm|drop|detach-|"
                           r"disassociate|revoke|cancel|release|abandon|undeploy|disable)")


def _cloud(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    _opts, ops = parse_opts(argv[1:], "o", ("--profile", "--region", "--output", "--project", "--query",
                                            "--subscription", "--format", "--account", "--endpoint-url",
                                            "--resource-group", "-g", "--configuration", "--zone"))
    f = Facts("cloud_read", mutates=False, network=True)
    words = [o for o in ops if not o.startswith("-")]
    if name == "aws" and len(words) >= 2 and words[0] == "s3":
        verb = words[1]
        if verb in ("ls", "presign"):
            return f
        if verb in ("rm", "rb"):
            f.action, f.mutates = "cloud_delete", True
            return f
        if verb in ("cp", "mv", "sync"):
            if any(a == "--delete" for a in argv):
                f.action, f.mutates = "cloud_delete", True
                return f
            f.action, f.mutates = "cloud_mutate", True
            local = [w for w in words[2:4] if not w.startswith("s3://")]
            if local:
                if words[-1] in local and len(words) > 3 and not words[-1].startswith("s3://"):
                    f.write(words[-1], mode=TREE)
                    f.read(*[w for w in local if w != words[-1]])
                else:
                    f.read(*local)
            return f
        f.action, f.mutates = "cloud_mutate", True
        return f
    if name == "aws" and words[:1] == ["configure"]:
        if len(words) > 1 and words[1] in ("list", "get", "list-profiles", "export-credentials"):
            return f
        f.action, f.mutates = "cloud_mutate", True
        return f
    verbs = words[1:] if name == "aws" else words
    if name == "aws":
        verbs = words[1:2]
    if any(_CLOUD_DELETE.match(v) for v in verbs):
        f.action, f.mutates = "cloud_delete", True
    elif verbs and all(_CLOUD_READ.match(v) or v in ("config", "auth", "projects", "compute", "instances",
                                                       "vm", "group", "storage", "container", "functions",
                                                       "run", "services", "sql", "iam", "account", "ad",
                                                       "webapp", "aks", "acr", "network", "keyvault",
                                                       "buckets", "objects", "clusters") for v in verbs) and \
            any(_CLOUD_READ.match(v) for v in verbs):
        return f
    elif not verbs:
        return f
    else:
        f.action, f.mutates = "cloud_mutate", True
    return f


def _paas(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "a", ("--app", "--team", "--scope", "--token"), posix=True)
    words = [o for o in ops if not o.startswith("-")]
    if any(w in ("destroy", "delete", "remove", "rm") or w.endswith(":destroy") for w in words):
        return Facts("cloud_delete", network=True)
    if not words or any(w in ("deploy", "up", "push", "release", "create", "scale", "set", "secrets", "env",
                              "promote", "rollback", "launch") or ":" in w for w in words):
        return Facts("cloud_mutate", network=True) if words else Facts("cloud_mutate", network=True)
    return Facts("cloud_read", mutates=False, network=True)


# ---- system ----------------------------------------------------------------------

def _systemctl(argv: Sequence[str]) -> Facts:
    _opts, ops = parse_opts(argv[1:], "tspHMn", ("--type", "--state", "--property", "--host", "--machine"))
    verb = ops[0] if ops else "list-units"
    if verb in ("status", "show", "cat", "is-active", "is-enabled", "is-failed", "is-system-running",
                "list-units", "list-unit-files", "list-timers", "list-sockets", "list-dependencies",
                "list-jobs", "help", "get-default"):
        return Facts("bash_readonly", mutates=False)
    return Facts("service_control")


def _service(argv: Sequence[str]) -> Facts:
    if len(argv) > 2 and argv[2] == "status" or "--status-all" in argv:
        return Facts("bash_readonly", mutates=False)
    return Facts("service_control")


def _crontab(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "u", ())
    if _has(opts, "-l"):
        return Facts("bash_readonly", mutates=False)
    if _has(opts, "-r"):
        return Facts("delete_file")
    return Facts("scheduled_task").read(*ops)


def _ip(argv: Sequence[str]) -> Facts:
    words = [a for a in argv[1:] if not a.startswith("-")]
    if any(w in ("add", "del", "delete", "set", "change", "replace", "flush", "append", "prepend", "exec")
           for w in words):
        return Facts("system_admin")
    return Facts("bash_readonly", mutates=False)


def _sysctl(argv: Sequence[str]) -> Facts:
    if any(a in ("-w", "--write", "-p", "--load", "--system") or ("=" in a and not a.startswith("-"))
           for a in argv[1:]):
        return Facts("system_admin")
    return Facts("bash_readonly", mutates=False)


def _kill(argv: Sequence[str]) -> Facts:
    if any(a in ("-l", "-L", "--list", "--table") for a in argv[1:]):
        return Facts("bash_readonly", mutates=False)
    return Facts("process_signal")


def _make(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "CfIjlWo", ("--directory", "--file", "--makefile", "--include-dir",
                                                 "--jobs", "--what-if", "--old-file", "--assume-old"))
    f = Facts("bash_run").read(*_vals(opts, "-f", "--file", "--makefile"))
    f.read(*_vals(opts, "-C", "--directory"))
    if _has(opts, "-n", "--dry-run", "--just-print", "--recon", "-q", "--question", "-p", "--print-data-base"):
        f.action = "bash_readonly"
    return f


def _jq(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    args = list(argv[1:])
    files: list[str] = []
    ops: list[str] = []
    filter_seen = False
    i = 0
    two = {"--arg", "--argjson", "--slurpfile", "--rawfile"}
    one = {"-f", "--from-file", "-L", "--indent", "--tab", "-e"} if name == "jq" else {"-f", "--from-file", "-o",
                                                                                      "--output-format", "-p",
                                                                                      "--input-format", "-I",
                                                                                      "--indent"}
    while i < len(args):
        a = args[i]
        if a in two:
            if a in ("--slurpfile", "--rawfile") and i + 2 < len(args):
                files.append(args[i + 2])
            i += 3
            continue
        if a in ("-f", "--from-file"):
            if i + 1 < len(args):
                files.append(args[i + 1])
                filter_seen = True
            i += 2
            continue
        if a in one and a not in ("-e",):
            i += 2
            continue
        if a.startswith("-") and a != "-":
            if name == "yq" and a in ("-i", "--inplace"):
                ops.append("\0inplace")
            i += 1
            continue
        if not filter_seen:
            filter_seen = True
        else:
            ops.append(a)
        i += 1
    inplace = "\0inplace" in ops
    ops = [o for o in ops if o != "\0inplace"]
    f = Facts("bash_readonly", mutates=False).read(*files)
    if inplace:
        f.action, f.mutates = "bash_write", True
        return f.write(*ops)
    return f.read(*ops)


def _xargs(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "IiLlnPsdEeaa", ("--replace", "--max-lines", "--max-args", "--max-procs",
                                                     "--max-chars", "--delimiter", "--eof", "--arg-file",
                                                     "--process-slot-var"), posix=True)
    f = Facts("bash_readonly", mutates=False)
    f.read(*_vals(opts, "-a", "--arg-file"))
    if ops:
        f.inner, f.wrapper = tuple(ops), "xargs"
    return f


# ---- wrappers --------------------------------------------------------------------

WRAPPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sudo": ("ugCDhprtUTc", ("--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role",
                             "--type", "--other-user", "--command-timeout")),
    "doas": ("uC", ()),
    "nice": ("n", ("--adjustment",)),
    "nohup": ("", ()),
    "stdbuf": ("ioe", ("--input", "--output", "--error")),
    "time": ("fo", ("--format", "--output")),
    "builtin": ("", ()),
    "exec": ("a", ()),
    "ionice": ("cnp", ("--class", "--classdata", "--pid")),
    "setsid": ("", ()),
    "unbuffer": ("", ()),
    "chronic": ("", ()),
    "caffeinate": ("tw", ()),
    "taskset": ("", ()),
    "chrt": ("", ()),
    "proxychains": ("f", ()),
    "torsocks": ("", ()),
    "firejail": ("", ()),
    "catchsegv": ("", ()),
    "strace": ("eopsuEI", ()),
    "ltrace": ("eopsuEI", ()),
    "valgrind": ("", ()),
    "flatpak-spawn": ("", ()),
    "fakeroot": ("", ()),
    "eatmydata": ("", ()),
    "numactl": ("", ()),
}
"""Simple wrappers: ``name -> (short options with a value, long options with a value)``;
the first operand after the options starts the wrapped command."""

ESCALATION_WRAPPERS = frozenset({"sudo", "doas", "su", "run0", "pkexec"})
"""Wrappers that change user."""


def _wrapper(argv: Sequence[str]) -> Facts:
    name = _cmd(argv)
    short, long_val = WRAPPERS[name]
    args = list(argv[1:])
    if name == "taskset" and args:
        args = args[1:] if not args[0].startswith("-") else args[2:]
    opts, ops = parse_opts(args, short, long_val, posix=True)
    # a wrapper scores as its wrapped command (judged separately); only escalation adds
    escalation = name in ESCALATION_WRAPPERS
    f = Facts("privilege_escalation" if escalation else "bash_readonly",
              mutates=escalation or name in ("strace", "ltrace", "valgrind", "firejail", "fakeroot",
                                              "proxychains", "torsocks", "flatpak-spawn"))
    if name == "sudo" and _has(opts, "-l", "--list", "-v", "--validate", "-k", "-K", "-V"):
        f.action = "bash_readonly"
        return f
    if name in ("sudo", "doas"):
        f.read(*_vals(opts, "-D", "--chdir"))
    if ops:
        f.inner, f.wrapper = tuple(ops), name
    else:
        f.mutates = name in ESCALATION_WRAPPERS
    return f


def _env(argv: Sequence[str]) -> Facts:
    args = list(argv[1:])
    assigns: list[tuple[str, str]] = []
    i = 0
    chdir: list[str] = []
    while i < len(args):
        a = args[i]
        if a in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
            if a in ("-C", "--chdir") and i + 1 < len(args):
                chdir.append(args[i + 1])
            i += 2
            continue
        if a.startswith("-") and a not in ("-",):
            i += 1
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", a, re.S)
        if m:
            assigns.append((m.group(1), m.group(2)))
            i += 1
            continue
        break
    rest = tuple(args[i:])
    f = Facts("bash_readonly", mutates=False, assignments=tuple(assigns)).read(*chdir)
    if rest:
        f.inner, f.wrapper = rest, "env"
    return f


def _command(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "", (), posix=True)
    if _has(opts, "-v", "-V") or not ops:
        return Facts("bash_readonly", mutates=False)
    return Facts("bash_readonly", mutates=False, inner=tuple(ops), wrapper="command")


def _timeout(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "sk", ("--signal", "--kill-after"), posix=True)
    if len(ops) >= 2:
        return Facts("bash_readonly", mutates=False, inner=tuple(ops[1:]), wrapper="timeout")
    return Facts("bash_readonly", mutates=False)


def _watch(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "nd", ("--interval", "--differences"), posix=True)
    if ops:
        return Facts("bash_readonly", mutates=False, inner=tuple(ops), wrapper="watch")
    return Facts("bash_readonly", mutates=False)


def _flock(argv: Sequence[str]) -> Facts:
    opts, ops = parse_opts(argv[1:], "wEc", ("--timeout", "--conflict-exit-code", "--command"), posix=True)
    f = Facts("bash_run")
    if ops:
        f.write(ops[0])
        if len(ops) > 1:
            f.inner, f.wrapper = tuple(ops[1:]), "flock"
    return f


def _declare(argv: Sequence[str]) -> Facts:
    assigns = []
    for a in argv[1:]:
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)$", a, re.S)
        if m:
            assigns.append((m.group(1), m.group(2)))
    return Facts("bash_readonly", mutates=False, assignments=tuple(assigns))


def _trap(argv: Sequence[str]) -> Facts:
    if len(argv) <= 1 or argv[1] in ("-l", "-p"):
        return Facts("bash_readonly", mutates=False)
    return Facts("bash_run")


def _fixed(action: str, mutates: bool = True, network: bool = False) -> Callable[[Sequence[str]], Facts]:
    def handler(argv: Sequence[str]) -> Facts:
        return Facts(action, mutates=mutates, network=network)
    return handler


def _network_reader(argv: Sequence[str]) -> Facts:
    return Facts("web_fetch", mutates=False, network=True)


HANDLERS: dict[str, Callable[[Sequence[str]], Facts]] = {}
for _n in READERS:
    HANDLERS[_n] = _reader
for _n in ("grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep", "git-grep"):
    HANDLERS[_n] = _grep
for _n in ("awk", "gawk", "mawk", "nawk"):
    HANDLERS[_n] = _awk
for _n in ("cp", "mv", "install", "ln"):
    HANDLERS[_n] = _cp_like
for _n in ("rm", "rmdir", "unlink"):
    HANDLERS[_n] = _rm
for _n in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "compress", "uncompress"):
    HANDLERS[_n] = _compress
for _n in ("vi", "vim", "nvim", "nano", "emacs", "ed", "ex", "pico", "micro", "code", "subl", "gedit", "kate"):
    HANDLERS[_n] = _editor
for _n in ("pip", "pip3", "npm", "yarn", "pnpm", "cargo", "go", "apt", "apt-get", "aptitude", "dnf", "yum",
           "pacman", "zypper", "apk", "brew", "gem", "uv", "poetry", "pipx", "conda", "mamba", "micromamba",
           "bundle", "composer", "dotnet", "mvn", "gradle", "gradlew", "hatch", "pdm", "rye", "twine", "flit",
           "snap", "flatpak", "nix-env", "port", "choco", "winget", "cabal", "stack", "mix", "swift", "rustup",
           "nvm", "pyenv", "asdf", "sdk", "opam", "luarocks", "cpan", "cpanm", "helmfile", "npx", "pnpx"):
    HANDLERS[_n] = _pkg
for _n in ("python", "python2", "python3", "pypy", "pypy3") + tuple(f"python3.{i}" for i in range(6, 15)):
    HANDLERS[_n] = _python
for _n in ("node", "nodejs", "ruby", "perl", "php", "deno", "bun", "lua", "Rscript", "julia", "tsx", "ts-node"):
    HANDLERS[_n] = _node_like
for _n in ("bash", "sh", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "busybox"):
    HANDLERS[_n] = _shell
for _n in ("ssh", "scp", "rsync", "sftp"):
    HANDLERS[_n] = _remote
for _n in ("mail", "mailx", "sendmail", "mutt", "msmtp", "ssmtp", "neomutt", "swaks", "slack", "slack-cli",
           "slackcat", "telegram-send", "teams", "discord", "notify-send-remote", "twilio", "apprise", "ntfy"):
    HANDLERS[_n] = _mail
for _n in ("docker", "podman", "nerdctl", "docker-compose"):
    HANDLERS[_n] = _docker
for _n in ("aws", "gcloud", "az", "gsutil", "doctl", "oci", "ibmcloud", "aliyun", "linode-cli", "hcloud"):
    HANDLERS[_n] = _cloud
for _n in ("terraform", "tofu", "terragrunt"):
    HANDLERS[_n] = _terraform
for _n in ("pulumi", "cdk", "ansible-playbook", "cdktf", "serverless", "sls", "sam"):
    HANDLERS[_n] = _pulumi_like
for _n in ("heroku", "flyctl", "fly", "vercel", "netlify", "firebase", "railway", "wrangler", "render"):
    HANDLERS[_n] = _paas
for _n in ("kill", "pkill", "killall", "skill"):
    HANDLERS[_n] = _kill
for _n in ("make", "gmake"):
    HANDLERS[_n] = _make
for _n in ("jq", "yq", "gojq"):
    HANDLERS[_n] = _jq
for _n in WRAPPERS:
    HANDLERS[_n] = _wrapper
for _n in ("su", "run0", "pkexec"):
    HANDLERS[_n] = _fixed("privilege_escalation")
for _n in ("export", "declare", "typeset", "local", "readonly"):
    HANDLERS[_n] = _declare
for _n in ("mount", "umount", "iptables", "ip6tables", "nft", "ufw", "firewall-cmd", "useradd", "userdel",
           "usermod", "groupadd", "groupdel", "passwd", "chpasswd", "visudo", "modprobe", "insmod", "rmmod",
           "swapon", "swapoff", "hostnamectl", "timedatectl", "localectl", "update-alternatives", "setcap",
           "chroot", "losetup", "cryptsetup", "lvcreate", "lvremove", "vgcreate", "pvcreate", "mdadm",
           "fdisk", "parted", "sfdisk", "gdisk", "sgdisk", "cfdisk", "tune2fs", "e2fsck", "fsck", "launchctl",
           "dscl", "defaults", "nvram", "csrutil", "route", "ifconfig", "tc", "ethtool", "setenforce", "auditctl"):
    HANDLERS[_n] = _fixed("system_admin")
for _n in ("curl",):
    HANDLERS[_n] = _curl
for _n in ("wget", "wget2"):
    HANDLERS[_n] = _wget
for _n in ("http", "https", "xh", "xhs"):
    HANDLERS[_n] = _httpie
for _n in ("nc", "ncat", "netcat", "socat", "telnet", "ftp", "tftp", "lftp", "mosh"):
    HANDLERS[_n] = _fixed("remote_exec", network=True)
for _n in ("ping", "dig", "nslookup", "host", "traceroute", "tracepath", "whois", "mtr"):
    HANDLERS[_n] = _network_reader
for _n in ("at", "batch", "atrm"):
    HANDLERS[_n] = _fixed("scheduled_task")
HANDLERS.update({
    "uniq": _uniq, "xxd": _xxd, "sed": _sed, "gsed": _sed, "find": _find, "gfind": _find, "shred": _shred,
    "touch": _simple_writer("dtr", ("--date", "--reference"), ("-r", "--reference")),
    "mkdir": _simple_writer("m", ("--mode", "--context")), "mkfifo": _simple_writer("m", ("--mode",)),
    "mknod": _simple_writer("m", ("--mode",)), "truncate": _simple_writer("sr", ("--size", "--reference"), ("-r",)),
    "tee": _tee, "dd": _dd, "chmod": _chmod, "chown": _chmod, "chgrp": _chmod, "chattr": _chmod,
    "setfacl": _simple_writer("mMxX", ()), "tar": _tar, "gtar": _tar, "bsdtar": _tar, "unzip": _unzip,
    "zip": _zip, "7z": _fixed("bash_write"), "unrar": _fixed("bash_write"), "patch": _patch,
    "split": _split, "csplit": _split, "source": _source, ".": _source, "openssl": _openssl,
    "ssh-keygen": _ssh_keygen, "sqlite3": _sqlite, "git": _git, "gh": _gh, "glab": _gh, "hub": _gh,
    "signal-cli": _signal_cli, "kubectl": _kubectl, "oc": _kubectl, "k": _kubectl, "helm": _helm,
    "systemctl": _systemctl, "service": _service, "crontab": _crontab, "ip": _ip, "sysctl": _sysctl,
    "env": _env, "command": _command, "timeout": _timeout, "gtimeout": _timeout, "watch": _watch,
    "flock": _flock, "xargs": _xargs, "trap": _trap, "eval": _fixed("bash_run"),
    "open": _fixed("bash_run"), "xdg-open": _fixed("bash_run"),
    "pytest": _fixed("bash_run"), "tox": _fixed("bash_run"), "nox": _fixed("bash_run"),
})
del _n


def analyze(argv: Sequence[str]) -> Facts:
    """What ``argv`` does: action, paths (with access mode), mutates, network."""
    if not argv:
        return Facts("bash_readonly", mutates=False)
    name = _cmd(argv)
    handler = HANDLERS.get(name)
    if handler is not None:
        return handler(argv)
    if name in NO_PATH_READONLY:
        return Facts("bash_readonly", mutates=False)
    if name.endswith(("-config",)) and all(a.startswith("-") for a in argv[1:]):
        return Facts("bash_readonly", mutates=False)
    return Facts("bash_run", known=False)
