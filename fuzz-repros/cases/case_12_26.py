# poppy_jit.fuzz reproducer: sequential: async external that raises
# Run it twice and compare the output (it prints each call's output, result and its trace
# with the permitted reorderings normalised away):
#   PYTHONHASHSEED=0 python repro.py > plain.txt; PYTHONHASHSEED=0 PYTHONPOPPY=1 python repro.py > poppy.txt; diff plain.txt poppy.txt
# output: plain has 0 item(s), poppy 2; from #0: plain [], poppy ["[s_put ('k2', 0)]", "[n_put ('k0', 4)]"]
# sequential: plain has 0 item(s), poppy 2; from #0: plain [], poppy [('s_put', "('k2', 0)", 0), ('n_put', "('k0', 4)", 2)]
# readonly: missing under poppy {}, extra under poppy {(0, 0, 'r_get', "('bay',)"): 1, (1, 2, 'r_get', "('ash',)"): 1}
import asyncio
import contextlib
import itertools
from poppy_jit.fuzz.prelude import *
set_sleep(1.0)


# case 0
g0_a = 11

@sequential
def h0_sg(k):
    global g0_a
    note('h0_sg', k)
    g0_a += k

@poppy
def f0(n, s, xs):
    i0 = u_fail(-1)
    t0 = s
    l0 = list(xs)
    d0 = {str(q1): n for q1 in range(0)}
    def g2(a):
        nonlocal i0
        i0 += a
        return i0
    i1 = 1
    def g3(a):
        nonlocal i1
        s_log('g3', i1)
        i1 += a
        return i1
    def g4(a):
        return r_get(s)
    d0['k1'] = -2
    d0 = dict(d0)
    s_put('k2', g4((i1 ** 0 % 101)))
    i2 = r_get('ash')
    if i2 in l0:
        h0_sg(sum(d0.values()))
        l1 = xs[2:2]
    n_put('k0', n)
    i0 = i1
    if xs:
        xs.pop(0)
    return (d0, i0, i1, i2, l0, t0, g0_a,)

run_case(0, f0, 4, 'bay', [7, 5, 3])
