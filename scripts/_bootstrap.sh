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
  touch "$stamp"
}
