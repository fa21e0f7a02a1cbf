"""Make ``import bashlex`` cheap by caching its LALR tables on disk.

bashlex 0.18 calls ``yacc.yacc()`` when ``bashlex.parser`` is imported, which rebuilds
the LALR tables from the grammar docstrings every time (~120-160 ms, the largest
single cost of ``clawshell -c``).  :func:`prepare_bashlex` installs a one-shot import
hook that replaces ``bashlex.yacc.yacc`` while ``bashlex.parser`` is being imported with
a function that loads the tables (productions, action and goto tables as plain data)
from ``cache_dir`` and binds the grammar's ``p_*`` functions from the parser module's
namespace, exactly as PLY would.  On a miss it builds the tables with the original
``yacc()``, writes them (temp file + rename, mode 0600) and returns the built parser.

The cache file is keyed by bashlex's version, the Python version and a digest of the
grammar (every ``p_*`` function's name, line and docstring, the tokens, the precedence
table); the full key material is stored inside the file and compared on load, so a
digest collision cannot hand back the wrong tables.  A missing, corrupt, foreign-owned
or group/world-writable cache is ignored and rebuilt; nothing here ever raises.

This module does I/O (it reads and writes ``cache_dir``); ``shellparse`` does not
depend on it: ``shellparse.parse`` works with or without a prior call.
"""

from __future__ import annotations

import marshal
import os
import sys
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

_FORMAT = 1
"""Version of the cache file layout; bump when the stored tuple changes."""

_PREFIX = "bashlex-tables"

_MAGIC = b"CLAWBLX1"
"""File header; followed by the sha256 of the marshal payload, then the payload."""


def prepare_bashlex(cache_dir: str | None) -> None:
    """Import bashlex, loading its parser tables from ``cache_dir`` when possible.

    Idempotent: once ``bashlex.parser`` is imported this returns at once.  With
    ``cache_dir=None`` bashlex is imported the ordinary way (tables built in memory).
    Never raises: if anything goes wrong bashlex is left to be imported normally by
    the first ``shellparse.parse`` call (and if bashlex is missing, that call reports
    it as a parse problem).
    """
    if "bashlex.parser" in sys.modules:
        return
    if cache_dir is None:
        _plain_import()
        return
    from ._dccache import defer_import

    defer_import("inspect")  # bashlex.yacc needs it only to build tables, which the cache skips
    hook = _YaccHook(cache_dir)
    sys.meta_path.insert(0, hook)
    try:
        import bashlex  # noqa: F401  (the hook patches bashlex.yacc during this import)
    except Exception:
        # Drop whatever half-imported state is left and let a later import retry cleanly.
        for name in [m for m in sys.modules if m == "bashlex" or m.startswith("bashlex.")]:
            if "bashlex.parser" not in sys.modules:
                sys.modules.pop(name, None)
    finally:
        try:
            sys.meta_path.remove(hook)
        except ValueError:
            pass
        hook.restore()
    if "bashlex.parser" not in sys.modules:
        _plain_import()


def cache_path(cache_dir: str, key: str) -> str:
    """Path of the cache file for the table key ``key`` (a hex digest) in ``cache_dir``."""
    return os.path.join(cache_dir, f"{_PREFIX}-{key}.marshal")


def _plain_import() -> None:
    """Import bashlex without the cache; swallow failures (parse() reports them)."""
    try:
        import bashlex  # noqa: F401
    except Exception:
        pass


class _YaccHook:
    """Meta-path finder that patches ``bashlex.yacc.yacc`` right after that module loads."""

    def __init__(self, cache_dir: str) -> None:
        self.cache_dir = cache_dir
        self.module: Any = None
        self.original: Callable[..., Any] | None = None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        """Wrap the loader of ``bashlex.yacc``; ignore every other module."""
        if fullname != "bashlex.yacc":
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _PatchingLoader(spec.loader, self)
        return spec

    def patch(self, module: Any) -> None:
        """Replace ``module.yacc`` by the caching version (called after it executed)."""
        original = getattr(module, "yacc", None)
        if not callable(original):
            return
        self.module = module
        self.original = original
        module.yacc = _make_cached_yacc(original, module, self.cache_dir)

    def restore(self) -> None:
        """Put the original ``yacc`` back so bashlex.yacc is pristine after the import."""
        if self.module is not None and self.original is not None:
            self.module.yacc = self.original


class _PatchingLoader:
    """Loader wrapper: run the real loader, then let the hook patch the module."""

    def __init__(self, inner: Any, hook: _YaccHook) -> None:
        self.inner = inner
        self.hook = hook

    def create_module(self, spec: Any) -> Any:
        """Delegate module creation."""
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        """Execute bashlex.yacc, then patch its ``yacc`` function."""
        self.inner.exec_module(module)
        self.hook.patch(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _make_cached_yacc(original: Callable[..., Any], yacc_module: Any, cache_dir: str) -> Callable[..., Any]:
    """Return a drop-in for ``yacc.yacc`` that loads/stores its tables in ``cache_dir``."""

    def cached_yacc(*args: Any, **kwargs: Any) -> Any:
        # The caller is bashlex/parser.py's module body: its globals hold the grammar.
        pdict = sys._getframe(1).f_globals
        try:
            material = _key_material(pdict, yacc_module)
            key = _digest(material)
            path = cache_path(cache_dir, key)
        except Exception:
            return original(*args, **_with_module(kwargs, pdict))
        parser = _load(path, material, pdict, yacc_module)
        if parser is not None:
            return parser
        parser = original(*args, **_with_module(kwargs, pdict))
        try:
            _store(path, _tables_of(parser, material))
        except Exception:
            pass
        return parser

    return cached_yacc


def _with_module(kwargs: dict[str, Any], pdict: dict[str, Any]) -> dict[str, Any]:
    """Tell the original yacc which module holds the grammar (our frame is in between)."""
    out = dict(kwargs)
    module = sys.modules.get(pdict.get("__name__", ""))
    if module is not None and "module" not in out:
        out["module"] = module
    return out


def _bashlex_version(yacc_module: Any) -> str:
    """bashlex's version from its dist-info directory name (importlib.metadata is slow)."""
    try:
        pkgdir = os.path.dirname(os.path.dirname(os.path.abspath(yacc_module.__file__)))
        for entry in sorted(os.listdir(pkgdir)):
            low = entry.lower()
            if low.startswith("bashlex-") and (low.endswith(".dist-info") or low.endswith(".egg-info")):
                return entry[len("bashlex-"):].rsplit(".", 1)[0]
    except Exception:
        pass
    return "unknown"


def _key_material(pdict: dict[str, Any], yacc_module: Any) -> str:
    """Everything the tables depend on, as one string."""
    parts = [
        f"format={_FORMAT}",
        f"bashlex={_bashlex_version(yacc_module)}",
        f"python={sys.version_info[0]}.{sys.version_info[1]}",
        f"tabversion={getattr(yacc_module, '__tabversion__', '')}",
        f"start={pdict.get('start')!r}",
        f"precedence={pdict.get('precedence')!r}",
        f"tokens={pdict.get('tokens')!r}",
    ]
    funcs = []
    for name, item in pdict.items():
        if name.startswith("p_") and name != "p_error" and callable(item):
            code = getattr(item, "__code__", None)
            funcs.append((getattr(code, "co_firstlineno", 0), name, item.__doc__ or ""))
    funcs.sort()
    for line, name, doc in funcs:
        parts.append(f"{name}:{line}:{doc}")
    return "\n".join(parts)


def _sha256(data: bytes) -> Any:
    """A sha256 object (the C module directly: importing hashlib costs ~4 ms)."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python >= 3.12 renamed it
        try:
            from _sha2 import sha256  # type: ignore[import-not-found,no-redef]
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment]
    return sha256(data)


def _digest(material: str) -> str:
    """Hex digest naming the cache file for ``material``."""
    return str(_sha256(material.encode("utf-8", "surrogatepass")).hexdigest()[:32])


def _tables_of(parser: Any, material: str) -> tuple[Any, ...]:
    """Plain-data snapshot of a freshly built LRParser (before bashlex mutates it)."""
    prods = tuple(
        (p.number, p.name, tuple(p.prod), tuple(p.prec), p.func, p.file, p.line) for p in parser.productions
    )
    action = {int(state): dict(acts) for state, acts in parser.action.items()}
    goto = {int(state): dict(gts) for state, gts in parser.goto.items()}
    return (_FORMAT, material, prods, action, goto)


def _store(path: str, data: tuple[Any, ...]) -> None:
    """Write the tables with a digest in front, as a private cache file."""
    from .cachefile import write_private

    payload = marshal.dumps(data)
    write_private(path, _MAGIC + _sha256(payload).digest() + payload)


def _load(path: str, material: str, pdict: dict[str, Any], yacc_module: Any) -> Any:
    """Build an LRParser from the cache file, or None on any mismatch or damage."""
    from .cachefile import read_private

    blob = read_private(path)
    if blob is None:
        return None
    try:
        head = len(_MAGIC)
        if blob[:head] != _MAGIC or _sha256(blob[head + 32:]).digest() != blob[head:head + 32]:
            return None
        data = marshal.loads(blob[head + 32:])
        fmt, stored, prods, action, goto = data
        if fmt != _FORMAT or stored != material:
            return None
        _check_tables(prods, action, goto)
        productions = []
        for number, name, prod, prec, func, file, line in prods:
            p = yacc_module.Production(number, name, prod, tuple(prec), func, file, line)
            if func:
                p.callable = pdict[func]
            productions.append(p)

        class _Tables:
            lr_productions = productions
            lr_action = action
            lr_goto = goto

        parser = yacc_module.LRParser(_Tables, pdict.get("p_error"))
        yacc_module.parse = parser.parse
        return parser
    except Exception:
        return None


def _check_tables(prods: Any, action: Any, goto: Any) -> None:
    """Raise ValueError unless the loaded data has the shapes an LRParser needs."""
    if not isinstance(prods, tuple) or not isinstance(action, dict) or not isinstance(goto, dict):
        raise ValueError("bad table types")
    nprods = len(prods)
    for p in prods:
        if not (isinstance(p, tuple) and len(p) == 7 and isinstance(p[1], str) and isinstance(p[2], tuple)):
            raise ValueError("bad production")
        if p[4] is not None and not (isinstance(p[4], str) and p[4].startswith("p_")):
            raise ValueError("bad production function")
    # Entries are covered by the payload digest; check the row shapes only (cheap).
    for table in (action, goto):
        for row in table.values():
            if not isinstance(row, dict):
                raise ValueError("bad table row")
    if min((min(row.values(), default=0) for row in action.values()), default=0) <= -nprods:
        raise ValueError("reduce by unknown production")
