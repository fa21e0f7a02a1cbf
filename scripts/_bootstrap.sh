# shellcheck shell=bash
# Sourced by scripts/clawshell and scripts/test: finds a real CPython >= 3.11
# (not a version-manager shim) and makes .venv with clawshell installed in it.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"

find_real_python() {
  local cand exe
  for cand in "${CLAWSHELL_PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$cand" ] || continue
    command -v "$cand" >/dev/null 2>&1 || continue
    # Ask the interpreter for its own executable: a pyenv/asdf shim answers with
    # the real binary behind it, which is what the venv must be built from.
    exe="$("$cand" -c 'import sys; assert sys.version_info >= (3, 11); print(sys.executable)' 2>/dev/null)" || continue
    [ -x "$exe" ] && { echo "$exe"; return 0; }
  done
  return 1
}

ensure_venv() {
  local extras="$1"
  local stamp="$VENV/.clawshell-installed$extras"
  if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$stamp" -nt "$ROOT/pyproject.toml" ]; then
    return 0
  fi
  local py
  py="$(find_real_python)" || { echo "clawshell: no Python >= 3.11 found (set CLAWSHELL_PYTHON)" >&2; exit 70; }
  [ -x "$VENV/bin/python" ] || "$py" -m venv "$VENV" >&2 || exit 70
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT$extras" >&2 || {
    echo "clawshell: pip install into $VENV failed" >&2; exit 70; }
  write_launcher
  touch "$stamp"
}

# Replace pip's console script with a lean one: `python -I -S` skips site-packages and
# the `re` import of pip's template (about 10 ms of every agent command); clawshell
# loads site itself when it runs in-process.  Kept as pip wrote it when the paths
# cannot go in a shebang or a string literal (whitespace, quotes, backslashes, length).
write_launcher() {
  local py="$VENV/bin/python" tmp="$VENV/bin/.clawshell.$$"
  case "$py$ROOT" in *[[:space:]\\\"\']*) return 0 ;; esac
  [ "${#py}" -lt 200 ] || return 0
  printf '#!%s -IS\n# Written by scripts/_bootstrap.sh: a lean stand-in for the console script pip writes.\nimport sys\nsys.path.insert(0, "%s/src")\nfrom clawshell.__main__ import main\nmain()\n' \
    "$py" "$ROOT" >"$tmp" || return 0
  chmod 755 "$tmp" && mv -f "$tmp" "$VENV/bin/clawshell"
}
