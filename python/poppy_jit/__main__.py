"""Command-line tools.

    python -m poppy_jit run [--config poppy.toml] [--why] script.py args…   (or -m module args…)
    python -m poppy_jit timeline trace.json -o timeline.png [--run N] [--function NAME]
                                 [--no-fold] [--title TEXT]
    python -m poppy_jit explain module:function [--ir]

`explain` is concise by default: the status (compiled, or why it falls back), which external
calls may overlap and what each one waits for; `--ir` adds the Bezoar and λO texts.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import sys


def _resolve(target: str):
    """`module:qualname` → the object (the module is imported, so its top level runs)."""
    module_name, sep, qualname = target.partition(":")
    if not sep or not module_name or not qualname:
        raise SystemExit(f"explain: expected module:function, got {target!r}")
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: modules of the current directory
    obj = importlib.import_module(module_name)
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SystemExit(f"explain: {module_name} has no {qualname!r}") from None
    return obj


def explain_text(fn, show_ir: bool = False) -> str:
    """What `python -m poppy_jit explain` prints for a function."""
    from . import _core
    from ._decorators import explain

    name = getattr(fn, "__qualname__", repr(fn))
    spec = getattr(fn, "__poppy_external__", None)
    if spec is not None:
        return (f"{name} is an external ({spec.kind}"
                f"{', blocking' if spec.blocking else ''}"
                f"{', async' if spec.is_async else ''}): the runtime calls it, it is not compiled")
    if not inspect.isfunction(fn):
        raise SystemExit(f"explain: {name} is not a Python function")
    code = fn.__code__
    out = [f"== {name}  ({code.co_filename}:{code.co_firstlineno}) =="]
    if not getattr(fn, "__poppy__", False):
        out.append("note: not marked @poppy, so it runs as plain CPython (a sequential external "
                   "of whatever calls it); shown here as it would compile")
    e = explain(fn)
    if e["fallback"] is not None:
        out.append(f"status: FALLS BACK, runs as plain CPython: {e['fallback']}")
        return "\n".join(out)
    out.append("status: compiled")
    if show_ir:
        out += ["", "-- Bezoar --", e["bezoar"].rstrip(), "", "-- λO --", e["lambda_o"].rstrip()]
    analysis = _core.overlaps(fn)
    out += ["", "-- external calls (static analysis of the Bezoar IR with the runtime's ordering "
                "rules; see docs/observability.md) --", analysis["report"]]
    internal = []
    for site in analysis["sites"]:
        callee = fn.__globals__.get(site["callee"])
        if not inspect.isfunction(callee) or not _compiled_code(callee):
            continue
        if site["class"] == "internal":
            status = "compiled, inlined at the call"
        else:
            status = f"NOT inlined ({_why_not_inlined(callee)}): runs as one sequential external"
        internal.append(f"  #{site['index']} {site['callee']}: {status}")
    if internal:
        out += ["@poppy and internal functions called:"] + internal
    return "\n".join(out)


def _compiled_code(fn) -> bool:
    """A @poppy function or one of a module named internal: compiled code calls it inlined."""
    from . import _config
    return bool(getattr(fn, "__poppy__", False)) or _config.is_internal(fn)


def _why_not_inlined(fn) -> str:
    from ._decorators import explain
    if fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return "it takes *args or **kwargs"
    if fn.__code__.co_freevars:
        return "it is a closure"
    e = explain(fn)
    if e["fallback"] is not None:
        return f"it falls back: {e['fallback']}"
    return "the call's arguments do not bind to its parameters (CPython raises a TypeError)"


def main(argv: list | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "run":
        # Everything after `run` belongs to the launcher and the program (argparse would take
        # the program's own options): _launch parses it.
        from ._launch import run
        return run(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m poppy_jit")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run script.py (or -m module) as __main__ with the runtime enabled",
                   add_help=False)
    tl = sub.add_parser("timeline", help="draw a PYTHONPOPPY_TRACE file (PopPy Fig. 6)")
    tl.add_argument("trace", help="Chrome trace-event JSON written with PYTHONPOPPY_TRACE")
    tl.add_argument("-o", "--output", default="timeline.png", help="PNG to write")
    tl.add_argument("--run", type=int, default=None, help="only this run (the `run` arg)")
    tl.add_argument("--title", default=None)
    tl.add_argument("--function", default=None,
                    help="only the calls of this @poppy function, or of this callee")
    tl.add_argument("--no-fold", action="store_true",
                    help="one row per print call (default: consecutive prints folded)")
    ex = sub.add_parser("explain", help="fallback reason and which calls overlap (--ir: the IRs)")
    ex.add_argument("target", help="module:function (the module is imported)")
    ex.add_argument("--ir", action="store_true", help="also print the Bezoar and λO texts")
    ex.add_argument("--no-ir", action="store_true", help=argparse.SUPPRESS)  # the default now
    args = parser.parse_args(argv)

    if args.command == "timeline":
        from .timeline import render
        try:
            n = render(args.trace, args.output, run=args.run, title=args.title,
                       function=args.function, fold=not args.no_fold)
        except (OSError, ValueError, KeyError, ImportError) as exc:
            print(f"timeline: {args.trace}: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {args.output} ({n} external calls)")
        return 0
    print(explain_text(_resolve(args.target), show_ir=args.ir and not args.no_ir))
    return 0


def console() -> int:
    """The `poppy` console script: `poppy run …`, `poppy explain …`, `poppy timeline …`, and
    `poppy script.py …` / `poppy -m module …` for `poppy run …`."""
    argv = sys.argv[1:]
    if argv and argv[0] not in ("run", "explain", "timeline", "-h", "--help"):
        argv = ["run"] + argv
    return main(argv)


if __name__ == "__main__":
    sys.exit(main())
