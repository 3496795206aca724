"""Zero-edit mode: PYTHONPOPPY_CONFIG=path.toml names third-party functions to treat as @poppy and
externals with their classes, so code is parallelised without editing it.

    [poppy]
    functions = ["myapp.pipeline:run", "myapp.agents:Agent.step"]

    [externals]
    "myapp.clients:ask_llm" = "unordered"
    "myapp.clients:lookup" = { kind = "readonly", blocking = true }
    "myapp.rank:rerank" = { kind = "unordered", executor = "process" }

A name is `module:qualname`. Modules already imported are annotated when poppy_jit is imported;
the others when they are imported (an import hook wraps their loader). An external is replaced,
on its module or class, by the same wrapper the decorators build, so callers that look it up
there (including the module's own functions) see the annotation; `from m import f` done before
the module was annotated keeps the original (documented limitation).
"""
from __future__ import annotations

import importlib.abc
import os
import sys
import tomllib

from ._decorators import KINDS, _make_external, poppy
from ._executors import ENGINES


class ConfigError(ValueError):
    pass


def load(path: str) -> dict[str, list[tuple[str, str, bool]]]:
    """Parse and validate a config file: {module: [(qualname, kind | "poppy", blocking)]}."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"PYTHONPOPPY_CONFIG: cannot read {path}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"PYTHONPOPPY_CONFIG: {path} is not valid TOML: {e}") from None
    unknown = sorted(set(data) - {"poppy", "externals"})
    if unknown:
        raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: unknown section(s) {unknown}; "
                          "expected [poppy] and [externals]")
    plan: dict[str, list[tuple[str, str, bool]]] = {}

    def add(name: object, kind: str, blocking: bool) -> None:
        if not isinstance(name, str) or name.count(":") != 1 or not all(name.split(":")):
            raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: {name!r} is not 'module:qualname'")
        module, qualname = name.split(":")
        plan.setdefault(module, []).append((qualname, kind, blocking))

    functions = data.get("poppy", {}).get("functions", [])
    if not isinstance(functions, list):
        raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: [poppy] functions must be a list")
    for name in functions:
        add(name, "poppy", False)
    for name, spec in data.get("externals", {}).items():
        if isinstance(spec, str):
            kind, blocking = spec, False
        elif isinstance(spec, dict) and set(spec) <= {"kind", "blocking"} | _EXECUTOR_KEYS:
            kind, blocking = spec.get("kind"), spec.get("blocking", False)
            blocking = _executor_options(path, name, spec, blocking)
        else:
            raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: external {name!r} must be a class name "
                              "or {{ kind = ..., blocking = ... }}")
        if kind not in KINDS or not isinstance(blocking if not isinstance(blocking, dict)
                                               else blocking["blocking"], bool):
            raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: external {name!r}: kind must be one of "
                              f"{list(KINDS)} and blocking true/false (got {kind!r}, {blocking!r})")
        add(name, kind, blocking)
    return plan


_EXECUTOR_KEYS = {"executor", "idempotent"}


def _executor_options(path: str, name: str, spec: dict, blocking):
    """An entry's `executor` / `idempotent` keys (_executors): folded into the `blocking` slot
    of the plan as a dict of options for `_make_external`, or `blocking` itself without them."""
    if not _EXECUTOR_KEYS & set(spec):
        return blocking
    executor, idempotent = spec.get("executor"), spec.get("idempotent", False)
    if executor not in ENGINES or not isinstance(idempotent, bool):
        raise ConfigError(f"PYTHONPOPPY_CONFIG: {path}: external {name!r}: executor must be one "
                          f"of {list(ENGINES)} and idempotent true/false (got {executor!r}, "
                          f"{idempotent!r})")
    return {"blocking": blocking, "executor": executor, "idempotent": idempotent}


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
            raise ConfigError(f"PYTHONPOPPY_CONFIG: {module.__name__} has no {qualname}") from None
        if kind == "poppy":
            poppy(obj)
        else:
            options = blocking if isinstance(blocking, dict) else {"blocking": blocking}
            setattr(owner, attr, _make_external(kind, obj, **options))


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
    if plan:
        sys.meta_path.insert(0, _Finder(plan))
