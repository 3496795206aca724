"""Transitive compilation (modules named internal) and inlined calls with keywords/defaults, seen
from outside: the patterns of `internal`, a package named in a config and run through the
launcher, and `explain` telling which calls a run inlines. The differential programs
p242/p243 check results against CPython."""
import subprocess
import sys
import textwrap

import pytest

from poppy_jit import _config
from subproc import poppy_env


@pytest.fixture
def patterns():
    saved = (list(_config._internal), _config._main_internal)
    yield _config
    _config.set_internal(saved[0])
    _config.set_main_internal(saved[1])


def test_internal_patterns(patterns):
    patterns.set_internal(["mypkg", "tasks.*", "tools_?"])
    yes = ["mypkg", "mypkg.sub.mod", "tasks.a", "tasks.a.b", "tools_1"]
    no = ["mypkgx", "tasks", "taskss.a", "tools_12", "poppy_jit", "other", "__main__"]
    assert [n for n in yes if not patterns.is_internal_module(n)] == []
    assert [n for n in no if patterns.is_internal_module(n)] == []
    patterns.set_main_internal(True)
    assert patterns.is_internal_module("__main__")
    patterns.set_internal(["poppy_jit"])
    assert not patterns.is_internal_module("poppy_jit._config")  # never the runtime itself
    with pytest.raises(ValueError):
        patterns.set_internal([".rel"])


def test_externals_of_internal_modules_stay_external(patterns):
    from poppy_jit import unordered

    @unordered
    def ext(x):
        return x

    def plain(x):
        return x

    patterns.set_internal([__name__])
    assert patterns.is_internal(plain) and not patterns.is_internal(ext)


def _run(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          env=poppy_env(False), timeout=120)


def test_config_internal_package_through_the_launcher(tmp_path):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "__init__.py").write_text("")
    (tmp_path / "agents" / "prompts.py").write_text(textwrap.dedent("""\
        def build(topic, *, tone="neutral", n=2):
            return f"{tone}:{n}:{topic}"
    """))
    (tmp_path / "agents" / "core.py").write_text(textwrap.dedent("""\
        import threading, time
        from agents.prompts import build
        live = peak = 0
        lock = threading.Lock()

        def model(prompt):
            global live, peak
            with lock:
                live += 1
                peak = max(peak, live)
            time.sleep(0.2)
            with lock:
                live -= 1
            return prompt.upper()

        class Agent:
            def __init__(self, name):
                self.name = name
            def ask(self, topic, tone="calm"):
                return model(build(f"{self.name}/{topic}", tone=tone))

        def ask(name, topic, tone="calm"):
            return model(build(f"{name}/{topic}", tone=tone))

        def run(names, topic):
            answers = [ask(n, topic) for n in names]
            return answers, Agent("z").ask(topic, tone="dry")
    """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""\
        import sys
        from agents import core
        print(core.run(["a", "b", "c", "d"], "t"))
        import poppy_jit
        if poppy_jit.is_enabled():
            st = poppy_jit.stats()
            print("peak", core.peak, "inlined", st["inlined_calls"] > 0,
                  "fallbacks", st["fallbacks"], file=sys.stderr)
    """))
    (tmp_path / "poppy.toml").write_text(textwrap.dedent("""\
        [poppy]
        functions = ["agents.core:run"]
        internal = ["agents"]
        [externals]
        "agents.core:model" = { kind = "unordered", blocking = true }
    """))
    plain = _run(["main.py"], tmp_path)
    assert plain.returncode == 0, plain.stderr
    launched = _run(["-m", "poppy_jit", "run", "main.py"], tmp_path)
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout == plain.stdout
    # core.ask and prompts.build (keyword-only with a default) are inlined into run, so the
    # four model calls overlap; Agent.ask (a method) is inlined too.
    assert "peak 4 inlined True fallbacks []" in launched.stderr
    # Without `internal`, ask is one sequential call: nothing overlaps.
    (tmp_path / "poppy.toml").write_text(
        (tmp_path / "poppy.toml").read_text().replace('internal = ["agents"]\n', ""))
    launched = _run(["-m", "poppy_jit", "run", "main.py"], tmp_path)
    assert launched.stdout == plain.stdout
    assert "peak 1 inlined False" in launched.stderr


EXPLAINED = """\
from poppy_jit import poppy, unordered

@unordered
def ask(q):
    return q

def fmt(q, *, style="plain", n=1):
    return f"{style}{n}{q}"

def spread(*qs):
    return list(qs)

@poppy
def helper(q, loud=False):
    return ask(q)

@poppy
def top(q):
    a = helper(q, loud=True)
    b = fmt(q, style="x")
    c = spread(q)
    return a, b, c
"""


def test_explain_reports_inlining_as_a_run_does(tmp_path):
    (tmp_path / "explained_kw.py").write_text(EXPLAINED)
    (tmp_path / "run_explain.py").write_text(textwrap.dedent("""\
        import sys
        import poppy_jit
        from poppy_jit.__main__ import explain_text
        import explained_kw
        if sys.argv[1] == "internal":
            poppy_jit.set_internal(["explained_kw"])
        print(explain_text(explained_kw.top, show_ir=False))
    """))
    out = _run(["run_explain.py", "plain"], tmp_path)
    assert out.returncode == 0, out.stderr
    # a @poppy callee called with a keyword and a default: inlined (it used to be a plain call
    # that explain called inlined)
    assert "helper: compiled, inlined at the call" in out.stdout
    assert "fmt:" not in out.stdout  # not internal: an ordinary external
    out = _run(["run_explain.py", "internal"], tmp_path)
    assert "helper: compiled, inlined at the call" in out.stdout
    assert "fmt: compiled, inlined at the call" in out.stdout
    assert "spread: NOT inlined (it takes *args or **kwargs)" in out.stdout
