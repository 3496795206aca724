"""Declared result types of externals (docs/semantics.md, "Declared result types"): the
declaration forms (return annotations, `returns=`, a config's `returns = "..."`), their checks,
and a result that contradicts its declaration — a visible error naming the external and the
declaration, after which nothing later and ordered runs (an explicit returns=, or an annotation
something relied on), or, for a return annotation nothing relied on, CPython's run with a
PoppyWarning. A large checked result keeps the class its declaration's sample gave. Overlap itself is checked by the
differential programs p494 and p590–p595."""
import subprocess
import sys
import textwrap

import pytest

from subproc import poppy_env

pytest.importorskip("poppy_jit._core")

from poppy_jit import _declared, readonly, unordered  # noqa: E402
from poppy_jit._config import ConfigError, load  # noqa: E402


def _run(tmp_path, src, poppy=True, args=()):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(src))
    return subprocess.run([sys.executable, *args, str(path)], capture_output=True, text=True,
                          env=poppy_env(poppy), timeout=60)


@pytest.mark.parametrize("text, value, ok", [
    ("list[str]", ["a", "b"], True),
    ("list[str]", ["a", 1], False),
    ("list[str]", ("a",), False),
    ("tuple[str, ...]", ("a", "b"), True),
    ("tuple[str, int]", ("a", 1), True),
    ("tuple[str, int]", ("a", 1, 2), False),
    ("dict[str, list[int]]", {"a": [1, True]}, True),
    ("dict[str, int]", {1: 1}, False),
    ("str | None", None, True),
    ("float", 1, True),
    ("int", 1.0, False),
    ("json", {"a": [1, 2.5, None, {"b": True}]}, True),
    ("json", {"a": (1,)}, False),
    ("bytes", "x", False),
])
def test_check_is_deep_and_exact(text, value, ok):
    assert _declared.check(_declared.parse(text), value) is ok


def test_a_subclass_of_str_is_not_a_str():
    class S(str):
        pass
    assert not _declared.check(str, S("x"))
    assert not _declared.check(_declared.parse("list[str]"), [S("x")])


def test_annotations_and_explicit_declarations():
    assert _declared.normalise(list[str]) == ("list", str)
    assert _declared.normalise(list) is None  # `-> list` declares nothing
    assert _declared.normalise(dict[int, str]) is None

    @unordered(returns=list[str])
    def f(x):
        return [x]
    assert f.__poppy_external__.returns == ("list", str)
    assert f("a") == ["a"]  # plain call: the function's own result

    with pytest.raises(TypeError, match="not a plain data type"):
        readonly(returns=object)


def test_config_returns_is_validated_with_a_suggestion(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('[externals]\n"m:f" = { kind = "unordered", blocking = true, returns = "list[str]" }\n')
    plan = load(str(good))
    assert plan["m"][0][2]["returns"] == ("list", str)
    bad = tmp_path / "bad.toml"
    bad.write_text('[externals]\n"m:f" = { kind = "unordered", returns = "lsit[str]" }\n')
    with pytest.raises(ConfigError, match=r"returns 'lsit\[str\]' is not a plain data type \(did you mean 'list\[str\]'\?\)"):
        load(str(bad))
    bad.write_text('[externals]\n"m:f" = { kind = "unordered", returns = "dict[int, str]" }\n')
    with pytest.raises(ConfigError, match="keys must be str"):
        load(str(bad))


VIOLATED = """
    import asyncio
    from poppy_jit import poppy, sequential, unordered

    @unordered
    async def ask(prompt) -> list[str]:
        await asyncio.sleep(0.05 if prompt == "b" else 0.01)
        return [prompt.upper(), 7] if prompt == "b" else [prompt.upper()]

    @sequential
    def log(*xs):
        print("log", *xs, flush=True)

    @poppy
    def main(prompts):
        out = []
        for p in prompts:
            r = ask(p)
            log(p, r[0].lower())
            out.append(len(r))
        return out

    print(main(["a", "b", "c"]))
"""


def test_a_result_violating_its_declaration_stops_the_run_visibly(tmp_path):
    plain = _run(tmp_path, VIOLATED, poppy=False)
    assert plain.returncode == 0 and "log c c" in plain.stdout, plain.stderr
    popped = _run(tmp_path, VIOLATED)
    assert popped.returncode == 1, popped.stdout + popped.stderr
    last = popped.stderr.strip().splitlines()[-1]
    assert last.startswith("TypeError: poppy_jit: the result of __main__:ask does not have its "
                           "declared return type list[str] (got a list of int / str)"), popped.stderr
    # The sequential calls before the failing one ran, nothing ordered after it did.
    assert popped.stdout.splitlines() == ["log a a"], popped.stdout


def test_a_blocking_external_configured_with_returns(tmp_path):
    (tmp_path / "models.py").write_text(textwrap.dedent("""
        import threading, time
        LOCK = threading.Lock()
        NOW = MAX = 0
        def gpt(prompt, n=1):
            global NOW, MAX
            with LOCK:
                NOW += 1
                MAX = max(MAX, NOW)
            time.sleep(0.2)
            with LOCK:
                NOW -= 1
            return [f"{prompt} one\\n{prompt} two"] * n
    """))
    (tmp_path / "poppy.toml").write_text(textwrap.dedent("""
        [poppy]
        functions = ["__main__:expand"]
        [externals]
        "models:gpt" = { kind = "unordered", blocking = true, returns = "list[str]" }
    """))
    src = """
        import time, models
        class Task:
            prefix = "p:"
        def expand(task, xs):
            out = []
            for x in xs:
                prompt = task.prefix + x
                lines = models.gpt(prompt)[0].split("\\n")
                out.append(lines[-1])
            return out
        if __name__ == "__main__":
            print(expand(Task(), ["a", "b", "c", "d"]))
            import sys; print("max in flight", models.MAX, file=sys.stderr)
    """
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(src))
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           env=poppy_env(False), cwd=tmp_path, timeout=60)
    launched = subprocess.run([sys.executable, "-m", "poppy_jit", "run", "--config", "poppy.toml",
                               "prog.py"], capture_output=True, text=True, env=poppy_env(False),
                              cwd=tmp_path, timeout=60)
    assert launched.returncode == 0, launched.stderr
    assert plain.stdout == launched.stdout
    # One after another plainly; under the runtime they overlap: the order passes the
    # subscript and the split of each pending reply, so the next attribute read need not wait.
    assert "max in flight 1" in plain.stderr
    assert int(launched.stderr.split("max in flight ")[-1].split()[0]) >= 2, launched.stderr


LOOSE = """
    import asyncio
    from poppy_jit import poppy, sequential, unordered

    @unordered{options}
    async def ask(prompt) -> str:
        await asyncio.sleep(0.05 if prompt == "b" else 0.01)
        return None if prompt != "a" else prompt.upper()  # None "on error": not a str

    @sequential
    def log(*xs):
        print("log", *xs, flush=True)

    @poppy
    def main():
        a = ask("a")
        b = ask("b")
        c = ask("c")
        log("asked")
        return a, b, c

    print(main())
    print(main())
"""


def test_a_loose_return_annotation_nothing_relied_on_is_used_as_cpython_would(tmp_path):
    # `-> str` on a function that returns None: nothing was ordered on the strength of the
    # annotation before the values arrived, so the run is CPython's, with one warning.
    src = LOOSE.format(options="")
    plain = _run(tmp_path, src, poppy=False)
    popped = _run(tmp_path, src)
    assert plain.returncode == 0, plain.stderr
    assert popped.returncode == 0, popped.stderr
    assert popped.stdout == plain.stdout == "log asked\n('A', None, None)\nlog asked\n('A', None, None)\n"
    warning = ("PoppyWarning: poppy_jit: ask is annotated -> str but returned a value of type "
               "NoneType")
    assert popped.stderr.count(warning) == 1, popped.stderr
    assert "Warning" not in plain.stderr


def test_an_explicit_returns_mismatch_is_an_error_even_when_nothing_relied_on_it(tmp_path):
    src = LOOSE.format(options="(returns=str)")
    popped = _run(tmp_path, src)
    assert popped.returncode == 1, popped.stdout + popped.stderr
    last = popped.stderr.strip().splitlines()[-1]
    assert last.startswith("TypeError: poppy_jit: the result of __main__:ask does not have its "
                           "declared return type str (got a value of type NoneType)"), popped.stderr
    assert "PoppyWarning" not in popped.stderr


def test_a_loose_annotation_something_relied_on_names_what(tmp_path):
    # The same annotation, but the order passed a comparison of the pending result before it
    # arrived: continuing with None would not be CPython's order, so the run stops, naming the
    # external, the declaration and what relied on it.
    src = """
        import asyncio
        from poppy_jit import poppy, sequential, unordered

        @unordered
        async def ask(prompt) -> str:
            await asyncio.sleep(0.05)
            return None

        @sequential
        def log(*xs):
            print("log", *xs, flush=True)

        @poppy
        def main():
            answer = ask("x")
            if answer == "yes":
                log("yes")
            log("done")

        main()
    """
    plain = _run(tmp_path, src, poppy=False)
    assert plain.returncode == 0 and plain.stdout == "log done\n", plain.stderr
    popped = _run(tmp_path, src)
    assert popped.returncode == 1, popped.stdout + popped.stderr
    last = popped.stderr.strip().splitlines()[-1]
    assert last.startswith("TypeError: poppy_jit: the result of __main__:ask does not have its "
                           "declared return type str (got a value of type NoneType); the call at "
                           "line 17, classified on its stand-in, relied on the declaration"), popped.stderr
    assert popped.stdout == ""


def test_a_large_declared_result_keeps_the_class_its_sample_gave(tmp_path):
    # 20,000 strs: the annotation library gives up walking a list that long (the strictest
    # class), but the value passed the deep check at arrival, so the class `in` got from the
    # declaration's sample holds for it — no "program order was already passed on" error.
    src = """
        import asyncio
        from poppy_jit import poppy, sequential, unordered

        @unordered
        async def ask(n) -> list[str]:
            await asyncio.sleep(0.05)
            return [str(i) for i in range(n)]

        @unordered
        async def total(xs):
            await asyncio.sleep(0.01)
            return sum(len(x) for x in xs)

        @sequential
        def log(*xs):
            print("log", *xs, flush=True)

        @poppy
        def main():
            r = ask(20000)
            found = "5" in r
            t = total(r)
            log("after")
            return found, t, len(r), r[-1]

        print(main())
    """
    plain = _run(tmp_path, src, poppy=False)
    popped = _run(tmp_path, src)
    assert plain.returncode == 0, plain.stderr
    assert popped.returncode == 0, popped.stderr
    assert popped.stdout == plain.stdout == "log after\n(True, 88890, 20000, '19999')\n"
