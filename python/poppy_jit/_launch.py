"""`python -m poppy_jit run [options] script.py args…` / `… run [options] -m module args…` (and
the `poppy` console script): run a program as `__main__` exactly as `python script.py` /
`python -m module` would, with the runtime enabled and a config applied.

What "exactly" covers: `sys.argv` (the script path as given, or the module's file for `-m`),
`sys.path[0]` (the script's directory, or the current directory for `-m`), the `__main__`
module's globals (`__file__`, `__loader__`, `__spec__`, `__builtins__` …), stdin/stdout/stderr
(the same process: nothing is piped), exit codes (`SystemExit(n)`, `SystemExit("msg")`, an
uncaught exception: its traceback and status 1, KeyboardInterrupt: killed by SIGINT) and
tracebacks (the launcher's own frames are cut from the front, so they read as without it).

Functions of the script itself can be named in the config as `__main__:qualname` (for `-m pkg.mod`
also `pkg.mod:qualname`): they are annotated right after the statement that defines them, before
the rest of the module runs (the module's code gets one extra call after such statements; line
numbers and everything else stay as written).

This module owns the command line of `run` and the way a program is started; configuration
parsing is `_config`'s, the runtime is `_decorators`' (enable) and `_core`'s.
"""
from __future__ import annotations

import ast
import os
import sys
import types

USAGE = """\
usage: python -m poppy_jit run [--config FILE] [--plain] [--why] [--stats] [--trace FILE]
                               (script.py | -m module) [args ...]

Run a program as `python script.py args` / `python -m module args` would, with the poppy runtime
enabled.

options:
  --config FILE  a poppy.toml (zero-edit mode: [poppy] functions/internal, [externals]);
                 default: PYTHONPOPPY_CONFIG, else ./poppy.toml if it exists
  --plain        do not enable the runtime (annotations apply, the program runs as CPython)
  --why          at exit, print why external calls did not overlap (top serialising causes;
                 also PYTHONPOPPY_WHY=1; stats()["waits"] has them per call site)
  --stats        at exit, print the runtime's counters (as PYTHONPOPPY_STATS=1)
  --trace FILE   record a Chrome trace-event file (as PYTHONPOPPY_TRACE=FILE)
"""


class UsageError(Exception):
    pass


class Options:
    def __init__(self) -> None:
        self.config: str | None = None
        self.plain = False
        self.why = False
        self.stats = False
        self.trace: str | None = None
        self.module: str | None = None
        self.script: str | None = None
        self.args: list[str] = []


def parse(argv: list[str]) -> Options:
    """Options up to the script (or `-m module`); everything after it is the program's."""
    o = Options()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            raise UsageError("")
        if a == "--config" or a.startswith("--config="):
            if "=" in a:
                o.config = a.split("=", 1)[1]
            else:
                i += 1
                if i == len(argv):
                    raise UsageError("--config needs a file")
                o.config = argv[i]
        elif a == "--trace" or a.startswith("--trace="):
            if "=" in a:
                o.trace = a.split("=", 1)[1]
            else:
                i += 1
                if i == len(argv):
                    raise UsageError("--trace needs a file")
                o.trace = argv[i]
        elif a == "--plain":
            o.plain = True
        elif a == "--why":
            o.why = True
        elif a == "--stats":
            o.stats = True
        elif a == "-m" or (a.startswith("-m") and len(a) > 2):
            name = a[2:]
            if not name:
                i += 1
                if i == len(argv):
                    raise UsageError("-m needs a module name")
                name = argv[i]
            o.module = name
            o.args = argv[i + 1:]
            return o
        elif a == "--":
            i += 1
            if i == len(argv):
                raise UsageError("missing the script to run")
            o.script = argv[i]
            o.args = argv[i + 1:]
            return o
        elif a.startswith("-"):
            raise UsageError(f"unknown option {a!r}")
        else:
            o.script = a
            o.args = argv[i + 1:]
            return o
        i += 1
    raise UsageError("missing the script to run (script.py or -m module)")


# ---------------------------------------------------------------------------------------------
# Annotating the program's own functions as their definitions run


class _AnnotateAfterDefs(ast.NodeTransformer):
    """After each module-level statement binding one of `names` (a def, a class, an assignment,
    an import), a call `__import__('poppy_jit._launch').…annotate_main(name)`: module-level code
    only (it descends into if/for/while/try/with bodies, never into functions or classes)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def _bound(self, stmt: ast.stmt) -> list[str]:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found = [stmt.name]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            found = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            found = [(a.asname or a.name).split(".")[0] for a in stmt.names]
        else:
            found = []
        return [n for n in found if n in self.names]

    def _hook(self, name: str, at: ast.stmt) -> ast.stmt:
        call = ast.Expr(ast.Call(
            func=ast.Attribute(
                value=ast.Attribute(
                    value=ast.Call(ast.Name("__import__", ast.Load()),
                                   [ast.Constant("poppy_jit._launch")], []),
                    attr="_launch", ctx=ast.Load()),
                attr="annotate_main", ctx=ast.Load()),
            args=[ast.Constant(name)], keywords=[]))
        end = getattr(at, "end_lineno", at.lineno) or at.lineno
        for n in ast.walk(call):
            n.lineno = n.end_lineno = end
            n.col_offset = n.end_col_offset = 0
        return call

    def body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                        and isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.body(getattr(s, field)))
            for h in getattr(s, "handlers", []) or []:
                h.body = self.body(h.body)
            out.append(s)
            out += [self._hook(n, s) for n in self._bound(s)]
        return out


_main_entries: list = []


def annotate_main(name: str) -> None:
    """Called by the program's own module code right after `name` is bound (see above)."""
    from . import _config

    module = sys.modules["__main__"]
    entries = [e for e in _main_entries if e[0].split(".")[0] == name]
    if entries:
        _config.annotate(module, entries)


def _compile_main(source: bytes, filename: str, entries: list, block: bool = False):
    """The program's module code: with the hooks annotating its configured functions, and (with
    `block`: the runtime is on) its main block's leading statements compiled (`_mainblock`)."""
    if not entries and not block:
        return compile(source, filename, "exec", dont_inherit=True)
    # (compile, not ast.parse: a SyntaxError's traceback then has no frame of the ast module)
    tree = compile(source, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    if entries:
        tree.body = _AnnotateAfterDefs({e[0].split(".")[0] for e in entries}).body(tree.body)
    if block:
        from . import _mainblock
        try:
            text = source.decode("utf-8") if isinstance(source, bytes) else source
        except UnicodeDecodeError:
            text = None
        if text is not None:
            tree = _mainblock.transform(tree, text, filename)
    return compile(tree, filename, "exec", dont_inherit=True)


# ---------------------------------------------------------------------------------------------
# Running the program


def _cut_launcher_frames(tb, here):
    """The traceback from just after this launcher's frame `here` (what `python script.py`
    shows); unchanged if `here` is not in it."""
    t = tb
    while t is not None and t.tb_frame is not here:
        t = t.tb_next
    if t is None:
        return tb
    t = t.tb_next
    while t is not None and t.tb_frame.f_code.co_filename == here.f_code.co_filename:
        t = t.tb_next  # the launcher's helpers (_run_script, _compile_main …)
    return t


def _run_script(path: str, entries: list, block: bool = False) -> None:
    from importlib.machinery import SourceFileLoader

    absolute = os.path.abspath(path)
    if os.path.isdir(path) or _is_zip(path):
        # A directory or zip with a __main__.py: as CPython does, it goes first on sys.path
        # and its __main__ module runs.
        import runpy
        sys.path[0] = path
        runpy._run_module_as_main("__main__", alter_argv=False)
        return
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as e:
        print(f"{sys.executable}: can't open file {absolute!r}: [Errno {e.errno}] {e.strerror}",
              file=sys.stderr)
        raise SystemExit(2) from None
    sys.path[0] = os.path.dirname(os.path.realpath(absolute))
    main = types.ModuleType("__main__")
    main.__dict__.update({
        "__package__": None,
        "__loader__": SourceFileLoader("__main__", absolute),
        "__spec__": None,
        "__annotations__": {},
        "__builtins__": sys.modules["builtins"],
        "__file__": absolute,
        "__cached__": None,
    })
    sys.modules["__main__"] = main
    from . import _why
    _why.note_main(absolute)
    code = _compile_main(source, absolute, entries, block)
    exec(code, main.__dict__)


def _is_zip(path: str) -> bool:
    import zipfile
    try:
        return os.path.isfile(path) and zipfile.is_zipfile(path)
    except OSError:
        return False


def _run_module(name: str, entries: list, block: bool = False) -> None:
    import runpy

    sys.path[0] = os.getcwd()
    # runpy runs the module in the globals of sys.modules["__main__"]: a fresh one, as the
    # interpreter's own (not the launcher's).
    main = types.ModuleType("__main__")
    main.__dict__.update({"__annotations__": {}, "__builtins__": sys.modules["builtins"]})
    sys.modules["__main__"] = main
    if not entries and not block:
        runpy._run_module_as_main(name, alter_argv=True)
        return
    details = runpy._get_module_details

    def with_annotations(mod_name, error=ImportError):
        mod_name, spec, code = details(mod_name, error)
        source = spec.loader.get_source(mod_name)
        if source is not None:
            code = _compile_main(source.encode("utf-8") if isinstance(source, str) else source,
                                 code.co_filename, entries, block)
        return mod_name, spec, code

    runpy._get_module_details = with_annotations
    try:
        runpy._run_module_as_main(name, alter_argv=True)
    finally:
        runpy._get_module_details = details


def _entries_elsewhere(path: str | None, main_names: list) -> str | None:
    """The first `[poppy] functions` entry of the config outside the program's own module."""
    from . import _config

    if not path:
        return None
    try:
        plan = _config.load(path)
    except _config.ConfigError:
        return None
    for module, entries in plan.items():
        if module not in main_names:
            for qualname, kind, _ in entries:
                if kind == "poppy":
                    return f"{module}:{qualname}"
    return None


def _default_config() -> str | None:
    if os.environ.get("PYTHONPOPPY_CONFIG"):
        return None  # applied when poppy_jit was imported
    return "poppy.toml" if os.path.isfile("poppy.toml") else None


def run(argv: list[str]) -> int:
    """`run` subcommand. Returns only for usage errors; the program's own exit (normal end,
    SystemExit, an uncaught exception) leaves through the interpreter as without the launcher."""
    try:
        o = parse(argv)
    except UsageError as e:
        print(USAGE, file=sys.stderr if str(e) else sys.stdout, end="")
        if str(e):
            print(f"python -m poppy_jit run: error: {e}", file=sys.stderr)
            return 2
        return 0

    import poppy_jit  # noqa: F401  (PYTHONPOPPY_* from the environment, PYTHONPOPPY_CONFIG)
    from . import _config, _decorators, _why

    if o.trace:
        _decorators.start_trace(o.trace)  # written at exit (registered by the trace module)
    config = o.config or _default_config()
    main_names = ["__main__"] + ([o.module] if o.module else [])
    try:
        if config:
            _config.configure(config)
    except _config.ConfigError as e:
        print(f"poppy: {e}", file=sys.stderr)
        return 2
    _main_entries[:] = _config.take_main_entries(main_names)
    _config.set_main_internal(o.script is not None or o.module is not None)
    if not o.plain and os.environ.get("PYTHONPOPPY") != "0" and not _decorators.is_enabled():
        _decorators.enable()
    _config.apply_blocking_threads()
    if o.stats and not _decorators._flag("PYTHONPOPPY_STATS"):
        import atexit
        atexit.register(_decorators._print_stats_at_exit)
    if o.why or _decorators._flag("PYTHONPOPPY_WHY"):
        _why.report_at_exit()

    if o.module is not None:
        sys.argv[:] = ["-m"] + o.args
    else:
        sys.argv[:] = [o.script] + o.args
    here = sys._getframe()
    # The main block is compiled only when the runtime runs, and not when the config names entry
    # functions elsewhere: the block would reach them through code that runs plainly, where a
    # @poppy frame runs plainly too (a nested run).
    entries_elsewhere = _entries_elsewhere(config or os.environ.get("PYTHONPOPPY_CONFIG"),
                                           main_names)
    block = _decorators.is_enabled() and not entries_elsewhere
    if entries_elsewhere:
        from . import _mainblock
        _mainblock.notes.append((os.path.abspath(o.script) if o.script else None, None, None,
                                 None, f"the config names entry functions elsewhere "
                                 f"({entries_elsewhere}), which it would reach through code "
                                 "that runs plainly"))
    try:
        if o.module is not None:
            _run_module(o.module, _main_entries, block)
        else:
            _run_script(o.script, _main_entries, block)
    except SystemExit:
        raise
    except BaseException as exc:
        # Printed by the interpreter (sys.excepthook, then exit status 1, or SIGINT for a
        # KeyboardInterrupt) as for `python script.py`: only without the launcher's frames.
        from . import _mainblock
        cut = _mainblock.splice(_cut_launcher_frames(exc.__traceback__, here))
        previous = sys.excepthook

        def hook(t, v, tb, _previous=previous, _exc=exc, _cut=cut):
            sys.excepthook = _previous
            if v is _exc:
                # The default hook prints the exception's own __traceback__.
                tb = _cut
                v.__traceback__ = _cut
            _previous(t, v, tb)

        sys.excepthook = hook
        raise
    return 0

