"""Per-object ordering under generated programs: 90 random @poppy functions over lists and dicts
the run creates, mixing object-local operations (append/insert/pop, subscripts, len, iteration,
str.join, dict get/set, also inside inlined @poppy helpers) with slow async values, escapes (a slow sequential external that
mutates the object, a global store, a bound method handed to an external, a tuple holding the
object) and sequential logging. The same file runs under plain CPython and with PYTHONPOPPY=1:
stdout (every function's result and the log, in order) must be identical, and the objects must
really have been ordered locally (stats)."""
import json
import random
import textwrap

import pytest
from subproc import run_file

pytest.importorskip("poppy_jit._core")

PRELUDE = textwrap.dedent('''
    import asyncio, json, sys
    import poppy_jit
    from poppy_jit import poppy, sequential, unordered

    HELD = []

    @unordered
    async def val(k):
        await asyncio.sleep((k * 7 % 5) * 0.002)
        return f"v{k}"

    @sequential
    async def mutate(obj, tag):
        await asyncio.sleep(0.004)
        if type(obj) is list:
            obj.append(tag)
        else:
            obj[tag] = tag

    @sequential
    def log(*xs):
        print("log", *xs)

    @sequential
    async def look(obj):
        await asyncio.sleep(0.003)
        print("look", sorted(obj) if type(obj) is dict else list(obj))

    @sequential
    async def call(f, x):
        await asyncio.sleep(0.003)
        f(x)

    @sequential
    def held_len():
        return sum(len(h) for h in HELD)

    @poppy
    def peek(l):
        return len(l), (l[-1] if l else None)

    @poppy
    def grow(l, v):
        l.append(v)

    @poppy
    def alias_of(l):
        return l

    @unordered
    async def later(x):
        await asyncio.sleep(0.003)
        return x
''')


def gen_function(rng, idx):
    lines = [f"@poppy", f"def f{idx}():", "    xs = []", "    d = {}", "    out = []"]
    k = idx * 100
    for _ in range(rng.randint(6, 14)):
        k += 1
        op = rng.choice([
            "xs.append(val({k}))", "xs.append('c{k}')", "xs.insert(0, val({k}))",
            "out.append(len(xs))", "out.append(xs[-1] if xs else None)",
            "out.append(xs.pop() if xs else None)", "out.append(','.join(xs))",
            "d['k{m}'] = val({k})", "out.append(d.get('k{m}'))", "out.append(len(d))",
            "for e in list(xs):\n        out.append(e)",
            "mutate(xs, 'm{k}')", "mutate(d, 'm{k}')", "look(xs)", "log(len(xs), val({k}))",
            "HELD.append(xs)", "out.append(held_len())", "call(xs.append, 'cb{k}')",
            "look((xs, 1)[0])", "xs[0] = val({k}) if False else 'set{k}'",
            "out.append(peek(xs))", "grow(xs, val({k}))", "alias_of(xs).append('a{k}')",
            "out.append(later(len(xs)))", "xs.append(later('l{k}'))",
        ])
        stmt = op.format(k=k, m=rng.randint(0, 2))
        if stmt.startswith("xs[0] ="):
            stmt = "if xs:\n        " + stmt
        lines.append("    " + stmt)
    lines.append("    return out, list(xs), sorted(d.items())")
    return "\n".join(lines) + "\n"


def program(seed, n):
    rng = random.Random(seed)
    body = [PRELUDE] + [gen_function(rng, i) for i in range(n)]
    calls = "\n".join(f"print({i}, f{i}())\nHELD.clear()" for i in range(n))
    tail = textwrap.dedent('''
        if poppy_jit.is_enabled():
            st = poppy_jit.stats()
            print(json.dumps({k: st[k] for k in ("object_local_calls", "object_escapes")}), file=sys.stderr)
            print(json.dumps(st["fallbacks"]), file=sys.stderr)
    ''')
    return "\n".join(body) + "\n" + calls + "\n" + tail


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_programs_match_cpython(tmp_path, seed):
    path = tmp_path / "gen.py"
    path.write_text(program(seed, 30))
    plain, popped = run_file(path, False, 120), run_file(path, True, 120)
    assert plain.returncode == 0, plain.stderr
    assert popped.returncode == 0, popped.stderr
    assert popped.stdout == plain.stdout
    err = popped.stderr.strip().splitlines()
    counts, fallbacks = json.loads(err[-2]), json.loads(err[-1])
    assert fallbacks == [] or fallbacks == {}, fallbacks
    assert counts["object_local_calls"] > 100 and counts["object_escapes"] > 20, counts
