"""Zero-edit mode: PYTHONPOPPY_CONFIG=path.toml names third-party functions to treat as @poppy and
externals with their classes, so code is parallelised without editing it.

    [poppy]
    functions = ["myapp.pipeline:run", "myapp.agents:Agent.step"]

    [externals]
    "myapp.clients:ask_llm" = "unordered"
    "myapp.clients:lookup" = { kind = "readonly", blocking = true }
    "myapp.rank:rerank" = { kind = "unordered", executor = "process" }
    "myapp.clients:ask_many" = { kind = "unordered", blocking = true, returns = "list[str]" }

A name is `module:qualname`. Modules already imported are annotated when poppy_jit is imported;
the others when they are imported (an import hook wraps their loader). An external is replaced,
on its module or class, by the same wrapper the decorators build, so callers that look it up
there (including the module's own functions) see the annotation; `from m import f` done before
the module was annotated keeps the original (documented limitation).
"""
from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import os
import sys
import tomllib

from ._decorators import KINDS, _make_external, poppy


class ConfigError(ValueError):
    pass


def _suggest(word: object, choices) -> str:
    """' (did you mean X?)' for a misspelt `word`, or ''."""
    import difflib  # only when there is a mistake to explain

    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _names(value: object) -> str | None:
    """Validator of a list of 'module:qualname' strings (checked one by one by `add`)."""
    return None if isinstance(value, list) else "must be a list of 'module:qualname' strings"


def _bool(value: object) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false (got {value!r})"


def _kind(value: object) -> str | None:
    if value in KINDS:
        return None
    return f"must be one of {list(KINDS)} (got {value!r}){_suggest(value, KINDS)}"


# What a config file may contain: one line per key, `key: validator` (a validator returns None or
# what is wrong). Adding a key is adding a line here, plus what it does where it is applied.
SECTIONS: dict[str, dict] = {
    "poppy": {"functions": _names},
    "externals": {},  # a table of "module:qualname" = kind | { EXTERNAL_KEYS }
}
def _executor(value: object) -> str | None:
    from ._executors import ENGINES

    if value in ENGINES:
        return None
    return f"must be one of {list(ENGINES)} (got {value!r}){_suggest(value, ENGINES)}"


def _returns(value: object) -> str | None:
    """A declared result type, as text (`poppy_jit._declared.parse`)."""
    from ._declared import FORMS, DeclarationError, parse

    if not isinstance(value, str):
        return f'must be a string naming a plain data type, e.g. "list[str]" (got {value!r})'
    try:
        parse(value)
    except DeclarationError as e:
        detail = "a dict's keys must be str" if "keys must be str" in str(e) else \
            f"use one of: {FORMS}"
        return (f"{value!r} is not a plain data type{_suggest(value, _RETURNS_EXAMPLES)}; "
                f"{detail}")
    return None


_RETURNS_EXAMPLES = ("str", "int", "float", "bool", "bytes", "None", "json", "list[str]",
                     "list[int]", "dict[str, str]", "dict[str, int]", "tuple[str, ...]")


EXTERNAL_KEYS: dict = {"kind": _kind, "blocking": _bool, "executor": _executor, "idempotent": _bool,
                       "returns": _returns}


def _check_keys(where: str, table: dict, allowed: dict) -> None:
    for key, value in table.items():
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r}{_suggest(key, allowed)}; "
                              f"allowed: {', '.join(allowed)}")
        problem = allowed[key](value)
        if problem:
            raise ConfigError(f"{where}: {key} {problem}")


def load(path: str) -> dict[str, list[tuple[str, str, bool]]]:
    """Parse and validate a config file: {module: [(qualname, kind | "poppy", blocking)]}."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"PYTHONPOPPY_CONFIG: cannot read {path}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"PYTHONPOPPY_CONFIG: {path} is not valid TOML: {e}") from None
    where = f"PYTHONPOPPY_CONFIG: {path}"
    for section, table in data.items():
        if section not in SECTIONS:
            raise ConfigError(f"{where}: unknown section [{section}]{_suggest(section, SECTIONS)}"
                              f"; expected {' and '.join(f'[{s}]' for s in SECTIONS)}")
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: [{section}] must be a table")
    _check_keys(f"{where}: [poppy]", data.get("poppy", {}), SECTIONS["poppy"])
    plan: dict[str, list[tuple[str, str, bool]]] = {}

    def add(name: object, kind: str, blocking: bool) -> None:
        if not isinstance(name, str) or name.count(":") != 1 or not all(name.split(":")):
            raise ConfigError(f"{where}: {name!r} is not 'module:qualname'")
        module, qualname = name.split(":")
        plan.setdefault(module, []).append((qualname, kind, blocking))

    for name in data.get("poppy", {}).get("functions", []):
        add(name, "poppy", False)
    for name, spec in data.get("externals", {}).items():
        if isinstance(spec, str):
            spec = {"kind": spec}
        if not isinstance(spec, dict):
            raise ConfigError(f"{where}: external {name!r} must be a class name "
                              "or { kind = ..., blocking = ... }")
        if "kind" not in spec:
            raise ConfigError(f"{where}: external {name!r} has no kind")
        _check_keys(f"{where}: external {name!r}", spec, EXTERNAL_KEYS)
        add(name, spec["kind"], _executor_options(spec))
    return plan


def _executor_options(spec: dict):
    """An entry's `blocking`, or with `executor` / `idempotent` (_executors) a dict of options
    for `_make_external` in the plan's `blocking` slot."""
    if "executor" not in spec and "idempotent" not in spec and "returns" not in spec:
        return spec.get("blocking", False)
    out = {"blocking": spec.get("blocking", False), "executor": spec.get("executor"),
           "idempotent": spec.get("idempotent", False)}
    if "returns" in spec:
        from ._declared import parse

        out["returns"] = parse(spec["returns"])
    return out


def _missing_module(name: str) -> bool:
    """`name` surely does not exist: its parent package is imported and has no such submodule.
    (Parents are never imported here; a top-level module may become importable later, when the
    program extends sys.path: one never imported is reported at exit.)"""
    parent = name.rpartition(".")[0]
    if not parent or parent not in sys.modules:
        return False
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def _unimported_at_exit(finder: "_Finder") -> None:
    """Modules of the config the program never imported: most likely misspelt."""
    from . import _warnings

    for name in sorted(set(finder.plan) - set(sys.modules)):
        _warnings.config(f"poppy_jit: PYTHONPOPPY_CONFIG names module {name!r}, which this "
                         f"program never imported{_suggest(name, sys.modules)}; its entries "
                         "were not applied")


def _resolve(module, qualname: str):
    owner = module
    parts = qualname.split(".")
    for p in parts[:-1]:
        owner = getattr(owner, p)
    return owner, parts[-1], getattr(owner, parts[-1])


def annotate(module, entries) -> None:
    for qualname, kind, blocking in entries:
        try:
            owner, attr, obj = _resolve(module, qualname)
        except AttributeError:
            names = [n for n in dir(module) if not n.startswith("_")]
            raise ConfigError(f"PYTHONPOPPY_CONFIG: module {module.__name__} has no {qualname}"
                              f"{_suggest(qualname.split('.')[0], names)}") from None
        _annotate_member(owner, attr, obj, kind, blocking)


class _Finder(importlib.abc.MetaPathFinder):
    """Annotates configured modules right after they execute."""

    def __init__(self, plan):
        self.plan = plan

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.plan:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                loader = spec.loader
                exec_module = loader.exec_module
                entries = self.plan[fullname]

                def exec_and_annotate(module, _exec=exec_module, _entries=entries):
                    _exec(module)
                    annotate(module, _entries)

                loader.exec_module = exec_and_annotate
                return spec
        return None


def configure_from_env() -> None:
    path = os.environ.get("PYTHONPOPPY_CONFIG")
    if not path:
        return
    configure(path)


def _apply(plan, path: str) -> None:
    # `__main__` entries are the launcher's (the program's own module is not imported: it runs).
    for name in ("__main__",):
        if name in plan:
            _main_entries.extend(plan.pop(name))
    for name in list(plan):
        if name in sys.modules and name != "__main__":
            annotate(sys.modules[name], plan.pop(name))
        elif _missing_module(name):
            raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: no module named {name!r} "
                              "(not found on sys.path)")
    if plan:
        finder = _Finder(plan)
        sys.meta_path.insert(0, finder)
        atexit.register(_unimported_at_exit, finder)


# ---------------------------------------------------------------------------------------------
# The launcher's settings: methods, static and class methods as externals, `internal` modules
# (transitive compilation), the blocking pool's size. Read from the same file as the plan.

_main_entries: list = []  # (qualname, kind, blocking) named for `__main__`


def configure(path: str) -> None:
    """Apply a config file: annotate what it names (now or when imported) and its settings."""
    plan = load(path)
    apply_settings(load_settings(path))
    _apply(plan, path)


def take_main_entries(names) -> list:
    """The config entries for the program run as `__main__` (under any of `names`): taken from
    the import hook's plan for the other names (the module runs; it is not imported)."""
    out = list(_main_entries)
    _main_entries.clear()
    for finder in sys.meta_path:
        if isinstance(finder, _Finder):
            for n in names:
                out += finder.plan.pop(n, []) if n != "__main__" else []
    return out


def _annotate_member(owner, attr, obj, kind, blocking) -> None:
    """Annotate `owner.attr` (already read as `obj`): a staticmethod or classmethod defined on a
    class stays one (its function is annotated), a method's function is annotated in place."""
    raw = owner.__dict__.get(attr, obj) if isinstance(owner, type) else obj
    wrap = type(raw) if isinstance(raw, (staticmethod, classmethod)) else None
    fn = raw.__func__ if wrap is not None else obj
    if kind == "poppy":
        poppy(fn)
        return
    options = blocking if isinstance(blocking, dict) else {"blocking": blocking}  # executor=
    ext = _make_external(kind, fn, **options)
    setattr(owner, attr, wrap(ext) if wrap is not None else ext)


SETTINGS_KEYS = ("internal", "blocking_threads")


def _internal_names(value: object) -> str | None:
    if isinstance(value, list) and all(isinstance(x, str) and x for x in value):
        return None
    return "must be a list of module names or patterns ('mypkg', 'tasks.*')"


def _threads(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 4096:
        return None
    return f"must be an integer from 1 to 4096 (got {value!r})"


SECTIONS["poppy"].update(internal=_internal_names, blocking_threads=_threads)


def load_settings(path: str) -> dict:
    """`[poppy] internal = [...]` and `[poppy] blocking_threads = N` of a config file."""
    with open(path, "rb") as f:
        data = tomllib.load(f).get("poppy", {})
    out: dict = {}
    internal = data.get("internal", [])
    if not isinstance(internal, list) or not all(isinstance(x, str) and x for x in internal):
        raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: [poppy] internal must be a list of module "
                          "names or patterns ('mypkg', 'tasks.*')")
    out["internal"] = internal
    if "blocking_threads" in data:
        n = data["blocking_threads"]
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 4096:
            raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: [poppy] blocking_threads must be an "
                              f"integer from 1 to 4096 (got {n!r})")
        out["blocking_threads"] = n
    return out


def apply_settings(settings: dict) -> None:
    set_internal(settings.get("internal", []), add=True)
    if "blocking_threads" in settings:
        set_blocking_threads(settings["blocking_threads"])


def set_blocking_threads(n: int) -> None:
    """The most blocking externals running at once (threads of the blocking pool). Takes effect
    if the pool has not started yet."""
    global _blocking_threads
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 4096:
        raise ValueError(f"blocking_threads must be an integer from 1 to 4096 (got {n!r})")
    _blocking_threads = n
    apply_blocking_threads()


_blocking_threads: int | None = None


def apply_blocking_threads() -> None:
    """Hand the setting to the runtime if it is loaded (plain mode never loads it)."""
    from . import _corelink

    if _blocking_threads is not None and _corelink.core is not None:
        _corelink.core.set_blocking_threads(_blocking_threads)


_internal: list[str] = []
_internal_cache: dict[str, bool] = {}
_main_internal = False


def set_internal(patterns, add: bool = False) -> None:
    """Name the program's own modules/packages as internal: a call from compiled code to a plain
    function, method, static or class method defined in one is compiled and inlined (falling
    back per callee). `"mypkg"` is the package and everything in it, `"tasks.*"` the modules
    under `tasks`, `"__main__"` the program run as a script."""
    if isinstance(patterns, str):
        patterns = [patterns]
    patterns = list(patterns)
    for p in patterns:
        if not isinstance(p, str) or not p or p.startswith(".") or ".." in p:
            raise ValueError(f"not a module name or pattern: {p!r}")
    if not add:
        _internal.clear()
    _internal.extend(p for p in patterns if p not in _internal)
    _internal_cache.clear()


def set_main_internal(on: bool) -> None:
    global _main_internal
    _main_internal = on
    _internal_cache.clear()


def internal_patterns() -> list[str]:
    return list(_internal) + (["__main__"] if _main_internal else [])


def is_internal_module(name: str) -> bool:
    found = _internal_cache.get(name)
    if found is None:
        import fnmatch
        found = False
        for p in internal_patterns():
            if p.endswith(".*"):
                found = name.startswith(p[:-1]) and fnmatch.fnmatchcase(name, p[:-2] + ".*")
            elif any(c in p for c in "*?["):
                found = fnmatch.fnmatchcase(name, p)
            else:
                found = name == p or name.startswith(p + ".")
            if found:
                break
        found = found and not (name == "poppy_jit" or name.startswith("poppy_jit."))
        _internal_cache[name] = found
    return found


def is_internal(fn) -> bool:
    """Whether a plain Python function is the program's own code to compile (read by the runtime
    when compiled code calls it)."""
    if not (_internal or _main_internal):
        return False
    if "__poppy_external__" in getattr(fn, "__dict__", ()):
        return False
    g = getattr(fn, "__globals__", None)
    name = g.get("__name__") if isinstance(g, dict) else None
    return isinstance(name, str) and is_internal_module(name)
