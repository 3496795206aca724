# A while loop that is the last statement of a for (or while) loop's body and holds a `continue`
# (issue 21): 3.12/3.13 thread the exit of its test at the top straight back to the enclosing
# loop's head, where 3.11 jumps to the exit of the test's bottom copy (itself that jump back).
# With the `continue` going to the top test, the lifter's structure recovery went round a cycle
# of regions on 3.12/3.13 (an inlined comprehension in the body: a fallback "statements nested
# too deeply"; without one: "blocks shared by too many paths"); they now compile as on 3.11.
# Variants: a list, set and dict comprehension, a generator expression, none, an enclosing
# `while True` loop, the while in an if (3.13 lays its two exits out as two jumps back), a
# compound test (3.12 threads each of its jumps), a break beside the continue, the loop running
# for real with external calls.
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def listcomp_continue(rows, skip):
    got = []
    for row in rows:
        n = len(row)
        while n:
            n -= 1
            words = [w.upper() for w in row[n:]]
            if words[0] in skip:
                continue
            got.append(llm(f"count: {' '.join(words)}"))
    return got


@poppy
def genexpr_continue(rows, limit):
    total = []
    for row in rows:
        n = row
        while n > 0:
            s = sum(k * k for k in range(n))
            n -= 2
            if s > limit:
                continue
            total.append(llm(f"count: {s}"))
    return total


@poppy
def setcomp_dictcomp_continue(rows):
    out = []
    for row in rows:
        i = len(row)
        while i:
            i -= 1
            seen = {c for c in row[i]}
            pos = {c: j for j, c in enumerate(row[i])}
            if len(seen) < len(row[i]):
                continue
            out.append((llm(f"yesno: {row[i]}"), sorted(pos.items())))
    return out


@poppy
def no_comprehension(items):
    out = []
    for it in items:
        k = it
        while k:
            k -= 1
            if k % 2:
                continue
            out.append(llm(f"count: {it}-{k}"))
    return out


@poppy
def in_while_loop(n):
    log(f"start {n}")
    out = []
    while True:
        if not n:
            break
        n -= 1
        m = n
        while m:
            m -= 1
            xs = [m * q for q in range(3)]
            if sum(xs) % 3 == 0 and m:
                continue
            out.append(llm(f"count: {n}/{m}/{xs}"))
    return out


@poppy
def with_break(rows, stop):
    got = []
    for row in rows:
        n = len(row)
        while n:
            n -= 1
            vals = [v for v in row if v != n]
            if n in vals:
                continue
            if n == stop:
                break
            got.append(llm(f"count: {vals}"))
    return got


@poppy
def never_entered(work, xs, flag):
    for _ in work:
        w = 0
        log(f"before while {w}")
        while w:
            kept = [q for q in xs]
            if flag:
                continue
    return len(work)


@poppy
def failing_body(rows):
    got = []
    for row in rows:
        n = len(row)
        while n:
            n -= 1
            inv = [10 // v for v in row[n:]]
            if inv[0] > 3:
                continue
            got.append(llm(f"count: {inv}"))
    return got


@poppy
def inside_if(items, go):
    out = []
    for it in items:
        if it in go:
            k = it
            while k:
                k -= 1
                if k == 2:
                    continue
                out.append(llm(f"count: {it}.{k}"))
        else:
            log(f"skipped {it}")
    return out


@poppy
def compound_test(items, limit):
    out = []
    for it in items:
        k = it
        while k and len(out) < limit:
            k -= 1
            if k % 3 == 0:
                continue
            out.append(llm(f"count: {it}:{k}"))
    return out


def attempt(f, *args):
    try:
        print(f.__name__, repr(f(*args)))
    except Exception as e:
        print(f.__name__, "caller caught", type(e).__name__, e)


attempt(listcomp_continue, [["a", "b", "c"], ["x"], [], ["b", "d"]], {"B", "X"})
attempt(genexpr_continue, [5, 0, 3, 8], 20)
attempt(setcomp_dictcomp_continue, [["ab", "aa", "xyz"], [], ["qq"]])
attempt(no_comprehension, [0, 3, 5])
attempt(in_while_loop, 4)
attempt(with_break, [[0, 1, 2, 3], [5, 2], [1, 1]], 1)
attempt(never_entered, [1, 2, 3], [4], True)
attempt(failing_body, [[1, 2, 5], [4, 0, 2]])
attempt(inside_if, [3, 4, 1, 5], {4, 5})
attempt(compound_test, [4, 7, 2], 5)
