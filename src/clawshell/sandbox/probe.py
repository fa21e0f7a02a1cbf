"""What this host offers: Landlock ABI, seccomp filters, a working bwrap, a pids cgroup.

``probe_host`` is called on every command, so its result is cached in the cache zone
(``probe-v1.txt``), keyed by what could change it: kernel release, boot id, euid, the
bwrap binary (path, size, mtime) and the user-namespace sysctls.  The slow part, one
trial run of bwrap, only happens when the key changes.  The cache is a plain
``key=value`` text file (no json on this path).
"""

from __future__ import annotations

import os

from ..model import HostProbe

CACHE_NAME = "probe-v1.txt"
BWRAP_CANDIDATES = ("/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap")
_SYSCTLS = ("/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces",
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns")


def _read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def find_bwrap() -> str | None:
    """Absolute path of bwrap: the fixed system locations first, then PATH."""
    for cand in BWRAP_CANDIDATES:
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    import shutil

    return shutil.which("bwrap")


def cache_key(bwrap: str | None) -> str:
    """Everything a cached probe depends on, as one line."""
    parts = [os.uname().release, _read("/proc/sys/kernel/random/boot_id"), str(os.geteuid())]
    if bwrap:
        try:
            st = os.stat(bwrap)
            parts.append(f"{bwrap}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{bwrap}:gone")
    else:
        parts.append("no-bwrap")
    parts.extend(_read(p) for p in _SYSCTLS)
    return "|".join(parts)


def _try_bwrap(bwrap: str) -> tuple[bool, str]:
    """Run bwrap once with the namespaces the sandbox uses; (usable, note)."""
    import subprocess

    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--new-session",
            "--die-with-parent", "--cap-drop", "ALL", "--", "/bin/sh", "-c", "exit 0"]
    try:
        proc = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap {bwrap} could not run: {exc}"
    if proc.returncode == 0:
        return True, ""
    err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    why = err[-1] if err else f"exit {proc.returncode}"
    hint = ("enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            "user.max_user_namespaces>0, or an AppArmor profile allowing bwrap)")
    return False, f"bwrap cannot create its namespaces here: {why}; {hint}"


def probe_uncached() -> HostProbe:
    """Probe every layer now (costs one bwrap spawn)."""
    from . import _landlock_sys

    notes: list[str] = []
    abi = _landlock_sys.abi_version()
    if abi == 0:
        notes.append("Landlock unavailable: needs Linux >= 5.13 with CONFIG_SECURITY_LANDLOCK=y and "
                     "'landlock' in the lsm= boot parameter")
    seccomp = _landlock_sys.seccomp_filter_supported()
    if not seccomp:
        notes.append("seccomp filters unavailable: needs CONFIG_SECCOMP_FILTER=y")
    bwrap = find_bwrap()
    userns = False
    if bwrap is None:
        notes.append("bubblewrap not installed: apt-get install bubblewrap (or dnf install bubblewrap)")
    else:
        userns, note = _try_bwrap(bwrap)
        if note:
            notes.append(note)
    return HostProbe(landlock_abi=abi, seccomp=seccomp, bwrap=bwrap if userns else None, userns=userns,
                     notes=tuple(notes))


def _encode(key: str, probe: HostProbe) -> str:
    lines = [f"key={key}", f"landlock_abi={probe.landlock_abi}", f"seccomp={int(probe.seccomp)}",
             f"bwrap={probe.bwrap or ''}", f"userns={int(probe.userns)}"]
    lines += [f"note={n}" for n in probe.notes]
    return "\n".join(lines) + "\n"


def _decode(text: str) -> tuple[str, HostProbe] | None:
    vals: dict[str, str] = {}
    notes: list[str] = []
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if not sep:
            return None
        if k == "note":
            notes.append(v)
        else:
            vals[k] = v
    try:
        return vals["key"], HostProbe(landlock_abi=int(vals["landlock_abi"]), seccomp=vals["seccomp"] == "1",
                                      bwrap=vals["bwrap"] or None, userns=vals["userns"] == "1",
                                      notes=tuple(notes))
    except (KeyError, ValueError):
        return None


def probe_host(cache_dir: str | None) -> HostProbe:
    """The host's layers, from the cache when its key still matches (fast path)."""
    bwrap = find_bwrap()
    key = cache_key(bwrap)
    path = os.path.join(cache_dir, CACHE_NAME) if cache_dir else None
    if path:
        from ..cachefile import read_private

        blob = read_private(path)
        cached = _decode(blob.decode("utf-8", "replace")) if blob else None
        if cached and cached[0] == key:
            return cached[1]
    probe = probe_uncached()
    if path:
        from ..cachefile import write_private

        try:
            write_private(path, _encode(key, probe).encode("utf-8"))
        except OSError:
            pass
    return probe


def pids_cgroup_parent() -> str | None:
    """A cgroup directory where a per-command child with ``pids.max`` can be made, or None.

    cgroup v1 ``/sys/fs/cgroup/pids`` (as root), or on cgroup v2 the directory of this
    process's own cgroup when the pids controller is enabled for its children and we
    may write there (a delegated subtree).
    """
    v1 = "/sys/fs/cgroup/pids"
    if os.path.isfile(os.path.join(v1, "cgroup.procs")) and os.access(v1, os.W_OK):
        own = ""
        for line in _read("/proc/self/cgroup").splitlines():
            parts = line.split(":", 2)
            if len(parts) == 3 and "pids" in parts[1].split(","):
                own = parts[2]
        base = os.path.join(v1, own.strip("/")).rstrip("/") if own.strip("/") else v1
        if os.access(base, os.W_OK):
            return base
    root = "/sys/fs/cgroup"
    if os.path.isfile(os.path.join(root, "cgroup.controllers")):
        own = ""
        for line in _read("/proc/self/cgroup").splitlines():
            if line.startswith("0::"):
                own = line[3:]
        base = os.path.join(root, own.lstrip("/"))
        if "pids" in _read(os.path.join(base, "cgroup.subtree_control")).split() and os.access(base, os.W_OK):
            return base
    return None
