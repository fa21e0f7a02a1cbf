"""Tests of clawshell.parsercache: bashlex's LALR tables cached on disk.

Every check that depends on how bashlex gets imported runs in a fresh interpreter
(the test process itself may already have imported bashlex).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = [
    "ls -la", "git status && git diff --stat | head", "for f in *.py; do echo $f; done",
    "cat <<'EOF' > f\nbody $x\nEOF\n", "FOO=1 bash -c 'rm -rf x; ls' > out 2>&1 &",
    "if [ -f x ]; then (cd y && make); elif true; then :; else { a; b; }; fi",
    "while read l; do echo \"$l\"; done < <(find . -name '*.txt')", "f() { echo $(id -u) `date`; }; f",
    "case $1 in a|b) x;; *) y;; esac", "echo ${a:-$(b)} $((1+2)) [[ x ]]", "ls |", "echo \"unterminated",
]

DUMP = r"""
import json, sys, time
mode, cache = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if mode == "cache":
    from clawshell import parsercache
    parsercache.prepare_bashlex(cache)
elif mode == "none":
    from clawshell import parsercache
    parsercache.prepare_bashlex(None)
import bashlex
t1 = time.perf_counter()
from bashlex import parser as P
from clawshell import shellparse
commands = json.loads(sys.stdin.read())
raw = []
for c in commands:
    try:
        raw.append([t.dump() for t in bashlex.parse(c)])
    except Exception as exc:
        raw.append(f"{type(exc).__name__}: {exc}")
ours = [repr(shellparse.parse(c)) for c in commands]
tables = {
    "productions": [[p.number, p.name, list(p.prod), p.func, p.len] for p in P.yaccparser.productions],
    "action": sorted((k, sorted(v.items())) for k, v in P.yaccparser.action.items()),
    "goto": sorted((k, sorted(v.items())) for k, v in P.yaccparser.goto.items()),
}
print(json.dumps({"raw": raw, "ours": ours, "tables": tables, "import_s": t1 - t0,
                  "yacc_restored": P.yacc.yacc.__module__ == "bashlex.yacc" and P.yacc.yacc.__name__ == "yacc",
                  "hooks_left": [type(h).__name__ for h in sys.meta_path if "Yacc" in type(h).__name__]}))
"""


def run_fresh(mode: str, cache: str = "") -> dict:
    """Import bashlex in a fresh interpreter (``mode``: plain | none | cache) and dump results."""
    proc = subprocess.run([sys.executable, "-c", DUMP, mode, cache], input=json.dumps(COMMANDS),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return json.loads(proc.stdout)


def cache_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("bashlex-tables-*.marshal"))


def test_parse_results_and_tables_are_identical_with_and_without_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    plain = run_fresh("plain")
    cold = run_fresh("cache", str(cache))
    assert len(cache_files(cache)) == 1
    warm = run_fresh("cache", str(cache))
    for other in (cold, warm):
        assert other["tables"] == plain["tables"]
        assert other["raw"] == plain["raw"]
        assert other["ours"] == plain["ours"]
    assert warm["yacc_restored"] and cold["yacc_restored"]
    assert warm["hooks_left"] == [] and cold["hooks_left"] == []


def test_warm_cache_makes_the_import_much_cheaper(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_fresh("cache", str(cache))
    plain = min(run_fresh("plain")["import_s"] for _ in range(2))
    warm = min(run_fresh("cache", str(cache))["import_s"] for _ in range(2))
    assert warm < plain / 3, (warm, plain)


def test_cache_file_is_private_and_written_atomically(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_fresh("cache", str(cache))
    (path,) = cache_files(cache)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert [p.name for p in cache.iterdir()] == [path.name]  # no temp file left behind


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty", "group_writable", "symlink"])
def test_damaged_or_untrusted_cache_is_rebuilt_and_results_stay_identical(tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    reference = run_fresh("cache", str(cache))
    (path,) = cache_files(cache)
    good = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"not a cache file at all")
    elif damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "flipped":
        blob = bytearray(good)
        blob[len(blob) // 2] ^= 0xFF
        path.write_bytes(bytes(blob))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "group_writable":
        path.chmod(0o666)
    elif damage == "symlink":
        real = tmp_path / "elsewhere.marshal"
        real.write_bytes(good)
        path.unlink()
        path.symlink_to(real)
    result = run_fresh("cache", str(cache))
    assert (result["tables"], result["ours"]) == (reference["tables"], reference["ours"])
    # the cache was rewritten as a good, private, regular file
    assert not path.is_symlink()
    assert path.read_bytes() == good
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_unwritable_cache_location_still_imports_bashlex(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run_fresh("cache", str(blocker / "cache"))
    assert result["tables"] == run_fresh("plain")["tables"]


def test_no_cache_dir_imports_bashlex_normally() -> None:
    assert run_fresh("none")["tables"] == run_fresh("plain")["tables"]


def test_prepare_is_idempotent_and_a_no_op_after_import(tmp_path: Path) -> None:
    code = ("import sys; from clawshell import parsercache; parsercache.prepare_bashlex(sys.argv[1]); "
            "import bashlex; parsercache.prepare_bashlex(sys.argv[1]); parsercache.prepare_bashlex(None); "
            "print(len(sys.meta_path))")
    first = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    baseline = subprocess.run([sys.executable, "-c", "import sys; print(len(sys.meta_path))"], capture_output=True,
                              text=True, check=True)
    assert first.stdout == baseline.stdout


def test_a_cache_for_another_grammar_is_not_used(tmp_path: Path) -> None:
    """The key material is stored in the file: a file renamed to our key is rejected."""
    cache = tmp_path / "cache"
    run_fresh("cache", str(cache))
    (path,) = cache_files(cache)
    good = path.read_bytes()
    # rewrite the stored key material (and a valid digest) so it no longer matches
    import marshal

    from clawshell import parsercache

    head = len(parsercache._MAGIC)
    data = list(marshal.loads(good[head + 32:]))
    data[1] = data[1] + "\nsomething else"
    payload = marshal.dumps(tuple(data))
    path.write_bytes(parsercache._MAGIC + parsercache._sha256(payload).digest() + payload)
    result = run_fresh("cache", str(cache))
    assert result["tables"] == run_fresh("plain")["tables"]
    assert path.read_bytes() == good


def test_cache_path_is_inside_the_cache_dir() -> None:
    from clawshell.parsercache import cache_path

    assert cache_path("/x/cache", "abc") == os.path.join("/x/cache", "bashlex-tables-abc.marshal")
