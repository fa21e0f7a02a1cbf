"""Start-up aid for the hot path: cache the code ``dataclasses`` compiles.

Every ``@dataclass`` compiles the source of its generated methods (``__init__``,
``__eq__``, ``__repr__`` ...) with ``exec`` when the class is created; on this kind of
VM that is about 1.5 ms a class, and clawshell defines dozens of them on every start.
The generated source is the same each time, so its compiled code is kept in
``$CLAWSHELL_HOME/cache`` (marshal, private file) and reused.  ``dataclasses`` looks
``exec`` up in its module globals, so shadowing that one name is the whole hook; the
code executed is exactly what the source compiles to.  Any problem: plain compile.
"""

from __future__ import annotations

import atexit
import marshal
import os
import sys

from .cachefile import read_private, write_private

_VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}-{sys.implementation.cache_tag}-v1"


def defer_import(name: str) -> None:
    """Register module ``name`` with the standard library's LazyLoader, so that
    ``import name`` is free and the module loads on first attribute access, by
    whoever really needs it (``inspect``: imported by dataclasses and bashlex, used
    by neither on clawshell's hot path)."""
    if name in sys.modules:
        return
    try:
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return
        loader = importlib.util.LazyLoader(spec.loader)
        spec.loader = loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loader.exec_module(module)
    except Exception:
        sys.modules.pop(name, None)


def install(cache_dir: str) -> None:
    """Shadow ``dataclasses.exec`` with a compiled-code cache stored in ``cache_dir``."""
    import dataclasses

    if "exec" in vars(dataclasses):
        return
    path = os.path.join(cache_dir, f"dataclass-code-{_VERSION}.marshal")
    codes: dict[str, object] = {}
    blob = read_private(path)
    if blob:
        try:
            loaded = marshal.loads(blob)
        except (ValueError, EOFError, TypeError):
            loaded = None
        if isinstance(loaded, dict):
            codes = loaded
    missed: list[bool] = []

    def cached_exec(source: object, globals_: dict | None = None, locals_: dict | None = None) -> None:
        if isinstance(source, str):
            code = codes.get(source)
            if code is None:
                code = compile(source, "<string>", "exec")
                codes[source] = code
                missed.append(True)
            exec(code, globals_, locals_)  # noqa: S102 - the code dataclasses asked for
        else:
            exec(source, globals_, locals_)  # noqa: S102

    dataclasses.exec = cached_exec  # type: ignore[attr-defined]

    def save() -> None:
        if missed:
            try:
                write_private(path, marshal.dumps(codes))
            except (OSError, ValueError):
                pass

    atexit.register(save)
