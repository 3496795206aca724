# poppy_jit.fuzz reproducer: sequential: async external that raises
# Run it twice and compare the output (it prints each call's output, result and its trace
# with the permitted reorderings normalised away):
#   PYTHONHASHSEED=0 python repro.py > plain.txt; PYTHONHASHSEED=0 PYTHONPOPPY=1 python repro.py > poppy.txt; diff plain.txt poppy.txt
# output: plain has 0 item(s), poppy 1; from #0: plain [], poppy ["[s_put ('k2', 1)]"]
# sequential: plain has 0 item(s), poppy 1; from #0: plain [], poppy [('s_put', "('k2', 1)", 0)]
from poppy_jit.fuzz.prelude import *

@poppy
def f0(n, s, xs):
    i0 = u_fail(-1)
    i1 = 1
    s_put('k2', i1)
run_case(0, f0, 4, 'bay', 3)
