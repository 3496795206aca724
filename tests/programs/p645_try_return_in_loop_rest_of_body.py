# A try statement whose body always leaves (`return`), in a loop, followed by more of the loop's
# body, which only its handlers reach (issue 21, parity run seed 7): 3.12/3.13 leave that code
# after the whole function, right after the handler chain; the normaliser put the chain after
# the body's return but left the rest of the loop's body behind the loop's exit, and the lifter
# fell back ("unexpected bytecode shape (loop layout)"). The code now moves with the chain, as
# 3.11 lays it out. Variants: a bare and a typed handler, an inner loop and a call in the rest
# of the body, dead code after the return, a while loop, the handler taken or not.
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def bare_then_loop(rows, fail):
    for row in rows:
        try:
            return llm(f"count: {row[fail]}")
        except:
            log(f"no {fail} in {row}")
        for k in row:
            log(f"scan {k}")
    return "none"


@poppy
def typed_dead_code(rows, fail):
    for row in rows:
        try:
            return 10 // row[fail]
            if row:
                raise ValueError(row)
        except (IndexError, ZeroDivisionError) as e:
            log(f"skip {type(e).__name__}")
        got = llm(f"yesno: {row}")
        log(f"got {got}")
    return "end"


@poppy
def in_while(n, fail):
    while n:
        n -= 1
        try:
            return [1, 2][fail] + llm(f"count: {n}")
        except IndexError:
            log(f"index {n}")
        log(llm(f"count: after {n}"))
    return n


def attempt(f, *args):
    try:
        print(f.__name__, args, repr(f(*args)))
    except Exception as e:
        print(f.__name__, args, "caller caught", type(e).__name__, e)


attempt(bare_then_loop, [[1, 2], [3], [4, 5, 6]], 1)
attempt(bare_then_loop, [[1], [3]], 1)
attempt(bare_then_loop, [], 0)
attempt(typed_dead_code, [[1, 0], [], [2, 5]], 1)
attempt(typed_dead_code, [[0, 0], [2]], 0)
attempt(in_while, 3, 5)
attempt(in_while, 3, 1)
