# poppy_jit.fuzz reproducer: sequential: call of a @poppy function, external that raises, for over a global container a helper mutates
# Run it twice and compare the output (it prints each call's output, result and its trace
# with the permitted reorderings normalised away):
#   PYTHONHASHSEED=0 python repro.py > plain.txt; PYTHONHASHSEED=0 PYTHONPOPPY=1 python repro.py > poppy.txt; diff plain.txt poppy.txt
# output: plain has 1 item(s), poppy 6; from #1: plain [], poppy ['[h0_more (3,)]', '[h0_more (3,)]', '[h0_more (3,)]']
# sequential: plain has 1 item(s), poppy 6; from #1: plain [], poppy [('h0_more', '(3,)', 2), ('h0_more', '(3,)', 4), ('h0_more', '(3,)', 6)]
from poppy_jit.fuzz.prelude import *
g0_work = [3]

def h0_more(x):
    note('h0_more', x)
    if len(g0_work) < 6:
        g0_work.append(x)

@poppy
def p0_1(x, y):
    z = ub_fail(x)

@poppy
def f0(n, s, xs):
    i2 = 7
    for x4 in g0_work:
        h0_more(x4)
        i2 = p0_1(i2, s)
run_case(0, f0, 5, 'cove', 5)
