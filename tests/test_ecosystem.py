"""What users meet around the runtime: poppy_jit's warnings and logger, config validation, the
off/unknown values of PYTHONPOPPY, start_trace at exit, cancelling `poppy_jit.run`, and annotated
async defs called from coroutines in plain mode."""
import asyncio
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import poppy_jit
from poppy_jit import _config, _warnings

HAVE_CORE = True
try:
    import poppy_jit._core  # noqa: F401
except ImportError:
    HAVE_CORE = False
needs_core = pytest.mark.skipif(not HAVE_CORE, reason="the compiled runtime is not installed")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPOPPY")}
    pkg_parent = str(Path(poppy_jit.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([pkg_parent, env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def run_py(tmp_path, source, *flags, **env):
    """Run `source` as a script in a fresh interpreter (flags before the script)."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, *flags, str(script)], env=_env(**env),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


USER_SESSION = '''
    import asyncio
    from poppy_jit import poppy, unordered

    def fetch(x):                 # not annotated: a sequential external
        return x * 2

    @unordered
    def fast(x):
        return x

    @poppy
    def seq(xs):
        out = []
        for x in xs:
            out.append(fetch(x))
        return out

    @poppy
    def guarded(x):
        try:
            return fast(x)
        finally:
            pass

    @poppy
    def par(xs):
        return [fast(x) for x in xs]

    print(seq([1, 2, 3]), seq([4, 5]), guarded(1), guarded(2))

    async def main():
        print(par([1, 2]), par([3]))

    asyncio.run(main())
'''


# ---------------------------------------------------------------------------------------------
# Warnings instead of silence

@needs_core
def test_each_reason_is_warned_once_per_function(tmp_path):
    p = run_py(tmp_path, USER_SESSION, PYTHONPOPPY="1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["[2, 4, 6] [8, 10] 1 2", "[1, 2] [3]"]
    err = p.stderr
    assert err.count("PoppySequentialWarning") == 1
    assert "seq made its external calls one at a time (peak in flight 1): fetch is not " \
           "annotated" in err
    assert err.count("PoppyFallbackWarning") == 1
    assert "guarded runs as plain CPython" in err and "python -m poppy_jit explain" in err
    assert err.count("PoppyEventLoopWarning") == 1
    assert "await poppy_jit.run(par, ...)" in err
    # The warning points at the user's function, not at poppy_jit.
    assert f"{tmp_path / 'prog.py'}:" in err


def test_plain_mode_is_silent(tmp_path):
    p = run_py(tmp_path, USER_SESSION)
    assert p.returncode == 0 and p.stderr == "", p.stderr


@needs_core
def test_dash_w_error_makes_a_warning_fail_the_call(tmp_path):
    p = run_py(tmp_path, USER_SESSION, "-W", "error", PYTHONPOPPY="1")
    assert p.returncode == 1
    assert "poppy_jit._warnings.PoppySequentialWarning: poppy_jit: seq made" in p.stderr
    assert p.stdout == ""


@needs_core
def test_warnings_are_filterable_by_category(tmp_path):
    source = ("import warnings, poppy_jit\n"
              "warnings.simplefilter('ignore', poppy_jit.PoppySequentialWarning)\n"
              "warnings.filterwarnings('error', category=poppy_jit.PoppyFallbackWarning)\n"
              + textwrap.dedent(USER_SESSION))
    p = run_py(tmp_path, source, PYTHONPOPPY="1")
    assert "PoppySequentialWarning" not in p.stderr
    assert p.returncode == 1 and "PoppyFallbackWarning: poppy_jit: guarded" in p.stderr


def test_warning_classes_and_once_per_key():
    assert issubclass(poppy_jit.PoppyFallbackWarning, poppy_jit.PoppyWarning)
    assert issubclass(poppy_jit.PoppyWarning, UserWarning)
    assert "PoppyWarning" in dir(poppy_jit) and "PoppyWarning" in poppy_jit.__all__

    def f():
        pass

    _warnings.reset()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        _warnings.fallback(f, "reason A at line 1")
        _warnings.fallback(f, "reason A at line 1")
        _warnings.fallback(f, "reason B at line 2")
    assert [w.category for w in got] == [poppy_jit.PoppyFallbackWarning] * 2
    assert got[0].filename == f.__code__.co_filename and got[0].lineno == f.__code__.co_firstlineno
    _warnings.reset()


def test_fallbacks_are_logged_on_the_poppy_jit_logger(caplog):
    def g():
        pass

    _warnings.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with caplog.at_level("INFO", logger="poppy_jit"):
            _warnings.fallback(g, "generator at line 3")
    assert [r.name for r in caplog.records] == ["poppy_jit"]
    assert "runs as plain CPython: generator at line 3" in caplog.records[0].getMessage()
    _warnings.reset()


# ---------------------------------------------------------------------------------------------
# PYTHONPOPPY values

@pytest.mark.parametrize("value", ["2", "yes", " 1"])
def test_unknown_pythonpoppy_value_warns_and_runs_plain(tmp_path, value):
    p = run_py(tmp_path, "import poppy_jit; print(poppy_jit.is_enabled())", PYTHONPOPPY=value)
    assert p.returncode == 0 and p.stdout == "False\n"
    assert (f"PoppyConfigWarning: poppy_jit: PYTHONPOPPY must be 0 or 1 (got {value!r}); "
            "using the default, 0 (off)") in p.stderr


# ---------------------------------------------------------------------------------------------
# Config validation

def _load(tmp_path, text):
    cfg = tmp_path / "poppy.toml"
    cfg.write_text(textwrap.dedent(text))
    return _config.load(str(cfg))


@pytest.mark.parametrize("text, message", [
    ('[popy]\nfunctions = ["m:f"]\n', "unknown section [popy] (did you mean 'poppy'?)"),
    ('[poppy]\nfunction = ["m:f"]\n', "[poppy]: unknown key 'function' (did you mean "
                                      "'functions'?)"),
    ('[externals]\n"m:f" = "unorderd"\n', "kind must be one of ['unordered', 'readonly', "
                                          "'sequential'] (got 'unorderd') (did you mean "
                                          "'unordered'?)"),
    ('[externals]\n"m:f" = { kind = "readonly", blocing = true }\n',
     "external 'm:f': unknown key 'blocing' (did you mean 'blocking'?)"),
    ('[externals]\n"m:f" = { kind = "readonly", blocking = "yes" }\n',
     "blocking must be true or false (got 'yes')"),
    ('[externals]\n"m:f" = 3\n', "must be a class name or { kind = ..., blocking = ... }"),
    ('[poppy]\nfunctions = ["nocolon"]\n', "'nocolon' is not 'module:qualname'"),
])
def test_config_errors_name_the_mistake(tmp_path, text, message):
    with pytest.raises(_config.ConfigError) as err:
        _load(tmp_path, text)
    assert message in str(err.value)
    assert "{{" not in str(err.value)


def test_config_table_is_one_line_per_key():
    assert set(_config.SECTIONS) == {"poppy", "externals"}
    assert set(_config.EXTERNAL_KEYS) == {"kind", "blocking", "executor", "idempotent", "returns"}


def test_config_missing_targets(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[externals]\n"json:lodas" = "unordered"\n')
    p = run_py(tmp_path, "import json, poppy_jit", PYTHONPOPPY_CONFIG=str(cfg))
    assert p.returncode == 1 and "module json has no lodas (did you mean 'loads'?)" in p.stderr
    cfg.write_text('[externals]\n"os.nothere:f" = "unordered"\n')
    p = run_py(tmp_path, "import os, poppy_jit", PYTHONPOPPY_CONFIG=str(cfg))
    assert p.returncode == 1 and "no module named 'os.nothere'" in p.stderr
    cfg.write_text('[externals]\n"jsn:dumps" = "unordered"\n')
    p = run_py(tmp_path, "import json, poppy_jit", PYTHONPOPPY_CONFIG=str(cfg))
    assert p.returncode == 0
    assert ("PoppyConfigWarning: poppy_jit: PYTHONPOPPY_CONFIG names module 'jsn', which this "
            "program never imported (did you mean 'json'?)") in p.stderr


# ---------------------------------------------------------------------------------------------
# Bugs

def test_start_trace_writes_its_file_at_exit(tmp_path):
    out = tmp_path / "x.json"
    p = run_py(tmp_path, f"import poppy_jit\npoppy_jit.start_trace({str(out)!r})\n")
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["otherData"]["producer"] == "poppy_jit"


CANCEL = '''
    import asyncio, gc
    import poppy_jit
    from poppy_jit import poppy, unordered

    @unordered
    async def slow(x):
        await asyncio.sleep(5)
        return x

    @poppy
    def f(xs):
        return [slow(x) for x in xs]

    async def main():
        t = asyncio.create_task(poppy_jit.run(f, [1, 2]))
        await asyncio.sleep(0.3)
        t.cancel()
        try:
            await t
        except asyncio.CancelledError:
            print("cancelled")
        gc.collect()

    asyncio.run(main())
    gc.collect()
    print("end")
'''


@pytest.mark.parametrize("mode", ["", "1"])
def test_cancelling_run_leaves_no_unretrieved_future(tmp_path, mode):
    p = run_py(tmp_path, CANCEL, PYTHONPOPPY=mode)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["cancelled", "end"]
    assert "never retrieved" not in p.stderr and "Traceback" not in p.stderr, p.stderr


AWAITABLE = '''
    import asyncio
    from poppy_jit import unordered

    @unordered
    async def complete(prompt):
        await asyncio.sleep(0.01)
        return prompt.upper()

    async def main():
        one = await complete("a")
        many = await asyncio.gather(*[complete(p) for p in "bc"])
        also = await asyncio.gather(*(complete(p) for p in "de"))
        return one, many, also

    def helper():          # ordinary code still gets the value
        return complete("f")

    print(asyncio.run(main()), helper())
'''


@pytest.mark.parametrize("mode", ["", "1"])
def test_annotated_async_def_called_from_a_coroutine_returns_an_awaitable(tmp_path, mode):
    p = run_py(tmp_path, AWAITABLE, PYTHONPOPPY=mode)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "('A', ['B', 'C'], ['D', 'E']) F\n"


def test_annotated_async_def_inside_a_sync_poppy_function_in_a_running_loop(tmp_path):
    source = '''
        import asyncio, warnings
        from poppy_jit import poppy, unordered

        @unordered
        async def complete(prompt):
            return prompt.upper()

        @poppy
        def summary(xs):
            return [complete(x) for x in xs]

        async def cell():              # a notebook cell: sync call inside a running loop
            return summary(["a", "b"])

        warnings.simplefilter("ignore")
        print(asyncio.run(cell()))
    '''
    for mode in ("", "1"):
        p = run_py(tmp_path, source, PYTHONPOPPY=mode)
        assert p.returncode == 0 and p.stdout == "['A', 'B']\n", (mode, p.stderr)


# ---------------------------------------------------------------------------------------------
# OpenTelemetry, timeline labels, typing, the simulator's export line

OTEL_PROGRAM = '''
    import asyncio
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    from poppy_jit import poppy, unordered

    @unordered
    async def ask(prompt):
        await asyncio.sleep(0.05)
        return prompt

    @poppy
    def main(xs):
        return [ask(x) for x in xs]

    with trace.get_tracer("app").start_as_current_span("request") as request:
        print(main(["secret-a", "secret-bb"]))
    spans = {s.context.span_id: s for s in exporter.get_finished_spans()}
    for s in sorted(spans.values(), key=lambda s: s.start_time):
        parent = spans[s.parent.span_id].name if s.parent else None
        print(s.name, "<", parent, sorted(dict(s.attributes).items()),
              round((s.end_time - s.start_time) / 1e6))
'''


@needs_core
def test_opentelemetry_spans_per_external_call(tmp_path):
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk ([otel] extra) is not "
                                                    "installed")
    p = run_py(tmp_path, OTEL_PROGRAM, PYTHONPOPPY="1", PYTHONPOPPY_OTEL="1")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "['secret-a', 'secret-bb']"
    assert lines[1].startswith("request < None")
    assert lines[2].startswith("poppy_jit.run main < request")
    calls = [ln for ln in lines[3:] if ln.startswith("ask < poppy_jit.run main")]
    assert len(calls) == 2
    for ln in calls:
        assert "('poppy_jit.class', 'unordered')" in ln and "('code.function', 'ask')" in ln
        assert "('poppy_jit.call_site', 'main #" in ln and "poppy_jit.queue_wait_ms" in ln
        assert 40 <= int(ln.split()[-1]) < 1000  # the call's own duration, in ms
    assert "('poppy_jit.args', 'str[8]')" in calls[0] and "secret" not in "".join(calls)


@needs_core
def test_no_spans_without_the_switch(tmp_path):
    pytest.importorskip("opentelemetry.sdk")
    p = run_py(tmp_path, OTEL_PROGRAM, PYTHONPOPPY="1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1:] == [p.stdout.splitlines()[1]]  # only the app's span
    assert p.stdout.splitlines()[1].startswith("request < None")


def ask(x):  # a stand-in callee of the synthetic trace
    return x


def _synthetic_trace(tmp_path):
    from poppy_jit import _trace

    _trace.clear()
    _trace.start(None, include_args=False)
    try:
        t = 100.0
        _trace.record_run("main", t, t + 0.3, [
            (1, ask, ("sk-SECRET prompt",), "unordered", t, t, t, t + 0.1, True),
            (2, print, ("one",), "sequential", t + 0.1, t + 0.1, t + 0.1, t + 0.11, True),
            (3, print, ("two",), "sequential", t + 0.11, t + 0.11, t + 0.11, t + 0.12, True),
            (4, print, ("three",), "sequential", t + 0.12, t + 0.12, t + 0.12, t + 0.13, True),
            (5, ask, (["a", "b"],), "unordered", t + 0.13, t + 0.13, t + 0.13, t + 0.2, True),
        ])
        _trace.record_run("other", t + 0.3, t + 0.4, [
            (1, ask, ("x",), "unordered", t + 0.3, t + 0.3, t + 0.3, t + 0.4, True)])
        return _trace.write_trace(str(tmp_path / "t.json"))
    finally:
        _trace.stop()
        _trace.clear()


def test_timeline_rows_labelled_by_call_site_folded_and_filtered(tmp_path):
    from poppy_jit.timeline import load_rows

    path = _synthetic_trace(tmp_path)
    assert "SECRET" not in Path(path).read_text()
    rows = load_rows(path)
    assert [r.label.split() for r in rows][0] == ["main", "#1", "ask(str[16])"]
    folded = load_rows(path, fold=True)
    assert [r.label.split() for r in folded] == [
        ["main", "#1", "ask(str[16])"], ["main", "#2", "print", "×3"],
        ["main", "#5", "ask(list[2])"], ["other", "#1", "ask(str[1])"]]
    assert folded[1].end_ms == pytest.approx(130, abs=0.01)
    assert [r.function for r in load_rows(path, function="other")] == ["other"]
    assert [r.position for r in load_rows(path, function="print")] == [2, 3, 4]


def test_timeline_cli_filters_by_function(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib ([plot] extra) is not installed")
    path = _synthetic_trace(tmp_path)
    p = subprocess.run([sys.executable, "-m", "poppy_jit", "timeline", path, "-o",
                        str(tmp_path / "t.png"), "--function", "main"], env=_env(),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "(5 external calls)" in p.stdout


def test_decorators_keep_signatures_for_type_checkers(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed")
    (tmp_path / "typed.py").write_text(textwrap.dedent('''
        from poppy_jit import poppy, readonly, unordered

        @unordered
        async def ask(prompt: str, *, n: int = 1) -> str:
            return prompt

        @readonly(blocking=True)
        def lookup(key: str) -> int:
            return 1

        @poppy
        def report(topics: list[str]) -> list[int]:
            return [lookup(t) for t in topics]

        reveal_type(ask)
        reveal_type(lookup)
        reveal_type(report)
        lookup(3)
    '''))
    p = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                        str(tmp_path / "typed.py")], env=_env(), capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    out = p.stdout
    assert 'def (prompt: builtins.str, *, n: builtins.int =) -> typing.Coroutine' in out \
        or 'def (prompt: str, *, n: int =) -> typing.Coroutine' in out, out
    assert "def (key: str) -> int" in out or "def (key: builtins.str) -> builtins.int" in out
    assert "def (topics: list[str]) -> list[int]" in out or "builtins.list" in out
    assert 'Argument 1 to "lookup" has incompatible type "int"' in out
    assert out.count("error:") == 1


def test_package_is_typed_and_documented():
    pkg = Path(poppy_jit.__file__).parent
    assert (pkg / "py.typed").exists()
    doc = poppy_jit.__doc__
    for name in ("poppy", "unordered", "readonly", "sequential", "run", "PoppyWarning",
                 "PYTHONPOPPY_OTEL"):
        assert name in doc
    for name in poppy_jit.__all__:
        assert getattr(poppy_jit, name).__doc__, name


def test_sim_prints_the_export_line():
    proc = subprocess.Popen([sys.executable, "-m", "poppy_jit.sim", "--app", "city_excursions"],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        second = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    url = first.split("serving at ")[1].strip()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert second.strip() == f"in another shell:  export OPENAI_BASE_URL={url}"


def test_sim_fault_option():
    from poppy_jit.sim import parse_fault, Fault

    assert parse_fault("429:first=2:retry_after=0.5:match=Oceania") == Fault(
        429, match="Oceania", first=2, retry_after=0.5)
    with pytest.raises(Exception, match="bad fault field"):
        parse_fault("429:firs=2")


def test_readme_quick_start_runs_as_written(tmp_path):
    """The README's program, against the simulator it tells users to start: the same output
    plain and with PYTHONPOPPY=1."""
    import re

    from poppy_jit.sim import LatencyModel, SimServer, city_excursions

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    program = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    steps = re.search(r"### Quick start.*?```sh\n(.*?)```", readme, re.S).group(1)
    assert "python -m poppy_jit.sim --app city_excursions --port 8000 &" in steps
    assert "export OPENAI_BASE_URL=http://127.0.0.1:8000/v1" in steps
    (tmp_path / "prog.py").write_text(program)
    with SimServer(city_excursions, LatencyModel(ttft=0.02, per_token=0.0)) as sim:
        outs = []
        for mode in ("", "1"):
            p = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True,
                               text=True, timeout=120,
                               env=_env(PYTHONPOPPY=mode, OPENAI_BASE_URL=sim.base_url))
            assert p.returncode == 0 and p.stderr == "", p.stderr
            outs.append(p.stdout)
    assert outs[0] == outs[1] and outs[0].startswith("Sydney\n")


@needs_core
def test_a_poppy_coroutine_that_is_not_intercepted_warns(tmp_path):
    p = run_py(tmp_path, '''
        import asyncio
        from poppy_jit import poppy

        @poppy
        async def agent(x):
            return [await asyncio.sleep(0, v) for v in (x,)][0]   # await in a comprehension

        print(asyncio.run(agent(3)))
    ''', PYTHONPOPPY="1")
    assert p.returncode == 0 and p.stdout == "3\n", p.stderr
    assert p.stderr.count("PoppyFallbackWarning: poppy_jit: agent runs as plain CPython") == 1


def test_pyproject_dependencies_are_bounded_and_match_what_is_imported():
    import importlib.metadata
    import re
    import tomllib

    meta = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    project = meta["project"]
    assert project["readme"] == "README.md" and project["license"]
    deps = project["dependencies"] + [d for ds in project["optional-dependencies"].values()
                                      for d in ds]
    for dep in deps:
        assert re.search(r">=[\d.]+,<\d", dep), f"unbounded: {dep}"
    names = {re.split(r"[<>=\[]", d)[0] for d in project["dependencies"]}
    assert names == {"openai", "httpx2", "aiolimiter"}
    # The SDK really is built on httpx2 (so the declared HTTP client is the one in use).
    requires = importlib.metadata.requires("openai") or []
    assert any(r.startswith("httpx2") for r in requires)
    assert set(project["optional-dependencies"]) >= {"plot", "otel", "ray"}


@needs_core
def test_warnings_for_code_run_with_dash_c():
    code = ("from poppy_jit import poppy\n@poppy\ndef gen(n):\n    yield n\nprint(list(gen(2)))\n")
    p = subprocess.run([sys.executable, "-c", code], env=_env(PYTHONPOPPY="1"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == "[2]\n", p.stderr
    assert "<string>:2: PoppyFallbackWarning: poppy_jit: gen runs as plain CPython" in p.stderr


def test_otel_switch_without_opentelemetry_warns(tmp_path):
    fake = tmp_path / "fake" / "opentelemetry"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = _env(PYTHONPOPPY_OTEL="1")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "fake"), env["PYTHONPATH"]])
    p = subprocess.run([sys.executable, "-c", "import poppy_jit; print('ran')"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == "ran\n", p.stderr
    assert ("PoppyConfigWarning: poppy_jit: PYTHONPOPPY_OTEL=1 needs OpenTelemetry: pip install "
            "'poppy_jit[otel]'; PYTHONPOPPY_OTEL=1 ignored") in p.stderr


GATED = '''
import contextlib
from poppy_jit import poppy, unordered

@unordered
def ask(q):
    return q.upper()

def log(msg):
    print(msg)

class Section:
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False

@poppy
def around(items):                 # a with around a loop that may break: its iterations are gated
    out = []
    with Section():
        for it in items:
            if it == "stop":
                break
            out.append(ask(it))
    return out

@poppy
def spec(items):                   # a with around a loop that may only raise: speculative
    out = []
    with Section():
        for it in items:
            out.append(ask(it))
    return out

@poppy
def inside(items):                 # a try inside the loop body: the iterations overlap
    out = []
    for it in items:
        try:
            out.append(ask(it))
        except KeyError:
            log("missing")
    return out

print(around(["a", "b", "c"]), inside(["d", "e"]), spec(["f", "g"]))
'''


@needs_core
def test_a_loop_gated_by_a_with_body_is_named_in_the_warning(tmp_path):
    """One call at a time because a loop that may break sits in a with body: the warning says so
    (and points at that statement), instead of blaming an annotation that would not change
    anything; a try inside the loop body, whose iterations overlap, is not blamed, nor is a
    with around a loop that may only raise (its iterations run speculatively)."""
    p = run_py(tmp_path, GATED, PYTHONPOPPY="1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "['A', 'B', 'C'] ['D', 'E'] ['F', 'G']"
    err = p.stderr
    assert err.count("PoppySequentialWarning") == 1, err
    assert "around made its external calls one at a time (peak in flight 1): the loop in the " \
           "body of the try or with statement at line 21 runs its iterations one after another" in err
    assert "not annotated" not in err    # Section and ask are not to blame
    assert "inside made" not in err
    assert "spec made" not in err
