"""Pure planners, without the kernel: the Landlock rule split and the whole bwrap argv."""

from __future__ import annotations

import posixpath

import pytest

from clawshell.sandbox import bwrap as bw
from clawshell.sandbox import helper
from clawshell.sandbox.landlock import (DEVICE_RW, FILE_RIGHTS, NET_BIND_TCP, NET_CONNECT_TCP, READ, READ_NOEXEC,
                                        REFER, SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL, TRUNCATE, WRITE, FsView,
                                        Grants, cover, drop_covered, handled_fs, plan_ruleset)


class FakeFs:
    """A tiny in-memory tree: dirs end with '/', symlinks are 'name -> target'."""

    def __init__(self, *entries: str):
        self.dirs = {"/"}
        self.files: set[str] = set()
        self.links: dict[str, str] = {}
        for e in entries:
            if " -> " in e:
                src, dst = e.split(" -> ")
                self.links[src] = dst
                self._parents(src)
            elif e.endswith("/"):
                self.dirs.add(e.rstrip("/"))
                self._parents(e.rstrip("/"))
            else:
                self.files.add(e)
                self._parents(e)

    def _parents(self, p: str) -> None:
        while p != "/":
            p = posixpath.dirname(p)
            self.dirs.add(p)

    def realpath(self, p: str) -> str:
        parts = p.strip("/").split("/")
        cur = "/"
        for i, part in enumerate(parts):
            cur = posixpath.join(cur, part)
            if cur in self.links:
                cur = self.realpath(self.links[cur])
        return cur

    def view(self) -> FsView:
        def listdir(p: str) -> list[str] | None:
            if p not in self.dirs:
                return None
            names = {posixpath.basename(x) for x in (*self.dirs, *self.files, *self.links)
                     if x != "/" and posixpath.dirname(x) == p}
            return sorted(names)

        def kind(p: str) -> str:
            r = self.realpath(p)
            return "dir" if r in self.dirs else "file" if r in self.files else "missing"

        return FsView(listdir=listdir, realpath=self.realpath, kind=kind)


HOME = ("/home/u/.ssh/id_rsa", "/home/u/.bashrc", "/home/u/.pyenv/versions/3.11/bin/python", "/home/u/proj/",
        "/home/u/.config/git/config", "/home/u/link-to-ssh -> /home/u/.ssh", "/home/u/link-to-key -> /home/u/.ssh/id_rsa")


def test_cover_without_holes_is_one_rule() -> None:
    fs = FakeFs(*HOME).view()
    assert cover("/home/u", READ, [], fs) == [(READ, "/home/u")]


def test_cover_splits_only_along_the_way_to_a_hole_and_drops_links_into_it() -> None:
    fs = FakeFs(*HOME).view()
    assert cover("/home/u", READ, ["/home/u/.ssh", "/home/u/.config"], fs) == [
        (READ & FILE_RIGHTS, "/home/u/.bashrc"), (READ, "/home/u/.pyenv"), (READ, "/home/u/proj")]


def test_cover_keeps_an_explicit_grant_below_a_hole_and_drops_one_equal_to_it() -> None:
    fs = FakeFs("/etc/passwd", "/etc/shadow", "/etc/ssl/certs/ca.pem", "/etc/ssl/private/key.pem").view()
    assert cover("/etc/passwd", READ_NOEXEC, ["/etc"], fs) == [(READ_NOEXEC & FILE_RIGHTS, "/etc/passwd")]
    assert cover("/etc/ssl", READ_NOEXEC, ["/etc", "/etc/ssl/private"], fs) == [(READ_NOEXEC, "/etc/ssl/certs")]
    assert cover("/etc", READ, ["/etc"], fs) == []


def test_cover_drops_symlinks_leading_out_of_the_root() -> None:
    fs = FakeFs("/ws/.git/", "/ws/src/a.py", "/ws/out -> /secret/target", "/secret/target",
                "/ws/inner -> /ws/src").view()
    rules = cover("/ws", WRITE, ["/ws/.git/hooks"], fs)
    assert all(not p.startswith("/secret") for _, p in rules)
    assert rules == [(WRITE, "/ws/src")]


def test_missing_protected_paths_still_split_the_workspace() -> None:
    fs = FakeFs("/ws/src/a.py", "/ws/README").view()
    assert cover("/ws", WRITE, ["/ws/.git/hooks", "/ws/.bashrc"], fs) == [
        (WRITE & FILE_RIGHTS, "/ws/README"), (WRITE, "/ws/src")]


def test_existing_git_keeps_everything_but_hooks_and_config_writable() -> None:
    fs = FakeFs("/ws/.git/HEAD", "/ws/.git/config", "/ws/.git/hooks/pre-commit.sample", "/ws/.git/objects/",
                "/ws/main.c").view()
    assert cover("/ws", WRITE, ["/ws/.git/hooks", "/ws/.git/config"], fs) == [
        (WRITE & FILE_RIGHTS, "/ws/.git/HEAD"), (WRITE, "/ws/.git/objects"), (WRITE & FILE_RIGHTS, "/ws/main.c")]


def test_rules_an_ancestor_already_grants_are_dropped() -> None:
    rules = [(READ, "/usr"), (READ, "/usr/bin"), (READ_NOEXEC & FILE_RIGHTS, "/usr/lib/os-release"),
             (WRITE, "/usr/local"), (READ, "/usrx"), (READ_NOEXEC, "/etc/ssl/certs"), (WRITE, "/tmp"),
             (WRITE, "/tmp/ws"), (READ, "/tmp/ws/sub"), (DEVICE_RW, "/dev/pts")]
    assert drop_covered(rules) == (
        (READ, "/usr"), (WRITE, "/usr/local"), (READ, "/usrx"), (READ_NOEXEC, "/etc/ssl/certs"), (WRITE, "/tmp"),
        (DEVICE_RW, "/dev/pts"))
    # Rights are the union over every ancestor, not only the nearest one.
    assert drop_covered([(READ_FILE_ONLY, "/a"), (READ_DIR_ONLY, "/a/b"), (READ_NOEXEC, "/a/b/c")]) == (
        (READ_FILE_ONLY, "/a"), (READ_DIR_ONLY, "/a/b"))
    # A hole split never leaves the split directory itself as a rule: nothing to drop.
    fs = FakeFs(*HOME).view()
    split = cover("/home/u", READ, ["/home/u/.ssh"], fs)
    assert drop_covered(split) == tuple(split)


READ_FILE_ONLY = READ_NOEXEC & FILE_RIGHTS
READ_DIR_ONLY = READ_NOEXEC & ~FILE_RIGHTS


@pytest.mark.parametrize("abi,fs_mask,net,scoped", [
    (1, (1 << 13) - 1, 0, 0),
    (2, (1 << 14) - 1, 0, 0),
    (3, (1 << 15) - 1, 0, 0),
    (4, (1 << 15) - 1, NET_BIND_TCP | NET_CONNECT_TCP, 0),
    (5, (1 << 16) - 1, NET_BIND_TCP | NET_CONNECT_TCP, 0),
    (6, (1 << 16) - 1, NET_BIND_TCP | NET_CONNECT_TCP, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL),
    (7, (1 << 16) - 1, NET_BIND_TCP | NET_CONNECT_TCP, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL),
])
def test_ruleset_by_abi(abi: int, fs_mask: int, net: int, scoped: int) -> None:
    fs = FakeFs("/usr/bin/ls", "/ws/a", "/dev/tty", "/home/u/.ssh/k", "/home/u/.bashrc").view()
    plan = plan_ruleset(abi, Grants(read=("/usr", "/home/u"), write=("/ws",), devices=("/dev/tty",),
                                    hidden=("/home/u/.ssh",)), fs)
    assert (plan.abi, plan.handled_fs, plan.handled_net, plan.scoped) == (abi, fs_mask, net, scoped)
    assert handled_fs(abi) == fs_mask
    assert plan.rules == (
        (DEVICE_RW & FILE_RIGHTS & fs_mask, "/dev/tty"),
        (READ & FILE_RIGHTS, "/home/u/.bashrc"),
        (READ, "/usr"),
        (WRITE & fs_mask, "/ws"),
    )
    assert (plan.rules[-1][0] & REFER != 0) == (abi >= 2)
    assert (plan.rules[-1][0] & TRUNCATE != 0) == (abi >= 3)


def test_network_on_leaves_tcp_unhandled() -> None:
    fs = FakeFs("/ws/a").view()
    assert plan_ruleset(7, Grants(write=("/ws",), network=True), fs).handled_net == 0
    assert plan_ruleset(7, Grants(write=("/ws",), ports=(8080,)), fs).ports == ((NET_CONNECT_TCP, 8080),)


def test_abi_zero_is_refused() -> None:
    with pytest.raises(ValueError):
        plan_ruleset(0, Grants(), FakeFs().view())


# ----------------------------------------------------------------------------- bwrap


def test_whole_bwrap_argv() -> None:
    layout = bw.BwrapLayout(
        bwrap="/usr/bin/bwrap",
        ro=("/etc/passwd", "/usr", "/home/u"),
        symlinks=(("/usr/share/zoneinfo/UTC", "/etc/localtime"),),
        rw=("/home/u/proj", "/home/u/proj/.git"),
        protected=("/home/u/proj/.git/hooks", "/home/u/proj/.git/config"),
        placeholders=("/home/u/proj/.clawshell",),
        hidden_dirs=("/home/u/.ssh", "/etc/ssl/private"),
        hidden_files=("/home/u/.netrc",),
        seccomp_bpf="/c/seccomp.bpf", network=False, cwd="/home/u/proj")
    argv = bw.build_argv(layout, ["/py", "-I", "-S", "/h.py", "--nnp"], ["bash", "-c", "true"])
    assert argv == [
        "/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--tmpfs", "/etc", "--tmpfs", "/run", "--tmpfs", "/sys", "--tmpfs", "/tmp",
        "--tmpfs", "/var/tmp",
        "--symlink", "/usr/share/zoneinfo/UTC", "/etc/localtime",
        "--ro-bind", "/etc/passwd", "/etc/passwd",
        "--bind", "/home/u/proj", "/home/u/proj",
        "--ro-bind", "/dev/null", "/home/u/.netrc",
        "--tmpfs", "/home/u/.ssh",
        "--bind", "/home/u/proj/.git", "/home/u/proj/.git",
        "--tmpfs", "/home/u/proj/.clawshell",
        "--ro-bind", "/home/u/proj/.git/config", "/home/u/proj/.git/config",
        "--ro-bind", "/home/u/proj/.git/hooks", "/home/u/proj/.git/hooks",
        "--ro-bind", "/c/seccomp.bpf", "/run/.clawshell-seccomp.bpf",
        "--remount-ro", "/etc", "--remount-ro", "/run", "--remount-ro", "/sys",
        "--remount-ro", "/home/u/.ssh", "--remount-ro", "/home/u/proj/.clawshell",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
        "--new-session", "--die-with-parent", "--cap-drop", "ALL", "--chdir", "/home/u/proj",
        "--", "/py", "-I", "-S", "/h.py", "--nnp", "--", "bash", "-c", "true",
    ]


def test_bwrap_reexposes_what_lives_under_a_mask_and_hides_inside_it() -> None:
    layout = bw.BwrapLayout(bwrap="bwrap", ro=("/tmp/home",), rw=("/tmp/ws",),
                            hidden_dirs=("/tmp/home/.ssh", "/boot", "/etc/secret"), network=True, cwd="/tmp/ws")
    ops = bw.ordered_ops(layout)
    assert ("ro", "/tmp/home", "/tmp/home") in ops
    assert ("hide_dir", "", "/tmp/home/.ssh") in ops
    assert ("hide_dir", "", "/boot") in ops
    assert ("hide_dir", "", "/etc/secret") not in ops  # already under the /etc mask
    argv = bw.build_argv(layout, ["h"], ["c"])
    assert "--unshare-net" not in argv and "--unshare-pid" in argv


def test_most_restrictive_op_wins_on_one_path() -> None:
    layout = bw.BwrapLayout(bwrap="bwrap", rw=("/ws",), hidden_dirs=("/ws",), cwd="/")
    assert [o for o in bw.ordered_ops(layout) if o[2] == "/ws"] == [("hide_dir", "", "/ws")]


# ----------------------------------------------------------------------------- helper argv


def test_helper_steps_round_trip_through_argv() -> None:
    steps = (("rlimits", (("fsize", 10, 10), ("core", 0, 0))), ("no_new_privs", None),
             ("landlock", (7, 0xFFFF, 3, 3, 0, ((0xD, "/usr"), (0x77BF, "/ws:with:colons")), ((2, 443),))),
             ("drop_caps", None), ("seccomp", "/run/x.bpf"))
    words = helper.encode_steps(steps)
    decoded, command = helper.decode_args([*words, "--", "bash", "-c", "true"])
    assert command == ["bash", "-c", "true"]
    assert sorted(decoded, key=lambda s: s[0]) == sorted(steps, key=lambda s: s[0])


@pytest.mark.parametrize("args", [["--bogus", "--", "x"], ["--nnp"]])
def test_helper_rejects_bad_argv(args: list[str]) -> None:
    with pytest.raises(helper.SetupError):
        helper.decode_args(args)
