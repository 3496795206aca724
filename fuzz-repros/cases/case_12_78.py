# poppy_jit.fuzz reproducer: sequential: call of a @poppy function, external that raises, for over a global container a helper mutates
# Run it twice and compare the output (it prints each call's output, result and its trace
# with the permitted reorderings normalised away):
#   PYTHONHASHSEED=0 python repro.py > plain.txt; PYTHONHASHSEED=0 PYTHONPOPPY=1 python repro.py > poppy.txt; diff plain.txt poppy.txt
# output: plain has 2 item(s), poppy 6; from #2: plain [], poppy ['[h78_more (2,)]', '[h78_more (4,)]', '[h78_more (3,)]']
# sequential: plain has 2 item(s), poppy 6; from #2: plain [], poppy [('h78_more', '(2,)', 4), ('h78_more', '(4,)', 6), ('h78_more', '(3,)', 8)]
# output: plain has 2 item(s), poppy 6; from #2: plain [], poppy ['[h78_more (2,)]', '[h78_more (4,)]', '[h78_more (3,)]']
# sequential: plain has 2 item(s), poppy 6; from #2: plain [], poppy [('h78_more', '(2,)', 4), ('h78_more', '(4,)', 6), ('h78_more', '(3,)', 8)]
import asyncio
import contextlib
import itertools
from poppy_jit.fuzz.prelude import *
set_sleep(1.0)


# case 0
g0_a = 5

g0_work = [1, 3]

def h0_more(x):
    note('h0_more', x)
    if len(g0_work) < 6:
        g0_work.append(x + 1)

@poppy
def p0_1(x, y):
    z = (x ** 1 % 101)
    z = x
    z = ub_fail(x)
    return max(len(y), x)

g0_cfg = {"mode": 'bay'}

@poppy
def p0_push(c, v):
    c.append(v)
    return len(c)

@poppy
def f0(n, s, xs):
    i1 = u_num(n)
    t1 = 'elm'
    l1 = list(xs)
    d0 = {}
    i2 = 7
    def g1(a):
        nonlocal i2
        s_log('g1', i2)
        i2 += a
        return i2
    g2 = lambda a: len([n for q3 in range(s_fail(a) % 4) if g0_a == i1])
    for x4 in g0_work:
        h0_more(x4)
        i2 = p0_1((i2 - 11), s)
    else:
        return (d0, i1, i2, l1, t1, g0_a,)
    t1 = (t1 + g0_cfg["mode"])[-12:]
    i1 = g0_a + len([k for k, v in d0.items() if v > 6])
    t0 = (str(r_sum(l1)) + '-' + "-".join(str(2) for q5 in range((g0_a - i1) % 4)))
    if ((not -2 in l1 or len(l1) < i1) or g0_a <= i1):
        i0 = u_num(sum({q6: g0_a for q6 in l1}.values()))
        t0 = f"{i0}-{'ash'}"
        i2 = g0_a + (i0 % 2)
    else:
        for x7 in xs:
            pass
    return (d0, i1, i2, l1, t0, t1,)

run_case(0, f0, 5, 'cove', [5])
g0_a = 11
run_case(0, f0, 5, 'cove', [5])
