"""Zero-edit mode: PYTHONPOPPY_CONFIG=path.toml names third-party functions to treat as @poppy and
externals with their classes, so code is parallelised without editing it.

    [poppy]
    functions = ["myapp.pipeline:run", "myapp.agents:Agent.step"]

    [externals]
    "myapp.clients:ask_llm" = "unordered"
    "myapp.clients:lookup" = { kind = "readonly", blocking = true }

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
EXTERNAL_KEYS: dict = {"kind": _kind, "blocking": _bool}


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
        add(name, spec["kind"], spec.get("blocking", False))
    return plan


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
        if kind == "poppy":
            poppy(obj)
        else:
            setattr(owner, attr, _make_external(kind, obj, blocking))


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
    plan = load(path)
    for name in list(plan):
        if name in sys.modules:
            annotate(sys.modules[name], plan.pop(name))
        elif _missing_module(name):
            raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: no module named {name!r} "
                              "(not found on sys.path)")
    if plan:
        finder = _Finder(plan)
        sys.meta_path.insert(0, finder)
        atexit.register(_unimported_at_exit, finder)
