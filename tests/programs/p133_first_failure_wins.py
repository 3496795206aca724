# Several independent @unordered calls fail; under PYTHONPOPPY=1 they run in parallel and finish
# in another order, but the exception raised must be the one CPython raises: the earliest in
# program order ("model refused: topic 0"), after the same output.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def ask_all(topics):
    answers = []
    for t in topics:
        answers.append(llm(t))
    return answers


@poppy
def run(n):
    ok = ask_all(["fine 1", "fine 2"])
    print(ok)
    log("about to fail")
    prompts = []
    for i in range(n):
        prompts.append(f"fail: topic {i}")
    bad = ask_all(prompts)
    print("unreachable", bad)
    return bad


print(run(6))
print("not reached")
